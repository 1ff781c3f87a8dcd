/* kv_local.c — the local store's sum (fold__kv_sum) of 8 buffers of 64 MiB float32 with 1 and 2 threads, against memcpy bandwidth measured in the same run.
 *
 * Usage: fold-kvlocal [-s MIB] [-n SOURCES] [-t THREADS] [-r REPS]
 *   defaults 64 MiB, 8 sources, threads 1..2, best of 5 repetitions.
 * Prints one table row per case:
 *   input GB/s    = SOURCES * MIB MiB / time (what the store consumes)
 *   traffic GB/s  = (SOURCES + 1) * MIB MiB / time (each source read once,
 *                   the sum written once: the least memory traffic)
 *   of memcpy     = traffic GB/s over memcpy's traffic (2 x membw's figure:
 *                   a copy reads and writes) with as many threads: how
 *                   close the sum runs to the memory bus.
 *   helpers       = the share of blocks the pool's helper threads summed
 *                   (the rest the caller did: a helper the machine did not
 *                   schedule in time takes none).
 * The "pairwise" row sums the same data the naive way, one whole-array
 * fold__op_reduce3 per source (7 passes over dst), for comparison. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kv/sum.h"
#include "op/op.h"

double membw_gbps(size_t bytes, long k, long reps); /* bench/membw.c */

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  long mib = 64, nsrc = 8, threads = 2, reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    long v = strtol(argv[i + 1], NULL, 10);
    if (strcmp(argv[i], "-s") == 0) mib = v;
    else if (strcmp(argv[i], "-n") == 0) nsrc = v;
    else if (strcmp(argv[i], "-t") == 0) threads = v;
    else if (strcmp(argv[i], "-r") == 0) reps = v;
    else mib = -1;
  }
  if (argc % 2 == 0 || mib < 1 || nsrc < 1 || nsrc > 64 || threads < 1 || threads > 64 || reps < 1) {
    fprintf(stderr, "usage: fold-kvlocal [-s MIB] [-n SOURCES] [-t THREADS] [-r REPS]\n");
    return 2;
  }
  size_t bytes = (size_t)mib << 20, count = bytes / sizeof(float);
  float *src[64], *dst = malloc(bytes);
  if (dst == NULL) return 1;
  for (long k = 0; k < nsrc; k++) {
    src[k] = malloc(bytes);
    if (src[k] == NULL) {
      fprintf(stderr, "fold-kvlocal: out of memory\n");
      return 1;
    }
    for (size_t i = 0; i < count; i++) src[k][i] = (float)((i + (size_t)k) % 1000) * 0.5f;
  }
  memset(dst, 0, bytes);
  double in = (double)nsrc * (double)bytes / 1e9, traffic = (double)(nsrc + 1) * (double)bytes / 1e9;

  printf("# fold-kvlocal: %ld sources x %ld MiB float32, best of %ld\n", nsrc, mib, reps);
  printf("%-22s %7s %9s %11s %13s %13s %9s %8s\n", "case", "threads", "time_ms", "input_GBps", "traffic_GBps",
         "memcpy_GBps", "of_memcpy", "helpers");
  for (long t = 1; t <= threads; t++) {
    double bw = membw_gbps(bytes, t, reps);
    fold__kv_pool *p = fold__kv_pool_create((int)t);
    if (p == NULL) {
      fprintf(stderr, "fold-kvlocal: %s\n", fold_comm_last_error(NULL));
      return 1;
    }
    double best = 1e30;
    size_t blocks = 0;
    for (long r = 0; r < reps; r++) {
      double t0 = now();
      blocks += (count + FOLD__KV_SUM_BLOCK - 1) / FOLD__KV_SUM_BLOCK;
      /* bound 0: every array counts as big, so the pool's threads all sum */
      if (fold__kv_sum(p, dst, (const void *const *)src, (int)nsrc, count, FOLD_FLOAT32, 0) != 0) return 1;
      double dt = now() - t0;
      if (dt < best) best = dt;
    }
    double helped = 100.0 * (double)fold__kv_pool_helper_blocks(p) / (double)blocks;
    fold__kv_pool_destroy(p);
    printf("%-22s %7ld %9.1f %11.2f %13.2f %13.2f %8.0f%% %7.0f%%\n", "fold__kv_sum", t, best * 1e3, in / best,
           traffic / best, 2 * bw, 100 * traffic / best / (2 * bw), helped);
    if (t == 1) {
      best = 1e30;
      for (long r = 0; r < reps; r++) {
        double t0 = now();
        fold__op_reduce3(NULL, FOLD_SUM, FOLD_FLOAT32, dst, src[0], src[1], count);
        for (long k = 2; k < nsrc; k++) fold__op_reduce3(NULL, FOLD_SUM, FOLD_FLOAT32, dst, dst, src[k], count);
        double dt = now() - t0;
        if (dt < best) best = dt;
      }
      printf("%-22s %7d %9.1f %11.2f %13.2f %13.2f %8.0f%%\n", "pairwise whole-array", 1, best * 1e3, in / best,
             traffic / best, 2 * bw, 100 * traffic / best / (2 * bw));
    }
  }
  for (long k = 0; k < nsrc; k++) free(src[k]);
  free(dst);
  return 0;
}
