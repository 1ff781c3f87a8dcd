"""fold.ml — data-parallel KMeans and logistic regression on fold's iterative queue (include/fold_ml.h).

Each rank passes its own rows; every rank gets the same model. The estimators follow scikit-learn's names
(fit, predict, cluster_centers_, coef_, ...). Blocking (GIL released) for the whole fit.
"""
import numpy as np

from . import _fold


def _rows(x):
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise _fold.InvalidArgument(f"x must be 2-D (rows x features), got shape {x.shape}")
    return x


class KMeans:
    """Lloyd's KMeans over every rank's rows (fold_kmeans). init: None (k-means++ from seed) or k x dim array."""

    def __init__(self, n_clusters=8, max_iter=300, tol=0.0, init=None, seed=0):
        self.n_clusters, self.max_iter, self.tol, self.init, self.seed = n_clusters, max_iter, tol, init, seed

    def fit(self, comm, x):
        x = _rows(x)
        n, d = x.shape
        cen = np.zeros((self.n_clusters, d), np.float64)
        lab = np.zeros(n, np.int32)
        init = None if self.init is None else np.ascontiguousarray(self.init, dtype=np.float64)
        self.inertia_, self.n_iter_ = _fold.kmeans(comm, x, n, d, cen, lab, self.n_clusters, max_iter=self.max_iter,
                                                   tol=self.tol, init=init, seed=self.seed)
        self.cluster_centers_, self.labels_ = cen, lab
        return self

    def predict(self, x):
        x = _rows(x)
        d2 = ((x[:, None, :] - self.cluster_centers_[None, :, :]) ** 2).sum(-1)
        return d2.argmin(1).astype(np.int32)


class LogisticRegression:
    """Binary L2 logistic regression by L-BFGS (fold_logreg): scikit-learn's objective for the same C."""

    def __init__(self, C=1.0, fit_intercept=True, max_iter=10000, gtol=1e-8, history=10):
        self.C, self.fit_intercept, self.max_iter, self.gtol, self.history = C, fit_intercept, max_iter, gtol, history

    def fit(self, comm, x, y):
        x = _rows(x)
        y = np.ascontiguousarray(y, dtype=np.int32)
        n, d = x.shape
        coef = np.zeros(d, np.float64)
        icpt, self.n_iter_ = _fold.logreg(comm, x, y, n, d, coef, C=self.C, fit_intercept=self.fit_intercept,
                                          max_iter=self.max_iter, gtol=self.gtol, history=self.history)
        self.coef_, self.intercept_ = coef[None, :], np.array([icpt])
        return self

    def decision_function(self, x):
        return _rows(x) @ self.coef_[0] + self.intercept_[0]

    def predict_proba(self, x):
        p = 1.0 / (1.0 + np.exp(-self.decision_function(x)))
        return np.stack([1 - p, p], axis=1)

    def predict(self, x):
        return (self.decision_function(x) > 0).astype(np.int32)
