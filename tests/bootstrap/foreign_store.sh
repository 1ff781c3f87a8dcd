#!/usr/bin/env bash
# foreign_store.sh — fold_init pointed at a port that something else serves (PyTorch's TCPStore at
# MASTER_PORT, a silent server, a server that sends other bytes) fails within seconds with FOLD_EAUTH,
# saying what answered and to set FOLD_STORE, instead of waiting FOLD_TIMEOUT.
# Usage: foreign_store.sh INIT_WORLD (tests/bootstrap/init_world.c)
set -euo pipefail
PROG=$1
PY=/usr/bin/python3
T=$(mktemp -d)
SRV=""
cleanup() { [ -n "$SRV" ] && kill "$SRV" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
# serve KIND: start a server on a free port, print the port once it listens
serve() {
  "$PY" - "$1" "$T/port" <<'PY' &
import socket, sys, time, threading
kind, portfile = sys.argv[1], sys.argv[2]
if kind == "torch":
    import torch.distributed as dist
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    store = dist.TCPStore("127.0.0.1", port, 1, True)
    store.set("k", "v")
else:
    ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0)); ls.listen(16); port = ls.getsockname()[1]
    def loop():
        keep = []
        while True:
            c, _ = ls.accept(); keep.append(c)   # silent: accept, read nothing, never answer
            if kind == "garbage":
                c.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
    threading.Thread(target=loop, daemon=True).start()
open(portfile + ".tmp", "w").write(str(port)); import os; os.rename(portfile + ".tmp", portfile)
time.sleep(300)
PY
  SRV=$!
  for _ in $(seq 600); do [ -s "$T/port" ] && break; kill -0 "$SRV" 2>/dev/null || { echo "server $1 died" >&2; exit 1; }; sleep 0.2; done
  [ -s "$T/port" ] || { echo "server $1 did not start" >&2; exit 1; }
}
# expect RANK KIND WORD...: fold_init as RANK of 2 at MASTER_PORT fails with FOLD_EAUTH naming WORDs, within 10 s
expect() {
  local rank=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  env -u FOLD_RANK -u FOLD_SIZE -u FOLD_STORE RANK="$rank" WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$(cat "$T/port")" \
    FOLD_TIMEOUT=60 FOLD_JOB_TOKEN=t timeout 90 "$PROG" eauth "$@" "FOLD_STORE=tcp://host:otherport"
  t1=$(date +%s%N)
  local ms=$(( (t1 - t0) / 1000000 ))
  echo "  failed after $ms ms"
  # FOLD_TIMEOUT is 60 s: the old behaviour (waiting for a greeting) takes all of it
  [ "$ms" -lt 10000 ] || { echo "took $ms ms: the foreign store was not detected promptly" >&2; exit 1; }
}
serve silent
expect 1 "is not a fold store" "sent nothing"
kill "$SRV"; wait "$SRV" 2>/dev/null || true; rm -f "$T/port"; SRV=""
serve garbage
expect 1 "is not a fold store" 'it sent "HTTP/1.0 400'
kill "$SRV"; wait "$SRV" 2>/dev/null || true; rm -f "$T/port"; SRV=""
serve torch
expect 1 "is not a fold store" "PyTorch's TCPStore" "MASTER_PORT"
# rank 0 finds the port taken, joins as a client, and is told the same
expect 0 "is not a fold store" "PyTorch's TCPStore"
echo "foreign_store: all good"
