#!/usr/bin/env bash
# rdv_warn_test.sh — a rendezvous that waits says so every few seconds at WARN: how many joined, who is missing, what to check.
# Usage: rdv_warn_test.sh INIT_WORLD missing_tcp|missing_file|wrong_store
# missing_*: ranks 0 and 1 of a world of 3 start, rank 2 never does; with
#   FOLD_TIMEOUT=6 each waiting rank must print (at the default level) a
#   WARN naming "2 of 3 ranks joined", "missing: rank 2" and the world
#   size before it fails, and the failure must name rank 2.
# wrong_store: a world of 2 whose rank 1 was given another tcp store port:
#   rank 0 warns that rank 1 is missing, rank 1 that it cannot connect and
#   that every rank needs the same FOLD_STORE.
set -u
W=$1 CASE=$2
T=$(mktemp -d /tmp/fold-rdvwarn.XXXXXX)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/../free_port.sh"
PORT=$(free_port)
run() { # rank size store
  env -i PATH=/usr/bin:/bin FOLD_RANK=$1 FOLD_SIZE=$2 FOLD_STORE=$3 FOLD_JOB_TOKEN=rdvwarn$$ FOLD_TIMEOUT=6 \
    FOLD_TRANSPORT=tcp timeout 60 "$W" "$2" all > "$T/o.$1" 2> "$T/e.$1"
}
bad=""
case "$CASE" in
  missing_tcp|missing_file)
    if [ "$CASE" = missing_tcp ]; then S=tcp://127.0.0.1:$PORT; else mkdir "$T/store"; S=file://$T/store; fi
    run 0 3 "$S" & p0=$!
    run 1 3 "$S" & p1=$!
    wait $p0; s0=$?
    wait $p1; s1=$?
    for r in 0 1; do
      echo "--- rank $r"; cat "$T/e.$r"
      grep 'WARN: rendezvous at' "$T/e.$r" | grep '2 of 3 ranks joined' | grep 'missing: rank 2 ' |
        grep -q 'world size 3' || bad="$bad rank $r printed no progress warning;"
      grep -q 'rank 2 did not join' "$T/e.$r" || bad="$bad rank $r's failure does not name rank 2;"
    done
    [ $s0 -ne 0 ] && [ $s1 -ne 0 ] || bad="$bad a rank succeeded;"
    ;;
  wrong_store)
    run 0 2 tcp://127.0.0.1:$PORT & p0=$!
    run 1 2 tcp://127.0.0.1:$((PORT + 1)) & p1=$!
    wait $p0 $p1
    for r in 0 1; do echo "--- rank $r"; cat "$T/e.$r"; done
    grep 'WARN: rendezvous at' "$T/e.0" | grep 'missing: rank 1 ' | grep -q 'same store' ||
      bad="$bad rank 0 printed no progress warning;"
    grep 'WARN: store tcp://127.0.0.1:'$((PORT + 1)) "$T/e.1" | grep 'still cannot connect' |
      grep -q 'same FOLD_STORE' || bad="$bad rank 1 printed no connect warning;"
    grep -q 'unreachable.*same FOLD_STORE' "$T/e.1" || bad="$bad rank 1's failure does not say what to check;"
    ;;
  *) echo "usage: $0 INIT_WORLD missing_tcp|missing_file|wrong_store" >&2; exit 2 ;;
esac
[ -z "$bad" ] && echo "rdv_warn_test $CASE: ok"
[ -z "$bad" ] || { echo "FAILED:$bad"; exit 1; }
