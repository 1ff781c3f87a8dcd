"""kv_kill.py — a SIGKILLed worker of a dist_sync fold.KVStore: the other workers and the server raise
fold.PeerLost naming it within 5 s, and dead_nodes() lists it. Runs its N ranks itself, without a launcher
(a launcher would end the job when a rank dies). Usage: kv_kill.py N TRANSPORT PYTHONPATH"""
import os
import signal
import subprocess
import sys
import time

import harness

if sys.argv[1] != "rank":
    n, transport, pypath = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    tmp, procs = harness.start_ranks(os.path.abspath(__file__), ["rank"], n, "pykv", PYTHONPATH=pypath,
                                     FOLD_TRANSPORT=transport, FOLD_TIMEOUT="20", FOLD_KV_SERVERS="1")
    codes = harness.wait_procs(procs, 60)
    want = [0] * n
    want[n - 2] = -signal.SIGKILL  # the last worker (rank n-1 is the server)
    print(f"kv_kill: n={n} {transport}: exit codes {codes}, want {want}")
    subprocess.run(["rm", "-rf", tmp])
    sys.exit(0 if codes == want else 1)

import numpy as np  # noqa: E402

import fold  # noqa: E402

tmp = sys.argv[2]
comm = fold.init()
r, n = comm.rank, comm.size
victim = n - 2
check = harness.Checks(r)


def lost(e):
    t = time.monotonic()
    killed = float(open(os.path.join(tmp, "killed")).read())
    print(f"rank {r}: PeerLost {t - killed:.3f} s after the kill: {e}", flush=True)
    check(t - killed < 5, f"PeerLost came {t - killed:.2f} s after the kill")
    check(f"rank {victim}" in str(e) and e.code == -3, f"message: {e}")


kv = fold.KVStore(comm, "dist_sync")
if kv.role == fold.KV_SERVER:
    try:
        kv.serve()
        check(False, f"serve returned without rank {victim}")
    except fold.PeerLost as e:
        lost(e)
    check(victim in kv.dead_nodes(), f"dead_nodes {kv.dead_nodes()}")
    # stay until the workers heard of the victim: the server leaving first would be news of its own
    end = time.monotonic() + 10
    while time.monotonic() < end and not all(os.path.exists(os.path.join(tmp, f"seen{w}")) for w in range(victim)):
        time.sleep(0.01)
else:
    x = np.ones(1 << 14, np.float32)
    kv.init("w", x)
    kv.pushpull("w", x)
    kv.wait()
    # every worker has its first round: a round the victim took part in can no longer end in PeerLost
    open(os.path.join(tmp, f"round1.{r}"), "w").close()
    if r == victim:
        end = time.monotonic() + 20
        while time.monotonic() < end and not all(os.path.exists(os.path.join(tmp, f"round1.{w}")) for w in range(victim)):
            time.sleep(0.01)
        with open(os.path.join(tmp, "killed.tmp"), "w") as f:
            f.write(repr(time.monotonic()))
        os.rename(os.path.join(tmp, "killed.tmp"), os.path.join(tmp, "killed"))
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        for _ in range(100000):
            kv.pushpull("w", x)
            kv.wait()
        check(False, f"the store went on without rank {victim}")
    except fold.PeerLost as e:
        lost(e)
    check(victim in kv.dead_nodes(), f"dead_nodes {kv.dead_nodes()}")
    open(os.path.join(tmp, f"seen{r}"), "w").close()
try:
    kv.destroy()
except fold.Error:
    pass  # the failure again: the store is freed either way
print(f"rank {r}: {'OK' if not check.failed else f'{len(check.failed)} FAILED'}", flush=True)
sys.exit(1 if check.failed else 0)
