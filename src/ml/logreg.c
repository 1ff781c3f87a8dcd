/* logreg.c — L2 logistic regression by distributed L-BFGS on the iterative queue: one evaluation per superstep. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold_ml.h"
#include "ml/ml.h"
#include "queue/iterq.h"

void fold_logreg_params_default(fold_logreg_params *p) {
  if (p == NULL) return;
  memset(p, 0, sizeof *p);
  p->C = 1.0;
  p->fit_intercept = 1;
  p->max_iter = 10000;
  p->gtol = 1e-8;
  p->history = 10;
  p->checkpoint_every = 10;
}

/* The optimiser's state lives in the session (a checkpoint holds all of it):
 *   "x" the accepted point (dim weights, then the intercept), "g" its
 *   gradient, "xt" the trial point, "dir" the search direction,
 *   "S", "Y" (history x P) and "rho" (history) the L-BFGS pairs,
 *   "eval" this rank's loss gradient and loss at xt (allreduced),
 *   "lb" the scalars below. */
enum { LB_PHASE, LB_ALPHA, LB_GTD, LB_FX, LB_GNORM, LB_COUNT, LB_HEAD, LB_ACCEPTED, LB_DONE, LB_STALLED, LB_N };

typedef struct lr {
  const double *x;
  const int32_t *y;
  size_t n, dim, P; /* P = dim + 1 */
  const fold_logreg_params *p;
  double *a; /* two-loop scratch, history values */
} lr;

static double *get(fold_iterq *q, const char *name) { return fold_iterq_get(q, name, NULL, NULL); }

/* log(1 + exp(-t)) without overflow. */
static double log1pexp_neg(double t) { return t > 0 ? log1p(exp(-t)) : -t + log1p(exp(t)); }

/* Step 1: C times this rank's loss and its gradient at the trial point. */
static int evaluate(fold_iterq *q, void *ctx) {
  lr *m = ctx;
  int rc = fold_iterq_put(q, "eval", NULL, m->P + 1, FOLD_FLOAT64);
  if (rc < 0) return rc;
  double *ev = get(q, "eval"), *xt = get(q, "xt"), loss = 0;
  for (size_t i = 0; i < m->n; i++) {
    const double *row = m->x + i * m->dim;
    double z = xt[m->dim];
    for (size_t j = 0; j < m->dim; j++) z += xt[j] * row[j];
    double s = m->y[i] ? 1.0 : -1.0, t = s * z;
    loss += log1pexp_neg(t);
    double d = -s / (1 + exp(t)); /* d loss / d z = -s * sigmoid(-t) */
    for (size_t j = 0; j < m->dim; j++) ev[j] += d * row[j];
    ev[m->dim] += d;
  }
  ev[m->P] = loss;
  for (size_t j = 0; j <= m->P; j++) ev[j] *= m->p->C;
  return FOLD_OK;
}

static double dot(const double *a, const double *b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

/* The next direction from x's gradient (two-loop recursion), and the first trial point on it. */
static void direct(fold_iterq *q, lr *m, double *lb) {
  size_t P = m->P;
  int h = m->p->history, cnt = (int)lb[LB_COUNT], head = (int)lb[LB_HEAD];
  double *x = get(q, "x"), *g = get(q, "g"), *d = get(q, "dir"), *xt = get(q, "xt");
  double *S = get(q, "S"), *Y = get(q, "Y"), *rho = get(q, "rho");
  double gn = 0;
  for (size_t j = 0; j < P; j++) gn = fmax(gn, fabs(g[j]));
  lb[LB_GNORM] = gn;
  if (gn <= m->p->gtol) {
    lb[LB_DONE] = 1;
    return;
  }
  for (size_t j = 0; j < P; j++) d[j] = g[j];
  for (int k = 0; k < cnt; k++) { /* newest to oldest */
    int i = ((head - 1 - k) % h + h) % h;
    m->a[i] = rho[i] * dot(S + (size_t)i * P, d, P);
    for (size_t j = 0; j < P; j++) d[j] -= m->a[i] * Y[(size_t)i * P + j];
  }
  if (cnt > 0) {
    int i = ((head - 1) % h + h) % h;
    double *yi = Y + (size_t)i * P, gamma = 1 / (rho[i] * dot(yi, yi, P));
    for (size_t j = 0; j < P; j++) d[j] *= gamma;
  }
  for (int k = cnt - 1; k >= 0; k--) { /* oldest to newest */
    int i = ((head - 1 - k) % h + h) % h;
    double b = rho[i] * dot(Y + (size_t)i * P, d, P);
    for (size_t j = 0; j < P; j++) d[j] += (m->a[i] - b) * S[(size_t)i * P + j];
  }
  for (size_t j = 0; j < P; j++) d[j] = -d[j];
  if (!m->p->fit_intercept) d[m->dim] = 0;
  double gtd = dot(g, d, P);
  if (!(gtd < 0)) { /* not a descent direction: forget the history */
    lb[LB_COUNT] = lb[LB_HEAD] = 0;
    for (size_t j = 0; j < P; j++) d[j] = -g[j];
    gtd = -dot(g, g, P);
    cnt = 0;
  }
  double alpha = 1;
  if (cnt == 0) alpha = fmin(1, 1 / sqrt(-gtd)); /* first step: unit length */
  lb[LB_ALPHA] = alpha;
  lb[LB_GTD] = gtd;
  for (size_t j = 0; j < P; j++) xt[j] = x[j] + alpha * d[j];
}

/* Step 3 (after the allreduce): accept the trial point or backtrack; every rank decides alike. */
static int update(fold_iterq *q, void *ctx) {
  lr *m = ctx;
  size_t P = m->P, dim = m->dim;
  double *lb = get(q, "lb"), *ev = get(q, "eval"), *xt = get(q, "xt"), *x = get(q, "x"), *g = get(q, "g");
  double ft = ev[P];
  for (size_t j = 0; j < dim; j++) {
    ev[j] += xt[j]; /* the regulariser's gradient; the intercept has none */
    ft += 0.5 * xt[j] * xt[j];
  }
  if (!m->p->fit_intercept) ev[dim] = 0;
  if (lb[LB_PHASE] == 0) { /* the starting point */
    memcpy(x, xt, P * sizeof *x);
    memcpy(g, ev, P * sizeof *g);
    lb[LB_FX] = ft;
    lb[LB_PHASE] = 1;
    direct(q, m, lb);
    return FOLD_OK;
  }
  double alpha = lb[LB_ALPHA], gtd = lb[LB_GTD], fx = lb[LB_FX];
  /* Accept on Armijo's sufficient decrease, or, near the optimum where a decrease of |g|^2 is below the
   * rounding of f, on Hager and Zhang's approximate Wolfe test: f no worse beyond rounding and the slope
   * along the direction shrunk to 0.9 of its size. Armijo alone stalls there (|g| ~ 1e-7 here). */
  double *d = get(q, "dir"), gtdt = dot(ev, d, P);
  int ok = isfinite(ft) && (ft <= fx + 1e-4 * alpha * gtd || (ft <= fx + 1e-12 * fabs(fx) && fabs(gtdt) <= 0.9 * fabs(gtd)));
  if (ok) { /* accept, learn the pair */
    int h = m->p->history, head = (int)lb[LB_HEAD];
    double *s = get(q, "S") + (size_t)head * P, *y = get(q, "Y") + (size_t)head * P;
    for (size_t j = 0; j < P; j++) {
      s[j] = xt[j] - x[j];
      y[j] = ev[j] - g[j];
    }
    double sy = dot(s, y, P);
    if (sy > 1e-12 * dot(y, y, P)) { /* keep only pairs of positive curvature */
      get(q, "rho")[head] = 1 / sy;
      lb[LB_HEAD] = (head + 1) % h;
      if (lb[LB_COUNT] < h) lb[LB_COUNT] += 1;
    }
    memcpy(x, xt, P * sizeof *x);
    memcpy(g, ev, P * sizeof *g);
    lb[LB_FX] = ft;
    lb[LB_ACCEPTED] += 1;
    direct(q, m, lb);
    return FOLD_OK;
  }
  /* Backtrack: the minimum of the quadratic through f(0), f'(0) and f(alpha), kept in [alpha/10, alpha/2]. */
  double na = 0.5 * alpha;
  if (isfinite(ft)) {
    double den = 2 * (ft - fx - gtd * alpha);
    if (den > 0) na = fmin(0.5 * alpha, fmax(0.1 * alpha, -gtd * alpha * alpha / den));
  }
  if (na < 1e-20) { /* no decrease representable: rounding has the last word */
    lb[LB_STALLED] = 1;
    return FOLD_OK;
  }
  lb[LB_ALPHA] = na;
  for (size_t j = 0; j < P; j++) xt[j] = x[j] + na * d[j];
  return FOLD_OK;
}

static int finished(fold_iterq *q, void *ctx) {
  (void)ctx;
  double *lb = get(q, "lb");
  return lb[LB_DONE] != 0 || lb[LB_STALLED] != 0;
}

int fold_logreg(fold_comm *comm, const double *x, const int32_t *y, size_t n_local, size_t dim,
                const fold_logreg_params *p, double *coef, double *intercept, int *n_iter) {
  if (comm == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_logreg: communicator is NULL");
  fold_iterq *q = NULL;
  int rc = fold_iterq_create(comm, &q);
  if (rc < 0) return rc;
  int rank = fold_comm_rank(comm);
  char text[FOLD__IQ_MSG] = "";
  int bad = FOLD_OK;
  if (p == NULL || coef == NULL || ((x == NULL || y == NULL) && n_local > 0) || dim == 0)
    bad = FOLD_EINVAL, fold__iq_text(text, sizeof text, "fold_logreg: rank %d: %s", rank,
                                     p == NULL ? "params are NULL" : coef == NULL ? "coef is NULL"
                                     : dim == 0 ? "dim is 0" : "x or y is NULL with rows");
  else if (!(p->C > 0) || p->max_iter < 1 || !(p->gtol >= 0) || p->history < 1 || p->history > 100)
    bad = FOLD_EINVAL, fold__iq_text(text, sizeof text, "fold_logreg: rank %d: C = %g, max_iter = %d, gtol = %g, "
                                     "history = %d: need C > 0, max_iter >= 1, gtol >= 0, history in 1..100", rank, p->C,
                                     p->max_iter, p->gtol, p->history);
  else
    bad = fold__ml_check_finite(x, n_local, dim, rank, "fold_logreg", text, sizeof text);
  for (size_t i = 0; bad == FOLD_OK && i < n_local; i++)
    if (y[i] != 0 && y[i] != 1)
      bad = FOLD_EINVAL, fold__iq_text(text, sizeof text, "fold_logreg: rank %d: label of row %zu is %d, not 0 or 1",
                                       rank, i, (int)y[i]);
  int32_t a = 0, b = 0;
  rc = fold__iq_agree(q, &bad, text, &a, &b);
  if (rc < 0) {
    fold_iterq_destroy(q);
    return rc;
  }
  lr m = {.x = x, .y = y, .n = n_local, .dim = dim, .P = dim + 1, .p = p};
  size_t P = m.P, h = (size_t)p->history;
  m.a = calloc(h, sizeof *m.a);
  if (m.a == NULL) rc = fold__error(comm, FOLD_ENOMEM, "fold_logreg: rank %d: out of memory", rank);
  if (rc == FOLD_OK && p->checkpoint_dir) {
    /* A checkpoint's identity is what the queue holds before the run: the parameters that change the
     * result (max_iter aside: the queue refuses a checkpoint past it) and a digest of this rank's rows
     * and labels, so that a checkpoint of another run is refused naming 'params' or 'data'. */
    double par[4] = {p->C, (double)p->fit_intercept, p->gtol, (double)p->history};
    uint64_t d = fold__iq_fnv(FOLD__FNV_INIT, x, n_local * dim * sizeof *x);
    d = fold__iq_fnv(d, y, n_local * sizeof *y);
    rc = fold_iterq_put(q, "params", par, 4, FOLD_FLOAT64);
    if (rc == FOLD_OK) rc = fold_iterq_put(q, "data", &d, 1, FOLD_UINT64);
    if (rc == FOLD_OK) rc = fold_iterq_set_checkpoint(q, p->checkpoint_dir, p->checkpoint_every);
  }
  const char *vec[] = {"x", "g", "xt", "dir"};
  for (int i = 0; i < 4 && rc == FOLD_OK; i++) rc = fold_iterq_put(q, vec[i], NULL, P, FOLD_FLOAT64);
  if (rc == FOLD_OK) rc = fold_iterq_put(q, "S", NULL, h * P, FOLD_FLOAT64);
  if (rc == FOLD_OK) rc = fold_iterq_put(q, "Y", NULL, h * P, FOLD_FLOAT64);
  if (rc == FOLD_OK) rc = fold_iterq_put(q, "rho", NULL, h, FOLD_FLOAT64);
  if (rc == FOLD_OK) rc = fold_iterq_put(q, "lb", NULL, LB_N, FOLD_FLOAT64);
  if (rc == FOLD_OK) rc = fold_iterq_add_compute(q, evaluate, &m);
  if (rc == FOLD_OK) rc = fold_iterq_add_allreduce(q, "eval", FOLD_SUM);
  if (rc == FOLD_OK) rc = fold_iterq_add_compute(q, update, &m);
  if (rc == FOLD_OK) rc = fold_iterq_set_stop(q, finished, &m);
  if (rc == FOLD_OK) rc = fold_iterq_set_max_iter(q, p->max_iter);
  if (rc == FOLD_OK) rc = fold_iterq_run(q);
  if (rc == FOLD_OK) {
    double *xs = get(q, "x"), *lb = get(q, "lb");
    memcpy(coef, xs, dim * sizeof *coef);
    if (intercept) *intercept = p->fit_intercept ? xs[dim] : 0;
    if (n_iter) *n_iter = (int)lb[LB_ACCEPTED];
    if (lb[LB_DONE] == 0) /* every rank holds the same lb: all fail alike */
      rc = fold__error(comm, FOLD_EINVAL, "fold_logreg: rank %d: not converged: max |gradient| %g > gtol %g after %d "
                       "evaluations (%s)", rank, lb[LB_GNORM], p->gtol, fold_iterq_iteration(q),
                       lb[LB_STALLED] ? "the line search found no decrease" : "max_iter reached");
  }
  free(m.a);
  fold_iterq_destroy(q);
  return rc;
}
