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



typedef struct { fold_comm *c; size_t big; } arg_t;

static void *run_suite(void *p) {
  arg_t *a = p;
  p2p_suite_run(a->c, a->big);
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void matrix(int n, size_t big) {
  fold_comm *c[32];
  CHECK_OK(fold_comm_init_threads(n, c), NULL);
  pthread_t th[32];
  arg_t a[32];
  for (int i = 0; i < n; i++) {
    a[i] = (arg_t){c[i], big};
    pthread_create(&th[i], NULL, run_suite, &a[i]);
  }
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < n; i++) CHECK_OK(fold_comm_destroy(c[i]), NULL);
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
}

int main(int argc, char **argv) {
  size_t big = argc > 1 ? (size_t)atoi(argv[1]) : 64;
  CHECK_RC(fold_comm_init_threads(0, NULL), FOLD_EINVAL, NULL);
  CHECK(strstr(fold_comm_last_error(NULL), "NULL") != NULL, "message: %s", fold_comm_last_error(NULL));
  int ns[] = {1, 2, 3, 5, 8};
  for (int i = 0; i < 5; i++) matrix(ns[i], ns[i] <= 3 ? big : 2);
  peer_leaves();
  early_leaver_harmless();
  abort_from_thread();
  timeout();
  CHECK_OK(fold_comm_destroy(NULL), NULL);
  return check_report("p2p_threads");
}
