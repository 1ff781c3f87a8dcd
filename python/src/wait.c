/* wait.c — waiting for a fold request with the GIL released, Ctrl-C honoured within 100 ms. */
#include "fold_py.h"

#include <sched.h>
#include <time.h>

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* How often a wait takes the GIL back to look for signals (Ctrl-C). */
#define SIGNAL_CHECK_NS 50000000

int fpy_wait(fold_comm *c, fold_request *req, fold_status *st, int *rc) {
  int done = 0;
  for (;;) {
    int r = 0;
    Py_BEGIN_ALLOW_THREADS
    int64_t start = now_ns();
    int spins = 0;
    for (;;) {
      r = fold_test_status(req, &done, st);
      if (done || r != FOLD_OK) break;
      int64_t el = now_ns() - start;
      if (el > SIGNAL_CHECK_NS) break;
      if (++spins > 64) {
        if (el < 1000000) sched_yield();
        else {
          struct timespec ts = {0, 200000};
          nanosleep(&ts, NULL);
        }
      }
    }
    Py_END_ALLOW_THREADS
    if (done || r != FOLD_OK) {
      *rc = r;
      return 0;
    }
    if (PyErr_CheckSignals() < 0) {
      /* the operation cannot be left half done: fail it everywhere here */
      fold_comm_abort(c);
      (void)fold_wait(req);
      return -1;
    }
  }
}
