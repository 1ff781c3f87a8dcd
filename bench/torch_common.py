"""torch_common.py — helpers of the torch benches and tests: gloo's interface when ranks are hosts, and the digits network."""
import os
import socket
import subprocess

import torch.nn as nn
import torch.nn.functional as F

# sklearn's 8x8 digits (Debian's python3-sklearn), the data the digits network trains on
DIGITS_CSV = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"


class Digits(nn.Module):
    """A small CNN for 8x8 digits (10 classes): two 3x3 convolutions, a pooling, two linear layers."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.f1 = nn.Linear(32 * 4 * 4, 64)
        self.f2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.c1(x))
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.f2(F.relu(self.f1(x.flatten(1))))


def gloo_iface():
    """Point gloo at the interface that reaches MASTER_ADDR, unless GLOO_SOCKET_IFNAME is set.

    gloo binds the address its host name resolves to (127.0.0.1 here), which peers in other network
    namespaces (tests/netns/netns_run.sh) cannot reach; fold finds its address by itself.
    """
    addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
    if "GLOO_SOCKET_IFNAME" in os.environ or addr.startswith("127."):
        return
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((addr, 9))  # no packet: only picks the route
    mine = s.getsockname()[0]
    s.close()
    out = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) > 3 and f[2] == "inet" and f[3].split("/")[0] == mine:
            os.environ["GLOO_SOCKET_IFNAME"] = f[1]
            return
