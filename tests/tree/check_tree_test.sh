#!/usr/bin/env bash
# check_tree_test.sh — the tree check passes on this checkout and fails on copies with a planted offence:
# an include of a higher layer, one transport's header in the collective layer, a call into a higher layer (object
# files made here), a file over the size aim, and a listed debt that was paid.
# Usage: check_tree_test.sh [BUILD]   (BUILD: this checkout's build directory, whose objects `calls` reads)
set -uo pipefail
unset FOLD_BUILD_DIR
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-}
check=$src/scripts/check_tree.sh
fails=0
expect() { # expect RC WHAT ROOT PATTERN [BUILD]
  local out rc
  out=$("$check" "$2" "$3" ${5:+"$5"} 2>&1); rc=$?
  if [ "$rc" != "$1" ] || ! grep -q -- "$4" <<<"$out"; then
    echo "FAIL: check_tree $2 on $3: rc $rc (want $1), output lacks '$4':"; echo "$out"; fails=$((fails + 1))
  else echo "ok: check_tree $2 ($4)"; fi
}
expect 0 all "$src" "check_tree all: ok"
expect 0 calls "$src" "check_tree calls: skipped (no build directory" # no build: skipped, not failed
passes=10
if [ -n "$build" ] && [ -d "$build/CMakeFiles/fold_obj.dir/src" ]; then
  expect 0 all "$src" "check_tree all: ok" "$build"
  passes=$((passes + 1))
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
copy() { rm -rf "$tmp/t"; mkdir -p "$tmp/t"; cp -r "$src/src" "$src/include" "$src/tools" "$src/bench" "$tmp/t/"; }
copy; sed -i '1a #include "coll/coll.h"' "$tmp/t/src/core/log.c"
expect 1 layers "$tmp/t" "layer offence: src/core/log.c -> src/coll/coll.h"
copy; sed -i '1a #include "../engine/progress.c"' "$tmp/t/src/op/op.c" # relative includes resolve too
expect 1 layers "$tmp/t" "layer offence: src/op/op.c -> src/engine/progress.c"
# the registry sits below selection, and selection below the collectives (docs/design.md §3)
copy; sed -i '1a #include "coll/coll.h"' "$tmp/t/src/select/select.c"
expect 1 layers "$tmp/t" "layer offence: src/select/select.c -> src/coll/coll.h"
copy; sed -i '1a #include "select/select.h"' "$tmp/t/src/coll/registry.h"
expect 1 layers "$tmp/t" "layer offence: src/coll/registry.h -> src/select/select.h"
copy; sed -i '1a #include "transport/shm/shm_seg.h"' "$tmp/t/src/coll/shm_coll.c" # a lower layer, but one transport's own
expect 1 layers "$tmp/t" "layer offence: src/coll/shm_coll.c -> src/transport/shm/shm_seg.h (collectives reach a transport only"
# a listed debt that no longer happens must be struck off: list a fake one in a copy of the script
sed '/^known_offences()/,/^EOF/ s#^  cat <<.EOF.$#&\nsrc/core/log.c -> src/coll/coll.h#' "$check" >"$tmp/check_tree.sh"; chmod +x "$tmp/check_tree.sh"
out=$("$tmp/check_tree.sh" layers "$src" 2>&1); rc=$?
if [ $rc = 1 ] && grep -q "layer debt paid: 'src/core/log.c -> src/coll/coll.h'" <<<"$out"; then echo "ok: check_tree layers (debt paid)"
else echo "FAIL: a paid debt went unnoticed (rc $rc): $out"; fails=$((fails + 1)); fi
copy; for i in $(seq 900); do echo "/* line $i */"; done >>"$tmp/t/src/core/log.c"
expect 1 sizes "$tmp/t" "size: src/core/log.c has"
# calls: objects as CMake lays them out, core calling a function and reading data that comm defines; an object
# whose source is gone is left out (a stale one would otherwise speak for a moved file)
copy; o=$tmp/b/CMakeFiles/fold_obj.dir/src; mkdir -p "$o/core" "$o/comm" "$o/gone"
printf 'int fold__planted(void) { return 1; }\nint fold__planted_data = 2;\n' >"$tmp/comm.c"
printf 'int fold__planted(void);\nextern int fold__planted_data;\nint f(void) { return fold__planted() + fold__planted_data; }\n' >"$tmp/log.c"
printf 'int fold__planted(void);\nint g(void) { return fold__planted(); }\n' >"$tmp/gone.c"
if cc -c "$tmp/comm.c" -o "$o/comm/comm.c.o" && cc -c "$tmp/log.c" -o "$o/core/log.c.o" && cc -c "$tmp/gone.c" -o "$o/gone/gone.c.o"; then
  expect 1 calls "$tmp/t" "call offence: src/core/log.c calls fold__planted of src/comm/comm.c" "$tmp/b"
  expect 1 calls "$tmp/t" "call offence: src/core/log.c uses fold__planted_data of src/comm/comm.c" "$tmp/b"
  out=$("$check" calls "$tmp/t" "$tmp/b" 2>&1)
  if grep -q "src/gone" <<<"$out"; then echo "FAIL: an object without a source was checked: $out"; fails=$((fails + 1))
  else echo "ok: check_tree calls (objects without a source left out)"; fi
else
  echo "FAIL: cc could not build the planted objects"; fails=$((fails + 1))
fi
# a listed call debt that no longer happens must be struck off too
sed '/^known_calls()/,/^EOF/ s#^  cat <<.EOF.$#&\nsrc/core/log.c calls fold__nothing_calls_this#' "$check" >"$tmp/check_tree.sh"; chmod +x "$tmp/check_tree.sh"
out=$("$tmp/check_tree.sh" calls "$tmp/t" "$tmp/b" 2>&1); rc=$?
if [ $rc = 1 ] && grep -q "call debt paid: 'src/core/log.c calls fold__nothing_calls_this'" <<<"$out"; then echo "ok: check_tree calls (debt paid)"
else echo "FAIL: a paid call debt went unnoticed (rc $rc): $out"; fails=$((fails + 1)); fi
echo "$((passes + 3 - fails)) passed, $fails failed"
[ $fails = 0 ]
