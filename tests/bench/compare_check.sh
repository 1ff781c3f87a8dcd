#!/usr/bin/env bash
# compare_check.sh — run bench/compare --quick and check its table: numbers for fold and every peer at every size, ratios that match the times, a real PNG.
# Usage: compare_check.sh REPO BUILD_DIR [host|netns]   (default host)
# bench/compare builds fold in BUILD_DIR (FOLD_BUILD_DIR) and writes its
# results under a temporary dir, removed at the end unless the check fails.
set -uo pipefail
repo=$1 build=$2 setting=${3:-host}
tmp=$(mktemp -d)
fail() { echo "FAIL: $*" >&2; echo "--- stderr (tail)" >&2; tail -n 30 "$tmp/err" >&2; echo "results kept in $tmp" >&2; exit 1; }

FOLD_BUILD_DIR=$build COMPARE_RESULTS_DIR=$tmp timeout -k 10 900 "$repo/bench/compare" --quick --only "$setting" \
  --no-deps -t 120 >"$tmp/out" 2>"$tmp/err"
rc=$?
res=$(ls -d "$tmp"/compare-* 2>/dev/null | head -n 1)
[ -n "$res" ] && [ -s "$res/table.txt" ] || fail "no results dir or table.txt (exit $rc)"
cmp -s "$tmp/out" "$res/table.txt" || fail "stdout is not table.txt"
[ -s "$res/table.md" ] || fail "no table.md"
if [ "$setting" = host ]; then libs="fold-shm fold-tcp ompi-shm ompi-tcp mpich gloo"; else libs="fold-tcp ompi-tcp mpich gloo"; fi

# Every table: a header naming every library, then one row per size; each
# library's cell is a number (gloo may say n/a for reduce_scatter, which the
# table must then explain), and each ratio r(X) equals X / its fold to 2
# decimals (recomputed here from the printed times).
"${COMPARE_PYTHON:-/usr/bin/python3}" - "$res/table.txt" "$libs" <<'PY' || fail "table check failed"
import sys
text, libs = open(sys.argv[1]).read().split("\n"), sys.argv[2].split()
pair = {"ompi-shm": "fold-shm", "mpich": "fold-shm", "ompi-tcp": "fold-tcp", "gloo": "fold-tcp"}
tables = 0
i = 0
while i < len(text):
    if not text[i].startswith("== ") or "bandwidth bound" in text[i]:
        i += 1
        continue
    title, head = text[i], text[i + 1].split()
    tables += 1
    assert head[0] == "size" and all(l in head for l in libs), (title, head)
    rows, i = [], i + 2
    while i < len(text) and text[i].strip() and not text[i].startswith("   note:"):
        rows.append(text[i]); i += 1
    notes = []
    while i < len(text) and text[i].startswith("   note:"):
        notes.append(text[i]); i += 1
    assert len(rows) >= 3, (title, "too few sizes", rows)
    checked = 0
    for r in rows:
        p = r.split()
        cells = dict(zip(head[1:], p[2:]))  # p[0:2] is the size, e.g. "16 KiB"
        for l in libs:
            v = cells[l]
            if v == "n/a":
                assert l == "gloo" and "reduce_scatter" in title and any("gloo: n/a" in n for n in notes), (title, r)
                continue
            assert float(v) > 0, (title, l, r)
        for l in libs:
            if l in pair and cells[l] != "n/a" and pair[l] in cells:
                pt, ft = float(cells[l]), float(cells[pair[l]])
                got = float(cells["r(%s)" % l])
                # the ratio is printed to 0.01 and made from unrounded times;
                # the times are printed to 0.01 us (1 us from 1e5 up): the
                # ratio of the unrounded times lies between these bounds
                # (exact, not first-order: a 64 B alltoall that took MPICH
                # 6,400 times fold's time sat 0.009 outside the linear bound)
                err = lambda t: 0.005 if t < 1e5 else 0.5
                lo, hi = (pt - err(pt)) / (ft + err(ft)), (pt + err(pt)) / (ft - err(ft))
                assert lo - 0.0051 <= got <= hi + 0.0051, (title, l, got, (lo, hi), r)
                checked += 1
    assert checked > 0, (title, "no ratio checked")
assert tables >= 6, ("tables", tables)
print("ok: %d tables" % tables)
PY
png=$res/compare-$setting.png
[ -s "$png" ] || fail "no $png"
[ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$png is not a PNG"
# Every run succeeded: the exit status says so, and nothing in runs.tsv failed
# (except MPICH's known hang after its last row in netns, which is reported).
bad=$(awk -F'\t' '$5 == "fail" && !($4 == "mpich" && $6 ~ /^hung after its last row/)' "$res/runs.tsv")
[ -z "$bad" ] || fail "failed runs: $bad"
[ $rc -eq 0 ] || grep -q 'hung after its last row' "$res/runs.tsv" || fail "exit status $rc"
echo "ok: $setting, $(wc -l <"$res/runs.tsv") runs"
rm -rf "$tmp"
