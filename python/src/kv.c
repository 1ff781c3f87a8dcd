/* kv.c — fold.KVStore: the parameter-server key-value store (fold_kv_*, include/fold_kv.h) with Python updaters. */
#include "kv.h"

#include <string.h>

static PyTypeObject kv_type;

/* fold's message for rc. fold_comm_last_error takes the family's lock,
 * which the progress thread may hold while it waits for the GIL to run a
 * server's Python updater: read it with the GIL released. */
PyObject *fpy_kv_raise_rc(fpy_kv *self, int rc) {
  char msg[1024];
  fold_comm *c = self->comm ? self->comm->c : NULL;
  Py_BEGIN_ALLOW_THREADS
  snprintf(msg, sizeof msg, "%s", fold_comm_last_error(c));
  Py_END_ALLOW_THREADS
  return fpy_raise(rc, msg);
}

/* The updater's exception, if one is waiting: raise it (returns -1). */
static int raise_pending(fpy_kv *self) {
  if (!self->pending) return 0;
  PyObject *e = self->pending;
  self->pending = NULL;
  PyErr_SetObject((PyObject *)Py_TYPE(e), e);
  Py_DECREF(e);
  return -1;
}

/* The store for a call, or NULL with an exception: destroyed, its
 * communicator destroyed, another thread inside, or the updater raised. */
static PyObject *from_updater(void) {
  return fpy_invalid("KVStore: called from the store's own updater: an updater may not call into its own store (it "
                     "runs inside that store's push or serve)");
}
static int in_own_updater(const fpy_kv *self) {
  return self->in_updater && self->updater_thread == PyThread_get_thread_ident();
}

static fold_kv *use(fpy_kv *self) {
  if (!self->kv) return fpy_invalid("KVStore: destroyed"), NULL;
  if (in_own_updater(self)) return from_updater(), NULL;
  if (self->comm && !fpy_comm_use(self->comm)) return NULL;
  if (self->busy) return fpy_invalid("KVStore: another thread is inside a call on this store"), NULL;
  if (raise_pending(self) < 0) return NULL;
  return self->kv;
}

/* Around a call with the GIL released: fold's one-thread-per-family rule. */
static void enter(fpy_kv *self) {
  self->busy = 1;
  if (self->comm) *self->comm->busy = 1;
}
static void leave(fpy_kv *self) {
  self->busy = 0;
  if (self->comm) *self->comm->busy = 0;
}

static void release_outs(fpy_kv *self) {
  for (size_t i = 0; i < self->nouts; i++) fpy_buf_release(&self->outs[i]);
  self->nouts = 0;
}

/* ---- the updater: a Python callable run from inside fold ------------------ */

static void updater_tramp(int64_t key, const void *merged, void *stored, size_t count, fold_dtype dt, void *ctx) {
  fpy_kv *self = ctx;
  /* fold may call this inside a call that released the GIL (push on a local
   * store, serve, wait), on this thread or the progress thread */
  PyGILState_STATE g = PyGILState_Ensure();
  if (self->updater && !self->pending) {
    size_t bytes = count * fold_dtype_size(dt);
    const char *np = dt == FOLD_BFLOAT16 ? "uint16" : fold_dtype_name(dt); /* numpy has no bfloat16 */
    PyObject *mm = PyMemoryView_FromMemory((char *)merged, (Py_ssize_t)bytes, PyBUF_READ);
    PyObject *sm = PyMemoryView_FromMemory(stored, (Py_ssize_t)bytes, PyBUF_WRITE);
    PyObject *ma = mm ? PyObject_CallFunction(self->frombuffer, "Os", mm, np) : NULL;
    PyObject *sa = sm && ma ? PyObject_CallFunction(self->frombuffer, "Os", sm, np) : NULL;
    PyObject *ko = sa ? fpy_kv_key_obj(self, key) : NULL;
    /* a call on this store from inside is refused as such (use()), not
     * as "another thread is inside a call" */
    int was = self->in_updater;
    unsigned long who = self->updater_thread;
    self->in_updater = 1;
    self->updater_thread = PyThread_get_thread_ident();
    PyObject *r = ko ? PyObject_CallFunctionObjArgs(self->updater, ko, ma, sa, NULL) : NULL;
    self->in_updater = was;
    self->updater_thread = who;
    if (!r) {
      /* cannot fail fold's call from here: kept, raised by the next call */
      PyObject *t, *v, *tb;
      PyErr_Fetch(&t, &v, &tb);
      PyErr_NormalizeException(&t, &v, &tb);
      if (tb && v) PyException_SetTraceback(v, tb);
      self->pending = v;
      Py_XDECREF(t);
      Py_XDECREF(tb);
    }
    Py_XDECREF(r);
    Py_XDECREF(ko);
    Py_XDECREF(sa);
    Py_XDECREF(ma);
    Py_XDECREF(sm);
    Py_XDECREF(mm);
  }
  PyGILState_Release(g);
}

/* ---- the type ------------------------------------------------------------- */

static PyObject *kvs_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kl[] = {"comm", "type", NULL};
  PyObject *commo = Py_None;
  const char *t = "local";
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|Os:KVStore", kl, &commo, &t)) return NULL;
  fpy_comm *comm = NULL;
  fold_comm *c = NULL;
  if (commo != Py_None) {
    if (!PyObject_TypeCheck(commo, &fpy_comm_type))
      return fpy_invalid("KVStore: comm must be a fold.Comm or None, not %s", Py_TYPE(commo)->tp_name);
    comm = (fpy_comm *)commo;
    if (!(c = fpy_comm_use(comm))) return NULL;
  }
  fpy_kv *self = (fpy_kv *)type->tp_alloc(type, 0);
  if (!self) return NULL;
  self->meta = PyDict_New();
  self->names = PyDict_New();
  if (!self->meta || !self->names) {
    Py_DECREF(self);
    return NULL;
  }
  int rc;
  fpy_guard g;
  fpy_guard_begin(&g, comm && !comm->simulated ? c : NULL);
  if (comm) *comm->busy = 1;
  /* collective: blocks until every rank created its store */
  Py_BEGIN_ALLOW_THREADS
  rc = fold_kv_create(c, t, &self->kv);
  Py_END_ALLOW_THREADS
  if (comm) *comm->busy = 0;
  fpy_guard_end(&g);
  if (rc) {
    Py_DECREF(self);
    if (PyErr_CheckSignals() < 0) return NULL;
    return fpy_raise(rc, fold_comm_last_error(c));
  }
  self->comm = comm;
  Py_XINCREF(comm);
  self->role = fold_kv_role(self->kv);
  self->dist = comm && strcmp(t, "local") != 0;
  return (PyObject *)self;
}

/* Destroy the store (GIL released: a worker completes its operations). */
static int do_destroy(fpy_kv *self) {
  int rc = FOLD_OK;
  if (self->kv && (!self->comm || self->comm->c)) {
    fold_kv *kv = self->kv;
    enter(self);
    Py_BEGIN_ALLOW_THREADS
    rc = fold_kv_destroy(kv);
    Py_END_ALLOW_THREADS
    leave(self);
  }
  /* a communicator destroyed first took the store's engine state with it:
   * what is left cannot be freed safely, so it is left */
  self->kv = NULL;
  release_outs(self);
  return rc;
}

static void kvs_dealloc(fpy_kv *self) {
  do_destroy(self);
  PyMem_Free(self->outs);
  Py_CLEAR(self->meta);
  Py_CLEAR(self->names);
  Py_CLEAR(self->updater);
  Py_CLEAR(self->pending);
  Py_CLEAR(self->frombuffer);
  Py_CLEAR(self->comm);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *kvs_key(fpy_kv *self, PyObject *name) {
  if (!PyUnicode_Check(name)) return fpy_invalid("KVStore.key: name must be a str, not %s", Py_TYPE(name)->tp_name);
  int64_t key;
  if (!use(self) || fpy_kv_key_of(self, name, &key) < 0) return NULL;
  return PyLong_FromLongLong(key);
}

static PyObject *kvs_init(fpy_kv *self, PyObject *args) {
  PyObject *ko, *vo;
  if (!PyArg_ParseTuple(args, "OO:init", &ko, &vo)) return NULL;
  fold_kv *kv = use(self);
  int64_t key;
  fpy_buf b;
  if (!kv || fpy_kv_key_of(self, ko, &key) < 0 || fpy_buf_get(vo, 0, "KVStore.init: value", &b) < 0) return NULL;
  int rc;
  enter(self);
  Py_BEGIN_ALLOW_THREADS
  rc = fold_kv_init(kv, key, b.ptr, b.count, b.dtype);
  Py_END_ALLOW_THREADS
  leave(self);
  size_t count = b.count;
  fold_dtype dt = b.dtype;
  fpy_buf_release(&b);
  if (rc) return fpy_kv_raise_rc(self, rc);
  PyObject *k = PyLong_FromLongLong(key);
  PyObject *m = Py_BuildValue("(ni)", (Py_ssize_t)count, (int)dt);
  int r = k && m ? PyDict_SetItem(self->meta, k, m) : -1;
  Py_XDECREF(k);
  Py_XDECREF(m);
  if (r < 0) return NULL;
  Py_RETURN_NONE;
}

enum { OP_PUSH, OP_PULL, OP_PUSHPULL };

static PyObject *push_pull(fpy_kv *self, int op, PyObject *keys, PyObject *vals, PyObject *outs, int priority) {
  static const char *const names[] = {"KVStore.push", "KVStore.pull", "KVStore.pushpull"};
  fold_kv *kv = use(self);
  if (!kv) return NULL;
  kv_args in = {0}, out = {0};
  if (op != OP_PULL && fpy_kv_args_get(self, names[op], keys, vals, 0, &in) < 0) return NULL;
  if (op != OP_PUSH && fpy_kv_args_get(self, names[op], keys, outs, 1, &out) < 0) {
    fpy_kv_args_free(&in, 1);
    return NULL;
  }
  if (op == OP_PUSHPULL && in.n != out.n) {
    fpy_kv_args_free(&in, 1);
    fpy_kv_args_free(&out, 1);
    return fpy_invalid("KVStore.pushpull: %zd values but %zd outputs: give each key as many", in.n, out.n);
  }
  int rc;
  enter(self);
  Py_BEGIN_ALLOW_THREADS
  if (op == OP_PUSH) rc = fold_kv_push(kv, (int)in.n, in.keys, in.ptrs, priority);
  else if (op == OP_PULL) rc = fold_kv_pull(kv, (int)out.n, out.keys, (void *const *)out.ptrs, priority);
  else rc = fold_kv_pushpull(kv, (int)in.n, in.keys, in.ptrs, (void *const *)out.ptrs, priority);
  Py_END_ALLOW_THREADS
  leave(self);
  fpy_kv_args_free(&in, 1); /* push copied its values */
  if (rc) {
    fpy_kv_args_free(&out, 1);
    return fpy_kv_raise_rc(self, rc);
  }
  int r = fpy_kv_keep_outs(self, &out);
  fpy_kv_args_free(&out, 1);
  if (r < 0 || raise_pending(self) < 0) return NULL; /* a local store ran the updater inside push */
  Py_RETURN_NONE;
}

static PyObject *kvs_push(fpy_kv *self, PyObject *args, PyObject *kw) {
  static char *kl[] = {"keys", "values", "priority", NULL};
  PyObject *k, *v;
  int prio = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|i:push", kl, &k, &v, &prio)) return NULL;
  return push_pull(self, OP_PUSH, k, v, NULL, prio);
}
static PyObject *kvs_pull(fpy_kv *self, PyObject *args, PyObject *kw) {
  static char *kl[] = {"keys", "outs", "priority", NULL};
  PyObject *k, *o;
  int prio = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|i:pull", kl, &k, &o, &prio)) return NULL;
  return push_pull(self, OP_PULL, k, NULL, o, prio);
}
static PyObject *kvs_pushpull(fpy_kv *self, PyObject *args, PyObject *kw) {
  static char *kl[] = {"keys", "values", "outs", "priority", NULL};
  PyObject *k, *v, *o = Py_None;
  int prio = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|Oi:pushpull", kl, &k, &v, &o, &prio)) return NULL;
  return push_pull(self, OP_PUSHPULL, k, v, o == Py_None ? v : o, prio);
}

/* wait, barrier, serve: block with the GIL released. Ctrl-C: they run
 * under the wakeup-fd guard, which aborts the store's communicator; the
 * store passes that abort on to its own duplicate (fold__kv_forward_abort),
 * so the call ends with FOLD_EABORTED within fold's sleep cap and
 * KeyboardInterrupt is raised. The guard costs about a microsecond (two
 * set_wakeup_fd calls; docs/python.md): a local store, whose calls
 * complete at once, goes without it. */
static PyObject *blocking(fpy_kv *self, int (*fn)(fold_kv *)) {
  fold_kv *kv = use(self);
  if (!kv) return NULL;
  int rc;
  fpy_guard g;
  fpy_guard_begin(&g, self->dist && !self->comm->simulated ? self->comm->c : NULL);
  enter(self);
  Py_BEGIN_ALLOW_THREADS
  rc = fn(kv);
  Py_END_ALLOW_THREADS
  leave(self);
  fpy_guard_end(&g);
  if (fn != fold_kv_serve) release_outs(self);
  if (raise_pending(self) < 0 || PyErr_CheckSignals() < 0) return NULL;
  if (rc) return fpy_kv_raise_rc(self, rc);
  Py_RETURN_NONE;
}
static PyObject *kvs_wait(fpy_kv *self, PyObject *u) { return blocking(self, fold_kv_wait); }
static PyObject *kvs_barrier(fpy_kv *self, PyObject *u) { return blocking(self, fold_kv_barrier); }
static PyObject *kvs_serve(fpy_kv *self, PyObject *u) { return blocking(self, fold_kv_serve); }

static PyObject *kvs_destroy(fpy_kv *self, PyObject *u) {
  if (!self->kv) Py_RETURN_NONE;
  if (in_own_updater(self)) return from_updater();
  if (self->busy) return fpy_invalid("KVStore: another thread is inside a call on this store");
  int rc = do_destroy(self);
  if (raise_pending(self) < 0 || PyErr_CheckSignals() < 0) return NULL;
  if (rc) return fpy_kv_raise_rc(self, rc);
  Py_RETURN_NONE;
}

static PyObject *kvs_enter(PyObject *self, PyObject *u) {
  Py_INCREF(self);
  return self;
}
static PyObject *kvs_exit(fpy_kv *self, PyObject *args) {
  PyObject *r = kvs_destroy(self, NULL);
  /* an exception already on its way out wins over destroy's */
  if (!r && PyTuple_Size(args) > 0 && PyTuple_GET_ITEM(args, 0) != Py_None) PyErr_Clear();
  if (!r && PyErr_Occurred()) return NULL;
  Py_XDECREF(r);
  Py_RETURN_FALSE;
}

static PyObject *kvs_set_optimizer(fpy_kv *self, PyObject *arg) {
  const char *spec = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
  if (!spec) return PyErr_Occurred() ? NULL : fpy_invalid("KVStore.set_optimizer: spec must be a str");
  fold_kv *kv = use(self);
  if (!kv) return NULL;
  int rc;
  enter(self);
  Py_BEGIN_ALLOW_THREADS
  rc = fold_kv_set_optimizer(kv, spec);
  Py_END_ALLOW_THREADS
  leave(self);
  if (rc) return fpy_kv_raise_rc(self, rc);
  Py_CLEAR(self->updater); /* the optimizer replaced it */
  Py_RETURN_NONE;
}

static PyObject *kvs_set_updater(fpy_kv *self, PyObject *fn) {
  if (fn != Py_None && !PyCallable_Check(fn))
    return fpy_invalid("KVStore.set_updater: want a callable fn(key, merged, stored) or None");
  fold_kv *kv = use(self);
  if (!kv) return NULL;
  if (fn != Py_None && !self->frombuffer) {
    PyObject *np = PyImport_ImportModule("numpy");
    self->frombuffer = np ? PyObject_GetAttrString(np, "frombuffer") : NULL;
    Py_XDECREF(np);
    if (!self->frombuffer) return NULL;
  }
  /* in place before fold switches: a server's progress thread may call the
   * trampoline the moment it is set, and must find the new callable */
  PyObject *old = self->updater;
  self->updater = fn == Py_None ? NULL : fn;
  Py_XINCREF(self->updater);
  int rc;
  enter(self);
  /* fold takes the family's lock, which that thread may hold while it waits for the GIL */
  Py_BEGIN_ALLOW_THREADS
  rc = fold_kv_set_updater(kv, fn == Py_None ? NULL : updater_tramp, fn == Py_None ? NULL : self);
  Py_END_ALLOW_THREADS
  leave(self);
  if (rc) {
    Py_XSETREF(self->updater, old);
    return fpy_kv_raise_rc(self, rc);
  }
  Py_XDECREF(old);
  Py_RETURN_NONE;
}

static PyObject *kvs_dead_nodes(fpy_kv *self, PyObject *u) {
  fold_kv *kv = use(self);
  if (!kv) return NULL;
  int ranks[64];
  int n;
  /* takes the family's lock: see raise_rc */
  Py_BEGIN_ALLOW_THREADS
  n = fold_kv_dead_nodes(kv, ranks, 64);
  Py_END_ALLOW_THREADS
  if (n < 0) return fpy_kv_raise_rc(self, n);
  PyObject *l = PyList_New(0);
  for (int i = 0; l && i < n && i < 64; i++) {
    PyObject *r = PyLong_FromLong(ranks[i]);
    if (!r || PyList_Append(l, r) < 0) Py_CLEAR(l);
    Py_XDECREF(r);
  }
  return l;
}

static PyObject *kvs_role(fpy_kv *self, void *u) { return PyLong_FromLong(self->role); }
static PyObject *kvs_destroyed(fpy_kv *self, void *u) { return PyBool_FromLong(self->kv == NULL); }

static PyMethodDef kvs_methods[] = {
    {"key", (PyCFunction)kvs_key, METH_O, "key(name) -> int: the key of a string name (fold_kv_key; the same on every rank)."},
    {"init", (PyCFunction)kvs_init, METH_VARARGS,
     "init(key, value): initialise key with a copy of value (workers, same keys in the same order; worker 0's is kept)."},
    {"push", (PyCFunction)(void (*)(void))kvs_push, METH_VARARGS | METH_KEYWORDS,
     "push(keys, values, priority=0): push (copied at once; a list of values for one key is summed). Does not block."},
    {"pull", (PyCFunction)(void (*)(void))kvs_pull, METH_VARARGS | METH_KEYWORDS,
     "pull(keys, outs, priority=0): pull the stored values into outs, valid after wait(). Does not block."},
    {"pushpull", (PyCFunction)(void (*)(void))kvs_pushpull, METH_VARARGS | METH_KEYWORDS,
     "pushpull(keys, values, outs=None, priority=0): push then pull into outs (default: the values themselves)."},
    {"wait", (PyCFunction)kvs_wait, METH_NOARGS, "wait(): block until this rank's pushes and pulls completed."},
    {"barrier", (PyCFunction)kvs_barrier, METH_NOARGS, "barrier(): wait, then wait for every worker still in."},
    {"serve", (PyCFunction)kvs_serve, METH_NOARGS, "serve(): servers: serve until every worker destroyed its store."},
    {"set_optimizer", (PyCFunction)kvs_set_optimizer, METH_O,
     "set_optimizer(spec): a built-in optimizer where the weights live ('sgd lr=0.1 momentum=0.9', 'adam lr=0.001')."},
    {"set_updater", (PyCFunction)kvs_set_updater, METH_O,
     "set_updater(fn): fn(key, merged, stored) updates the numpy view stored in place (local store, or each server)."},
    {"dead_nodes", (PyCFunction)kvs_dead_nodes, METH_NOARGS, "dead_nodes() -> list: the ranks known lost."},
    {"destroy", (PyCFunction)kvs_destroy, METH_NOARGS, "destroy(): complete this rank's operations, leave, free."},
    {"__enter__", kvs_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)kvs_exit, METH_VARARGS, NULL},
    {NULL},
};
static PyGetSetDef kvs_getset[] = {
    {"role", (getter)kvs_role, NULL, "fold.KV_WORKER or fold.KV_SERVER", NULL},
    {"destroyed", (getter)kvs_destroyed, NULL, "True after destroy()", NULL},
    {NULL},
};

static PyTypeObject kv_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fold.KVStore",
    .tp_basicsize = sizeof(fpy_kv),
    .tp_dealloc = (destructor)kvs_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "KVStore(comm=None, type='local'): the parameter-server store (fold_kv, docs/kvstore.md): 'local', "
              "'dist_sync', 'dist_async', 'dist_ssp'. Collective over comm; blocks until every rank made it.",
    .tp_methods = kvs_methods,
    .tp_getset = kvs_getset,
    .tp_new = kvs_new,
};

int fpy_kv_init_type(PyObject *m) {
  if (PyType_Ready(&kv_type) < 0) return -1;
  if (PyModule_AddIntConstant(m, "KV_WORKER", FOLD_KV_WORKER) < 0 ||
      PyModule_AddIntConstant(m, "KV_SERVER", FOLD_KV_SERVER) < 0)
    return -1;
  return PyModule_AddObjectRef(m, "KVStore", (PyObject *)&kv_type);
}
