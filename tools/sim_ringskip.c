/* sim_ringskip.c — fold-sim ring-skip: the slow-node ring paper's sweep (T, dT, alpha, n) for ring and ring_skip, as CSV (docs/straggler.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "sim_ringskip.h"

/* The paper's parameters: T = 3 us per step (a reduction call's overhead
 * here), T_trans = 5 us latency + one 8 KB block at 100 Gbit/s; one slow
 * rank (rank 1) whose every step takes T + dT (--once: that is dT late
 * once, at the start). Each point is one
 * reduce_scatter (or allreduce with --allreduce) of 8 KB blocks.
 * --slow K: K slow ranks alike (the paper has one), spread evenly round
 * the ring from rank 1 (ranks 1, 1 + n/K, ...), or next to each other
 * (ranks 1..K) with --adjacent. */
#define T_STEP 3e-6
#define LAT 5e-6
#define BW 12.5e9
#define BLOCK 8192

static int slow_rank(int n, int k, int nslow, int adjacent) { return adjacent ? 1 + k : (1 + k * n / nslow) % n; }

static int run(int n, double dt, const char *algo, int allreduce, int oneoff, int nslow, int adjacent, double *t) {
  fold_sim_params p;
  fold_sim_params_default(&p);
  p.latency = LAT;
  p.byte_time = 1.0 / BW;
  p.op_time = 0;
  p.op_overhead = T_STEP;
  fold_sim *sim;
  fold_comm **c = calloc((size_t)n, sizeof *c);
  fold_request **r = calloc((size_t)n, sizeof *r);
  size_t cnt = BLOCK / 4, total = cnt * (size_t)n;
  int32_t *in = calloc(total * (size_t)n, sizeof *in), *out = calloc(total * (size_t)n, sizeof *out);
  int rc = fold_sim_create(n, &p, &sim, c);
  if (rc != FOLD_OK) return rc;
  fold_sim_params slow = p;
  slow.op_overhead = T_STEP + dt;
  for (int k = 0; k < nslow && n > 1; k++) {
    int s = slow_rank(n, k, nslow, adjacent);
    if (!oneoff) fold_sim_set_rank_params(sim, s, &slow);
    else fold_sim_compute(c[s], dt); /* slow once: its first step starts dT late */
  }
  char spec[64];
  snprintf(spec, sizeof spec, "%s=%s", allreduce ? "allreduce" : "reduce_scatter", algo);
  for (int i = 0; i < n && rc == FOLD_OK; i++) {
    rc = fold_comm_set_algo(c[i], spec);
    if (rc == FOLD_OK)
      rc = allreduce ? fold_iallreduce(in + (size_t)i * total, out + (size_t)i * total, total, FOLD_INT32, FOLD_SUM, c[i], &r[i])
                     : fold_ireduce_scatter(in + (size_t)i * total, out + (size_t)i * total, cnt, FOLD_INT32, FOLD_SUM, c[i], &r[i]);
  }
  if (rc == FOLD_OK) rc = fold_sim_run(sim);
  for (int i = 0; i < n && rc == FOLD_OK; i++) rc = fold_wait(r[i]);
  *t = fold_sim_time(sim);
  fold_sim_destroy(sim);
  free(c);
  free(r);
  free(in);
  free(out);
  return rc;
}

int fold_sim_ringskip_main(int argc, char **argv) {
  const char *csv = NULL;
  int allreduce = 0, maxn = 256, oneoff = 0, nslow = 1, adjacent = 0;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
    else if (!strcmp(argv[i], "--allreduce")) allreduce = 1;
    else if (!strcmp(argv[i], "--once")) oneoff = 1;
    else if (!strcmp(argv[i], "--max-n") && i + 1 < argc) maxn = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--slow") && i + 1 < argc && atoi(argv[i + 1]) >= 1) nslow = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--adjacent")) adjacent = 1;
    else {
      fprintf(stderr,
              "usage: fold-sim ring-skip [--allreduce] [--once] [--slow K [--adjacent]] [--max-n N] [--csv FILE]\n");
      return 2;
    }
  }
  FILE *f = csv ? fopen(csv, "w") : stdout;
  if (f == NULL) {
    perror(csv);
    return 1;
  }
  static const int ns[] = {4, 8, 32, 256};
  static const double alphas[] = {1.2, 1.5, 2, 3, 4};
  char v[64];
  snprintf(v, sizeof v, "%.9g", T_STEP);
  setenv("FOLD_SKIP_T", v, 1);
  snprintf(v, sizeof v, "%.9g", LAT + BLOCK / BW);
  setenv("FOLD_SKIP_TTRANS", v, 1);
  fprintf(f, "collective,n,alpha,dT_us,t_ring_us,t_skip_us,saving,slow\n");
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
    if (ns[k] > maxn || nslow > ns[k] - 1) continue; /* at least one rank that is not slow */
    for (int d = 0; d <= 40; d++) {
      double dt = d * 1e-6, tr, ts;
      if (run(ns[k], dt, "ring", allreduce, oneoff, nslow, adjacent, &tr) != FOLD_OK) return 1;
      for (size_t a = 0; a < sizeof alphas / sizeof alphas[0]; a++) {
        snprintf(v, sizeof v, "%g", alphas[a]);
        setenv("FOLD_SKIP_ALPHA", v, 1);
        if (run(ns[k], dt, "ring_skip", allreduce, oneoff, nslow, adjacent, &ts) != FOLD_OK) return 1;
        fprintf(f, "%s,%d,%g,%d,%.3f,%.3f,%.4f,%d%s\n", allreduce ? "allreduce" : "reduce_scatter", ns[k], alphas[a], d,
                tr * 1e6, ts * 1e6, (tr - ts) / tr, nslow, adjacent ? "a" : "");
      }
    }
  }
  if (csv) fclose(f);
  return 0;
}
