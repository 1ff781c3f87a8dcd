#!/bin/bash
# regress.sh — build a base commit and the work tree, time both with fold-bench in interleaved pairs, print ratios.
#
#   bench/regress.sh [options] BASE
#
# BASE is any git commit-ish (3077f67, main, HEAD~5). The base is exported
# with `git archive` and built in its own directory; the work tree is built
# as it is, uncommitted changes included. Both are Release builds of the
# fold-bench, foldrun (and fold-kvdist) targets only. Then, for each pair, every cell runs
# once on each build, the order alternating between pairs (A B, B A, ...)
# so that a drift of the machine's load hits both alike:
#
#   foldrun -n 2 --transport shm fold-bench -c COLL -b SIZE -e SIZE -n ITERS -w WARM
#
# Cells: allreduce and broadcast at 8 B, 64 KiB and 4 MiB, and the 8 B
# allreduce in a user's timing loop (`--user-loop`: barrier, call, 8 B MAX
# allreduce of the time) when both fold-bench builds have that option.
# With fold-kvdist in both trees, also a KV push+pull of small keys: a
# worker and a server (FOLD_KV_SERVERS=1 foldrun -n 2 --transport shm
# fold-kvdist; one process per core: with three on the two, the times
# spread 1.4-2.5 us), 2,000 keys of 8 B pushed and pulled per round, 20
# rounds; the time is 1e6 / the push+pull ops/s it prints (us per
# operation).
# Each run's time is fold-bench's out-of-place median (of the slowest rank
# per iteration). Printed per cell: the median of the base's and of the
# work tree's times over the pairs, and the ratio work/base (> 1: the work
# tree is slower) as the median of the per-pair ratios with their min-max.
# With a usable `perf` (`perf stat -e instructions:u true` counts), also the
# user-space instructions per timed iteration (barrier + call, summed over
# the ranks), which the machine's noise does not move much: the difference
# of a run of ITERS and one of ITERS/2, so that start-up cancels.
#
# Options:
#   -p PAIRS   interleaved pairs per cell (default 5)
#   -q         quick: 3 pairs, a tenth of the iterations
#   -t TYPE    CMAKE_BUILD_TYPE of both builds (default Release)
#   -d DIR     work directory, kept afterwards (default: a temporary one,
#              removed at exit); an existing DIR's builds are rebuilt
#              incrementally, so a second run against the same BASE is quick
#   -h         this help
# Exit status: 0 after the table, 1 if a build or a run failed, 2 for usage.
set -u

usage() { sed -n '3,37p' "$0" | sed 's/^# \{0,1\}//'; }

pairs=5 quick=0 btype=Release dir=""
while getopts "p:qt:d:h" o; do
  case $o in
  p) pairs=$OPTARG ;;
  q) quick=1 pairs=3 ;;
  t) btype=$OPTARG ;;
  d) dir=$OPTARG ;;
  h) usage; exit 0 ;;
  *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { usage >&2; exit 2; }
case $pairs in '' | *[!0-9]* | 0) echo "regress.sh: -p wants a count >= 1" >&2; exit 2 ;; esac

repo=$(cd "$(dirname "$0")/.." && pwd)
base=$(git -C "$repo" rev-parse --verify --quiet "$1^{commit}") || { echo "regress.sh: no commit \"$1\"" >&2; exit 2; }
head=$(git -C "$repo" rev-parse --short HEAD)
dirty=$(git -C "$repo" status --porcelain --untracked-files=no | head -1)

if [ -z "$dir" ]; then
  dir=$(mktemp -d "${TMPDIR:-/tmp}/fold-regress.XXXXXX") || exit 1
  trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$dir" || exit 1
log=$dir/log.txt
: >"$log"

build() { # build SRC BUILD: configure and build fold-bench and foldrun
  cmake -S "$1" -B "$2" --no-warn-unused-cli -DCMAKE_BUILD_TYPE="$btype" -DFOLD_BUILD_TESTS=OFF \
    -DFOLD_BUILD_PYTHON=OFF -DFOLD_WERROR=OFF >>"$log" 2>&1 &&
    cmake --build "$2" -j2 --target fold-bench foldrun >>"$log" 2>&1 &&
    { [ ! -f "$1/bench/kv_dist.c" ] || cmake --build "$2" -j2 --target fold-kvdist >>"$log" 2>&1; }
}

echo "# regress.sh: base $(git -C "$repo" log -1 --format='%h %s' "$base" | cut -c1-70)"
echo "#             work tree $repo at $head${dirty:+ (with uncommitted changes)}"
echo "# building both ($btype) in $dir ..."
rm -rf "$dir/base-src" && mkdir -p "$dir/base-src" &&
  git -C "$repo" archive "$base" | tar -x -C "$dir/base-src" || { echo "regress.sh: git archive failed" >&2; exit 1; }
build "$dir/base-src" "$dir/base-build" || { echo "regress.sh: the base does not build (see $log)" >&2; tail -20 "$log" >&2; exit 1; }
build "$repo" "$dir/work-build" || { echo "regress.sh: the work tree does not build (see $log)" >&2; tail -20 "$log" >&2; exit 1; }

A=$dir/base-build B=$dir/work-build
user_loop=0
if "$A/fold-bench" -h 2>/dev/null | grep -q -- --user-loop && "$B/fold-bench" -h 2>/dev/null | grep -q -- --user-loop; then
  user_loop=1
fi

perf_ok=0
if command -v perf >/dev/null 2>&1 && perf stat -x, -e instructions:u true 2>&1 | grep -q '^[0-9]'; then perf_ok=1; fi

# cells: name coll size iters warm-up extra-option
cells=("allreduce 8B|allreduce|8|20000|2000|"
  "allreduce 64KiB|allreduce|64K|2000|200|"
  "allreduce 4MiB|allreduce|4M|100|10|"
  "broadcast 8B|broadcast|8|20000|2000|"
  "broadcast 64KiB|broadcast|64K|2000|200|"
  "broadcast 4MiB|broadcast|4M|100|10|")
[ $user_loop = 1 ] && cells+=("allreduce 8B user loop|allreduce|8|20000|2000|--user-loop")
kvdist() { ls "$1/bench/fold-kvdist" "$1/fold-kvdist" 2>/dev/null | head -1; }
[ -n "$(kvdist "$A")" ] && [ -n "$(kvdist "$B")" ] && cells+=("kv push+pull 8B|kv|8|20|1|")

status=0
# run BUILD COLL SIZE ITERS WARM EXTRA: prints the out-of-place time (us) of rank 0's row
run() {
  local out
  if [ "$2" = kv ]; then # small keys: -j rounds of 2,000 keys of SIZE bytes; the model part is cut to a minimum
    out=$(FOLD_KV_SERVERS=1 timeout 300 "$1/foldrun" -n 2 --transport shm -- "$(kvdist "$1")" -i 1 -w 0 -d 64 \
      -k 2000 -b "$3" -j "$4" 2>>"$log")
    echo "$out" >>"$log"
    echo "$out" | awk '/small keys:/ { for (i = 1; i < NF; i++) if ($(i + 1) == "push+pull") { printf "%.4f\n", 1e6 / $i; exit } }'
    return
  fi
  out=$(timeout 300 "$1/foldrun" -n 2 --transport shm -- "$1/fold-bench" -c "$2" -b "$3" -e "$3" -n "$4" -w "$5" $6 2>>"$log")
  echo "$out" >>"$log"
  echo "$out" | sed 's/^\[[0-9]*\] //' | awk '$1 ~ /^[0-9]+$/ && NF >= 6 { print $6; exit }'
}
# instr BUILD COLL SIZE ITERS WARM EXTRA: user-space instructions of one run (all ranks)
instr() {
  local f=$dir/perf.txt
  perf stat -x, -e instructions:u -o "$f" -- "$1/foldrun" -n 2 --transport shm -- "$1/fold-bench" -c "$2" -b "$3" \
    -e "$3" -n "$4" -w "$5" $6 >/dev/null 2>>"$log" || return 1
  awk -F, '/instructions/ { print $1; exit }' "$f"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf "# %d pairs per cell, interleaved; ratio = work / base (> 1: the work tree is slower); n = 2, shm\n" "$pairs"
printf "%-24s %12s %12s %8s %17s" "cell" "base (us)" "work (us)" "ratio" "ratio min-max"
[ $perf_ok = 1 ] && printf " %12s %12s %8s" "base instr" "work instr" "ratio"
printf "\n"
for cell in "${cells[@]}"; do
  IFS='|' read -r name coll size iters warm extra <<<"$cell"
  if [ $quick = 1 ]; then iters=$(((iters + 9) / 10)) warm=$(((warm + 9) / 10)); fi
  ta=() tb=() ratios=()
  for ((p = 0; p < pairs; p++)); do
    if ((p % 2 == 0)); then
      a=$(run "$A" "$coll" "$size" "$iters" "$warm" "$extra") b=$(run "$B" "$coll" "$size" "$iters" "$warm" "$extra")
    else
      b=$(run "$B" "$coll" "$size" "$iters" "$warm" "$extra") a=$(run "$A" "$coll" "$size" "$iters" "$warm" "$extra")
    fi
    if [ -z "$a" ] || [ -z "$b" ]; then status=1; continue; fi
    ta+=("$a") tb+=("$b")
    ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", (a > 0 ? b / a : 0) }')")
  done
  if [ ${#ratios[@]} -eq 0 ]; then
    printf "%-24s %12s %12s %8s %17s\n" "$name" "failed" "failed" "-" "-"
    continue
  fi
  ma=$(printf "%s\n" "${ta[@]}" | median) mb=$(printf "%s\n" "${tb[@]}" | median)
  mr=$(printf "%s\n" "${ratios[@]}" | median)
  lo=$(printf "%s\n" "${ratios[@]}" | sort -g | head -1) hi=$(printf "%s\n" "${ratios[@]}" | sort -g | tail -1)
  printf "%-24s %12.2f %12.2f %8.3f %17s" "$name" "$ma" "$mb" "$mr" "$lo-$hi"
  if [ $perf_ok = 1 ] && [ "$coll" != kv ]; then
    half=$((iters / 2))
    ia=$(($(instr "$A" "$coll" "$size" "$iters" "$warm" "$extra") - $(instr "$A" "$coll" "$size" "$half" "$warm" "$extra")))
    ib=$(($(instr "$B" "$coll" "$size" "$iters" "$warm" "$extra") - $(instr "$B" "$coll" "$size" "$half" "$warm" "$extra")))
    # out of place and in place (allreduce): two timed loops per run
    loops=1
    [ "$coll" = allreduce ] && loops=2
    per=$(((iters - half) * loops))
    awk -v a="$ia" -v b="$ib" -v n="$per" 'BEGIN { printf " %12.0f %12.0f %8.3f", a / n, b / n, (a > 0 ? b / a : 0) }'
  fi
  printf "\n"
done
[ $user_loop = 1 ] || echo "# (no user-loop cell: the base's fold-bench has no --user-loop)"
[ $perf_ok = 1 ] || echo "# (no instruction counts: perf stat -e instructions:u does not count on this machine)"
[ $status = 0 ] || echo "# some runs failed; see $log" >&2
exit $status
