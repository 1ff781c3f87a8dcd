/* wait_for_test.c — fold_wait_for, the sliced wait the Python binding checks Ctrl-C between: slices, FOLD_TIMEOUT, bad input, simulator. */
#include <fold.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A slice that ends first leaves the request pending; a message then completes it with its status. */
static void slices(void) {
  fold_comm *c[2];
  CHECK_OK(fold_comm_init_threads(2, c), NULL);
  int32_t in[2] = {0, 0}, outv[2] = {11, 22};
  fold_request *req = NULL;
  CHECK_OK(fold_irecv(in, 2, FOLD_INT32, 0, 7, c[1], &req), c[1]);
  int done = 5;
  /* bad input leaves req untouched */
  CHECK_RC(fold_wait_for(NULL, 1, &done, NULL), FOLD_EINVAL, NULL);
  CHECK_RC(fold_wait_for(req, 1, NULL, NULL), FOLD_EINVAL, c[1]);
  CHECK_RC(fold_wait_for(req, -1, &done, NULL), FOLD_EINVAL, c[1]);
  CHECK(strstr(fold_comm_last_error(c[1]), "rank 1") != NULL, "message: %s", fold_comm_last_error(c[1]));
  CHECK_RC(fold_wait_for(req, NAN, &done, NULL), FOLD_EINVAL, c[1]);
  double t0 = now_s();
  CHECK_OK(fold_wait_for(req, 0.05, &done, NULL), c[1]);
  double el = now_s() - t0;
  CHECK(done == 0, "done = %d with no message sent", done);
  CHECK(el >= 0.045 && el < 1.0, "a 0.05 s slice took %.3f s", el);
  CHECK_OK(fold_send(outv, 2, FOLD_INT32, 1, 7, c[0]), c[0]);
  fold_status st = {-9, -9, 99};
  CHECK_OK(fold_wait_for(req, 5, &done, &st), c[1]);
  CHECK(done == 1, "done = %d after the message came", done);
  CHECK(st.source == 0 && st.tag == 7 && st.count == 2, "status %d %d %zu", st.source, st.tag, st.count);
  CHECK(in[0] == 11 && in[1] == 22, "received %d %d", in[0], in[1]);
  /* a collective too: slices of 0 s poll until both ranks are in */
  fold_request *r0 = NULL, *r1 = NULL;
  int32_t a = 1, b = 2;
  CHECK_OK(fold_iallreduce(&a, &a, 1, FOLD_INT32, FOLD_SUM, c[0], &r0), c[0]);
  CHECK_OK(fold_iallreduce(&b, &b, 1, FOLD_INT32, FOLD_SUM, c[1], &r1), c[1]);
  int d0 = 0, d1 = 0;
  for (int i = 0; i < 100000 && !(d0 && d1); i++) {
    if (!d0) CHECK_OK(fold_wait_for(r0, 0, &d0, NULL), c[0]);
    if (!d1) CHECK_OK(fold_wait_for(r1, 0, &d1, NULL), c[1]);
  }
  CHECK(d0 && d1 && a == 3 && b == 3, "allreduce by slices: done %d %d, %d %d", d0, d1, a, b);
  fold_comm_destroy(c[0]);
  fold_comm_destroy(c[1]);
}

/* FOLD_TIMEOUT counts from the first slice: short slices time out as one wait, with fold_wait's message. */
static void timeout(void) {
  setenv("FOLD_TIMEOUT", "0.5", 1);
  fold_comm *c[2];
  CHECK_OK(fold_comm_init_threads(2, c), NULL);
  unsetenv("FOLD_TIMEOUT");
  int32_t in = 0;
  fold_request *req = NULL;
  CHECK_OK(fold_irecv(&in, 1, FOLD_INT32, 0, 3, c[1], &req), c[1]);
  double t0 = now_s();
  int done = 0, rc = FOLD_OK, n = 0;
  while (!done && rc == FOLD_OK && n < 1000) {
    rc = fold_wait_for(req, 0.1, &done, NULL);
    n++;
  }
  double el = now_s() - t0;
  CHECK(rc == FOLD_ETIMEDOUT && done == 1, "rc %d (%s) done %d after %d slices", rc, fold_strerror(rc), done, n);
  CHECK(el >= 0.45 && el < 2.0, "FOLD_TIMEOUT=0.5 fired after %.3f s", el);
  CHECK(n >= 5, "only %d slices of 0.1 s before a 0.5 s timeout", n);
  const char *m = fold_comm_last_error(c[1]);
  CHECK(strstr(m, "rank 1") && strstr(m, "FOLD_TIMEOUT"), "message: %s", m);
  fold_comm_destroy(c[0]);
  fold_comm_destroy(c[1]);
}

/* On the simulator a slice runs the simulator until the request completes, as fold_wait. */
static void simulated(void) {
  fold_sim *sim = NULL;
  fold_comm *c[2];
  CHECK_OK(fold_sim_create(2, NULL, &sim, c), NULL);
  double v = 2.5, w = 0;
  fold_request *s = NULL, *r = NULL;
  CHECK_OK(fold_isend(&v, 1, FOLD_FLOAT64, 1, 0, c[0], &s), c[0]);
  CHECK_OK(fold_irecv(&w, 1, FOLD_FLOAT64, 0, 0, c[1], &r), c[1]);
  int done = 0;
  CHECK_OK(fold_wait_for(r, 0, &done, NULL), c[1]);
  CHECK(done == 1 && w == 2.5, "simulated receive: done %d value %g", done, w);
  CHECK(fold_sim_time(sim) > 0, "virtual time did not move");
  CHECK_OK(fold_wait(s), c[0]);
  fold_sim_destroy(sim);
}

int main(void) {
  slices();
  timeout();
  simulated();
  return check_report("wait_for_test");
}
