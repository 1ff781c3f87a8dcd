#!/usr/bin/env bash
# sigterm_test.sh — ranks ended by SIGTERM or SIGINT inside fold_init leave no /dev/shm segment; the next job warns of none.
# Usage: sigterm_test.sh FOLDRUN SIGTERM_RANK fail|int|chain NEXT_PROGRAM
#  fail:  the last rank exits 3 without joining; foldrun SIGTERMs the others
#  int:   the test sends SIGINT to foldrun, which forwards it to the ranks
#  chain: as fail, but the ranks had their own SIGTERM handler, which fold
#         must call after the cleanup (each prints CHAINED 15, exits 7)
# The job's segments are the ones its ranks logged at INFO ("shm: segment
# /fold-..."): other jobs may use /dev/shm at the same time, so only these
# names are checked. Every wait is bounded.
set -u
F=$1 P=$2 MODE=$3 NEXT=$4
T=$(mktemp -d /tmp/fold-sigterm.XXXXXX)
trap 'rm -rf "$T"' EXIT
arg=plain
[ "$MODE" = chain ] && arg=chain
bad=""
if [ "$MODE" = int ]; then
  FOLD_DEBUG=INFO timeout 60 "$F" -n 3 --transport shm "$P" "$arg" 2> "$T/e" &
  job=$!
  # wait until both joining ranks made their segments (bounded: 30 s)
  for i in $(seq 300); do
    [ "$(grep -c 'shm: segment /fold-' "$T/e")" -ge 2 ] && break
    sleep 0.1
  done
  sleep 0.2
  kill -INT "$(pgrep -P "$job" -x foldrun || echo "$job")" 2>/dev/null || kill -INT "$job"
  wait "$job"
  st=$?
else
  FOLD_TEST_LAST_EXITS=1 FOLD_DEBUG=INFO timeout 60 "$F" -n 3 --transport shm "$P" "$arg" 2> "$T/e"
  st=$?
fi
cat "$T/e"
names=$(grep -o 'shm: segment /fold-[^,]*' "$T/e" | sed 's/shm: segment \///')
[ "$(echo "$names" | grep -c fold-)" -eq 2 ] || bad="$bad the two joining ranks did not both log a segment;"
for nm in $names; do
  [ -e "/dev/shm/$nm" ] && { bad="$bad /dev/shm/$nm left behind;"; rm -f "/dev/shm/$nm"; }
done
[ $st -ne 0 ] && [ $st -ne 124 ] || bad="$bad foldrun exit $st;"
grep -q 'fold_init returned' "$T/e" && bad="$bad a rank returned from fold_init instead of being ended;"
if [ "$MODE" = chain ]; then
  [ "$(grep -c '^\[[01]\] CHAINED 15$' "$T/e")" -eq 2 ] || bad="$bad the program's own SIGTERM handler did not run on both ranks;"
fi
# the next job on this host finds none of them stale (it says so at INFO)
FOLD_DEBUG=INFO timeout 60 "$F" -n 2 --transport shm "$NEXT" > /dev/null 2> "$T/next" || bad="$bad the next job failed;"
for nm in $names; do
  grep "removing stale" "$T/next" | grep -q "$nm" && bad="$bad the next job removed $nm;"
done
[ -z "$bad" ] && echo "sigterm_test $MODE: no segment of the job was left behind"
[ -z "$bad" ] || { echo "FAILED:$bad"; exit 1; }
