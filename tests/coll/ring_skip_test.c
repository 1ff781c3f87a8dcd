/* ring_skip_test.c — the straggler-tolerant ring (issue 10): exact results under random stragglers, skips reported, failures named. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h" /* the late case switches a straggler off between calls */
#include "fold.h"
#include "sim/sim_check.h"

/* Cases: threads (n = 2..17, random stragglers, several counts, both
 * collectives, every result checked against the exact sum), sim (the
 * skip in virtual time: who is routed around, and that it pays; n = 1,024
 * with random slow ranks), late (a straggler over several calls: the
 * late rank's memory, the estimate of T, a rank late once), timeout (a straggler past FOLD_TIMEOUT),
 * refuse (a non-commutative op), mp (under foldrun: processes, a rank
 * delayed, allreduce in place in every other call; `mp kill` kills one
 * rank: the others fail with FOLD_EPEER). */

static int64_t val(int r, size_t i, int call) { return (int64_t)r * 1000003 + (int64_t)(i % 1013) * 7 + call; }

/* The exact sum over n ranks of element i. */
static int64_t want(int n, size_t i, int call) {
  int64_t s = 0;
  for (int r = 0; r < n; r++) s += val(r, i, call);
  return s;
}

typedef struct {
  fold_comm *c;
  int n, calls;
  const size_t *counts;
  int ncounts;
  int skipped_any;
  int bad;
} rank_arg;

static void *rank_main(void *p) {
  rank_arg *a = p;
  int me = fold_comm_rank(a->c), n = a->n;
  for (int call = 0; call < a->calls; call++)
    for (int k = 0; k < a->ncounts; k++) {
      size_t cnt = a->counts[k];
      int rs = (call + k) % 2; /* alternate allreduce and reduce_scatter */
      size_t in_n = rs ? cnt * (size_t)n : cnt;
      int64_t *in = malloc((in_n + 1) * sizeof *in), *out = malloc((cnt + 1) * sizeof *out);
      for (size_t i = 0; i < in_n; i++) in[i] = val(me, i, call);
      int rc = rs ? fold_reduce_scatter(in, out, cnt, FOLD_INT64, FOLD_SUM, a->c)
                  : fold_allreduce(in, out, cnt, FOLD_INT64, FOLD_SUM, a->c);
      if (rc != FOLD_OK) {
        fprintf(stderr, "rank %d: %s\n", me, fold_comm_last_error(a->c));
        a->bad++;
      }
      for (size_t i = 0; i < cnt && rc == FOLD_OK; i++)
        if (out[i] != want(n, rs ? (size_t)me * cnt + i : i, call)) {
          fprintf(stderr, "n=%d rank %d %s count %zu call %d: element %zu is %lld, want %lld\n", n, me,
                  rs ? "reduce_scatter" : "allreduce", cnt, call, i, (long long)out[i],
                  (long long)want(n, rs ? (size_t)me * cnt + i : i, call));
          a->bad++;
          break;
        }
      int ranks[4] = {-7, -7, -7, -7};
      int ns = fold_comm_last_skips(a->c, ranks, 4);
      /* only the left neighbour can be routed around, at most once per call */
      if (ns < 0 || ns > 1 || (ns == 1 && ranks[0] != (me + n - 1) % n) || ranks[1] != -7) a->bad++;
      if (ns == 1) a->skipped_any = 1;
      CHECK(fold_comm_last_skips(a->c, NULL, 0) == ns);
      free(in);
      free(out);
    }
  /* another algorithm's call: 0 skips */
  int64_t x = me, y = 0;
  CHECK_RC(fold_comm_set_algo(a->c, "allreduce=ring"), FOLD_OK, a->c);
  CHECK_RC(fold_allreduce(&x, &y, 1, FOLD_INT64, FOLD_SUM, a->c), FOLD_OK, a->c);
  CHECK(y == (int64_t)n * (n - 1) / 2);
  CHECK(fold_comm_last_skips(a->c, NULL, 0) == 0);
  return NULL;
}

/* Run `calls` rounds of every count on n threads with FOLD_INJECT_DELAY=delay. */
static int run_threads(int n, const char *delay, int calls, const size_t *counts, int ncounts, int *skipped) {
  fold_comm *c[17];
  if (delay) setenv("FOLD_INJECT_DELAY", delay, 1);
  setenv("FOLD_ALGO", "allreduce=ring_skip,reduce_scatter=ring_skip", 1);
  CHECK_RC(fold_comm_init_threads(n, c), FOLD_OK, NULL);
  unsetenv("FOLD_INJECT_DELAY");
  unsetenv("FOLD_ALGO");
  rank_arg a[17];
  pthread_t th[17];
  for (int i = 0; i < n; i++) {
    a[i] = (rank_arg){c[i], n, calls, counts, ncounts, 0, 0};
    CHECK(pthread_create(&th[i], NULL, rank_main, &a[i]) == 0);
  }
  int bad = 0;
  *skipped = 0;
  for (int i = 0; i < n; i++) {
    pthread_join(th[i], NULL);
    bad += a[i].bad;
    *skipped |= a[i].skipped_any;
    fold_comm_destroy(c[i]);
  }
  return bad;
}

static void case_threads(void) {
  /* a short T so that delays of a few hundred microseconds are skipped:
   * thresholds comparable to the delays race the late messages */
  setenv("FOLD_SKIP_T", "0.0001", 1);
  srand(12345);
  int skipped_runs = 0;
  for (int n = 2; n <= 17; n++) {
    size_t counts[] = {0, 1, (size_t)n - 1, (size_t)n + 1, 20000};
    char delay[256] = "";
    int nslow = 1 + rand() % 3;
    for (int k = 0; k < nslow; k++) {
      /* adjacent slow ranks now and then */
      int r = k > 0 && rand() % 2 ? (atoi(strrchr(delay, ',') ? strrchr(delay, ',') + 1 : delay) + 1) % n : rand() % n;
      char one[32];
      snprintf(one, sizeof one, "%s%d:%.6f", k ? "," : "", r, (50 + rand() % 400) * 1e-6);
      strcat(delay, one);
    }
    int skipped;
    int bad = run_threads(n, delay, 2, counts, 5, &skipped);
    printf("n=%d FOLD_INJECT_DELAY=%s: %s%s\n", n, delay, bad ? "WRONG" : "exact", skipped ? ", rerouted" : "");
    CHECK(bad == 0);
    skipped_runs += skipped;
  }
  /* no straggler and the online estimate of T */
  unsetenv("FOLD_SKIP_T");
  size_t counts[] = {0, 1, 4, 6, 3000};
  int skipped;
  CHECK(run_threads(5, NULL, 3, counts, 5, &skipped) == 0);
  CHECK(run_threads(1, "0:0.001", 2, counts, 5, &skipped) == 0);
  CHECK(skipped == 0);
  printf("%d of 16 straggler runs rerouted\n", skipped_runs);
  CHECK(skipped_runs >= 8); /* the skip really happens (a test that cannot fail is a defect) */
}

/* ---- the simulator ------------------------------------------------------------------------ */

#define LAT (1.0 / 1024)
#define SCOUNT 64
/* the n = 1,024 (2 s since the step stopped looping over every
 * block after each message); under a sanitizer (10-30x slower) 256 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SIMN 256
#else
#define SIMN 1024
#endif

/* One allreduce (or reduce_scatter) of SCOUNT int64 per rank; returns the
 * virtual time; *bad counts wrong elements; skips[r] = who rank r routed
 * around (-1 none). */
static double sim_run(int n, const char *delay, const char *algo, int rs, int *bad, int *skips) {
  fold_comm **c = calloc((size_t)n, sizeof *c);
  fold_request **r = calloc((size_t)n, sizeof *r);
  int64_t **in = calloc((size_t)n, sizeof *in), **out = calloc((size_t)n, sizeof *out);
  fold_sim *sim;
  fold_sim_params p = {.latency = LAT, .byte_time = 0};
  if (delay) setenv("FOLD_INJECT_DELAY", delay, 1);
  CHECK_RC(fold_sim_create(n, &p, &sim, c), FOLD_OK, NULL);
  unsetenv("FOLD_INJECT_DELAY");
  char spec[64];
  snprintf(spec, sizeof spec, "%s=%s", rs ? "reduce_scatter" : "allreduce", algo);
  size_t in_n = rs ? (size_t)SCOUNT * (size_t)n : SCOUNT;
  for (int i = 0; i < n; i++) {
    in[i] = malloc(in_n * sizeof **in);
    out[i] = malloc(SCOUNT * sizeof **out);
    for (size_t k = 0; k < in_n; k++) in[i][k] = val(i, k, 0);
    CHECK_RC(fold_comm_set_algo(c[i], spec), FOLD_OK, c[i]);
    if (rs)
      CHECK_RC(fold_ireduce_scatter(in[i], out[i], SCOUNT, FOLD_INT64, FOLD_SUM, c[i], &r[i]), FOLD_OK, c[i]);
    else
      CHECK_RC(fold_iallreduce(in[i], out[i], SCOUNT, FOLD_INT64, FOLD_SUM, c[i], &r[i]), FOLD_OK, c[i]);
  }
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  *bad = 0;
  for (int i = 0; i < n; i++) {
    CHECK_RC(fold_wait(r[i]), FOLD_OK, c[i]);
    for (size_t k = 0; k < SCOUNT; k++)
      if (out[i][k] != want(n, rs ? (size_t)i * SCOUNT + k : k, 0)) {
        ++*bad;
        break;
      }
    int who = -1;
    int ns = fold_comm_last_skips(c[i], &who, 1);
    if (skips) skips[i] = ns ? who : -1;
    free(in[i]);
    free(out[i]);
  }
  double t = fold_sim_time(sim);
  fold_sim_destroy(sim);
  free(c);
  free(r);
  free(in);
  free(out);
  return t;
}

static void case_sim(void) {
  int bad, skips[8];
  /* T = 2 latencies: a threshold of 4 latencies; rank 1 is 20 latencies
   * late at each reduction: rank 2 routes around it, nobody else does */
  setenv("FOLD_SKIP_T", "0.001953125", 1);
  char delay[64];
  snprintf(delay, sizeof delay, "1:%.9f", 20 * LAT);
  for (int rs = 0; rs < 2; rs++) {
    double ring = sim_run(4, delay, "ring", rs, &bad, NULL);
    CHECK(bad == 0);
    double skip = sim_run(4, delay, "ring_skip", rs, &bad, skips);
    CHECK(bad == 0);
    double plain = sim_run(4, NULL, "ring_skip", rs, &bad, NULL);
    CHECK(bad == 0);
    double plain_ring = sim_run(4, NULL, "ring", rs, &bad, NULL);
    CHECK(bad == 0);
    printf("n=4 %s, rank 1 slow by 20 L per step: ring %.6f s, ring_skip %.6f s (no straggler: %.6f vs %.6f)\n",
           rs ? "reduce_scatter" : "allreduce", ring, skip, plain_ring, plain);
    CHECK(skips[0] == -1 && skips[1] == -1 && skips[2] == 1 && skips[3] == -1);
    /* rank 1 sees its partials wait for it and hands its reductions on:
     * only its own block's last one stays on the critical path */
    CHECK(skip < 0.8 * ring);
    CHECK(plain == plain_ring);
  }
  /* n = 1,024, random slow ranks, adjacent ones included */
  srand(7);
  char big[512] = "";
  int r0 = rand() % SIMN;
  for (int k = 0; k < 6; k++) {
    char one[40];
    int r = k == 1 ? (r0 + 1) % SIMN : k == 0 ? r0 : rand() % SIMN;
    snprintf(one, sizeof one, "%s%d:%.9f", k ? "," : "", r, (1 + rand() % 4) * LAT / 4);
    strcat(big, one);
  }
  double ring = sim_run(SIMN, big, "ring", 0, &bad, NULL);
  CHECK(bad == 0);
  double skip = sim_run(SIMN, big, "ring_skip", 0, &bad, NULL);
  CHECK(bad == 0);
  printf("n=%d allreduce, FOLD_INJECT_DELAY=%s: ring %.4f s, ring_skip %.4f s\n", SIMN, big, ring, skip);
  unsetenv("FOLD_SKIP_T");
}

/* ---- a straggler over several calls (the late rank's memory, the T estimate) ---------------- */

/* `calls` allreduces of SCOUNT int64 in a row on the same n = 4 simulated
 * communicators; t[k] = the virtual time of call k; skips2[k] = whom rank
 * 2 reports routing around after call k (-1: nobody). oneoff: instead of
 * FOLD_INJECT_DELAY, rank 1 starts call 0 late by `late` seconds once;
 * slow_calls > 0: the FOLD_INJECT_DELAY straggler is fast again from call
 * slow_calls on. */
static void sim_calls(const char *algo, const char *delay, double oneoff, int slow_calls, int calls, double *t,
                      int *skips2) {
  enum { N = 4 };
  fold_comm *c[N];
  fold_request *r[N];
  fold_sim *sim;
  fold_sim_params p = {.latency = LAT, .byte_time = 0};
  if (delay) setenv("FOLD_INJECT_DELAY", delay, 1);
  CHECK_RC(fold_sim_create(N, &p, &sim, c), FOLD_OK, NULL);
  unsetenv("FOLD_INJECT_DELAY");
  int64_t *in[N], *out[N];
  char spec[64];
  snprintf(spec, sizeof spec, "allreduce=%s", algo);
  for (int i = 0; i < N; i++) {
    in[i] = malloc(SCOUNT * sizeof **in);
    out[i] = malloc(SCOUNT * sizeof **out);
    CHECK_RC(fold_comm_set_algo(c[i], spec), FOLD_OK, c[i]);
  }
  double t0 = 0;
  for (int k = 0; k < calls; k++) {
    if (k == 0 && oneoff > 0) CHECK_RC(fold_sim_compute(c[1], oneoff), FOLD_OK, c[1]);
    if (k == slow_calls && slow_calls > 0) c[1]->svc->inject_delay_ns = 0;
    for (int i = 0; i < N; i++) {
      for (size_t e = 0; e < SCOUNT; e++) in[i][e] = val(i, e, k);
      CHECK_RC(fold_iallreduce(in[i], out[i], SCOUNT, FOLD_INT64, FOLD_SUM, c[i], &r[i]), FOLD_OK, c[i]);
    }
    CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
    for (int i = 0; i < N; i++) {
      CHECK_RC(fold_wait(r[i]), FOLD_OK, c[i]);
      for (size_t e = 0; e < SCOUNT; e++) CHECK(out[i][e] == want(N, e, k));
    }
    int who = -1;
    skips2[k] = fold_comm_last_skips(c[2], &who, 1) ? who : -1;
    t[k] = fold_sim_time(sim) - t0;
    t0 = fold_sim_time(sim);
  }
  for (int i = 0; i < N; i++) {
    free(in[i]);
    free(out[i]);
  }
  fold_sim_destroy(sim);
}

static void case_late(void) {
  enum { CALLS = 5 };
  double tr[CALLS], ts[CALLS], tp[CALLS];
  int sk[CALLS], sk_ring[CALLS];
  char delay[64];
  snprintf(delay, sizeof delay, "1:%.9f", 20 * LAT);
  /* With T given, and then estimated online (the first call at a size has
   * no estimate and skips nothing). A persistent straggler: after it found
   * itself late it hands its middle reductions on from the start, so only
   * its own block's last one stays on it; the target, in virtual
   * time: at least half of the time it adds to ring is recovered. */
  for (int est = 0; est < 2; est++) {
    if (!est) setenv("FOLD_SKIP_T", "0.001953125", 1);
    sim_calls("ring", delay, 0, 0, CALLS, tr, sk_ring);
    sim_calls("ring", NULL, 0, 0, CALLS, tp, sk_ring);
    sim_calls("ring_skip", delay, 0, 0, CALLS, ts, sk);
    unsetenv("FOLD_SKIP_T");
    double rec = (tr[CALLS - 1] - ts[CALLS - 1]) / (tr[CALLS - 1] - tp[CALLS - 1]);
    printf("persistent straggler, T %s: ring %.4f s per call (%.4f without), ring_skip by call: %.4f %.4f %.4f %.4f %.4f;"
           " recovered %.0f%%\n", est ? "estimated" : "given", tr[CALLS - 1], tp[CALLS - 1], ts[0], ts[1], ts[2], ts[3],
           ts[4], 100 * rec);
    CHECK(rec >= 0.5);
    CHECK(ts[CALLS - 1] < ts[0]);         /* the memory pays */
    CHECK(sk[CALLS - 1] == 1 && sk[CALLS - 2] == 1); /* rank 2 names the late rank 1 */
    if (est) CHECK(sk[0] == -1);          /* no estimate yet, no skip */
  }
  /* Slow in calls 0 and 1, fast from call 2 on: rank 1 still hands its
   * reductions on in call 2 (it was late in call 1), finds its own block's
   * last reduction quick there, and from call 3 on everything is as
   * without a straggler. */
  setenv("FOLD_SKIP_T", "0.001953125", 1);
  sim_calls("ring_skip", delay, 0, 2, CALLS, ts, sk);
  sim_calls("ring_skip", NULL, 0, 0, CALLS, tp, sk_ring);
  printf("slow in calls 0-1: ring_skip by call: %.4f %.4f %.4f %.4f (without: %.4f); rank 2 routed around: %d %d %d %d\n",
         ts[0], ts[1], ts[2], ts[3], tp[3], sk[0], sk[1], sk[2], sk[3]);
  CHECK(sk[1] == 1 && sk[2] == 1 && sk[3] == -1 && sk[4] == -1);
  CHECK(ts[3] == tp[3] && ts[4] == tp[4]);
  /* Busy once (fold_sim_compute) at the start of call 0: a busy rank sees
   * its partials only when it is done, so it does not find itself late;
   * nothing lingers into call 1. */
  sim_calls("ring_skip", NULL, 20 * LAT, 0, CALLS, ts, sk);
  unsetenv("FOLD_SKIP_T");
  printf("busy once: ring_skip by call: %.4f %.4f (without: %.4f); rank 2 routed around: %d %d\n", ts[0], ts[1], tp[1],
         sk[0], sk[1]);
  CHECK(sk[0] == 1 && sk[1] == -1 && ts[1] == tp[1]);
}

/* ---- failures --------------------------------------------------------------------------- */

static fold_comm *toc[3];
static int to_rc[3];
static void *timeout_rank(void *arg) {
  int me = (int)(intptr_t)arg;
  static int64_t in[3][100], out[3][100];
  to_rc[me] = fold_allreduce(in[me], out[me], 100, FOLD_INT64, FOLD_SUM, toc[me]);
  return NULL;
}

static void case_timeout(void) {
  setenv("FOLD_TIMEOUT", "0.3", 1);
  setenv("FOLD_SKIP_T", "0.0001", 1);
  setenv("FOLD_INJECT_DELAY", "1:30", 1);
  setenv("FOLD_ALGO", "allreduce=ring_skip", 1);
  CHECK_RC(fold_comm_init_threads(3, toc), FOLD_OK, NULL);
  unsetenv("FOLD_TIMEOUT");
  unsetenv("FOLD_SKIP_T");
  unsetenv("FOLD_INJECT_DELAY");
  unsetenv("FOLD_ALGO");
  pthread_t th[3];
  for (int i = 0; i < 3; i++) CHECK(pthread_create(&th[i], NULL, timeout_rank, (void *)(intptr_t)i) == 0);
  for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 3; i++) printf("rank %d: %d %s\n", i, to_rc[i], fold_comm_last_error(toc[i]));
  /* skipping is not failure tolerance: the straggler's contribution is
   * still awaited, and the wait ends in a timeout naming a rank */
  /* which rank times out first is a race (the others then fail on its
   * report); the first names whom it waited for */
  int timedout = 0, named = 0;
  for (int i = 0; i < 3; i++) {
    CHECK(to_rc[i] < 0);
    if (to_rc[i] == FOLD_ETIMEDOUT) {
      timedout++;
      CHECK(strstr(fold_comm_last_error(toc[i]), "FOLD_TIMEOUT") != NULL);
      named += strstr(fold_comm_last_error(toc[i]), "FOLD_INJECT_DELAY") || strstr(fold_comm_last_error(toc[i]), "ring_skip: rank ");
    }
  }
  CHECK(timedout >= 1 && named >= 1);
  for (int i = 0; i < 3; i++) fold_comm_destroy(toc[i]);
}

static void noncomm(void *inout, const void *in, size_t count, fold_dtype dt, void *ctx) {
  (void)dt;
  (void)ctx;
  const int64_t *a = in;
  int64_t *b = inout;
  for (size_t i = 0; i < count; i++) b[i] = a[i] * 3 + b[i];
}

static void case_refuse(void) {
  fold_comm *c[1];
  CHECK_RC(fold_comm_init_threads(1, c), FOLD_OK, NULL);
  fold_op op;
  CHECK_RC(fold_op_create(&op, noncomm, NULL, 0, c[0]), FOLD_OK, c[0]);
  CHECK_RC(fold_comm_set_algo(c[0], "allreduce=ring_skip,reduce_scatter=ring_skip"), FOLD_OK, c[0]);
  int64_t x = 1, y = 0;
  CHECK_RC(fold_allreduce(&x, &y, 1, FOLD_INT64, op, c[0]), FOLD_EINVAL, c[0]);
  CHECK(strstr(fold_comm_last_error(c[0]), "ring_skip") != NULL);
  CHECK_RC(fold_reduce_scatter(&x, &y, 1, FOLD_INT64, op, c[0]), FOLD_EINVAL, c[0]);
  CHECK(fold_comm_last_skips(NULL, NULL, 0) == FOLD_EINVAL && fold_comm_last_skips(c[0], NULL, -1) == FOLD_EINVAL);
  fold_comm_destroy(c[0]);
}

/* ---- processes ------------------------------------------------------------------------------ */

static int run_mp(int kill_one) {
  fold_comm *c;
  if (fold_init(&c) != FOLD_OK) {
    fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
    return 1;
  }
  int me = fold_comm_rank(c), n = fold_comm_size(c);
  CHECK_RC(fold_comm_set_algo(c, "allreduce=ring_skip,reduce_scatter=ring_skip"), FOLD_OK, c);
  size_t counts[] = {0, 1, (size_t)n - 1, (size_t)n + 1, 300000};
  int skipped = 0;
  for (int call = 0; call < 3; call++)
    for (int k = 0; k < 5; k++) {
      size_t cnt = counts[k];
      int rs = (call + k) % 2;
      size_t in_n = rs ? cnt * (size_t)n : cnt;
      int64_t *in = malloc((in_n + 1) * sizeof *in), *out = malloc((cnt + 1) * sizeof *out);
      for (size_t i = 0; i < in_n; i++) in[i] = val(me, i, call);
      if (kill_one && call == 1 && k == 4 && me == 3) _exit(0); /* dies while the others may route around it */
      /* allreduce in place in every other call: our first send reads the
       * part of the result where the left neighbour's allgather block goes,
       * so that block is received only after our reduce-scatter */
      int in_place = !rs && call % 2 == 1;
      if (in_place) memcpy(out, in, cnt * sizeof *in);
      int rc = rs ? fold_reduce_scatter(in, out, cnt, FOLD_INT64, FOLD_SUM, c)
                  : fold_allreduce(in_place ? out : in, out, cnt, FOLD_INT64, FOLD_SUM, c);
      if (kill_one && call == 1 && k == 4) {
        fprintf(stderr, "rank %d: %d %s\n", me, rc, fold_comm_last_error(c));
        /* every survivor fails with FOLD_EPEER; its neighbours name rank 3
         * (over tcp a rank further away may instead name the neighbour whose
         * connection closed when that one failed: the test counts both) */
        CHECK(rc == FOLD_EPEER);
        printf("EPEER%s\n", strstr(fold_comm_last_error(c), "rank 3") ? "-naming-rank-3" : "");
        fflush(stdout);
        usleep(500000); /* stay until the others heard of rank 3 (not of us leaving) */
        _exit(0);
      }
      CHECK_RC(rc, FOLD_OK, c);
      for (size_t i = 0; i < cnt; i++) CHECK(out[i] == want(n, rs ? (size_t)me * cnt + i : i, call));
      skipped += fold_comm_last_skips(c, NULL, 0);
      free(in);
      free(out);
    }
  printf("rank %d: exact over %s, rerouted in %d calls\n", me, fold_comm_transport(c), skipped);
  CHECK_RC(fold_barrier(c), FOLD_OK, c);
  fold_comm_destroy(c);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "mp") == 0) {
    run_mp(argc == 3 && strcmp(argv[2], "kill") == 0);
    fflush(stdout);
    return 0; /* CHECK exits non-zero on failure */
  }
  static const sim_check_case cases[] = {
      {"threads", case_threads}, {"sim", case_sim},       {"late", case_late},
      {"timeout", case_timeout}, {"refuse", case_refuse},
  };
  return sim_check_run("ring_skip_test", cases, sizeof cases / sizeof cases[0], argc, argv);
}
