/* engine_delay.c — FOLD_INJECT_DELAY: parsing, a straggler on threads
 * (measured, generous bounds) and in the simulator (exact virtual times),
 * results exact. Usage: engine_delay <case>; engine_delay mp <algo> under
 * foldrun with FOLD_INJECT_DELAY set (see tests/engine.cmake). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "fold.h"
#include "sim/sim_check.h"

#define COUNT 4096

/* Rank r's input value i; the sum over n ranks is exact in int32. */
static int32_t val(int r, int i) { return (int32_t)(r * 1000 + i % 977); }

static int check_sum(const int32_t *out, int n) {
  int bad = 0;
  for (int i = 0; i < COUNT; i++) {
    int32_t w = 0;
    for (int r = 0; r < n; r++) w += val(r, i);
    bad += out[i] != w;
  }
  return bad;
}

/* Make n thread ranks with FOLD_INJECT_DELAY = v (NULL: unset). */
static void make_threads(int n, fold_comm **c, const char *v) {
  if (v) setenv("FOLD_INJECT_DELAY", v, 1);
  else unsetenv("FOLD_INJECT_DELAY");
  CHECK_RC(fold_comm_init_threads(n, c), FOLD_OK, NULL);
  unsetenv("FOLD_INJECT_DELAY"); /* read at creation only */
}

/* Valid lists name some ranks; anything malformed is ignored as a whole. */
static void case_parse(void) {
  fold_comm *c[4];
  make_threads(4, c, "1:0.25,3:2");
  CHECK(fold__engine_inject_delay(c[0]) == 0 && fold__engine_inject_delay(c[1]) == 250000000 &&
        fold__engine_inject_delay(c[2]) == 0 && fold__engine_inject_delay(c[3]) == 2000000000);
  for (int i = 0; i < 4; i++) fold_comm_destroy(c[i]);
  make_threads(4, c, "2:1e-3,2:0.5"); /* the last item naming a rank wins */
  CHECK(fold__engine_inject_delay(c[2]) == 500000000 && fold__engine_inject_delay(c[1]) == 0);
  for (int i = 0; i < 4; i++) fold_comm_destroy(c[i]);
  make_threads(2, c, "7:1"); /* a rank this communicator lacks: nobody here */
  CHECK(fold__engine_inject_delay(c[0]) == 0 && fold__engine_inject_delay(c[1]) == 0);
  for (int i = 0; i < 2; i++) fold_comm_destroy(c[i]);
  static const char *const bad[] = {"1", "1:", ":1", "1:x", "1:-1", "-1:1", "1:0.5,", "1:0.5;2:1", "1:nan",
                                    "1:inf", "1:1e9", "a:1", "1:0.5 ", "1:0.5,,2:1"};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    make_threads(2, c, bad[k]);
    if (fold__engine_inject_delay(c[1]) != 0 || fold__engine_inject_delay(c[0]) != 0)
      fprintf(stderr, "FOLD_INJECT_DELAY=%s was not ignored\n", bad[k]);
    CHECK(fold__engine_inject_delay(c[1]) == 0 && fold__engine_inject_delay(c[0]) == 0);
    for (int i = 0; i < 2; i++) fold_comm_destroy(c[i]);
  }
}

/* ---- threads: measured ---------------------------------------------------------------- */

enum { NT = 4 };
static fold_comm *tc[NT];
static int64_t took[NT];
static const char *talgo;

static void *run_rank(void *arg) {
  int me = (int)(intptr_t)arg;
  fold_comm *c = tc[me];
  static int32_t in[NT][COUNT], out[NT][COUNT];
  for (int i = 0; i < COUNT; i++) in[me][i] = val(me, i);
  char spec[64];
  snprintf(spec, sizeof spec, "allreduce=%s", talgo);
  CHECK_RC(fold_comm_set_algo(c, spec), FOLD_OK, c);
  CHECK_RC(fold_barrier(c), FOLD_OK, c);
  int64_t t0 = fold__now(c);
  CHECK_RC(fold_allreduce(in[me], out[me], COUNT, FOLD_INT32, FOLD_SUM, c), FOLD_OK, c);
  took[me] = fold__now(c) - t0;
  int bad = check_sum(out[me], NT);
  if (bad) fprintf(stderr, "rank %d (%s): %d wrong\n", me, talgo, bad);
  CHECK(bad == 0);
  return NULL;
}

static void run_threads(const char *v, const char *algo, int64_t *t) {
  pthread_t th[NT];
  talgo = algo;
  make_threads(NT, tc, v);
  for (int i = 0; i < NT; i++) CHECK(pthread_create(&th[i], NULL, run_rank, (void *)(intptr_t)i) == 0);
  for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < NT; i++) {
    t[i] = took[i];
    fold_comm_destroy(tc[i]);
  }
}

/* Rank 1 waits 50 ms before each of its reduction steps: the ring's
 * reduce-scatter has n-1 = 3 of them, recursive doubling log2(n) = 2. It
 * finishes at least that much later than without the knob, and so does
 * every rank that needs its reduced data: on the ring everyone; in
 * recursive doubling rank 3, its partner of the second round, while ranks
 * 0 and 2 only ever get rank 1's own data, undelayed. Sums stay exact. */
static void case_threads(void) {
  static const struct {
    const char *algo;
    int steps;
    int waits[NT]; /* which ranks need rank 1's reduced data */
  } algos[] = {{"ring", 3, {1, 1, 1, 1}}, {"recursive_doubling", 2, {0, 1, 0, 1}}};
  const int64_t D = 50000000;
  for (size_t a = 0; a < sizeof algos / sizeof *algos; a++) {
    int64_t plain[NT], slow[NT];
    run_threads(NULL, algos[a].algo, plain);
    run_threads("1:0.05", algos[a].algo, slow);
    printf("%s: rank 1 took %.1f ms without the delay, %.1f ms with 50 ms per reduction step (%d steps);"
           " the others %.1f %.1f %.1f ms\n",
           algos[a].algo, plain[1] / 1e6, slow[1] / 1e6, algos[a].steps, slow[0] / 1e6, slow[2] / 1e6, slow[3] / 1e6);
    /* Lower bounds only: the delays cannot be faked, but how long the same
     * work takes without them varies 100-fold on a loaded machine (47.8 ms
     * once under TSan), so "plain + delays" is no bound. The exact added
     * time is checked in virtual time below (case_sim). */
    CHECK(slow[1] >= algos[a].steps * D);
    for (int i = 0; i < NT; i++) CHECK(!algos[a].waits[i] || slow[i] >= D);
  }
}

/* ---- the simulator: exact --------------------------------------------------------------- */

#define LAT (1.0 / 512) /* whole nanoseconds (1953125), so timers land exactly */

static double sim_run(int n, const char *v, const char *algo, int *bad) {
  fold_comm *c[8];
  fold_sim *sim;
  fold_sim_params p = {.latency = LAT, .byte_time = 0};
  if (v) setenv("FOLD_INJECT_DELAY", v, 1);
  CHECK_RC(fold_sim_create(n, &p, &sim, c), FOLD_OK, NULL);
  unsetenv("FOLD_INJECT_DELAY");
  static int32_t in[8][COUNT], out[8][COUNT];
  fold_request *r[8];
  char spec[64];
  snprintf(spec, sizeof spec, "allreduce=%s", algo);
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < COUNT; k++) in[i][k] = val(i, k);
    CHECK_RC(fold_comm_set_algo(c[i], spec), FOLD_OK, c[i]);
    CHECK_RC(fold_iallreduce(in[i], out[i], COUNT, FOLD_INT32, FOLD_SUM, c[i], &r[i]), FOLD_OK, c[i]);
  }
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  *bad = 0;
  for (int i = 0; i < n; i++) {
    CHECK_RC(fold_wait(r[i]), FOLD_OK, c[i]);
    *bad += check_sum(out[i], n);
  }
  double t = fold_sim_time(sim);
  fold_sim_destroy(sim);
  return t;
}

/* Two ranks, one exchange and one reduction each: rank 1's reduction
 * starts exactly 1/4 s later, so the run ends exactly 1/4 s later.
 * Four ranks of a ring, latency L, no bandwidth cost, six steps: 6L
 * without delay. With rank 2 delayed D per reduction: its first block
 * arrives at L and is reduced at L + D; the next blocks from rank 1 are
 * already there when it sends the reduced one, so each further step adds
 * D only: its last reduction ends at L + 3D, and the finished block still
 * travels the 3 allgather hops: 4L + 3D. */
static void case_sim(void) {
  int bad;
  double plain = sim_run(2, NULL, "recursive_doubling", &bad);
  CHECK(bad == 0);
  double slow = sim_run(2, "1:0.25", "recursive_doubling", &bad);
  CHECK(bad == 0);
  printf("n=2 recursive doubling: %.9g s, with rank 1 delayed 0.25 s: %.9g s\n", plain, slow);
  CHECK_T(slow, plain + 0.25);
  plain = sim_run(4, NULL, "ring", &bad);
  CHECK(bad == 0);
  slow = sim_run(4, "2:0.125", "ring", &bad);
  CHECK(bad == 0);
  printf("n=4 ring: %.9g s, with rank 2 delayed 0.125 s per step: %.9g s\n", plain, slow);
  CHECK_T(plain, 6 * LAT);
  CHECK_T(slow, 4 * LAT + 3 * 0.125);
  /* a rank that is not in the list changes nothing */
  double other = sim_run(4, "5:1", "ring", &bad);
  CHECK(bad == 0);
  CHECK_T(other, plain);
}

/* A delay past FOLD_TIMEOUT is a timeout that says why: the rank waited
 * for its own delay, not for a peer. */
static fold_comm *toc[2];
static int to_rc[2];
static void *timeout_rank(void *arg) {
  int me = (int)(intptr_t)arg;
  static int32_t in[2][COUNT], out[2][COUNT];
  to_rc[me] = fold_allreduce(in[me], out[me], COUNT, FOLD_INT32, FOLD_SUM, toc[me]);
  return NULL;
}

static void case_timeout(void) {
  setenv("FOLD_TIMEOUT", "0.3", 1);
  make_threads(2, toc, "0:30");
  unsetenv("FOLD_TIMEOUT");
  pthread_t th[2];
  for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, timeout_rank, (void *)(intptr_t)i) == 0);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  printf("rank 0: %s\nrank 1: %s\n", fold_comm_last_error(toc[0]), fold_comm_last_error(toc[1]));
  CHECK(to_rc[0] == FOLD_ETIMEDOUT && to_rc[1] != FOLD_OK);
  CHECK(strstr(fold_comm_last_error(toc[0]), "rank 0") && strstr(fold_comm_last_error(toc[0]), "FOLD_INJECT_DELAY"));
  for (int i = 0; i < 2; i++) fold_comm_destroy(toc[i]);
}

/* ---- processes: `engine_delay mp ALGO` under foldrun, FOLD_INJECT_DELAY=1:0.05 ------------ */

static int run_mp(const char *algo) {
  fold_comm *c;
  if (fold_init(&c) != FOLD_OK) {
    fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
    return 1;
  }
  int me = fold_comm_rank(c), n = fold_comm_size(c);
  static int32_t in[COUNT], out[COUNT];
  for (int i = 0; i < COUNT; i++) in[i] = val(me, i);
  char spec[64];
  snprintf(spec, sizeof spec, "allreduce=%s", algo);
  CHECK_RC(fold_comm_set_algo(c, spec), FOLD_OK, c);
  int64_t d = fold__engine_inject_delay(c);
  CHECK(d == (me == 1 ? 50000000 : 0)); /* the test sets FOLD_INJECT_DELAY=1:0.05 */
  CHECK_RC(fold_barrier(c), FOLD_OK, c);
  int64_t t0 = fold__now(c);
  CHECK_RC(fold_allreduce(in, out, COUNT, FOLD_INT32, FOLD_SUM, c), FOLD_OK, c);
  int64_t t = fold__now(c) - t0;
  CHECK(check_sum(out, n) == 0);
  printf("rank %d: allreduce=%s took %.1f ms over %s\n", me, algo, t / 1e6, fold_comm_transport(c));
  /* rank 1 is late by its delay at least; on the ring everyone waits for
   * it, while the shm algorithm's ranks each reduce the whole vector from
   * the shared slots at this size, so only rank 1's own call is late */
  CHECK(me != 1 || t >= 50000000);
  CHECK(strcmp(algo, "ring") != 0 || t >= 50000000);
  CHECK_RC(fold_barrier(c), FOLD_OK, c);
  fold_comm_destroy(c);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "mp") == 0) {
    run_mp(argv[2]);
    fflush(stdout);
    return 0; /* CHECK exits non-zero on failure */
  }
  static const sim_check_case cases[] = {
      {"parse", case_parse},
      {"threads", case_threads},
      {"sim", case_sim},
      {"timeout", case_timeout},
  };
  return sim_check_run("engine_delay", cases, sizeof cases / sizeof cases[0], argc, argv);
}
