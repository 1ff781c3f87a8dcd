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
# slower), and the heap allocations per operation of each build (valgrind's
# "total heap usage" of a run of 400 minus one of 200, over 200), when
# valgrind is installed. Builds go to $OPS_COST_DIR (default /tmp/ops_cost).
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
printf "%-11s %12s %12s %8s %13s %12s %12s\n" op "base ns/op" "work ns/op" ratio "(min-max)" "base allocs" "work allocs"
for op in allreduce8 kvpush areduce; do
  b=() w=()
  for p in $(seq "$pairs"); do
    if [ $((p % 2)) = 1 ]; then b+=("$(run base $op "$n")"); w+=("$(run work $op "$n")")
    else w+=("$(run work $op "$n")"); b+=("$(run base $op "$n")"); fi
  done
  ab=- aw=-
  if command -v valgrind >/dev/null; then
    ab=$(awk -v x="$(allocs base $op 400)" -v y="$(allocs base $op 200)" 'BEGIN{printf "%.1f", (x-y)/200}')
    aw=$(awk -v x="$(allocs work $op 400)" -v y="$(allocs work $op 200)" 'BEGIN{printf "%.1f", (x-y)/200}')
  fi
  /usr/bin/python3 - "$op" "$ab" "$aw" "${b[*]}" "${w[*]}" <<'EOF'
import statistics, sys
op, ab, aw = sys.argv[1:4]
b = [float(x) for x in sys.argv[4].split()]
w = [float(x) for x in sys.argv[5].split()]
r = [y / x for x, y in zip(b, w)]
print("%-11s %12.1f %12.1f %8.3f %13s %12s %12s" % (op, statistics.median(b), statistics.median(w), statistics.median(r),
      "(%.2f-%.2f)" % (min(r), max(r)), ab, aw))
EOF
done
