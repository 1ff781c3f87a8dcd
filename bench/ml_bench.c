/* ml_bench.c — fold_kmeans and fold_logreg on synthetic data for docs/iterq.md (run under foldrun; bench/ml_bench.sh). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fold.h"
#include "fold_ml.h"

/* The data is a function of the global row index, so every rank count sees the same rows and
 * bench/ml_sklearn.py builds the same ones with numpy: splitmix64 of (row * dim + column). */
static uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double unit(uint64_t z) { return (double)(mix(z) >> 11) * 0x1p-53; }

/* Row i: blob i % k (centre coordinates uniform in [0, 10)) plus noise, a sum of four uniforms. */
static double value(uint64_t i, uint64_t j, uint64_t dim, uint64_t k) {
  uint64_t c = i % k, base = i * dim + j;
  double noise = unit(4 * base) + unit(4 * base + 1) + unit(4 * base + 2) + unit(4 * base + 3) - 2;
  return 10 * unit((1ull << 62) + c * dim + j) + 1.5 * noise;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct stats {
  int rank, n;
  double sum, ar;
} stats;

static void on_step(const fold_kmeans_step *s, void *arg) {
  stats *st = arg;
  if (s->iter == 1) return; /* the first superstep includes page faults of the buffers */
  st->n++;
  st->sum += s->seconds;
  st->ar += s->allreduce_seconds;
}

int main(int argc, char **argv) {
  if (argc < 3 || (argc < 4 && strcmp(argv[1], "exchange") != 0)) {
    fprintf(stderr, "usage: ml_bench kmeans ROWS DIM K ITERS | ml_bench logreg ROWS DIM | ml_bench exchange REPS\n");
    return 2;
  }
  fold_comm *c;
  if (fold_init(&c) != FOLD_OK) return 1;
  int rank = fold_comm_rank(c), size = fold_comm_size(c);
  if (strcmp(argv[1], "exchange") == 0) { /* the queue's per-superstep status exchange alone */
    int reps = atoi(argv[2]);
    fold_int32_int32 v[3];
    double t0 = 0;
    for (int r = -100; r < reps; r++) {
      if (r == 0) t0 = now();
      for (int i = 0; i < 3; i++) v[i] = (fold_int32_int32){rank, rank};
      if (fold_allreduce(v, v, 3, FOLD_INT32_INT32, FOLD_MINLOC, c) != FOLD_OK || v[0].value != 0) {
        fprintf(stderr, "exchange: %s\n", fold_comm_last_error(c));
        return 1;
      }
    }
    if (rank == 0) printf("exchange: %d ranks, %.2f us per superstep\n", size, (now() - t0) / reps * 1e6);
    /* KMeans' buffer at k = 16, dim = 32 (16 x 33 sums and counts + the inertia) by the queue's `direct`, alone */
    double buf[529];
    fold_comm_set_algo(c, "allreduce=direct");
    for (int r = -100; r < reps; r++) {
      if (r == 0) t0 = now();
      for (int i = 0; i < 529; i++) buf[i] = rank + i;
      if (fold_allreduce(buf, buf, 529, FOLD_FLOAT64, FOLD_SUM, c) != FOLD_OK) return 1;
    }
    if (rank == 0) printf("direct allreduce of 529 doubles: %d ranks, %.2f us\n", size, (now() - t0) / reps * 1e6);
    fold_comm_destroy(c);
    return 0;
  }
  uint64_t rows = strtoull(argv[2], NULL, 10), dim = strtoull(argv[3], NULL, 10), k = 16, start, n;
  int kmeans = strcmp(argv[1], "kmeans") == 0;
  if (kmeans && argc > 4) k = strtoull(argv[4], NULL, 10);
  fold_partition(rows, rank, size, &start, &n);
  double *x = malloc(n * dim * sizeof *x);
  int32_t *y = malloc(n * sizeof *y);
  for (uint64_t i = 0; i < n; i++) {
    double z = 0;
    for (uint64_t j = 0; j < dim; j++) {
      x[i * dim + j] = value(start + i, j, dim, k);
      z += (x[i * dim + j] - 5) * (j % 2 ? 1 : -1) / sqrt((double)dim);
    }
    y[i] = z + 2 * (unit((1ull << 61) + start + i) - 0.5) > 0; /* a noisy linear rule: not separable */
  }
  int rc;
  double t0 = now();
  if (kmeans) {
    int iters = argc > 5 ? atoi(argv[5]) : 10;
    double *init = malloc(k * dim * sizeof *init), *cen = malloc(k * dim * sizeof *cen), inertia;
    for (uint64_t j = 0; j < k; j++) /* rows j * rows / k: one of each blob only by chance */
      for (uint64_t t = 0; t < dim; t++) init[j * dim + t] = value(j * (rows / k) + j / 3, t, dim, k);
    fold_kmeans_params p;
    fold_kmeans_params_default(&p);
    stats st = {.rank = rank};
    p.k = (int)k;
    p.max_iter = iters;
    p.init = init;
    p.progress = on_step;
    p.progress_arg = &st;
    int got;
    rc = fold_kmeans(c, x, n, dim, &p, cen, NULL, &inertia, &got);
    double t = now() - t0;
    if (rank == 0 && rc == FOLD_OK)
      printf("kmeans: %d ranks, %llu x %llu, k %llu: %d supersteps in %.3f s; per superstep (2..) %.2f ms, allreduce %.3f ms "
             "(%.1f%%); inertia %.6f\n", size, (unsigned long long)rows, (unsigned long long)dim, (unsigned long long)k,
             got, t, st.sum / st.n * 1e3, st.ar / st.n * 1e3, 100 * st.ar / st.sum, inertia);
    free(init);
    free(cen);
  } else {
    fold_logreg_params p;
    fold_logreg_params_default(&p);
    p.gtol = 1e-6;
    double *w = calloc(dim, sizeof *w), b;
    int steps;
    rc = fold_logreg(c, x, y, n, dim, &p, w, &b, &steps);
    double t = now() - t0;
    if (rank == 0 && rc == FOLD_OK)
      printf("logreg: %d ranks, %llu x %llu: %d L-BFGS steps in %.3f s; w[0] %.9f, b %.9f\n", size,
             (unsigned long long)rows, (unsigned long long)dim, steps, t, w[0], b);
    free(w);
  }
  if (rc != FOLD_OK) fprintf(stderr, "rank %d: %s\n", rank, fold_comm_last_error(c));
  free(x);
  free(y);
  fold_comm_destroy(c);
  return rc != FOLD_OK;
}
