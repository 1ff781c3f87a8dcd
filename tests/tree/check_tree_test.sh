#!/usr/bin/env bash
# check_tree_test.sh — the tree check passes on this checkout and fails on copies with a planted offence:
# an include of a higher layer, one transport's header in the collective layer, a file over the size aim, and a listed debt that was paid.
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
check=$src/scripts/check_tree.sh
fails=0
expect() { # expect RC WHAT ROOT PATTERN
  local out rc
  out=$("$check" "$2" "$3" 2>&1); rc=$?
  if [ "$rc" != "$1" ] || ! grep -q -- "$4" <<<"$out"; then
    echo "FAIL: check_tree $2 on $3: rc $rc (want $1), output lacks '$4':"; echo "$out"; fails=$((fails + 1))
  else echo "ok: check_tree $2 ($4)"; fi
}
expect 0 all "$src" "check_tree all: ok"
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
echo "$((8 - fails)) passed, $fails failed"
[ $fails = 0 ]
