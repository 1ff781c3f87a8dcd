/* kv_dist.c — the distributed key-value store under load: push+pull of ResNet-50's 161 arrays per iteration against fold_allreduce of the same data among the workers, and small-key operations per second.
 *
 * Usage: FOLD_KV_SERVERS=S foldrun -n N fold-kvdist [-i ITERS] [-w WARMUP]
 *            [-k SMALL_KEYS] [-b SMALL_BYTES] [-j SMALL_ITERS] [-l LINK_GBIT]
 *        foldrun -n W fold-kvdist -a 1 [-i ITERS] [-w WARMUP] [-l LINK_GBIT]
 *   defaults: 10 iterations after 2 warm-up ones, 10000 small keys of 1024
 *   bytes, 5 small-key rounds. The last S ranks serve, the others work.
 *   The model goes two ways: one fold_kv_pushpull of every key, and one
 *   call per key with priority -index (MXNet's order).
 *   -l: the links' rate in Gbit/s (e.g. 1 under tests/netns/netns_run.sh
 *   -r 1gbit): adds the link bound, 8 * model bytes / rate (each worker
 *   sends and receives the model once; with S = W each server's link
 *   carries as much), and each time's fraction of it.
 *   -d DIV: every array DIV times smaller (the tests' quick runs).
 *   -a 1: no store; the W ranks allreduce the same model, once per array
 *   and once as one buffer: the comparison, run as its own job so that
 *   idle server processes do not share the cores with it.
 * Rank 0 prints the table. Every pull is checked (the stored value after a
 * dist_sync round without an updater is the sum of the workers' pushes):
 * a wrong value fails the run. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fold.h"
#include "kv_resnet50.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int die(fold_comm *c, const char *what, int rc) {
  fprintf(stderr, "fold-kvdist: rank %d: %s: %s (%s)\n", fold_comm_rank(c), what, fold_strerror(rc),
          fold_comm_last_error(c));
  exit(1);
}
#define TRY(c, what, expr)                                                                              \
  do {                                                                                                  \
    int rc_ = (expr);                                                                                   \
    if (rc_ != FOLD_OK) die(c, what, rc_);                                                              \
  } while (0)

/* One store's run: nkeys keys of the given counts, pushpull of all per
 * round. Returns the mean seconds per round (workers; servers return 0). */
typedef struct round_stats {
  double mean, best;
} round_stats;

static round_stats store_rounds(fold_comm *c, int worker, int workers, int nkeys, const size_t *counts, int warmup,
                                int iters, int per_key) {
  round_stats st = {0, 0};
  fold_kv *kv;
  TRY(c, "fold_kv_create", fold_kv_create(c, "dist_sync", &kv));
  if (fold_kv_role(kv) == FOLD_KV_SERVER) {
    TRY(c, "fold_kv_serve", fold_kv_serve(kv));
    TRY(c, "fold_kv_destroy", fold_kv_destroy(kv));
    return st;
  }
  int64_t *keys = malloc((size_t)nkeys * sizeof *keys);
  float **vals = malloc((size_t)nkeys * sizeof *vals), **outs = malloc((size_t)nkeys * sizeof *outs);
  for (int k = 0; k < nkeys; k++) {
    keys[k] = k;
    vals[k] = malloc(counts[k] * sizeof(float));
    outs[k] = malloc(counts[k] * sizeof(float));
    for (size_t i = 0; i < counts[k]; i++) vals[k][i] = (float)(worker + 1);
    memset(outs[k], 0, counts[k] * sizeof(float));
    TRY(c, "fold_kv_init", fold_kv_init(kv, keys[k], vals[k], counts[k], FOLD_FLOAT32));
  }
  TRY(c, "fold_kv_barrier", fold_kv_barrier(kv));
  float want = (float)workers * (float)(workers + 1) / 2;
  double sum = 0, best = 1e30;
  for (int r = 0; r < warmup + iters; r++) {
    double t0 = now();
    if (per_key) {
      /* MXNet's way: one call per key, priority -index, so a key's pull
       * request goes ahead of the later keys' pushes and the replies flow
       * while those are still being sent */
      for (int k = 0; k < nkeys; k++)
        TRY(c, "fold_kv_pushpull",
            fold_kv_pushpull(kv, 1, &keys[k], (const void *const *)&vals[k], (void *const *)&outs[k], -k));
    } else {
      TRY(c, "fold_kv_pushpull",
          fold_kv_pushpull(kv, nkeys, keys, (const void *const *)vals, (void *const *)outs, 0));
    }
    TRY(c, "fold_kv_wait", fold_kv_wait(kv));
    double dt = now() - t0;
    if (r >= warmup) {
      sum += dt;
      if (dt < best) best = dt;
    }
    for (int k = 0; k < nkeys; k++) {
      if (outs[k][0] != want || outs[k][counts[k] - 1] != want) {
        fprintf(stderr, "fold-kvdist: rank %d: round %d key %d: pulled %g, wanted %g\n", fold_comm_rank(c), r, k,
                (double)outs[k][0], (double)want);
        exit(1);
      }
      outs[k][0] = outs[k][counts[k] - 1] = 0;
    }
  }
  TRY(c, "fold_kv_destroy", fold_kv_destroy(kv));
  for (int k = 0; k < nkeys; k++) {
    free(vals[k]);
    free(outs[k]);
  }
  free(vals);
  free(outs);
  free(keys);
  st.mean = sum / iters;
  st.best = best;
  return st;
}

/* The same model allreduced among the workers: one call per array (a
 * framework without bucketing) and one call on the whole model. */
static void allreduce_rounds(fold_comm *wc, const size_t *counts, int warmup, int iters, round_stats *per_layer,
                             round_stats *fused) {
  size_t total = 0;
  for (int k = 0; k < FOLD_RESNET50_ARRAYS; k++) total += counts[k];
  float *buf = malloc(total * sizeof *buf);
  for (size_t i = 0; i < total; i++) buf[i] = 1;
  for (int mode = 0; mode < 2; mode++) {
    double sum = 0, best = 1e30;
    for (int r = 0; r < warmup + iters; r++) {
      TRY(wc, "fold_barrier", fold_barrier(wc));
      double t0 = now();
      if (mode == 0) {
        size_t off = 0;
        for (int k = 0; k < FOLD_RESNET50_ARRAYS; k++) {
          TRY(wc, "fold_allreduce", fold_allreduce(buf + off, buf + off, counts[k], FOLD_FLOAT32,
                                                   FOLD_SUM, wc));
          off += counts[k];
        }
      } else {
        TRY(wc, "fold_allreduce", fold_allreduce(buf, buf, total, FOLD_FLOAT32, FOLD_SUM, wc));
      }
      double dt = now() - t0;
      if (r >= warmup) {
        sum += dt;
        if (dt < best) best = dt;
      }
    }
    round_stats *st = mode == 0 ? per_layer : fused;
    st->mean = sum / iters;
    st->best = best;
  }
  free(buf);
}

static void header(void) {
  printf("%-34s %10s %10s %12s %10s %10s\n", "per iteration (rank 0)", "mean_ms", "best_ms", "GBps_in+out", "bound_ms",
         "of_bound");
}

static void row(const char *what, round_stats st, double bytes, double link_gbit) {
  printf("%-34s %10.1f %10.1f %12.2f", what, st.mean * 1e3, st.best * 1e3, 2 * bytes / st.mean / 1e9);
  if (link_gbit > 0)
    printf(" %10.1f %9.0f%%\n", 8 * bytes / (link_gbit * 1e9) * 1e3, 100 * 8 * bytes / (link_gbit * 1e9) / st.mean);
  else
    printf(" %10s %10s\n", "-", "-");
}

int main(int argc, char **argv) {
  int iters = 10, warmup = 2, small_keys = 10000, small_bytes = 1024, small_iters = 5, allreduce_only = 0, div = 1;
  double link = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *a = argv[i], *v = argv[i + 1];
    if (strcmp(a, "-i") == 0) iters = atoi(v);
    else if (strcmp(a, "-w") == 0) warmup = atoi(v);
    else if (strcmp(a, "-k") == 0) small_keys = atoi(v);
    else if (strcmp(a, "-b") == 0) small_bytes = atoi(v);
    else if (strcmp(a, "-j") == 0) small_iters = atoi(v);
    else if (strcmp(a, "-l") == 0) link = atof(v);
    else if (strcmp(a, "-a") == 0) allreduce_only = atoi(v);
    else if (strcmp(a, "-d") == 0) div = atoi(v);
    else iters = -1;
  }
  if (argc % 2 == 0 || iters < 1 || div < 1 || warmup < 0 || small_keys < 1 || small_bytes < 4 || small_iters < 1) {
    fprintf(stderr, "usage: FOLD_KV_SERVERS=S foldrun -n N fold-kvdist [-i ITERS] [-w WARMUP] [-k SMALL_KEYS] "
                    "[-b SMALL_BYTES] [-j SMALL_ITERS] [-l LINK_GBIT] [-a 1] [-d DIV]\n");
    return 2;
  }
  fold_comm *c;
  if (fold_init(&c) != FOLD_OK) {
    fprintf(stderr, "fold-kvdist: fold_init: %s\n", fold_comm_last_error(NULL));
    return 1;
  }
  const char *env = getenv("FOLD_KV_SERVERS");
  int n = fold_comm_size(c), rank = fold_comm_rank(c), servers = env ? atoi(env) : 1, workers = n - servers;

  /* the model: ResNet-50's arrays as keys */
  size_t counts[FOLD_RESNET50_ARRAYS];
  double model = 0;
  for (int k = 0; k < FOLD_RESNET50_ARRAYS; k++) {
    counts[k] = (fold_resnet50[k].count + (size_t)div - 1) / (size_t)div;
    model += (double)counts[k] * 4;
  }
  if (allreduce_only) {
    /* the comparison: the same model allreduced among the ranks of this
     * run (start it with as many ranks as the store run has workers) */
    round_stats per_layer = {0, 0}, fused = {0, 0};
    allreduce_rounds(c, counts, warmup, iters, &per_layer, &fused);
    if (rank == 0) {
      printf("# fold-kvdist -a: fold_allreduce among %d ranks of ResNet-50's model: %d arrays, %.1f MB float32, "
             "FOLD_TRANSPORT=%s\n",
             n, FOLD_RESNET50_ARRAYS, model / 1e6, getenv("FOLD_TRANSPORT") ? getenv("FOLD_TRANSPORT") : "auto");
      header();
      row("fold_allreduce x161 (per array)", per_layer, model, link);
      row("fold_allreduce x1 (whole model)", fused, model, link);
    }
    fold_comm_destroy(c);
    return 0;
  }
  round_stats kvm = store_rounds(c, rank, workers, FOLD_RESNET50_ARRAYS, counts, warmup, iters, 0);
  round_stats kvp = store_rounds(c, rank, workers, FOLD_RESNET50_ARRAYS, counts, warmup, iters, 1);

  size_t scount = (size_t)small_bytes / 4;
  size_t *sc = malloc((size_t)small_keys * sizeof *sc);
  for (int k = 0; k < small_keys; k++) sc[k] = scount;
  round_stats kvs = store_rounds(c, rank, workers, small_keys, sc, 1, small_iters, 0);
  free(sc);
  TRY(c, "fold_barrier", fold_barrier(c));

  if (rank == 0) {
    printf("# fold-kvdist: %d workers + %d servers (dist_sync), ResNet-50 model: %d arrays, %.1f MB float32, "
           "FOLD_TRANSPORT=%s\n",
           workers, servers, FOLD_RESNET50_ARRAYS, model / 1e6, getenv("FOLD_TRANSPORT") ? getenv("FOLD_TRANSPORT") : "auto");
    header();
    row("kv pushpull 161 keys, 1 call", kvm, model, link);
    row("kv pushpull x161, priority -index", kvp, model, link);
    double ops = 2.0 * small_keys / kvs.mean;
    printf("small keys: %d keys of %d bytes, pushpull of all per round: %.1f ms per round, %.0f push+pull ops/s per "
           "worker, %.0f ops/s in all\n",
           small_keys, small_bytes, kvs.mean * 1e3, ops, ops * workers);
  }
  fold_comm_destroy(c);
  return 0;
}
