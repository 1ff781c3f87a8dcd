#!/usr/bin/env bash
# thread_census.sh — which tests start a thread: runs each test the ThreadSanitizer phase would run, one at a time, in BUILD_DIR (a normal build) under a pthread_create shim, and prints the lists that tests/CMakeLists.txt keeps.
# Usage: scripts/thread_census.sh BUILD_DIR [JOBS [REGEX]]   (all tests: about 15 minutes with 2 jobs;
#        REGEX: only the tests it matches)
# Output lines: "onethread NAME" (no process of the test starts a thread),
# "foldrunthreads NAME" (the only threads are foldrun's own and Python's: the
# reference checkers, which ThreadSanitizer does not instrument),
# "threads NAME PROGRAM:COUNT,...". ThreadSanitizer sees races between the
# threads of one process only, so it has nothing to check in a test of the
# first kind; in one of the second kind it checks foldrun alone, which the
# foldrun_* tests cover.
set -euo pipefail
build=$(cd "${1:?usage: thread_census.sh BUILD_DIR [JOBS]}" && pwd)
jobs=${2:-2}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cc -shared -fPIC -O2 -o "$tmp/mark.so" "$src/scripts/thread_mark.c" -ldl
(cd "$build" && ctest -N -LE "slow|nosan" ${3:+-R "$3"}) | awk '/Test +#/ {print $3}' >"$tmp/list"
mkdir -p "$tmp/m"
export build tmp
xargs -P "$jobs" -I{} sh -c 'cd "$build" && LD_PRELOAD="$tmp/mark.so" FOLD_THREAD_MARK="$tmp/m/{}" \
  timeout 600 ctest -R "^{}\$" >"$tmp/m/{}.log" 2>&1 || echo "thread_census: {} failed; its census may be short" >&2' <"$tmp/list"
while read -r t; do
  if [ ! -s "$tmp/m/$t" ]; then echo "onethread $t"
  elif ! grep -qvE '^(foldrun|python3(\.[0-9]+)?)$' "$tmp/m/$t"; then echo "foldrunthreads $t"
  else echo "threads $t $(sort "$tmp/m/$t" | uniq -c | awk '{printf "%s:%s,", $2, $1}')"; fi
done <"$tmp/list"
