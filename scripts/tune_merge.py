#!/usr/bin/env python3
# tune_merge.py — merge repeated `fold-bench --tune` tables into few stable ranges per (collective, transport, n).
"""Usage: tune_merge.py [--penalty P] [--c] OUT...

OUT are stdout files of fold-bench --tune (rank 0's lines, with or without
foldrun's "[0] " prefix), any number of repeats of any (n, transport).
For each (collective, transport, n) and size, every algorithm's time is
divided by the best time of that size in that repeat; the median of those
ratios over repeats is its cost (1.0 = always the fastest); runs without their closing
"written to" line are skipped. A dynamic
programme then cuts the sizes into contiguous ranges, one algorithm each,
minimising the summed log cost plus P (default 0.5) per extra range: a
range boundary must buy a clear, repeated gain, so single-size noise does
not split the table. Prints a markdown table, or with --c the rules as C
initialisers for default_rules in src/select/select.c.
"""
import math
import re
import statistics
import sys
from collections import defaultdict

RANKS = {2: (1, 2), 3: (3, 3), 4: (4, 7), 8: (8, None)}  # measured n -> rank range it stands for


def parse(path, data):
    coll = tp = n = None
    algos = []
    rep = path
    for line in open(path):
        line = re.sub(r"^\[0\] ", "", line.rstrip("\n"))
        m = re.match(r"# tune (\w+): (\d+) ranks, (\w+),", line)
        if m:
            coll, n, tp = m.group(1), int(m.group(2)), m.group(3)
            continue
        if line.startswith("#") and "bytes" in line and coll:
            algos = line.split()[2:-1]
            continue
        if coll and re.match(r"^\s+\d+\s", line):
            f = line.split()
            b = int(f[0])
            times = {}
            for a, v in zip(algos, f[1:1 + len(algos)]):
                if v not in ("-", "N/A"):
                    times[a] = float(v)
            if times:
                best = min(times.values())
                data[(coll, tp, n)][b][rep] = {a: t / best for a, t in times.items()}
                data[(coll, tp, n)]["algos"] = algos
        elif line.startswith("#") and "rules for" in line:
            coll = None


def segment(sizes, cost, algos, penalty):
    # best[i][a]: minimal cost of sizes[0..i] with sizes[i] served by a
    inf = float("inf")
    best = [{a: inf for a in algos} for _ in sizes]
    back = [{a: None for a in algos} for _ in sizes]
    for i, b in enumerate(sizes):
        for a in algos:
            c = math.log(cost[b].get(a, 1e9))
            if i == 0:
                best[i][a] = c
                continue
            prev = min(algos, key=lambda p: best[i - 1][p] + (0 if p == a else penalty))
            best[i][a] = c + best[i - 1][prev] + (0 if prev == a else penalty)
            back[i][a] = prev
    a = min(algos, key=lambda x: best[-1][x])
    pick = [None] * len(sizes)
    for i in range(len(sizes) - 1, -1, -1):
        pick[i] = a
        a = back[i][a]
    ranges = []
    for i, b in enumerate(sizes):
        if ranges and ranges[-1][2] == pick[i]:
            ranges[-1][1] = i
        else:
            ranges.append([i, i, pick[i]])
    return ranges


def main():
    args = sys.argv[1:]
    penalty, as_c = 0.5, False
    if "--penalty" in args:
        i = args.index("--penalty")
        penalty = float(args[i + 1])
        del args[i:i + 2]
    if "--c" in args:
        as_c = True
        args.remove("--c")
    data = defaultdict(lambda: defaultdict(dict))
    for p in args:
        if any("written to" in line for line in open(p)):  # complete runs only
            parse(p, data)
    order = ["broadcast", "reduce", "allreduce", "reduce_scatter", "allgather", "gather", "scatter", "alltoall"]
    keys = sorted(data, key=lambda k: (order.index(k[0]), k[1], k[2]))
    if not as_c:
        print("| collective | transport | n | bytes | algorithm | cost: mean / worst | repeats |")
        print("|---|---|---|---|---|---|---|")
    for key in keys:
        d = data[key]
        algos = d["algos"]
        sizes = sorted(b for b in d if b != "algos")
        cost = {}
        for b in sizes:
            cost[b] = {a: statistics.median(r[a] for r in d[b].values() if a in r)
                       for a in algos if any(a in r for r in d[b].values())}
        ranges = segment(sizes, cost, algos, penalty)
        coll, tp, n = key
        for k, (i, j, a) in enumerate(ranges):
            lo = 0 if k == 0 else sizes[i]
            hi = None if k == len(ranges) - 1 else sizes[j + 1] - 1
            rc = [cost[sizes[x]].get(a, 99) for x in range(i, j + 1)]
            gmean = math.exp(sum(math.log(c) for c in rc) / len(rc))
            reps = min(len(d[sizes[x]]) for x in range(i, j + 1))
            if as_c:
                rlo, rhi = RANKS.get(n, (n, n))
                print("  {FOLD__COLL_%s, %s, %d, %s, %d, %s, 0, 0, \"%s\", 0}," % (
                    coll.upper(), tp.upper(), rlo, "ANY_N" if rhi is None else rhi, lo,
                    "ANY_B" if hi is None else hi, a))
            else:
                rng = "%d-%s" % (lo, "" if hi is None else hi)
                print("| %s | %s | %d | %s | %s | %.2f / %.2f | %d |" % (coll, tp, n, rng, a, gmean, max(rc), reps))


if __name__ == "__main__":
    main()
