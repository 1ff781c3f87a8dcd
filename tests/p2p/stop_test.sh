#!/usr/bin/env bash
# stop_test.sh — rank 2 of 4 stops itself (SIGSTOP) before an allreduce: the ranks that time out name it and the step.
# Usage: stop_test.sh FOLDRUN BLAME_RANK shm|tcp
# shm runs the shm allreduce, where every rank waits for rank 2's flag
# itself: all three survivors must name rank 2 and the chunk. tcp runs
# recursive doubling (n = 4: partners r^1, then r^2): ranks 3 and 0 wait
# for rank 2 directly and must name it and the round; rank 1 waits for
# rank 3, which waits for 2: rank 1 names rank 3 and the round and then
# rank 2 as the end of the chain of waits (the ranks that time out tell each
# other whom they wait for), or rank 2 alone (if rank 3's report came first). Each survivor's deadline is
# FOLD_TIMEOUT = 3 s; foldrun then SIGKILLs the stopped rank after its 3 s
# grace, and `timeout` bounds the whole job.
set -u
F=$1 P=$2 TP=$3
T=$(mktemp -d /tmp/fold-stop.XXXXXX)
trap 'rm -rf "$T"' EXIT
if [ "$TP" = shm ]; then algo=allreduce=shm; else algo=allreduce=recursive_doubling; fi
FOLD_ALGO=$algo timeout 60 "$F" -n 4 --transport "$TP" --timeout 3 "$P" stop 2> "$T/e"
st=$?
cat "$T/e"
bad=""
[ $st -ne 0 ] && [ $st -ne 124 ] || bad="$bad foldrun exit $st;"
for r in 0 1 3; do
  line=$(grep "^\[$r\] BLAME " "$T/e")
  echo "$line" | grep -q FOLD_ETIMEDOUT || bad="$bad rank $r: no FOLD_ETIMEDOUT;"
  if [ "$TP" = shm ] || [ $r != 1 ]; then
    # direct: its own timeout names rank 2 and the step, or the cascade names rank 2
    echo "$line" | grep -Eq 'waiting for rank 2 \((chunk|round) [0-9]+ of [0-9]+ of |rank 2 was silent' ||
      bad="$bad rank $r did not name rank 2 and the step;"
  else
    # it waits for rank 3 and must name rank 2, the end of the chain of waits
    echo "$line" | grep -Eq 'waiting for rank 3 \(round [0-9]+ of [0-9]+ of recursive_doubling[^;]*; rank 3 waited in turn for rank 2, which was silent|rank 2 was silent' ||
      bad="$bad rank 1 did not name rank 2 (the rank 3 it waits for waits for rank 2);"
  fi
done
# nothing of the job survives it
if pgrep -f "^$P stop" >/dev/null; then bad="$bad processes left:"; pgrep -af "^$P stop"; pkill -KILL -f "^$P stop"; fi
[ -z "$bad" ] && echo "stop_test $TP: every survivor names the rank it waits for"
[ -z "$bad" ] || { echo "FAILED:$bad"; exit 1; }
