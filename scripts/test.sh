#!/usr/bin/env bash
# test.sh — install what the tests need, then build and run every test: a normal build
# (build/), an AddressSanitizer+UBSan build (build-asan/) and a ThreadSanitizer build
# (build-tsan/). Warnings fail the build; a build that finds no tests fails the command.
# Usage: scripts/test.sh [--quick]   (--quick: only the normal build)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
jobs=$(nproc)
run() { # run BUILD_DIR SANITIZER CTEST_ARGS...
  local dir=$1 san=$2; shift 2
  echo "== build $dir ${san:+(sanitizer: $san)}"
  # Tests on whatever the directory was configured with before; warnings are errors here.
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFOLD_SANITIZE="$san" \
    -DFOLD_BUILD_TESTS=ON -DFOLD_WERROR=ON >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
  echo "== test $dir"
  (cd "$dir" && ctest --output-on-failure --no-tests=error "$@")
}
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
run build "" -j2
if [ "${1:-}" != "--quick" ]; then
  # Sanitizer builds run everything but the slow and the launcher-only tests.
  run build-asan address -LE 'slow|nosan' -j2
  # ... and ThreadSanitizer skips the tests in which no process but foldrun starts a
  # thread (labels onethread, foldrunthreads: tests/CMakeLists.txt, scripts/thread_census.sh).
  run build-tsan thread -LE 'slow|nosan|onethread|foldrunthreads' -j2
fi
