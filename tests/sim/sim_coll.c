/* sim_coll.c — every collective algorithm at hundreds and thousands of simulated ranks, and their costs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fold.h"
#include "sim_model.h" /* tools/: the formulas fold-sim prints */

/* Usage: sim_coll [--costs-only] [--n N]
 * 1. Correctness: every algorithm of every collective at n in {64, 255,
 *    1024}, started nonblocking on every rank and completed by fold_sim_run,
 *    with int32 data checked exactly.
 * 2. Costs: allreduce per algorithm of 64 KiB at n = 1024 (latency-bound) and
 *    of 4 MiB at n = 64 (bandwidth-bound), virtual time next to the textbook
 *    alpha-beta cost (op_time 0), within 10%. */

enum { BROADCAST, REDUCE, ALLREDUCE, REDUCE_SCATTER, ALLGATHER, GATHER, SCATTER, ALLTOALL, BARRIER, NCOLL };
static const char *names[NCOLL] = {"broadcast", "reduce", "allreduce", "reduce_scatter", "allgather",
                                   "gather", "scatter", "alltoall", "barrier"};
static const char *algos[NCOLL][8] = {
  {"binomial", "scatter_allgather", "pipeline"},
  {"binomial", "rabenseifner"},
  {"reduce_bcast", "recursive_doubling", "rabenseifner", "ring", "ring_segmented", "direct"},
  {"recursive_halving", "ring", "pairwise"},
  {"recursive_doubling", "bruck", "ring"},
  {"binomial", "linear"},
  {"binomial", "linear"},
  {"pairwise", "bruck"},
  {"dissemination"},
};

static int32_t val(int rank, size_t i) { return (int32_t)((rank * 31 + (int)i * 7) % 1000) - 500; }

/* Start the collective on every rank, run the simulator, check every rank. */
static double run(int coll, const char *algo, int n, size_t count, fold_sim_params *prm) {
  fold_sim *sim;
  fold_comm **c = calloc((size_t)n, sizeof *c);
  CHECK_OK(fold_sim_create(n, prm, &sim, c), NULL);
  int root = n / 3, blk = coll == REDUCE_SCATTER || coll == ALLGATHER || coll == GATHER || coll == SCATTER || coll == ALLTOALL;
  size_t in_n = (coll == REDUCE_SCATTER || coll == SCATTER || coll == ALLTOALL) ? count * (size_t)n : count;
  size_t out_n = (coll == ALLGATHER || coll == GATHER || coll == ALLTOALL) ? count * (size_t)n : count;
  int32_t **in = calloc((size_t)n, sizeof *in), **out = calloc((size_t)n, sizeof *out);
  fold_request **req = calloc((size_t)n, sizeof *req);
  char spec[64];
  snprintf(spec, sizeof spec, "%s=%s", names[coll], algo);
  (void)blk;
  for (int r = 0; r < n; r++) {
    in[r] = malloc(in_n * 4 + 4);
    out[r] = malloc(out_n * 4 + 4);
    for (size_t i = 0; i < in_n; i++) in[r][i] = val(r, i);
    if (coll == BROADCAST && r == root) memcpy(out[r], in[r], count * 4);
    CHECK_OK(fold_comm_set_algo(c[r], spec), c[r]);
    int rc;
    switch (coll) {
    case BROADCAST: rc = fold_ibroadcast(out[r], count, FOLD_INT32, root, c[r], &req[r]); break;
    case REDUCE: rc = fold_ireduce(in[r], out[r], count, FOLD_INT32, FOLD_SUM, root, c[r], &req[r]); break;
    case ALLREDUCE: rc = fold_iallreduce(in[r], out[r], count, FOLD_INT32, FOLD_SUM, c[r], &req[r]); break;
    case REDUCE_SCATTER: rc = fold_ireduce_scatter(in[r], out[r], count, FOLD_INT32, FOLD_SUM, c[r], &req[r]); break;
    case ALLGATHER: rc = fold_iallgather(in[r], out[r], count, FOLD_INT32, c[r], &req[r]); break;
    case GATHER: rc = fold_igather(in[r], out[r], count, FOLD_INT32, root, c[r], &req[r]); break;
    case SCATTER: rc = fold_iscatter(in[r], out[r], count, FOLD_INT32, root, c[r], &req[r]); break;
    case ALLTOALL: rc = fold_ialltoall(in[r], out[r], count, FOLD_INT32, c[r], &req[r]); break;
    default: rc = fold_ibarrier(c[r], &req[r]); break;
    }
    CHECK(rc == FOLD_OK, "%s n=%d rank %d: start: %s", spec, n, r, fold_comm_last_error(c[r]));
  }
  CHECK_OK(fold_sim_run(sim), NULL);
  double t = fold_sim_time(sim);
  int bad = 0;
  /* the full reduction, once: val() sums over ranks in closed form would
   * be clever, a table is plain */
  int64_t *sum = NULL;
  if (coll == REDUCE || coll == ALLREDUCE) {
    sum = calloc(count, sizeof *sum);
    for (int q = 0; q < n; q++)
      for (size_t i = 0; i < count; i++) sum[i] += val(q, i);
  }
  for (int r = 0; r < n && bad < 3; r++) {
    if (req[r]) CHECK_OK(fold_wait(req[r]), c[r]);
    for (size_t i = 0; i < out_n && coll != BARRIER; i++) {
      int64_t want = 0;
      switch (coll) {
      case BROADCAST: want = val(root, i); break;
      case REDUCE: if (r != root) goto next; /* fall through */
      case ALLREDUCE: want = sum[i]; break;
      case REDUCE_SCATTER: for (int q = 0; q < n; q++) want += val(q, (size_t)r * count + i); break;
      case ALLGATHER: want = val((int)(i / count), i % count); break;
      case GATHER: if (r != root) goto next; want = val((int)(i / count), i % count); break;
      case SCATTER: want = val(root, (size_t)r * count + i); break;
      case ALLTOALL: want = val((int)(i / count), (size_t)r * count + i % count); break;
      }
      if (out[r][i] != (int32_t)want) {
        CHECK(0, "%s n=%d rank %d element %zu: %d, wanted %d", spec, n, r, i, out[r][i], (int32_t)want);
        bad++;
        break;
      }
    }
  next:;
  }
  for (int r = 0; r < n; r++) free(in[r]), free(out[r]);
  free(in), free(out), free(req), free(c), free(sum);
  fold_sim_destroy(sim);
  return t;
}

int main(int argc, char **argv) {
  int costs_only = argc > 1 && !strcmp(argv[1], "--costs-only");
  fold_sim_params prm;
  fold_sim_params_default(&prm);
  prm.op_time = 0;
  clock_t w0 = clock();
  if (!costs_only) {
    const int ns[] = {64, 255, 1024};
    for (int ni = 0; ni < 3; ni++)
      for (int coll = 0; coll < NCOLL; coll++)
        for (int a = 0; algos[coll][a]; a++) {
          size_t count = coll == ALLTOALL || coll == ALLGATHER || coll == GATHER || coll == SCATTER ||
                                 coll == REDUCE_SCATTER ? 3 : (size_t)ns[ni] + 5;
          clock_t t0 = clock();
          double t = run(coll, algos[coll][a], ns[ni], count, &prm);
          printf("%-14s %-18s n=%-4d virtual %9.1f us  wall %5.2f s\n", names[coll], algos[coll][a], ns[ni], t * 1e6,
                 (double)(clock() - t0) / CLOCKS_PER_SEC);
          fflush(stdout);
        }
  }
  /* the cost tables: a latency-bound point (many ranks, small blocks) and a
   * bandwidth-bound one (few ranks, large blocks), so both terms are checked */
  const struct { int n; size_t bytes; } pts[] = {{1024, (size_t)64 << 10}, {64, (size_t)4 << 20}};
  for (int p = 0; p < 2; p++) {
    int n = pts[p].n;
    size_t S = pts[p].bytes;
    printf("\nallreduce of %zu bytes at n = %d, alpha = %.1f us, beta = %.3g s/B (%.1f GB/s), gamma = 0\n", S, n,
           prm.latency * 1e6, prm.byte_time, 1e-9 / prm.byte_time);
    printf("%-20s %14s %14s %8s\n", "algorithm", "simulated (us)", "model (us)", "ratio");
    for (int a = 0; algos[ALLREDUCE][a]; a++) {
      double t = run(ALLREDUCE, algos[ALLREDUCE][a], n, S / 4, &prm);
      double m = fold__model_time("allreduce", algos[ALLREDUCE][a], n, (double)S, &prm);
      printf("%-20s %14.1f %14.1f %8.3f\n", algos[ALLREDUCE][a], t * 1e6, m * 1e6, t / m);
      fflush(stdout);
      CHECK(fabs(t / m - 1) <= 0.10, "allreduce %s, n = %d, %zu B: simulated %.1f us vs model %.1f us",
            algos[ALLREDUCE][a], n, S, t * 1e6, m * 1e6);
    }
  }
  printf("wall time %.1f s\n", (double)(clock() - w0) / CLOCKS_PER_SEC);
  return check_report("sim_coll");
}
