# py_overhead.py — the per-call cost of a collective from Python: fold vs mpi4py vs torch.distributed (gloo).
#
# 8-byte allreduce latency and 64 MiB allreduce bandwidth at n = 2 on one host (fold over shm, Open MPI's
# mpi4py over its shared-memory btl, gloo over TCP on lo: its only CPU transport), in place, float64 for 8 B
# and float32 for 64 MiB, numpy arrays (torch tensors for gloo). The libraries take turns for --rounds rounds
# so that they share the machine's noise; each reports the median over rounds.
#
#   /usr/bin/python3 bench/py_overhead.py [--build build] [--rounds 3] [--iters 20000] [--libs fold,mpi4py,gloo]
#
# One rank of one library (what the driver starts): py_overhead.py --rank-of fold|mpi4py|gloo --iters N
# Latency: --iters calls in blocks of 1000 after 1000 warm-up calls: the median block's time per call, and
# the fastest block's (the cost without interference from the machine's other work: on a shared machine
# the median moves with the neighbours' load, the minimum much less).
# Bandwidth: 3 warm-up calls then 10 timed, the median call; algbw = 64 MiB / time.
import argparse
import os
import socket
import statistics
import subprocess
import sys
import time

BIG = 64 << 20


def rank_main(lib, iters):
    import numpy as np
    if lib == "fold":
        import fold
        comm = fold.init()
        rank = comm.rank

        def allreduce(x):
            comm.allreduce(x)

        def barrier():
            comm.barrier()
        small, big = np.zeros(1, np.float64), np.zeros(BIG // 4, np.float32)
    elif lib == "mpi4py":
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()

        def allreduce(x):
            comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)

        def barrier():
            comm.Barrier()
        small, big = np.zeros(1, np.float64), np.zeros(BIG // 4, np.float32)
    else:
        import torch
        import torch.distributed as dist
        torch.set_num_threads(1)
        dist.init_process_group("gloo")
        rank = dist.get_rank()

        def allreduce(x):
            dist.all_reduce(x)

        def barrier():
            dist.barrier()
        small, big = torch.zeros(1, dtype=torch.float64), torch.zeros(BIG // 4, dtype=torch.float32)
    for _ in range(1000):
        allreduce(small)
    blocks = []
    for _ in range(max(1, iters // 1000)):
        barrier()
        t0 = time.perf_counter()
        for _ in range(1000):
            allreduce(small)
        blocks.append((time.perf_counter() - t0) / 1000)
    lat = statistics.median(blocks)
    best = min(blocks)
    for _ in range(3):
        allreduce(big)
    times = []
    for _ in range(10):
        barrier()
        t0 = time.perf_counter()
        allreduce(big)
        times.append(time.perf_counter() - t0)
    t = statistics.median(times)
    if rank == 0:
        print(f"RESULT {lib} lat_us={lat * 1e6:.3f} best_us={best * 1e6:.3f} big_ms={t * 1e3:.2f} "
              f"algbw_GBps={BIG / t / 1e9:.3f}", flush=True)
    if lib == "fold":
        comm.destroy()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(lib, args, here):
    me = [sys.executable, os.path.abspath(__file__), "--rank-of", lib, "--iters", str(args.iters)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if lib == "fold":
        env["PYTHONPATH"] = os.path.join(args.build, "python")
        cmds = [[os.path.join(args.build, "foldrun"), "-n", "2", "--transport", "shm"] + me]
    elif lib == "mpi4py":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
        cmds = [["mpirun.openmpi", "-n", "2", "--bind-to", "core", "--mca", "btl", "self,vader"] + me]
    else:
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE="2", GLOO_SOCKET_IFNAME="lo")
        cmds = None
    if cmds:
        out = subprocess.run(cmds[0], env=env, capture_output=True, text=True, timeout=600)
        text = out.stdout + out.stderr
    else:
        ps = [subprocess.Popen(me, env=dict(env, RANK=str(k)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True) for k in range(2)]
        text = "".join(p.communicate(timeout=600)[0] for p in ps)
    for line in text.splitlines():
        if "RESULT" in line:
            kv = dict(f.split("=") for f in line.split("RESULT", 1)[1].split()[1:])
            return {k: float(v) for k, v in kv.items()}
    print(f"py_overhead: {lib} gave no result:\n{text}", file=sys.stderr)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank-of")
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    ap.add_argument("--libs", default="fold,mpi4py,gloo")
    args = ap.parse_args()
    if args.rank_of:
        return rank_main(args.rank_of, args.iters)
    libs = args.libs.split(",")
    res = {lib: [] for lib in libs}
    for rnd in range(args.rounds):
        for lib in libs:
            r = launch(lib, args, os.path.dirname(__file__))
            if r:
                res[lib].append(r)
                print(f"round {rnd}: {lib:7s} 8 B {r['lat_us']:8.2f} us (best block {r['best_us']:.2f})   "
                      f"64 MiB {r['big_ms']:8.2f} ms ({r['algbw_GBps']:.2f} GB/s)", flush=True)
    print(f"\n# n = 2, one host; median of {args.rounds} rounds ({args.iters} calls of 8 B per round)")
    print("| library | 8 B allreduce, median (us/call) | 8 B, best block (us/call) | 64 MiB allreduce (ms) | algbw (GB/s) |")
    print("|---|---|---|---|---|")
    for lib in libs:
        if res[lib]:
            m = {k: statistics.median(r[k] for r in res[lib]) for k in res[lib][0]}
            b = min(r["best_us"] for r in res[lib])
            print(f"| {lib} | {m['lat_us']:.2f} | {b:.2f} | {m['big_ms']:.1f} | {m['algbw_GBps']:.2f} |")
    ok = all(res[lib] for lib in libs)
    if "fold" in libs and "mpi4py" in libs and ok:
        for what, key, agg in (("median", "lat_us", statistics.median), ("best block", "best_us", min)):
            f = agg(r[key] for r in res["fold"])
            m = agg(r[key] for r in res["mpi4py"])
            print(f"fold / mpi4py 8 B latency ({what}): {f / m:.2f} ({'within' if f <= m else 'ABOVE'} mpi4py's)")
        wins = sum(f["best_us"] <= m["best_us"] for f, m in zip(res["fold"], res["mpi4py"]))
        print(f"rounds where fold's best block <= mpi4py's: {wins} of {min(len(res['fold']), len(res['mpi4py']))}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
