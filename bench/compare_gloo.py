# compare_gloo.py — bench/compare's Gloo peer: times collectives over a size plan with fold-bench's method, via torch.distributed (gloo).
#
# Run with the Debian interpreter (/usr/bin/python3, which has python3-torch),
# one process per rank, torchrun's variables in the environment:
#   RANK=r WORLD_SIZE=n MASTER_ADDR=127.0.0.1 MASTER_PORT=p \
#     /usr/bin/python3 bench/compare_gloo.py -c COLL[,COLL...] -p SIZE:ITERS:WARMUP[,...] [-l LABEL] [-o DIR]
# Several collectives run one after the other in one process group (bench/compare
# starts Gloo once per rank count: torch's import and the rendezvous cost more than
# a short plan's calls); -o DIR then takes each one's rows (DIR/COLL.rows, and
# DIR/COLL.done once complete).
# GLOO_SOCKET_IFNAME picks Gloo's interface (bench/compare sets lo, or the
# namespace's link).
#
# Method and output are compare_mpi.c's (see there): float32 sum, root 0,
# fold-bench's sizes; per size warm-up calls, then timed calls each after a
# barrier, the per-iteration max over ranks, median and p99 on rank 0:
#   # compare lib=LABEL coll=COLL ranks=N dtype=float32 op=sum
#   SIZE COUNT ITERS TIME_US P99_US
# A collective that torch 1.13's Gloo group lacks (reduce_scatter) prints
#   # n/a: <torch's own message>
# and no rows; the exit status is then 0, since nothing failed to run, and the
# next collective follows.
import argparse
import math
import os
import sys
import time

import torch
import torch.distributed as dist

COLLS = ("allreduce", "broadcast", "reduce_scatter", "allgather", "alltoall")


def parse_plan(text):
    plan = []
    for item in text.split(","):
        size, iters, warmup = (int(x) for x in item.split(":"))
        if size < 1 or iters < 1 or warmup < 0:
            raise ValueError(item)
        plan.append((size, iters, warmup))
    return plan


def shape(coll, size, n):
    """Elements per call argument and the bytes the size stands for (fold-bench's convention)."""
    if coll in ("allreduce", "broadcast"):
        count = size // 4
        return count, count * 4
    count = size // n // 4
    return count, count * n * 4


def make_call(coll, send, recv, count, n):
    """A no-argument function doing one call on views of the preallocated buffers."""
    if coll == "allreduce":
        # torch's allreduce exists in place only, and is timed so (fold and
        # MPI out of place: a copy more, which favours Gloo, not fold). The
        # sums grow to inf over the calls; float adds cost the same on inf.
        r = recv[:count]
        return lambda: dist.all_reduce(r, op=dist.ReduceOp.SUM)
    if coll == "broadcast":
        r = recv[:count]
        return lambda: dist.broadcast(r, src=0)
    if coll == "reduce_scatter":
        ins = list(send[:count * n].chunk(n))
        out = recv[:count]
        return lambda: dist.reduce_scatter(out, ins, op=dist.ReduceOp.SUM)
    if coll == "allgather":
        outs = list(recv[:count * n].chunk(n))
        s = send[:count]
        return lambda: dist.all_gather(outs, s)
    if coll == "alltoall":
        s, r = send[:count * n], recv[:count * n]
        return lambda: dist.all_to_all_single(r, s)
    raise ValueError(coll)


def run_coll(coll, plan, send, recv, rank, n, label, out):
    """One collective over the plan; rank 0 writes its rows to out."""
    if rank == 0:
        print("# compare lib=%s coll=%s ranks=%d dtype=float32 op=sum" % (label, coll, n), file=out)
        print("# size count iters time_us p99_us", file=out, flush=True)

    # One probe call at the smallest size: a collective Gloo lacks raises on
    # every rank alike, before any data moves, so all ranks go on together.
    first = next((s for s, _, _ in plan if shape(coll, s, n)[0] > 0), None)
    if first is not None:
        try:
            make_call(coll, send, recv, shape(coll, first, n)[0], n)()
        except RuntimeError as e:
            if "not support" not in str(e):
                raise
            if rank == 0:
                print("# n/a: %s" % str(e).splitlines()[0], file=out, flush=True)
            return

    for size, iters, warmup in plan:
        count, nbytes = shape(coll, size, n)
        if count == 0:
            continue
        call = make_call(coll, send, recv, count, n)
        for _ in range(warmup):
            call()
        times = torch.zeros(iters, dtype=torch.float64)
        for i in range(iters):
            dist.barrier()
            t0 = time.perf_counter()
            call()
            times[i] = time.perf_counter() - t0
        dist.all_reduce(times, op=dist.ReduceOp.MAX)
        if rank == 0:
            t = sorted(times.tolist())
            med = t[iters // 2] if iters % 2 else (t[iters // 2 - 1] + t[iters // 2]) / 2
            p99 = t[max(0, math.ceil(0.99 * iters) - 1)]
            print("%d %d %d %.3f %.3f" % (nbytes, nbytes // 4, iters, med * 1e6, p99 * 1e6), file=out, flush=True)


def main():
    ap = argparse.ArgumentParser(description="Gloo peer of bench/compare")
    ap.add_argument("-c", dest="colls", required=True, help="COLL[,COLL...] among " + ", ".join(COLLS))
    ap.add_argument("-p", dest="plan", required=True, help="SIZE:ITERS:WARMUP[,...]")
    ap.add_argument("-l", dest="label", default="gloo")
    ap.add_argument("-o", dest="outdir", help="rank 0 writes DIR/COLL.rows, then DIR/COLL.done, per collective "
                    "(needed for more than one; without it, stdout)")
    a = ap.parse_args()
    colls = a.colls.split(",")
    if any(c not in COLLS for c in colls):
        ap.error("bad collective in %r (one of %s)" % (a.colls, ", ".join(COLLS)))
    if len(colls) > 1 and not a.outdir:
        ap.error("more than one collective needs -o DIR")
    try:
        plan = parse_plan(a.plan)
    except ValueError as e:
        ap.error("bad plan: %s" % e)

    dist.init_process_group("gloo")  # env:// — RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
    rank, n = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)  # one core per rank, as the C peers use

    maxbytes = max(shape(c, s, n)[1] for c in colls for s, _, _ in plan)
    # Allocated once and touched, as fold-bench does: no page faults inside a timed call.
    send = torch.arange(maxbytes // 4, dtype=torch.float32).remainder_(7)
    recv = torch.zeros(maxbytes // 4, dtype=torch.float32)

    for coll in colls:
        if a.outdir is None:
            run_coll(coll, plan, send, recv, rank, n, a.label, sys.stdout)
            continue
        with open(os.path.join(a.outdir, coll + ".rows"), "w") if rank == 0 else open(os.devnull, "w") as out:
            run_coll(coll, plan, send, recv, rank, n, a.label, out)
        if rank == 0:
            open(os.path.join(a.outdir, coll + ".done"), "w").close()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
