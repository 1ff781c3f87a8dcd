"""smoke.py — the package imports, fold.init() joins the world, allreduce sums against numpy."""
import sys

import numpy as np

import fold

comm = fold.init()
n, r = comm.size, comm.rank
x = np.arange(5, dtype=np.float64) + r
comm.allreduce(x)
want = sum(np.arange(5, dtype=np.float64) + k for k in range(n))
if not np.array_equal(x, want):
    sys.exit(f"rank {r}: allreduce gave {x}, want {want}")
comm.barrier()
print(f"rank {r}: smoke ok")
