#!/usr/bin/env bash
# consumer_test.sh — a project of fold's users gets fold in one way and runs a checked 2-rank allreduce, linked
# with fold::fold and fold::fold_static, without LD_LIBRARY_PATH, loading the libfold it was built against.
# Usage: consumer_test.sh HOW FOLD_SRC FOLD_BUILD C_COMPILER
#   HOW = subdir      add_subdirectory(FOLD_SRC): only the library is built (no tools, tests, Python)
#         fetch       FetchContent from a file:// git repository holding the tree under test (no network)
#         build_tree  find_package(fold) with -Dfold_DIR=FOLD_BUILD (fold's build tree as a package)
#         prefix      cmake --install FOLD_BUILD into a temporary prefix, then find_package(fold)
set -euo pipefail
how=$1
src=$(realpath "$2")
build=$(realpath "$3")
cc=$4
here=$(dirname "$(realpath "$0")")
unset LD_LIBRARY_PATH
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "consumer_test $how: $*" >&2; exit 1; }
step() { # step LOG CMD...: run quietly, show the log's end if it fails
  local log=$1; shift
  "$@" >"$log" 2>&1 || { tail -40 "$log" >&2; fail "failed: $*"; }
}
mkdir "$T/app"
cp "$here/CMakeLists.txt" "$here/app.c" "$T/app/"
args=(-DCMAKE_C_COMPILER="$cc")
case $how in
  subdir)
    args+=(-DFOLD_HOW=subdir -DFOLD_SRC="$src")
    libdir=$T/b/fold ;;
  fetch)
    # the repository: the tree as it is now (tracked files and new ones git does not ignore), one commit
    "$here/copy_tree.sh" "$src" "$T/repo"
    g=(git -C "$T/repo" -c user.name=fold-test -c user.email=fold-test@localhost -c init.defaultBranch=main)
    step "$T/git.log" "${g[@]}" init -q
    step "$T/git.log" "${g[@]}" add -A
    step "$T/git.log" "${g[@]}" commit -q -m "the tree under test"
    args+=(-DFOLD_HOW=fetch -DFOLD_GIT="file://$T/repo" -DFOLD_GIT_TAG="$(git -C "$T/repo" rev-parse HEAD)")
    libdir=$T/b/_deps/fold-build ;;
  build_tree)
    args+=(-DFOLD_HOW=package -Dfold_DIR="$build")
    libdir=$build ;;
  prefix)
    step "$T/install.log" cmake --install "$build" --prefix "$T/prefix"
    args+=(-DFOLD_HOW=package -DCMAKE_PREFIX_PATH="$T/prefix")
    libdir=$(dirname "$(find "$T/prefix" -name libfold.so -print -quit)") ;;
  *) fail "HOW must be subdir, fetch, build_tree or prefix" ;;
esac
step "$T/configure.log" cmake -S "$T/app" -B "$T/b" "${args[@]}"
step "$T/build.log" cmake --build "$T/b" -j2
check() { # check PROGRAM SHARED(1|0): the allreduce is right; a shared program loaded the libfold of $libdir
  local out
  out=$("$1" 2>&1) || { echo "$out" >&2; fail "$1 failed"; }
  echo "$out" | grep -q "^allreduce ok" || { echo "$out" >&2; fail "$1 printed no result"; }
  if [ "$2" = 1 ]; then
    local lib
    lib=$(echo "$out" | sed -n 's/^libfold //p')
    [ -n "$lib" ] || fail "$1: no libfold loaded"
    [ "$(realpath "$(dirname "$lib")")" = "$(realpath "$libdir")" ] ||
      fail "$1 loaded $lib, not the libfold in $libdir"
  fi
  echo "$how: $1: $(echo "$out" | tail -1)"
}
check "$T/b/app" 1
check "$T/b/app_static" 0
case $how in
  subdir|fetch)
    # inside another project fold builds only its library unless asked
    for o in FOLD_BUILD_TESTS FOLD_BUILD_TOOLS FOLD_BUILD_PYTHON; do
      grep -q "^$o:BOOL=OFF$" "$T/b/CMakeCache.txt" || fail "$o is not OFF by default in a subproject"
    done
    [ ! -e "$libdir/foldrun" ] || fail "foldrun was built in a subproject" ;;
  build_tree|prefix)
    # the package puts libfold's directory in the program's RUNPATH: it runs after its own install too
    step "$T/appinstall.log" cmake --install "$T/b" --prefix "$T/appprefix"
    check "$T/appprefix/bin/app" 1 ;;
esac
echo "consumer_test $how: good"
