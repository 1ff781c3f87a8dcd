/* membw.c — memcpy bandwidth with 1..T threads, the unit of bench/compare's bound for a shared-memory allreduce.
 *
 * Usage: membw [-s MIB] [-t THREADS] [-r REPS]
 *   each thread copies its own MIB-MiB buffer (default 128, far above any
 *   cache) REPS times (default 5); for each thread count 1..THREADS (default
 *   2) one line on stdout:
 *     threads=K memcpy_GBps=X
 *   X = K * MIB MiB / (time of the slowest thread), best repetition, 1 GB =
 *   1e9 bytes. A memcpy of S bytes reads S and writes S; X counts S once, so
 *   "traffic / X" is a time in memcpy-equivalents, as the model wants.
 * Built by bench/compare: cc -O2 -pthread -o membw bench/membw.c
 * Other benchmarks measure in their own run by compiling this file with
 * -DMEMBW_NO_MAIN and calling membw_gbps (bench/kv_local.c). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct worker {
  pthread_t tid;
  char *src, *dst;
  size_t bytes;
  pthread_barrier_t *start;
  double secs;
} worker;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *run(void *arg) {
  worker *w = arg;
  pthread_barrier_wait(w->start); /* all threads copy at once: they share the memory bus */
  double t0 = now();
  memcpy(w->dst, w->src, w->bytes);
  w->secs = now() - t0;
  return NULL;
}

/* The best of reps memcpy bandwidths (GB/s as above) of k threads each
 * copying its own buffer of `bytes`; 0 if memory or threads ran out. */
double membw_gbps(size_t bytes, long k, long reps);
double membw_gbps(size_t bytes, long k, long reps) {
  worker *w = calloc((size_t)k, sizeof *w);
  double best = 0;
  long made = 0;
  pthread_barrier_t start;
  if (w == NULL) return 0;
  for (; made < k; made++) {
    w[made].src = malloc(bytes), w[made].dst = malloc(bytes), w[made].bytes = bytes;
    if (!w[made].src || !w[made].dst) goto out;
    memset(w[made].src, 1 + (int)made, bytes);
    memset(w[made].dst, 0, bytes);
  }
  pthread_barrier_init(&start, NULL, (unsigned)k);
  for (long r = 0; r < reps; r++) {
    for (long j = 0; j < k; j++) {
      w[j].start = &start;
      if (pthread_create(&w[j].tid, NULL, run, &w[j]) != 0) abort();
    }
    double slowest = 0;
    for (long j = 0; j < k; j++) {
      pthread_join(w[j].tid, NULL);
      if (w[j].secs > slowest) slowest = w[j].secs;
    }
    double gbps = (double)k * (double)bytes / slowest / 1e9;
    if (gbps > best) best = gbps;
  }
  pthread_barrier_destroy(&start);
out:
  for (long j = 0; j < k; j++) {
    free(w[j].src);
    free(w[j].dst);
  }
  free(w);
  return made == k ? best : 0;
}

#ifndef MEMBW_NO_MAIN
int main(int argc, char **argv) {
  long mib = 128, threads = 2, reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    long v = strtol(argv[i + 1], NULL, 10);
    if (strcmp(argv[i], "-s") == 0) mib = v;
    else if (strcmp(argv[i], "-t") == 0) threads = v;
    else if (strcmp(argv[i], "-r") == 0) reps = v;
    else mib = -1;
  }
  if (argc % 2 == 0 || mib < 1 || threads < 1 || threads > 64 || reps < 1) {
    fprintf(stderr, "usage: membw [-s MIB] [-t THREADS] [-r REPS]\n");
    return 2;
  }
  size_t bytes = (size_t)mib << 20;
  worker *w = calloc((size_t)threads, sizeof *w);
  if (w == NULL) return 1;
  for (long k = 0; k < threads; k++) {
    w[k].src = malloc(bytes), w[k].dst = malloc(bytes), w[k].bytes = bytes;
    if (!w[k].src || !w[k].dst) {
      fprintf(stderr, "membw: out of memory\n");
      return 1;
    }
    memset(w[k].src, 1 + (int)k, bytes); /* touch both: page faults are not bandwidth */
    memset(w[k].dst, 0, bytes);
  }
  for (long k = 1; k <= threads; k++) {
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)k);
    double best = 0;
    for (long r = 0; r < reps; r++) {
      for (long j = 0; j < k; j++) {
        w[j].start = &start;
        if (pthread_create(&w[j].tid, NULL, run, &w[j]) != 0) {
          fprintf(stderr, "membw: pthread_create failed\n");
          return 1;
        }
      }
      double slowest = 0;
      for (long j = 0; j < k; j++) {
        pthread_join(w[j].tid, NULL);
        if (w[j].secs > slowest) slowest = w[j].secs;
      }
      double gbps = (double)k * (double)bytes / slowest / 1e9;
      if (gbps > best) best = gbps;
    }
    pthread_barrier_destroy(&start);
    printf("threads=%ld memcpy_GBps=%.3f\n", k, best);
  }
  return 0;
}
#endif
