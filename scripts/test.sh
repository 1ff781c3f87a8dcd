#!/usr/bin/env bash
# test.sh — install what the tests need, then build and run every test: a normal build,
# an AddressSanitizer+UBSan build and a ThreadSanitizer build.
# Usage: scripts/test.sh [--quick]   (--quick: only the normal build)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
jobs=$(nproc)
run() { # run BUILD_DIR SANITIZER CTEST_ARGS...
  local dir=$1 san=$2; shift 2
  echo "== build $dir ${san:+(sanitizer: $san)}"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFOLD_SANITIZE="$san" >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
  echo "== test $dir"
  (cd "$dir" && ctest --output-on-failure "$@")
}
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
run build "" -j2
if [ "${1:-}" != "--quick" ]; then
  # Sanitizer builds run everything but the slow and the launcher-only tests.
  run build-asan address -LE 'slow|nosan' -j2
  run build-tsan thread -LE 'slow|nosan' -j2
fi
