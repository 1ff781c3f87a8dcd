/* request.c — fold.Request (a nonblocking call that owns its buffers until done) and fold.Status. */
#include "fold_py.h"

#include <string.h>

typedef struct {
  PyObject_HEAD
  fpy_comm *comm;     /* kept alive: the request belongs to it */
  fold_request *req;  /* NULL once done */
  fpy_call a;         /* the buffers, released when done */
  int done, rc;
  fold_status st;
  PyObject *value;    /* what wait() returns once done without error */
} fpy_request;

static PyStructSequence_Field status_fields[] = {
    {"source", "the rank the message came from (the one a wildcard matched)"},
    {"tag", "the message's tag"},
    {"count", "elements received"},
    {NULL},
};
static PyStructSequence_Desc status_desc = {"fold.Status", "What a receive got: source, tag, count.",
                                            status_fields, 3};
static PyTypeObject status_type;

PyObject *fpy_status_new(const fold_status *st) {
  PyObject *s = PyStructSequence_New(&status_type);
  if (!s) return NULL;
  PyStructSequence_SetItem(s, 0, PyLong_FromLong(st->source));
  PyStructSequence_SetItem(s, 1, PyLong_FromLong(st->tag));
  PyStructSequence_SetItem(s, 2, PyLong_FromSize_t(st->count));
  if (PyErr_Occurred()) {
    Py_DECREF(s);
    return NULL;
  }
  return s;
}

PyObject *fpy_request_new(fpy_comm *comm, fold_request *req, fpy_call *a) {
  fpy_request *o = PyObject_New(fpy_request, &fpy_request_type);
  if (!o) {
    /* cannot own it: finish it here so that nothing dangles */
    int rc;
    if (fpy_wait(comm, req, NULL, &rc) == 0) PyErr_NoMemory();
    fpy_call_release(a);
    return NULL;
  }
  o->comm = comm;
  Py_INCREF(comm);
  o->req = req;
  o->a = *a;
  memset(a, 0, sizeof *a);
  o->done = 0;
  o->rc = 0;
  o->value = NULL;
  return (PyObject *)o;
}

/* The call completed with rc: keep what wait() returns, let the buffers go. */
static void finished(fpy_request *self, int rc) {
  self->done = 1;
  self->req = NULL;
  self->rc = rc;
  if (rc == FOLD_OK) {
    if (self->a.kind == FPY_RECV) self->value = fpy_status_new(&self->st);
    else {
      self->value = self->a.result ? self->a.result : Py_None;
      Py_INCREF(self->value);
    }
  }
  fpy_call_release(&self->a);
}

static PyObject *outcome(fpy_request *self) {
  if (self->rc) return fpy_raise(self->rc, fold_comm_last_error(self->comm->c));
  if (!self->value) return NULL; /* fpy_status_new failed */
  Py_INCREF(self->value);
  return self->value;
}

static PyObject *req_wait(fpy_request *self, PyObject *unused) {
  if (!self->done) {
    if (!fpy_comm_use(self->comm)) return NULL;
    int rc;
    if (fpy_wait(self->comm, self->req, &self->st, &rc) < 0) {
      /* KeyboardInterrupt: fpy_wait aborted the communicator and freed req */
      finished(self, FOLD_EABORTED);
      return NULL;
    }
    finished(self, rc);
  }
  return outcome(self);
}

static PyObject *req_test(fpy_request *self, PyObject *unused) {
  if (!self->done) {
    if (!fpy_comm_use(self->comm)) return NULL;
    int done = 0;
    int rc = fold_test_status(self->req, &done, &self->st);
    if (!done) {
      if (rc) return fpy_raise(rc, fold_comm_last_error(self->comm->c));
      Py_RETURN_FALSE;
    }
    finished(self, rc);
  }
  if (self->rc) return outcome(self);
  Py_RETURN_TRUE;
}

static PyObject *req_done(fpy_request *self, void *unused) { return PyBool_FromLong(self->done); }

static void req_dealloc(fpy_request *self) {
  if (!self->done && self->comm->c && !*self->comm->busy) {
    int done = 0;
    int rc = fold_test_status(self->req, &done, &self->st);
    if (done) finished(self, rc);
  }
  if (!self->done && self->comm->c) {
    /* Still running: fold may yet write its buffers, so they must stay
     * alive; keep them (and the communicator) for the life of the process
     * rather than let fold write into freed memory. */
    if (PyErr_WarnEx(PyExc_ResourceWarning,
                     "fold.Request dropped before it completed: its buffers are kept alive forever (call .wait())",
                     1) < 0)
      PyErr_WriteUnraisable((PyObject *)self);
    PyObject_Free(self);
    return;
  }
  fpy_call_release(&self->a);
  Py_CLEAR(self->value);
  Py_CLEAR(self->comm);
  PyObject_Free(self);
}

static PyMethodDef req_methods[] = {
    {"wait", (PyCFunction)req_wait, METH_NOARGS,
     "wait(): block (GIL released, Ctrl-C honoured) until the call completes. Returns what the blocking call "
     "returns (recv: a Status); raises its fold.Error."},
    {"test", (PyCFunction)req_test, METH_NOARGS,
     "test() -> bool: drive progress once without blocking; True once complete (raises the call's error)."},
    {NULL},
};
static PyGetSetDef req_getset[] = {{"done", (getter)req_done, NULL, "whether the call completed", NULL}, {NULL}};

PyTypeObject fpy_request_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fold.Request",
    .tp_basicsize = sizeof(fpy_request),
    .tp_dealloc = (destructor)req_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A nonblocking call in flight (Comm.i*). Holds its buffers until it completes.",
    .tp_methods = req_methods,
    .tp_getset = req_getset,
};

int fpy_request_init_types(PyObject *m) {
  if (PyStructSequence_InitType2(&status_type, &status_desc) < 0) return -1;
  if (PyModule_AddObjectRef(m, "Status", (PyObject *)&status_type) < 0) return -1;
  if (PyType_Ready(&fpy_request_type) < 0) return -1;
  return PyModule_AddObjectRef(m, "Request", (PyObject *)&fpy_request_type);
}
