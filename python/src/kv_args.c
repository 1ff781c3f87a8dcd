/* kv_args.c — fold.KVStore's keys and arguments: names to keys, values to checked (key, buffer) lists. */
#include "kv.h"

#include <string.h>

/* ---- keys ---------------------------------------------------------------- */

/* An int key, or a str through fold_kv_key (remembered for messages). */
int fpy_kv_key_of(fpy_kv *self, PyObject *o, int64_t *key) {
  if (PyLong_Check(o)) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    *key = (int64_t)v;
    return 0;
  }
  if (!PyUnicode_Check(o)) {
    fpy_invalid("KVStore: a key must be an int or a str, not %s", Py_TYPE(o)->tp_name);
    return -1;
  }
  const char *name = PyUnicode_AsUTF8(o);
  if (!name) return -1;
  int rc = fold_kv_key(self->kv, name, key);
  if (rc) {
    fpy_kv_raise_rc(self, rc);
    return -1;
  }
  PyObject *k = PyLong_FromLongLong(*key);
  int r = k ? PyDict_SetItem(self->names, k, o) : -1;
  Py_XDECREF(k);
  return r;
}

/* The key as a user knows it: its string, else the integer (new reference). */
PyObject *fpy_kv_key_obj(fpy_kv *self, int64_t key) {
  PyObject *k = PyLong_FromLongLong(key);
  if (!k) return NULL;
  PyObject *n = PyDict_GetItemWithError(self->names, k);
  if (n) {
    Py_DECREF(k);
    Py_INCREF(n);
    return n;
  }
  return PyErr_Occurred() ? (Py_DECREF(k), NULL) : k;
}

/* ---- arguments: keys and values flattened to one (key, buffer) per value -- */

void fpy_kv_args_free(kv_args *a, int release) {
  if (release)
    for (Py_ssize_t i = 0; i < a->n; i++) fpy_buf_release(&a->bufs[i]);
  PyMem_Free(a->keys);
  PyMem_Free(a->bufs);
  PyMem_Free(a->ptrs);
  memset(a, 0, sizeof *a);
}

static int is_seq(PyObject *o) { return PyList_Check(o) || PyTuple_Check(o); }

/* Check one buffer against what init recorded for key. */
static int check_buf(fpy_kv *self, const char *op, int64_t key, const fpy_buf *b) {
  PyObject *k = PyLong_FromLongLong(key);
  if (!k) return -1;
  PyObject *m = PyDict_GetItemWithError(self->meta, k);
  Py_DECREF(k);
  if (!m) return PyErr_Occurred() ? -1 : 0; /* never initialised: fold says so, naming the key */
  size_t cnt = (size_t)PyLong_AsSize_t(PyTuple_GET_ITEM(m, 0));
  fold_dtype dt = (fold_dtype)PyLong_AsLong(PyTuple_GET_ITEM(m, 1));
  if (cnt == b->count && dt == b->dtype) return 0;
  PyObject *ko = fpy_kv_key_obj(self, key);
  if (ko) fpy_invalid("%s: key %R holds %zu %s, a value given has %zu %s", op, ko, cnt, fold_dtype_name(dt),
                      b->count, fold_dtype_name(b->dtype));
  Py_XDECREF(ko);
  return -1;
}

/* keys: one key or a list of them; vals: for one key a buffer or a list of
 * buffers (devices, summed), for a list of keys a list as long of those. */
int fpy_kv_args_get(fpy_kv *self, const char *op, PyObject *keys, PyObject *vals, int writable, kv_args *a) {
  memset(a, 0, sizeof *a);
  PyObject *kl = is_seq(keys) ? PySequence_Fast(keys, "keys") : PyTuple_Pack(1, keys);
  PyObject *vl = kl ? (is_seq(keys) ? PySequence_Fast(vals, "values") : PyTuple_Pack(1, vals)) : NULL;
  int rc = -1;
  if (!vl) {
    if (kl && PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      fpy_invalid("%s: keys is a list: the values must be a list as long", op);
    }
    goto out;
  }
  Py_ssize_t nk = PySequence_Fast_GET_SIZE(kl);
  if (PySequence_Fast_GET_SIZE(vl) != nk) {
    fpy_invalid("%s: %zd keys but %zd values", op, nk, PySequence_Fast_GET_SIZE(vl));
    goto out;
  }
  Py_ssize_t total = 0;
  for (Py_ssize_t i = 0; i < nk; i++) {
    PyObject *v = PySequence_Fast_GET_ITEM(vl, i);
    total += is_seq(v) ? PySequence_Size(v) : 1;
  }
  if (total > 0x7fffffff) {
    fpy_invalid("%s: too many values", op);
    goto out;
  }
  a->keys = PyMem_Calloc((size_t)total + 1, sizeof *a->keys);
  a->bufs = PyMem_Calloc((size_t)total + 1, sizeof *a->bufs);
  a->ptrs = PyMem_Calloc((size_t)total + 1, sizeof *a->ptrs);
  if (!a->keys || !a->bufs || !a->ptrs) {
    PyErr_NoMemory();
    goto out;
  }
  for (Py_ssize_t i = 0; i < nk; i++) {
    int64_t key;
    if (fpy_kv_key_of(self, PySequence_Fast_GET_ITEM(kl, i), &key) < 0) goto out;
    PyObject *v = PySequence_Fast_GET_ITEM(vl, i);
    Py_ssize_t nv = is_seq(v) ? PySequence_Size(v) : 1;
    if (nv == 0) {
      PyObject *ko = fpy_kv_key_obj(self, key);
      if (ko) fpy_invalid("%s: key %R: an empty list of values", op, ko);
      Py_XDECREF(ko);
      goto out;
    }
    for (Py_ssize_t j = 0; j < nv; j++) {
      PyObject *item = is_seq(v) ? PySequence_GetItem(v, j) : (Py_INCREF(v), v);
      if (!item) goto out;
      int r = fpy_buf_get(item, writable, op, &a->bufs[a->n]);
      Py_DECREF(item);
      if (r < 0) goto out;
      a->keys[a->n] = key;
      a->ptrs[a->n] = a->bufs[a->n].ptr;
      a->n++;
      if (check_buf(self, op, key, &a->bufs[a->n - 1]) < 0) goto out;
    }
  }
  rc = 0;
out:
  Py_XDECREF(kl);
  Py_XDECREF(vl);
  if (rc < 0) fpy_kv_args_free(a, 1);
  return rc;
}

/* Keep a pull's outputs alive until the next wait (moved out of a). */
int fpy_kv_keep_outs(fpy_kv *self, kv_args *a) {
  if (a->n == 0) return 0; /* a push: nothing to keep */
  if (self->nouts + (size_t)a->n > self->capouts) {
    size_t cap = (self->nouts + (size_t)a->n) * 2 + 8;
    fpy_buf *o = PyMem_Realloc(self->outs, cap * sizeof *o);
    if (!o) return PyErr_NoMemory(), -1;
    self->outs = o;
    self->capouts = cap;
  }
  memcpy(self->outs + self->nouts, a->bufs, (size_t)a->n * sizeof *a->bufs);
  self->nouts += (size_t)a->n;
  a->n = 0; /* moved */
  return 0;
}
