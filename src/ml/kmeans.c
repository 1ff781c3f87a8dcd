/* kmeans.c — Lloyd's KMeans on the iterative queue, as Alink writes it: assign, allreduce sums and counts, move. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold_ml.h"
#include "ml/ml.h"
#include "queue/iterq.h"

void fold_kmeans_params_default(fold_kmeans_params *p) {
  if (p == NULL) return;
  memset(p, 0, sizeof *p);
  p->k = 8;
  p->max_iter = 300;
  p->checkpoint_every = 1;
}

/* The run's constants; the model lives in the queue's session (so that a
 * checkpoint holds all of it): "centroids" (k x dim) and "sums"
 * (k x (dim + 1) sums and counts, then the inertia), "moved" (1). */
typedef struct km {
  const double *x;
  size_t n, dim;
  int k;
  double tol;
  const fold_kmeans_params *p;
  int64_t t0, tar; /* engine clock at the superstep's start, time in the allreduce */
  int32_t *labels;  /* out */
  double inertia;
} km;

static double *get(fold_iterq *q, const char *name) { return fold_iterq_get(q, name, NULL, NULL); }

/* The nearest centroid of row r (ties: lowest index) and its squared distance. */
static int nearest(const km *m, const double *c, const double *row, double *d2) {
  int best = 0;
  double bd = INFINITY;
  for (int j = 0; j < m->k; j++) {
    const double *cj = c + (size_t)j * m->dim;
    double d = 0;
    for (size_t t = 0; t < m->dim; t++) {
      double e = row[t] - cj[t];
      d += e * e;
    }
    if (d < bd) {
      bd = d;
      best = j;
    }
  }
  *d2 = bd;
  return best;
}

/* Step 1: this rank's rows into sums and counts. */
static int assign(fold_iterq *q, void *ctx) {
  km *m = ctx;
  fold_comm *c = fold_iterq_comm(q);
  m->t0 = fold__now(c);
  size_t w = m->dim + 1, len = (size_t)m->k * w + 1;
  int rc = fold_iterq_put(q, "sums", NULL, len, FOLD_FLOAT64); /* zeroed, in place after the first superstep */
  if (rc < 0) return rc;
  double *s = get(q, "sums"), *cen = get(q, "centroids"), inertia = 0;
  for (size_t i = 0; i < m->n; i++) {
    const double *row = m->x + i * m->dim;
    double d2;
    double *sj = s + (size_t)nearest(m, cen, row, &d2) * w;
    for (size_t t = 0; t < m->dim; t++) sj[t] += row[t];
    sj[m->dim] += 1;
    inertia += d2;
  }
  s[len - 1] = inertia;
  m->tar = fold__now(c);
  return FOLD_OK;
}

/* Step 3 (after the allreduce): every rank moves the centroids alike. */
static int move(fold_iterq *q, void *ctx) {
  km *m = ctx;
  fold_comm *c = fold_iterq_comm(q);
  int64_t t1 = fold__now(c);
  size_t w = m->dim + 1;
  double *s = get(q, "sums"), *cen = get(q, "centroids"), moved = 0;
  for (int j = 0; j < m->k; j++) {
    double *sj = s + (size_t)j * w, *cj = cen + (size_t)j * m->dim, d = 0;
    if (sj[m->dim] == 0) continue; /* an empty cluster keeps its centroid */
    for (size_t t = 0; t < m->dim; t++) {
      double v = sj[t] / sj[m->dim], e = v - cj[t];
      d += e * e;
      cj[t] = v;
    }
    if (d > moved) moved = d;
  }
  moved = sqrt(moved);
  int rc = fold_iterq_put(q, "moved", &moved, 1, FOLD_FLOAT64);
  if (rc < 0) return rc;
  if (m->p->progress) {
    int64_t t2 = fold__now(c);
    fold_kmeans_step st = {fold_iterq_iteration(q), moved, s[(size_t)m->k * w], (double)(t2 - m->t0) * 1e-9,
                           (double)(t1 - m->tar) * 1e-9};
    m->p->progress(&st, m->p->progress_arg);
  }
  return FOLD_OK;
}

/* The closing step: the rows assigned once more, to the final centroids (labels and inertia). */
static int emit(fold_iterq *q, void *ctx) {
  km *m = ctx;
  const double *cen = get(q, "centroids");
  double in = 0, d2;
  for (size_t i = 0; i < m->n; i++) {
    int j = nearest(m, cen, m->x + i * m->dim, &d2);
    if (m->labels) m->labels[i] = j;
    in += d2;
  }
  m->inertia = in;
  return fold_allreduce(&m->inertia, &m->inertia, 1, FOLD_FLOAT64, FOLD_SUM, fold_iterq_comm(q));
}

static int converged(fold_iterq *q, void *ctx) {
  km *m = ctx;
  return *get(q, "moved") <= m->tol;
}

/* ---- k-means++ seeding ----------------------------------------------------------------- */

/* splitmix64: a small, well-mixed generator whose sequence depends on the seed alone. */
static uint64_t next_u64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double next_unit(uint64_t *s) { return (double)(next_u64(s) >> 11) * 0x1p-53; }

/* Every rank draws the same numbers; the rank that holds the drawn row
 * broadcasts it. Per centroid: an allgather of each rank's sum of squared
 * distances and a broadcast of the row. */
static int seed_pp(fold_comm *c, const km *m, uint64_t total, double *cen) {
  int size = fold_comm_size(c), rank = fold_comm_rank(c);
  uint64_t rng = m->p->seed, start;
  fold_partition(total, rank, size, &start, NULL);
  double *d2 = malloc((m->n ? m->n : 1) * sizeof *d2), *sums = malloc((size_t)size * sizeof *sums);
  int rc = (d2 && sums) ? FOLD_OK : fold__error(c, FOLD_ENOMEM, "fold_kmeans: rank %d: out of memory", rank);
  for (size_t i = 0; i < m->n; i++) d2[i] = INFINITY;
  for (int j = 0; j < m->k && rc == FOLD_OK; j++) {
    double *cj = cen + (size_t)j * m->dim;
    int owner = 0;
    size_t row = 0;
    if (j == 0) { /* uniform: row g of the whole data set */
      uint64_t g = (uint64_t)(next_unit(&rng) * (double)total);
      if (g >= total) g = total - 1;
      for (owner = 0; owner < size; owner++) {
        uint64_t s, n;
        fold_partition(total, owner, size, &s, &n);
        if (g < s + n) {
          row = (size_t)(g - s);
          break;
        }
      }
    } else {
      double mine = 0;
      for (size_t i = 0; i < m->n; i++) mine += d2[i];
      rc = fold_allgather(&mine, sums, 1, FOLD_FLOAT64, c);
      if (rc < 0) break;
      double all = 0;
      for (int r = 0; r < size; r++) all += sums[r];
      double u = next_unit(&rng) * all;
      owner = -1;
      for (int r = 0; r < size; r++) { /* the last rank with a positive sum takes what rounding leaves */
        if (sums[r] > 0) owner = r;
        if (sums[r] > 0 && u < sums[r]) break;
        u -= sums[r];
      }
      if (owner < 0) owner = 0; /* every row is a centroid already: repeat one */
      if (owner == rank) {
        row = m->n ? m->n - 1 : 0;
        for (size_t i = 0; i < m->n; i++) {
          if (d2[i] > 0 && u < d2[i]) {
            row = i;
            break;
          }
          u -= d2[i];
        }
      }
    }
    if (owner == rank) memcpy(cj, m->x + row * m->dim, m->dim * sizeof *cj);
    rc = fold_broadcast(cj, m->dim, FOLD_FLOAT64, owner, c);
    for (size_t i = 0; rc == FOLD_OK && i < m->n; i++) {
      double d = 0;
      for (size_t t = 0; t < m->dim; t++) {
        double e = m->x[i * m->dim + t] - cj[t];
        d += e * e;
      }
      if (d < d2[i]) d2[i] = d;
    }
  }
  (void)start;
  free(d2);
  free(sums);
  return rc;
}

/* ---- the call ------------------------------------------------------------------------------ */

int fold_kmeans(fold_comm *comm, const double *x, size_t n_local, size_t dim, const fold_kmeans_params *p,
                double *centroids, int32_t *labels, double *inertia, int *n_iter) {
  if (comm == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_kmeans: communicator is NULL");
  fold_iterq *q = NULL;
  int rc = fold_iterq_create(comm, &q);
  if (rc < 0) return rc;
  int rank = fold_comm_rank(comm);
  km m = {.x = x, .n = n_local, .dim = dim, .p = p, .labels = labels};
  char text[FOLD__IQ_MSG] = "";
  int bad = FOLD_OK;
  /* Arguments first, agreed by every rank so that a bad one on a single rank stops all of them. */
  if (p == NULL || centroids == NULL || (x == NULL && n_local > 0) || dim == 0)
    bad = FOLD_EINVAL, fold__iq_text(text, sizeof text, "fold_kmeans: rank %d: %s", rank,
                                     p == NULL ? "params are NULL" : centroids == NULL ? "centroids is NULL"
                                     : dim == 0 ? "dim is 0" : "x is NULL with rows");
  else if (p->k < 1 || p->max_iter < 1 || !(p->tol >= 0))
    bad = FOLD_EINVAL, fold__iq_text(text, sizeof text, "fold_kmeans: rank %d: k = %d, max_iter = %d, tol = %g: need "
                                     "k >= 1, max_iter >= 1, tol >= 0", rank, p->k, p->max_iter, p->tol);
  else
    bad = fold__ml_check_finite(x, n_local, dim, rank, "fold_kmeans", text, sizeof text);
  int32_t unused = 0, v0 = 0;
  rc = fold__iq_agree(q, &bad, text, &unused, &v0);
  uint64_t total = n_local;
  if (rc == FOLD_OK) rc = fold_allreduce(&total, &total, 1, FOLD_UINT64, FOLD_SUM, comm);
  if (rc == FOLD_OK && (uint64_t)p->k > total)
    rc = fold__error(comm, FOLD_EINVAL, "fold_kmeans: rank %d: k = %d is more than the %llu rows", rank, p->k,
                     (unsigned long long)total);
  if (rc < 0) {
    fold_iterq_destroy(q);
    return rc;
  }
  m.k = p->k;
  m.tol = p->tol;
  size_t clen = (size_t)m.k * dim;
  if (p->init)
    memcpy(centroids, p->init, clen * sizeof *centroids);
  else
    rc = seed_pp(comm, &m, total, centroids);
  if (rc == FOLD_OK && p->checkpoint_dir) {
    /* A checkpoint's identity is what the queue holds before the run: the parameters that change the
     * result (max_iter aside: the queue refuses a checkpoint past it) and a digest of this rank's rows,
     * so that a checkpoint of another run is refused naming 'params' or 'data'. */
    uint64_t par[5] = {(uint64_t)p->k, (uint64_t)dim, 0, p->init == NULL, p->init == NULL ? p->seed : 0};
    memcpy(&par[2], &p->tol, sizeof p->tol);
    uint64_t d = fold__iq_fnv(FOLD__FNV_INIT, x, n_local * dim * sizeof *x);
    rc = fold_iterq_put(q, "params", par, 5, FOLD_UINT64);
    if (rc == FOLD_OK) rc = fold_iterq_put(q, "data", &d, 1, FOLD_UINT64);
    if (rc == FOLD_OK) rc = fold_iterq_set_checkpoint(q, p->checkpoint_dir, p->checkpoint_every);
  }
  if (rc == FOLD_OK) rc = fold_iterq_put(q, "centroids", centroids, clen, FOLD_FLOAT64);
  if (rc == FOLD_OK) rc = fold_iterq_add_compute(q, assign, &m);
  if (rc == FOLD_OK) rc = fold_iterq_add_allreduce(q, "sums", FOLD_SUM);
  if (rc == FOLD_OK) rc = fold_iterq_add_compute(q, move, &m);
  if (rc == FOLD_OK) rc = fold_iterq_set_stop(q, converged, &m);
  if (rc == FOLD_OK) rc = fold_iterq_set_max_iter(q, p->max_iter);
  if (rc == FOLD_OK) rc = fold_iterq_close_with(q, emit, &m);
  if (rc == FOLD_OK) rc = fold_iterq_run(q);
  if (rc == FOLD_OK) {
    memcpy(centroids, get(q, "centroids"), clen * sizeof *centroids);
    if (inertia) *inertia = m.inertia;
    if (n_iter) *n_iter = fold_iterq_iteration(q);
  }
  fold_iterq_destroy(q);
  return rc;
}
