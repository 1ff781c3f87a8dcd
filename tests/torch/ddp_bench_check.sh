#!/bin/sh
# ddp_bench_check.sh — bench/straggler/ddp_bench.py in its tiny mode: every configuration gets a positive figure, and a rank that fails fails the run, named.
# usage: ddp_bench_check.sh SOURCE_DIR BUILD_DIR
# Pass = exit 0. The bench's own launches are bounded (--tiny: 50 s each); this only checks the form of
# its output, never a time.
set -u
SRC=$1 BLD=$2
BENCH="/usr/bin/python3 $SRC/bench/straggler/ddp_bench.py --build $BLD --tiny"
out=$($BENCH 2>&1)
rc=$?
echo "$out"
if [ $rc -ne 0 ]; then
  echo "FAIL: ddp_bench.py --tiny exited with status $rc"
  exit 1
fi
bad=0 rows=0
for m in digits big; do
  for cfg in "ring none" "ring_skip none" "auto none" "gloo none" "ring inject" "ring_skip inject" "auto inject" \
             "ring hook" "ring_skip hook" "auto hook" "gloo hook"; do
    set -- $cfg
    ms=$(echo "$out" | awk -F'|' -v m=" $m " -v b=" $1 " -v s=" $2 " '$2 == m && $3 == b && $4 == s { print $5 }')
    if [ "$(echo "$ms" | wc -w)" -ne 1 ] || ! awk -v v="$ms" 'BEGIN { exit !(v + 0 > 0) }'; then
      echo "FAIL: $m, $1, straggler $2: want one positive step time, got '$ms'"
      bad=1
    fi
    rows=$((rows + 1))
    # every ratio column holds numbers: "x.xx [a.aa-b.bb]"
    echo "$out" | grep -Eq "^\| $m \| $1 \| $2 \| [0-9.]+ \| [0-9.]+ \[[0-9.]+-[0-9.]+\] \| [0-9.]+ \[[0-9.]+-[0-9.]+\]" ||
      { echo "FAIL: $m, $1, straggler $2: the ratio columns are not numbers"; bad=1; }
  done
done
[ $bad -eq 0 ] || exit 1
# A rank that raises: the run fails at once with a message naming the launch and the rank.
out=$($BENCH --models digits --fail-rank 1 2>&1)
rc=$?
echo "$out" | tail -5
if [ $rc -eq 0 ]; then
  echo "FAIL: a failing rank 1 did not fail ddp_bench.py"
  exit 1
fi
echo "$out" | grep -q "ddp_bench: FAIL: transport shm, rep 0: foldrun exited with status" ||
  { echo "FAIL: no 'ddp_bench: FAIL' line naming the launch"; exit 1; }
echo "$out" | grep -q "failing on purpose" || { echo "FAIL: rank 1's error is not shown"; exit 1; }
echo "ddp_bench_check: $rows configurations measured, a failing rank fails the run"
