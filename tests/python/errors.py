"""errors.py — bad input raises the right fold.Error subclass with fold's message (naming ranks); Mismatch,
Timeout and Aborted on sub-communicators; the world stays usable. Run with FOLD_TIMEOUT=2."""
import sys
import time

import numpy as np

import fold
import harness

comm = fold.init()
n, r = comm.size, comm.rank

check = harness.Checks(r)
failures = check.failed


def raises(cls, fn, *words):
    """fn() must raise exactly cls (a fold.Error) whose message holds every word."""
    try:
        fn()
    except fold.Error as e:
        ok = type(e) is cls and e.code == cls.code and all(w in str(e) for w in words)
        check(ok, f"{fn.__doc__ or fn}: raised {type(e).__name__}({e}) code {e.code}, want {cls.__name__} {words}")
        return e
    check(False, f"{fn.__doc__ or fn}: raised nothing, want {cls.__name__}")


def raises_type(fn, *words):
    """fn() must raise TypeError whose message holds every word."""
    try:
        fn()
    except TypeError as e:
        check(all(w in str(e) for w in words), f"{fn}: TypeError({e}), want {words}")
        return e
    check(False, f"{fn}: raised no TypeError")


# the classes and their codes
codes = {fold.InvalidArgument: -1, fold.Timeout: -2, fold.PeerLost: -3, fold.Mismatch: -4, fold.AuthError: -5,
         fold.OutOfMemory: -6, fold.SystemError: -7, fold.Aborted: -8, fold.InternalError: -9}
for cls, code in codes.items():
    check(issubclass(cls, fold.Error) and cls.code == code, f"{cls.__name__}.code = {cls.code}")

x = np.zeros(8, np.float32)
raises(fold.InvalidArgument, lambda: comm.allreduce(np.zeros(16)[::2]), "not contiguous")
raises(fold.InvalidArgument, lambda: comm.allreduce(np.zeros((4, 4)).T), "not contiguous")
ro = np.zeros(4)
ro.flags.writeable = False
raises(fold.InvalidArgument, lambda: comm.allreduce(ro), "read-only")
raises(fold.InvalidArgument, lambda: comm.allreduce(b"abcd"), "read-only")
comm.allreduce(ro, out=np.zeros(4))  # read-only input with an out= is fine
raises(fold.InvalidArgument, lambda: comm.allreduce([1.0, 2.0]), "not a buffer")
raises(fold.InvalidArgument, lambda: comm.allreduce(None), "None")
raises(fold.InvalidArgument, lambda: comm.allreduce(np.zeros(4, np.int16)), "format")
raises(fold.InvalidArgument, lambda: comm.allreduce(np.zeros(4, np.complex64)), "format")
raises(fold.InvalidArgument, lambda: comm.allreduce(np.zeros(2, [("a", "f4"), ("b", "f4")])), "pair")
raises(fold.InvalidArgument, lambda: comm.allreduce(np.zeros(2, [("v", "f8"), ("i", "i4")])), "aligned")  # 12 bytes
raises(fold.InvalidArgument, lambda: comm.allreduce(np.zeros(2, [("v", "f4"), ("i", "i4")]), op="sum"), f"rank {r}")
raises(fold.InvalidArgument, lambda: comm.allreduce(x, op="minloc"), f"rank {r}")
raises(fold.InvalidArgument, lambda: comm.allreduce(x, op="median"), "unknown op")
raises(fold.InvalidArgument, lambda: comm.allreduce(x, op=3), "unknown op")
raises(fold.InvalidArgument, lambda: comm.allreduce(x, out=np.zeros(7, np.float32)), f"rank {r}", "out holds 7")
raises(fold.InvalidArgument, lambda: comm.allreduce(x, out=np.zeros(8, np.float64)), "float64")
raises(fold.InvalidArgument, lambda: comm.allreduce(x, op="band"), f"rank {r}")
raises(fold.InvalidArgument, lambda: comm.allreduce(x, algo="no_such_algo"), "no_such_algo")
raises(fold.InvalidArgument, lambda: comm.allreduce(x, algo="dissemination"), "has no algorithm")
raises_type(lambda: comm.allreduce(x, algo=3), "algo must be a str")
raises(fold.InvalidArgument, lambda: comm.allreduce(x, timeout=-1), "timeout")
raises(fold.InvalidArgument, lambda: comm.allreduce(x, timeout=0), "timeout")
raises(fold.InvalidArgument, lambda: comm.allreduce(x, timeout=float("nan")), "timeout")
raises(fold.InvalidArgument, lambda: comm.allreduce(x, timeout=float("inf")), "timeout")
raises_type(lambda: comm.allreduce(x, timeout="5"), "timeout must be a number")
raises(fold.InvalidArgument, lambda: comm.broadcast(x, root=n), f"rank {r}")
raises(fold.InvalidArgument, lambda: comm.send(x, n, tag=1), f"rank {r}")
raises(fold.InvalidArgument, lambda: comm.send(x, 0, tag=-5), f"rank {r}")
if n > 1:
    raises(fold.InvalidArgument, lambda: comm.reduce_scatter(np.zeros(n * 3 + 1)), "multiple")
    raises(fold.InvalidArgument, lambda: comm.allgather(np.zeros(3), out=np.zeros(3)), "out holds 3")
raises(fold.InvalidArgument, lambda: comm.set_algo("allreduce="), "")
check(fold.InvalidArgument.__mro__[1] is fold.Error, "InvalidArgument derives from fold.Error")
# every argument error left the world usable
comm.allreduce(x)

# ranks that disagree: every rank gets Mismatch naming both calls' ranks
d = comm.dup()
if n > 1:
    e = raises(fold.Mismatch, lambda: d.allreduce(np.zeros(3 if r == 0 else 4, np.float32)))
    check(e is not None and "rank" in str(e), f"mismatch message: {e}")
    # the sub-communicator failed for good: later calls raise the same class at once
    raises(fold.Mismatch, lambda: d.barrier())
d.destroy()

# FOLD_TIMEOUT (2 s here): a receive nobody answers; the message names the rank waited for
d = comm.dup()
src = (r + 1) % n
t0 = time.monotonic()
raises(fold.Timeout, lambda: d.recv(np.zeros(1), source=src, tag=77), f"rank {r}", f"rank {src}", "FOLD_TIMEOUT")
el = time.monotonic() - t0
check(1.5 < el < 6, f"FOLD_TIMEOUT=2 fired after {el:.2f} s")
d.destroy()

# abort: every later call on that communicator raises Aborted; the world is untouched
d = comm.dup()
d.abort()
raises(fold.Aborted, lambda: d.allreduce(np.zeros(2)))
req = None
try:
    req = d.iallreduce(np.zeros(2))
    req.wait()
    check(False, "iallreduce on an aborted comm did not raise")
except fold.Aborted:
    pass
d.destroy()

# one thread at a time per family: while a thread waits (GIL released) in a call on a dup, a call from
# another thread on any communicator of the family is refused, not raced; the waiting call times out
import threading
d = comm.dup()
caught = []
th = threading.Thread(target=lambda: caught.append(raises(fold.Timeout, lambda: d.recv(np.zeros(1), source=r, tag=5))))
th.start()
inside = False  # iprobe is local: poll with it until the thread is inside its wait
end = time.monotonic() + 10
while not inside and time.monotonic() < end:
    try:
        comm.iprobe()
        time.sleep(0.01)
    except fold.InvalidArgument as e:
        inside = "another thread" in str(e)
check(inside, "the second thread never seen inside its call")
raises(fold.InvalidArgument, lambda: comm.barrier(), "another thread")
raises(fold.InvalidArgument, lambda: d.destroy(), "another thread")
raises(fold.InvalidArgument, lambda: comm.irecv(np.zeros(1)), "another thread")
check(comm.rank == r, "rank readable meanwhile")
th.join()
check(len(caught) == 1, "the waiting thread finished")
d.destroy()

# timeout= bounds one call (FOLD_TIMEOUT stays long): rank 0 calls alone on a dup and times out; the dup
# fails, the world goes on
d = comm.dup()
if r == 0 and n > 1:
    t0 = time.monotonic()
    raises(fold.Timeout, lambda: d.allreduce(np.ones(2), timeout=0.5), "the call's timeout")
    dt = time.monotonic() - t0
    check(0.45 <= dt < 60, f"allreduce(timeout=0.5) gave up after {dt:.2f} s")
comm.barrier()
d.destroy()

comm.barrier()
y = np.ones(3)
comm.allreduce(y)
check(np.all(y == n), "world usable after the errors")
if failures:
    sys.exit(f"rank {r}: {len(failures)} check(s) failed")
print(f"rank {r} of {n} ({comm.transport}): errors ok")
