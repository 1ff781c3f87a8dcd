"""calls.py — every fold.Comm call against a numpy reference, every numpy dtype, in place and not, blocking and i*.

Run by foldrun at n = 1..4 over shm and tcp (tests/python.cmake). Each rank computes the expected
result from every rank's input itself, so each rank checks the whole answer.
"""
import sys

import numpy as np

import fold
import harness

comm = fold.init()
n, r = comm.size, comm.rank
assert fold.init() is comm, "fold.init() twice: the same world"

check = harness.Checks(r)
failures = check.failed


DTYPES = [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32, np.float64]
K = 5  # elements per block


def data(rank, count, dt, op="sum"):
    i = np.arange(count)
    if op == "prod":  # small factors: no overflow in int8 at n = 4
        return (1 + (i + rank) % 2).astype(dt)
    return ((i * 3 + rank * 5) % 11).astype(dt)


def ref(op, dt, count):
    xs = [data(k, count, dt, op) for k in range(n)]
    f = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}[op]
    acc = xs[0].copy()
    for x in xs[1:]:
        acc = f(acc, x).astype(dt)
    return acc


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def run(blocking, name, *args, **kw):
    """comm.name(...) or comm.iname(...).wait(): both must give the same."""
    if blocking:
        return getattr(comm, name)(*args, **kw)
    req = getattr(comm, "i" + name)(*args, **kw)
    check(isinstance(req, fold.Request), f"i{name} returned {type(req)}")
    return req.wait()


root = n - 1
for dt in DTYPES:
    for blocking in (True, False):
        tag = f"{np.dtype(dt).name} {'blocking' if blocking else 'nonblocking'}"
        for op in ("sum", "prod", "min", "max"):
            want = ref(op, dt, K)
            x = data(r, K, dt, op)
            got = run(blocking, "allreduce", x, op=op)
            check(got is x and same(x, want), f"allreduce {op} in place {tag}: {x} want {want}")
            x = data(r, K, dt, op)
            out = np.zeros(K, dt)
            got = run(blocking, "allreduce", x, out=out, op=op)
            check(got is out and same(out, want) and same(x, data(r, K, dt, op)), f"allreduce {op} out {tag}")
            # reduce at root, in place and into out
            x = data(r, K, dt, op)
            got = run(blocking, "reduce", x, op=op, root=root)
            if r == root:
                check(got is x and same(x, want), f"reduce {op} in place {tag}")
            else:
                check(got is None and same(x, data(r, K, dt, op)), f"reduce {op} non-root {tag}")
            out = np.zeros(K, dt)
            run(blocking, "reduce", data(r, K, dt, op), out=out, op=op, root=root)
            check(same(out, want) if r == root else not out.any(), f"reduce {op} out {tag}")
        # broadcast
        x = data(r, K, dt)
        got = run(blocking, "broadcast", x, root=root)
        check(got is x and same(x, data(root, K, dt)), f"broadcast {tag}")
        # reduce_scatter: rank r gets block r of the sum
        full = ref("sum", dt, K * n)
        x = data(r, K * n, dt)
        out = np.zeros(K, dt)
        got = run(blocking, "reduce_scatter", x, out=out)
        check(got is out and same(out, full[r * K:(r + 1) * K]), f"reduce_scatter out {tag}")
        x = data(r, K * n, dt)
        run(blocking, "reduce_scatter", x)
        check(same(x[r * K:(r + 1) * K], full[r * K:(r + 1) * K]), f"reduce_scatter in place {tag}")
        # allgather
        every = np.concatenate([data(k, K, dt) for k in range(n)])
        out = np.zeros(K * n, dt)
        got = run(blocking, "allgather", data(r, K, dt), out=out)
        check(got is out and same(out, every), f"allgather out {tag}")
        x = np.zeros(K * n, dt)
        x[r * K:(r + 1) * K] = data(r, K, dt)
        run(blocking, "allgather", x)
        check(same(x, every), f"allgather in place {tag}")
        # gather
        out = np.zeros(K * n, dt)
        got = run(blocking, "gather", data(r, K, dt), out=out, root=root)
        check(same(out, every) if r == root else (got is None and not out.any()), f"gather out {tag}")
        x = np.zeros(K * n, dt) if r == root else data(r, K, dt)
        if r == root:
            x[r * K:(r + 1) * K] = data(r, K, dt)
        run(blocking, "gather", x, root=root)
        check(same(x, every) if r == root else same(x, data(r, K, dt)), f"gather in place {tag}")
        # scatter: root's blocks k go to rank k
        src = data(root, K * n, dt)
        out = np.zeros(K, dt)
        got = run(blocking, "scatter", src if r == root else None, out=out, root=root)
        check(got is out and same(out, src[r * K:(r + 1) * K]), f"scatter out {tag}")
        x = data(root, K * n, dt) if r == root else np.zeros(K, dt)
        run(blocking, "scatter", x, root=root)
        check(same(x[r * K:(r + 1) * K] if r == root else x, src[r * K:(r + 1) * K]), f"scatter in place {tag}")
        # alltoall: block p of rank q's buf lands at block q of rank p's result
        def a2a(q):
            return (np.arange(K * n) + 100 * q).astype(dt) % 97
        want = np.concatenate([a2a(q)[r * K:(r + 1) * K] for q in range(n)]).astype(dt)
        out = np.zeros(K * n, dt)
        got = run(blocking, "alltoall", a2a(r), out=out)
        check(got is out and same(out, want), f"alltoall out {tag}")
        x = a2a(r)
        run(blocking, "alltoall", x)
        check(same(x, want), f"alltoall in place {tag}")
        x = a2a(r)
        got = run(blocking, "alltoall", x, out=x)  # out=buf: in place, as allreduce(x, out=x)
        check(got is x and same(x, want), f"alltoall out=buf {tag}")
        y = np.concatenate([a2a(r), np.zeros(K, dt)])  # out overlaps buf, shifted by one block
        got = run(blocking, "alltoall", y[:K * n], out=y[K:])
        check(same(y[K:], want), f"alltoall overlapping out {tag}")

# avg on floats and integers (integers truncate toward zero)
for dt in (np.float32, np.float64, np.int32):
    x = data(r, K, dt)
    comm.allreduce(x, op="avg")
    tot = sum(data(k, K, np.int64) for k in range(n))
    want = (tot / n).astype(dt) if dt != np.int32 else (tot // n).astype(dt)
    check(np.allclose(x, want), f"allreduce avg {np.dtype(dt).name}: {x} want {want}")

# minloc / maxloc on numpy structured (value, index) pairs: fold's pair types
for vt, it, align in ((np.float32, np.int32, False), (np.float64, np.int32, True), (np.int32, np.int32, False),
                      (np.int64, np.int64, False)):
    pt = np.dtype([("value", vt), ("index", it)], align=align)
    vals = [(np.arange(K) * 7 + 3 * k) % 5 for k in range(n)]  # ties: the lower index wins
    x = np.zeros(K, pt)
    x["value"], x["index"] = vals[r], r
    mn, mx = x.copy(), x.copy()
    comm.allreduce(mn, op="minloc")
    comm.allreduce(mx, op="maxloc")
    st = np.stack(vals)
    check(np.array_equal(mn["value"], st.min(0)) and np.array_equal(mn["index"], st.argmin(0)),
          f"minloc {pt}: {mn}")
    check(np.array_equal(mx["value"], st.max(0)) and np.array_equal(mx["index"], st.argmax(0)),
          f"maxloc {pt}: {mx}")

# bytearray and memoryview work too (uint8 / their format)
ba = bytearray([r + 1] * 4)
comm.allreduce(ba, op="max")
check(list(ba) == [n] * 4, f"allreduce bytearray: {list(ba)}")
mv = memoryview(np.full(3, r, np.int64))
comm.allreduce(mv)
check(list(mv) == [n * (n - 1) // 2] * 3, f"allreduce memoryview: {list(mv)}")
# multidimensional contiguous arrays count all their elements
m = np.full((2, 3), r + 1, np.float32)
comm.allreduce(m)
check(np.all(m == n * (n + 1) / 2), "allreduce 2-D")
# an empty array is a valid (empty) call
comm.allreduce(np.zeros(0, np.float32))
# algo forcing per call
x = np.ones(4, np.float64)
comm.allreduce(x, algo="ring")
check(np.all(x == n), "allreduce algo=ring")
# a per-call algo= leaves what set_algo forced as it was, not automatic selection: rank 0 forces ring per
# call, the others by set_algo; then a plain call must pick ring on rank 0 too (else Mismatch, which names
# both algorithms)
d = comm.dup()
d.set_algo("allreduce=ring")
x = np.ones(1, np.float64)
d.allreduce(x, algo="ring") if r == 0 else d.allreduce(x)
d.allreduce(x)
check(x[0] == n * n, f"algo restored: {x}")
# every rank's algo= overrides the communicator's choice for that call only; "auto" is automatic selection
# even where set_algo forced ring_skip (which automatic selection never picks: a rank left on ring_skip
# would be a Mismatch); the nonblocking twins take algo= and timeout= too
d.set_algo("allreduce=ring_skip")
for a in ("direct", "auto", "recursive_doubling"):
    x = np.ones(5, np.float64)
    d.allreduce(x, algo=a, timeout=60)
    check(np.all(x == n), f"allreduce algo={a}: {x}")
x = np.ones(5, np.float64)
d.iallreduce(x, algo="ring", timeout=60.0).wait()
check(np.all(x == n), f"iallreduce algo=ring timeout=60: {x}")
d.allreduce(x)  # ring_skip on every rank, as set_algo said
check(np.all(x == n * n), f"set_algo kept: {x}")
y = np.full(3, r, np.int32) if r == 0 else np.zeros(3, np.int32)
d.broadcast(y, root=0, algo="pipeline", timeout=30)
d.barrier(algo="dissemination", timeout=30)
d.destroy()
comm.barrier()
run(False, "barrier")

# point-to-point: a ring with tags, then wildcards with their status
right, left = (r + 1) % n, (r - 1) % n
recv = np.zeros(K, np.float64)
req = comm.irecv(recv, source=left, tag=9)
comm.send(np.full(K, r, np.float64), right, tag=9)
st = req.wait()
check(np.all(recv == left) and st.source == left and st.tag == 9 and st.count == K, f"ring recv {recv} {st}")
if r == 0:
    got = {}
    for _ in range(n - 1):
        buf = np.zeros(8, np.int32)
        st = comm.recv(buf)  # ANY_SOURCE, ANY_TAG
        got[st.source] = (st.tag, st.count, buf[: st.count].tolist())
    want = {s: (100 + s, s + 1, [s] * (s + 1)) for s in range(1, n)}
    check(got == want, f"wildcard receives: {got} want {want}")
else:
    sreq = comm.isend(np.full(r + 1, r, np.int32), 0, tag=100 + r)
    while not sreq.test():
        pass
    check(sreq.done and sreq.wait() is None, "isend test/wait")
comm.barrier()  # the wildcards above must not take the next message
# a message longer than the receive buffer: Mismatch at the receiver, the communicator stays usable
if n > 1:
    if r == 1:
        comm.send(np.zeros(10, np.int8), 0, tag=5)
    elif r == 0:
        try:
            comm.recv(np.zeros(4, np.int8), source=1, tag=5)
            check(False, "short receive did not raise")
        except fold.Mismatch as e:
            check(e.code == -4 and "rank 0" in str(e), f"short receive: {e!r}")
    comm.barrier()

# sub-communicators
sub = comm.split(r % 2, key=-r)
members = [k for k in range(n) if k % 2 == r % 2]
check(sub.size == len(members) and sub.rank == len(members) - 1 - members.index(r), f"split {sub}")
x = np.array([r], np.int64)
sub.allreduce(x)
check(x[0] == sum(members), f"split allreduce {x}")
none = comm.split(fold.UNDEFINED if r == 0 else 1)
check((none is None) if r == 0 else (none.size == n - 1), "split UNDEFINED")
d = comm.dup()
check(d.size == n and d.rank == r, "dup")
h = comm.split_host()
check(h.size == comm.local_size and h.rank == comm.local_rank, "split_host")
for c in (sub, d, h) + ((none,) if none else ()):
    c.destroy()
check(d.destroyed, "destroyed")
try:
    d.allreduce(np.zeros(1))
    check(False, "a destroyed comm worked")
except fold.InvalidArgument:
    pass
with comm.dup() as w:
    w.barrier()
check(w.destroyed, "with: destroy at exit")
comm.barrier()
if failures:
    sys.exit(f"rank {r}: {len(failures)} check(s) failed")
print(f"rank {r} of {n} ({comm.transport}): all calls ok")
