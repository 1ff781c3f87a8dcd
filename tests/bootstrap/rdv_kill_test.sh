#!/usr/bin/env bash
# rdv_kill_test.sh — a rank SIGKILLed inside fold_init after it joined: the others fail within seconds naming it, not after FOLD_TIMEOUT.
# Usage: rdv_kill_test.sh FOLDRUN BLAME_RANK shm|tcp
# 4 ranks: rank 3 starts 5 s late, so the rendezvous is still open (ranks
# 0 and 1 wait for its card) when rank 2, joined, is SIGKILLed 1 s into
# fold_init. FOLD_TIMEOUT is 60 s: ranks 0 and 1 must fail long before,
# naming rank 2. The ranks are blame_rank, which prints fold_init's error
# ("init: ...") and ignores foldrun's SIGTERM, so that the first rank to
# fail does not cut the other off; rank 2's wrapper sleeps after the kill,
# so that foldrun stops the job only when a survivor fails.
set -u
F=$1 P=$2 TP=$3
T=$(mktemp -d /tmp/fold-rdvkill.XXXXXX)
trap 'rm -rf "$T"' EXIT
start=$(date +%s%N)
timeout 90 "$F" -n 4 --transport "$TP" --timeout 60 -- sh -c '
  case "$FOLD_RANK" in
  3) sleep 5; exec "$0" exit ;;
  2) "$0" exit & p=$!; sleep 1; kill -KILL $p; wait $p; exec sleep 30 ;;
  *) exec "$0" exit ;;
  esac' "$P" > "$T/o" 2> "$T/e"
st=$?
took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$T/e"
echo "job took $took_ms ms (exit $st)"
bad=""
[ $st -ne 0 ] && [ $st -ne 124 ] || bad="$bad foldrun exit $st;"
# the death at 1 s, then foldrun's 3 s grace for the SIGTERM-ignoring ranks
[ $took_ms -lt 15000 ] || bad="$bad the job took $took_ms ms;"
for r in 0 1; do
  grep "^\[$r\] init: " "$T/e" | grep -q 'rank 2 is gone' || bad="$bad rank $r did not name rank 2 as gone;"
done
[ -z "$bad" ] && echo "rdv_kill_test $TP: the survivors failed at once, naming rank 2"
[ -z "$bad" ] || { echo "FAILED:$bad"; exit 1; }
