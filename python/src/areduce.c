/* areduce.c — fold.AsyncReduce (fold_areduce_*: asynchronous tree reduction, full and partial) and fold.areduce_tree. */
#include "fold_py.h"

#include <string.h>

typedef struct {
  PyObject_HEAD
  fold_areduce *ar;
  fpy_comm *comm; /* kept alive: the reduction lives on it */
  size_t count;
  fold_dtype dtype;
  int target;
} fpy_areduce;

static PyTypeObject areduce_type;

/* A dtype from a name ("float32"), a numpy dtype or scalar type, or a torch dtype. */
int fpy_dtype_from_obj(PyObject *o, fold_dtype *dt) {
  PyObject *s = NULL;
  if (PyUnicode_Check(o)) {
    s = o;
    Py_INCREF(s);
  } else if (PyObject_HasAttrString(o, "__name__") && PyType_Check(o)) {
    s = PyObject_GetAttrString(o, "__name__"); /* numpy.float32 */
  } else if (PyObject_HasAttrString(o, "name")) {
    s = PyObject_GetAttrString(o, "name"); /* numpy.dtype('float32') */
  } else {
    s = PyObject_Str(o); /* torch.float32 */
  }
  if (!s) return -1;
  if (!PyUnicode_Check(s)) {
    Py_DECREF(s);
    fpy_invalid("dtype: %R names no type", o);
    return -1;
  }
  const char *name = PyUnicode_AsUTF8(s);
  if (name && !strncmp(name, "torch.", 6)) name += 6;
  int rc = name ? fpy_dtype_from_name(name, dt) : -1;
  Py_DECREF(s);
  return rc;
}

static PyObject *ar_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kl[] = {"comm", "count", "dtype", "op", "target", "degree", "mode", "t_wait", NULL};
  PyObject *commo, *dto = NULL, *opo = Py_None;
  Py_ssize_t count;
  int target = 0, degree = 2;
  const char *mode = "full";
  double t_wait = 0.01;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!n|OOiisd:AsyncReduce", kl, &fpy_comm_type, &commo, &count, &dto,
                                   &opo, &target, &degree, &mode, &t_wait))
    return NULL;
  fpy_comm *comm = (fpy_comm *)commo;
  fold_comm *c = fpy_comm_use(comm);
  fold_dtype dt = FOLD_FLOAT64;
  fold_op op;
  if (!c || (dto && dto != Py_None && fpy_dtype_from_obj(dto, &dt) < 0) || fpy_op_from_name(opo, &op) < 0)
    return NULL;
  if (count < 0) return fpy_invalid("AsyncReduce: count %zd is negative", count);
  fold_areduce_mode m;
  if (!strcmp(mode, "full")) m = FOLD_AREDUCE_FULL;
  else if (!strcmp(mode, "partial")) m = FOLD_AREDUCE_PARTIAL;
  else return fpy_invalid("AsyncReduce: mode '%s' (\"full\" or \"partial\")", mode);
  fpy_areduce *self = (fpy_areduce *)type->tp_alloc(type, 0);
  if (!self) return NULL;
  int rc;
  fold_areduce *ar = NULL;
  /* collective: blocks like a small allreduce (Ctrl-C: the guard aborts c) */
  fpy_guard g;
  fpy_guard_begin(&g, comm->simulated ? NULL : c);
  *comm->busy = 1;
  Py_BEGIN_ALLOW_THREADS
  rc = fold_areduce_create(c, (size_t)count, dt, op, target, degree, m, t_wait, &ar);
  Py_END_ALLOW_THREADS
  *comm->busy = 0;
  fpy_guard_end(&g);
  if (PyErr_CheckSignals() < 0) {
    if (ar) fold_areduce_destroy(ar);
    Py_DECREF(self);
    return NULL;
  }
  if (rc) {
    Py_DECREF(self);
    return fpy_raise(rc, fold_comm_last_error(c));
  }
  self->ar = ar;
  self->comm = comm;
  Py_INCREF(comm);
  self->count = (size_t)count;
  self->dtype = dt;
  self->target = target;
  return (PyObject *)self;
}

static fold_areduce *ar_get(fpy_areduce *self) {
  if (!self->ar || !self->comm->c) {
    fpy_invalid("AsyncReduce: destroyed (or its communicator was)");
    return NULL;
  }
  return fpy_comm_use(self->comm) ? self->ar : NULL;
}

/* A buffer of exactly count elements of the reduction's dtype. */
static int exact(fpy_areduce *self, PyObject *o, int writable, const char *what, fpy_buf *b) {
  if (fpy_buf_get(o, writable, what, b) < 0) return -1;
  if (b->dtype != self->dtype || b->count != self->count) {
    fpy_invalid("%s: rank %d: holds %zu %s, the reduction is of %zu %s", what, fold_comm_rank(self->comm->c), b->count,
                fold_dtype_name(b->dtype), self->count, fold_dtype_name(self->dtype));
    fpy_buf_release(b);
    return -1;
  }
  return 0;
}

static PyObject *ar_contribute(fpy_areduce *self, PyObject *frag) {
  fold_areduce *ar = ar_get(self);
  fpy_buf b;
  if (!ar || exact(self, frag, 0, "AsyncReduce.contribute: fragment", &b) < 0) return NULL;
  int rc = fold_areduce_contribute(ar, b.ptr);
  fpy_buf_release(&b);
  if (rc) return fpy_raise(rc, fold_comm_last_error(self->comm->c));
  Py_RETURN_NONE;
}

static PyObject *ar_done(fpy_areduce *self, PyObject *unused) {
  fold_areduce *ar = ar_get(self);
  if (!ar) return NULL;
  int rc = fold_areduce_done(ar);
  if (rc) return fpy_raise(rc, fold_comm_last_error(self->comm->c));
  Py_RETURN_NONE;
}

static PyObject *ar_result(fpy_areduce *self, PyObject *outo) {
  fold_areduce *ar = ar_get(self);
  fpy_buf b;
  if (!ar || exact(self, outo, 1, "AsyncReduce.result: out", &b) < 0) return NULL;
  uint64_t nf = 0;
  int fin = 0;
  int rc = fold_areduce_result(ar, b.ptr, &nf, &fin);
  fpy_buf_release(&b);
  if (rc) return fpy_raise(rc, fold_comm_last_error(self->comm->c));
  return Py_BuildValue("(KO)", (unsigned long long)nf, fin ? Py_True : Py_False);
}

static PyObject *ar_wait(fpy_areduce *self, PyObject *args, PyObject *kw) {
  static char *kl[] = {"out", NULL};
  PyObject *outo = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:wait", kl, &outo)) return NULL;
  fold_areduce *ar = ar_get(self);
  if (!ar) return NULL;
  fpy_buf b;
  int has = outo != Py_None;
  if (has && exact(self, outo, 1, "AsyncReduce.wait: out", &b) < 0) return NULL;
  if (!has && fold_comm_rank(self->comm->c) == self->target && self->count)
    return fpy_invalid("AsyncReduce.wait: rank %d is the target: pass out= for the result",
                       fold_comm_rank(self->comm->c));
  uint64_t nf = 0;
  int rc;
  void *p = has ? b.ptr : NULL;
  fpy_guard g;
  fpy_guard_begin(&g, self->comm->simulated ? NULL : self->comm->c);
  *self->comm->busy = 1;
  Py_BEGIN_ALLOW_THREADS
  rc = fold_areduce_wait(ar, p, &nf);
  Py_END_ALLOW_THREADS
  *self->comm->busy = 0;
  fpy_guard_end(&g);
  if (has) fpy_buf_release(&b);
  if (PyErr_CheckSignals() < 0) return NULL;
  if (rc) return fpy_raise(rc, fold_comm_last_error(self->comm->c));
  return PyLong_FromUnsignedLongLong(nf);
}

static PyObject *ar_destroy(fpy_areduce *self, PyObject *unused) {
  int rc = FOLD_OK;
  if (self->ar && self->comm->c) {
    if (*self->comm->busy && !fpy_comm_use(self->comm)) return NULL;
    fold_areduce *ar = self->ar;
    self->ar = NULL;
    *self->comm->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = fold_areduce_destroy(ar);
    Py_END_ALLOW_THREADS
    *self->comm->busy = 0;
  }
  self->ar = NULL;
  if (rc) return fpy_raise(rc, fold_comm_last_error(self->comm->c));
  Py_RETURN_NONE;
}

static void ar_dealloc(fpy_areduce *self) {
  if (self->comm) {
    PyObject *r = ar_destroy(self, NULL);
    if (r) Py_DECREF(r);
    else PyErr_Clear(); /* a send that failed: the communicator reports it on its next call */
  }
  Py_CLEAR(self->comm);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef ar_methods[] = {
    {"contribute", (PyCFunction)ar_contribute, METH_O,
     "contribute(fragment): add count elements (copied); never blocks. Any number of times before done()."},
    {"done", (PyCFunction)ar_done, METH_NOARGS, "done(): this rank contributes no more; never blocks."},
    {"result", (PyCFunction)ar_result, METH_O,
     "result(out) -> (nfragments, final): target only; the newest (partial or final) result into out."},
    {"wait", (PyCFunction)(void (*)(void))ar_wait, METH_VARARGS | METH_KEYWORDS,
     "wait(out=None) -> nfragments: blocks until the final result (target: into out) or until this rank's "
     "subtree is handed on."},
    {"destroy", (PyCFunction)ar_destroy, METH_NOARGS, "destroy(): free the reduction."},
    {NULL},
};

static PyTypeObject areduce_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fold.AsyncReduce",
    .tp_basicsize = sizeof(fpy_areduce),
    .tp_dealloc = (destructor)ar_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "AsyncReduce(comm, count, dtype='float64', op='sum', target=0, degree=2, mode='full', t_wait=0.01): "
              "an asynchronous tree reduction (fold_areduce, docs/areduce.md). Collective to create.",
    .tp_methods = ar_methods,
    .tp_new = ar_new,
};

static PyObject *mod_tree(PyObject *m, PyObject *args) {
  int n, target, degree, rank;
  if (!PyArg_ParseTuple(args, "iiii:areduce_tree", &n, &target, &degree, &rank)) return NULL;
  int parent, nch;
  int rc = fold_areduce_tree(n, target, degree, rank, &parent, NULL, &nch);
  if (rc) return fpy_raise(rc, fold_comm_last_error(NULL));
  int *ch = PyMem_Calloc((size_t)nch + 1, sizeof *ch);
  if (!ch) return PyErr_NoMemory();
  rc = fold_areduce_tree(n, target, degree, rank, &parent, ch, &nch);
  PyObject *l = rc ? NULL : PyList_New(nch);
  for (int i = 0; l && i < nch; i++) PyList_SET_ITEM(l, i, PyLong_FromLong(ch[i]));
  PyMem_Free(ch);
  if (rc) return fpy_raise(rc, fold_comm_last_error(NULL));
  if (!l) return NULL;
  return Py_BuildValue("(iN)", parent, l);
}

PyMethodDef fpy_areduce_functions[] = {
    {"areduce_tree", mod_tree, METH_VARARGS,
     "areduce_tree(n, target, degree, rank) -> (parent, children): the reduction tree (-1: the target's parent)."},
    {NULL},
};

int fpy_areduce_init_type(PyObject *m) {
  if (PyType_Ready(&areduce_type) < 0) return -1;
  if (PyModule_AddObjectRef(m, "AsyncReduce", (PyObject *)&areduce_type) < 0) return -1;
  return PyModule_AddFunctions(m, fpy_areduce_functions);
}
