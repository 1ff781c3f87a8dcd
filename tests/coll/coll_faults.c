/* coll_faults.c — mismatched calls, bad arguments, algorithm specs, outstanding nonblocking calls, lost ranks. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fold.h"
#include "shm/shm_harness.h"

#define N 4
static fold_comm *comms[N];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- mismatches: one rank (the "odd" one) calls something else ---- */

typedef struct {
  int kind; /* which mismatch */
  int rank;
  int rc;
  char msg[512];
  double secs;
} mm_arg;

enum { MM_COLL, MM_COUNT, MM_DTYPE, MM_OP, MM_ROOT, MM_GATHER_ROOTS, MM_KINDS };
static const char *mm_names[] = {"collective", "count", "dtype", "op", "root", "gather roots"};
static const char *mm_want[] = {"broadcast", "count=", "dtype=", "op=", "root=", "root="};

static void *mm_rank(void *p) {
  mm_arg *a = p;
  fold_comm *c = comms[a->rank];
  int odd = a->rank == 2;
  float buf[64] = {0}, out[64 * N];
  double t0 = now_s();
  switch (a->kind) {
  case MM_COLL:
    a->rc = odd ? fold_broadcast(buf, 16, FOLD_FLOAT32, 0, c) : fold_allreduce(buf, out, 16, FOLD_FLOAT32, FOLD_SUM, c);
    break;
  case MM_COUNT: a->rc = fold_allreduce(buf, out, odd ? 8 : 16, FOLD_FLOAT32, FOLD_SUM, c); break;
  case MM_DTYPE: a->rc = fold_allreduce(buf, out, 16, odd ? FOLD_INT32 : FOLD_FLOAT32, FOLD_SUM, c); break;
  case MM_OP: a->rc = fold_allreduce(buf, out, 16, FOLD_FLOAT32, odd ? FOLD_MAX : FOLD_SUM, c); break;
  case MM_ROOT: a->rc = fold_broadcast(buf, 16, FOLD_FLOAT32, odd ? 1 : 0, c); break;
  case MM_GATHER_ROOTS: /* everyone names itself root: nobody sends to anybody who expects it */
    a->rc = fold_gather(buf, out, 4, FOLD_FLOAT32, a->rank, c);
    break;
  }
  a->secs = now_s() - t0;
  snprintf(a->msg, sizeof a->msg, "%s", fold_comm_last_error(c));
  return NULL;
}

static void mismatches(void) {
  for (int kind = 0; kind < MM_KINDS; kind++) {
    setenv("FOLD_TIMEOUT", "20", 1);
    CHECK_OK(fold_comm_init_threads(N, comms), NULL);
    pthread_t th[N];
    mm_arg a[N];
    for (int r = 0; r < N; r++) {
      a[r] = (mm_arg){.kind = kind, .rank = r};
      pthread_create(&th[r], NULL, mm_rank, &a[r]);
    }
    for (int r = 0; r < N; r++) pthread_join(th[r], NULL);
    for (int r = 0; r < N; r++) {
      /* A rank may also have finished its own part before the report came
       * (e.g. a broadcast root); then its next call must report it. */
      int rc = a[r].rc;
      if (rc == FOLD_OK) {
        rc = fold_barrier(comms[r]);
        snprintf(a[r].msg, sizeof a[r].msg, "%s", fold_comm_last_error(comms[r]));
      }
      CHECK(rc == FOLD_EMISMATCH, "%s mismatch: rank %d got %s (%s)", mm_names[kind], r, fold_strerror(rc), a[r].msg);
      CHECK(a[r].secs < 10.0, "%s mismatch: rank %d took %.1f s", mm_names[kind], r, a[r].secs);
      CHECK(strstr(a[r].msg, "rank") && strstr(a[r].msg, mm_want[kind]), "%s mismatch: rank %d message lacks \"%s\": %s",
            mm_names[kind], r, mm_want[kind], a[r].msg);
    }
    if (kind == MM_COUNT) printf("example mismatch report: %s\n", a[0].msg);
    for (int r = 0; r < N; r++) fold_comm_destroy(comms[r]);
    unsetenv("FOLD_TIMEOUT");
  }
}

/* ---- several nonblocking collectives outstanding at once ---- */

static void *nb_rank(void *p) {
  int r = (int)(intptr_t)p;
  fold_comm *c = comms[r];
  enum { K = 3, CNT = 5000 };
  static float in[N][K][CNT], out[N][K][CNT];
  int64_t b = r == 1 ? 77 : 0, g[N], mine = 100 + r;
  fold_request *req[K + 3];
  for (int k = 0; k < K; k++) {
    for (int i = 0; i < CNT; i++) in[r][k][i] = (float)(r + k + i % 7);
    CHECK_OK(fold_iallreduce(in[r][k], out[r][k], CNT, FOLD_FLOAT32, FOLD_SUM, c, &req[k]), c);
  }
  CHECK_OK(fold_ibroadcast(&b, 1, FOLD_INT64, 1, c, &req[K]), c);
  CHECK_OK(fold_iallgather(&mine, g, 1, FOLD_INT64, c, &req[K + 1]), c);
  CHECK_OK(fold_ibarrier(c, &req[K + 2]), c);
  for (int k = K + 2; k >= 0; k--) CHECK_OK(fold_wait(req[k]), c); /* in reverse order */
  for (int k = 0; k < K; k++)
    for (int i = 0; i < CNT; i += 97) {
      float want = 0;
      for (int q = 0; q < N; q++) want += (float)(q + k + i % 7);
      CHECK(out[r][k][i] == want, "rank %d iallreduce %d element %d: %g vs %g", r, k, i, out[r][k][i], want);
    }
  CHECK(b == 77, "rank %d ibroadcast got %lld", r, (long long)b);
  for (int q = 0; q < N; q++) CHECK(g[q] == 100 + q, "rank %d iallgather block %d = %lld", r, q, (long long)g[q]);
  /* fold_test completes a collective too */
  fold_request *t;
  float x = 1, y = 0;
  CHECK_OK(fold_iallreduce(&x, &y, 1, FOLD_FLOAT32, FOLD_SUM, c, &t), c);
  int done = 0;
  for (long spins = 0; !done && spins < 100000000; spins++) CHECK_OK(fold_test(t, &done), c);
  CHECK(done && y == N, "rank %d fold_test: done %d y %g", r, done, y);
  return NULL;
}

static void outstanding(void) {
  CHECK_OK(fold_comm_init_threads(N, comms), NULL);
  pthread_t th[N];
  for (int r = 0; r < N; r++) pthread_create(&th[r], NULL, nb_rank, (void *)(intptr_t)r);
  for (int r = 0; r < N; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < N; r++) fold_comm_destroy(comms[r]);
}

/* ---- bad arguments: FOLD_EINVAL with a message, no communication ---- */

static void bad_args(void) {
  fold_comm *c;
  CHECK_OK(fold_comm_init_threads(1, &c), NULL);
  float f[4] = {0}, g[4];
  fold_request *r = (fold_request *)f;
  CHECK_RC(fold_allreduce(NULL, g, 4, FOLD_FLOAT32, FOLD_SUM, c), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "sendbuf is NULL"), "msg: %s", fold_comm_last_error(c));
  CHECK_RC(fold_allreduce(f, g, 4, FOLD_FLOAT32, FOLD_BXOR, c), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "bitwise"), "msg: %s", fold_comm_last_error(c));
  CHECK_RC(fold_allreduce(f, g, 4, (fold_dtype)99, FOLD_SUM, c), FOLD_EINVAL, c);
  CHECK_RC(fold_allreduce(f, g, 4, FOLD_FLOAT32, (fold_op)77, c), FOLD_EINVAL, c);
  CHECK_RC(fold_broadcast(f, 4, FOLD_FLOAT32, 1, c), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "root 1"), "msg: %s", fold_comm_last_error(c));
  CHECK_RC(fold_reduce(f, g, 4, FOLD_FLOAT32, FOLD_SUM, -1, c), FOLD_EINVAL, c);
  CHECK_RC(fold_reduce(f, NULL, 4, FOLD_FLOAT32, FOLD_SUM, 0, c), FOLD_EINVAL, c);
  CHECK_RC(fold_alltoall(f, f, 1, FOLD_FLOAT32, c), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "in-place alltoall"), "msg: %s", fold_comm_last_error(c));
  CHECK_RC(fold_allgather(f, NULL, 1, FOLD_FLOAT32, c), FOLD_EINVAL, c);
  CHECK_RC(fold_scatter(NULL, g, 1, FOLD_FLOAT32, 0, c), FOLD_EINVAL, c);
  CHECK_RC(fold_gather(f, g, SIZE_MAX / 2, FOLD_FLOAT32, 0, c), FOLD_EINVAL, c);
  CHECK_RC(fold_iallreduce(f, g, 4, FOLD_FLOAT32, FOLD_SUM, c, NULL), FOLD_EINVAL, c);
  CHECK_RC(fold_iallreduce(NULL, g, 4, FOLD_FLOAT32, FOLD_SUM, c, &r), FOLD_EINVAL, c);
  CHECK(r == NULL, "failed start left *req set");
  CHECK_RC(fold_barrier(NULL), FOLD_EINVAL, NULL);
  /* the communicator is still fine */
  CHECK_OK(fold_allreduce(f, g, 4, FOLD_FLOAT32, FOLD_SUM, c), c);
  CHECK_OK(fold_allreduce(NULL, NULL, 0, FOLD_FLOAT32, FOLD_SUM, c), c);
  fold_comm_destroy(c);
}

/* ---- the algorithm grammar ---- */

/* A non-commutative op: the higher rank's value wins. */
static void keep_upper(void *inout, const void *in, size_t count, fold_dtype dt, void *ctx) {
  (void)inout, (void)in, (void)count, (void)dt, (void)ctx;
}

static void specs(void) {
  fold_comm *c;
  CHECK_OK(fold_comm_init_threads(1, &c), NULL);
  CHECK_OK(fold_comm_set_algo(c, "allreduce=ring,broadcast=binomial"), c);
  CHECK_OK(fold_comm_set_algo(c, "allreduce=auto"), c);
  CHECK_RC(fold_comm_set_algo(c, ""), FOLD_EINVAL, c); /* an empty spec is a lost word, not "no change" */
  CHECK_RC(fold_comm_set_algo(c, "allreduce=carrier_pigeon"), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "carrier_pigeon"), "msg: %s", fold_comm_last_error(c));
  CHECK_RC(fold_comm_set_algo(c, "allsmash=ring"), FOLD_EINVAL, c);
  CHECK_RC(fold_comm_set_algo(c, "allreduce"), FOLD_EINVAL, c);
  CHECK_RC(fold_comm_set_algo(c, "barrier=dissemination,allreduce=nope"), FOLD_EINVAL, c);
  CHECK_RC(fold_comm_set_algo(c, NULL), FOLD_EINVAL, c);
  CHECK_RC(fold_comm_set_algo(NULL, "allreduce=ring"), FOLD_EINVAL, NULL);
  fold_comm_destroy(c);
  /* FOLD_ALGO applies at creation: ring refuses a non-commutative op, so the
   * refusal proves the variable took effect */
  setenv("FOLD_ALGO", "allreduce=ring", 1);
  CHECK_OK(fold_comm_init_threads(1, &c), NULL);
  unsetenv("FOLD_ALGO");
  fold_op nc;
  CHECK_OK(fold_op_create(&nc, keep_upper, NULL, 0, c), c);
  int64_t x = 1, y;
  CHECK_RC(fold_allreduce(&x, &y, 1, FOLD_INT64, nc, c), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "ring"), "msg: %s", fold_comm_last_error(c));
  CHECK_OK(fold_comm_set_algo(c, "allreduce=auto"), c);
  CHECK_OK(fold_allreduce(&x, &y, 0, FOLD_INT64, nc, c), c);
  fold_comm_destroy(c);
}

/* ---- a rank lost in the middle of a collective ---- */

static void *lost_rank(void *p) {
  int r = (int)(intptr_t)p;
  static float buf[N][1 << 16];
  if (r == 3) {
    usleep(200000);
    fold_comm_destroy(comms[3]);
    return NULL;
  }
  int rc = fold_allreduce(buf[r], buf[r], 1 << 16, FOLD_FLOAT32, FOLD_SUM, comms[r]);
  CHECK(rc == FOLD_EPEER, "rank %d: allreduce with a lost rank returned %s", r, fold_strerror(rc));
  CHECK(strstr(fold_comm_last_error(comms[r]), "lost"), "rank %d msg: %s", r, fold_comm_last_error(comms[r]));
  return NULL;
}

static void lost(void) {
  setenv("FOLD_TIMEOUT", "20", 1);
  CHECK_OK(fold_comm_init_threads(N, comms), NULL);
  unsetenv("FOLD_TIMEOUT");
  double t0 = now_s();
  pthread_t th[N];
  for (int r = 0; r < N; r++) pthread_create(&th[r], NULL, lost_rank, (void *)(intptr_t)r);
  for (int r = 0; r < N; r++) pthread_join(th[r], NULL);
  CHECK(now_s() - t0 < 5.0, "lost rank noticed after %.1f s", now_s() - t0);
  for (int r = 0; r < 3; r++) fold_comm_destroy(comms[r]);
}

/* ---- the shm algorithms: refused on threads; a killed rank and a mismatch
 * among real processes (the shm harness forks them) ---- */

static void *shm_threads_rank(void *p) {
  int r = (int)(intptr_t)p;
  float x = 1, y = 0;
  int rc = fold_allreduce(&x, &y, 1, FOLD_FLOAT32, FOLD_SUM, comms[r]);
  CHECK(rc == FOLD_EINVAL && strstr(fold_comm_last_error(comms[r]), "shm") &&
        strstr(fold_comm_last_error(comms[r]), "threads"),
        "rank %d: forced shm on threads: %s (%s)", r, fold_strerror(rc), fold_comm_last_error(comms[r]));
  /* refused alike everywhere: the communicator is fine, auto still works */
  CHECK_OK(fold_comm_set_algo(comms[r], "allreduce=auto"), comms[r]);
  CHECK_OK(fold_allreduce(&x, &y, 1, FOLD_FLOAT32, FOLD_SUM, comms[r]), comms[r]);
  CHECK(y == N, "rank %d: auto allreduce after the refusal gave %g", r, y);
  return NULL;
}

static void shm_on_threads(void) {
  setenv("FOLD_ALGO", "allreduce=shm", 1);
  CHECK_OK(fold_comm_init_threads(N, comms), NULL);
  unsetenv("FOLD_ALGO");
  pthread_t th[N];
  for (int r = 0; r < N; r++) pthread_create(&th[r], NULL, shm_threads_rank, (void *)(intptr_t)r);
  for (int r = 0; r < N; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < N; r++) fold_comm_destroy(comms[r]);
}

/* The last rank dies while the others are inside a multi-chunk shm
 * allreduce (they wait on its flags, no message is pending): FOLD_EPEER
 * naming it, promptly. */
static int shm_kill_body(fold_comm *c, void *arg) {
  (void)arg;
  int me = fold_comm_rank(c), victim = fold_comm_size(c) - 1;
  size_t cnt = 4u << 20;
  float *buf = calloc(cnt, sizeof *buf);
  CHECK_OK(fold_comm_set_algo(c, "allreduce=shm"), c);
  CHECK_OK(fold_allreduce(buf, buf, 1024, FOLD_FLOAT32, FOLD_SUM, c), c); /* shm works here */
  if (me == victim) {
    usleep(100000); /* the others are waiting on its flags by now */
    kill(getpid(), SIGKILL);
  }
  double t0 = shm_now();
  int rc = fold_allreduce(buf, buf, cnt, FOLD_FLOAT32, FOLD_SUM, c);
  double dt = shm_now() - t0;
  char want[32];
  snprintf(want, sizeof want, "peer rank %d", victim);
  CHECK(rc == FOLD_EPEER && strstr(fold_comm_last_error(c), want) && strstr(fold_comm_last_error(c), "lost"),
        "rank %d: shm allreduce with a killed rank: %s (%s)", me, fold_strerror(rc), fold_comm_last_error(c));
  CHECK(dt < 5.0, "rank %d: the killed rank was noticed after %.1f s", me, dt);
  if (me == 0) printf("shm kill: %s\n", fold_comm_last_error(c));
  free(buf);
  return atomic_load(&check_failures);
}

/* One rank calls a different count, then another collective: every rank
 * gets FOLD_EMISMATCH naming both calls, nobody hangs. */
static int shm_mismatch_body(fold_comm *c, void *arg) {
  int kind = *(int *)arg, me = fold_comm_rank(c), odd = me == 1;
  float buf[64] = {0}, out[64];
  double t0 = shm_now();
  int rc = kind == 0   ? fold_allreduce(buf, out, odd ? 8 : 16, FOLD_FLOAT32, FOLD_SUM, c)
           : odd       ? fold_broadcast(buf, 16, FOLD_FLOAT32, 0, c)
                       : fold_reduce_scatter(buf, out, 16, FOLD_FLOAT32, FOLD_SUM, c);
  if (rc == FOLD_OK) rc = fold_barrier(c); /* a rank may finish its part first: its next call reports it */
  const char *want = kind == 0 ? "count=" : "broadcast";
  CHECK(rc == FOLD_EMISMATCH && strstr(fold_comm_last_error(c), want) && strstr(fold_comm_last_error(c), "rank"),
        "rank %d: shm mismatch %d: %s (%s)", me, kind, fold_strerror(rc), fold_comm_last_error(c));
  CHECK(shm_now() - t0 < 10.0, "rank %d: mismatch took %.1f s", me, shm_now() - t0);
  if (me == 0) printf("shm mismatch: %s\n", fold_comm_last_error(c));
  return atomic_load(&check_failures);
}

static void shm_procs(void) {
  setenv("FOLD_TIMEOUT", "20", 1);
  shm_run kill_run = {3, "collkill", shm_kill_body, NULL, -1, SHM_DIE_NEVER, 2, NULL};
  CHECK(shm_run_ranks(&kill_run) == 0, "shm collective with a killed rank: see above");
  for (int kind = 0; kind < 2; kind++) {
    shm_run mm_run = {3, kind ? "collmm1" : "collmm0", shm_mismatch_body, &kind, -1, SHM_DIE_NEVER, -1, NULL};
    CHECK(shm_run_ranks(&mm_run) == 0, "shm mismatch %d: see above", kind);
  }
  unsetenv("FOLD_TIMEOUT");
}

int main(void) {
  setenv("FOLD_DEBUG", "NONE", 0);
  shm_on_threads();
  shm_procs();
  mismatches();
  outstanding();
  bad_args();
  specs();
  lost();
  return check_report("coll_faults");
}
