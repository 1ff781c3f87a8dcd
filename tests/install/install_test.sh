#!/usr/bin/env bash
# install_test.sh — install fold to a temporary prefix and build a consumer via pkg-config and find_package;
# everything installed or built against the install runs without LD_LIBRARY_PATH.
# Usage: install_test.sh BUILD_DIR
set -euo pipefail
B=$1
unset LD_LIBRARY_PATH
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cmake --install "$B" --prefix "$T/prefix" >/dev/null
for f in include/fold.h include/fold_ml.h bin/foldrun bin/fold-bench; do [ -e "$T/prefix/$f" ] || { echo "missing $f" >&2; exit 1; }; done
libdir=$(dirname "$(find "$T/prefix" -name libfold.so -print -quit)")
[ -e "$libdir/libfold.a" ] || { echo "missing libfold.a" >&2; exit 1; }
cat > "$T/app.c" <<'C'
#include <fold.h>
#include <fold_ml.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", FOLD_VERSION_MAJOR, FOLD_VERSION_MINOR, FOLD_VERSION_PATCH);
  if (fold_version() == NULL || strcmp(fold_version(), want) != 0) {
    printf("fold_version() = %s, header says %s\n", fold_version() ? fold_version() : "NULL", want);
    return 1;
  }
  printf("version %s\n", fold_version());
  fold_comm *c[2];
  if (fold_comm_init_threads(2, c) != FOLD_OK) return 1;
  int v = 7, w = 0;
  fold_request *r;
  if (fold_isend(&v, 1, FOLD_INT32, 1, 0, c[0], &r) || fold_recv(&w, 1, FOLD_INT32, 0, 0, c[1]) || fold_wait(r)) return 1;
  printf("received %d\n", w);
  /* the ML header too: KMeans on four points in two clear clusters (libm comes with the library) */
  double x[4] = {0, 0.5, 10, 10.5}, cen[2];
  fold_kmeans_params p;
  fold_kmeans_params_default(&p);
  p.k = 2;
  p.init = (double[]){0, 10};
  fold_comm *one;
  if (fold_comm_init_threads(1, &one) || fold_kmeans(one, x, 4, 1, &p, cen, NULL, NULL, NULL)) return 1;
  fold_comm_destroy(one);
  if (cen[0] != 0.25 || cen[1] != 10.25) return 1;
  fold_comm_destroy(c[0]); fold_comm_destroy(c[1]);
  return w == 7 ? 0 : 1;
}
C
# 1. pkg-config
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# one version: the header's macros, fold_version(), the package's and the library's
hv=$(sed -n 's/^#define FOLD_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' "$T/prefix/include/fold.h" | paste -sd.)
[ "$(pkg-config --modversion fold)" = "$hv" ] || { echo "fold.pc says $(pkg-config --modversion fold), fold.h $hv" >&2; exit 1; }
[ -e "$libdir/libfold.so.$hv" ] || { echo "missing libfold.so.$hv" >&2; exit 1; }
cc "$T/app.c" -o "$T/app_pc" $(pkg-config --cflags --libs fold)
out=$("$T/app_pc") || { echo "pkg-config build failed to run: $out" >&2; exit 1; }
echo "$out" | grep -q "received 7"
echo "$out" | grep -qx "version $hv"
# the installed tools run as they are (fold-bench links the shared library)
"$T/prefix/bin/fold-bench" --help >/dev/null
"$T/prefix/bin/foldrun" -n 1 -- "$T/prefix/bin/fold-bench" -b 8 -e 8 -c allreduce >/dev/null
# 2. CMake package
mkdir "$T/cm"
cat > "$T/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(app C)
find_package(fold REQUIRED)
add_executable(app_cm ../app.c)
target_link_libraries(app_cm PRIVATE fold::fold)
add_executable(app_static ../app.c)
target_link_libraries(app_static PRIVATE fold::fold_static)
install(TARGETS app_cm)
CM
cmake -S "$T/cm" -B "$T/cm/b" -DCMAKE_PREFIX_PATH="$T/prefix" >/dev/null
cmake --build "$T/cm/b" >/dev/null
"$T/cm/b/app_cm" | grep -q "received 7"
# also once the user installs the program (CMake drops its build-tree RPATH then)
cmake --install "$T/cm/b" --prefix "$T/appprefix" >/dev/null
"$T/appprefix/bin/app_cm" | grep -q "received 7"
"$T/cm/b/app_static" | grep -q "received 7"
# 3. the shared library exports the API and nothing internal
if nm -D --defined-only "$libdir/libfold.so" | awk '{print $3}' | grep -v '^fold_' | grep -v '^_' ; then
  echo "libfold.so exports symbols outside the fold_ namespace" >&2; exit 1
fi
if nm -D --defined-only "$libdir/libfold.so" | awk '{print $3}' | grep '^fold__'; then
  echo "libfold.so exports internal fold__ symbols" >&2; exit 1
fi
echo "install test: pkg-config, find_package (shared and static) and exports all good"
