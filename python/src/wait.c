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

/* ---- Ctrl-C in the calls fold cannot slice ------------------------------
 * fold_comm_split, fold_areduce_wait, fold_kmeans and the like block inside
 * fold with no nonblocking twin, so the binding cannot come back between
 * slices. Instead, for the length of such a call, Python's signal wakeup fd
 * points to a pipe a helper thread watches: a signal whose Python handler
 * is installed (SIGINT's is) writes a byte there, and the helper aborts the
 * communicator (fold_comm_abort is an atomic store: any thread may call it),
 * so the call returns FOLD_EABORTED within fold's 50 ms sleep cap. The
 * previous wakeup fd (asyncio's, say) is restored and gets the bytes. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

static void *watch(void *arg) {
  fpy_guard *g = arg;
  struct pollfd p[2] = {{.fd = g->sig[0], .events = POLLIN}, {.fd = g->stop[0], .events = POLLIN}};
  for (;;) {
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return NULL;
    }
    if (p[1].revents) return NULL;
    if (p[0].revents) {
      fold_comm_abort(g->c);
      return NULL;
    }
  }
}

/* signal.set_wakeup_fd(fd) (the C one is not exported): the old fd, or -2
 * with the exception cleared when it fails. Main thread, GIL held. */
static int set_wakeup_fd(int fd) {
  static PyObject *fn;
  if (!fn) {
    PyObject *m = PyImport_ImportModule("signal");
    if (m) {
      fn = PyObject_GetAttrString(m, "set_wakeup_fd"); /* kept for the process' life */
      Py_DECREF(m);
    }
    if (!fn) {
      PyErr_Clear();
      return -2;
    }
  }
  PyObject *r = PyObject_CallFunction(fn, "i", fd);
  long old = r ? PyLong_AsLong(r) : -2;
  Py_XDECREF(r);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return -2;
  }
  return (int)old;
}

void fpy_guard_begin(fpy_guard *g, fold_comm *c) {
  g->active = 0;
  g->c = c;
  /* only the main thread runs Python's signal handlers */
  if (!c || !_PyOS_IsMainThread()) return;
  if (pipe2(g->sig, O_NONBLOCK | O_CLOEXEC) < 0) return;
  if (pipe2(g->stop, O_CLOEXEC) < 0) {
    close(g->sig[0]);
    close(g->sig[1]);
    return;
  }
  g->old_fd = set_wakeup_fd(g->sig[1]);
  if (g->old_fd == -2 || pthread_create(&g->th, NULL, watch, g) != 0) {
    if (g->old_fd != -2) set_wakeup_fd(g->old_fd);
    close(g->sig[0]);
    close(g->sig[1]);
    close(g->stop[0]);
    close(g->stop[1]);
    return;
  }
  g->active = 1;
}

void fpy_guard_end(fpy_guard *g) {
  if (!g->active) return;
  char b = 0;
  while (write(g->stop[1], &b, 1) < 0 && errno == EINTR) {
  }
  pthread_join(g->th, NULL);
  /* keep a pending exception (none is expected here) across the call */
  PyObject *t, *v, *tb;
  PyErr_Fetch(&t, &v, &tb);
  set_wakeup_fd(g->old_fd);
  PyErr_Restore(t, v, tb);
  /* hand the signal bytes on to whoever watched before */
  char buf[64];
  ssize_t n;
  while ((n = read(g->sig[0], buf, sizeof buf)) > 0)
    if (g->old_fd >= 0 && write(g->old_fd, buf, (size_t)n) < 0) break;
  close(g->sig[0]);
  close(g->sig[1]);
  close(g->stop[0]);
  close(g->stop[1]);
  g->active = 0;
}
