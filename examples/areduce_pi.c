/* areduce_pi.c — Monte Carlo pi with a partial asynchronous reduction: the target stops the run once the standard error is small enough. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fold.h"

#define SAMPLES 20000 /* per fragment */

static uint64_t next(uint64_t *s) { /* splitmix64 */
  uint64_t x = (*s += 0x9e3779b97f4a7c15ULL);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* One fragment: {hits inside the quarter circle, samples}. */
static void sample(uint64_t *s, int64_t frag[2]) {
  int64_t hits = 0;
  for (int i = 0; i < SAMPLES; i++) {
    double x = (double)(next(s) >> 11) * 0x1p-53, y = (double)(next(s) >> 11) * 0x1p-53;
    hits += x * x + y * y <= 1.0;
  }
  frag[0] = hits;
  frag[1] = SAMPLES;
}

/* pi's estimate and its standard error from {hits, samples}. */
static double estimate(const int64_t r[2], double *se) {
  double p = (double)r[0] / (double)r[1];
  *se = 4 * sqrt(p * (1 - p) / (double)r[1]);
  return 4 * p;
}

int main(int argc, char **argv) {
  double precision = argc > 1 ? atof(argv[1]) : 1e-3;
  fold_comm *c;
  if (fold_init(&c) != FOLD_OK) {
    fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
    return 1;
  }
  int rank = fold_comm_rank(c), size = fold_comm_size(c);
  fold_areduce *ar;
  /* partial mode: every rank hands its counts on every 2 ms */
  int rc = fold_areduce_create(c, 2, FOLD_INT64, FOLD_SUM, 0, 2, FOLD_AREDUCE_PARTIAL, 0.002, &ar);
  if (rc != FOLD_OK) {
    fprintf(stderr, "rank %d: %s\n", rank, fold_comm_last_error(c));
    return 1;
  }
  uint64_t seed = 12345 + (uint64_t)rank * 7919;
  int64_t frag[2], res[2] = {0, 1};
  uint64_t nf = 0;
  fold_request *stop = NULL;
  int8_t stop_msg = 0;
  if (rank != 0)
    rc = fold_irecv(&stop_msg, 1, FOLD_INT8, 0, 1, c, &stop);
  long mine = 0;
  for (int done = 0; rc == FOLD_OK && !done;) {
    sample(&seed, frag);
    mine++;
    rc = fold_areduce_contribute(ar, frag);
    if (rc != FOLD_OK) break;
    if (rank == 0) {
      /* the target: stop once the partial result is precise enough */
      int fin;
      rc = fold_areduce_result(ar, res, &nf, &fin);
      double se;
      if (rc == FOLD_OK && nf > 0) {
        estimate(res, &se);
        if (se < precision) {
          done = 1;
          for (int q = 1; q < size && rc == FOLD_OK; q++) rc = fold_send(&stop_msg, 1, FOLD_INT8, q, 1, c);
        }
      }
    } else {
      rc = fold_test(stop, &done);
    }
  }
  if (rc == FOLD_OK) rc = fold_areduce_done(ar);
  if (rc == FOLD_OK) rc = fold_areduce_wait(ar, res, &nf);
  if (rc != FOLD_OK) {
    fprintf(stderr, "rank %d: %s\n", rank, fold_comm_last_error(c));
    return 1;
  }
  int status = 0;
  if (rank == 0) {
    double se, pi = estimate(res, &se);
    printf("pi = %.6f +- %.6f (%llu fragments, %lld samples; rank 0 made %ld fragments)\n", pi, se,
           (unsigned long long)nf, (long long)res[1], mine);
    if (se >= precision || fabs(pi - M_PI) > 6 * se) {
      fprintf(stderr, "areduce_pi: the estimate is off: %.6f, error %.2g, standard error %.2g\n", pi, pi - M_PI, se);
      status = 1;
    }
  }
  fold_areduce_destroy(ar);
  fold_comm_destroy(c);
  return status;
}
