#!/usr/bin/env bash
# fold_sim_op.sh — fold-sim's areduce experiments with --op/--dtype: FOLD_SUM_EXACT gives the same bits at every degree (and math.fsum's), a rounded sum does not, bad options exit 2.
# Usage: fold_sim_op.sh FOLD_SIM TEST_DIR exact-full|exact-partial-f32|rounded|csv|badargs
set -uo pipefail
F=$1 D=$2 what=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
case $what in
exact-full)
  # 240 runs (8 latencies x 30 degrees): fold-sim exits 1 unless every run
  # gives the same x sum; exact_fsum.py checks that sum against math.fsum
  # over the 3,100 terms (huge terms cancelling across ranks, subnormals).
  "$F" areduce-full --op sum_exact --terms > "$T/o" || fail "fold-sim failed"
  grep -q '^# sum_exact float64: the x sum of 240 runs: 1 distinct result ' "$T/o" || { grep '^#' "$T/o"; fail "no 240 equal runs"; }
  /usr/bin/python3 "$D/op/exact_fsum.py" cat "$T/o" > "$T/c" || { cat "$T/c" | cut -c1-300; fail "exact sum"; }
  grep -q '^exact_fsum: 1 sums checked, 0 wrong' "$T/c" || fail "fsum check"
  ;;
exact-partial-f32)
  # partial mode (30 runs, degree 1..31, t_wait 10..1000 us), float32: the
  # final result is the exact rational sum of the 9,600 terms rounded once
  "$F" areduce-partial --op sum_exact --dtype float32 --terms > "$T/o" || fail "fold-sim failed"
  grep -q '^# sum_exact float32: the x sum of 30 runs: 1 distinct result ' "$T/o" || { grep '^#' "$T/o"; fail "no 30 equal runs"; }
  /usr/bin/python3 "$D/op/exact_fsum.py" cat "$T/o" > "$T/c" || { cat "$T/c" | cut -c1-300; fail "exact sum"; }
  grep -q '^exact_fsum: 1 sums checked, 0 wrong' "$T/c" || fail "fsum check"
  ;;
rounded)
  # the same terms under FOLD_SUM: the tree's shape shows in the bits (so
  # the data does test the exact op), and math.fsum disagrees
  "$F" areduce-full --op sum --dtype float64 > "$T/o" || fail "fold-sim failed"
  k=$(sed -n 's/^# sum float64: the x sum of 240 runs: \([0-9]*\) distinct.*/\1/p' "$T/o")
  [ -n "$k" ] && [ "$k" -gt 1 ] || { cat "$T/o"; fail "FOLD_SUM gave ${k:-no} distinct results, want several"; }
  "$F" areduce-full --op sum --dtype float64 --terms > "$T/o" || fail "fold-sim --terms failed"
  /usr/bin/python3 "$D/op/exact_fsum.py" cat "$T/o" > "$T/o2" && fail "fsum agreed with a rounded sum"
  grep -q '^exact_fsum: 1 sums checked, 1 wrong' "$T/o2" || fail "fsum check did not run"
  echo "ok: FOLD_SUM: $k distinct results over 240 runs"
  ;;
csv)
  # figures 4.1 and 4.2: the CSV (240 points) and, with gnuplot, both plots
  "$F" areduce-full --csv "$T/full.csv" > "$T/o" || fail "fold-sim failed"
  [ "$(grep -c '^[0-9]' "$T/full.csv")" -eq 240 ] || fail "want 240 CSV rows"
  if command -v gnuplot > /dev/null; then
    for f in full.png full-optimal.png; do [ -s "$T/$f" ] || fail "no $f"; done
    grep -q "^# plot: $T/full-optimal.png" "$T/o" || fail "the optimal-degree plot is not announced"
  fi
  ;;
badargs)
  for a in "--op prod" "--op sum_exact --dtype int64" "--dtype int8" "--terms" "--op" "--bogus"; do
    # shellcheck disable=SC2086
    timeout 30 "$F" areduce-full $a > "$T/o" 2> "$T/e"
    rc=$?
    [ $rc -eq 2 ] || fail "fold-sim areduce-full $a: exit $rc, want 2"
    grep -q '^usage: fold-sim areduce-full' "$T/e" || fail "$a: no usage"
    [ -s "$T/o" ] && fail "$a: wrote to stdout"
  done
  ;;
*) fail "unknown case $what" ;;
esac
echo "ok: $what"
