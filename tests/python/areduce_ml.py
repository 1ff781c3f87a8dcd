"""areduce_ml.py — fold.AsyncReduce (full and partial) against numpy, fold.areduce_tree, fold.KMeans against a
numpy Lloyd's from the same start, fold.LogisticRegression at its optimum (gradient ~ 0)."""
import sys
import time

import numpy as np

import fold
import harness

comm = fold.init()
n, r = comm.size, comm.rank

check = harness.Checks(r)
fail = check.failed


check(fold.areduce_tree(7, 0, 2, 0) == (-1, [1, 2]) and fold.areduce_tree(7, 0, 2, 1) == (0, [3, 5]),
      f"tree: {fold.areduce_tree(7, 0, 2, 0)} {fold.areduce_tree(7, 0, 2, 1)}")
try:
    fold.areduce_tree(3, 5, 2, 0)
    check(False, "tree with target 5 of 3")
except fold.InvalidArgument:
    pass

target = n - 1
for mode in ("full", "partial"):
    ar = fold.AsyncReduce(comm, 3, dtype=np.float64, op="sum", target=target, degree=2, mode=mode, t_wait=0.001)
    for j in range(r + 1):  # rank r contributes r + 1 fragments
        ar.contribute(np.array([r, j, 1.0]))
    try:
        ar.contribute(np.zeros(2))
        check(False, "a fragment of the wrong size")
    except fold.InvalidArgument:
        pass
    ar.done()
    try:
        ar.contribute(np.zeros(3))
        check(False, "contribute after done")
    except fold.InvalidArgument as e:
        check(f"rank {r}" in str(e) or "done" in str(e), f"after done: {e}")
    want = np.array([sum(k * (k + 1) for k in range(n)), sum(k * (k + 1) / 2 for k in range(n)),
                     sum(k + 1 for k in range(n))])
    if r == target:
        out = np.zeros(3)
        if mode == "partial":  # poll the stream of results until final
            end, fin = time.monotonic() + 20, False
            while not fin and time.monotonic() < end:
                nf, fin = ar.result(out)
            check(fin and nf == want[2] and np.array_equal(out, want), f"partial: {out} {nf} {fin}")
        nf = ar.wait(out=out)
        check(nf == want[2] and np.array_equal(out, want), f"{mode}: {out} ({nf} fragments) want {want}")
    else:
        try:
            ar.result(np.zeros(3))
            check(False, "result on a rank that is not the target")
        except fold.InvalidArgument:
            pass
        ar.wait()
    ar.destroy()
try:
    fold.AsyncReduce(comm, 3, dtype="float64", mode="sideways")
    check(False, "bad mode")
except fold.InvalidArgument:
    pass

# KMeans: three blobs, rows dealt round-robin to the ranks; the reference runs Lloyd's on all rows
rng = np.random.default_rng(7)
centers = np.array([[0, 0], [6, 0], [0, 6]], np.float64)
allx = np.concatenate([c + rng.normal(size=(40, 2)) for c in centers])
init = allx[[0, 40, 80]].copy()
mine = allx[r::n]
km = fold.KMeans(n_clusters=3, init=init, max_iter=100).fit(comm, mine)
c = init.copy()
for _ in range(100):
    lab = ((allx[:, None] - c[None]) ** 2).sum(-1).argmin(1)
    new = np.array([allx[lab == j].mean(0) for j in range(3)])
    if np.array_equal(new, c):
        break
    c = new
check(np.allclose(km.cluster_centers_, c, rtol=0, atol=1e-9), f"kmeans centers {km.cluster_centers_} want {c}")
check(np.array_equal(km.labels_, ((mine[:, None] - c[None]) ** 2).sum(-1).argmin(1)), "kmeans labels")
check(np.array_equal(km.predict(mine), km.labels_), "kmeans predict")
inertia = ((allx - c[lab]) ** 2).sum()
check(abs(km.inertia_ - inertia) < 1e-6 * inertia, f"kmeans inertia {km.inertia_} want {inertia}")

# logistic regression: at the optimum the gradient of sklearn's objective vanishes
ally = (allx[:, 0] + 0.5 * allx[:, 1] + rng.normal(size=len(allx)) > 3).astype(np.int32)
lr = fold.LogisticRegression(C=0.5).fit(comm, mine, ally[r::n])
w, b = lr.coef_[0], lr.intercept_[0]
s = 2.0 * ally - 1
z = allx @ w + b
g = 1.0 / (1.0 + np.exp(s * z))  # sigmoid(-s z)
grad_w = w - 0.5 * (allx * (s * g)[:, None]).sum(0)
grad_b = -0.5 * (s * g).sum()
check(np.abs(grad_w).max() < 1e-5 and abs(grad_b) < 1e-5, f"logreg gradient {grad_w} {grad_b}")
acc = (lr.predict(allx) == ally).mean()
check(acc > 0.85, f"logreg accuracy {acc}")
try:
    fold.LogisticRegression().fit(comm, mine, np.full(len(mine), 2))
    check(False, "labels of 2")
except fold.InvalidArgument as e:
    check("rank" in str(e), f"bad labels: {e}")
comm.barrier()
if fail:
    sys.exit(f"rank {r}: {len(fail)} check(s) failed")
print(f"rank {r} of {n}: areduce and ml ok")
