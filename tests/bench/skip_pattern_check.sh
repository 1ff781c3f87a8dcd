#!/bin/sh
# skip_pattern_check.sh — fold-skip-pattern's line: the figure, the calls it counts (all, or for `some` those of its late steps), and its refusal of a `some` run without a whole cycle.
# usage: skip_pattern_check.sh BUILD_DIR
set -u
b=$1
fail() { echo "skip_pattern_check: $*" >&2; exit 1; }
run() { # EXPECTED_CALLS PATTERN ALGO STEPS WARMUP
  want=$1; shift
  out=$(timeout 60 "$b/foldrun" -n 4 --transport shm --timeout 30 -- "$b/fold-skip-pattern" "$@" 2>/dev/null) ||
    fail "fold-skip-pattern $* failed"
  line=$(echo "$out" | sed 's/^\[0\] //' | grep "^$1 $2 ") || fail "no line for $1 $2 in: $out"
  echo "$line" | awk -v want="$want" '{ ok = NF == 5 && $3 > 0 && $5 == want && $4 >= 0 && $4 <= $5; exit !ok }' ||
    fail "fold-skip-pattern $*: line '$line' (want $want calls, a positive time, named <= calls)"
  echo "ok: $line"
}
run 3 one ring 3 2
run 10 alt ring_skip 5 2
# some, 8 timed steps after 2: steps 2-9, late in 4, 5, 8, 9 (s % 4 < 2): 8 calls; cycles 4-7 only
export FOLD_INJECT_DELAY=2:0.002
run 8 some ring_skip 8 2
unset FOLD_INJECT_DELAY
# some without a whole cycle of 4 timed steps (steps 2-4): refused, exit 2
err=$(timeout 60 "$b/foldrun" -n 4 --transport shm --timeout 30 -- "$b/fold-skip-pattern" some ring 3 2 2>&1) &&
  fail "some with no whole cycle was not refused: $err"
echo "$err" | grep -q "some needs a whole cycle of 4 timed steps" || fail "no reason given: $err"
echo "skip_pattern_check: ok"
