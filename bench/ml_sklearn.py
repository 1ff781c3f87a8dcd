#!/usr/bin/python3
"""ml_sklearn.py — scikit-learn on bench/ml_bench.c's synthetic data, for docs/iterq.md.

Usage: ml_sklearn.py kmeans ROWS DIM K ITERS | ml_sklearn.py logreg ROWS DIM
Threads: set OMP_NUM_THREADS (scikit-learn's KMeans uses OpenMP; its logistic regression one core).
"""
import sys
import time
import warnings
import numpy as np

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def mix(z):
    # splitmix64, as ml_bench.c's mix(); numpy's uint64 arithmetic wraps like C's
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def unit(z):
    return (mix(z) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def data(rows, dim, k):
    j = np.arange(dim, dtype=np.uint64)
    centres = 10 * unit(np.uint64(1 << 62) + np.arange(k, dtype=np.uint64)[:, None] * np.uint64(dim) + j)
    x = np.empty((rows, dim))
    for a in range(0, rows, 65536):
        i = np.arange(a, min(rows, a + 65536), dtype=np.uint64)
        base = (i[:, None] * np.uint64(dim) + j) * np.uint64(4)
        noise = unit(base) + unit(base + np.uint64(1)) + unit(base + np.uint64(2)) + unit(base + np.uint64(3)) - 2
        x[a:a + len(i)] = centres[(i % np.uint64(k)).astype(np.int64)] + 1.5 * noise
    sign = np.where(np.arange(dim) % 2 == 1, 1.0, -1.0)
    z = ((x - 5) * sign / np.sqrt(dim)).sum(axis=1) + 2 * (unit(np.uint64(1 << 61) + np.arange(rows, dtype=np.uint64)) - 0.5)
    return x, (z > 0).astype(int)


what, rows, dim = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if what == "kmeans":
    from sklearn.cluster import KMeans
    k, iters = int(sys.argv[4]), int(sys.argv[5])
    x, _ = data(rows, dim, k)
    init = np.array([x[j * (rows // k) + j // 3] for j in range(k)])
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    km = KMeans(n_clusters=k, init=init, n_init=1, algorithm="lloyd", tol=0, max_iter=iters).fit(x)
    t = time.perf_counter() - t0
    print(f"sklearn kmeans: {rows} x {dim}, k {k}: {km.n_iter_} iterations in {t:.3f} s, "
          f"{t / km.n_iter_ * 1e3:.2f} ms per iteration; inertia {km.inertia_:.6f}")
else:
    from sklearn.linear_model import LogisticRegression
    x, y = data(rows, dim, 16)
    for solver in ("lbfgs", "newton-cg"):
        t0 = time.perf_counter()
        lr = LogisticRegression(C=1.0, solver=solver, tol=1e-6, max_iter=10000).fit(x, y)
        t = time.perf_counter() - t0
        print(f"sklearn logreg {solver}: {rows} x {dim}: {int(lr.n_iter_[0])} iterations in {t:.3f} s; "
              f"w[0] {lr.coef_[0][0]:.9f}, b {lr.intercept_[0]:.9f}")
