#!/usr/bin/env bash
# shm_sweep_test.sh — a rank killed during bootstrap leaks its segment; the next job's ranks remove it.
# Usage: shm_sweep_test.sh BUILD_DIR
set -u
B=$1
before=$(ls /dev/shm | grep -c '^fold-' || true)
# Rank 1 exits before fold_init; foldrun then kills rank 0, which had made its segment.
timeout 60 "$B/foldrun" -n 2 --transport shm -- sh -c 'if [ "$FOLD_RANK" = 1 ]; then sleep 0.5; exit 3; fi; exec "$0"' \
  "$B/examples/ring_demo" >/dev/null 2>&1
leaked=$(ls /dev/shm | grep -c '^fold-' || true)
if [ "$leaked" -le "$before" ]; then echo "no segment was left behind (nothing to check)"; fi
timeout 60 "$B/foldrun" -n 2 --transport shm -- "$B/examples/ring_demo" >/dev/null 2>&1 || { echo "the next job failed"; exit 1; }
after=$(ls /dev/shm | grep -c '^fold-' || true)
echo "fold segments: before $before, after the killed job $leaked, after the next job $after"
[ "$after" -eq 0 ] || { echo "stale segments remain:"; ls -la /dev/shm | grep fold-; exit 1; }
