"""ops.py — every torch.distributed operation on backend "fold" against a local reference and against gloo.

Started as N ranks by foldrun or with torchrun's variables (tests/torch.cmake). Data are small integers, so
every result is exact in every dtype and fold's must equal gloo's and the reference bit for bit. Exits non-zero
(and says what differed) on any mismatch; prints "ops: all checks passed" on rank 0.
"""
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import fold.torch  # noqa: F401  registers "fold"

torch.set_num_threads(1)
dist.init_process_group("fold")
R, N = dist.get_rank(), dist.get_world_size()
GLOO = dist.new_group(backend="gloo")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"rank {R}: FAILED: {what}", flush=True)


def same(a, b, what):
    check(a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), f"{what}: {a.tolist()[:8]} != {b.tolist()[:8]}")


DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32, torch.int64]
SIZES = [1, 7, 1000, 70001]


def data(r, n, dt, shift=0):
    """Rank r's input: values 1..3, so that sums and products of 4 ranks are exact in every dtype."""
    return (1 + (torch.arange(n) + r + shift) % 3).to(dt)


def ref_reduce(n, dt, op, shift=0):
    xs = [data(r, n, torch.float64, shift) for r in range(N)]
    if op == "sum":
        out = sum(xs)
    elif op == "product":
        out = xs[0].clone()
        for x in xs[1:]:
            out *= x
    elif op == "min":
        out = torch.stack(xs).min(0).values
    elif op == "max":
        out = torch.stack(xs).max(0).values
    elif op == "avg":
        out = sum(xs) / N
    return out.to(dt)


OPS = {"sum": dist.ReduceOp.SUM, "product": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX}


GLOO_DTYPES = set(DTYPES) - {torch.bfloat16}  # gloo 1.13: "Invalid scalar type" for bfloat16
cur_dt = None


def both(fn):
    """Run fn(group) on fold (the default group) and on gloo where gloo takes the dtype (else fold's twice)."""
    f = fn(None)
    return f, (fn(GLOO) if cur_dt in GLOO_DTYPES else f)


for dt in DTYPES:
    cur_dt = dt
    for n in SIZES:
        tag = f"{dt} n={n}"
        for name, op in OPS.items():
            def ar(g, op=op):
                t = data(R, n, dt)
                dist.all_reduce(t, op=op, group=g)
                return t
            f, g = both(ar)
            same(f, ref_reduce(n, dt, name), f"all_reduce {name} {tag} vs reference")
            same(f, g, f"all_reduce {name} {tag} vs gloo")
        if dt.is_floating_point:  # gloo has no AVG: the reference only
            t = data(R, n, dt)
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
            same(t, ref_reduce(n, dt, "avg"), f"all_reduce avg {tag}")
        for root in range(N):
            def bc(g, root=root):
                t = data(R, n, dt, shift=5 * R)
                dist.broadcast(t, root, group=g)
                return t
            f, g = both(bc)
            same(f, data(root, n, dt, shift=5 * root), f"broadcast root {root} {tag}")
            same(f, g, f"broadcast root {root} {tag} vs gloo")
        # reduce to a root: the root's result only
        root = n % N
        t = data(R, n, dt)
        dist.reduce(t, root, op=dist.ReduceOp.SUM)
        if R == root:
            same(t, ref_reduce(n, dt, "sum"), f"reduce root {root} {tag}")
        # all_gather, list form and into one tensor
        def ag(g):
            outs = [torch.zeros(n, dtype=dt) for _ in range(N)]
            dist.all_gather(outs, data(R, n, dt), group=g)
            return torch.cat(outs)
        f, g = both(ag)
        want = torch.cat([data(r, n, dt) for r in range(N)])
        same(f, want, f"all_gather {tag}")
        same(f, g, f"all_gather {tag} vs gloo")
        out = torch.zeros(N * n, dtype=dt)
        dist.all_gather_into_tensor(out, data(R, n, dt))
        same(out, want, f"all_gather_into_tensor {tag}")
        # reduce_scatter: into one tensor, and the list form
        full = torch.cat([data(R, n, dt, shift=p) for p in range(N)])
        out = torch.zeros(n, dtype=dt)
        dist.reduce_scatter_tensor(out, full)
        same(out, ref_reduce(n, dt, "sum", shift=R), f"reduce_scatter_tensor {tag}")
        out = torch.zeros(n, dtype=dt)
        dist.reduce_scatter(out, [data(R, n, dt, shift=p) for p in range(N)], op=dist.ReduceOp.MAX)
        same(out, ref_reduce(n, dt, "max", shift=R), f"reduce_scatter max {tag}")
        # gather and scatter at a root
        root = (n + 1) % N
        def ga(g):
            outs = [torch.zeros(n, dtype=dt) for _ in range(N)] if R == root else None
            dist.gather(data(R, n, dt), outs, dst=root, group=g)
            return torch.cat(outs) if outs else torch.zeros(0, dtype=dt)
        f, g = both(ga)
        if R == root:
            same(f, want, f"gather root {root} {tag}")
        same(f, g, f"gather {tag} vs gloo")
        def sc(g):
            t = torch.zeros(n, dtype=dt)
            dist.scatter(t, [data(p, n, dt, shift=7) for p in range(N)] if R == root else None, src=root, group=g)
            return t
        f, g = both(sc)
        same(f, data(R, n, dt, shift=7), f"scatter root {root} {tag}")
        same(f, g, f"scatter {tag} vs gloo")
        # all_to_all_single: block p of rank r is data(r, n, shift=p)
        src = torch.cat([data(R, n, dt, shift=p) for p in range(N)])
        def a2a(g):
            out = torch.zeros(N * n, dtype=dt)
            dist.all_to_all_single(out, src, group=g)
            return out
        f, g = both(a2a)
        same(f, torch.cat([data(p, n, dt, shift=R) for p in range(N)]), f"all_to_all_single {tag}")
        same(f, g, f"all_to_all_single {tag} vs gloo")

cur_dt = torch.int64
# all_to_all_single with uneven splits: rank r sends r + p + 1 rows of width 3 to rank p.
rows_to = [R + p + 1 for p in range(N)]
rows_from = [p + R + 1 for p in range(N)]
src = torch.cat([torch.full((rows_to[p], 3), 100 * R + p, dtype=torch.int64) for p in range(N)])
def a2av(g):
    out = torch.zeros(sum(rows_from), 3, dtype=torch.int64)
    dist.all_to_all_single(out, src, output_split_sizes=rows_from, input_split_sizes=rows_to, group=g)
    return out
f, g = both(a2av)
same(f, torch.cat([torch.full((rows_from[p], 3), 100 * p + R, dtype=torch.int64) for p in range(N)]),
     "all_to_all_single uneven")
same(f, g, "all_to_all_single uneven vs gloo")

# bool: broadcast and MAX (logical or)
t = torch.tensor([R == 0, False, R == N - 1])
dist.all_reduce(t, op=dist.ReduceOp.MAX)
same(t, torch.tensor([True, False, True]), "all_reduce max bool")

# send/recv: a ring with two tags, sent in one order and received in the other
nxt, prv = (R + 1) % N, (R - 1) % N
a, b = torch.full((5,), R, dtype=torch.int32), torch.full((300000,), R + 0.5, dtype=torch.float64)
ra, rb = torch.zeros(5, dtype=torch.int32), torch.zeros(300000, dtype=torch.float64)
works = [dist.isend(a, nxt, tag=1), dist.isend(b, nxt, tag=2), dist.irecv(rb, prv, tag=2), dist.irecv(ra, prv, tag=1)]
for w in works:
    w.wait()
same(ra, torch.full((5,), prv, dtype=torch.int32), "recv tag 1")
same(rb, torch.full((300000,), prv + 0.5, dtype=torch.float64), "recv tag 2 (large, after a large isend)")
# blocking send/recv, then a receive from any source
if R == 0:
    for p in range(1, N):
        t = torch.zeros(2, dtype=torch.int64)
        src_rank = dist.recv(t, tag=9)
        check(int(t[0]) == src_rank and int(t[1]) == 7, f"recv any source: got {t.tolist()} from {src_rank}")
else:
    dist.send(torch.tensor([R, 7]), 0, tag=9)

# work.wait(timeout): a recv whose send comes late raises within ~1 s naming the operation and the timeout;
# the recv goes on and completes once the send comes, and the group still works
if R == 1:
    t = torch.zeros(3, dtype=torch.int64)
    w = dist.irecv(t, 0, tag=77)
    t0 = time.monotonic()
    try:
        w.wait(timeout=timedelta(seconds=0.3))
        check(False, "wait(timeout=0.3 s) returned before the send")
    except RuntimeError as e:
        took = time.monotonic() - t0
        print(f"rank 1: wait(timeout=0.3 s) raised after {took:.3f} s: {e}", flush=True)
        check(0.25 < took < 1.0, f"wait(timeout=0.3 s) raised after {took:.3f} s")
        check("recv" in str(e) and "300 ms" in str(e) and "rank 1" in str(e), f"timeout message: {e}")
    check(not w.is_completed(), "the timed-out recv completed without a send")
    dist.barrier()  # now rank 0 sends
    check(w.wait(timeout=timedelta(seconds=20)), "the recv after its timeout")
    same(t, torch.tensor([5, 6, 7]), "the recv completed after its timeout")
elif R == 0:
    dist.barrier()
    dist.send(torch.tensor([5, 6, 7]), 1, tag=77)
else:
    dist.barrier()
t = torch.full((3,), float(R))
w = dist.all_reduce(t, async_op=True)
check(w.wait(timeout=timedelta(seconds=20)), "wait(timeout) of a work that completes in time")
same(t, torch.full((3,), float(N * (N - 1) / 2)), "all_reduce after a timed-out wait")

# async_op=True: several outstanding at once, waited in reverse order; futures carry the result
ts = [data(R, 1000 + k, torch.float32) for k in range(6)]
ws = [dist.all_reduce(t, async_op=True) for t in ts]
for w in reversed(ws):
    check(w.wait(), "wait() returns True")
for k, t in enumerate(ts):
    same(t, ref_reduce(1000 + k, torch.float32, "sum"), f"async all_reduce {k}")
w = dist.all_reduce(data(R, 10, torch.float64), async_op=True)
fut = w.get_future()
fut.wait()
same(fut.value()[0], ref_reduce(10, torch.float64, "sum"), "get_future().value()")

# async work runs in the background: the call returns at once (rank 1 joins 0.5 s late) and the work
# completes without wait() (the worker thread drives it while this thread only sleeps)
t = data(R, 100000, torch.float32)
dist.barrier()
if R == 1:
    time.sleep(0.5)
t0 = time.monotonic()
w = dist.all_reduce(t, async_op=True)
issued = time.monotonic() - t0
if R == 0:
    check(issued < 0.2 and not w.is_completed(), f"async all_reduce returned after {issued:.3f} s, completed {w.is_completed()}")
while not w.is_completed() and time.monotonic() - t0 < 20:
    time.sleep(0.005)
check(w.is_completed(), "async all_reduce completed in the background")
w.wait()
same(t, ref_reduce(100000, torch.float32, "sum"), "background all_reduce result")

# subgroups (new_group with the default backend): each is its own fold communicator at its own store prefix
evens, odds = list(range(0, N, 2)), list(range(1, N, 2))
g_even, g_odd = dist.new_group(evens), dist.new_group(odds)
mine = evens if R % 2 == 0 else odds
t = torch.full((5,), float(R))
dist.all_reduce(t, group=g_even if R % 2 == 0 else g_odd)
same(t, torch.full((5,), float(sum(mine))), f"all_reduce in the subgroup {mine}")
check(dist.get_backend(g_even if R % 2 == 0 else g_odd).lower() == "fold", "the subgroup's backend is fold")

# DDP with a Python communication hook (fp16 compression: all_reduce(async_op=True).get_future().then(...)):
# the weights stay identical on every rank
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
torch.manual_seed(0)
m = DDP(torch.nn.Sequential(torch.nn.Linear(20, 50), torch.nn.ReLU(), torch.nn.Linear(50, 3)))
m.register_comm_hook(None, default_hooks.fp16_compress_hook)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(5):
    g = torch.Generator().manual_seed(100 + 7 * i + R)
    x, y = torch.randn(16, 20, generator=g), torch.randint(0, 3, (16,), generator=g)
    opt.zero_grad()
    torch.nn.functional.cross_entropy(m(x), y).backward()
    opt.step()
w = torch.cat([p.detach().flatten() for p in m.parameters()])
w0 = w.clone()
dist.broadcast(w0, 0)
same(w, w0, "DDP with fp16_compress_hook: weights equal to rank 0's")

# bad input: clear errors, nothing sent (the group stays usable)
def raises(fn, text, what):
    try:
        fn()
    except (RuntimeError, ValueError) as e:
        check(text in str(e), f"{what}: message {str(e)!r} lacks {text!r}")
        return
    check(False, f"{what}: no error")

raises(lambda: dist.all_reduce(torch.zeros(4, 4).t()), "contiguous", "non-contiguous tensor")
raises(lambda: dist.all_reduce(torch.zeros(4, dtype=torch.int16)), "is not supported", "int16")
raises(lambda: dist.all_reduce(torch.zeros(4, dtype=torch.bool)), "not supported on Bool", "sum on bool")
raises(lambda: dist.all_reduce(torch.zeros(4), op=dist.ReduceOp.BAND), "not supported on Float", "band on float")
raises(lambda: dist.all_to_all_single(torch.zeros(N + 1), torch.zeros(N + 1)), "divisible", "alltoall uneven size")
raises(lambda: dist.all_gather_into_tensor(torch.zeros(N + 1), torch.zeros(1)), "elements", "allgather base size")
t = torch.ones(3)
dist.all_reduce(t)
same(t, torch.full((3,), float(N)), "usable after argument errors")

# a collective's own options timeout (c10d's AllreduceOptions.timeout) bounds that call alone: rank 0
# calls on a group of its own that nobody else calls on, and fails within the call's 0.5 s, not the
# group's 60 s; the default group goes on
pg = dist.new_group(backend="fold")
if R == 0 and N > 1:
    o = dist.AllreduceOptions()
    o.timeout = timedelta(seconds=0.5)
    t0 = time.monotonic()
    try:
        pg.allreduce([torch.ones(2)], o).wait()
        check(False, "allreduce with a 0.5 s options timeout completed alone")
    except RuntimeError as e:
        took = time.monotonic() - t0
        check("the call's timeout" in str(e), f"options timeout message: {e}")
        check(0.45 <= took < 30, f"options timeout raised after {took:.2f} s")
dist.barrier()
t = torch.ones(3)
dist.all_reduce(t)
same(t, torch.full((3,), float(N)), "default group usable after a group's call timed out")

dist.barrier()
dist.destroy_process_group()
if failures:
    print(f"rank {R}: {len(failures)} check(s) failed", flush=True)
    sys.exit(1)
if R == 0:
    print(f"ops: all checks passed (n={N})", flush=True)
