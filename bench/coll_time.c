/* coll_time.c — time allreduce at a few sizes, with and without the mismatch check, in one run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fold.h"

/* Usage (under a launcher): fold-colltime [iterations]
 * Makes two communicators in turn — one with the signature exchange
 * (default), one with FOLD_NO_MISMATCH_CHECK=1 — and for each size runs
 * the two alternately (A B, B A, ...), so that noise and order hit both alike.
 * Prints the median over rounds of the mean time per allreduce (rank 0's
 * clock, after a barrier) and the relative cost of the check. */

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 200;
  fold_comm *c[2];
  /* store rounds are counted per process, so both inits meet in turn */
  if (fold_init(&c[0]) != FOLD_OK) { fprintf(stderr, "%s\n", fold_comm_last_error(NULL)); return 1; }
  setenv("FOLD_NO_MISMATCH_CHECK", "1", 1);
  if (fold_init(&c[1]) != FOLD_OK) { fprintf(stderr, "%s\n", fold_comm_last_error(NULL)); return 1; }
  int me = fold_comm_rank(c[0]), n = fold_comm_size(c[0]);
  const size_t sizes[] = {8, 4096, 65536, 1 << 20, 16 << 20};
  float *buf = calloc((16 << 20) / 4, 4);
  if (me == 0) printf("allreduce float32 sum, n = %d, %d iterations x 7 rounds\n%10s %14s %14s %8s\n", n, iters, "bytes",
                      "checked (us)", "unchecked (us)", "cost");
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    size_t count = sizes[si] / 4;
    int it = sizes[si] >= (1 << 20) ? (iters / 10 > 5 ? iters / 10 : 5) : iters;
    enum { ROUNDS = 7 };
    double t[2][ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
      for (int j = 0; j < 2; j++) {
        int k = (j + r) % 2; /* alternate which goes first, so order cannot bias one side */
        fold_allreduce(buf, buf, count, FOLD_FLOAT32, FOLD_SUM, c[k]); /* warm */
        fold_barrier(c[k]);
        double t0 = now();
        for (int i = 0; i < it; i++)
          if (fold_allreduce(buf, buf, count, FOLD_FLOAT32, FOLD_SUM, c[k]) != FOLD_OK) {
            fprintf(stderr, "rank %d: %s\n", me, fold_comm_last_error(c[k]));
            return 1;
          }
        t[k][r] = (now() - t0) / it;
      }
    qsort(t[0], ROUNDS, sizeof(double), cmp);
    qsort(t[1], ROUNDS, sizeof(double), cmp);
    double a = t[0][ROUNDS / 2], b = t[1][ROUNDS / 2];
    if (me == 0) printf("%10zu %14.2f %14.2f %+7.1f%%\n", sizes[si], a * 1e6, b * 1e6, (a / b - 1) * 100);
  }
  fold_comm_destroy(c[1]);
  fold_comm_destroy(c[0]);
  free(buf);
  return 0;
}
