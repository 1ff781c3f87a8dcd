/* coll.c — the Comm methods of every collective and point-to-point call, blocking and nonblocking (i*). */
#include "fold_py.h"

#include <stdlib.h>
#include <stdint.h>
#include <string.h>

static const char *const names[] = {"allreduce", "reduce", "broadcast", "reduce_scatter", "allgather",
                                    "gather", "scatter", "alltoall", "barrier", "send", "recv"};
/* the argument names in messages, spelled out: no formatting on the fast path */
static const char *const buf_what[] = {"allreduce: buf", "reduce: buf", "broadcast: buf", "reduce_scatter: buf",
                                       "allgather: buf", "gather: buf", "scatter: buf", "alltoall: buf",
                                       "barrier: buf", "send: buf", "recv: buf"};
static const char *const out_what[] = {"allreduce: out", "reduce: out", "broadcast: out", "reduce_scatter: out",
                                       "allgather: out", "gather: out", "scatter: out", "alltoall: out",
                                       "barrier: out", "send: out", "recv: out"};

void fpy_call_release(fpy_call *a) {
  if (a->has_out) fpy_buf_release(&a->out);
  if (a->has_in) fpy_buf_release(&a->in);
  a->has_in = a->has_out = 0;
  free(a->tmp);
  a->tmp = NULL;
  a->result = NULL;
}

static char *at(void *p, size_t block, size_t count, fold_dtype dt) {
  return (char *)p + block * count * fold_dtype_size(dt);
}

/* out must hold `want` elements of in's dtype. */
static int check_out(fold_comm *c, fpy_call *a, size_t want, const char *name) {
  if (a->out.dtype != a->in.dtype || a->out.count != want) {
    fpy_invalid("%s: rank %d: out holds %zu %s, wanted %zu %s (from buf)", name, fold_comm_rank(c), a->out.count,
                fold_dtype_name(a->out.dtype), want, fold_dtype_name(a->in.dtype));
    return -1;
  }
  return 0;
}

/* Whether two buffers share any byte (out=buf, or views of one array). */
static int overlap(const fpy_buf *x, const fpy_buf *y) {
  uintptr_t a = (uintptr_t)x->ptr, b = (uintptr_t)y->ptr;
  return x->nbytes && y->nbytes && a < b + y->nbytes && b < a + x->nbytes;
}

/* buf holds n blocks: its count must divide by n. */
static int blocks(fold_comm *c, const fpy_buf *b, int n, const char *name, const char *what, size_t *k) {
  if (b->count % (size_t)n) {
    fpy_invalid("%s: rank %d: %s holds %zu elements, not a multiple of the %d ranks", name, fold_comm_rank(c), what,
                b->count, n);
    return -1;
  }
  *k = b->count / (size_t)n;
  return 0;
}

/* Resolve the buffers of a call into pointers and a count (see docs/python.md for each call's in-place rule). */
static int resolve(fold_comm *c, fpy_call *a, PyObject *bufo, PyObject *outo) {
  const char *name = names[a->kind];
  int n = fold_comm_size(c), r = fold_comm_rank(c);
  int inplace = outo == NULL || outo == Py_None;
  int isroot = r == a->root;
  if (a->kind == FPY_BARRIER) return 0;
  /* which buffers this rank uses, and whether buf is written */
  int need_in = 1, in_w = 0, need_out = !inplace;
  switch (a->kind) {
  case FPY_ALLREDUCE: case FPY_REDUCE_SCATTER: case FPY_ALLGATHER: case FPY_ALLTOALL: in_w = inplace; break;
  case FPY_REDUCE: case FPY_GATHER: in_w = inplace && isroot; need_out = need_out && isroot; break;
  case FPY_BROADCAST: in_w = !isroot; need_out = 0; break;
  case FPY_SCATTER: need_in = isroot || inplace; in_w = inplace; break;
  case FPY_SEND: break;
  case FPY_RECV: in_w = 1; break;
  }
  if (need_in) {
    if (fpy_buf_get(bufo, in_w, buf_what[a->kind], &a->in) < 0) return -1;
    a->has_in = 1;
    a->dtype = a->in.dtype;
  }
  if (need_out) {
    if (fpy_buf_get(outo, 1, out_what[a->kind], &a->out) < 0) return -1;
    a->has_out = 1;
    if (!need_in) a->in.dtype = a->out.dtype;
  }
  a->result = a->has_out ? a->out.obj : a->has_in ? a->in.obj : NULL;
  size_t k;
  switch (a->kind) {
  case FPY_ALLREDUCE:
  case FPY_REDUCE:
    a->count = a->in.count;
    a->sendp = a->in.ptr;
    a->recvp = a->has_out ? a->out.ptr : (isroot || a->kind == FPY_ALLREDUCE) ? a->in.ptr : NULL;
    if (a->has_out && check_out(c, a, a->count, name) < 0) return -1;
    if (a->kind == FPY_REDUCE && !isroot) a->result = NULL;
    return 0;
  case FPY_BROADCAST:
  case FPY_SEND:
  case FPY_RECV:
    a->count = a->in.count;
    a->sendp = a->recvp = a->in.ptr;
    if (a->kind != FPY_BROADCAST) a->result = NULL;
    return 0;
  case FPY_REDUCE_SCATTER:
    if (blocks(c, &a->in, n, name, "buf", &k) < 0) return -1;
    a->count = k;
    a->sendp = a->in.ptr;
    a->recvp = a->has_out ? a->out.ptr : at(a->in.ptr, (size_t)r, k, a->dtype);
    return a->has_out ? check_out(c, a, k, name) : 0;
  case FPY_ALLGATHER:
    if (a->has_out) {
      a->count = a->in.count;
      a->sendp = a->in.ptr;
      a->recvp = a->out.ptr;
      return check_out(c, a, a->count * (size_t)n, name);
    }
    if (blocks(c, &a->in, n, name, "buf (in place: every rank's block)", &k) < 0) return -1;
    a->count = k;
    a->recvp = a->in.ptr;
    a->sendp = at(a->in.ptr, (size_t)r, k, a->dtype);
    return 0;
  case FPY_GATHER:
    if (!isroot) {
      a->count = a->in.count;
      a->sendp = a->in.ptr;
      a->recvp = NULL;
      a->result = NULL;
      return 0;
    }
    if (a->has_out) {
      a->count = a->in.count;
      a->sendp = a->in.ptr;
      a->recvp = a->out.ptr;
      return check_out(c, a, a->count * (size_t)n, name);
    }
    if (blocks(c, &a->in, n, name, "buf (in place at the root: every rank's block)", &k) < 0) return -1;
    a->count = k;
    a->recvp = a->in.ptr;
    a->sendp = at(a->in.ptr, (size_t)r, k, a->dtype);
    return 0;
  case FPY_SCATTER:
    if (a->has_out) {
      a->count = a->out.count;
      a->dtype = a->out.dtype;
      a->recvp = a->out.ptr;
      a->sendp = NULL;
      if (isroot) {
        a->sendp = a->in.ptr;
        if (a->in.dtype != a->out.dtype || a->in.count != a->count * (size_t)n) {
          fpy_invalid("scatter: rank %d (root): buf holds %zu %s, wanted %d blocks of out's %zu %s", r,
                      a->in.count, fold_dtype_name(a->in.dtype), n, a->count, fold_dtype_name(a->out.dtype));
          return -1;
        }
      }
      return 0;
    }
    if (!isroot) {
      a->count = a->in.count;
      a->recvp = a->in.ptr;
      a->sendp = NULL;
      return 0;
    }
    if (blocks(c, &a->in, n, name, "buf (in place at the root: every rank's block)", &k) < 0) return -1;
    a->count = k;
    a->sendp = a->in.ptr;
    a->recvp = at(a->in.ptr, (size_t)r, k, a->dtype);
    return 0;
  case FPY_ALLTOALL:
    if (blocks(c, &a->in, n, name, "buf", &k) < 0) return -1;
    a->count = k;
    if (a->has_out && check_out(c, a, a->in.count, name) < 0) return -1;
    if (a->has_out && !overlap(&a->in, &a->out)) {
      a->sendp = a->in.ptr;
      a->recvp = a->out.ptr;
      return 0;
    }
    /* fold has no in-place alltoall (sendbuf == recvbuf is FOLD_EINVAL, and
     * overlapping blocks would be overwritten before they are sent): send
     * from a private copy, into out (which is buf, or shares its memory) */
    if (a->in.nbytes) {
      if (!(a->tmp = malloc(a->in.nbytes))) {
        PyErr_NoMemory();
        return -1;
      }
      memcpy(a->tmp, a->in.ptr, a->in.nbytes);
    }
    a->sendp = a->tmp;
    a->recvp = a->has_out ? a->out.ptr : a->in.ptr;
    return 0;
  }
  return 0;
}

static int start(fold_comm *c, fpy_call *a, const fold_coll_opts *o, fold_request **req) {
  switch (a->kind) {
  case FPY_ALLREDUCE: return fold_iallreduce_opts(a->sendp, a->recvp, a->count, a->dtype, a->op, c, o, req);
  case FPY_REDUCE: return fold_ireduce_opts(a->sendp, a->recvp, a->count, a->dtype, a->op, a->root, c, o, req);
  case FPY_BROADCAST: return fold_ibroadcast_opts(a->recvp, a->count, a->dtype, a->root, c, o, req);
  case FPY_REDUCE_SCATTER: return fold_ireduce_scatter_opts(a->sendp, a->recvp, a->count, a->dtype, a->op, c, o, req);
  case FPY_ALLGATHER: return fold_iallgather_opts(a->sendp, a->recvp, a->count, a->dtype, c, o, req);
  case FPY_GATHER: return fold_igather_opts(a->sendp, a->recvp, a->count, a->dtype, a->root, c, o, req);
  case FPY_SCATTER: return fold_iscatter_opts(a->sendp, a->recvp, a->count, a->dtype, a->root, c, o, req);
  case FPY_ALLTOALL: return fold_ialltoall_opts(a->sendp, a->recvp, a->count, a->dtype, c, o, req);
  case FPY_BARRIER: return fold_ibarrier_opts(c, o, req);
  case FPY_SEND: return fold_isend(a->sendp, a->count, a->dtype, a->peer, a->tag, c, req);
  case FPY_RECV: return fold_irecv(a->recvp, a->count, a->dtype, a->peer, a->tag, c, req);
  }
  return FOLD_EINTERNAL;
}

/* algo= and timeout= of a collective as the call's fold_coll_opts (the
 * communicator's settings stay as they are): 0, or -1 with an exception. */
static int opts_from(int kind, PyObject *algo, PyObject *timeout, fold_coll_opts *o) {
  *o = (fold_coll_opts)FOLD_COLL_OPTS_INIT;
  if (algo && algo != Py_None) {
    if (!PyUnicode_Check(algo)) {
      PyErr_Format(PyExc_TypeError, "%s(): algo must be a str naming an algorithm, not %s", names[kind],
                   Py_TYPE(algo)->tp_name);
      return -1;
    }
    if (!(o->algo = PyUnicode_AsUTF8(algo))) return -1;
  }
  if (timeout && timeout != Py_None) {
    if (!PyFloat_Check(timeout) && !PyLong_Check(timeout)) {
      PyErr_Format(PyExc_TypeError, "%s(): timeout must be a number of seconds, not %s", names[kind],
                   Py_TYPE(timeout)->tp_name);
      return -1;
    }
    o->timeout = PyFloat_AsDouble(timeout);
    if (o->timeout == -1.0 && PyErr_Occurred()) return -1;
    if (!(o->timeout > 0)) { /* 0 would mean FOLD_TIMEOUT: say so rather than wait 300 s */
      fpy_invalid("%s: timeout must be > 0 seconds (None: FOLD_TIMEOUT), not %R", names[kind], timeout);
      return -1;
    }
  }
  return 0;
}

/* Run a resolved call: blocking (return its result) or not (return a Request owning it). */
static PyObject *run(fpy_comm *self, fold_comm *c, fpy_call *a, const fold_coll_opts *o, int nonblocking) {
  fold_request *req = NULL;
  int rc = start(c, a, o, &req);
  if (rc) {
    fpy_raise(rc, fold_comm_last_error(c));
    fpy_call_release(a);
    return NULL;
  }
  if (nonblocking) return fpy_request_new(self, req, a);
  fold_status st;
  PyObject *res = NULL;
  if (fpy_wait(self, req, &st, &rc) == 0) {
    if (rc) fpy_raise(rc, fold_comm_last_error(c));
    else if (a->kind == FPY_RECV) res = fpy_status_new(&st);
    else {
      res = a->result ? a->result : Py_None;
      Py_INCREF(res);
    }
  }
  fpy_call_release(a);
  return res;
}

/* The parameters of each call, in order (METH_FASTCALL: no tuple, no dict). */
enum { P_BUF, P_OUT, P_OP, P_ROOT, P_PEER, P_TAG, P_ALGO, P_TIMEOUT, P_N };
static const struct {
  int nreq;          /* required leading parameters */
  int np;
  int p[6];          /* P_* in positional order */
  const char *n[6];  /* their keyword names */
} sigs[] = {
    [FPY_ALLREDUCE] = {1, 5, {P_BUF, P_OUT, P_OP, P_ALGO, P_TIMEOUT}, {"buf", "out", "op", "algo", "timeout"}},
    [FPY_REDUCE] = {1, 6, {P_BUF, P_OUT, P_OP, P_ROOT, P_ALGO, P_TIMEOUT}, {"buf", "out", "op", "root", "algo", "timeout"}},
    [FPY_BROADCAST] = {1, 4, {P_BUF, P_ROOT, P_ALGO, P_TIMEOUT}, {"buf", "root", "algo", "timeout"}},
    [FPY_REDUCE_SCATTER] = {1, 5, {P_BUF, P_OUT, P_OP, P_ALGO, P_TIMEOUT}, {"buf", "out", "op", "algo", "timeout"}},
    [FPY_ALLGATHER] = {1, 4, {P_BUF, P_OUT, P_ALGO, P_TIMEOUT}, {"buf", "out", "algo", "timeout"}},
    [FPY_GATHER] = {1, 5, {P_BUF, P_OUT, P_ROOT, P_ALGO, P_TIMEOUT}, {"buf", "out", "root", "algo", "timeout"}},
    [FPY_SCATTER] = {1, 5, {P_BUF, P_OUT, P_ROOT, P_ALGO, P_TIMEOUT}, {"buf", "out", "root", "algo", "timeout"}},
    [FPY_ALLTOALL] = {1, 4, {P_BUF, P_OUT, P_ALGO, P_TIMEOUT}, {"buf", "out", "algo", "timeout"}},
    [FPY_BARRIER] = {0, 2, {P_ALGO, P_TIMEOUT}, {"algo", "timeout"}},
    [FPY_SEND] = {2, 3, {P_BUF, P_PEER, P_TAG}, {"buf", "dest", "tag"}},
    [FPY_RECV] = {1, 3, {P_BUF, P_PEER, P_TAG}, {"buf", "source", "tag"}},
};

/* Fill v[P_*] (borrowed, NULL when not given) from positional and keyword arguments. */
static int parse(int kind, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **v) {
  const char *fn = names[kind];
  int np = sigs[kind].np;
  if (nargs > np) {
    PyErr_Format(PyExc_TypeError, "%s() takes at most %d positional arguments (%zd given)", fn, np, nargs);
    return -1;
  }
  for (Py_ssize_t i = 0; i < nargs; i++) v[sigs[kind].p[i]] = args[i];
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; k++) {
    PyObject *key = PyTuple_GET_ITEM(kwnames, k);
    int j = 0;
    while (j < np && PyUnicode_CompareWithASCIIString(key, sigs[kind].n[j]) != 0) j++;
    if (j == np) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fn, key);
      return -1;
    }
    if (v[sigs[kind].p[j]]) {
      PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fn, sigs[kind].n[j]);
      return -1;
    }
    v[sigs[kind].p[j]] = args[nargs + k];
  }
  for (int j = 0; j < sigs[kind].nreq; j++)
    if (!v[sigs[kind].p[j]]) {
      PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fn, sigs[kind].n[j]);
      return -1;
    }
  return 0;
}

/* An int argument (root, dest, source, tag): def when not given. */
static int int_arg(PyObject *o, int def, const char *fn, const char *what, int *out) {
  if (!o) {
    *out = def;
    return 0;
  }
  if (!PyLong_Check(o)) {
    PyErr_Format(PyExc_TypeError, "%s(): %s must be an int, not %s", fn, what, Py_TYPE(o)->tp_name);
    return -1;
  }
  int overflow = 0;
  long x = PyLong_AsLongAndOverflow(o, &overflow);
  if (overflow || x < INT32_MIN || x > INT32_MAX) {
    fpy_invalid("%s: %s %R is out of range", fn, what, o);
    return -1;
  }
  if (x == -1 && PyErr_Occurred()) return -1;
  *out = (int)x;
  return 0;
}

static PyObject *call(fpy_comm *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, int kind,
                      int nonblocking) {
  PyObject *v[P_N] = {NULL};
  if (parse(kind, args, nargs, kwnames, v) < 0) return NULL;
  fpy_call a;
  memset(&a, 0, sizeof a);
  a.kind = kind;
  int recv = kind == FPY_RECV;
  if (int_arg(v[P_ROOT], 0, names[kind], "root", &a.root) < 0 ||
      int_arg(v[P_PEER], recv ? FOLD_ANY_SOURCE : 0, names[kind], recv ? "source" : "dest", &a.peer) < 0 ||
      int_arg(v[P_TAG], recv ? FOLD_ANY_TAG : 0, names[kind], "tag", &a.tag) < 0)
    return NULL;
  fold_comm *c = fpy_comm_use(self);
  if (!c) return NULL;
  if ((kind == FPY_ALLREDUCE || kind == FPY_REDUCE || kind == FPY_REDUCE_SCATTER) &&
      fpy_op_from_name(v[P_OP], &a.op) < 0)
    return NULL;
  fold_coll_opts o;
  if (opts_from(kind, v[P_ALGO], v[P_TIMEOUT], &o) < 0) return NULL;
  if (resolve(c, &a, v[P_BUF], v[P_OUT]) < 0) {
    fpy_call_release(&a);
    return NULL;
  }
  return run(self, c, &a, kind < FPY_SEND ? &o : NULL, nonblocking);
}

#define PAIR(name, KIND)                                                                           \
  static PyObject *m_##name(fpy_comm *s, PyObject *const *a, Py_ssize_t n, PyObject *k) {                  \
    return call(s, a, n, k, KIND, 0);                                                                        \
  }                                                                                                          \
  static PyObject *m_i##name(fpy_comm *s, PyObject *const *a, Py_ssize_t n, PyObject *k) {                 \
    return call(s, a, n, k, KIND, 1);                                                                        \
  }
PAIR(allreduce, FPY_ALLREDUCE)
PAIR(reduce, FPY_REDUCE)
PAIR(broadcast, FPY_BROADCAST)
PAIR(reduce_scatter, FPY_REDUCE_SCATTER)
PAIR(allgather, FPY_ALLGATHER)
PAIR(gather, FPY_GATHER)
PAIR(scatter, FPY_SCATTER)
PAIR(alltoall, FPY_ALLTOALL)
PAIR(barrier, FPY_BARRIER)
PAIR(send, FPY_SEND)
PAIR(recv, FPY_RECV)

#define KW METH_FASTCALL | METH_KEYWORDS
#define M(name, sig, doc)                                                                                    \
  {#name, (PyCFunction)(void (*)(void))m_##name, KW, #name sig ": " doc " Blocks (GIL released)."},         \
      {"i" #name, (PyCFunction)(void (*)(void))m_i##name, KW,                                                \
       "i" #name sig ": start " #name " and return a Request (.wait(), .test()) that keeps the buffers alive."}
PyMethodDef fpy_coll_methods[] = {
    M(allreduce, "(buf, out=None, op='sum', algo=None, timeout=None)",
      "out (buf when out is None: in place) = buf of rank 0 op ... op buf of rank n-1. Returns out or buf."),
    M(reduce, "(buf, out=None, op='sum', root=0, algo=None, timeout=None)",
      "the reduction lands in out (buf in place) at root only. Returns it at root, None elsewhere."),
    M(broadcast, "(buf, root=0, algo=None, timeout=None)", "root's buf is copied into buf on every rank. Returns buf."),
    M(reduce_scatter, "(buf, out=None, op='sum', algo=None, timeout=None)",
      "buf holds n blocks; rank r gets block r of the reduction in out (in place: block r of buf)."),
    M(allgather, "(buf, out=None, algo=None, timeout=None)",
      "out (n blocks) gets every rank's buf at block rank; in place: buf holds n blocks, this rank's at block rank."),
    M(gather, "(buf, out=None, root=0, algo=None, timeout=None)",
      "as allgather, only root receives; in place at root: buf holds n blocks. Returns out/buf at root, else None."),
    M(scatter, "(buf, out=None, root=0, algo=None, timeout=None)",
      "root's buf (n blocks) is cut; rank r gets block r in out (buf ignored off root); in place: root keeps its "
      "block in buf, other ranks receive into buf."),
    M(alltoall, "(buf, out=None, algo=None, timeout=None)",
      "block p of buf goes to rank p, landing at block r (the sender) of out (or of buf, in place)."),
    M(barrier, "(algo=None, timeout=None)", "returns once every rank has entered the barrier."),
    M(send, "(buf, dest, tag=0)", "send buf to rank dest."),
    M(recv, "(buf, source=ANY_SOURCE, tag=ANY_TAG)",
      "receive into buf; returns fold.Status(source, tag, count) (count in elements)."),
    {NULL},
};
