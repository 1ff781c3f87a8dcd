"""py_kv.py — fold.KVStore round trip from Python: pushpull(key, x); wait() on one float32 key of 4 B and 1 MiB,
best of 5 blocks. Run: /usr/bin/python3 bench/py_kv.py (local), or build/foldrun -n 3 /usr/bin/python3
bench/py_kv.py (dist_sync, the last rank a server). docs/python.md "Numbers"."""
import sys
import time

import numpy as np

import fold

comm = fold.init()
typ = "local" if comm.size == 1 else "dist_sync"
kv = fold.KVStore(comm, typ)
if kv.role == fold.KV_SERVER:
    kv.serve(); kv.destroy(); sys.exit(0)
for size in (1, 1 << 18):
    x = np.ones(size, np.float32); k = f"k{size}"
    kv.init(k, x); kv.wait()
    N = 2000 if size == 1 else 20
    for _ in range(N // 10): kv.pushpull(k, x); kv.wait()
    best = 1e9
    for rep in range(5):
        t = time.perf_counter()
        for _ in range(N): kv.pushpull(k, x); kv.wait()
        best = min(best, (time.perf_counter() - t) / N)
    if comm.rank == 0: print(f"{typ} n={comm.size} {size*4} B pushpull+wait: {best*1e6:.1f} us", flush=True)
kv.destroy()
