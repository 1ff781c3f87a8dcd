#!/usr/bin/env bash
# check_tree.sh — keep the architecture true: no file includes a header of a layer above its own, no object file
# calls (or reads) a symbol defined by a layer above its own, and no source file grows past the size aim
# (docs/design.md §3, §4). Run by ctest as `tree_check` (tests/tree/check_tree_test.sh).
# Usage: scripts/check_tree.sh [layers|calls|sizes|all] [ROOT] [BUILD]   (exit 1 and one line per offence when
# something is off; ROOT, default this checkout, lets tests/tree check a copy with a planted offence; BUILD, or
# $FOLD_BUILD_DIR, is a CMake build directory of ROOT whose library objects `calls` reads with nm: without one,
# `calls` says it skipped and passes, and `all` checks the rest)
set -uo pipefail
build=${3:-${FOLD_BUILD_DIR:-}}
[ -z "$build" ] || build=$(cd "$build" 2>/dev/null && pwd) || build=/nonexistent
cd "${2:-$(dirname "$0")/..}"
what=${1:-all}

# The layer of a file or header, by path (an awk function: the whole check is one pass, a few processes
# however large the tree): lower numbers sit lower. A file may include headers of its own layer or of lower
# ones. transport/transport.h is the vtable the engine drives, so it counts as the engine's.
# Keep this table in step with docs/design.md §3 ("Layers").
layer_awk='
function layer(p) {
  if (p ~ /^src\/core\//) return 0
  if (p ~ /^src\/(op|patterns|net)\//) return 1
  if (p ~ /^src\/engine\// || p == "src/transport/transport.h") return 2
  if (p ~ /^src\/transport\//) return 3
  if (p ~ /^src\/coll\/registry\.[ch]$/) return 4 # the lists of collectives and algorithms, below select and coll
  if (p ~ /^src\/select\//) return 5
  if (p ~ /^src\/(comm|coll)\//) return 6
  if (p ~ /^src\/bootstrap\//) return 7
  if (p ~ /^src\/(areduce|kv|queue|ml)\//) return 8
  return 9 # tools, bench, tests, bindings: may include anything
}
# dir/../x and dir/./x as a plain path
function normalize(p,    n, i, k, part, out) {
  n = split(p, part, "/"); k = 0
  for (i = 1; i <= n; i++) {
    if (part[i] == "" || part[i] == ".") continue
    if (part[i] == ".." && k > 0) { k--; continue }
    out[++k] = part[i]
  }
  p = ""
  for (i = 1; i <= k; i++) p = p (i > 1 ? "/" : "") out[i]
  return p
}
'

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
  # One grep over every source file for its quoted includes (only those are ours), the file list for
  # resolving them (against src/, then the file's own folder), and one awk pass over both.
  { find src -name '*.[ch]' | sort | sed 's/^/FILE /'
    find src -name '*.[ch]' -print0 | sort -z | xargs -0 grep -H '^[[:space:]]*#[[:space:]]*include[[:space:]]*"'
  } | awk "$layer_awk"'
    $1 == "FILE" && NF == 2 { have[$2] = 1; next }
    {
      f = $0; sub(/:.*/, "", f)
      h = $0; sub(/^[^"]*"/, "", h); sub(/".*/, "", h)
      if (("src/" h) in have) p = "src/" h
      else { d = f; sub(/\/[^\/]*$/, "", d); p = normalize(d "/" h); if (!(p in have)) next } # fold.h, system headers
      if (layer(p) > layer(f)) print f " -> " p
      # the collective executor and the algorithms know transports only through the vtable (transport.h),
      # e.g. the shm collectives through fold__tp_ops.coll: never one transport'"'"'s own headers
      else if (f ~ /^src\/(coll|select)\// && p ~ /^src\/transport\/[^\/]+\//) print f " -> " p
    }' | sort -u >"$found"
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

# Symbols used across layers against the order today, as "USER calls SYMBOL" (a function) or "USER uses SYMBOL"
# (data; SYMBOL may be a glob), each with
# its reason below. The check fails on an offence not listed here, and on a listed one that no longer happens.
known_calls() {
  cat <<'EOF'
src/coll/registry.c uses fold__*_*
EOF
}
# Why each is there (keep in step with known_calls and docs/design.md §3):
#  src/coll/registry.c uses fold__*_*: the registry's tables point at the algorithms' descriptors (data, each
#    `const fold__algo fold__<coll>_<algo>`, defined in src/coll/<coll>/); that list is the registry's reason
#    to be. It calls none of them: selection and the executor call an algorithm through its descriptor.

# The library's object files: CMake's object library (fold_obj) keeps them as <dir>/src/<path>.c.o.
objects_dir() {
  local d
  for d in "$build/CMakeFiles/fold_obj.dir" "$build/CMakeFiles/fold.dir" "$build/CMakeFiles/fold_static.dir"; do
    [ -d "$d/src" ] && { echo "$d"; return 0; }
  done
  return 1
}

check_calls() {
  local found objs known fail=0
  if [ -z "$build" ]; then echo "check_tree calls: skipped (no build directory given: [BUILD] or FOLD_BUILD_DIR)"; return 0; fi
  if ! objs=$(objects_dir); then echo "check_tree calls: skipped (no library objects under $build/CMakeFiles)"; return 0; fi
  if ! command -v nm >/dev/null; then echo "check_tree calls: skipped (no nm)"; return 0; fi
  found=$(mktemp)
  # One nm over every object (POSIX format, each line prefixed with its file): the global symbols each
  # defines and the ones it uses (U). A use of a symbol that a higher layer's object defines is an offence,
  # a call or a read of data alike; an inline function of a header counts for the file that expands it.
  # Objects whose source is gone (a file moved or deleted since that build) are left out.
  { find src -name '*.c' | sed 's/^/SRC /'
    (cd "$objs" && find src -name '*.o' -print0 | sort -z | xargs -0 nm -A -P 2>/dev/null)
  } | awk "$layer_awk"'
    $1 == "SRC" && NF == 2 { have[$2] = 1; next }
    { f = $1; sub(/\.o:$/, "", f); sym = $2; t = $3
      if (!(f in have)) next
      if (t == "U") { n++; uf[n] = f; us[n] = sym }
      else if (t ~ /^[TDBRVWGSC]$/) { def[sym] = f; kind[sym] = t ~ /^[TW]$/ ? "calls" : "uses" } }
    END {
      for (i = 1; i <= n; i++) {
        d = def[us[i]]
        if (d != "" && layer(d) > layer(uf[i])) print uf[i] " " kind[us[i]] " " us[i] "\t" d
      }
    }' | sort -u >"$found"
  known=$(known_calls)
  local key what k listed hit
  while IFS=$'\t' read -r key what; do
    listed=0
    while read -r k; do
      # shellcheck disable=SC2053 # the right side is a glob on purpose
      [ -n "$k" ] && [[ $key == $k ]] && listed=1
    done <<<"$known"
    if [ $listed = 0 ]; then
      echo "call offence: $key of $what (a file uses a symbol of a layer above its own; see docs/design.md §3)"
      fail=1
    fi
  done <"$found"
  while read -r k; do
    [ -n "$k" ] || continue
    hit=0
    while IFS=$'\t' read -r key what; do
      # shellcheck disable=SC2053
      [[ $key == $k ]] && { hit=1; break; }
    done <"$found"
    if [ $hit = 0 ]; then
      echo "call debt paid: '$k' no longer happens; remove it from known_calls in scripts/check_tree.sh and docs/design.md §3"
      fail=1
    fi
  done <<<"$known"
  rm -f "$found"
  return $fail
}

check_sizes() {
  local fail=0 n f
  # one wc over every file (its last line, the total, is dropped)
  while read -r n f; do
    [ "$f" = total ] && continue
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
  done < <(find src include tools bench -name '*.[ch]' -print0 | sort -z | xargs -0 wc -l)
  return $fail
}

rc=0
case $what in
  layers) check_layers || rc=1 ;;
  calls) check_calls || rc=1 ;;
  sizes) check_sizes || rc=1 ;;
  all) check_layers || rc=1; check_calls || rc=1; check_sizes || rc=1 ;;
  *) echo "usage: $0 [layers|calls|sizes|all] [ROOT] [BUILD]" >&2; exit 2 ;;
esac
[ $rc = 0 ] && echo "check_tree $what: ok"
exit $rc
