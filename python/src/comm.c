/* comm.c — fold.Comm: rank, size, transport, sub-communicators and the blocking collectives. */
#include "fold_py.h"

#include <stdio.h>
#include <stdlib.h>
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
  o->sim = NULL;
  o->busy_own = 0;
  o->busy = &o->busy_own;
  o->algo_spec = NULL;
  return (PyObject *)o;
}

fold_comm *fpy_comm_get(fpy_comm *self) {
  if (!self->c) fpy_invalid("the communicator was destroyed");
  return self->c;
}

fold_comm *fpy_comm_use(fpy_comm *self) {
  if (self->c && *self->busy) {
    fpy_invalid("rank %d: another thread is inside a call on this communicator or one of its family (a "
                "communicator and its sub-communicators are used by one thread at a time)", fold_comm_rank(self->c));
    return NULL;
  }
  return fpy_comm_get(self);
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
  free(self->algo_spec);
  PyObject_Free(self);
}


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

static PyObject *comm_local_rank(fpy_comm *self, void *unused) {
  fold_comm *c = fpy_comm_get(self);
  return c ? PyLong_FromLong(fold_comm_local_rank(c)) : NULL;
}
static PyObject *comm_local_size(fpy_comm *self, void *unused) {
  fold_comm *c = fpy_comm_get(self);
  return c ? PyLong_FromLong(fold_comm_local_size(c)) : NULL;
}
static PyObject *comm_last_error(fpy_comm *self, void *unused) {
  return PyUnicode_FromString(self->c ? fold_comm_last_error(self->c) : "");
}
static PyObject *comm_destroyed(fpy_comm *self, void *unused) { return PyBool_FromLong(self->c == NULL); }

/* The three ways to make a child communicator (collective over self). */
enum { SPLIT, DUP, SPLIT_HOST };
static PyObject *make_child(fpy_comm *self, int how, int color, int key) {
  fold_comm *c = fpy_comm_use(self), *nc = NULL;
  if (!c) return NULL;
  int rc;
  /* blocks until every rank joined; fold has no nonblocking split, so
   * Ctrl-C comes through the guard (an abort of c) */
  fpy_guard g;
  fpy_guard_begin(&g, self->simulated ? NULL : c);
  *self->busy = 1;
  Py_BEGIN_ALLOW_THREADS
  rc = how == SPLIT ? fold_comm_split(c, color, key, &nc) : how == DUP ? fold_comm_dup(c, &nc)
                                                                        : fold_comm_split_host(c, &nc);
  Py_END_ALLOW_THREADS
  *self->busy = 0;
  fpy_guard_end(&g);
  if (PyErr_CheckSignals() < 0) {
    if (nc && !self->simulated) fold_comm_destroy(nc);
    return NULL;
  }
  if (rc) return fpy_raise(rc, fold_comm_last_error(c));
  if (!nc) Py_RETURN_NONE; /* FOLD_UNDEFINED */
  /* the child keeps its parent alive; a simulated one belongs to its Sim */
  PyObject *child = fpy_comm_new(nc, (PyObject *)self, self->simulated);
  if (child) {
    ((fpy_comm *)child)->busy = self->busy; /* one family */
    /* fold children inherit the forced algorithms: so does the record of them */
    if (self->algo_spec && !(((fpy_comm *)child)->algo_spec = strdup(self->algo_spec))) {
      Py_DECREF(child);
      return PyErr_NoMemory();
    }
  }
  if (child && self->simulated) {
    ((fpy_comm *)child)->sim = self->sim;
    if (fpy_sim_adopt(self->sim, child) < 0) Py_CLEAR(child);
  }
  return child;
}

static PyObject *comm_split(fpy_comm *self, PyObject *args, PyObject *kw) {
  static char *kl[] = {"color", "key", NULL};
  int color, key = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "i|i:split", kl, &color, &key)) return NULL;
  return make_child(self, SPLIT, color, key);
}
static PyObject *comm_dup(fpy_comm *self, PyObject *unused) { return make_child(self, DUP, 0, 0); }
static PyObject *comm_split_host(fpy_comm *self, PyObject *unused) { return make_child(self, SPLIT_HOST, 0, 0); }

static PyObject *comm_abort(fpy_comm *self, PyObject *unused) {
  fold_comm *c = fpy_comm_use(self);
  if (!c) return NULL;
  fold_comm_abort(c);
  Py_RETURN_NONE;
}

static PyObject *comm_destroy(fpy_comm *self, PyObject *unused) {
  if (self->c && *self->busy && !fpy_comm_use(self)) return NULL;
  if (self->c && !self->simulated) {
    fold_comm *c = self->c;
    self->c = NULL;
    Py_BEGIN_ALLOW_THREADS
    fold_comm_destroy(c);
    Py_END_ALLOW_THREADS
  }
  self->c = NULL;
  Py_RETURN_NONE;
}

static PyObject *comm_enter(fpy_comm *self, PyObject *unused) {
  Py_INCREF(self);
  return (PyObject *)self;
}
static PyObject *comm_exit(fpy_comm *self, PyObject *args) { return comm_destroy(self, NULL); }

static PyObject *comm_set_algo(fpy_comm *self, PyObject *arg) {
  fold_comm *c = fpy_comm_use(self);
  if (!c) return NULL;
  if (!PyUnicode_Check(arg)) return fpy_invalid("set_algo: spec must be a str like \"allreduce=ring\"");
  const char *spec = PyUnicode_AsUTF8(arg);
  if (!spec) return NULL;
  int rc = fold_comm_set_algo(c, spec);
  if (rc) return fpy_raise(rc, fold_comm_last_error(c));
  size_t old = self->algo_spec ? strlen(self->algo_spec) : 0;
  char *s = realloc(self->algo_spec, old + strlen(spec) + 2);
  if (!s) return PyErr_NoMemory();
  if (old) s[old++] = ',';
  strcpy(s + old, spec);
  self->algo_spec = s;
  Py_RETURN_NONE;
}

/* The last "coll=algo" item of spec, if any, into out. */
static void last_mention(const char *spec, const char *coll, char *out, size_t cap) {
  size_t n = strlen(coll);
  for (const char *p = spec; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    while (len && (*p == ' ')) p++, len--;
    if (len > n && !strncmp(p, coll, n) && p[n] == '=' && len - n - 1 < cap) {
      memcpy(out, p + n + 1, len - n - 1);
      out[len - n - 1] = '\0';
    }
    p = end ? end + 1 : NULL;
  }
}

void fpy_comm_prior_algo(const fpy_comm *self, const char *coll, char *out, size_t cap) {
  snprintf(out, cap, "auto");
  char env[4096]; /* FOLD_ALGO as the library reads it */
  if (fold_config_get("FOLD_ALGO", env, sizeof env) < (int)sizeof env) last_mention(env, coll, out, cap);
  last_mention(self->algo_spec, coll, out, cap);
}

static PyObject *comm_iprobe(fpy_comm *self, PyObject *args, PyObject *kw) {
  static char *kl[] = {"source", "tag", NULL};
  int src = FOLD_ANY_SOURCE, tag = FOLD_ANY_TAG;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|ii:iprobe", kl, &src, &tag)) return NULL;
  fold_comm *c = fpy_comm_use(self);
  if (!c) return NULL;
  int found = 0;
  fold_status st;
  int rc = fold_iprobe(src, tag, c, &found, &st);
  if (rc) return fpy_raise(rc, fold_comm_last_error(c));
  if (!found) Py_RETURN_NONE;
  return fpy_status_new(&st);
}

static PyObject *comm_repr(fpy_comm *self) {
  if (!self->c) return PyUnicode_FromString("<fold.Comm destroyed>");
  return PyUnicode_FromFormat("<fold.Comm rank %d of %d, %s>", fold_comm_rank(self->c), fold_comm_size(self->c),
                              fold_comm_transport(self->c));
}

static PyMethodDef comm_own_methods[] = {
    {"split", (PyCFunction)(void (*)(void))comm_split, METH_VARARGS | METH_KEYWORDS,
     "split(color, key=0) -> Comm or None: collective; ranks with the same color form a communicator ordered by "
     "key then rank; color fold.UNDEFINED joins none (None)."},
    {"dup", (PyCFunction)comm_dup, METH_NOARGS, "dup() -> Comm: collective; the same ranks, a private channel."},
    {"split_host", (PyCFunction)comm_split_host, METH_NOARGS,
     "split_host() -> Comm: collective; the ranks on this host."},
    {"abort", (PyCFunction)comm_abort, METH_NOARGS,
     "abort(): fail every pending and later call on this communicator with fold.Aborted (local)."},
    {"destroy", (PyCFunction)comm_destroy, METH_NOARGS,
     "destroy(): release the communicator now (also done when it is garbage collected). Never hangs."},
    {"set_algo", (PyCFunction)comm_set_algo, METH_O,
     "set_algo(spec): force algorithms, e.g. \"allreduce=ring,broadcast=binomial\" (fold_comm_set_algo)."},
    {"iprobe", (PyCFunction)(void (*)(void))comm_iprobe, METH_VARARGS | METH_KEYWORDS,
     "iprobe(source=ANY_SOURCE, tag=ANY_TAG) -> Status or None: a matching message here? (count in bytes)"},
    {"__enter__", (PyCFunction)comm_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)comm_exit, METH_VARARGS, NULL},
    {NULL},
};
/* comm_own_methods then fpy_coll_methods: tp_methods takes one table */
static PyMethodDef comm_methods[64];

static PyGetSetDef comm_getset[] = {
    {"rank", (getter)comm_rank, NULL, "this rank's index in [0, size)", NULL},
    {"size", (getter)comm_size, NULL, "the number of ranks", NULL},
    {"transport", (getter)comm_transport, NULL, "\"inproc\", \"shm\", \"tcp\" or \"sim\"", NULL},
    {"local_rank", (getter)comm_local_rank, NULL, "this rank's index among the ranks on its host", NULL},
    {"local_size", (getter)comm_local_size, NULL, "how many ranks are on this rank's host", NULL},
    {"last_error", (getter)comm_last_error, NULL, "fold's message of the last failure on this communicator", NULL},
    {"destroyed", (getter)comm_destroyed, NULL, "whether destroy() was called", NULL},
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
    .tp_repr = (reprfunc)comm_repr,
};

int fpy_comm_init_type(PyObject *m) {
  size_t n = 0, cap = sizeof comm_methods / sizeof comm_methods[0] - 1; /* the last stays the sentinel */
  for (PyMethodDef *d = comm_own_methods; d->ml_name && n < cap; d++) comm_methods[n++] = *d;
  for (PyMethodDef *d = fpy_coll_methods; d->ml_name && n < cap; d++) comm_methods[n++] = *d;
  if (PyType_Ready(&fpy_comm_type) < 0) return -1;
  return PyModule_AddObjectRef(m, "Comm", (PyObject *)&fpy_comm_type);
}
