#!/usr/bin/env bash
# bench_check.sh — run fold-bench under the build's foldrun and check its table (exit status, #wrong, sections, JSON).
# Usage: bench_check.sh BUILD_DIR run N TRANSPORT SECTIONS [fold-bench args...]
#          every row must show #wrong 0 (or N/A where a form does not exist),
#          with --check at least one 0; SECTIONS table headers ("-": any)
#        bench_check.sh BUILD_DIR badopt [fold-bench args...]
#          exit status 2 and the usage on stderr, alone and under foldrun -n 2
set -uo pipefail
B=$1 mode=$2
shift 2
bench=$B/fold-bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; echo "--- stdout" >&2; cat "$tmp/out" >&2 2>/dev/null; echo "--- stderr" >&2; cat "$tmp/err" >&2 2>/dev/null; exit 1; }

case $mode in
badopt)
  "$bench" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 2 ] || fail "fold-bench $* exited $rc, want 2"
  grep -q '^usage: fold-bench' "$tmp/err" || fail "no usage on stderr"
  [ -s "$tmp/out" ] && fail "bad option wrote to stdout"
  timeout -k 5 60 "$B/foldrun" -n 2 -- "$bench" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 2 ] || fail "under foldrun: exited $rc, want 2"
  echo "ok: $* -> exit 2"
  ;;
run)
  n=$1 transport=$2 sections=$3
  shift 3
  check=0 json=
  prev=
  for a in "$@"; do
    [ "$a" = --check ] && check=1
    [ "$prev" = --json ] && json=$a
    prev=$a
  done
  [ -n "$json" ] && rm -f "$json"
  timeout -k 5 150 "$B/foldrun" -n "$n" --transport "$transport" --timeout 60 -- "$bench" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 0 ] || fail "exit status $rc"
  # rank 0's lines without foldrun's prefix
  sed -n 's/^\[0\] //p' "$tmp/out" >"$tmp/table"
  grep -v '^#' "$tmp/table" >"$tmp/rows"
  [ -s "$tmp/rows" ] || fail "no rows"
  bad=$(awk 'NF != 15 || ($9 != "0" && $9 != "N/A") || ($13 != "0" && $13 != "N/A")' "$tmp/rows")
  [ -z "$bad" ] || fail "rows with a wrong count or a bad shape: $bad"
  # the last column names the algorithm that ran, never "auto": a forced
  # section's own, or the one automatic selection picked for that size
  bad=$(awk '
    /^# algorithm: / { sec = $3; next }
    /^#/ { next }
    $15 !~ /^[a-z_0-9]+$/ || $15 == "auto" || (sec != "auto" && $15 != sec)' "$tmp/table")
  [ -z "$bad" ] || fail "rows without the algorithm that ran: $bad"
  # progress and notes are whole comment lines between rows, even with stderr joined to stdout
  # (a progress line before every size: FOLD_BENCH_PROGRESS_AFTER=0)
  FOLD_BENCH_PROGRESS_AFTER=0 timeout -k 5 150 "$B/foldrun" -n "$n" --transport "$transport" --timeout 60 -- "$bench" "$@" >"$tmp/joined" 2>&1 ||
    fail "exit status $? with stderr joined to stdout"
  grep -q '^\[0\] # running ' "$tmp/joined" || fail "no progress line with FOLD_BENCH_PROGRESS_AFTER=0"
  bad=$(grep -v '^\[0\] #' "$tmp/joined" | awk '$1 != "[0]" || NF != 16')
  [ -z "$bad" ] || fail "with 2>&1, lines inside the table that are not rows: $bad"
  if [ $check -eq 1 ]; then
    [ "$(awk '$9 == "0"' "$tmp/rows" | wc -l)" -gt 0 ] || fail "--check verified nothing"
    grep -q '^# Wrong elements : 0 OK$' "$tmp/table" || fail "no '# Wrong elements : 0 OK' line"
  fi
  grep -q '^# Avg bus bandwidth : [0-9.]*$' "$tmp/table" || fail "no '# Avg bus bandwidth' line"
  got=$(grep -c '^# collective: ' "$tmp/table")
  [ "$sections" = - ] || [ "$got" -eq "$sections" ] || fail "$got sections, want $sections"
  if [ -n "$json" ]; then
    [ -s "$json" ] || fail "no JSON in $json"
    [ -x /usr/bin/python3 ] || fail "no /usr/bin/python3 to check the JSON with"
    /usr/bin/python3 - "$json" "$(wc -l <"$tmp/rows")" <<'PY' || fail "bad JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["tool"] == "fold-bench" and len(d["rows"]) == int(sys.argv[2]), (len(d["rows"]), sys.argv[2])
for r in d["rows"]:
    assert r["oop_wrong"] in (0, -1, None) and r["ip_wrong"] in (0, -1, None), r
    assert r["size"] >= 0 and r["p99_us"] >= 0, r
    if d["op"] == "sum_exact":  # what exactness costs, per row: a positive ratio to FOLD_SUM's time
        for k in ("sum_time_us", "sum_exact_ratio"):
            v = r[k]
            assert isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0, (k, r)
        assert abs(r["sum_exact_ratio"] - r["oop_time_us"] / r["sum_time_us"]) <= 1e-3 * r["sum_exact_ratio"] + 1e-3, r
    else:
        assert "sum_exact_ratio" not in r, r
PY
  fi
  echo "ok: $(wc -l <"$tmp/rows") rows, $got sections"
  ;;
*)
  echo "bench_check.sh: unknown mode $mode" >&2
  exit 2
  ;;
esac
