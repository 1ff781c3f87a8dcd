/* errors.c — fold.Error and one subclass per FOLD_E* code; dtype and op names. */
#include "fold_py.h"

#include <string.h>

static const struct {
  int code;
  const char *name; /* fold.<name> */
  const char *doc;
} classes[] = {
    {FOLD_EINVAL, "InvalidArgument", "FOLD_EINVAL: an invalid argument (the message names the rank and why)."},
    {FOLD_ETIMEDOUT, "Timeout", "FOLD_ETIMEDOUT: not complete within FOLD_TIMEOUT (names the rank waited for)."},
    {FOLD_EPEER, "PeerLost", "FOLD_EPEER: a peer was lost (exited, killed, connection closed)."},
    {FOLD_EMISMATCH, "Mismatch", "FOLD_EMISMATCH: ranks disagree on a call, or a message is too long."},
    {FOLD_EAUTH, "AuthError", "FOLD_EAUTH: a connection or store failed to prove it belongs to the job."},
    {FOLD_ENOMEM, "OutOfMemory", "FOLD_ENOMEM: out of memory."},
    {FOLD_ESYS, "SystemError", "FOLD_ESYS: an operating-system call failed."},
    {FOLD_EABORTED, "Aborted", "FOLD_EABORTED: the communicator was aborted (comm.abort, or Ctrl-C in a call)."},
    {FOLD_EINTERNAL, "InternalError", "FOLD_EINTERNAL: a bug in fold: please report the message."},
};
#define NCLASSES (sizeof classes / sizeof classes[0])

static PyObject *base;
static PyObject *sub[NCLASSES];

PyObject *fpy_error_class(int code) {
  for (size_t i = 0; i < NCLASSES; i++)
    if (classes[i].code == code) return sub[i];
  return base;
}

PyObject *fpy_raise(int rc, const char *msg) {
  PyObject *cls = fpy_error_class(rc);
  if (!msg || !msg[0]) msg = fold_strerror(rc);
  PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
  PyObject *exc = text ? PyObject_CallOneArg(cls, text) : NULL;
  Py_XDECREF(text);
  if (!exc) return NULL;
  PyObject *code = PyLong_FromLong(rc);
  if (code) {
    PyObject_SetAttrString(exc, "code", code);
    Py_DECREF(code);
  }
  PyErr_SetObject(cls, exc);
  Py_DECREF(exc);
  return NULL;
}

PyObject *fpy_invalid(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  PyObject *s = PyUnicode_FromFormatV(fmt, ap);
  va_end(ap);
  if (!s) return NULL;
  const char *u = PyUnicode_AsUTF8(s);
  if (u) fpy_raise(FOLD_EINVAL, u);
  Py_DECREF(s);
  return NULL;
}

int fpy_errors_init(PyObject *m) {
  base = PyErr_NewExceptionWithDoc("fold.Error",
                                   "A fold call failed. .code is the FOLD_E* number, str() fold's message, which "
                                   "names the ranks involved.",
                                   NULL, NULL);
  if (!base || PyModule_AddObjectRef(m, "Error", base) < 0) return -1;
  if (PyObject_SetAttrString(base, "code", Py_None) < 0) return -1;
  for (size_t i = 0; i < NCLASSES; i++) {
    char full[64];
    snprintf(full, sizeof full, "fold.%s", classes[i].name);
    sub[i] = PyErr_NewExceptionWithDoc(full, classes[i].doc, base, NULL);
    if (!sub[i] || PyModule_AddObjectRef(m, classes[i].name, sub[i]) < 0) return -1;
    PyObject *code = PyLong_FromLong(classes[i].code);
    if (!code || PyObject_SetAttrString(sub[i], "code", code) < 0) return -1;
    Py_DECREF(code);
  }
  return 0;
}

int fpy_dtype_from_name(const char *name, fold_dtype *dt) {
  for (int i = 0; i < FOLD_DTYPE_COUNT; i++)
    if (strcmp(name, fold_dtype_name((fold_dtype)i)) == 0) {
      *dt = (fold_dtype)i;
      return 0;
    }
  fpy_invalid("unknown dtype '%s'", name);
  return -1;
}

static const char *const op_names[] = {"sum", "prod", "min", "max", "avg", "band", "bor", "bxor",
                                       "minloc", "maxloc", "sum_exact"};

int fpy_op_from_name(PyObject *name, fold_op *op) {
  if (!name || name == Py_None) {
    *op = FOLD_SUM;
    return 0;
  }
  if (PyUnicode_Check(name)) {
    const char *s = PyUnicode_AsUTF8(name);
    if (!s) return -1;
    for (size_t i = 0; i < sizeof op_names / sizeof op_names[0]; i++)
      if (strcasecmp(s, op_names[i]) == 0) {
        *op = (fold_op)i;
        return 0;
      }
    /* MPI's and torch's spellings */
    if (!strcasecmp(s, "product")) { *op = FOLD_PROD; return 0; }
    if (!strcasecmp(s, "mean") || !strcasecmp(s, "average")) { *op = FOLD_AVG; return 0; }
  }
  fpy_invalid("unknown op %R (use \"sum\", \"prod\", \"min\", \"max\", \"avg\", \"band\", \"bor\", \"bxor\", "
              "\"minloc\", \"maxloc\" or \"sum_exact\")", name);
  return -1;
}
