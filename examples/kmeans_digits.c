/* kmeans_digits.c — the demo: KMeans (k = 10) on scikit-learn's digits, each rank on its block of rows, printed per superstep. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fold.h"
#include "fold_ml.h"
#include "ml_csv.h"

/* Usage: kmeans_digits DATA.csv[.gz] [K] [OUT]   (run it under foldrun -n N; OUT gets the model for ml_ref.py --compare) */

static void on_step(const fold_kmeans_step *s, void *arg) {
  if (*(int *)arg != 0) return;
  printf("superstep %3d  moved %10.6f  inertia %14.3f  %7.3f ms (allreduce %6.3f ms)\n", s->iter, s->moved, s->inertia,
         s->seconds * 1e3, s->allreduce_seconds * 1e3);
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: kmeans_digits DATA.csv[.gz] [K] [OUT]\n");
    return 2;
  }
  int k = argc > 2 ? atoi(argv[2]) : 10;
  ml_data d;
  if (ml_csv_load(argv[1], &d) != 0) return 1;
  fold_comm *c;
  if (fold_init(&c) != FOLD_OK) {
    fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
    return 1;
  }
  int rank = fold_comm_rank(c), size = fold_comm_size(c);
  uint64_t start, n;
  fold_partition(d.n, rank, size, &start, &n);
  /* Initial centroids: the mean of each of k blocks of consecutive rows (ml_ref.py uses the same). */
  double *init = calloc((size_t)k * d.dim, sizeof *init), *cen = malloc((size_t)k * d.dim * sizeof *cen);
  for (int j = 0; j < k; j++) {
    size_t a = (size_t)j * d.n / (size_t)k, b = (size_t)(j + 1) * d.n / (size_t)k;
    for (size_t i = a; i < b; i++)
      for (size_t t = 0; t < d.dim; t++) init[(size_t)j * d.dim + t] += d.x[i * d.dim + t] / (double)(b - a);
  }
  if (rank == 0)
    printf("KMeans on %s: %zu rows x %zu, k = %d, %d ranks (rank 0 has rows %llu..%llu)\n", argv[1], d.n, d.dim, k, size,
           (unsigned long long)start, (unsigned long long)(start + n - 1));
  fold_kmeans_params p;
  fold_kmeans_params_default(&p);
  p.k = k;
  p.init = init;
  p.progress = on_step;
  p.progress_arg = &rank;
  int32_t *lab = calloc(d.n, sizeof *lab);
  double inertia;
  struct timespec t0, t1; /* fold's whole fit, as ml_ref.py times scikit-learn's */
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int iters, rc = fold_kmeans(c, d.x + start * d.dim, n, d.dim, &p, cen, lab + start, &inertia, &iters);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  if (rc == FOLD_OK) rc = fold_allreduce(lab, lab, d.n, FOLD_INT32, FOLD_SUM, c); /* every rank's labels to all */
  if (rc != FOLD_OK) {
    fprintf(stderr, "rank %d: %s\n", rank, fold_comm_last_error(c));
    return 1;
  }
  if (rank == 0) {
    printf("converged after %d supersteps: inertia %.6f, %.1f ms in all\n", iters, inertia, seconds * 1e3);
    if (argc > 3) {
      FILE *o = fopen(argv[3], "w");
      fprintf(o, "inertia %.17g\ncentroids %d %zu\n", inertia, k, d.dim);
      for (size_t i = 0; i < (size_t)k * d.dim; i++) fprintf(o, "%.17g ", cen[i]);
      fprintf(o, "\nlabels %zu\n", d.n);
      for (size_t i = 0; i < d.n; i++) fprintf(o, "%d ", lab[i]);
      fprintf(o, "\nseconds %.9g\n", seconds);
      fclose(o);
    }
  }
  free(init);
  free(cen);
  free(lab);
  ml_csv_free(&d);
  fold_comm_destroy(c);
  return 0;
}
