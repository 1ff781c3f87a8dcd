#!/usr/bin/env bash
# print_config.sh — foldrun --print-config lists every FOLD_* variable's value in use, with --transport/--timeout applied, and warns once about a rejected one.
# Usage: print_config.sh FOLDRUN DOCS/CONFIGURATION.MD
set -uo pipefail
F=$1 DOC=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; echo "--- stdout" >&2; cat "$tmp/out" >&2; echo "--- stderr" >&2; cat "$tmp/err" >&2; exit 1; }
env -i PATH="$PATH" FOLD_TIMEOUT=7 FOLD_KV_SERVERS=abc FOLD_ALGO=allreduce=ring \
  "$F" --transport shm --print-config >"$tmp/out" 2>"$tmp/err" || fail "foldrun --print-config failed"
grep -qx 'FOLD_TIMEOUT  *7' "$tmp/out" || fail "FOLD_TIMEOUT=7 not listed"
grep -qx 'FOLD_TRANSPORT  *shm' "$tmp/out" || fail "--transport shm not applied"
grep -qx 'FOLD_ALGO  *allreduce=ring' "$tmp/out" || fail "FOLD_ALGO not listed"
grep -qx 'FOLD_DEBUG  *WARN (default)' "$tmp/out" || fail "FOLD_DEBUG's default not listed"
grep -qxF 'FOLD_KV_SERVERS         1 (default: "abc" is not an integer in [1, 2^30])' "$tmp/out" ||
  fail "the rejected FOLD_KV_SERVERS not explained"
# every variable of the (generated) table, once
[ "$(grep -o '^FOLD_[A-Z_]*' "$tmp/out" | sort)" = "$(grep -o '^| `FOLD_[A-Z_]*' "$DOC" | cut -c4- | sort)" ] ||
  fail "the variables listed are not the table's"
[ "$(grep -c 'WARN: FOLD_KV_SERVERS=abc is not an integer' "$tmp/err")" -eq 1 ] || fail "want one warning"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "other lines on stderr"
# --timeout wins over the environment, as for the ranks
env -i PATH="$PATH" FOLD_TIMEOUT=7 "$F" --timeout 9 --print-config >"$tmp/out" 2>"$tmp/err" || fail "failed"
grep -qx 'FOLD_TIMEOUT  *9' "$tmp/out" || fail "--timeout 9 not applied"
echo "ok: foldrun --print-config"
