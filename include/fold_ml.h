/* fold_ml.h — machine learning on fold's iterative queue (fold_iterq in
 * fold.h): KMeans (Lloyd) and L2-regularised logistic regression by
 * distributed L-BFGS, written the way Alink writes them: per superstep
 * every rank computes on its own rows, one allreduce combines the partial
 * results, and every rank updates the model identically.
 *
 * Data: each rank passes its own rows (a row-major n_local x dim block of
 * float64), typically the block fold_partition gives it. The model is the
 * same on every rank at the end. All calls are collective over comm (every
 * rank calls with the same parameters, its own rows), block, and return
 * FOLD_OK or the same error on every rank (as for fold_iterq_run), with
 * fold_comm_last_error naming the rank and the cause. docs/iterq.md. */
#ifndef FOLD_ML_H
#define FOLD_ML_H

#include "fold.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- KMeans ------------------------------------------------------------ */

/* What one superstep did, for progress reports. */
typedef struct fold_kmeans_step {
  int iter;       /* superstep, from 1 */
  double moved;   /* the largest distance a centroid moved in it */
  double inertia; /* sum of squared distances of the points to the centroids
                     they were assigned to in it (the centroids before the move) */
  double seconds; /* the superstep's time on this rank (engine clock) */
  double allreduce_seconds; /* of which in the allreduce of sums and counts */
} fold_kmeans_step;

typedef struct fold_kmeans_params {
  int k;              /* clusters, >= 1 (and <= the total number of rows) */
  int max_iter;       /* supersteps at most, >= 1; default 300 */
  double tol;         /* stop once no centroid moves more than tol (Euclidean);
                         default 0: stop when nothing moves any more */
  const double *init; /* k x dim initial centroids, the same on every rank;
                         NULL: k-means++ seeding from `seed` */
  uint64_t seed;      /* k-means++ only; default 0 */
  const char *checkpoint_dir; /* fold_iterq_set_checkpoint, or NULL (default);
                                 a checkpoint of a run with another k, dim,
                                 tol, init-or-seed or other rows is refused
                                 (naming 'params' or 'data'), as is one past
                                 max_iter */
  int checkpoint_every;       /* default 1 */
  /* Called on every rank after each superstep (NULL: none). */
  void (*progress)(const fold_kmeans_step *s, void *arg);
  void *progress_arg;
} fold_kmeans_params;

/* The defaults above, with k = 8. */
FOLD_API void fold_kmeans_params_default(fold_kmeans_params *p);

/* Lloyd's KMeans over every rank's rows x (n_local x dim, row-major).
 * Per superstep each rank assigns its rows to the nearest centroid
 * (squared Euclidean distance; ties to the lowest index) and adds them to
 * a k x (dim + 1) buffer of sums and counts (plus the inertia), one
 * allreduce (the `direct` algorithm) sums it, and every rank moves each
 * centroid to the mean of its points; a centroid left without points stays
 * where it was (scikit-learn instead moves it to a far point). After the
 * last superstep the rows are assigned to the final centroids once more.
 * Out: centroids (k x dim, every rank), labels (n_local, this rank's rows;
 * may be NULL), *inertia (sum over all rows of the squared distance to the
 * final centroid; may be NULL), *n_iter (supersteps run; may be NULL).
 * k-means++: the first centroid is a row drawn uniformly, each next one a
 * row drawn with probability proportional to its squared distance to the
 * nearest centroid so far, all from `seed`; deterministic for a given
 * data set, seed and rank count.
 * Returns FOLD_EINVAL for a NULL comm, p or centroids, x NULL with
 * n_local > 0, dim = 0, k < 1 or above the total number of rows,
 * max_iter < 1, tol negative or NaN, a non-finite value in x; as
 * fold_iterq_run otherwise (ranks that pass different dim or k fail with
 * FOLD_EMISMATCH). */
FOLD_API int fold_kmeans(fold_comm *comm, const double *x, size_t n_local, size_t dim, const fold_kmeans_params *p,
                         double *centroids, int32_t *labels, double *inertia, int *n_iter);

/* ---- logistic regression ----------------------------------------------- */

typedef struct fold_logreg_params {
  double C;        /* inverse regularisation strength, > 0; default 1.0 */
  int fit_intercept; /* default 1 (the intercept is not regularised) */
  int max_iter;    /* function evaluations (supersteps) at most; default 10000 */
  double gtol;     /* stop when max |gradient| <= gtol; default 1e-8 */
  int history;     /* L-BFGS memory (pairs kept), 1..100; default 10 */
  const char *checkpoint_dir; /* fold_iterq_set_checkpoint, or NULL (default);
                                 a checkpoint of a run with another C,
                                 fit_intercept, gtol, history or other rows
                                 or labels is refused (naming 'params' or
                                 'data'), as is one past max_iter */
  int checkpoint_every;       /* default 10 */
} fold_logreg_params;

FOLD_API void fold_logreg_params_default(fold_logreg_params *p);

/* Binary logistic regression: minimises
 *   0.5 |w|^2 + C * sum_i log(1 + exp(-s_i (w . x_i + b))),  s_i = 2 y_i - 1,
 * scikit-learn's objective for LogisticRegression(penalty="l2", C), by
 * L-BFGS: one superstep evaluates the loss and gradient at a trial point
 * (one allreduce of dim + 2 values) and every rank takes the same
 * decision (accept the step and compute the next direction by the
 * two-loop recursion, or backtrack the Armijo line search).
 * y: this rank's labels, 0 or 1. Out: coef (dim values, every rank),
 * *intercept (0 without fit_intercept; may be NULL), *n_iter (accepted
 * L-BFGS steps; may be NULL). The call fails with FOLD_EINVAL on every
 * rank if the line search cannot make progress before max |gradient|
 * reaches gtol, or max_iter evaluations pass first (the message gives
 * the gradient reached).
 * Returns FOLD_EINVAL for a NULL comm, p or coef, x or y NULL with
 * n_local > 0, dim = 0, C <= 0, max_iter < 1, gtol < 0, history outside
 * 1..100, a label other than 0 or 1 (naming the rank and row), a
 * non-finite value in x; as fold_iterq_run otherwise. */
FOLD_API int fold_logreg(fold_comm *comm, const double *x, const int32_t *y, size_t n_local, size_t dim,
                         const fold_logreg_params *p, double *coef, double *intercept, int *n_iter);

#ifdef __cplusplus
}
#endif
#endif /* FOLD_ML_H */
