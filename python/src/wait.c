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
 * fold_comm_split, fold_kv_wait, fold_areduce_wait, fold_kmeans and the like
 * block inside fold with no nonblocking twin, so the binding cannot come
 * back between slices. Instead, for the length of such a call, Python's
 * signal wakeup fd points to a pipe a watcher thread reads: a signal whose
 * Python handler is installed (SIGINT's is) writes a byte there, and the
 * watcher aborts the communicator registered for the call (fold_comm_abort
 * is an atomic store: any thread may call it), so the call returns
 * FOLD_EABORTED within fold's 50 ms sleep cap. The previous wakeup fd
 * (asyncio's, say) is restored afterwards and gets the bytes.
 *
 * The pipe and the thread are made once per process (on first use, and
 * again in a forked child, which has the pipe but not the thread) and live
 * as long as it: a per-call pipe and thread cost about 50 us, which a
 * KVStore.wait() of a few microseconds cannot carry. A call only registers
 * its communicator, under the mutex, so the watcher never aborts one whose
 * call ended (and which may be freed by then). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static struct {
  pthread_mutex_t mu;    /* c, buf, nbuf, and every read of the pipe */
  pid_t pid;             /* the process that made fd and the thread (0: not yet) */
  int fd[2];             /* the pipe Python's wakeup fd points to during a guard */
  PyObject *wfd;         /* fd[1] as a Python int, for set_wakeup_fd */
  fold_comm *c;          /* what a signal aborts now (NULL: no guarded call) */
  unsigned char buf[64]; /* signal bytes the watcher read, handed on at the end of the call */
  size_t nbuf;
} W = {PTHREAD_MUTEX_INITIALIZER, 0, {-1, -1}, NULL, NULL, {0}, 0};

/* Read what the pipe holds (mutex held): keep the bytes; abort W.c if
 * asked (the watcher; not the end of a call, which completed). */
static void take_bytes(int fd, int abort) {
  unsigned char b[64];
  ssize_t n;
  while ((n = read(fd, b, sizeof b)) > 0) {
    if (abort && W.c) fold_comm_abort(W.c);
    size_t k = (size_t)n < sizeof W.buf - W.nbuf ? (size_t)n : sizeof W.buf - W.nbuf; /* more are dropped, as
                                                                                           a full wakeup fd does */
    memcpy(W.buf + W.nbuf, b, k);
    W.nbuf += k;
  }
}

/* What a new watcher is given: its pipe end, and a semaphore it posts once
 * it runs (see watcher()). */
typedef struct watch_start {
  int fd;
  sem_t running;
} watch_start;

static void *watch(void *arg) {
  watch_start *ws = arg;
  int fd = ws->fd;
  sem_post(&ws->running); /* ws is the creator's: not used after this */
  struct pollfd p = {.fd = fd, .events = POLLIN};
  for (;;) {
    if (poll(&p, 1, -1) < 0) {
      if (errno == EINTR) continue;
      return NULL;
    }
    pthread_mutex_lock(&W.mu);
    take_bytes(fd, 1);
    pthread_mutex_unlock(&W.mu);
  }
}

/* fork: no watcher may hold the mutex across it (the child's copy would stay
 * locked); the child has the pipe but not the thread, and makes both anew. */
static void fork_prepare(void) { pthread_mutex_lock(&W.mu); }
static void fork_parent(void) { pthread_mutex_unlock(&W.mu); }
static void fork_child(void) { pthread_mutex_unlock(&W.mu); }

/* The pipe and the watcher of this process (GIL held, main thread): 0, or
 * -1 when they cannot be made (then calls go unguarded). */
static int watcher(void) {
  pid_t pid = getpid();
  if (W.pid == pid) return 0;
  static int atfork;
  if (!atfork && pthread_atfork(fork_prepare, fork_parent, fork_child) != 0) return -1;
  atfork = 1;
  if (W.pid) { /* a forked child: the pipe is the parent's, the thread is not here */
    close(W.fd[0]);
    close(W.fd[1]);
    W.fd[0] = W.fd[1] = -1;
    W.pid = 0;
    W.nbuf = 0;
    W.c = NULL;
  }
  Py_CLEAR(W.wfd);
  int fd[2];
  if (pipe2(fd, O_NONBLOCK | O_CLOEXEC) < 0) return -1;
  PyObject *wfd = PyLong_FromLong(fd[1]);
  /* the watcher takes no signals: they go to the threads that run Python */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pthread_t th;
  watch_start ws = {.fd = fd[0]};
  int rc = wfd && sem_init(&ws.running, 0, 0) == 0 ? 0 : -1;
  if (rc == 0) {
    rc = pthread_create(&th, NULL, watch, &ws);
    if (rc == 0) {
      /* Return only once the thread runs its own code: a thread still being
       * set up holds the C library's and ASan's locks, and a fork then (the
       * test kv_sigint forks right after its first guarded call) hands the
       * child those locks held: it hung in its first malloc. Waiting in
       * poll(), the watcher holds none. */
      while (sem_wait(&ws.running) != 0 && errno == EINTR)
        ;
    }
    sem_destroy(&ws.running);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    Py_XDECREF(wfd);
    PyErr_Clear();
    close(fd[0]);
    close(fd[1]);
    return -1;
  }
  pthread_detach(th); /* lives as long as the process */
  W.fd[0] = fd[0];
  W.fd[1] = fd[1];
  W.wfd = wfd;
  W.pid = pid;
  return 0;
}

/* signal.set_wakeup_fd(fd) (the C one is not exported): the old fd, or -2
 * with the exception cleared when it fails. Main thread, GIL held. */
static int set_wakeup_fd(PyObject *fd) {
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
  PyObject *r = fd ? PyObject_CallOneArg(fn, fd) : NULL;
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
  /* only the main thread runs Python's signal handlers */
  if (!c || !_PyOS_IsMainThread() || watcher() < 0) return;
  pthread_mutex_lock(&W.mu);
  g->prev = W.c;
  W.c = c;
  pthread_mutex_unlock(&W.mu);
  g->old_fd = set_wakeup_fd(W.wfd);
  if (g->old_fd == -2) {
    pthread_mutex_lock(&W.mu);
    W.c = g->prev;
    pthread_mutex_unlock(&W.mu);
    return;
  }
  g->active = 1;
}

void fpy_guard_end(fpy_guard *g) {
  if (!g->active) return;
  g->active = 0;
  /* keep a pending exception (none is expected here) across the call */
  PyObject *t, *v, *tb;
  PyErr_Fetch(&t, &v, &tb);
  PyObject *old = PyLong_FromLong(g->old_fd);
  if (set_wakeup_fd(old) == -2) PyErr_Clear();
  Py_XDECREF(old);
  PyErr_Restore(t, v, tb);
  /* from here no signal writes to the pipe: unregister, and take what the
   * watcher has not read yet, under the mutex, so no byte is missed */
  unsigned char buf[sizeof W.buf];
  pthread_mutex_lock(&W.mu);
  take_bytes(W.fd[0], 0);
  W.c = g->prev;
  size_t n = W.nbuf;
  memcpy(buf, W.buf, n);
  W.nbuf = 0;
  pthread_mutex_unlock(&W.mu);
  /* hand the signal bytes on to whoever watched before */
  if (n && g->old_fd >= 0)
    while (write(g->old_fd, buf, n) < 0 && errno == EINTR) {
    }
}
