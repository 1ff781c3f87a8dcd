#!/usr/bin/env bash
# log_e2e.sh — what a job logs, counted: silent at WARN, no repeats at INFO, strangers summarised, bad settings said once per process.
# Usage: log_e2e.sh FOLDRUN LOG_PROBE
set -uo pipefail
F=$1 P=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; echo "--- stderr" >&2; tail -40 "$tmp/err" >&2; exit 1; }
count() { grep -c -- "$1" "$tmp/err"; }
countF() { grep -cF -- "$1" "$tmp/err"; }
job() { env "$@" timeout -k 5 120 "$F" -n 3 --timeout 60 -- "$P" 2>"$tmp/err" >/dev/null; }

# A normal job at the default level: the program's own lines and nothing
# else; the failure it prints (an abort) is not logged by fold as well.
job FOLD_DEBUG= || fail "a normal job failed"
for r in 0 1 2; do
  [ "$(countF "[$r] log_probe: rank $r: FOLD_EABORTED: communicator aborted: rank $r: aborted by fold_comm_abort")" -eq 1 ] ||
    fail "rank $r: its error not printed exactly once"
done
[ "$(wc -l <"$tmp/err")" -eq 3 ] || fail "a normal job logged more than the program's lines"

# INFO: no line twice, and the expected miss of rank 0's store server (the
# port is foldrun's) is not logged.
job FOLD_DEBUG=INFO || fail "a job at INFO failed"
[ -z "$(sort "$tmp/err" | uniq -d)" ] || fail "repeated lines at INFO: $(sort "$tmp/err" | uniq -d | head -3)"
grep -q 'cannot listen\|not served here' "$tmp/err" && fail "the store server's expected miss was logged at INFO"
[ "$(count 'INFO: joined 3 ranks')" -eq 3 ] || fail "INFO lines missing"

# 2000 strangers at the store: a handful of lines and one summary that
# counts the rest.
env FOLD_DEBUG=WARN timeout -k 5 120 "$F" -n 3 --timeout 60 -- "$P" 2000 2>"$tmp/err" >/dev/null || fail "the flooded job failed"
refused=$(count 'WARN: store: closing connection from')
held=$(grep -o '[0-9]* more like this in the last' "$tmp/err" | awk '{s += $1} END {print s + 0}')
[ "$(count WARN)" -lt 20 ] || fail "$(count WARN) WARN lines for 2000 strangers"
[ $((refused + held)) -eq 2000 ] || fail "$refused shown + $held summarised != 2000 strangers"

# A bad FOLD_DEBUG: one line per process (the 3 ranks and foldrun's store
# server), naming the valid values.
job FOLD_DEBUG=bogus || fail "FOLD_DEBUG=bogus stopped the job"
want='WARN: FOLD_DEBUG=bogus is not one of NONE, WARN, INFO, TRACE; using WARN'
for r in 0 1 2; do [ "$(countF "[$r] fold $want")" -eq 1 ] || fail "rank $r: want one FOLD_DEBUG line"; done
[ "$(countF "$want")" -eq 4 ] || fail "want 4 FOLD_DEBUG lines (3 ranks, foldrun)"
[ "$(count WARN)" -eq 4 ] || fail "other warnings with FOLD_DEBUG=bogus"

# A bad FOLD_TIMEOUT: one line per rank (it is read by the rendezvous and by
# the communicator).
env FOLD_TIMEOUT=abc timeout -k 5 120 "$F" -n 3 -- "$P" 2>"$tmp/err" >/dev/null || fail "FOLD_TIMEOUT=abc stopped the job"
want='WARN: FOLD_TIMEOUT=abc is not a positive number of seconds; using 300'
for r in 0 1 2; do [ "$(countF "[$r] fold $want")" -eq 1 ] || fail "rank $r: want one FOLD_TIMEOUT line"; done
[ "$(count WARN)" -eq 3 ] || fail "other warnings with FOLD_TIMEOUT=abc"

# No token (no foldrun): the warning once per job, from rank 0.
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pids=()
for r in 0 1 2; do
  env -u FOLD_JOB_TOKEN FOLD_RANK=$r FOLD_SIZE=3 FOLD_STORE=tcp://127.0.0.1:$port FOLD_TIMEOUT=60 \
    timeout -k 5 120 "$P" 2>"$tmp/err.$r" >/dev/null &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a rank without a token failed: $(cat "$tmp"/err.*)"; done
cat "$tmp"/err.* >"$tmp/err"
[ "$(count 'WARN: FOLD_JOB_TOKEN is not set')" -eq 1 ] || fail "want the no-token warning once per job"
[ "$(grep -c 'FOLD_JOB_TOKEN is not set' "$tmp/err.0")" -eq 1 ] || fail "the no-token warning is not rank 0's"

# A failed fold_init names each interface once (an interface has an entry
# per address), and the program's message is the only line about it.
env FOLD_SOCKET_IFNAME=nosuch timeout -k 5 120 "$F" -n 2 --transport tcp --timeout 60 -- "$P" 2>"$tmp/err" >/dev/null &&
  fail "FOLD_SOCKET_IFNAME=nosuch: the job succeeded"
list=$(grep -o 'interfaces with an address: [^)]*' "$tmp/err" | head -1 | sed 's/.*: //')
[ -n "$list" ] || fail "no interface list"
[ "$(echo "$list" | tr -d ' ' | tr ',' '\n' | sort | uniq -d)" = "" ] || fail "interface names repeat: $list"
# (only the failure itself is checked: the store in foldrun may warn, rightly,
# about rank 1's connection that foldrun's SIGTERM closed mid-handshake)
grep WARN "$tmp/err" | grep -q 'matches no usable interface' && fail "a returned failure was also logged at WARN"
echo "ok: log lines counted"
