#!/usr/bin/env bash
# shm_sweep_test.sh — a rank SIGKILLed during bootstrap leaks its segment; the next job's ranks remove it.
# Usage: shm_sweep_test.sh BUILD_DIR
set -u
B=$1
before=$(ls /dev/shm | grep -c '^fold-' || true)
# Rank 0 is SIGKILLed 1 s into fold_init, after making its segment, while
# rank 1 has not joined (SIGTERM would not leak it: the ranks' handler
# removes the segment first, see sigterm_test.sh; SIGKILL cannot be caught).
timeout 60 "$B/foldrun" -n 2 --transport shm -- sh -c \
  'if [ "$FOLD_RANK" = 1 ]; then sleep 3; exit 3; fi; "$0" & p=$!; sleep 1; kill -KILL $p; wait $p; exit 3' \
  "$B/examples/ring_demo" >/dev/null 2>&1
leaked=$(ls /dev/shm | grep -c '^fold-' || true)
if [ "$leaked" -le "$before" ]; then echo "no segment was left behind (nothing to check)"; fi
timeout 60 "$B/foldrun" -n 2 --transport shm -- "$B/examples/ring_demo" >/dev/null 2>&1 || { echo "the next job failed"; exit 1; }
after=$(ls /dev/shm | grep -c '^fold-' || true)
echo "fold segments: before $before, after the killed job $leaked, after the next job $after"
[ "$after" -eq 0 ] || { echo "stale segments remain:"; ls -la /dev/shm | grep fold-; exit 1; }
