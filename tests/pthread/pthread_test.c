/* pthread_test.c — FOLD_PROGRESS_THREAD=1: nonblocking operations move while the user makes no
 * call, interleave correctly with user calls, survive destroy, and a lost peer still gives the
 * user FOLD_EPEER naming the rank.
 *
 * Usage:
 *   pthread_test threads N     ranks as threads (inproc), every check below; also no helper on
 *                              simulated communicators, nor for FOLD_PROGRESS_THREAD=0, "" or "yes"
 *   pthread_test procs         one rank of a foldrun job (shm or tcp), the same checks
 *   pthread_test lost shm|tcp  forks 2 ranks; rank 1 exits while rank 0's helper drives an
 *                              irecv from it; rank 0's fold_wait must return FOLD_EPEER naming rank 1
 * The program sets FOLD_PROGRESS_THREAD=1 itself (before creating communicators), and checks
 * that it took effect. "Moves without calls" is observed with the request's completion flag
 * (fold__req_done, an atomic load), which only the helper can set while the user calls nothing:
 * without the helper these checks time out and fail. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/internal.h"
#include "engine/engine.h"
#include "fold.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "Compute" without any fold call until r completes (1) or `limit` seconds pass (0). */
static int completes_alone(fold_request *r, double limit) {
  double t0 = now_s();
  while (!fold__req_done(r)) {
    if (now_s() - t0 > limit)
      return 0;
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  return 1;
}

/* 1. An irecv and an iallreduce complete while this rank makes no call. */
static void check_moves_alone(fold_comm *c) {
  int me = fold_comm_rank(c), n = fold_comm_size(c);
  CHECK(c->pthread != NULL, "rank %d: FOLD_PROGRESS_THREAD=1 but no helper thread", me);
  int64_t in = -1, out = 100 + me;
  fold_request *rr = NULL, *sr = NULL;
  int from = (me + n - 1) % n, to = (me + 1) % n;
  CHECK_OK(fold_irecv(&in, 1, FOLD_INT64, from, 3, c, &rr), c);
  CHECK_OK(fold_isend(&out, 1, FOLD_INT64, to, 3, c, &sr), c);
  CHECK(rr && completes_alone(rr, 10.0), "rank %d: irecv from rank %d did not complete without calls", me, from);
  CHECK_OK(fold_wait(rr), c);
  CHECK_OK(fold_wait(sr), c);
  CHECK(in == 100 + from, "rank %d: irecv got %lld", me, (long long)in);
  /* 1 MiB allreduce: many rounds and segments, all driven by the helpers */
  size_t cnt = 1 << 18;
  int32_t *buf = malloc(cnt * sizeof *buf);
  for (size_t i = 0; i < cnt; i++)
    buf[i] = (int32_t)(i % 1000) + me;
  fold_request *ar = NULL;
  CHECK_OK(fold_iallreduce(buf, buf, cnt, FOLD_INT32, FOLD_SUM, c, &ar), c);
  CHECK(ar && completes_alone(ar, 20.0), "rank %d: iallreduce did not complete without calls", me);
  CHECK_OK(fold_wait(ar), c);
  int bad = 0;
  for (size_t i = 0; i < cnt && !bad; i++)
    bad = buf[i] != (int32_t)(i % 1000) * n + n * (n - 1) / 2;
  CHECK(!bad, "rank %d: iallreduce result wrong", me);
  free(buf);
}

/* 2. Many nonblocking operations of several kinds outstanding at once,
 * interleaved with blocking calls, tests and computing. */
static void check_many(fold_comm *c, int rounds) {
  int me = fold_comm_rank(c), n = fold_comm_size(c);
  enum { K = 8 };
  for (int round = 0; round < rounds; round++) {
    fold_request *req[4 * K + 2];
    int nreq = 0;
    int64_t rin[K], rout[K], ar[K][64], bc[64];
    int from = (me + n - 1) % n, to = (me + 1) % n;
    for (int k = 0; k < K; k++) {
      rout[k] = (int64_t)round * 1000 + k * 10 + me;
      rin[k] = -1;
      CHECK_OK(fold_irecv(&rin[k], 1, FOLD_INT64, from, k, c, &req[nreq++]), c);
      CHECK_OK(fold_isend(&rout[k], 1, FOLD_INT64, to, k, c, &req[nreq++]), c);
      for (int i = 0; i < 64; i++)
        ar[k][i] = k + i + me;
      CHECK_OK(fold_iallreduce(ar[k], ar[k], 64, FOLD_INT64, FOLD_SUM, c, &req[nreq++]), c);
      if (k % 3 == 0) /* a call in between: the user and the helper take turns */
        CHECK_OK(fold_progress(c), c);
    }
    for (int i = 0; i < 64; i++)
      bc[i] = me == round % n ? round * 3 + i : -1;
    CHECK_OK(fold_ibroadcast(bc, 64, FOLD_INT64, round % n, c, &req[nreq++]), c);
    /* a blocking collective while the others are in flight */
    int64_t one = 1, sum = 0;
    CHECK_OK(fold_allreduce(&one, &sum, 1, FOLD_INT64, FOLD_SUM, c), c);
    CHECK(sum == n, "rank %d: blocking allreduce %lld", me, (long long)sum);
    /* compute a little without calls, then finish in a shuffled order */
    double t0 = now_s();
    while (now_s() - t0 < 0.002)
      ;
    for (int i = nreq - 1; i >= 0; i -= 2) {
      int done = 0;
      CHECK_OK(fold_test(req[i], &done), c);
      if (!done)
        CHECK_OK(fold_wait(req[i]), c);
    }
    for (int i = nreq - 2; i >= 0; i -= 2)
      CHECK_OK(fold_wait(req[i]), c);
    for (int k = 0; k < K; k++) {
      CHECK(rin[k] == (int64_t)round * 1000 + k * 10 + from, "rank %d round %d: rin[%d] = %lld", me, round, k,
            (long long)rin[k]);
      for (int i = 0; i < 64; i++)
        if (ar[k][i] != (int64_t)(k + i) * n + n * (n - 1) / 2) {
          CHECK(0, "rank %d round %d: allreduce %d [%d] = %lld", me, round, k, i, (long long)ar[k][i]);
          break;
        }
    }
    for (int i = 0; i < 64; i++)
      if (bc[i] != round * 3 + i) {
        CHECK(0, "rank %d round %d: broadcast [%d] = %lld", me, round, i, (long long)bc[i]);
        break;
      }
  }
}

/* 3. Destroy while the helper drives: an irecv nobody answers and an
 * iallreduce only some ranks start are pending at destroy. */
static void leave_pending(fold_comm *c) {
  int me = fold_comm_rank(c);
  int64_t *sink = calloc(16, sizeof *sink);
  fold_request *r;
  /* a peer that destroyed first may fail these: FOLD_EPEER is fine here */
  int rc = fold_irecv(sink, 1, FOLD_INT64, (me + 1) % fold_comm_size(c), 77, c, &r);
  CHECK(rc == FOLD_OK || rc == FOLD_EPEER, "rank %d: irecv: %s", me, fold_comm_last_error(c));
  if (me % 2 == 0) {
    rc = fold_iallreduce(sink + 1, sink + 1, 8, FOLD_INT64, FOLD_SUM, c, &r);
    CHECK(rc == FOLD_OK || rc == FOLD_EPEER, "rank %d: iallreduce: %s", me, fold_comm_last_error(c));
  }
  struct timespec ts = {0, 5000000}; /* let the helper sleep in the transports */
  nanosleep(&ts, NULL);
  CHECK_OK(fold_comm_destroy(c), NULL);
  free(sink); /* nothing writes it after destroy */
}

/* 4. Sub-communicators share the world's transports, lock and helper: a
 * child's iallreduce moves with no calls, interleaved with the world's; the
 * world failing on a mismatch does not park the helper for the child; the
 * world destroyed before the child (odd round) or after (even round). */
static fold_comm *check_children(fold_comm *c, int round) {
  int me = fold_comm_rank(c), n = fold_comm_size(c);
  fold_comm *kid = NULL;
  CHECK_OK(fold_comm_split(c, me % 2, n - me, &kid), c);
  if (kid == NULL) return c;
  CHECK(kid->pthread == c->pthread, "rank %d: the child does not share the world's helper", me);
  int kn = fold_comm_size(kid);
  int64_t a[256], w[256];
  for (int i = 0; i < 256; i++) a[i] = i + me, w[i] = 2 * i + me;
  fold_request *ka = NULL, *wa = NULL;
  CHECK_OK(fold_iallreduce(a, a, 256, FOLD_INT64, FOLD_SUM, kid, &ka), kid);
  CHECK_OK(fold_iallreduce(w, w, 256, FOLD_INT64, FOLD_SUM, c, &wa), c);
  CHECK(ka && completes_alone(ka, 20.0), "rank %d: the child's iallreduce did not complete without calls", me);
  CHECK(wa && completes_alone(wa, 20.0), "rank %d: the world's iallreduce did not complete without calls", me);
  CHECK_OK(fold_wait(ka), kid);
  CHECK_OK(fold_wait(wa), c);
  int64_t ksum = 0; /* the child's members are this rank's parity class */
  for (int r = me % 2; r < n; r += 2) ksum += r;
  CHECK(a[5] == 5 * kn + ksum, "rank %d: child allreduce %lld, want %lld", me, (long long)a[5], (long long)(5 * kn + ksum));
  CHECK(w[5] == 10 * n + n * (n - 1) / 2, "rank %d: world allreduce %lld", me, (long long)w[5]);
  if (round % 2) {
    CHECK_OK(fold_comm_destroy(c), NULL); /* the world first: the child lives on, helper and all */
    int64_t x = 1, y = 0;
    fold_request *r = NULL;
    CHECK_OK(fold_iallreduce(&x, &y, 1, FOLD_INT64, FOLD_SUM, kid, &r), kid);
    CHECK(r && completes_alone(r, 20.0), "rank %d: the child's iallreduce after the world went did not move", me);
    CHECK_OK(fold_wait(r), kid);
    CHECK(y == kn, "rank %d: child sum %lld after the world went", me, (long long)y);
    return kid;
  }
  CHECK_OK(fold_comm_destroy(kid), NULL);
  return c;
}

static void run_rank(fold_comm *c) {
  c = check_children(c, 0);
  c = check_children(c, 1); /* c is now the child of this round; it stands in for the world below */
  check_moves_alone(c);
  check_many(c, 20);
  CHECK_OK(fold_barrier(c), c);
  leave_pending(c);
}

static void *thread_main(void *arg) {
  run_rank(arg);
  return NULL;
}

static int run_threads(int n) {
  fold_comm *comms[32];
  if (n < 2 || n > 32) return 2;
  CHECK_OK(fold_comm_init_threads(n, comms), NULL);
  pthread_t th[32];
  for (int i = 0; i < n; i++)
    pthread_create(&th[i], NULL, thread_main, comms[i]);
  for (int i = 0; i < n; i++)
    pthread_join(th[i], NULL);
  /* and a communicator destroyed with the helper parked (nothing pending) */
  CHECK_OK(fold_comm_init_threads(2, comms), NULL);
  CHECK(comms[0]->pthread != NULL, "no helper on a fresh communicator");
  CHECK_OK(fold_comm_destroy(comms[0]), NULL);
  CHECK_OK(fold_comm_destroy(comms[1]), NULL);
  /* simulated communicators never get one (their ranks share the simulator's thread) */
  fold_sim *sim;
  CHECK_OK(fold_sim_create(2, NULL, &sim, comms), NULL);
  CHECK(comms[0]->pthread == NULL && comms[1]->pthread == NULL, "a simulated communicator has a helper thread");
  CHECK_OK(fold_sim_destroy(sim), NULL);
  /* a value other than 0 or 1 is warned about and means off; 0 is off */
  const char *vals[] = {"yes", "0", ""};
  for (int k = 0; k < 3; k++) {
    setenv("FOLD_PROGRESS_THREAD", vals[k], 1);
    CHECK_OK(fold_comm_init_threads(1, comms), NULL);
    CHECK(comms[0]->pthread == NULL, "FOLD_PROGRESS_THREAD=%s started a helper", vals[k]);
    CHECK_OK(fold_comm_destroy(comms[0]), NULL);
  }
  setenv("FOLD_PROGRESS_THREAD", "1", 1);
  return check_report("pthread_test threads");
}

static int run_procs(void) {
  fold_comm *c;
  if (fold_init(&c)) {
    fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
    return 1;
  }
  run_rank(c);
  return check_report("pthread_test procs");
}

/* 4. Rank 1 exits (no destroy) while rank 0 computes and its helper drives
 * an irecv from rank 1: fold_wait returns FOLD_EPEER naming rank 1. */
static int lost_child(int rank, const char *store) {
  fold_comm *c;
  if (fold_comm_init(&c, rank, 2, store)) {
    fprintf(stderr, "rank %d: init: %s\n", rank, fold_comm_last_error(NULL));
    return 10;
  }
  int64_t v = 0;
  if (rank == 1) {
    CHECK_OK(fold_recv(&v, 1, FOLD_INT64, 0, 1, c), c); /* rank 0 is in its compute phase now */
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
    _exit(0);
  }
  fold_request *r;
  CHECK_OK(fold_irecv(&v, 1, FOLD_INT64, 1, 2, c, &r), c);
  CHECK_OK(fold_send(&v, 1, FOLD_INT64, 1, 1, c), c);
  CHECK(c->pthread != NULL, "rank 0: no helper thread");
  /* the helper notices the loss while we compute: the request completes */
  CHECK(completes_alone(r, 10.0), "rank 0: irecv from the lost rank 1 still pending after 10 s");
  int rc = fold_wait(r);
  const char *msg = fold_comm_last_error(c);
  CHECK(rc == FOLD_EPEER && strstr(msg, "rank 1") != NULL, "rank 0: fold_wait gave %s: %s", fold_strerror(rc), msg);
  printf("rank 0: %s: %s\n", fold_strerror(rc), msg);
  /* later calls get the failure too, and destroy works */
  CHECK_RC(fold_send(&v, 1, FOLD_INT64, 1, 3, c), FOLD_EPEER, c);
  CHECK_OK(fold_comm_destroy(c), NULL);
  return atomic_load(&check_failures) ? 1 : 0;
}

static int run_lost(const char *tp) {
  char dir[] = "/tmp/fold-pthread-lost-XXXXXX", store[64];
  if (mkdtemp(dir) == NULL) return 2;
  snprintf(store, sizeof store, "file://%s", dir);
  setenv("FOLD_TRANSPORT", tp, 1);
  setenv("FOLD_TIMEOUT", "30", 1);
  pid_t pid[2];
  for (int r = 0; r < 2; r++)
    if ((pid[r] = fork()) == 0)
      _exit(lost_child(r, store));
  int st0 = 0, st1 = 0;
  waitpid(pid[0], &st0, 0);
  waitpid(pid[1], &st1, 0);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  CHECK(WIFEXITED(st0) && WEXITSTATUS(st0) == 0, "rank 0 (the survivor) failed: status %d", st0);
  CHECK(WIFEXITED(st1) && WEXITSTATUS(st1) == 0, "rank 1 did not exit cleanly: status %d", st1);
  return check_report("pthread_test lost");
}

int main(int argc, char **argv) {
  setenv("FOLD_PROGRESS_THREAD", "1", 1);
  if (argc >= 3 && strcmp(argv[1], "threads") == 0) return run_threads(atoi(argv[2]));
  if (argc >= 2 && strcmp(argv[1], "procs") == 0) return run_procs();
  if (argc >= 3 && strcmp(argv[1], "lost") == 0) return run_lost(argv[2]);
  fprintf(stderr, "usage: pthread_test threads N | procs | lost shm|tcp\n");
  return 2;
}
