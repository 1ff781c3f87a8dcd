/* iterq.c — fold.IterQueue: the iterative communication queue (fold_iterq_*) with Python compute steps. */
#include "fold_py.h"

#include <string.h>

typedef struct {
  PyObject_HEAD
  fold_iterq *q;
  fpy_comm *comm;     /* kept alive: the queue runs on it */
  PyObject *steps;    /* list: the callables of compute, stop and close steps, kept alive */
  PyObject *pending;  /* the first exception a step raised on this rank, for run() to raise */
  Py_ssize_t exports; /* live views of session buffers: put may not replace a buffer meanwhile */
} fpy_iterq;

static PyTypeObject iterq_type, view_type;

/* A session buffer seen through the buffer protocol, zero-copy. */
typedef struct {
  PyObject_HEAD
  fpy_iterq *owner;
  char name[64];
} fpy_view;

static fold_iterq *live(fpy_iterq *self) {
  if (!self->q || !self->comm->c) fpy_invalid("IterQueue: destroyed (or its communicator was)");
  return self->comm->c ? self->q : NULL;
}

static PyObject *iq_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  PyObject *commo;
  if (!PyArg_ParseTuple(args, "O!:IterQueue", &fpy_comm_type, &commo)) return NULL;
  fold_comm *c = fpy_comm_use((fpy_comm *)commo);
  if (!c) return NULL;
  fpy_iterq *self = (fpy_iterq *)type->tp_alloc(type, 0);
  if (!self) return NULL;
  self->steps = PyList_New(0);
  if (!self->steps) {
    Py_DECREF(self);
    return NULL;
  }
  int rc = fold_iterq_create(c, &self->q);
  if (rc) {
    Py_DECREF(self);
    return fpy_raise(rc, fold_comm_last_error(c));
  }
  self->comm = (fpy_comm *)commo;
  Py_INCREF(commo);
  return (PyObject *)self;
}

static void iq_dealloc(fpy_iterq *self) {
  if (self->q && self->comm && self->comm->c) fold_iterq_destroy(self->q);
  self->q = NULL;
  Py_CLEAR(self->steps);
  Py_CLEAR(self->pending);
  Py_CLEAR(self->comm);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *iq_put(fpy_iterq *self, PyObject *args) {
  const char *name;
  PyObject *data;
  if (!PyArg_ParseTuple(args, "sO:put", &name, &data)) return NULL;
  fold_iterq *q = live(self);
  fpy_buf b;
  if (!q || fpy_buf_get(data, 0, "IterQueue.put: data", &b) < 0) return NULL;
  size_t cnt;
  fold_dtype dt;
  void *old = fold_iterq_get(q, name, &cnt, &dt);
  if (old && (cnt != b.count || dt != b.dtype) && self->exports) {
    fpy_buf_release(&b);
    return fpy_invalid("IterQueue.put: '%s' would change shape (%zu %s -> %zu %s) while views of the session "
                       "are alive: drop them first", name, cnt, fold_dtype_name(dt), b.count,
                       fold_dtype_name(b.dtype));
  }
  int rc = fold_iterq_put(q, name, b.ptr, b.count, b.dtype);
  fpy_buf_release(&b);
  if (rc) return fpy_raise(rc, fold_comm_last_error(self->comm->c));
  Py_RETURN_NONE;
}

static PyObject *iq_get(fpy_iterq *self, PyObject *arg) {
  const char *name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
  if (!name) return PyErr_Occurred() ? NULL : fpy_invalid("IterQueue.get: name must be a str");
  fold_iterq *q = live(self);
  if (!q) return NULL;
  if (!fold_iterq_get(q, name, NULL, NULL)) return fpy_invalid("IterQueue.get: no buffer named '%s'", name);
  fpy_view *v = PyObject_New(fpy_view, &view_type);
  if (!v) return NULL;
  v->owner = self;
  Py_INCREF(self);
  snprintf(v->name, sizeof v->name, "%s", name);
  /* a memoryview over the exporter: the format and shape numpy needs */
  PyObject *mv = PyMemoryView_FromObject((PyObject *)v);
  Py_DECREF(v);
  return mv;
}

/* struct-module format of a numeric dtype ("B" for bfloat16: raw bytes pairs are not a number Python knows) */
static const char *fmt_of(fold_dtype dt, Py_ssize_t *itemsize) {
  static const char *const f[] = {"b", "B", "i", "I", "q", "Q", "e", "H", "f", "d"};
  *itemsize = (Py_ssize_t)fold_dtype_size(dt);
  return (int)dt >= 0 && (int)dt < 10 ? f[dt] : "B";
}

static int view_getbuffer(fpy_view *v, Py_buffer *view, int flags) {
  size_t cnt;
  fold_dtype dt;
  void *p = v->owner->q && v->owner->comm->c ? fold_iterq_get(v->owner->q, v->name, &cnt, &dt) : NULL;
  if (!p) {
    fpy_invalid("IterQueue: the buffer '%s' is gone", v->name);
    view->obj = NULL;
    return -1;
  }
  Py_ssize_t isz;
  const char *fmt = fmt_of(dt, &isz);
  if (!strcmp(fmt, "B") && isz != 1) cnt *= (size_t)isz, isz = 1;
  view->buf = p;
  view->obj = (PyObject *)v;
  Py_INCREF(v);
  view->len = (Py_ssize_t)(cnt * (size_t)isz);
  view->readonly = 0;
  view->itemsize = isz;
  view->format = (flags & PyBUF_FORMAT) ? (char *)fmt : NULL;
  view->ndim = 1;
  view->shape = (flags & PyBUF_ND) ? &view->len : NULL; /* fixed below: shape counts items */
  view->internal = NULL;
  view->strides = NULL;
  view->suboffsets = NULL;
  if (flags & PyBUF_ND) {
    /* shape must live as long as the view: keep it in internal */
    Py_ssize_t *shape = PyMem_Malloc(sizeof *shape);
    if (!shape) {
      Py_DECREF(v);
      view->obj = NULL;
      PyErr_NoMemory();
      return -1;
    }
    *shape = (Py_ssize_t)cnt;
    view->shape = shape;
    view->internal = shape;
  }
  if (flags & PyBUF_STRIDES) view->strides = &view->itemsize;
  v->owner->exports++;
  return 0;
}

static void view_releasebuffer(fpy_view *v, Py_buffer *view) {
  PyMem_Free(view->internal);
  v->owner->exports--;
}

static void view_dealloc(fpy_view *v) {
  Py_CLEAR(v->owner);
  PyObject_Free(v);
}

static PyBufferProcs view_procs = {(getbufferproc)view_getbuffer, (releasebufferproc)view_releasebuffer};

static PyTypeObject view_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fold._SessionBuffer",
    .tp_basicsize = sizeof(fpy_view),
    .tp_dealloc = (destructor)view_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_as_buffer = &view_procs,
};

/* ---- steps: Python callables called from inside fold_iterq_run ---------- */

/* Call fn(queue) for a step; an exception fails the step on every rank with
 * its text (fold_iterq_fail) and is kept for run() to raise on this rank. */
static int call_step(fpy_iterq *self, PyObject *fn, int *truth) {
  PyGILState_STATE g = PyGILState_Ensure();
  /* the step is this thread's own code: it may call collectives on the comm */
  int was = *self->comm->busy;
  *self->comm->busy = 0;
  PyObject *r = PyObject_CallOneArg(fn, (PyObject *)self);
  *self->comm->busy = was;
  int rc = FOLD_OK;
  if (r && truth) {
    int t = PyObject_IsTrue(r);
    if (t < 0) Py_CLEAR(r);
    else *truth = t;
  }
  if (!r) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (tb) PyException_SetTraceback(v, tb);
    PyObject *s = v ? PyObject_Str(v) : NULL;
    const char *msg = s ? PyUnicode_AsUTF8(s) : NULL;
    rc = fold_iterq_fail(self->q, FOLD_EINVAL, "Python %s: %s", t ? ((PyTypeObject *)t)->tp_name : "error",
                         msg ? msg : "?");
    PyErr_Clear();
    Py_XDECREF(s);
    if (!self->pending) self->pending = v;
    else Py_XDECREF(v);
    Py_XDECREF(t);
    Py_XDECREF(tb);
  }
  Py_XDECREF(r);
  PyGILState_Release(g);
  return rc;
}

typedef struct {
  fpy_iterq *self;
  PyObject *fn;
} step_ctx;

static int step_tramp(fold_iterq *q, void *arg) {
  step_ctx *s = arg;
  return call_step(s->self, s->fn, NULL);
}
static int stop_tramp(fold_iterq *q, void *arg) {
  step_ctx *s = arg;
  int t = 0;
  int rc = call_step(s->self, s->fn, &t);
  return rc ? rc : t;
}

static void ctx_free(PyObject *cap) { PyMem_Free(PyCapsule_GetPointer(cap, "fold.iterq_step")); }

/* A ctx for fn that lives as long as the queue. */
static step_ctx *keep_step(fpy_iterq *self, PyObject *fn) {
  if (!PyCallable_Check(fn)) {
    fpy_invalid("IterQueue: a step must be callable (it gets the queue)");
    return NULL;
  }
  step_ctx *s = PyMem_Malloc(sizeof *s);
  if (!s) {
    PyErr_NoMemory();
    return NULL;
  }
  s->self = self; /* borrowed: the queue outlives its steps */
  s->fn = fn;
  PyObject *cap = PyCapsule_New(s, "fold.iterq_step", ctx_free);
  if (!cap) {
    PyMem_Free(s);
    return NULL;
  }
  PyObject *pair = PyTuple_Pack(2, cap, fn);
  Py_DECREF(cap);
  if (!pair || PyList_Append(self->steps, pair) < 0) {
    Py_XDECREF(pair);
    return NULL;
  }
  Py_DECREF(pair);
  return s;
}

static PyObject *done_or_raise(fpy_iterq *self, int rc) {
  if (rc) return fpy_raise(rc, fold_comm_last_error(self->comm->c));
  Py_RETURN_NONE;
}

static PyObject *iq_add_compute(fpy_iterq *self, PyObject *fn) {
  fold_iterq *q = live(self);
  step_ctx *s = q ? keep_step(self, fn) : NULL;
  return s ? done_or_raise(self, fold_iterq_add_compute(q, step_tramp, s)) : NULL;
}
static PyObject *iq_set_stop(fpy_iterq *self, PyObject *fn) {
  fold_iterq *q = live(self);
  step_ctx *s = q ? keep_step(self, fn) : NULL;
  return s ? done_or_raise(self, fold_iterq_set_stop(q, stop_tramp, s)) : NULL;
}
static PyObject *iq_close_with(fpy_iterq *self, PyObject *fn) {
  fold_iterq *q = live(self);
  step_ctx *s = q ? keep_step(self, fn) : NULL;
  return s ? done_or_raise(self, fold_iterq_close_with(q, step_tramp, s)) : NULL;
}

static PyObject *iq_add_allreduce(fpy_iterq *self, PyObject *args, PyObject *kw) {
  static char *kl[] = {"name", "op", NULL};
  const char *name;
  PyObject *opo = Py_None;
  fold_op op;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|O:add_allreduce", kl, &name, &opo) || fpy_op_from_name(opo, &op) < 0)
    return NULL;
  fold_iterq *q = live(self);
  return q ? done_or_raise(self, fold_iterq_add_allreduce(q, name, op)) : NULL;
}
static PyObject *iq_add_broadcast(fpy_iterq *self, PyObject *args, PyObject *kw) {
  static char *kl[] = {"name", "root", NULL};
  const char *name;
  int root = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|i:add_broadcast", kl, &name, &root)) return NULL;
  fold_iterq *q = live(self);
  return q ? done_or_raise(self, fold_iterq_add_broadcast(q, name, root)) : NULL;
}
static PyObject *iq_set_max_iter(fpy_iterq *self, PyObject *arg) {
  long m = PyLong_AsLong(arg);
  if (m == -1 && PyErr_Occurred()) return NULL;
  fold_iterq *q = live(self);
  if (m < 1 || m > 0x7fffffff) return fpy_invalid("IterQueue.set_max_iter: %ld (must be >= 1)", m);
  return q ? done_or_raise(self, fold_iterq_set_max_iter(q, (int)m)) : NULL;
}

static PyObject *iq_set_checkpoint(fpy_iterq *self, PyObject *args, PyObject *kw) {
  static char *kl[] = {"dir", "every", NULL};
  PyObject *dir;
  int every = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|i:set_checkpoint", kl, PyUnicode_FSConverter, &dir, &every))
    return NULL;
  fold_iterq *q = live(self);
  PyObject *r = q ? done_or_raise(self, fold_iterq_set_checkpoint(q, PyBytes_AS_STRING(dir), every)) : NULL;
  Py_DECREF(dir);
  return r;
}

static PyObject *iq_run(fpy_iterq *self, PyObject *unused) {
  fold_iterq *q = live(self);
  if (!q || !fpy_comm_use(self->comm)) return NULL;
  int rc;
  fpy_guard g;
  fpy_guard_begin(&g, self->comm->simulated ? NULL : self->comm->c);
  *self->comm->busy = 1;
  Py_BEGIN_ALLOW_THREADS
  rc = fold_iterq_run(q);
  Py_END_ALLOW_THREADS
  *self->comm->busy = 0;
  fpy_guard_end(&g);
  if (self->pending) {
    /* this rank's step raised: its own exception, the whole story in its traceback */
    PyObject *e = self->pending;
    self->pending = NULL;
    PyErr_SetObject((PyObject *)Py_TYPE(e), e);
    Py_DECREF(e);
    return NULL;
  }
  if (PyErr_CheckSignals() < 0) return NULL;
  return done_or_raise(self, rc);
}

static PyObject *iq_iteration(fpy_iterq *self, void *unused) {
  fold_iterq *q = live(self);
  return q ? PyLong_FromLong(fold_iterq_iteration(q)) : NULL;
}
static PyObject *iq_comm(fpy_iterq *self, void *unused) {
  Py_INCREF(self->comm);
  return (PyObject *)self->comm;
}

static PyMethodDef iq_methods[] = {
    {"put", (PyCFunction)iq_put, METH_VARARGS,
     "put(name, data): copy a buffer into the session under name (same shape: overwritten in place)."},
    {"get", (PyCFunction)iq_get, METH_O,
     "get(name) -> memoryview: the session buffer, zero-copy and writable (numpy.asarray(q.get(name)))."},
    {"add_compute", (PyCFunction)iq_add_compute, METH_O,
     "add_compute(fn): fn(queue) runs every superstep on every rank; an exception fails the queue everywhere."},
    {"add_allreduce", (PyCFunction)(void (*)(void))iq_add_allreduce, METH_VARARGS | METH_KEYWORDS,
     "add_allreduce(name, op='sum'): the buffer name becomes the reduction over the ranks."},
    {"add_broadcast", (PyCFunction)(void (*)(void))iq_add_broadcast, METH_VARARGS | METH_KEYWORDS,
     "add_broadcast(name, root=0): root's buffer name is copied to every rank."},
    {"set_stop", (PyCFunction)iq_set_stop, METH_O,
     "set_stop(fn): fn(queue) -> bool runs on rank 0 after each superstep; True stops."},
    {"set_max_iter", (PyCFunction)iq_set_max_iter, METH_O, "set_max_iter(n): at most n supersteps (default 100)."},
    {"set_checkpoint", (PyCFunction)(void (*)(void))iq_set_checkpoint, METH_VARARGS | METH_KEYWORDS,
     "set_checkpoint(dir, every=1): save the session every `every` supersteps and resume from dir "
     "(fold_iterq_set_checkpoint)."},
    {"close_with", (PyCFunction)iq_close_with, METH_O, "close_with(fn): fn(queue) runs once after the last superstep."},
    {"run", (PyCFunction)iq_run, METH_NOARGS,
     "run(): run the queue (blocks; Ctrl-C aborts the communicator). A step's exception is raised on its rank, "
     "fold.Error naming that rank on the others."},
    {NULL},
};
static PyGetSetDef iq_getset[] = {
    {"iteration", (getter)iq_iteration, NULL, "the current superstep, from 1", NULL},
    {"comm", (getter)iq_comm, NULL, "the queue's communicator", NULL},
    {NULL},
};

static PyTypeObject iterq_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fold.IterQueue",
    .tp_basicsize = sizeof(fpy_iterq),
    .tp_dealloc = (destructor)iq_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "IterQueue(comm): Alink's iterative communication queue (fold_iterq, docs/iterq.md): named session "
              "buffers, compute steps (Python callables), allreduce and broadcast steps, a stop criterion.",
    .tp_methods = iq_methods,
    .tp_getset = iq_getset,
    .tp_new = iq_new,
};

int fpy_iterq_init_type(PyObject *m) {
  if (PyType_Ready(&view_type) < 0 || PyType_Ready(&iterq_type) < 0) return -1;
  return PyModule_AddObjectRef(m, "IterQueue", (PyObject *)&iterq_type);
}
