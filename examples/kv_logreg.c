/* kv_logreg.c — logistic regression trained by minibatch SGD through a dist_sync key-value store: workers push gradients, servers apply the built-in sgd optimizer.
 *
 * Usage: FOLD_KV_SERVERS=S foldrun -n N kv_logreg CSV [STEPS [BATCH]]
 *   (default 300 steps of 64 rows; sgd lr=0.5 momentum=0.9 on standardised
 *   features). The last S ranks serve; the N - S workers split each
 *   minibatch by row (row i to worker i mod W). After training, worker 0
 *   trains the same model alone, step for step, with the update rule
 *   written out here, and compares: the example exits 0 only if the
 *   training accuracy is the same (and above 0.95) and no weight differs
 *   by more than 1e-9 (the two sum the gradient in different orders,
 *   nothing else differs).
 * The weights live under a string key ("logreg.weights"), the bias under
 * the integer key 0: both kinds of key in one push. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "ml_csv.h"

#define LR 0.5
#define MOMENTUM 0.9

static double predict(const ml_data *d, size_t i, const double *w, double b) {
  double z = b;
  for (size_t j = 0; j < d->dim; j++) z += d->x[i * d->dim + j] * w[j];
  return 1.0 / (1.0 + exp(-z));
}

/* The gradient of the mean log-loss over the batch's rows that belong to
 * `part` of `parts`, divided by the whole batch's size (so that the parts
 * sum to the batch's mean gradient). */
static void gradient(const ml_data *d, size_t first, size_t batch, int part, int parts, const double *w, double b,
                     double *gw, double *gb) {
  memset(gw, 0, d->dim * sizeof *gw);
  *gb = 0;
  for (size_t k = 0; k < batch; k++) {
    size_t i = (first + k) % d->n;
    if ((int)(i % (size_t)parts) != part) continue;
    double e = (predict(d, i, w, b) - (double)d->y[i]) / (double)batch;
    for (size_t j = 0; j < d->dim; j++) gw[j] += e * d->x[i * d->dim + j];
    *gb += e;
  }
}

static double accuracy(const ml_data *d, const double *w, double b) {
  size_t right = 0;
  for (size_t i = 0; i < d->n; i++) right += (predict(d, i, w, b) >= 0.5) == (d->y[i] == 1);
  return (double)right / (double)d->n;
}

/* Single-process training with MXNet's momentum rule, for the comparison. */
static void train_alone(const ml_data *d, int steps, size_t batch, double *w, double *b) {
  double *gw = calloc(d->dim, sizeof *gw), *mw = calloc(d->dim, sizeof *mw), gb, mb = 0;
  memset(w, 0, d->dim * sizeof *w);
  *b = 0;
  for (int s = 0; s < steps; s++) {
    gradient(d, (size_t)s * batch, batch, 0, 1, w, *b, gw, &gb);
    for (size_t j = 0; j < d->dim; j++) {
      mw[j] = MOMENTUM * mw[j] - LR * gw[j];
      w[j] += mw[j];
    }
    mb = MOMENTUM * mb - LR * gb;
    *b += mb;
  }
  free(gw);
  free(mw);
}

static int fail(fold_comm *c, const char *what, int rc) {
  fprintf(stderr, "kv_logreg: rank %d: %s: %s (%s)\n", fold_comm_rank(c), what, fold_strerror(rc),
          fold_comm_last_error(c));
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: FOLD_KV_SERVERS=S foldrun -n N kv_logreg CSV [STEPS [BATCH]]\n");
    return 2;
  }
  int steps = argc > 2 ? atoi(argv[2]) : 300;
  size_t batch = argc > 3 ? (size_t)atol(argv[3]) : 64;
  fold_comm *c;
  int rc = fold_init(&c);
  if (rc != FOLD_OK) {
    fprintf(stderr, "kv_logreg: fold_init: %s\n", fold_comm_last_error(NULL));
    return 1;
  }
  fold_kv *kv;
  if ((rc = fold_kv_create(c, "dist_sync", &kv)) != FOLD_OK) return fail(c, "fold_kv_create", rc);
  if (fold_kv_role(kv) == FOLD_KV_SERVER) {
    rc = fold_kv_serve(kv);
    if (rc != FOLD_OK) fail(c, "fold_kv_serve", rc);
    int rc2 = fold_kv_destroy(kv);
    if (rc2 != FOLD_OK) fail(c, "fold_kv_destroy", rc2);
    /* leave together, workers and servers: an early version of the store
     * failed a server still serving when another server had already
     * exited (tcp; docs/kvstore.md), and nothing is lost by waiting */
    if (rc == FOLD_OK && rc2 == FOLD_OK) rc = fold_barrier(c);
    fold_comm_destroy(c);
    return rc != FOLD_OK || rc2 != FOLD_OK;
  }
  /* workers are ranks 0 .. W-1 */
  const char *env = getenv("FOLD_KV_SERVERS");
  int servers = env ? atoi(env) : 1, rank = fold_comm_rank(c), workers = fold_comm_size(c) - servers;
  ml_data d;
  if (ml_csv_load(argv[1], &d) != 0) return 1;
  ml_standardize(&d);
  double *w = calloc(d.dim, sizeof *w), *gw = calloc(d.dim, sizeof *gw), b = 0, gb;
  int64_t keys[2] = {0, 0};
  if ((rc = fold_kv_key(kv, "logreg.weights", &keys[0])) != FOLD_OK) return fail(c, "fold_kv_key", rc);
  if ((rc = fold_kv_init(kv, keys[0], w, d.dim, FOLD_FLOAT64)) != FOLD_OK ||
      (rc = fold_kv_init(kv, keys[1], &b, 1, FOLD_FLOAT64)) != FOLD_OK)
    return fail(c, "fold_kv_init", rc);
  char spec[64];
  snprintf(spec, sizeof spec, "sgd lr=%g momentum=%g", LR, MOMENTUM);
  if ((rc = fold_kv_set_optimizer(kv, spec)) != FOLD_OK) return fail(c, "fold_kv_set_optimizer", rc);
  const void *vals[2] = {gw, &gb};
  void *outs[2] = {w, &b};
  for (int s = 0; s < steps; s++) {
    gradient(&d, (size_t)s * batch, batch, rank, workers, w, b, gw, &gb);
    if ((rc = fold_kv_push(kv, 2, keys, vals, 0)) != FOLD_OK) return fail(c, "fold_kv_push", rc);
    if ((rc = fold_kv_pull(kv, 2, keys, outs, 0)) != FOLD_OK) return fail(c, "fold_kv_pull", rc);
    if ((rc = fold_kv_wait(kv)) != FOLD_OK) return fail(c, "fold_kv_wait", rc);
  }
  int status = 0;
  if (rank == 0) {
    double *rw = calloc(d.dim, sizeof *rw), rb;
    train_alone(&d, steps, batch, rw, &rb);
    double diff = fabs(b - rb);
    for (size_t j = 0; j < d.dim; j++) diff = fmax(diff, fabs(w[j] - rw[j]));
    double acc = accuracy(&d, w, b), racc = accuracy(&d, rw, rb);
    printf("kv_logreg: %s, %zu rows x %zu, %d steps of %zu rows, %d workers + %d servers (dist_sync, %s)\n",
           argv[1], d.n, d.dim, steps, batch, workers, servers, spec);
    printf("kv_logreg: training accuracy %.4f through the store, %.4f alone; largest weight difference %.3g\n", acc,
           racc, diff);
    status = acc == racc && diff <= 1e-9 && acc > 0.95 ? 0 : 1;
    if (status) printf("kv_logreg: FAILED: the store's training differs from training alone\n");
    free(rw);
  }
  if ((rc = fold_kv_destroy(kv)) != FOLD_OK) return fail(c, "fold_kv_destroy", rc);
  if ((rc = fold_barrier(c)) != FOLD_OK) return fail(c, "fold_barrier", rc);
  free(w);
  free(gw);
  ml_csv_free(&d);
  fold_comm_destroy(c);
  return status;
}
