/* overlap.c — what FOLD_PROGRESS_THREAD buys: a nonblocking allreduce moving behind compute, and
 * what it costs on small blocking calls.
 *
 * Run: foldrun -n 2 [--transport shm|tcp] -- fold-overlap [MiB] [compute_s]
 * once with FOLD_PROGRESS_THREAD=0 and once with =1. Rank 0 prints:
 *   block_ms    a blocking fold_allreduce of MiB MiB (median of 3)
 *   compute_ms  the compute phase after fold_iallreduce started: a busy loop of a fixed amount
 *               of work calibrated to compute_s seconds with nothing in flight (so a slower phase
 *               shows what the transfer took from the CPU), and the process's CPU time meanwhile
 *               (above the compute: what the helper thread spent)
 *   wait_ms     the fold_wait after the compute phase, and its ratio to block_ms
 *   lat8_us     an 8-byte blocking fold_allreduce, median of 2000 (after 200 warm-up)
 *   test_us     the transfer again, computing in 0.5 ms slices with a fold_test after each: median
 *               and longest fold_test (with the helper: how long a call waits for it)
 * Timings are not asserted anywhere: the machine is shared and noisy. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fold.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of the whole process (every thread: the helper's included). */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile uint64_t sink;

/* A fixed amount of integer work (no memory traffic to speak of). */
static void work(uint64_t iters) {
  uint64_t x = sink + 1;
  for (uint64_t i = 0; i < iters; i++)
    x = x * 6364136223846793005ull + 1442695040888963407ull;
  sink = x;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int die(fold_comm *c, const char *what, int rc) {
  fprintf(stderr, "fold-overlap: %s: %s: %s\n", what, fold_strerror(rc), fold_comm_last_error(c));
  return 1;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 64;
  double compute_s = argc > 2 ? atof(argv[2]) : 1.0;
  fold_comm *c;
  int rc = fold_init(&c);
  if (rc) return die(NULL, "fold_init", rc);
  int me = fold_comm_rank(c);
  size_t cnt = mib << 18; /* float32 elements */
  float *buf = malloc(cnt * sizeof *buf);
  for (size_t i = 0; i < cnt; i++) buf[i] = 1.0f;
  const char *pt = getenv("FOLD_PROGRESS_THREAD");

  /* calibrate the compute phase with nothing in flight (on every rank, so
   * that both run the same amount of work) */
  uint64_t iters = 1 << 20;
  double t0 = now_s();
  work(iters);
  double per = (now_s() - t0) / (double)iters;
  iters = (uint64_t)(compute_s / per);

  double block[3];
  for (int k = 0; k < 3; k++) {
    if ((rc = fold_barrier(c))) return die(c, "fold_barrier", rc);
    t0 = now_s();
    if ((rc = fold_allreduce(buf, buf, cnt, FOLD_FLOAT32, FOLD_SUM, c))) return die(c, "fold_allreduce", rc);
    block[k] = now_s() - t0;
  }
  qsort(block, 3, sizeof *block, cmp_d);

  if ((rc = fold_barrier(c))) return die(c, "fold_barrier", rc);
  fold_request *r;
  double ts = now_s();
  if ((rc = fold_iallreduce(buf, buf, cnt, FOLD_FLOAT32, FOLD_SUM, c, &r))) return die(c, "fold_iallreduce", rc);
  double tc = now_s(), cc = cpu_s();
  work(iters);
  double tw = now_s(), cw = cpu_s();
  if ((rc = fold_wait(r))) return die(c, "fold_wait", rc);
  double te = now_s();

  /* The same transfer, computing in 0.5 ms slices with a fold_test after
   * each: how long a call waits for the helper (its lock) plus the test. */
  if ((rc = fold_barrier(c))) return die(c, "fold_barrier", rc);
  if ((rc = fold_iallreduce(buf, buf, cnt, FOLD_FLOAT32, FOLD_SUM, c, &r))) return die(c, "fold_iallreduce", rc);
  static double tst[100000];
  int ntst = 0, done = 0;
  uint64_t slice = (uint64_t)(0.0005 / per);
  while (!done && ntst < 100000) {
    work(slice);
    t0 = now_s();
    if ((rc = fold_test(r, &done))) return die(c, "fold_test", rc);
    tst[ntst++] = now_s() - t0;
  }
  if (!done && (rc = fold_wait(r))) return die(c, "fold_wait", rc);
  qsort(tst, (size_t)ntst, sizeof *tst, cmp_d);

  float one = 1.0f, out;
  double lat[2000];
  for (int i = 0; i < 200; i++)
    if ((rc = fold_allreduce(&one, &out, 1, FOLD_FLOAT32, FOLD_SUM, c))) return die(c, "fold_allreduce", rc);
  for (int i = 0; i < 2000; i++) {
    t0 = now_s();
    if ((rc = fold_allreduce(&one, &out, 1, FOLD_FLOAT32, FOLD_SUM, c))) return die(c, "fold_allreduce", rc);
    lat[i] = now_s() - t0;
  }
  qsort(lat, 2000, sizeof *lat, cmp_d);
  if (me == 0)
    printf("fold-overlap: transport %s, FOLD_PROGRESS_THREAD=%s, %zu MiB: block_ms %.1f  start_ms %.2f  compute_ms "
           "%.1f (calibrated %.1f, process cpu %.1f)  wait_ms %.1f (%.1f%% of block)  lat8_us %.1f  test_us median %.1f max %.1f (%d tests)\n",
           fold_comm_transport(c), pt ? pt : "(unset)", mib, block[1] * 1e3, (tc - ts) * 1e3, (tw - tc) * 1e3,
           compute_s * 1e3, (cw - cc) * 1e3, (te - tw) * 1e3, 100.0 * (te - tw) / block[1], lat[1000] * 1e6, tst[ntst / 2] * 1e6,
           tst[ntst - 1] * 1e6, ntst);
  free(buf);
  fold_comm_destroy(c);
  return 0;
}
