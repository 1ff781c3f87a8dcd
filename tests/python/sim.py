"""sim.py — fold.Sim: collectives and messages on simulated ranks driven by run(), virtual time against the
cost model, compute, callbacks, a deadlock, sub-communicators, destroy. One process, no launcher."""
import sys

import numpy as np

import fold
import harness


check = harness.Checks()
fail = check.failed


# one message: arrives latency + bytes * byte_time after it is posted (docs/simulator.md)
sim = fold.Sim(2, latency=1e-3, byte_time=1e-6)
check(sim.size == 2 and len(sim) == 2 and sim[0].transport == "sim" and sim[1].rank == 1, "Sim shape")
a, b = np.arange(250, dtype=np.float32), np.zeros(250, np.float32)  # 1000 bytes
rs = sim[0].isend(a, 1, tag=3)
rr = sim[1].irecv(b, source=0)
sim.run()
st = rr.wait()
rs.wait()
check(np.array_equal(a, b) and st.source == 0 and st.tag == 3 and st.count == 250, f"sim message {st}")
check(abs(sim.time - (1e-3 + 1000 * 1e-6)) < 1e-12, f"one message took {sim.time} s, model says 2e-3")
sim.destroy()


def allreduce_time(n, count):
    with fold.Sim(n) as s:
        xs = [np.full(count, k + 1, np.float64) for k in range(n)]
        reqs = [s[k].iallreduce(xs[k]) for k in range(n)]
        s.run()
        for req in reqs:
            req.wait()
        for x in xs:
            check(np.all(x == n * (n + 1) / 2), f"sim allreduce n={n}: {x[:3]}")
        return s.time


for n in (1, 3, 8, 64):
    t1 = allreduce_time(n, 1000)
    t2 = allreduce_time(n, 1000)
    check(t1 == t2, f"n={n}: virtual time not deterministic ({t1} vs {t2})")
    check((t1 > 0) == (n > 1), f"n={n}: virtual time {t1}")

# every collective on simulated ranks, against numpy
n = 5
with fold.Sim(n) as s:
    data = [np.arange(n * 4, dtype=np.int64) * (k + 1) for k in range(n)]
    outs = [np.zeros(4, np.int64) for _ in range(n)]
    reqs = [s[k].ireduce_scatter(data[k], out=outs[k]) for k in range(n)]
    gat = [np.zeros(n * 3, np.float32) for _ in range(n)]
    reqs += [s[k].iallgather(np.full(3, k, np.float32), out=gat[k]) for k in range(n)]
    s.run()
    for req in reqs:
        req.wait()
    tot = sum(data)
    for k in range(n):
        check(np.array_equal(outs[k], tot[4 * k:4 * k + 4]), f"sim reduce_scatter rank {k}")
        check(np.array_equal(gat[k], np.repeat(np.arange(n, dtype=np.float32), 3)), f"sim allgather rank {k}")
    # a blocking call runs the simulator once the other ranks have posted theirs
    bufs = [np.full(6, k, np.int32) for k in range(n)]
    reqs = [s[k].ibroadcast(bufs[k], root=0) for k in range(1, n)]
    s[0].broadcast(bufs[0], root=0)
    for req in reqs:
        req.wait()
    check(all(np.all(x == 0) for x in bufs), "blocking broadcast on a simulated rank")

# compute: a rank busy for 1 s sends no earlier; at: a callback starts a send at t = 0.5
with fold.Sim(2, latency=1e-3, byte_time=0) as s:
    s.compute(0, 1.0)
    rs, rr = s[0].isend(np.zeros(1), 1), s[1].irecv(np.zeros(1), source=0)
    s.run()
    rr.wait()
    rs.wait()
    check(abs(s.time - 1.001) < 1e-12, f"compute: message arrived at {s.time}, want 1.001")
with fold.Sim(2, latency=1e-3, byte_time=0) as s:
    got = np.zeros(1)
    rr = s[1].irecv(got, source=0)
    keep = []
    s.at(0.5, lambda: keep.append(s[0].isend(np.ones(1), 1)))
    s.run()
    rr.wait()
    keep[0].wait()
    check(got[0] == 1 and abs(s.time - 0.501) < 1e-12, f"at: {got} at {s.time}")
    # an exception in a callback comes out of run()
    s.at(s.time + 1, lambda: 1 / 0)
    try:
        s.run()
        check(False, "callback exception swallowed")
    except ZeroDivisionError:
        pass
    # a slow node: rank 1's link at 1 us per byte
    s.set_rank_params(1, latency=1e-3, byte_time=1e-6)
    t0 = s.time
    rr = s[0].irecv(np.zeros(100, np.uint8), source=1)
    rs = s[1].isend(np.zeros(100, np.uint8), 0)
    s.run()
    rr.wait()
    rs.wait()
    check(abs(s.time - t0 - (1e-3 + 100e-6)) < 1e-9, f"slow node: {s.time - t0}")

# a receive nobody sends: run() raises Timeout naming the stuck rank
with fold.Sim(3) as s:
    rr = s[2].irecv(np.zeros(1), source=0, tag=9)
    try:
        s.run()
        check(False, "deadlock not reported")
    except fold.Timeout as e:
        check("2" in str(e), f"deadlock message: {e}")
    try:
        rr.wait()
    except fold.Error:
        pass

# sub-communicators of simulated ranks
n = 6
with fold.Sim(n) as s:
    subs = [s[k].split(k % 2, key=k) for k in range(n)]
    s.run()
    xs = [np.full(2, k, np.int64) for k in range(n)]
    reqs = [subs[k].iallreduce(xs[k]) for k in range(n)]
    s.run()
    for req in reqs:
        req.wait()
    for k in range(n):
        want = sum(j for j in range(n) if j % 2 == k % 2)
        check(subs[k].size == n // 2 and np.all(xs[k] == want), f"sim split rank {k}: {xs[k]} want {want}")
    keep = s[0]
check(keep.destroyed and subs[0].destroyed, "the Sim's Comms are destroyed with it")
try:
    keep.barrier()
    check(False, "a Comm of a destroyed Sim worked")
except fold.InvalidArgument:
    pass
try:
    fold.Sim(0)
    check(False, "Sim(0)")
except fold.InvalidArgument:
    pass
try:
    fold.Sim(2, latency=-1)
    check(False, "negative latency")
except fold.InvalidArgument:
    pass
if fail:
    sys.exit(f"{len(fail)} check(s) failed")
print("sim ok")
