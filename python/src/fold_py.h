/* fold_py.h — what the parts of the CPython extension fold._fold share. */
#ifndef FOLD_PY_H
#define FOLD_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <fold.h>

/* A Python object seen as a contiguous array: pointer, element count, dtype.
 * It holds what keeps the memory alive (a Py_buffer or a reference to a
 * torch tensor) until fpy_buf_release. */
typedef struct fpy_buf {
  PyObject *obj;    /* strong reference to the object the memory belongs to */
  Py_buffer view;   /* filled when has_view */
  int has_view;
  void *ptr;
  size_t nbytes;
  size_t count;     /* elements of dtype */
  fold_dtype dtype;
} fpy_buf;

/* Fill b from obj; writable asks for memory fold may write. Returns 0, or -1
 * with fold.InvalidArgument set (non-contiguous, unknown dtype, read-only,
 * not a CPU tensor, not a buffer). what names the argument in messages. */
int fpy_buf_get(PyObject *obj, int writable, const char *what, fpy_buf *b);
void fpy_buf_release(fpy_buf *b);

/* The exception class for a FOLD_E* code (fold.Error for unknown ones). */
PyObject *fpy_error_class(int code);
/* Raise the exception for rc with msg (fold's message) and .code = rc; returns NULL. */
PyObject *fpy_raise(int rc, const char *msg);
/* Raise fold.InvalidArgument with a formatted message; returns NULL. */
PyObject *fpy_invalid(const char *fmt, ...);
int fpy_errors_init(PyObject *m);

/* The dtype for a name ("float32", "bfloat16", ...), or -1 with
 * InvalidArgument set. */
int fpy_dtype_from_name(const char *name, fold_dtype *dt);
/* The op for a name ("sum", "prod", "min", "max", "avg", "band", "bor",
 * "bxor", "minloc", "maxloc", "sum_exact"), or -1 with InvalidArgument set. */
int fpy_op_from_name(PyObject *name, fold_op *op);

/* fold.Comm: one fold communicator. keep is what must outlive it: the
 * parent Comm of a split/dup, or the fold.Sim of a simulated rank (whose
 * communicators fold_sim_destroy frees: they are never destroyed here). */
struct fpy_sim;
typedef struct fpy_comm {
  PyObject_HEAD
  fold_comm *c;
  PyObject *keep;
  int simulated;
  struct fpy_sim *sim; /* simulated: the fold.Sim that owns c (borrowed; it
                          outlives c and clears c and sim when destroyed) */
  /* Set while a thread waits with the GIL released in a call on this
   * communicator's family (a world and its children, or a simulator's
   * ranks): fold's rule is one thread at a time per family, so a call from
   * another thread meanwhile is refused instead of racing. busy points to
   * the family's flag: busy_own of the world, or the Sim's. */
  int *busy;
  int busy_own;
} fpy_comm;

extern PyTypeObject fpy_comm_type;
/* A new fold.Comm owning c (NULL with an exception if out of memory). */
PyObject *fpy_comm_new(fold_comm *c, PyObject *keep, int simulated);
/* The communicator of a Comm, or NULL with InvalidArgument if destroyed. */
fold_comm *fpy_comm_get(fpy_comm *self);
/* The same for a call that uses it: also refused while another thread is
 * inside a call on its family. */
fold_comm *fpy_comm_use(fpy_comm *self);
int fpy_comm_init_type(PyObject *m);

/* One call's arguments, resolved: what keeps its buffers alive until it
 * completes (a Request owns it while the call runs). */
enum fpy_kind {
  FPY_ALLREDUCE, FPY_REDUCE, FPY_BROADCAST, FPY_REDUCE_SCATTER, FPY_ALLGATHER, FPY_GATHER, FPY_SCATTER,
  FPY_ALLTOALL, FPY_BARRIER, FPY_SEND, FPY_RECV
};
typedef struct fpy_call {
  int kind;
  fpy_buf in, out;   /* in: buf; out: out= (released only if held) */
  int has_in, has_out;
  void *tmp;         /* a private copy (alltoall in place), freed at the end */
  const void *sendp;
  void *recvp;
  size_t count;
  fold_dtype dtype;
  fold_op op;
  int root, peer, tag;
  PyObject *result;  /* borrowed from in or out: what the call returns (NULL: None) */
} fpy_call;
void fpy_call_release(fpy_call *a);

extern PyTypeObject fpy_request_type;
/* A fold.Request that owns a (moved in: *a is zeroed) and req, keeping comm alive. */
PyObject *fpy_request_new(fpy_comm *comm, fold_request *req, fpy_call *a);
/* fold.Status(source, tag, count) from st. */
PyObject *fpy_status_new(const fold_status *st);
int fpy_request_init_types(PyObject *m);
/* The Comm methods of the collectives and point-to-point calls (coll.c). */
extern PyMethodDef fpy_coll_methods[];

/* fold.Sim (sim.c). */
int fpy_sim_init_type(PyObject *m);
/* Register a Comm made from a simulated one with its Sim (cleared with it). */
int fpy_sim_adopt(struct fpy_sim *sim, PyObject *comm);

/* fold.AsyncReduce and fold.areduce_tree (areduce.c); fold's ML on the
 * iterative queue (ml.c: _fold.kmeans, _fold.logreg). */
int fpy_areduce_init_type(PyObject *m);
int fpy_ml_init(PyObject *m);
int fpy_iterq_init_type(PyObject *m);
/* fold.KVStore, fold.KV_WORKER, fold.KV_SERVER (kv.c). */
int fpy_kv_init_type(PyObject *m);
/* A dtype from a name, a numpy dtype or scalar type, or a torch dtype. */
int fpy_dtype_from_obj(PyObject *o, fold_dtype *dt);

/* Wait for req (on o's communicator) with the GIL released; *rc = its fold
 * status and 0, or -1 with the Python exception set (KeyboardInterrupt:
 * then the communicator is aborted and req freed). req is freed either way. */
int fpy_wait(fpy_comm *o, fold_request *req, fold_status *st, int *rc);

/* Ctrl-C for a call that blocks inside fold (split, AsyncReduce, ML fits,
 * KVStore.wait/barrier/serve): between begin and end (GIL held at both; the
 * call in between releases it), a signal with a Python handler aborts c, so
 * the call returns FOLD_EABORTED; then PyErr_CheckSignals raises
 * KeyboardInterrupt. One pipe and one watcher thread per process (made on
 * first use, again after a fork); a guard only registers c with it. */
typedef struct fpy_guard {
  int active;
  fold_comm *prev; /* the communicator registered before (a nested guard) */
  int old_fd;      /* Python's wakeup fd before begin */
} fpy_guard;
void fpy_guard_begin(fpy_guard *g, fold_comm *c);
void fpy_guard_end(fpy_guard *g);

#endif
