/* p2p_threads.c — the point-to-point matrix and failure cases over inproc (ranks as threads). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fold.h"
#include "p2p/p2p_suite.h"



typedef struct { fold_comm *c; size_t big; int wild_only; } arg_t;

static void *run_suite(void *p) {
  arg_t *a = p;
  if (a->wild_only)
    p2p_wild_run(a->c, a->big);
  else
    p2p_suite_run(a->c, a->big);
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void matrix_run(int n, size_t big, int wild_only) {
  fold_comm *c[32];
  CHECK_OK(fold_comm_init_threads(n, c), NULL);
  pthread_t th[32];
  arg_t a[32];
  for (int i = 0; i < n; i++) {
    a[i] = (arg_t){c[i], big, wild_only};
    pthread_create(&th[i], NULL, run_suite, &a[i]);
  }
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < n; i++) CHECK_OK(fold_comm_destroy(c[i]), NULL);
}

static void *leaver(void *p);

static void matrix(int n, size_t big) { matrix_run(n, big, 0); }

/* A receive from FOLD_ANY_SOURCE outlives lost peers while one rank is left
 * that could send, then fails with FOLD_EPEER naming every lost rank. A
 * specific receive with FOLD_ANY_TAG from a lost rank fails at once. */
static void any_source_lost(void) {
  fold_comm *c[4];
  CHECK_OK(fold_comm_init_threads(4, c), NULL);
  int v = 0, w = 42, done = 0;
  fold_request *r;
  CHECK_OK(fold_irecv(&v, 1, FOLD_INT32, FOLD_ANY_SOURCE, 5, c[0], &r), c[0]);
  CHECK_OK(fold_comm_destroy(c[1]), NULL);
  CHECK_OK(fold_comm_destroy(c[2]), NULL);
  for (int i = 0; i < 100 && !done; i++) CHECK_OK(fold_test(r, &done), c[0]);
  CHECK(!done, "any-source receive ended while rank 3 was left");
  CHECK_OK(fold_send(&w, 1, FOLD_INT32, 0, 5, c[3]), c[3]);
  fold_status st = {-7, -7, 0};
  CHECK_OK(fold_wait_status(r, &st), c[0]);
  CHECK(v == 42 && st.source == 3 && st.tag == 5 && st.count == 1, "got %d from (%d, %d, %zu)", v, st.source,
        st.tag, st.count);
  /* rank 3 still there: a wildcard receive waits; then rank 3 goes too */
  CHECK_OK(fold_irecv(&v, 1, FOLD_INT32, FOLD_ANY_SOURCE, FOLD_ANY_TAG, c[0], &r), c[0]);
  pthread_t th;
  pthread_create(&th, NULL, leaver, c[3]);
  double t0 = now_s();
  CHECK_RC(fold_wait_status(r, &st), FOLD_EPEER, c[0]);
  CHECK(now_s() - t0 < 5.0, "EPEER took %.2f s", now_s() - t0);
  const char *msg = fold_comm_last_error(c[0]);
  CHECK(strstr(msg, "any source") && strstr(msg, "1 (") && strstr(msg, "2 (") && strstr(msg, "3 ("),
        "message: %s", msg);
  CHECK(st.source == FOLD_ANY_SOURCE && st.count == 0, "status of the failed receive (%d, %zu)", st.source,
        st.count);
  pthread_join(th, NULL);
  CHECK_OK(fold_comm_destroy(c[0]), NULL);
  /* posted after every other rank left: fails at once */
  CHECK_OK(fold_comm_init_threads(2, c), NULL);
  CHECK_OK(fold_comm_destroy(c[1]), NULL);
  CHECK_RC(fold_recv(&v, 1, FOLD_INT32, FOLD_ANY_SOURCE, FOLD_ANY_TAG, c[0]), FOLD_EPEER, c[0]);
  CHECK(strstr(fold_comm_last_error(c[0]), "any source") != NULL, "message: %s", fold_comm_last_error(c[0]));
  CHECK_OK(fold_comm_destroy(c[0]), NULL);
  /* a specific source with ANY_TAG: that rank's loss fails it */
  CHECK_OK(fold_comm_init_threads(3, c), NULL);
  CHECK_OK(fold_comm_destroy(c[1]), NULL);
  CHECK_RC(fold_recv(&v, 1, FOLD_INT32, 1, FOLD_ANY_TAG, c[0]), FOLD_EPEER, c[0]);
  CHECK(strstr(fold_comm_last_error(c[0]), "peer rank 1") != NULL, "message: %s", fold_comm_last_error(c[0]));
  CHECK_OK(fold_comm_destroy(c[0]), NULL);
  CHECK_OK(fold_comm_destroy(c[2]), NULL);
}

/* Rank 1 leaves (destroys its communicator) while rank 0 waits for it:
 * rank 0 gets FOLD_EPEER naming rank 1; rank 2, talking to rank 0 only
 * before, is not disturbed. */
static void *leaver(void *p) {
  fold_comm *c = p;
  usleep(100000);
  fold_comm_destroy(c);
  return NULL;
}

static void peer_leaves(void) {
  fold_comm *c[3];
  CHECK_OK(fold_comm_init_threads(3, c), NULL);
  pthread_t th;
  pthread_create(&th, NULL, leaver, c[1]);
  int v = 0;
  double t0 = now_s();
  CHECK_RC(fold_recv(&v, 1, FOLD_INT32, 1, 0, c[0]), FOLD_EPEER, c[0]);
  CHECK(now_s() - t0 < 5.0, "EPEER took %.2f s", now_s() - t0);
  CHECK(strstr(fold_comm_last_error(c[0]), "peer rank 1") != NULL, "message: %s", fold_comm_last_error(c[0]));
  /* later operations fail at once (fail-stop) */
  CHECK_RC(fold_send(&v, 1, FOLD_INT32, 2, 0, c[0]), FOLD_EPEER, c[0]);
  pthread_join(th, NULL);
  CHECK_OK(fold_comm_destroy(c[0]), NULL);
  CHECK_OK(fold_comm_destroy(c[2]), NULL);
}

/* A rank that finished and left early does not fail others that still talk. */
static void early_leaver_harmless(void) {
  fold_comm *c[3];
  CHECK_OK(fold_comm_init_threads(3, c), NULL);
  int v = 5, w = 0;
  CHECK_OK(fold_send(&v, 1, FOLD_INT32, 0, 1, c[1]), c[1]); /* eager: completes at once */
  CHECK_OK(fold_comm_destroy(c[1]), NULL);
  CHECK_OK(fold_recv(&w, 1, FOLD_INT32, 1, 1, c[0]), c[0]); /* sent before it left */
  CHECK(w == 5, "got %d", w);
  fold_request *r;
  CHECK_OK(fold_isend(&v, 1, FOLD_INT32, 0, 2, c[2], &r), c[2]);
  CHECK_OK(fold_recv(&w, 1, FOLD_INT32, 2, 2, c[0]), c[0]);
  CHECK_OK(fold_wait(r), c[2]);
  CHECK_OK(fold_comm_destroy(c[0]), NULL);
  CHECK_OK(fold_comm_destroy(c[2]), NULL);
}

static void *aborter(void *p) {
  usleep(200000);
  fold_comm_abort(p);
  return NULL;
}

/* fold_comm_abort from another thread unblocks a wait with FOLD_EABORTED. */
static void abort_from_thread(void) {
  fold_comm *c[2];
  CHECK_OK(fold_comm_init_threads(2, c), NULL);
  pthread_t th;
  pthread_create(&th, NULL, aborter, c[0]);
  int v;
  double t0 = now_s();
  CHECK_RC(fold_recv(&v, 1, FOLD_INT32, 1, 0, c[0]), FOLD_EABORTED, c[0]);
  CHECK(now_s() - t0 < 2.0, "abort took %.2f s", now_s() - t0);
  CHECK_RC(fold_send(&v, 1, FOLD_INT32, 1, 0, c[0]), FOLD_EABORTED, c[0]);
  CHECK(strstr(fold_comm_last_error(c[0]), "abort") != NULL, "message: %s", fold_comm_last_error(c[0]));
  pthread_join(th, NULL);
  CHECK_RC(fold_comm_abort(NULL), FOLD_EINVAL, NULL);
  CHECK_OK(fold_comm_destroy(c[0]), NULL);
  /* rank 1 sees rank 0 gone when it needs it */
  CHECK_RC(fold_recv(&v, 1, FOLD_INT32, 0, 0, c[1]), FOLD_EPEER, c[1]);
  CHECK_OK(fold_comm_destroy(c[1]), NULL);
}

/* A receive nothing answers times out after FOLD_TIMEOUT, naming the peer. */
static void timeout(void) {
  setenv("FOLD_TIMEOUT", "0.5", 1);
  fold_comm *c[2];
  CHECK_OK(fold_comm_init_threads(2, c), NULL);
  unsetenv("FOLD_TIMEOUT");
  int v;
  double t0 = now_s();
  CHECK_RC(fold_recv(&v, 1, FOLD_INT32, 1, 3, c[0]), FOLD_ETIMEDOUT, c[0]);
  double dt = now_s() - t0;
  CHECK(dt >= 0.45 && dt < 3.0, "timeout after %.2f s, wanted 0.5", dt);
  CHECK(strstr(fold_comm_last_error(c[0]), "rank 1") != NULL, "message: %s", fold_comm_last_error(c[0]));
  /* the failed rank 0 is lost for rank 1 */
  CHECK_RC(fold_send(&v, 1, FOLD_INT32, 0, 3, c[1]), FOLD_EPEER, c[1]);
  fold_comm_destroy(c[0]);
  fold_comm_destroy(c[1]);
  /* a large send nobody takes times out too (rendezvous) */
  setenv("FOLD_TIMEOUT", "0.5", 1);
  CHECK_OK(fold_comm_init_threads(2, c), NULL);
  unsetenv("FOLD_TIMEOUT");
  char *big = calloc(1, 1 << 20);
  CHECK_RC(fold_send(big, 1 << 20, FOLD_UINT8, 0, 3, c[1]), FOLD_ETIMEDOUT, c[1]);
  CHECK(strstr(fold_comm_last_error(c[1]), "send to rank 0") != NULL, "message: %s", fold_comm_last_error(c[1]));
  free(big);
  fold_comm_destroy(c[0]);
  fold_comm_destroy(c[1]);
  /* a wildcard receive that times out says "any source" and "any tag", not -1 */
  setenv("FOLD_TIMEOUT", "0.5", 1);
  CHECK_OK(fold_comm_init_threads(2, c), NULL);
  unsetenv("FOLD_TIMEOUT");
  CHECK_RC(fold_recv(&v, 1, FOLD_INT32, FOLD_ANY_SOURCE, FOLD_ANY_TAG, c[0]), FOLD_ETIMEDOUT, c[0]);
  const char *m = fold_comm_last_error(c[0]);
  CHECK(strstr(m, "no message from any source (any tag)") != NULL && strstr(m, "-1") == NULL, "message: %s", m);
  fold_comm_destroy(c[0]);
  fold_comm_destroy(c[1]);
}

/* Small messages are recycled between ranks (inproc's pool): a message's
 * content is its own after its record was used before; more messages in
 * flight than a rank keeps pooled; sizes either side of the pooled limit
 * (256 B); records a rank holds after their sender left, and records a
 * receiver drops unread, are freed once (ASan: no leak, no use after free). */
static size_t pool_size(int i) {
  static const size_t sizes[] = {0, 1, 8, 255, 256, 257, 1000, 4096};
  return sizes[i % 8];
}

static void pool_round(fold_comm *s, fold_comm *r, int n, int salt) {
  uint8_t buf[4096];
  for (int i = 0; i < n; i++) {
    memset(buf, (uint8_t)(i * 7 + salt), sizeof buf);
    CHECK_OK(fold_send(buf, pool_size(i), FOLD_UINT8, fold_comm_rank(r), 3, s), s);
  }
  int bad = 0;
  for (int i = 0; i < n; i++) {
    fold_status st;
    memset(buf, 0xee, sizeof buf);
    CHECK_OK(fold_recv_status(buf, sizeof buf, FOLD_UINT8, fold_comm_rank(s), 3, r, &st), r);
    bad += st.count != pool_size(i);
    for (size_t k = 0; k < st.count && k < sizeof buf; k++) bad += buf[k] != (uint8_t)(i * 7 + salt);
  }
  CHECK(bad == 0, "pool round %d: %d wrong bytes or lengths", salt, bad);
}

static void pooled_messages(void) {
  fold_comm *c[3];
  CHECK_OK(fold_comm_init_threads(3, c), NULL);
  for (int salt = 1; salt <= 3; salt++) pool_round(c[0], c[1], 3000, salt); /* > the 1,024 kept */
  pool_round(c[1], c[0], 100, 9);
  /* rank 2 sends and leaves; rank 1 still receives what it sent */
  uint8_t v[16] = {0};
  for (int i = 0; i < 50; i++) CHECK_OK(fold_send(v, 16, FOLD_UINT8, 1, 4, c[2]), c[2]);
  CHECK_OK(fold_comm_destroy(c[2]), NULL);
  for (int i = 0; i < 50; i++) CHECK_OK(fold_recv(v, 16, FOLD_UINT8, 2, 4, c[1]), c[1]);
  /* rank 0 sends to rank 1, which leaves without reading them */
  for (int i = 0; i < 50; i++) CHECK_OK(fold_send(v, 16, FOLD_UINT8, 1, 5, c[0]), c[0]);
  CHECK_OK(fold_comm_destroy(c[1]), NULL);
  CHECK_OK(fold_comm_destroy(c[0]), NULL);
}

int main(int argc, char **argv) {
  size_t big = argc > 1 ? (size_t)atoi(argv[1]) : 64;
  CHECK_RC(fold_comm_init_threads(0, NULL), FOLD_EINVAL, NULL);
  CHECK(strstr(fold_comm_last_error(NULL), "NULL") != NULL, "message: %s", fold_comm_last_error(NULL));
  int ns[] = {1, 2, 3, 5, 8};
  for (int i = 0; i < 5; i++) matrix(ns[i], ns[i] <= 3 ? big : 2);
  matrix_run(17, 256 << 10, 1); /* wildcards at the largest thread count */
  any_source_lost();
  peer_leaves();
  early_leaver_harmless();
  abort_from_thread();
  timeout();
  pooled_messages();
  CHECK_OK(fold_comm_destroy(NULL), NULL);
  return check_report("p2p_threads");
}
