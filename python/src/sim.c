/* sim.c — fold.Sim: n simulated ranks in this process under a virtual clock (fold_sim_*), driven by run(). */
#include "fold_py.h"

#include <math.h>
#include <string.h>

typedef struct fpy_sim {
  PyObject_HEAD
  fold_sim *s;
  int n;
  PyObject *comms;   /* list: every Comm of this simulator, ranks first, then children */
  PyObject *pending; /* the first exception a callback raised, for run() to raise */
  int busy;          /* the family flag of every Comm of this simulator (fpy_comm.busy) */
  PyObject *cbs;     /* list: callbacks not yet run (kept alive until the Sim goes) */
} fpy_sim;

static PyTypeObject sim_type;

int fpy_sim_adopt(struct fpy_sim *sim, PyObject *comm) {
  if (!sim) return 0;
  return PyList_Append(sim->comms, comm);
}

/* The simulator's parameters from keywords over a base. */
static int params_from(PyObject *kw, fold_sim_params *p) {
  static const char *const names[] = {"latency", "byte_time", "op_time", "op_overhead"};
  double *f[] = {&p->latency, &p->byte_time, &p->op_time, &p->op_overhead};
  if (!kw) return 0;
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(kw, &pos, &k, &v)) {
    int j = 0;
    while (j < 4 && PyUnicode_CompareWithASCIIString(k, names[j]) != 0) j++;
    if (j == 4) {
      PyErr_Format(PyExc_TypeError, "unknown simulator parameter '%U' (latency, byte_time, op_time, op_overhead)",
                   k);
      return -1;
    }
    double d = PyFloat_AsDouble(v);
    if (d == -1 && PyErr_Occurred()) return -1;
    *f[j] = d;
  }
  return 0;
}

static PyObject *sim_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  int n;
  if (!PyArg_ParseTuple(args, "i:Sim", &n)) return NULL;
  fold_sim_params p;
  fold_sim_params_default(&p);
  if (params_from(kw, &p) < 0) return NULL;
  if (n < 1 || n > 1 << 20) return fpy_invalid("fold.Sim: %d ranks (1 to 2^20)", n);
  fold_comm **cs = PyMem_Calloc((size_t)n, sizeof *cs);
  if (!cs) return PyErr_NoMemory();
  fpy_sim *self = (fpy_sim *)type->tp_alloc(type, 0);
  if (!self) {
    PyMem_Free(cs);
    return NULL;
  }
  int rc = fold_sim_create(n, &p, &self->s, cs);
  if (rc) {
    PyMem_Free(cs);
    Py_DECREF(self);
    return fpy_raise(rc, fold_comm_last_error(NULL));
  }
  self->n = n;
  self->comms = PyList_New(n);
  self->cbs = PyList_New(0);
  for (int i = 0; self->comms && i < n; i++) {
    PyObject *c = fpy_comm_new(cs[i], NULL, 1);
    if (!c) break;
    ((fpy_comm *)c)->sim = self;
    ((fpy_comm *)c)->busy = &self->busy;
    PyList_SET_ITEM(self->comms, i, c);
  }
  PyMem_Free(cs);
  if (!self->comms || !self->cbs || PyErr_Occurred()) {
    Py_DECREF(self);
    return NULL;
  }
  return (PyObject *)self;
}

/* Free the simulator; every Comm of it becomes "destroyed". */
static void sim_free(fpy_sim *self) {
  if (self->comms) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self->comms); i++) {
      fpy_comm *c = (fpy_comm *)PyList_GET_ITEM(self->comms, i);
      if (c) {
        c->c = NULL;
        c->sim = NULL;
      }
    }
  }
  if (self->s) fold_sim_destroy(self->s);
  self->s = NULL;
  Py_CLEAR(self->comms);
  Py_CLEAR(self->cbs);
  Py_CLEAR(self->pending);
}

static void sim_dealloc(fpy_sim *self) {
  sim_free(self);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int live(fpy_sim *self) {
  if (!self->s) fpy_invalid("fold.Sim: the simulator was destroyed");
  else if (self->busy) fpy_invalid("fold.Sim: another thread is inside a call on one of its ranks");
  return self->s != NULL && !self->busy;
}

static PyObject *raise_pending(fpy_sim *self) {
  PyObject *e = self->pending;
  self->pending = NULL;
  PyErr_SetObject((PyObject *)Py_TYPE(e), e);
  Py_DECREF(e);
  return NULL;
}

static PyObject *sim_run(fpy_sim *self, PyObject *unused) {
  if (!live(self)) return NULL;
  /* the GIL stays held: callbacks (at) are Python; the run never waits on the OS */
  int rc = fold_sim_run(self->s);
  if (self->pending) return raise_pending(self);
  if (rc) return fpy_raise(rc, fold_comm_last_error(NULL)[0] ? fold_comm_last_error(NULL) : fold_strerror(rc));
  Py_RETURN_NONE;
}

static PyObject *sim_time(fpy_sim *self, void *unused) {
  if (!live(self)) return NULL;
  return PyFloat_FromDouble(fold_sim_time(self->s));
}

static PyObject *sim_comms(fpy_sim *self, void *unused) {
  if (!live(self)) return NULL;
  return PyList_GetSlice(self->comms, 0, self->n);
}

static PyObject *sim_len(fpy_sim *self, void *unused) { return PyLong_FromLong(self->n); }

static fpy_comm *rank_comm(fpy_sim *self, int rank) {
  if (rank < 0 || rank >= self->n) {
    fpy_invalid("fold.Sim: rank %d is not in [0, %d)", rank, self->n);
    return NULL;
  }
  return (fpy_comm *)PyList_GET_ITEM(self->comms, rank);
}

static PyObject *sim_compute(fpy_sim *self, PyObject *args) {
  int rank;
  double secs;
  if (!PyArg_ParseTuple(args, "id:compute", &rank, &secs) || !live(self)) return NULL;
  fpy_comm *c = rank_comm(self, rank);
  if (!c) return NULL;
  int rc = fold_sim_compute(c->c, secs);
  if (rc) return fpy_raise(rc, fold_comm_last_error(c->c));
  Py_RETURN_NONE;
}

static PyObject *sim_set_rank_params(fpy_sim *self, PyObject *args, PyObject *kw) {
  int rank;
  if (!PyArg_ParseTuple(args, "i:set_rank_params", &rank) || !live(self)) return NULL;
  fold_sim_params p;
  fold_sim_params_default(&p);
  if (params_from(kw, &p) < 0) return NULL;
  int rc = fold_sim_set_rank_params(self->s, rank, &p);
  if (rc) return fpy_raise(rc, fold_comm_last_error(NULL));
  Py_RETURN_NONE;
}

/* One fold_sim_at callback: the Python callable, with its simulator. */
typedef struct {
  fpy_sim *sim;
  PyObject *fn;
} at_cb;

static void trampoline(void *arg) {
  at_cb *cb = arg;
  /* a wait may run the simulator with the GIL released */
  PyGILState_STATE g = PyGILState_Ensure();
  /* inside a wait of this thread (the family is busy): fn is this thread's
   * own code and may start calls on the simulated ranks */
  int was = cb->sim->busy;
  cb->sim->busy = 0;
  PyObject *r = PyObject_CallNoArgs(cb->fn);
  cb->sim->busy = was;
  if (r) Py_DECREF(r);
  else if (!cb->sim->pending) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (tb) PyException_SetTraceback(v, tb);
    cb->sim->pending = v;
    Py_XDECREF(t);
    Py_XDECREF(tb);
  } else
    PyErr_WriteUnraisable(cb->fn);
  PyGILState_Release(g);
}

static void cb_free(PyObject *capsule) { PyMem_Free(PyCapsule_GetPointer(capsule, "fold.sim_at")); }

static PyObject *sim_at(fpy_sim *self, PyObject *args) {
  double t;
  PyObject *fn;
  if (!PyArg_ParseTuple(args, "dO:at", &t, &fn) || !live(self)) return NULL;
  if (!PyCallable_Check(fn)) return fpy_invalid("Sim.at: fn must be callable");
  at_cb *cb = PyMem_Malloc(sizeof *cb);
  if (!cb) return PyErr_NoMemory();
  cb->sim = self;
  cb->fn = fn;
  /* the capsule holds cb; the list holds the capsule and fn until the Sim goes */
  PyObject *cap = PyCapsule_New(cb, "fold.sim_at", cb_free);
  if (!cap) {
    PyMem_Free(cb);
    return NULL;
  }
  PyObject *pair = PyTuple_Pack(2, cap, fn);
  Py_DECREF(cap);
  if (!pair || PyList_Append(self->cbs, pair) < 0) {
    Py_XDECREF(pair);
    return NULL;
  }
  Py_DECREF(pair);
  int rc = fold_sim_at(self->s, t, trampoline, cb);
  if (rc) return fpy_raise(rc, fold_comm_last_error(NULL));
  Py_RETURN_NONE;
}

static PyObject *sim_destroy(fpy_sim *self, PyObject *unused) {
  sim_free(self);
  Py_RETURN_NONE;
}
static PyObject *sim_enter(fpy_sim *self, PyObject *unused) {
  Py_INCREF(self);
  return (PyObject *)self;
}
static PyObject *sim_exit(fpy_sim *self, PyObject *args) { return sim_destroy(self, NULL); }

static PyObject *sim_getitem(fpy_sim *self, Py_ssize_t i) {
  if (!live(self)) return NULL;
  if (i < 0 || i >= self->n) {
    PyErr_SetString(PyExc_IndexError, "fold.Sim: rank out of range");
    return NULL;
  }
  PyObject *c = PyList_GET_ITEM(self->comms, i);
  Py_INCREF(c);
  return c;
}
static Py_ssize_t sim_length(fpy_sim *self) { return self->n; }

static PySequenceMethods sim_seq = {.sq_length = (lenfunc)sim_length, .sq_item = (ssizeargfunc)sim_getitem};

static PyMethodDef sim_methods[] = {
    {"run", (PyCFunction)sim_run, METH_NOARGS,
     "run(): run the simulator until no event is left. Raises fold.Timeout naming the stuck ranks if operations "
     "are still pending then (a deadlock), or the first exception a callback raised."},
    {"compute", (PyCFunction)sim_compute, METH_VARARGS,
     "compute(rank, seconds): the rank computes for that much virtual time (fold_sim_compute)."},
    {"set_rank_params", (PyCFunction)(void (*)(void))sim_set_rank_params, METH_VARARGS | METH_KEYWORDS,
     "set_rank_params(rank, latency=, byte_time=, op_time=, op_overhead=): a slow node; unnamed ones default."},
    {"at", (PyCFunction)sim_at, METH_VARARGS,
     "at(t, fn): call fn() at virtual time t during a run; it may start nonblocking calls, never block."},
    {"destroy", (PyCFunction)sim_destroy, METH_NOARGS, "destroy(): free the simulator; its Comms are destroyed."},
    {"__enter__", (PyCFunction)sim_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)sim_exit, METH_VARARGS, NULL},
    {NULL},
};
static PyGetSetDef sim_getset[] = {
    {"time", (getter)sim_time, NULL, "virtual time in seconds", NULL},
    {"comms", (getter)sim_comms, NULL, "the ranks' Comms (transport \"sim\"), sim[i] is rank i", NULL},
    {"size", (getter)sim_len, NULL, "the number of ranks", NULL},
    {NULL},
};

static PyTypeObject sim_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fold.Sim",
    .tp_basicsize = sizeof(fpy_sim),
    .tp_dealloc = (destructor)sim_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Sim(n, latency=5e-6, byte_time=8e-11, op_time=0, op_overhead=0): n ranks in this process under a "
              "virtual clock (docs/simulator.md). Start nonblocking calls on every rank (sim[i].iallreduce(...)), "
              "then run(); time is the virtual clock.",
    .tp_methods = sim_methods,
    .tp_getset = sim_getset,
    .tp_as_sequence = &sim_seq,
    .tp_new = sim_new,
};

int fpy_sim_init_type(PyObject *m) {
  if (PyType_Ready(&sim_type) < 0) return -1;
  return PyModule_AddObjectRef(m, "Sim", (PyObject *)&sim_type);
}
