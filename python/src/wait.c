/* wait.c — waiting for a fold request with the GIL released, Ctrl-C honoured within 50 ms. */
#include "fold_py.h"

/* How long each wait slice lasts before the GIL is taken back to look for
 * signals (Ctrl-C). The first slice spins like fold_wait, so a fast
 * operation pays nothing for the slicing. */
#define SLICE_S 0.05

/* How many fold_test passes a wait makes before it releases the GIL: a
 * few microseconds, in which small operations usually complete; holding the
 * GIL that long costs other threads less than the release and reacquire
 * would cost every small call (measured: docs/python.md). */
#define FAST_TESTS 32

int fpy_wait(fpy_comm *o, fold_request *req, fold_status *st, int *rc) {
  fold_comm *c = o->c;
  for (int i = 0; i < FAST_TESTS; i++) {
    int done = 0;
    int r = fold_test_status(req, &done, st);
    if (done || r != FOLD_OK) {
      *rc = r;
      return 0;
    }
  }
  for (;;) {
    int done = 0, r;
    *o->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    r = fold_wait_for(req, SLICE_S, &done, st);
    Py_END_ALLOW_THREADS
    *o->busy = 0;
    if (done || r != FOLD_OK) {
      *rc = r;
      return 0;
    }
    if (PyErr_CheckSignals() < 0) {
      /* the operation cannot be left half done: fail the communicator
       * (peers see this rank lost once it goes), then free req */
      fold_comm_abort(c);
      (void)fold_wait(req);
      return -1;
    }
  }
}
