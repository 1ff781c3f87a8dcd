#!/usr/bin/env bash
# kv_logreg_test.sh — examples/kv_logreg under foldrun: workers x servers x transport, with and without splitting the weights over the servers.
# Usage: kv_logreg_test.sh FOLDRUN KV_LOGREG CSV
set -u
F=$1 X=$2 CSV=$3
fails=0
# ranks servers transport big-array-bound (8 splits the 30 weights over
# every server) FOLD_PROGRESS_THREAD
for cfg in "2 1 shm 1000000 0" "3 1 tcp 1000000 0" "4 2 shm 8 0" "5 2 tcp 8 0" "6 3 auto 8 0" "4 2 tcp 8 1"; do
  set -- $cfg
  out=$(FOLD_KV_SERVERS=$2 FOLD_KV_BIGARRAY_BOUND=$4 FOLD_PROGRESS_THREAD=$5 timeout 60 "$F" -n "$1" --transport "$3" --timeout 30 "$X" "$CSV" 2>&1)
  rc=$?
  if [ $rc -ne 0 ] || ! grep -q "through the store" <<<"$out"; then
    echo "kv_logreg_test: FAILED with $1 ranks, $2 servers, $3, bound $4, progress thread $5 (exit $rc):"
    echo "$out"
    fails=$((fails + 1))
  else
    echo "ok: $1 ranks, $2 servers, $3, bound $4, progress thread $5: $(grep -o 'training accuracy.*' <<<"$out")"
  fi
done
[ $fails -eq 0 ] && echo "kv_logreg_test: equal to training alone in every setting"
[ $fails -eq 0 ]
