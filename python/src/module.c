/* module.c — the fold._fold extension module: init, constants, the types. */
#include "fold_py.h" /* Python.h first, as CPython asks */

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

/* fold.init() and Ctrl-C. fold_init blocks until every rank joined (up to
 * FOLD_TIMEOUT) and has no communicator yet that a signal could abort, so
 * it runs on a thread of its own while the calling thread waits in 50 ms
 * slices, looking for a raised signal between them: Ctrl-C then raises
 * KeyboardInterrupt at once. The rendezvous it leaves goes on in the
 * background (rank 0 may be serving the other ranks' store) and ends as
 * fold_init does, joined or timed out; its communicator, if it got one, is
 * destroyed then. A fold.init() meanwhile is refused: it would start a
 * second rendezvous at the same store. */
typedef struct init_job {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done, abandoned, rc;
  fold_comm *c;
  char err[512];
} init_job;

static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static int init_orphans; /* abandoned inits still running */

static void *init_main(void *arg) {
  init_job *j = arg;
  fold_comm *c = NULL;
  int rc = fold_init(&c);
  pthread_mutex_lock(&j->mu);
  j->rc = rc;
  j->c = c;
  if (rc) snprintf(j->err, sizeof j->err, "%s", fold_comm_last_error(NULL)); /* per thread: copied here */
  j->done = 1;
  int orphan = j->abandoned;
  pthread_cond_signal(&j->cv);
  pthread_mutex_unlock(&j->mu);
  if (orphan) { /* nobody waits: clean up after ourselves */
    if (c) fold_comm_destroy(c);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    PyMem_RawFree(j);
    pthread_mutex_lock(&init_mu);
    init_orphans--;
    pthread_mutex_unlock(&init_mu);
  }
  return NULL;
}

static PyObject *mod_init(PyObject *m, PyObject *unused) {
  pthread_mutex_lock(&init_mu);
  int orphans = init_orphans;
  pthread_mutex_unlock(&init_mu);
  if (orphans)
    return fpy_invalid("fold.init(): an init interrupted earlier is still waiting for the other ranks (it ends "
                       "when they join or FOLD_TIMEOUT passes); call fold.init() again after that");
  init_job *j = PyMem_RawCalloc(1, sizeof *j);
  if (j == NULL) return PyErr_NoMemory();
  pthread_mutex_init(&j->mu, NULL);
  pthread_cond_init(&j->cv, NULL);
  pthread_t th;
  if (pthread_create(&th, NULL, init_main, j) != 0) {
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    PyMem_RawFree(j);
    return fpy_raise(FOLD_ESYS, "fold.init(): cannot start a thread for the rendezvous");
  }
  for (;;) {
    int done;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&j->mu);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 50000000;
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000;
    }
    while (!j->done && pthread_cond_timedwait(&j->cv, &j->mu, &until) != ETIMEDOUT) {
    }
    done = j->done;
    pthread_mutex_unlock(&j->mu);
    Py_END_ALLOW_THREADS
    if (done) break;
    if (PyErr_CheckSignals() < 0) { /* Ctrl-C: leave the rendezvous to finish on its own */
      pthread_mutex_lock(&init_mu);
      pthread_mutex_lock(&j->mu);
      if (j->done) { /* it ended meanwhile: no orphan, the exception stands */
        pthread_mutex_unlock(&j->mu);
        pthread_mutex_unlock(&init_mu);
        if (j->c) fold_comm_destroy(j->c);
        break;
      }
      j->abandoned = 1;
      init_orphans++;
      pthread_mutex_unlock(&j->mu);
      pthread_mutex_unlock(&init_mu);
      pthread_detach(th); /* it frees j when it ends */
      return NULL;
    }
  }
  /* Joined, not detached: no thread of ours may still be exiting when init
   * returns, or a fork right after (a forked rank, multiprocessing) could
   * copy a lock it holds (ASan's allocator did: the child hung in init). */
  Py_BEGIN_ALLOW_THREADS
  pthread_join(th, NULL);
  Py_END_ALLOW_THREADS
  PyObject *r = NULL;
  if (!PyErr_Occurred()) r = j->rc ? fpy_raise(j->rc, j->err) : fpy_comm_new(j->c, NULL, 0);
  pthread_mutex_destroy(&j->mu);
  pthread_cond_destroy(&j->cv);
  PyMem_RawFree(j);
  return r;
}

static PyObject *mod_version(PyObject *m, PyObject *unused) { return PyUnicode_FromString(fold_version()); }

static PyObject *mod_config(PyObject *m, PyObject *unused) {
  size_t len = fold_config_print(NULL, 0);
  char *text = PyMem_RawMalloc(len + 1);
  if (text == NULL) return PyErr_NoMemory();
  fold_config_print(text, len + 1);
  PyObject *r = PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "replace");
  PyMem_RawFree(text);
  return r;
}

static PyMethodDef mod_methods[] = {
    {"init", mod_init, METH_NOARGS,
     "init() -> Comm: the world communicator from the environment (foldrun, torchrun, mpirun, srun, or a world "
     "of one when started by hand), as fold_init. Blocks until every rank joined; Ctrl-C raises "
     "KeyboardInterrupt at once (the rendezvous then ends in the background)."},
    {"library_version", mod_version, METH_NOARGS, "the version of libfold that runs"},
    {"config", mod_config, METH_NOARGS,
     "config() -> str: every FOLD_* variable as this process reads it now, one line each (fold_config_print; "
     "docs/configuration.md)"},
    {NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "fold._fold", "fold's CPython extension", -1,
                                    mod_methods};

PyMODINIT_FUNC PyInit__fold(void) {
  PyObject *m = PyModule_Create(&moddef);
  if (!m) return NULL;
  if (fpy_errors_init(m) < 0 || fpy_comm_init_type(m) < 0 || fpy_request_init_types(m) < 0 || fpy_sim_init_type(m) < 0 ||
      fpy_areduce_init_type(m) < 0 || fpy_ml_init(m) < 0 || fpy_iterq_init_type(m) < 0 || fpy_kv_init_type(m) < 0 ||
      PyModule_AddIntConstant(m, "ANY_SOURCE", FOLD_ANY_SOURCE) < 0 ||
      PyModule_AddIntConstant(m, "ANY_TAG", FOLD_ANY_TAG) < 0 ||
      PyModule_AddIntConstant(m, "UNDEFINED", FOLD_UNDEFINED) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
