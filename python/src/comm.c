/* comm.c — fold.Comm: rank, size, transport, sub-communicators and the blocking collectives. */
#include "fold_py.h"

#include <stdio.h>
#include <string.h>

PyObject *fpy_comm_new(fold_comm *c, PyObject *keep, int simulated) {
  fpy_comm *o = PyObject_New(fpy_comm, &fpy_comm_type);
  if (!o) {
    if (!simulated) fold_comm_destroy(c);
    return NULL;
  }
  o->c = c;
  o->keep = keep;
  Py_XINCREF(keep);
  o->simulated = simulated;
  return (PyObject *)o;
}

fold_comm *fpy_comm_get(fpy_comm *self) {
  if (!self->c) fpy_invalid("the communicator was destroyed");
  return self->c;
}

static void comm_dealloc(fpy_comm *self) {
  if (self->c && !self->simulated) {
    fold_comm *c = self->c;
    self->c = NULL;
    Py_BEGIN_ALLOW_THREADS
    fold_comm_destroy(c);
    Py_END_ALLOW_THREADS
  }
  Py_CLEAR(self->keep);
  PyObject_Free(self);
}

/* Raise the error of rc on c (fold's message names the ranks). */
static PyObject *raise_rc(fold_comm *c, int rc) { return fpy_raise(rc, fold_comm_last_error(c)); }

static PyObject *comm_rank(fpy_comm *self, void *unused) {
  fold_comm *c = fpy_comm_get(self);
  return c ? PyLong_FromLong(fold_comm_rank(c)) : NULL;
}
static PyObject *comm_size(fpy_comm *self, void *unused) {
  fold_comm *c = fpy_comm_get(self);
  return c ? PyLong_FromLong(fold_comm_size(c)) : NULL;
}
static PyObject *comm_transport(fpy_comm *self, void *unused) {
  fold_comm *c = fpy_comm_get(self);
  return c ? PyUnicode_FromString(fold_comm_transport(c)) : NULL;
}

/* Select `algo` for collective `coll` for the next call (None: automatic). */
static int set_algo(fold_comm *c, const char *coll, PyObject *algo) {
  if (!algo || algo == Py_None) return 0;
  if (!PyUnicode_Check(algo)) {
    fpy_invalid("algo must be a str naming an algorithm of %s, not %s", coll, Py_TYPE(algo)->tp_name);
    return -1;
  }
  char spec[128];
  snprintf(spec, sizeof spec, "%s=%s", coll, PyUnicode_AsUTF8(algo));
  int rc = fold_comm_set_algo(c, spec);
  if (rc) {
    raise_rc(c, rc);
    return -1;
  }
  return 1;
}
static void reset_algo(fold_comm *c, const char *coll, int was_set) {
  if (was_set > 0) {
    char spec[64];
    snprintf(spec, sizeof spec, "%s=auto", coll);
    fold_comm_set_algo(c, spec);
  }
}

static PyObject *comm_allreduce(fpy_comm *self, PyObject *args, PyObject *kw) {
  static char *kwl[] = {"buf", "out", "op", "algo", NULL};
  PyObject *bufo, *outo = Py_None, *opo = Py_None, *algo = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOO:allreduce", kwl, &bufo, &outo, &opo, &algo)) return NULL;
  fold_comm *c = fpy_comm_get(self);
  fold_op op;
  if (!c || fpy_op_from_name(opo, &op) < 0) return NULL;
  int inplace = outo == Py_None;
  fpy_buf in, out;
  if (fpy_buf_get(bufo, inplace, "allreduce: buf", &in) < 0) return NULL;
  if (inplace) out = in;
  else if (fpy_buf_get(outo, 1, "allreduce: out", &out) < 0) {
    fpy_buf_release(&in);
    return NULL;
  } else if (out.dtype != in.dtype || out.count != in.count) {
    fpy_invalid("allreduce: rank %d: out holds %zu %s, buf %zu %s (they must match)", fold_comm_rank(c), out.count,
                fold_dtype_name(out.dtype), in.count, fold_dtype_name(in.dtype));
    fpy_buf_release(&out);
    fpy_buf_release(&in);
    return NULL;
  }
  PyObject *res = NULL;
  int was = set_algo(c, "allreduce", algo);
  if (was >= 0) {
    fold_request *req = NULL;
    int rc = fold_iallreduce(in.ptr, out.ptr, in.count, in.dtype, op, c, &req);
    if (rc == FOLD_OK && fpy_wait(c, req, NULL, &rc) < 0) {
      /* KeyboardInterrupt: raised as it is */
    } else if (rc) {
      raise_rc(c, rc);
    } else {
      res = inplace ? in.obj : out.obj;
      Py_INCREF(res);
    }
    reset_algo(c, "allreduce", was);
  }
  if (!inplace) fpy_buf_release(&out);
  fpy_buf_release(&in);
  return res;
}

static PyObject *comm_barrier(fpy_comm *self, PyObject *unused) {
  fold_comm *c = fpy_comm_get(self);
  if (!c) return NULL;
  fold_request *req = NULL;
  int rc = fold_ibarrier(c, &req);
  if (rc == FOLD_OK && fpy_wait(c, req, NULL, &rc) < 0) return NULL;
  if (rc) return raise_rc(c, rc);
  Py_RETURN_NONE;
}

static PyMethodDef comm_methods[] = {
    {"allreduce", (PyCFunction)(void (*)(void))comm_allreduce, METH_VARARGS | METH_KEYWORDS,
     "allreduce(buf, out=None, op='sum', algo=None): out (or buf, in place) = the reduction of every rank's buf."},
    {"barrier", (PyCFunction)comm_barrier, METH_NOARGS, "barrier(): return once every rank has entered it."},
    {NULL},
};

static PyGetSetDef comm_getset[] = {
    {"rank", (getter)comm_rank, NULL, "this rank's index in [0, size)", NULL},
    {"size", (getter)comm_size, NULL, "the number of ranks", NULL},
    {"transport", (getter)comm_transport, NULL, "\"inproc\", \"shm\", \"tcp\" or \"sim\"", NULL},
    {NULL},
};

PyTypeObject fpy_comm_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fold.Comm",
    .tp_basicsize = sizeof(fpy_comm),
    .tp_dealloc = (destructor)comm_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A fold communicator (fold.init() makes the world). Used by one thread at a time.",
    .tp_methods = comm_methods,
    .tp_getset = comm_getset,
};

int fpy_comm_init_type(PyObject *m) {
  if (PyType_Ready(&fpy_comm_type) < 0) return -1;
  return PyModule_AddObjectRef(m, "Comm", (PyObject *)&fpy_comm_type);
}
