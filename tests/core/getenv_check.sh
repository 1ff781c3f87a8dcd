#!/usr/bin/env bash
# getenv_check.sh — only src/core/params.c reads the environment: no getenv elsewhere in src/, python/src/ or python/fold/csrc/, and no FOLD_* getenv in tools/.
# Usage: getenv_check.sh SOURCE_DIR
set -uo pipefail
cd "$1" || exit 2
bad=$(grep -rnE '\b(secure_)?getenv *\(' src python/src python/fold/csrc --include='*.c' --include='*.h' --include='*.cpp' |
  grep -v '^src/core/params\.c:' | grep -v '^src/core/params\.h:.*\*')
tools=$(grep -rnE '\bgetenv *\( *"FOLD_' tools)
if [ -n "$bad$tools" ]; then
  echo "FAIL: read the environment through core/params.h (fold__param_*, fold__env_str):" >&2
  printf '%s\n' "$bad" "$tools" | sed '/^$/d' >&2
  exit 1
fi
# a FOLD_* name read by name must be in the table
for v in $(grep -rhoE 'fold__env_str\("FOLD_[A-Z_]*"\)|\{"FOLD_[A-Z_]*", "FOLD_[A-Z_]*"' src | grep -oE 'FOLD_[A-Z_]*' | sort -u); do
  grep -q "\"$v\"" src/core/params.h || { echo "FAIL: $v is read but not in src/core/params.h" >&2; exit 1; }
done
# and the check itself finds a planted read
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/x" "$tmp/python/src" "$tmp/tools"
echo 'const char *v = getenv("FOLD_X");' >"$tmp/src/x/a.c"
grep -rqnE '\b(secure_)?getenv *\(' "$tmp/src" || { echo "FAIL: the pattern misses a planted getenv" >&2; exit 1; }
echo "ok: no getenv outside src/core/params.c"
