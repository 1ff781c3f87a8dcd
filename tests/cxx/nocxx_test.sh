#!/usr/bin/env bash
# nocxx_test.sh — fold is C: it configures with the tests on where no C++
# compiler exists (every C++ compiler hidden in a private mount namespace).
# Usage: nocxx_test.sh SOURCE_DIR C_COMPILER   (exit 77: cannot hide them here)
set -euo pipefail
src=$1 cc=$(realpath "$2")
if [ -z "${NOCXX_TMP:-}" ]; then # outside: make the namespace, clean up after it
  [ "$(id -u)" = 0 ] && command -v unshare >/dev/null || { echo "needs root and unshare: skipped"; exit 77; }
  NOCXX_TMP=$(mktemp -d)
  export NOCXX_TMP
  trap 'rm -rf "$NOCXX_TMP"' EXIT
  unshare -m --propagation private "$0" "$@"
  exit
fi
T=$NOCXX_TMP
: > "$T/not-a-compiler"
for name in c++ g++ clang++ CC cxx icpx; do
  while read -r p; do
    real=$(realpath "$p")
    [ "$real" = "$cc" ] || mount --bind "$T/not-a-compiler" "$real"
  done < <(which -a "$name" 2>/dev/null || true)
done
for name in c++ g++ clang++; do
  if command -v "$name" >/dev/null && "$name" --version >/dev/null 2>&1; then
    echo "could not hide $name" >&2; exit 1
  fi
done
cmake -S "$src" -B "$T/b" -DCMAKE_C_COMPILER="$cc" -DFOLD_BUILD_TESTS=ON > "$T/log" 2>&1 || {
  cat "$T/log" >&2; echo "configure failed without a C++ compiler" >&2; exit 1; }
grep -q "C++ header test (header_cxx) is skipped" "$T/log" || { cat "$T/log" >&2; echo "no skip notice" >&2; exit 1; }
if grep -q "add_test(header_cxx " "$T/b/tests/CTestTestfile.cmake"; then
  echo "header_cxx registered without a C++ compiler" >&2; exit 1
fi
echo "configured without a C++ compiler"
