"""py_guard.py — what the Ctrl-C guard (python/src/wait.c, fpy_guard_begin/end) costs a call: an empty
KVStore.wait(), a small dist_sync pushpull+wait round trip, and comm.split(0) at n = 1 (a split of a world of
one does no communication, so the guard is most of it). Best of 5 blocks, microseconds per call.
Run: /usr/bin/python3 bench/py_guard.py (split at n = 1), and
     build/foldrun -n 3 /usr/bin/python3 bench/py_guard.py (dist_sync: 2 workers, 1 server). docs/python.md."""
import sys
import time

import numpy as np

import fold


def best(fn, n, blocks=5):
    for _ in range(max(1, n // 10)):
        fn()
    b = 1e9
    for _ in range(blocks):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        b = min(b, (time.perf_counter() - t) / n)
    return b * 1e6


comm = fold.init()
if comm.size == 1:
    def split():
        comm.split(0).destroy()
    def dup():
        comm.dup().destroy()
    print(f"n=1 split(0)+destroy: {best(split, 2000):.2f} us", flush=True)
    print(f"n=1 dup()+destroy: {best(dup, 2000):.2f} us", flush=True)
    kv = fold.KVStore(None, "local")
    print(f"local store empty wait(): {best(kv.wait, 100000):.3f} us", flush=True)
    sys.exit(0)

kv = fold.KVStore(comm, "dist_sync")
if kv.role == fold.KV_SERVER:
    kv.serve()
    kv.destroy()
    sys.exit(0)
x = np.ones(1, np.float32)
kv.init("k", x)
kv.wait()


def roundtrip():
    kv.pushpull("k", x)
    kv.wait()


w = best(kv.wait, 100000)
rt = best(roundtrip, 2000)
kv.barrier()
if comm.rank == 0:
    print(f"dist_sync n={comm.size} empty wait(): {w:.3f} us", flush=True)
    print(f"dist_sync n={comm.size} 4 B pushpull+wait: {rt:.1f} us", flush=True)
kv.destroy()
