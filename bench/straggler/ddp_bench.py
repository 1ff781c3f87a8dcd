"""ddp_bench.py — DistributedDataParallel step time with a straggler: fold's ring, ring_skip and default selection against gloo.

Usage (the driver; it starts the ranks itself with foldrun):
    /usr/bin/python3 bench/straggler/ddp_bench.py [--build build] [-n 4] [--transports shm,tcp] [--reps 3]
        [--models digits,big] [--steps 30] [--big-steps 10] [--warmup 3] [--delay 0.002] [--hook-delay S]
        [--csv FILE] [--tiny]

Each rep starts one job per transport (foldrun -n N --transport T) and runs, in one process per rank, every
configuration of every model back to back (the order rotated by the rep, so that a burst of load on the
host hits all alike). A configuration is a process group and a straggler:
  backend  ring       fold with FOLD_ALGO=allreduce=ring
           ring_skip  fold with FOLD_ALGO=allreduce=ring_skip
           auto       fold with its default selection (FOLD_ALGO unset)
           gloo       torch's gloo
  straggler none      no delay
           inject     FOLD_INJECT_DELAY=1:DELAY: fold's rank 1 waits DELAY seconds (an engine timer) before each
                      local reduction step of a collective (docs/straggler.md); fold only, gloo has no such knob
           hook       rank 1 sleeps HOOK_DELAY seconds (default (n-1) x DELAY, what the inject straggler adds to
                      one ring allreduce) in DDP's communication hook before it starts each bucket's allreduce;
                      the hook runs on the backward pass's thread, so rank 1's backward waits too; the same for
                      every backend
Each configuration has a communicator of its own (made with that environment), so what ring_skip learns in one
does not carry into another. Every configuration, the straggler-free ones included, goes through the same
comm hook (torch's default allreduce hook behind an optional sleep), so only the straggler differs.
Models: "digits", the network of tests/torch/ddp_digits.py (two conv layers and two linear ones, 38,282
parameters) on sklearn's 8x8 digits, float32, batch 32 per rank, DDP buckets of 0.05 MB as that test sets
them; "big", an MLP 1024-2048-2048-2048-256-10 (11,019,018 parameters, 44 MB of float32 gradients) on
random data, batch 8 per rank, DDP's default buckets. One thread per rank. Each window: WARMUP untimed steps,
then STEPS timed steps (forward, backward with DDP's bucketed allreduce, SGD step) between two barriers of a
gloo control group; the figure is rank 0's wall time per step.

Prints a table per transport and model: the median step time over the reps, the median [min-max] of the
per-rep ratios to fold's ring with the same straggler and to gloo with the same straggler (for "inject",
gloo without one: gloo cannot be slowed that way), and for ring_skip and auto with a straggler the share of
the straggler's cost recovered, (T_ring,slow - T,slow) / (T_ring,slow - T_ring,none), from the medians and as
the median of the per-rep values. --tiny: n = 2, shm, 1 rep, 2 steps, a small MLP instead of "big" (the
ctest torch_ddp_bench_tiny). A rank that fails fails the run, naming the launch; every launch has a time
limit (--launch-timeout) and fold and gloo wait at most --op-timeout seconds for a peer.
"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import time

BACKENDS = ("ring", "ring_skip", "auto", "gloo")
STRAGGLERS = ("none", "inject", "hook")
ALGO = {"ring": "allreduce=ring", "ring_skip": "allreduce=ring_skip", "auto": None}
BIG_DIMS = (1024, 2048, 2048, 2048, 256, 10)
TINY_DIMS = (64, 128, 10)


def configs():
    """(backend, straggler) in the canonical order; gloo has no "inject"."""
    return [(b, s) for s in STRAGGLERS for b in BACKENDS if not (b == "gloo" and s == "inject")]


# ---- the ranks --------------------------------------------------------------------------------------


def worker(a):
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP

    import fold.torch  # noqa: F401  (registers the backend "fold")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from torch_common import DIGITS_CSV, Digits  # the digits network (one definition, bench/torch_common.py)

    torch.set_num_threads(1)
    timeout = timedelta(seconds=a.op_timeout)
    dist.init_process_group("gloo", timeout=timeout)  # the control group: barriers only
    r, n = dist.get_rank(), dist.get_world_size()

    def mlp(dims):
        layers = []
        for i in range(len(dims) - 1):
            layers.append(nn.Linear(dims[i], dims[i + 1]))
            if i < len(dims) - 2:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)

    def digits_data():
        import gzip

        import numpy as np
        with gzip.open(DIGITS_CSV, "rt") as f:
            t = np.loadtxt(f, delimiter=",", dtype=np.float32)
        x = torch.from_numpy(t[:, :64] / 16.0).reshape(-1, 1, 8, 8)
        y = torch.from_numpy(t[:, 64].astype(np.int64))
        return x, y

    big_dims = TINY_DIMS if a.tiny else BIG_DIMS
    models = {}
    if "digits" in a.models:
        dx, dy = digits_data()
        models["digits"] = (Digits, 32, 0.05, lambda i, b: (
            dx[((i * n + r) * b) % (len(dx) - b):][:b], dy[((i * n + r) * b) % (len(dx) - b):][:b]))
    if "big" in a.models:
        g = torch.Generator().manual_seed(r)
        bx, by = torch.randn(8, big_dims[0], generator=g), torch.randint(0, 10, (8,), generator=g)
        models["big"] = (lambda: mlp(big_dims), 8, 25.0, lambda i, b: (bx, by))

    # One communicator per configuration, made with that configuration's environment (fold reads FOLD_ALGO
    # and FOLD_INJECT_DELAY when a communicator is made); the worker threads are idle while it changes.
    groups = {}
    keep = {k: os.environ.get(k) for k in ("FOLD_ALGO", "FOLD_INJECT_DELAY")}
    for b, s in configs():
        if b == "gloo":
            continue
        for k in keep:
            os.environ.pop(k, None)
        if ALGO[b]:
            os.environ["FOLD_ALGO"] = ALGO[b]
        if s == "inject":
            os.environ["FOLD_INJECT_DELAY"] = f"1:{a.delay}"
        groups[(b, s)] = dist.new_group(backend="fold", timeout=timeout)
    for k, v in keep.items():
        os.environ.pop(k, None)
        if v is not None:
            os.environ[k] = v
    gloo = dist.new_group(backend="gloo", timeout=timeout)
    groups[("gloo", "none")] = groups[("gloo", "hook")] = gloo
    if a.fail_rank == r:
        raise RuntimeError(f"rank {r}: failing on purpose (--fail-rank {r})")

    buckets = {}

    def window(model, b, s):
        make, batch, cap, data = models[model]
        group = groups[(b, s)]
        torch.manual_seed(0)
        net = DDP(make(), process_group=group, bucket_cap_mb=cap)
        nap = a.hook_delay if (s == "hook" and r == 1) else 0.0
        seen = [] if model not in buckets else None  # the model's buckets, once: those of its second step
        # (DDP's first step runs one bucket of everything, then it rebuilds them in the order gradients came)

        def hook(pg, bucket):
            if seen is not None and hook.step == 1:
                seen.append(bucket.buffer().numel())
            if nap:
                time.sleep(nap)
            return default_hooks.allreduce_hook(pg, bucket)

        hook.step = 0
        net.register_comm_hook(group, hook)
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        steps = a.big_steps if model == "big" else a.steps
        for i in range(a.warmup + steps):
            hook.step = i
            if i == a.warmup:
                dist.barrier()
                t0 = time.perf_counter()
            x, y = data(i, batch)
            opt.zero_grad()
            F.cross_entropy(net(x), y).backward()
            opt.step()
        dist.barrier()
        dt = (time.perf_counter() - t0) / steps
        if seen is not None:
            buckets[model] = seen
        if r == 0:
            print(f"RESULT {model} {b} {s} {dt * 1e3:.4f}", flush=True)
        params = sum(p.numel() for p in net.parameters())
        return params

    todo = [(m, b, s) for m in models for b, s in configs()]
    k = a.rep % len(todo)
    params = {}
    for m, b, s in todo[k:] + todo[:k]:
        params[m] = window(m, b, s)
    if r == 0:
        for m in models:
            print(f"MODEL {m} params {params[m]} buckets {','.join(str(x) for x in buckets[m])}", flush=True)
    dist.barrier()
    # the fold groups go first, while the control group can still tell a late rank's failure
    for key in list(groups):
        if key[0] != "gloo":
            dist.destroy_process_group(groups.pop(key))
    dist.destroy_process_group()


# ---- the driver -------------------------------------------------------------------------------------


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def launch(a, transport, rep):
    here = os.path.abspath(__file__)
    cmd = [a.foldrun, "-n", str(a.n), "--transport", transport, "--timeout", str(a.op_timeout), "--",
           a.python, here, "--worker", "--rep", str(rep), "--models", ",".join(a.models), "--steps", str(a.steps),
           "--big-steps", str(a.big_steps), "--warmup", str(a.warmup), "--delay", str(a.delay),
           "--hook-delay", str(a.hook_delay), "--op-timeout", str(a.op_timeout), "--fail-rank", str(a.fail_rank)]
    if a.tiny:
        cmd.append("--tiny")
    env = dict(os.environ)
    for k in ("FOLD_ALGO", "FOLD_INJECT_DELAY"):
        env.pop(k, None)
    pp = os.path.join(os.path.abspath(a.build), "python")
    env["PYTHONPATH"] = pp + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    what = f"transport {transport}, rep {rep}"
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=a.launch_timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # foldrun and its ranks: the session this launch started
        out, _ = p.communicate()
        fail(f"{what}: no result within {a.launch_timeout:.0f} s (killed)", out)
    if p.returncode != 0:
        named = re.findall(r"foldrun: .*", out)
        fail(f"{what}: foldrun exited with status {p.returncode}" + (f" ({named[-1]})" if named else ""), out)
    res = {}
    for m in re.finditer(r"RESULT (\S+) (\S+) (\S+) ([0-9.]+)", out):
        res[(m.group(1), m.group(2), m.group(3))] = float(m.group(4))
    info = {m.group(1): (int(m.group(2)), m.group(3)) for m in re.finditer(r"MODEL (\S+) params (\d+) buckets (\S*)", out)}
    missing = [f"{mo} {b} {s}" for mo in a.models for b, s in configs() if (mo, b, s) not in res]
    if missing:
        fail(f"{what}: no figure for {', '.join(missing)}", out)
    return res, info


def fail(msg, out):
    lines = out.splitlines()
    errs = [x for x in lines if re.search(r"Error:|FAIL|foldrun:", x)][:12]  # the ranks' own words first
    print("\n".join(lines[-30:] + ["ddp_bench: what the ranks said:"] + errs), flush=True)
    print(f"ddp_bench: FAIL: {msg}", flush=True)
    sys.exit(1)


def med(v):
    return statistics.median(v) if v else float("nan")


def report(a, runs, info, loads):
    for t in a.transports:
        for mo in a.models:
            p, bk = info.get((t, mo), (0, ""))
            nb = len(bk.split(",")) if bk else 0
            print(f"\n{t}, n = {a.n}, {mo} ({p:,} parameters, {nb} buckets a step: {bk} elements), "
                  f"{len(runs[t])} reps, ms per step (rank 0)")
            print("| model | backend | straggler | median ms | /ring [min-max] | /gloo [min-max] | recovered (medians / paired) |")
            print("|---|---|---|---|---|---|---|")
            reps = runs[t]
            for b, s in configs():
                v = [x[(mo, b, s)] for x in reps]
                ring = [x[(mo, "ring", s)] for x in reps]
                gs = "none" if s == "inject" else s
                gl = [x[(mo, "gloo", gs)] for x in reps]
                qr = [x / y for x, y in zip(v, ring)]
                qg = [x / y for x, y in zip(v, gl)]
                rec = "-"
                if b in ("ring_skip", "auto") and s != "none":
                    # only where the straggler cost ring something: else the share means nothing ("n/a")
                    r0 = [x[(mo, "ring", "none")] for x in reps]
                    per = [(rs - x) / (rs - rn) for x, rs, rn in zip(v, ring, r0) if rs > rn]
                    d = med(ring) - med(r0)
                    rec = (f"{100 * (med(ring) - med(v)) / d:.0f}%" if d > 0 else "n/a") + " / " + \
                        (f"{100 * med(per):.0f}% ({len(per)} of {len(reps)} reps)" if per else "n/a")
                ref = "" if gs == s else " (gloo: none)"
                print(f"| {mo} | {b} | {s} | {med(v):.3f} | {med(qr):.2f} [{min(qr):.2f}-{max(qr):.2f}] | "
                      f"{med(qg):.2f} [{min(qg):.2f}-{max(qg):.2f}]{ref} | {rec} |")
    lo, hi = min(loads), max(loads)
    print(f"\nload average (1 min) during the runs: {lo:.1f}-{hi:.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rep", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build"))
    ap.add_argument("--foldrun", default=None, help="default: BUILD/foldrun")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("-n", type=int, default=4)
    ap.add_argument("--transports", default="shm,tcp")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--models", default="digits,big")
    ap.add_argument("--steps", type=int, default=30, help="timed steps of digits")
    ap.add_argument("--big-steps", type=int, default=10, help="timed steps of big")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--delay", type=float, default=0.002, help="FOLD_INJECT_DELAY's seconds for rank 1")
    ap.add_argument("--hook-delay", type=float, default=None, help="seconds rank 1 sleeps per bucket (hook)")
    ap.add_argument("--op-timeout", type=float, default=60, help="fold's and gloo's wait for a peer (s)")
    ap.add_argument("--launch-timeout", type=float, default=1200, help="one foldrun job (s)")
    ap.add_argument("--fail-rank", type=int, default=-1, help="test: this rank raises after making its groups")
    ap.add_argument("--csv", default=None, help="append one line per configuration and rep")
    ap.add_argument("--tiny", action="store_true", help="n = 2, shm, 1 rep, 2 steps, a small MLP (the ctest)")
    a = ap.parse_args()
    a.models = [m for m in a.models.split(",") if m]
    for m in a.models:
        if m not in ("digits", "big"):
            ap.error(f"unknown model {m!r} (digits, big)")
    if a.worker:
        worker(a)
        return
    if a.tiny:
        a.n, a.transports, a.reps, a.steps, a.big_steps, a.warmup = 2, "shm", 1, 2, 2, 1
        a.launch_timeout = min(a.launch_timeout, 50)
        a.op_timeout = min(a.op_timeout, 30)
    if a.n < 2:
        ap.error("-n: at least 2 (rank 1 is the straggler)")
    if a.hook_delay is None:
        a.hook_delay = (a.n - 1) * a.delay
    a.transports = [t for t in a.transports.split(",") if t]
    a.foldrun = a.foldrun or os.path.join(a.build, "foldrun")
    if not os.access(a.foldrun, os.X_OK):
        print(f"ddp_bench: FAIL: no foldrun at {a.foldrun} (--build / --foldrun)")
        sys.exit(1)
    print(f"# ddp_bench: n = {a.n}, transports {','.join(a.transports)}, {a.reps} reps, steps digits {a.steps} / "
          f"big {a.big_steps} after {a.warmup} warm-up, inject FOLD_INJECT_DELAY=1:{a.delay}, "
          f"hook {a.hook_delay * 1e3:.1f} ms per bucket on rank 1", flush=True)
    runs = {t: [] for t in a.transports}
    info, loads = {}, []
    for rep in range(a.reps):
        for t in a.transports:
            loads.append(loadavg())
            t0 = time.time()
            res, inf = launch(a, t, rep)
            loads.append(loadavg())
            runs[t].append(res)
            for mo, v in inf.items():
                info[(t, mo)] = v
            print(f"# rep {rep} {t}: {time.time() - t0:.0f} s, load {loads[-2]:.1f}-{loads[-1]:.1f}", flush=True)
            if a.csv:
                with open(a.csv, "a") as f:
                    for (mo, b, s), v in sorted(res.items()):
                        f.write(f"{t},{a.n},{rep},{mo},{b},{s},{v:.4f}\n")
    report(a, runs, info, loads)


if __name__ == "__main__":
    main()
