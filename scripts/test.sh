#!/usr/bin/env bash
# test.sh — install what the tests need, then build and run every test: a normal build
# (build/), an AddressSanitizer+UBSan build (build-asan/) and a ThreadSanitizer build
# (build-tsan/). Warnings fail the build; a build that finds no tests fails the command.
# Usage: scripts/test.sh [--quick]   (--quick: only the normal build)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
jobs=$(nproc)
run_tests() { # run_tests BUILD_DIR CTEST_ARGS...
  local dir=$1; shift
  echo "== test $dir"
  (cd "$dir" && ctest --output-on-failure --no-tests=error "$@")
}
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
echo "== build build"
# Tests on whatever the directories were configured with before; warnings are errors here.
# Line tables only (-g1, not -g2): backtraces and sanitizer reports keep file and
# line, and an ASan compile takes 30% less CPU (the machine's 2 cores are the limit).
g1=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFOLD_SANITIZE= -DFOLD_BUILD_TESTS=ON -DFOLD_WERROR=ON "${g1[@]}" >/dev/null
cmake --build build -j"$jobs" >/dev/null
if [ "${1:-}" = --quick ]; then
  run_tests build -j2
  exit 0
fi
# The sanitizer builds compile at the lowest priority while the normal build's
# tests run: most of those tests wait (on timeouts, on killed peers, alone by
# RUN_SERIAL) and leave a core idle, which the compiler takes; a test that
# wants the CPU gets it first. Each sanitizer build leaves out what its tests
# do not load: Python cannot load a sanitizer-built libfold without
# LD_PRELOAD, so the torch backend's tests (all nosan) and, under TSan, the
# Python package's are not run there (tests/python.cmake, tests/torch.cmake).
log=build/sanitizer-builds.log
echo "== build build-asan, build-tsan (in the background, at the lowest priority: $log)"
cfg="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DFOLD_BUILD_TESTS=ON -DFOLD_WERROR=ON '-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG'"
# its own process group (setsid), so that a failure here stops all of it
setsid bash -c "set -e
  cmake -S . -B build-asan $cfg -DFOLD_SANITIZE=address -DFOLD_BUILD_TORCH=OFF >/dev/null
  nice -n 19 cmake --build build-asan -j$jobs >/dev/null
  echo 'build-asan: built'
  cmake -S . -B build-tsan $cfg -DFOLD_SANITIZE=thread -DFOLD_BUILD_PYTHON=OFF >/dev/null
  nice -n 19 cmake --build build-tsan -j$jobs >/dev/null
  echo 'build-tsan: built'" >"$log" 2>&1 </dev/null &
bg=$!
trap 'kill -- -"$bg" 2>/dev/null || true' EXIT
wait_build() { # wait_build DIR: until the background job has built DIR; fails with its log
  until grep -qx "$1: built" "$log"; do
    if ! kill -0 "$bg" 2>/dev/null; then
      grep -qx "$1: built" "$log" && return 0
      echo "== $1 failed to build:" >&2
      cat "$log" >&2
      return 1
    fi
    sleep 2
  done
}
# The tests in two parts. First, per build, the tests that may run beside
# another (ctest -j2). Then the RUN_SERIAL ones (label serial), which ctest
# runs alone: one of them leaves a core mostly to waiting (on timeouts,
# killed or stopped peers), so the three builds' serial tests run side by
# side, each build's one at a time (docs/testing.md).
run_tests build -LE serial -j2
# Sanitizer builds run everything but the slow and the launcher-only tests ...
san_asan='slow|nosan'
# ... and ThreadSanitizer skips the tests in which no process but foldrun starts a
# thread (labels onethread, foldrunthreads: tests/CMakeLists.txt, scripts/thread_census.sh),
# and those whose threads and code another test it runs takes (tsanrepeat).
san_tsan='slow|nosan|onethread|foldrunthreads|tsanrepeat'
wait_build build-asan
run_tests build-asan -LE "$san_asan|serial" -j2
wait_build build-tsan
wait "$bg" || { cat "$log" >&2; exit 1; }
run_tests build-tsan -LE "$san_tsan|serial" -j2
echo "== serial tests of build, build-asan and build-tsan, side by side"
serial() { # serial BUILD_DIR CTEST_ARGS...: its serial tests, one at a time, output to BUILD_DIR/serial-tests.log
  local dir=$1; shift
  (cd "$dir" && ctest --output-on-failure --no-tests=error -L serial "$@") >"$dir/serial-tests.log" 2>&1
}
serial build & p0=$!
serial build-asan -LE "$san_asan" & p1=$!
serial build-tsan -LE "$san_tsan" & p2=$!
status=0
for x in "build $p0" "build-asan $p1" "build-tsan $p2"; do
  set -- $x
  rc=0
  wait "$2" || rc=$?
  echo "== test $1 (serial)"
  cat "$1/serial-tests.log"
  [ $rc -eq 0 ] || status=$rc
done
exit $status
