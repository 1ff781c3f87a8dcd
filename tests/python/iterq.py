"""iterq.py — fold.IterQueue with Python steps: a distributed gradient descent to the mean of every rank's data
(allreduce and broadcast steps, stop on rank 0, close), zero-copy session views, a step that raises."""
import os
import shutil
import sys

import numpy as np

import fold
import harness

comm = fold.init()
n, r = comm.size, comm.rank

check = harness.Checks(r)
fail = check.failed


# minimise sum_r |w - a_r|^2: the gradient summed over ranks is 2 (n w - sum a_r); w -> the mean of the a_r
a = np.arange(4, dtype=np.float64) * (r + 1)
q = fold.IterQueue(comm)
q.put("a", a)
q.put("w", np.zeros(4))
q.put("g", np.zeros(4))
q.put("lr", np.array([0.1 / n]))
seen = []


def grad(q):
    w, g, a = (np.asarray(q.get(k)) for k in ("w", "g", "a"))
    g[:] = 2 * (w - a)  # this rank's part; the allreduce step sums them


def step(q):
    w, g = np.asarray(q.get("w")), np.asarray(q.get("g"))
    w -= np.asarray(q.get("lr"))[0] * g
    seen.append(q.iteration)


def stop(q):
    return np.abs(np.asarray(q.get("g"))).max() < 1e-10


def close(q):
    comm.barrier()  # a close step may call collectives on the queue's communicator


q.add_compute(grad)
q.add_allreduce("g", op="sum")
q.add_compute(step)
q.add_broadcast("w", root=0)
q.set_stop(stop)
q.set_max_iter(1000)
q.close_with(close)
ckpt = f"/tmp/fold-pyiterq-{os.getppid()}"  # the launcher's pid: the same directory on every rank
if r == 0:
    shutil.rmtree(ckpt, ignore_errors=True)  # a stale one from a crashed run would be resumed
comm.barrier()
q.set_checkpoint(ckpt, every=5)
q.run()
check(os.path.isdir(ckpt) and len(os.listdir(ckpt)) >= n, f"checkpoints in {ckpt}: {os.listdir(ckpt)}")
comm.barrier()
if r == 0:
    shutil.rmtree(ckpt)
want = sum(np.arange(4, dtype=np.float64) * (k + 1) for k in range(n)) / n
w = np.asarray(q.get("w"))
check(np.allclose(w, want, rtol=0, atol=1e-9), f"iterq gradient descent: {w} want {want}")
check(seen == list(range(1, len(seen) + 1)) and 1 < len(seen) < 1000 and q.iteration == len(seen),
      f"supersteps {len(seen)}, iteration {q.iteration}")
# a view is zero-copy and writable; a put that would change its shape is refused while a view lives
v = q.get("w")
np.asarray(v)[0] = 42
check(np.asarray(q.get("w"))[0] == 42 and v.format == "d" and v.shape == (4,), f"view {v.format} {v.shape}")
try:
    q.put("w", np.zeros(5))
    check(False, "shape change under a view")
except fold.InvalidArgument as e:
    check("views" in str(e), f"{e}")
del v, w
q.put("w", np.zeros(5))
check(np.asarray(q.get("w")).shape == (5,), "shape change once the views are gone")
try:
    q.run()
    check(False, "a queue ran twice")
except fold.InvalidArgument:
    pass

# a step that raises on rank n-1 in superstep 3: that rank gets its own exception, the others a
# fold.Error naming it; nothing hangs
q = fold.IterQueue(comm)
q.put("x", np.ones(2))


def bad(q):
    if r == n - 1 and q.iteration == 3:
        raise ZeroDivisionError("no dividing here")


q.add_compute(bad)
q.add_allreduce("x")
q.set_max_iter(5)
try:
    q.run()
    check(False, "the failing step went unnoticed")
except ZeroDivisionError as e:
    check(r == n - 1 and "no dividing" in str(e), f"rank {r} got {e!r}")
except fold.Error as e:
    check(r != n - 1 and f"rank {n - 1}" in str(e) and "ZeroDivisionError" in str(e), f"rank {r}: {e}")
try:
    q.add_compute(42)
    check(False, "a step that is not callable")
except fold.InvalidArgument:
    pass
comm.barrier()
if fail:
    sys.exit(f"rank {r}: {len(fail)} check(s) failed")
print(f"rank {r} of {n}: iterq ok")
