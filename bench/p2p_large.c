/* p2p_large.c — blocking ping-pong of large user messages between ranks 0 and 1: what a large send's completion costs.
 *
 * Sizes: 64 KiB + 1 (the smallest message whose send waits for the
 * receiver's answer, docs/p2p.md), 1 MiB, 16 MiB. Per size: one warm-up
 * repeat, then 7 repeats of n round trips (fold_send then fold_recv on
 * rank 0, the reverse on rank 1); printed on rank 0: size and the median
 * one-way time in microseconds. Run: foldrun -n 2 --transport shm
 * build/bench/fold-p2plarge; compare two builds by running them in
 * interleaved pairs (docs/p2p.md). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fold.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  fold_comm *c;
  int rc = fold_init(&c);
  if (rc) {
    fprintf(stderr, "p2p_large: fold_init: %s\n", fold_strerror(rc));
    return 1;
  }
  int me = fold_comm_rank(c);
  if (fold_comm_size(c) != 2) {
    fprintf(stderr, "p2p_large: run with 2 ranks\n");
    fold_comm_destroy(c);
    return 1;
  }
  static const size_t sizes[] = {65537, 1u << 20, 16u << 20};
  static const int iters[] = {200, 40, 4};
  char *b = malloc(16u << 20);
  if (b == NULL)
    return 1;
  memset(b, 1, 16u << 20);
  for (int s = 0; s < 3; s++) {
    double rep[7];
    for (int r = -1; r < 7; r++) {
      if ((rc = fold_barrier(c)))
        break;
      double t0 = now_s();
      for (int i = 0; i < iters[s] && !rc; i++) {
        if (me == 0) {
          rc = fold_send(b, sizes[s], FOLD_UINT8, 1, 7, c);
          if (!rc)
            rc = fold_recv(b, sizes[s], FOLD_UINT8, 1, 7, c);
        } else {
          rc = fold_recv(b, sizes[s], FOLD_UINT8, 0, 7, c);
          if (!rc)
            rc = fold_send(b, sizes[s], FOLD_UINT8, 0, 7, c);
        }
      }
      if (rc)
        break;
      if (r >= 0)
        rep[r] = (now_s() - t0) / iters[s] / 2 * 1e6;
    }
    if (rc) {
      fprintf(stderr, "p2p_large: rank %d: %s (%s)\n", me, fold_strerror(rc), fold_comm_last_error(c));
      fold_comm_destroy(c);
      return 1;
    }
    qsort(rep, 7, sizeof *rep, cmp);
    if (me == 0)
      printf("%zu %.3f\n", sizes[s], rep[3]);
  }
  free(b);
  fold_comm_destroy(c);
  return 0;
}
