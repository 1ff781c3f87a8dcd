/* skip_pattern.c — fold-skip-pattern: a training loop's allreduce pattern (sizes interleaved) timed under foldrun, with the straggler's neighbour's skip count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h" /* the `some` pattern switches FOLD_INJECT_DELAY's straggler on and off per step */
#include "fold.h"

/* usage: foldrun -n 4 fold-skip-pattern PATTERN ALGO STEPS [WARMUP]
 * PATTERN: one (4 MiB back to back), alt (4 MiB then 8 B), alt2 (1 MiB
 * then 64 KiB), ddp (25, 25, 12, 1 MiB then 8 B), some (alt, with the
 * FOLD_INJECT_DELAY straggler late in steps 0 and 1 of every 4 only).
 * ALGO: the allreduce algorithm (ring, ring_skip, ...). Float32 sums.
 * Rank 0 prints one line:
 *   PATTERN ALGO ms_per_step named calls
 * ms_per_step: the median wall time of a timed step on rank 0 (the steps
 * run back to back after a barrier; a median, because on a shared host a
 * few steps take 10-20 times the others (page faults, descheduling) and
 * decide a mean of 9-30 steps). For `some`, the median over its cycles of
 * 4 steps (2 late, 2 not) of a cycle's mean step: the median of single
 * steps, half of them late, fell on one side or the other by chance;
 * named/calls: in how many of the timed calls rank (s+1) % n named the
 * straggler s (the lowest rank FOLD_INJECT_DELAY delays; 2 if none) in
 * fold_comm_last_skips; for `some`, of the calls of its late steps only.
 * v: every rank prints each call's time and whom it routed around on
 * stderr. */

#define MIB (1024 * 1024)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: fold-skip-pattern one|alt|alt2|ddp|some ALGO STEPS [WARMUP]\n");
    return 2;
  }
  const char *pat = argv[1], *algo = argv[2];
  int steps = atoi(argv[3]), warm = argc > 4 ? atoi(argv[4]) : 2;
  int verbose = argc > 5 && !strcmp(argv[5], "v"); /* each call's time and skips, from every rank */
  size_t sizes[8];
  int ns = 0, some = 0;
  if (!strcmp(pat, "one")) {
    sizes[ns++] = 4 * MIB;
  } else if (!strcmp(pat, "alt") || !strcmp(pat, "some")) {
    sizes[ns++] = 4 * MIB;
    sizes[ns++] = 8;
    some = !strcmp(pat, "some");
  } else if (!strcmp(pat, "alt2")) {
    sizes[ns++] = MIB;
    sizes[ns++] = 64 * 1024;
  } else if (!strcmp(pat, "ddp")) {
    size_t d[5] = {25 * MIB, 25 * MIB, 12 * MIB, MIB, 8};
    for (int i = 0; i < 5; i++) sizes[ns++] = d[i];
  } else {
    fprintf(stderr, "fold-skip-pattern: unknown pattern %s\n", pat);
    return 2;
  }
  if (steps < 1 || steps > 100000 || warm < 0 || warm > 1000) {
    fprintf(stderr, "fold-skip-pattern: STEPS in 1..100000, WARMUP in 0..1000\n");
    return 2;
  }
  fold_comm *c;
  if (fold_init(&c) != FOLD_OK) {
    fprintf(stderr, "fold-skip-pattern: fold_init failed\n");
    return 1;
  }
  int me = fold_comm_rank(c), n = fold_comm_size(c);
  char spec[96];
  snprintf(spec, sizeof spec, "allreduce=%s", algo);
  if (fold_comm_set_algo(c, spec) != FOLD_OK) {
    fprintf(stderr, "fold-skip-pattern: %s\n", fold_comm_last_error(c));
    return 1;
  }
  /* the straggler: the lowest rank with a delay (every rank sees the same variable) */
  int64_t delay = c->svc->inject_delay_ns;
  int slow = 2;
  {
    int64_t d = delay > 0 ? me : n;
    int64_t lo = n;
    fold_allreduce(&d, &lo, 1, FOLD_INT64, FOLD_MIN, c);
    if (lo < n) slow = (int)lo;
  }
  int watch = (slow + 1) % n;
  size_t maxb = 0;
  for (int i = 0; i < ns; i++)
    if (sizes[i] > maxb) maxb = sizes[i];
  float *in = malloc(maxb), *out = malloc(maxb);
  if (!in || !out) return 1;
  for (size_t i = 0; i < maxb / sizeof *in; i++) in[i] = (float)(me + 1) * 0.5f;
  int named = 0, calls = 0;
  double *st = malloc((size_t)steps * sizeof *st), t0 = 0;
  if (!st) return 1;
  for (int s = 0; s < warm + steps; s++) {
    if (s == warm) fold_barrier(c);
    if (s >= warm) t0 = now_s();
    if (some) c->svc->inject_delay_ns = (s % 4) < 2 ? delay : 0;
    for (int k = 0; k < ns; k++) {
      double tc = now_s();
      int rc = fold_allreduce(in, out, sizes[k] / sizeof *in, FOLD_FLOAT32, FOLD_SUM, c);
      if (verbose) {
        int w = -1, nsk = fold_comm_last_skips(c, &w, 1);
        fprintf(stderr, "rank %d step %d call %d (%zu B): %.3f ms, skipped %d\n", me, s, k, sizes[k], 1e3 * (now_s() - tc),
                nsk > 0 ? w : -1);
      }
      if (rc != FOLD_OK) {
        fprintf(stderr, "rank %d: %s\n", me, fold_comm_last_error(c));
        return 1;
      }
      int who = -1;
      if (s >= warm && (!some || s % 4 < 2)) {
        calls++;
        if (fold_comm_last_skips(c, &who, 1) > 0 && who == slow) named++;
      }
    }
    if (s >= warm) st[s - warm] = now_s() - t0;
  }
  int nst = steps;
  if (some) { /* a cycle's mean step, per whole cycle of 4 timed steps */
    int k = 0;
    for (int s0 = (warm + 3) / 4 * 4; s0 + 4 <= warm + steps; s0 += 4)
      st[k++] = (st[s0 - warm] + st[s0 - warm + 1] + st[s0 - warm + 2] + st[s0 - warm + 3]) / 4;
    if (k == 0) {
      fprintf(stderr, "fold-skip-pattern: some needs a whole cycle of 4 timed steps\n");
      return 2;
    }
    nst = k;
  }
  qsort(st, (size_t)nst, sizeof *st, cmp_double); /* the median step (cycle) */
  double med = nst % 2 ? st[nst / 2] : (st[nst / 2 - 1] + st[nst / 2]) / 2;
  free(st);
  c->svc->inject_delay_ns = 0;
  int64_t got = me == watch ? named : 0, tot = 0;
  fold_comm_set_algo(c, "allreduce=ring");
  fold_allreduce(&got, &tot, 1, FOLD_INT64, FOLD_SUM, c);
  if (me == 0) printf("%s %s %.3f %lld %d\n", pat, algo, 1e3 * med, (long long)tot, calls);
  free(in);
  free(out);
  fold_comm_destroy(c);
  return 0;
}
