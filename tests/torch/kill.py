"""kill.py — a rank killed with SIGKILL: work.wait() on every other rank raises RuntimeError naming it within 5 s.

Usage: kill.py N [auto|shm|tcp]. Starts N ranks itself with torchrun's variables (RANK, WORLD_SIZE,
MASTER_ADDR/MASTER_PORT: torch's TCPStore at a free loopback port), so that the others outlive the victim (foldrun
would stop them when it dies). The last rank kills itself after a few all_reduces; the survivors must raise,
naming it, within 5 s of their last completed call, then destroy the group without hanging, and exit 0.
"""
import os
import signal
import socket
import subprocess
import sys
import time

LIMIT_S = 5.0


def child():
    import torch
    import torch.distributed as dist

    import fold.torch  # noqa: F401

    torch.set_num_threads(1)
    dist.init_process_group("fold")
    r, n = dist.get_rank(), dist.get_world_size()
    victim = n - 1
    t = torch.ones(1 << 16)
    last_ok = time.monotonic()
    for it in range(1000):
        if r == victim and it == 5:
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            dist.all_reduce(t, async_op=True).wait()
            last_ok = time.monotonic()
        except RuntimeError as e:
            took = time.monotonic() - last_ok
            msg = str(e)
            print(f"rank {r}: raised after {took:.2f} s: {msg}", flush=True)
            ok = took < LIMIT_S and f"rank {victim}" in msg
            # later calls fail at once with the same cause (fail-stop), never hang
            t0 = time.monotonic()
            try:
                dist.all_reduce(t)
                ok = False
                print(f"rank {r}: a later all_reduce succeeded", flush=True)
            except RuntimeError:
                ok = ok and time.monotonic() - t0 < 1.0
            t0 = time.monotonic()
            dist.destroy_process_group()
            ok = ok and time.monotonic() - t0 < 5.0
            print(f"rank {r}: {'PASS' if ok else 'FAIL'}", flush=True)
            sys.exit(0 if ok else 1)
    print(f"rank {r}: FAIL: no error after 1000 all_reduces", flush=True)
    sys.exit(1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def main():
    n = int(sys.argv[1])
    transport = sys.argv[2] if len(sys.argv) > 2 else "auto"
    port = free_port()
    procs = []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   FOLD_TRANSPORT=transport, FOLD_JOB_TOKEN="kill-test")
        procs.append(subprocess.Popen([sys.executable, __file__, "--child"], env=env))
    bad = 0
    deadline = time.monotonic() + 60
    for r, p in enumerate(procs):
        try:
            rc = p.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            print(f"kill: rank {r} hangs: killing it", flush=True)
            p.kill()
            p.wait()
            rc = "hang"
        want = -signal.SIGKILL if r == n - 1 else 0
        if rc != want:
            print(f"kill: rank {r} ended with {rc}, wanted {want}", flush=True)
            bad += 1
    print("kill: all checks passed" if not bad else f"kill: {bad} rank(s) wrong", flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    child() if "--child" in sys.argv else main()
