"""kv_sigint.py — Ctrl-C in fold.KVStore's blocking calls: a worker blocked in wait() (a dist_sync pull waiting
for the other worker's push, which never comes), the same worker blocked in barrier() (the other worker never
enters it) and the server in serve() get SIGINT and raise KeyboardInterrupt within 1 s, while a Python thread
runs (the GIL is free); the interrupted store's communicator is aborted; a wakeup fd set before (as asyncio
sets one) is restored and still receives the signal byte; the world still works afterwards.

Rank 0 is a forked child of a process that used the guard before the fork (a split of a world of one): the
guard's watcher thread is per process and must be made again in the child, else no signal reaches fold.

Runs its N = 3 ranks itself (2 workers, 1 server), without a launcher, and sends the signals.
Usage: kv_sigint.py 3 TRANSPORT PYTHONPATH"""
import os
import signal
import subprocess
import sys
import time

import harness

STEPS = ("wait", "barrier")

if sys.argv[1] != "rank":
    n, transport, pypath = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    tmp, procs = harness.start_ranks(os.path.abspath(__file__), ["rank"], n, "pykvsig", PYTHONPATH=pypath,
                                     FOLD_TRANSPORT=transport, FOLD_TIMEOUT="20", FOLD_KV_SERVERS="1")

    def wait_file(name, limit=30):
        end = time.monotonic() + limit
        path = os.path.join(tmp, name)
        while not os.path.exists(path):
            if time.monotonic() > end or any(p.poll() is not None for p in procs):
                return None
            time.sleep(0.01)
        time.sleep(0.01)
        return int(open(path).read())

    ok = True
    for step in range(len(STEPS)):
        for who in (0, n - 1):  # the worker, then the server
            pid = wait_file(f"ready{step}_{who}")
            if pid is None:
                print(f"kv_sigint: rank {who} never got ready for step {step}", flush=True)
                ok = False
                break
            time.sleep(0.2)  # inside its wait: let it fall past the spin into the sleeps
            with open(os.path.join(tmp, "sent.tmp"), "w") as f:
                f.write(repr(time.monotonic()))
            os.rename(os.path.join(tmp, "sent.tmp"), os.path.join(tmp, f"sent{step}_{who}"))
            os.kill(pid, signal.SIGINT)
        if not ok:
            break
    codes = harness.wait_procs(procs, 60)
    print(f"kv_sigint: n={n} {transport}: exit codes {codes}", flush=True)
    subprocess.run(["rm", "-rf", tmp])
    sys.exit(0 if ok and codes == [0] * n else 1)

import numpy as np  # noqa: E402

import fold  # noqa: E402

tmp = sys.argv[2]
if os.environ["FOLD_RANK"] == "0":
    # use the guard in this process (a world of one), then fork: the child is rank 0
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("FOLD_")}
    one = fold.init()
    one.split(0).destroy()
    one.destroy()
    os.environ.update(saved)
    child = os.fork()
    if child:
        _, status = os.waitpid(child, 0)
        sys.exit(os.waitstatus_to_exitcode(status))

comm = fold.init()
r, n = comm.rank, comm.size
server = n - 1
check = harness.Checks(r)


def touch(name, text=""):
    with open(os.path.join(tmp, name + ".tmp"), "w") as f:
        f.write(text)
    os.rename(os.path.join(tmp, name + ".tmp"), os.path.join(tmp, name))


def wait_files(*names):
    end = time.monotonic() + 30
    while not all(os.path.exists(os.path.join(tmp, x)) for x in names):
        check(time.monotonic() < end, f"waiting for {names}")
        if time.monotonic() > end:
            return
        time.sleep(0.01)


# the wakeup fd an event loop would have set: the guard must restore it and hand the signal byte on
prev_r, prev_w = os.pipe()
os.set_blocking(prev_r, False)
os.set_blocking(prev_w, False)
if r in (0, server):
    signal.set_wakeup_fd(prev_w)
spinner = harness.Spinner()
x = np.ones(4, np.float32)

for step, how in enumerate(STEPS):
    d = comm.dup()
    kv = fold.KVStore(d, "dist_sync")
    if r == 1:  # the other worker: initialises, never pushes nor enters the barrier
        kv.init("w", x)
        wait_files(f"out{step}_0", f"out{step}_{server}")
        d.abort()  # its peers aborted their copies: leave without waiting for them
        try:
            kv.destroy()
        except fold.Error:
            pass
        d.destroy()
        continue

    what = "serve" if r == server else how
    # tell the driver once this rank is inside its call
    watcher = harness.busy_watcher(d, lambda step=step: touch(f"ready{step}_{r}", str(os.getpid())))
    c0 = spinner.count
    try:
        if r == server:
            watcher.start()
            kv.serve()
        else:
            kv.init("w", x)
            if how == "wait":
                kv.pushpull("w", x)  # dist_sync: the pull waits for worker 1's push of this round
                watcher.start()
                kv.wait()
            else:
                kv.wait()
                watcher.start()
                kv.barrier()
        check(False, f"{what} returned")
    except KeyboardInterrupt:
        t = time.monotonic()
        sent = float(open(os.path.join(tmp, f"sent{step}_{r}")).read())
        print(f"rank {r}: KVStore.{what}: KeyboardInterrupt {t - sent:.3f} s after SIGINT", flush=True)
        check(t - sent < 1.0, f"{what}: KeyboardInterrupt {t - sent:.2f} s after SIGINT")
    watcher.join()
    check(spinner.count - c0 > 1000, f"{what}: the GIL was held while blocked ({spinner.count - c0} thread turns)")
    # the previous wakeup fd is back and got the byte
    check(signal.set_wakeup_fd(prev_w) == prev_w, f"{what}: the previous wakeup fd was not restored")
    try:
        got = os.read(prev_r, 64)
    except BlockingIOError:
        got = b""
    check(got == bytes([signal.SIGINT]), f"{what}: the previous wakeup fd got {got!r}, wanted the SIGINT byte")
    try:
        d.barrier()
        check(False, f"{what}: the interrupted communicator was not aborted")
    except fold.Aborted:
        pass
    try:
        kv.destroy()
    except fold.Error:
        pass
    d.destroy()
    touch(f"out{step}_{r}")

spinner.stop()
# a guarded call that is not interrupted leaves the wakeup fd as it was and aborts nothing
d = comm.dup()
d.split(0).destroy()
check(signal.set_wakeup_fd(-1) == (prev_w if r in (0, server) else -1), "wakeup fd after a plain split")
comm.barrier()
y = np.ones(2)
comm.allreduce(y)
check(np.all(y == n), "world after Ctrl-C")
d.destroy()
print(f"rank {r}: {'OK' if not check.failed else f'{len(check.failed)} FAILED'}", flush=True)
sys.exit(1 if check.failed else 0)
