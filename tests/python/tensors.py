"""tensors.py — torch CPU tensors as fold buffers: every torch dtype fold has (bfloat16 too, which has no numpy
view), zero-copy in place and into out=, nonblocking, and refusals (non-contiguous, unsupported dtype)."""
import sys

import torch

import fold
import harness

comm = fold.init()
n, r = comm.size, comm.rank

check = harness.Checks(r)
fail = check.failed


K = 6
for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32,
           torch.int64):
    def mine(k):
        return ((torch.arange(K) * 3 + k * 5) % 11).to(dt)
    want_sum = sum(mine(k).to(torch.float64) for k in range(n)).to(dt)
    want_max = torch.stack([mine(k) for k in range(n)]).to(torch.float64).max(0).values.to(dt)
    t = mine(r)
    ptr = t.data_ptr()
    got = comm.allreduce(t)
    check(got is t and t.data_ptr() == ptr and torch.equal(t, want_sum), f"{dt} in place: {t} want {want_sum}")
    out = torch.zeros(K, dtype=dt)
    comm.allreduce(mine(r), out=out, op="max")
    check(torch.equal(out, want_max), f"{dt} max into out: {out}")
    t = mine(r)
    comm.iallreduce(t).wait()
    check(torch.equal(t, want_sum), f"{dt} nonblocking")
    # broadcast and allgather of tensors
    t = mine(r)
    comm.broadcast(t, root=0)
    check(torch.equal(t, mine(0)), f"{dt} broadcast")
    g = torch.zeros(K * n, dtype=dt)
    comm.allgather(mine(r), out=g)
    check(torch.equal(g, torch.cat([mine(k) for k in range(n)])), f"{dt} allgather")

# 2-D tensors and parameters (a Tensor subclass) work; views that are not contiguous are refused
w = torch.nn.Parameter(torch.ones(3, 4))
with torch.no_grad():
    comm.allreduce(w)
check(torch.all(w == n).item(), "Parameter allreduce")
for bad, word in ((torch.ones(4, 4).t(), "not contiguous"), (torch.ones(8)[::2], "not contiguous"),
                  (torch.ones(4, dtype=torch.int16), "dtype"), (torch.ones(4, dtype=torch.complex64), "dtype")):
    try:
        comm.allreduce(bad)
        check(False, f"{word}: no error")
    except fold.InvalidArgument as e:
        check(word in str(e), f"{word}: {e}")
# numpy view of a tensor shares its memory too
t = torch.full((4,), float(r))
comm.allreduce(t.numpy())
check(torch.all(t == n * (n - 1) / 2).item(), "tensor.numpy() in place")
# fold.KVStore on tensors: a local store per rank (push sums two tensors, pull into a bfloat16 and a
# float32 tensor; the updater sees numpy views)
with fold.KVStore(None, "local") as kv:
    kv.init("t", torch.zeros(6))
    kv.init(1, torch.zeros(6, dtype=torch.bfloat16))
    kv.set_updater(lambda key, merged, stored: stored.__iadd__(merged) if key == "t" else None)
    kv.push(["t", 1], [[torch.ones(6), torch.full((6,), float(r))], torch.full((6,), 2.0, dtype=torch.bfloat16)])
    kv.push("t", torch.ones(6))
    out, outb = torch.empty(6), torch.empty(6, dtype=torch.bfloat16)
    kv.pull(["t", 1], [out, outb])
    kv.wait()
    check(torch.all(out == r + 2).item(), f"KVStore tensor push/pull: {out}")
    check(torch.all(outb == 0).item(), f"KVStore bfloat16 key: the updater left it: {outb}")
    try:
        kv.push("t", torch.ones(5))
        check(False, "KVStore: a short tensor accepted")
    except fold.InvalidArgument as e:
        check("'t'" in str(e), f"KVStore message: {e}")
comm.barrier()
if fail:
    sys.exit(f"rank {r}: {len(fail)} check(s) failed")
print(f"rank {r} of {n}: tensors ok")
