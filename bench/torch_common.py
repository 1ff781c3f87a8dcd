"""torch_common.py — helpers of bench/torch_*.py: gloo's interface when ranks are hosts (network namespaces)."""
import os
import socket
import subprocess


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
