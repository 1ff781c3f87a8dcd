"""torch_allreduce.py — torch.distributed.all_reduce latency and bandwidth, backend "fold" against "gloo", same run.

Run as N ranks:  PYTHONPATH=build/python build/foldrun -n N /usr/bin/python3 bench/torch_allreduce.py [max_mib]
(or with torchrun's variables). float32 SUM, in place, sizes 8 B .. max_mib MiB (default 64) in steps of 8x;
each size: 2 warm-up calls, then calls until 0.5 s or 200 calls, one after the other (each waited), timed
on every rank between barriers; the table shows rank 0's mean time per call (the slowest rank's is the
same within noise, as every call ends with all ranks) and the algorithm bandwidth (bytes / time).
"""
import sys
import time

import torch
import torch.distributed as dist

import fold.torch  # noqa: F401
from torch_common import gloo_iface

torch.set_num_threads(1)
gloo_iface()
dist.init_process_group("fold")
R, N = dist.get_rank(), dist.get_world_size()
groups = {"fold": None, "gloo": dist.new_group(backend="gloo")}
max_bytes = int(float(sys.argv[1]) if len(sys.argv) > 1 else 64) << 20


def measure(group, t):
    for _ in range(2):
        dist.all_reduce(t, group=group)
    dist.barrier(group=group)
    # the same number of calls on every rank: rank 0 decides from a probe
    t0 = time.perf_counter()
    dist.all_reduce(t, group=group)
    one = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
    dist.broadcast(one, 0, group=group)
    iters = max(3, min(200, int(0.5 / max(one.item(), 1e-6))))
    dist.barrier(group=group)
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t, group=group)
    return (time.perf_counter() - t0) / iters


if R == 0:
    print(f"# torch.distributed.all_reduce float32 SUM, n = {N}, torch {torch.__version__}")
    print(f"{'bytes':>10} {'fold us':>10} {'gloo us':>10} {'fold GB/s':>10} {'gloo GB/s':>10} {'gloo/fold':>9}")
b = 8
while b <= max_bytes:
    t = torch.ones(b // 4)
    res = {name: measure(g, t) for name, g in groups.items()}
    if R == 0:
        f, g = res["fold"], res["gloo"]
        print(f"{b:>10} {f * 1e6:>10.1f} {g * 1e6:>10.1f} {b / f / 1e9:>10.3f} {b / g / 1e9:>10.3f} {g / f:>9.2f}",
              flush=True)
    b *= 8
    if b > max_bytes and b // 8 < max_bytes:
        b = max_bytes
dist.destroy_process_group()
