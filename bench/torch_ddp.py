"""torch_ddp.py — DistributedDataParallel step time, backend "fold" against "gloo", same run.

Run as N ranks:  PYTHONPATH=build/python build/foldrun -n N --bind none /usr/bin/python3 bench/torch_ddp.py [steps]
Models: the digits CNN of tests/torch/ddp_digits.py (float32, 8x8 inputs) and ResNet-18 (torchvision's, 10
classes) on random 32x32 inputs; batch 32 per rank, SGD, one thread per rank (torch.set_num_threads(1)).
Each model and backend: 3 warm-up steps, then `steps` timed steps (default 20 digits / 5 ResNet-18); the table
shows rank 0's mean step time (forward, backward with DDP's bucketed all_reduce overlapping it, optimizer step)
and the gradient bytes each step reduces. Each backend runs twice, in the order fold, gloo, gloo, fold, and the
table shows the mean of its two runs, so that warm-up and the machine's other load favour neither.
"""
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import fold.torch  # noqa: F401
from torch_common import Digits, gloo_iface


def resnet18():
    import torchvision
    return torchvision.models.resnet18(num_classes=10)


def step_time(make, shape, group, steps):
    torch.manual_seed(0)
    model = DDP(make(), process_group=group)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, *shape), torch.randint(0, 10, (32,))
    for i in range(3 + steps):
        if i == 3:
            dist.barrier(group=group)
            t0 = time.perf_counter()
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    dist.barrier(group=group)
    dt = (time.perf_counter() - t0) / steps
    nbytes = sum(p.numel() * p.element_size() for p in model.parameters())
    return dt, nbytes


def main():
    torch.set_num_threads(1)
    gloo_iface()
    dist.init_process_group("fold")
    r, n = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    if r == 0:
        print(f"# DDP step time, n = {n}, batch 32 per rank, torch {torch.__version__}")
        print(f"{'model':>10} {'grad MiB':>9} {'fold ms':>9} {'gloo ms':>9} {'gloo/fold':>9}")
    for name, make, shape, default_steps in (("digits", Digits, (1, 8, 8), 20), ("resnet18", resnet18, (3, 32, 32), 5)):
        k = steps or default_steps
        # alternate the backends (fold, gloo, gloo, fold) so that warming up favours neither; mean of both
        f1, nbytes = step_time(make, shape, None, k)
        g1, _ = step_time(make, shape, gloo, k)
        g2, _ = step_time(make, shape, gloo, k)
        f2, _ = step_time(make, shape, None, k)
        f, g = (f1 + f2) / 2, (g1 + g2) / 2
        if r == 0:
            print(f"{name:>10} {nbytes / 2**20:>9.2f} {f * 1e3:>9.1f} {g * 1e3:>9.1f} {g / f:>9.2f}", flush=True)
    dist.destroy_process_group()


main()
