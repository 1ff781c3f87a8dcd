"""signals.py — a rank's view of a SIGKILLed peer and of Ctrl-C; started by driver.py, which sends the signals.

Modes (argv[1]):
  kill    rank n-1 SIGKILLs itself mid-job; the others, inside allreduce, must raise fold.PeerLost naming it
          within 5 s of the kill.
  sigint  rank 0 blocks in a recv nobody answers (blocking, then Request.wait on a second communicator); the
          driver sends SIGINT and the call must raise KeyboardInterrupt within 1 s, abort that communicator
          (fold.Aborted afterwards) and leave the world usable. The GIL is free meanwhile (a thread counts).
"""
import os
import signal
import sys
import time

import numpy as np

import fold
import harness

mode, tmp = sys.argv[1], sys.argv[2]
comm = fold.init()
n, r = comm.size, comm.rank

check = harness.Checks(r)
fail = check.failed


def done():
    if fail:
        sys.exit(f"rank {r}: {len(fail)} check(s) failed")
    print(f"rank {r}: {mode} ok", flush=True)
    sys.exit(0)


if mode == "kill":
    x = np.ones(1 << 16, np.float32)
    comm.allreduce(x)
    if r == n - 1:
        with open(os.path.join(tmp, "killed"), "w") as f:
            f.write(repr(time.monotonic()))
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        for _ in range(100000):
            comm.allreduce(x)
        check(False, "allreduce went on without rank %d" % (n - 1))
    except fold.PeerLost as e:
        t = time.monotonic()
        killed = float(open(os.path.join(tmp, "killed")).read())
        print(f"rank {r}: PeerLost {t - killed:.3f} s after the kill: {e}", flush=True)
        check(t - killed < 5, f"PeerLost came {t - killed:.2f} s after the kill")
        check(f"rank {n - 1}" in str(e) and e.code == -3, f"message: {e}")
    done()

if mode == "sigint":
    if r == 0:
        spinner = harness.Spinner()
        for step, how in enumerate(("recv", "irecv.wait", "split", "AsyncReduce.wait")):
            d = comm.dup()
            comm_ar = d
            buf = np.zeros(4)
            c0 = spinner.count
            def announce(step=step):
                with open(os.path.join(tmp, f"ready{step}"), "w") as f:
                    f.write(str(os.getpid()))

            # tell the driver once this rank is inside its wait
            watcher = harness.busy_watcher(d, announce)
            watcher.start()
            try:
                if how == "recv":
                    d.recv(buf, source=1 % n, tag=42)
                elif how == "irecv.wait":
                    d.irecv(buf, source=1 % n, tag=42).wait()
                elif how == "split":  # blocks inside fold: Ctrl-C through the wakeup-fd guard
                    d.split(0)
                else:
                    ar = fold.AsyncReduce(comm_ar, 1, target=0)
                    ar.done()
                    ar.wait(out=np.zeros(1))
                check(False, f"{how} returned")
            except KeyboardInterrupt:
                t = time.monotonic()
                sent = float(open(os.path.join(tmp, f"sent{step}")).read())
                print(f"rank 0: {how}: KeyboardInterrupt {t - sent:.3f} s after SIGINT", flush=True)
                check(t - sent < 1.0, f"{how}: KeyboardInterrupt {t - sent:.2f} s after SIGINT")
            watcher.join()
            check(spinner.count - c0 > 1000, f"{how}: the GIL was held while blocked ({spinner.count - c0} thread turns)")
            try:
                d.barrier()
                check(False, "the interrupted communicator was not aborted")
            except fold.Aborted:
                pass
            d.destroy()
        spinner.stop()
    else:
        for step in range(4):
            d = comm.dup()  # the dup is collective; rank 0 aborts its own copy
            if step == 3:  # rank 0's AsyncReduce waits for this rank, which never says done
                fold.AsyncReduce(d, 1, target=0)
                ready = os.path.join(tmp, "ready3")
                while not os.path.exists(ready):
                    time.sleep(0.01)
                time.sleep(2)
            d.destroy()
    comm.barrier()
    x = np.ones(2)
    comm.allreduce(x)
    check(np.all(x == n), "world after Ctrl-C")
    done()
sys.exit("unknown mode " + mode)
