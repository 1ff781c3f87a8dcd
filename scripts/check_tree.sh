#!/usr/bin/env bash
# check_tree.sh — keep the architecture true: no file includes a header of a layer above its own, and no
# source file grows past the size aim (docs/design.md §3, §4). Run by ctest as `tree_layers` and `tree_sizes`.
# Usage: scripts/check_tree.sh [layers|sizes|all] [ROOT]   (exit 1 and one line per offence when something is
# off; ROOT, default this checkout, lets tests/tree check a copy with a planted offence)
set -uo pipefail
cd "${2:-$(dirname "$0")/..}"
what=${1:-all}

# The layer of a file or header, by path: lower numbers sit lower. A file may include headers of its own
# layer or of lower ones. transport/transport.h is the vtable the engine drives, so it counts as the engine's.
# Keep this table in step with docs/design.md §3 ("Layers").
layer_of() {
  case $1 in
    src/core/*) echo 0 ;;
    src/op/* | src/patterns/* | src/net/*) echo 1 ;;
    src/engine/* | src/transport/transport.h) echo 2 ;;
    src/transport/*) echo 3 ;;
    src/coll/registry.[ch]) echo 4 ;; # the lists of collectives and algorithms, below select and coll
    src/select/*) echo 5 ;;
    src/comm/* | src/coll/*) echo 6 ;;
    src/bootstrap/*) echo 7 ;;
    src/areduce/* | src/kv/* | src/queue/* | src/ml/* | src/straggler/*) echo 8 ;;
    *) echo 9 ;; # tools, bench, tests, bindings: may include anything
  esac
}

# Includes that break the order today, each a debt named in docs/design.md §3. The check fails on any
# offence not listed here, and on a listed one that is gone (so that the list only ever shrinks). None
# is left: the last two (the inproc and sim transports made their own communicators) were paid when
# fold_comm_init_threads and fold_sim_create moved to src/comm/comm_local.c.
known_offences() {
  cat <<'EOF'
EOF
}

# The size aim is ~800 lines; these files are over it today and are to be split (docs/design.md §4).
size_limit=800
known_large=""

check_layers() {
  local found fail=0
  found=$(mktemp)
  for f in $(find src -name '*.[ch]' | sort); do
    local lf; lf=$(layer_of "$f")
    # only quoted includes are ours; resolve each against src/ then the file's own folder
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | while read -r h; do
      local p
      if [ -f "src/$h" ]; then p="src/$h"
      elif [ -f "$(dirname "$f")/$h" ]; then p=$(realpath --relative-to=. "$(dirname "$f")/$h")
      else continue; fi # fold.h and system headers
      local lh; lh=$(layer_of "$p")
      if [ "$lh" -gt "$lf" ]; then echo "$f -> $p"; fi
      # the collective executor and the algorithms know transports only through the vtable (transport.h),
      # e.g. the shm collectives through fold__tp_ops.coll: never one transport's own headers
      case $f:$p in
        src/coll/*:src/transport/*/* | src/select/*:src/transport/*/*) echo "$f -> $p" ;;
      esac
    done
  done >"$found"
  while read -r line; do
    if ! known_offences | grep -qxF "$line"; then
      case $line in
        src/coll/*" -> src/transport/"*/* | src/select/*" -> src/transport/"*/*)
          echo "layer offence: $line (collectives reach a transport only through its vtable, transport.h; see docs/design.md §3)" ;;
        *) echo "layer offence: $line (a file includes a header of a layer above its own; see docs/design.md §3)" ;;
      esac
      fail=1
    fi
  done <"$found"
  while read -r line; do
    if ! grep -qxF "$line" "$found"; then
      echo "layer debt paid: '$line' no longer happens; remove it from known_offences in scripts/check_tree.sh and docs/design.md §3"
      fail=1
    fi
  done < <(known_offences)
  rm -f "$found"
  return $fail
}

check_sizes() {
  local fail=0
  for f in $(find src include tools bench -name '*.[ch]' | sort); do
    local n; n=$(wc -l <"$f")
    local listed=0
    for k in $known_large; do [ "$k" = "$f" ] && listed=1; done
    if [ "$n" -gt "$size_limit" ] && [ $listed = 0 ]; then
      echo "size: $f has $n lines, over the aim of $size_limit (split it along a seam; docs/design.md §4)"
      fail=1
    fi
    if [ "$n" -le "$size_limit" ] && [ $listed = 1 ]; then
      echo "size debt paid: $f has $n lines; remove it from known_large in scripts/check_tree.sh"
      fail=1
    fi
  done
  return $fail
}

rc=0
case $what in
  layers) check_layers || rc=1 ;;
  sizes) check_sizes || rc=1 ;;
  all) check_layers || rc=1; check_sizes || rc=1 ;;
  *) echo "usage: $0 [layers|sizes|all]" >&2; exit 2 ;;
esac
[ $rc = 0 ] && echo "check_tree $what: ok"
exit $rc
