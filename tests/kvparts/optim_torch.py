#!/usr/bin/python3
"""optim_torch.py — runs torch.optim.SGD/Adam on random data, writes the trajectories, and lets optim_unit --torch replay them through fold's optimizers."""
import os
import subprocess
import sys
import tempfile

import torch

exe = sys.argv[1]
torch.manual_seed(12)
N, STEPS = 300, 40
# (fold spec, torch optimizer factory). fold's sgd keeps MXNet's momentum
# (mom = mu*mom - lr*g), equal to torch's (buf = mu*buf + g; w -= lr*buf) at a
# constant rate; wd is L2 added to the gradient in both.
cases = [
    ("sgd lr=0.1", lambda p: torch.optim.SGD(p, lr=0.1)),
    ("sgd lr=0.1 momentum=0.9 wd=0.0001", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-4)),
    ("adam lr=0.001", lambda p: torch.optim.Adam(p, lr=0.001)),
    ("adam lr=0.01 beta1=0.8 beta2=0.99 epsilon=1e-6 wd=0.01",
     lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.01)),
]
fd, path = tempfile.mkstemp(suffix=".txt")
with os.fdopen(fd, "w") as f:
    for spec, make in cases:
        w = torch.randn(N, dtype=torch.float32)
        p = torch.nn.Parameter(w.clone())
        opt = make([p])
        f.write("spec %s\nn %d steps %d\nw0 %s\n" % (spec, N, STEPS, " ".join(repr(float(x)) for x in w)))
        for _ in range(STEPS):
            g = torch.randn(N, dtype=torch.float32)
            p.grad = g.clone()
            opt.step()
            f.write("g %s\n" % " ".join(repr(float(x)) for x in g))
            f.write("w %s\n" % " ".join(repr(float(x)) for x in p.detach()))
try:
    sys.exit(subprocess.call([exe, "--torch", path]))
finally:
    os.unlink(path)
