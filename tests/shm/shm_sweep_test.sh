#!/usr/bin/env bash
# shm_sweep_test.sh — a rank SIGKILLed during bootstrap leaks its segment; the next job's ranks remove it.
# Usage: shm_sweep_test.sh BUILD_DIR
# The killed job's segments are the ones its ranks logged at INFO: other
# jobs may use /dev/shm at the same time, so only those names are checked.
set -u
B=$1
T=$(mktemp -d /tmp/fold-sweep.XXXXXX)
trap 'rm -rf "$T"' EXIT
# Rank 0 is SIGKILLed 1 s into fold_init, after making its segment, while
# rank 1 has not joined (SIGTERM would not leak it: the ranks' handler
# removes the segment first, see sigterm_test.sh; SIGKILL cannot be caught).
FOLD_DEBUG=INFO timeout 60 "$B/foldrun" -n 2 --transport shm -- sh -c \
  'if [ "$FOLD_RANK" = 1 ]; then sleep 3; exit 3; fi; "$0" & p=$!; sleep 1; kill -KILL $p; wait $p; exit 3' \
  "$B/examples/ring_demo" >/dev/null 2>"$T/e"
names=$(grep -o 'shm: segment /fold-[^,]*' "$T/e" | sed 's/shm: segment \///')
leaked=""
for nm in $names; do [ -e "/dev/shm/$nm" ] && leaked="$leaked $nm"; done
[ -n "$leaked" ] || echo "no segment was left behind (nothing to check)"
FOLD_DEBUG=INFO timeout 60 "$B/foldrun" -n 2 --transport shm -- "$B/examples/ring_demo" >/dev/null 2>"$T/next" || { echo "the next job failed"; exit 1; }
left=""
for nm in $leaked; do [ -e "/dev/shm/$nm" ] && left="$left $nm"; done
echo "segments of the killed job left:${leaked:- none}; after the next job:${left:- none}"
grep "removing stale" "$T/next"
[ -z "$left" ] || { echo "stale segments remain:$left"; exit 1; }
