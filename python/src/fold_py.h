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
typedef struct fpy_comm {
  PyObject_HEAD
  fold_comm *c;
  PyObject *keep;
  int simulated;
} fpy_comm;

extern PyTypeObject fpy_comm_type;
/* A new fold.Comm owning c (NULL with an exception if out of memory). */
PyObject *fpy_comm_new(fold_comm *c, PyObject *keep, int simulated);
/* The communicator of a Comm, or NULL with InvalidArgument if destroyed. */
fold_comm *fpy_comm_get(fpy_comm *self);
int fpy_comm_init_type(PyObject *m);

/* Wait for req with the GIL released; *rc = its fold status and 0, or -1
 * with the Python exception set (KeyboardInterrupt: then c is aborted and
 * req freed). req is freed either way. */
int fpy_wait(fold_comm *c, fold_request *req, fold_status *st, int *rc);

#endif
