#!/usr/bin/python3
"""ml_ref.py — scikit-learn's answer, the reference the ML tests compare fold with.

Usage: ml_ref.py kmeans FILE K [--compare FOLD_OUT]
                                   (Lloyd from the means of K blocks of consecutive rows; tol=0;
                                   --compare: print scikit-learn's answer next to fold's, kmeans_digits' OUT)
       ml_ref.py logreg FILE       (standardised; LogisticRegression newton-cg, C=1, tol=1e-12)
Prints the same text ml_run reads: "inertia X", "centroids K DIM" and values,
"labels N" and values; or "coef P" and values (weights then intercept), "correct C".
"""
import sys
import time
import warnings
import numpy as np
from sklearn.cluster import KMeans
from sklearn.linear_model import LogisticRegression


def load(path):
    # The same rows ml_csv.c reads: scikit-learn's header line (if any) skipped, label last.
    import gzip
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        lines = [l for l in f.read().splitlines() if l.strip()]
    if any(c.isalpha() for c in lines[0]):
        lines = lines[1:]
    a = np.array([[float(v) for v in l.split(",")] for l in lines])
    return a[:, :-1], a[:, -1].astype(int)


def compare(km, seconds, path, k, dim):
    """The demo's last lines: fold's model (kmeans_digits OUT) next to scikit-learn's."""
    words = open(path).read().split()
    inertia = float(words[1])
    cen = np.array([float(v) for v in words[5:5 + k * dim]]).reshape(k, dim)
    nl = int(words[6 + k * dim])
    labels = np.array([int(v) for v in words[7 + k * dim:7 + k * dim + nl]])
    rest = words[7 + k * dim + nl:]  # "seconds X": fold's fit
    fold_s = float(rest[1]) if len(rest) >= 2 and rest[0] == "seconds" else None
    ec = np.abs(cen - km.cluster_centers_).max() / np.abs(km.cluster_centers_).max()
    ei = abs(inertia - km.inertia_) / km.inertia_
    same = int((labels == km.labels_).sum())
    print(f"scikit-learn {__import__('sklearn').__version__} KMeans(lloyd, same initial centroids): "
          f"{km.n_iter_} iterations, inertia {km.inertia_:.6f}, {seconds * 1e3:.1f} ms")
    print(f"fold vs scikit-learn: centroids differ by {ec:.2g} (relative), inertia by {ei:.2g}, "
          f"labels equal for {same} of {len(labels)} rows")
    if fold_s is not None:
        print(f"time of the whole fit: fold {fold_s * 1e3:.1f} ms (rank 0), scikit-learn {seconds * 1e3:.1f} ms")
    ok = ec <= 1e-9 and ei <= 1e-9 and same == len(labels)
    print("RESULT: " + ("equal to scikit-learn (1e-9 relative)" if ok else "DIFFERENT from scikit-learn"))
    if not ok:
        sys.exit(1)


what, path = sys.argv[1], sys.argv[2]
x, y = load(path)
if what == "kmeans":
    k = int(sys.argv[3])
    n = len(x)
    # Initial centroids: the mean of rows [j*n//k, (j+1)*n//k), as ml_run.c computes them. Not rows of
    # the data: digits' integer rows as centroids give points exactly equidistant from two of them, and
    # scikit-learn (which centres the data first) breaks such ties by rounding, not by index.
    init = np.array([x[j * n // k:(j + 1) * n // k].mean(axis=0) for j in range(k)])
    t0 = time.perf_counter()
    km = KMeans(n_clusters=k, init=init, n_init=1, algorithm="lloyd", tol=0, max_iter=1000).fit(x)
    t = time.perf_counter() - t0
    if len(sys.argv) > 5 and sys.argv[4] == "--compare":
        compare(km, t, sys.argv[5], k, x.shape[1])
        sys.exit(0)
    print("inertia", repr(float(km.inertia_)))
    print("centroids", k, x.shape[1])
    print(" ".join(repr(float(t)) for t in km.cluster_centers_.ravel()))
    print("labels", n)
    print(" ".join(str(int(t)) for t in km.labels_))
else:
    # newton-cg may warn that it stopped at tol=1e-12 short of its own test; its point is still
    # within 1e-9 of the optimum (the gradient there is ~1e-10), far inside the 1e-6 compared.
    warnings.simplefilter("ignore")
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    lr = LogisticRegression(C=1.0, solver="newton-cg", tol=1e-12, max_iter=10000).fit(x, y)
    w = np.concatenate([lr.coef_.ravel(), lr.intercept_])
    print("coef", len(w))
    print(" ".join(repr(float(t)) for t in w))
    print("correct", int((lr.predict(x) == y).sum()))
