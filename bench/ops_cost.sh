#!/bin/bash
# ops_cost.sh — an 8 B allreduce, a KV push and an areduce on a base commit and on the work tree: time in interleaved pairs, allocations per operation.
#
#   bench/ops_cost.sh BASE [PAIRS] [N]
#
# BASE is any commit-ish; it is exported with `git archive` and built (Release,
# library only) beside a Release build of the work tree as it is. The same
# bench/ops_cost.c (public API only) is compiled against each. For each
# operation, PAIRS (default 7) pairs of runs of N (default 20000) operations,
# the order alternating (base work, work base, ...). Printed per operation:
# the median ns per operation of each build, the ratio work/base as the
# median of the per-pair ratios with their min-max (> 1: the work tree is
# slower), and, when valgrind is installed, the instructions and heap
# allocations per operation of each build (callgrind's "Collected" and
# memcheck's "total heap usage" of a run of 400 minus one of 200, over 200:
# both ranks, their waiting polls included, and the start-up cancel). The
# wall time of the 2-thread world is that of two threads spinning on each
# other, and on this 2-vCPU VM the same binary measured 1.1 us and 3.9 us
# per 8 B allreduce minutes apart: pair the runs, and read the instruction
# count too. Builds go to $OPS_COST_DIR (default /tmp/ops_cost).
set -euo pipefail
[ $# -ge 1 ] || { sed -n '3,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
base=$1 pairs=${2:-7} n=${3:-20000}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${OPS_COST_DIR:-/tmp/ops_cost}
rm -rf "$dir/base-src" && mkdir -p "$dir/base-src"
git -C "$root" archive "$base" | tar -x -C "$dir/base-src"
build() { # SRC BUILD_DIR EXE
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$2" -j2 --target fold >/dev/null
  cc -O2 -std=c11 -I"$1/include" "$root/bench/ops_cost.c" -L"$2" -lfold -Wl,-rpath,"$2" -lpthread -o "$3"
}
echo "building $base and the work tree in $dir ..." >&2
build "$dir/base-src" "$dir/base-build" "$dir/opscost-base"
build "$root" "$dir/work-build" "$dir/opscost-work"
run() { "$dir/opscost-$1" "$2" "$3" | awk '{print $3}'; }
allocs() { # BUILD OP N
  valgrind --tool=memcheck "$dir/opscost-$1" "$2" "$3" 2>&1 >/dev/null | sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' | tr -d ,
}
instrs() { # BUILD OP N
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$dir/opscost-$1" "$2" "$3" 2>&1 >/dev/null |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
per_op() { # FN BUILD OP: FN's count per operation
  awk -v x="$($1 "$2" "$3" 400)" -v y="$($1 "$2" "$3" 200)" 'BEGIN{printf "%.1f", (x-y)/200}'
}
printf "%-11s %12s %12s %8s %13s %10s %10s %12s %12s\n" op "base ns/op" "work ns/op" ratio "(min-max)" "base Ir" "work Ir" \
  "base allocs" "work allocs"
for op in allreduce8 kvpush areduce; do
  b=() w=()
  for p in $(seq "$pairs"); do
    if [ $((p % 2)) = 1 ]; then b+=("$(run base $op "$n")"); w+=("$(run work $op "$n")")
    else w+=("$(run work $op "$n")"); b+=("$(run base $op "$n")"); fi
  done
  ab=- aw=- ib=- iw=-
  if command -v valgrind >/dev/null; then
    ab=$(per_op allocs base $op) aw=$(per_op allocs work $op) ib=$(per_op instrs base $op) iw=$(per_op instrs work $op)
  fi
  /usr/bin/python3 - "$op" "$ib" "$iw" "$ab" "$aw" "${b[*]}" "${w[*]}" <<'EOF'
import statistics, sys
op, ib, iw, ab, aw = sys.argv[1:6]
b = [float(x) for x in sys.argv[6].split()]
w = [float(x) for x in sys.argv[7].split()]
r = [y / x for x, y in zip(b, w)]
print("%-11s %12.1f %12.1f %8.3f %13s %10s %10s %12s %12s" % (op, statistics.median(b), statistics.median(w),
      statistics.median(r), "(%.2f-%.2f)" % (min(r), max(r)), ib, iw, ab, aw))
EOF
done
