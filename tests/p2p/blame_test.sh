#!/usr/bin/env bash
# blame_test.sh — a 4-rank tcp job whose rank 2 dies or exits: every survivor and foldrun name rank 2.
# Usage: blame_test.sh FOLDRUN BLAME_RANK kill|exit ROUNDS
# The closing cascade is a race (which survivor sees which close first), so
# the job runs ROUNDS times; each round is bounded by FOLD_TIMEOUT=20 and
# foldrun's 3 s kill grace, and the whole loop by `timeout`.
set -u
F=$1 P=$2 MODE=$3 ROUNDS=$4
T=$(mktemp -d /tmp/fold-blame.XXXXXX)
trap 'rm -rf "$T"' EXIT
# foldrun's line is checked for the kill only: a rank that exits non-zero
# looks like its survivors, which may exit before foldrun even sees it go
# (see first_failure in tools/foldrun.c), so that one is best effort.
want_st=137 want_line="foldrun: rank 2 killed by signal 9 (SIGKILL)"
fails=0
for round in $(seq "$ROUNDS"); do
  timeout 60 "$F" -n 4 --transport tcp --timeout 20 "$P" "$MODE" 2> "$T/e"
  st=$?
  bad=""
  if [ "$MODE" = kill ]; then
    [ $st -eq $want_st ] || bad="$bad foldrun exit $st (wanted $want_st);"
    [ "$(grep '^foldrun:' "$T/e")" = "$want_line" ] || bad="$bad foldrun line;"
  else
    [ $st -ne 0 ] || bad="$bad foldrun exit 0;"
  fi
  for r in 0 1 3; do
    line=$(grep "^\[$r\] BLAME " "$T/e")
    # a survivor names rank 2 as the lost rank and no other rank as lost
    echo "$line" | grep -q 'FOLD_EPEER.*peer rank 2[^0-9]' || bad="$bad rank $r did not name rank 2;"
    echo "$line" | grep -Eq 'peer rank [013]([^0-9]|$)' && bad="$bad rank $r blamed a survivor;"
  done
  if [ -n "$bad" ]; then
    echo "round $round FAILED:$bad"; cat "$T/e"; fails=$((fails + 1))
  else
    echo "round $round ok: $(grep -c BLAME "$T/e") survivors name rank 2"
  fi
done
[ $fails -eq 0 ] && echo "blame_test $MODE: all $ROUNDS rounds passed"
[ $fails -eq 0 ]
