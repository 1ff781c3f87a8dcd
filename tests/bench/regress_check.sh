#!/usr/bin/env bash
# regress_check.sh — bench/regress.sh's command line: -h prints the usage, bad input exits 2 before building anything.
# Usage: regress_check.sh SOURCE_DIR
set -uo pipefail
r=$1/bench/regress.sh
fail() { echo "FAIL: $*" >&2; exit 1; }
out=$("$r" -h) || fail "-h exited $?"
echo "$out" | grep -q 'regress.sh \[options\] BASE' || fail "-h printed no usage: $out"
"$r" >/dev/null 2>&1; [ $? -eq 2 ] || fail "no BASE: want exit 2"
"$r" a b >/dev/null 2>&1; [ $? -eq 2 ] || fail "two BASEs: want exit 2"
"$r" -p 0 HEAD >/dev/null 2>&1; [ $? -eq 2 ] || fail "-p 0: want exit 2"
err=$("$r" no-such-commit-xyz 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] || fail "unknown commit: exit $rc, want 2"
echo "$err" | grep -q 'no commit "no-such-commit-xyz"' || fail "unknown commit: message was: $err"
echo "ok"
