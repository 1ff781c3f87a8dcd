"""ddp_digits.py — DistributedDataParallel trains a small CNN on sklearn's 8x8 digits with backend "fold" and with gloo.

Run as N ranks (foldrun, or torchrun's variables). The same seeds, model and data order train twice in one
process: once over the default group (backend "fold"), once over a gloo group. Checks: every per-step loss of
fold equals gloo's to 1e-6, the final test accuracies are equal (and the network learned: > 0.85), and the
trained weights are identical on every rank. The network trains in float64: fold and gloo add the ranks'
gradients in different orders (both correct), and in float32 SGD amplifies those last-bit differences to ~1e-3
in the loss within a few epochs at 4 ranks (at 2 ranks the sums are the same: a + b = b + a); in float64 they
stay ~1e-12, so the comparison tests the backend, not the rounding. Prints the losses' largest difference and the accuracy.
Usage: ddp_digits.py [epochs] [bucket_cap_mb]
"""
import gzip
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import fold.torch  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from torch_common import DIGITS_CSV, Digits  # noqa: E402  (the one definition of the network)

EPOCHS = int(sys.argv[1]) if len(sys.argv) > 1 else 6
BUCKET_MB = float(sys.argv[2]) if len(sys.argv) > 2 else 0.05  # small buckets: several allreduces per step
BATCH = 32  # per rank
TOL = 1e-6


def load():
    with gzip.open(DIGITS_CSV, "rt") as f:
        a = np.loadtxt(f, delimiter=",", dtype=np.float32)
    x = torch.from_numpy(a[:, :64].astype(np.float64) / 16.0).reshape(-1, 1, 8, 8)
    y = torch.from_numpy(a[:, 64].astype(np.int64))
    return x[:1500], y[:1500], x[1500:], y[1500:]


def train(group, xtr, ytr, xte, yte, r, n):
    torch.manual_seed(1234)
    model = DDP(Digits().double(), process_group=group, bucket_cap_mb=BUCKET_MB)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    g = torch.Generator().manual_seed(42)
    for epoch in range(EPOCHS):
        order = torch.randperm(len(xtr), generator=g)  # the same on every rank: each takes its share
        steps = len(order) // (BATCH * n)
        for s in range(steps):
            idx = order[(s * n + r) * BATCH:(s * n + r + 1) * BATCH]
            opt.zero_grad()
            loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            losses.append(loss.item())
    with torch.no_grad():
        acc = (model(xte).argmax(1) == yte).float().mean().item()
    flat = torch.cat([p.detach().flatten() for p in model.module.parameters()])
    return losses, acc, flat


def main():
    torch.set_num_threads(1)
    dist.init_process_group("fold")
    r, n = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    data = load()
    lf, af, wf = train(None, *data, r, n)
    lg, ag, wg = train(gloo, *data, r, n)
    ok = True
    diff = max(abs(a - b) for a, b in zip(lf, lg))
    if len(lf) != len(lg) or diff > TOL:
        print(f"rank {r}: FAIL: per-step losses differ by {diff:.3g} (> {TOL})", flush=True)
        ok = False
    if af != ag or af < 0.85:
        print(f"rank {r}: FAIL: accuracy fold {af:.4f}, gloo {ag:.4f} (want equal and > 0.85)", flush=True)
        ok = False
    # the trained weights: the same on every rank (DDP's promise), compared over gloo
    w0 = wf.clone()
    dist.broadcast(w0, 0, group=gloo)
    if not torch.equal(w0, wf):
        print(f"rank {r}: FAIL: fold-trained weights differ from rank 0's", flush=True)
        ok = False
    dist.destroy_process_group()
    print(f"rank {r}: {len(lf)} steps, first loss {lf[0]:.4f}, last {lf[-1]:.4f}, max |fold - gloo| {diff:.3g}, "
          f"accuracy {af:.4f} (gloo {ag:.4f}), weights vs gloo max |diff| {(wf - wg).abs().max().item():.3g}",
          flush=True)
    if not ok:
        sys.exit(1)
    if r == 0:
        print(f"ddp_digits: all checks passed (n={n})", flush=True)


main()
