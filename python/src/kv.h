/* kv.h — fold.KVStore's object and the argument flattening its calls share (kv.c, kv_args.c). */
#ifndef FOLD_PY_KV_H
#define FOLD_PY_KV_H

#include "fold_py.h"

typedef struct {
  PyObject_HEAD
  fold_kv *kv;
  fpy_comm *comm;     /* kept alive (NULL: a local store made without one) */
  int role;
  int dist;           /* a distributed store (comm is set): its calls may block */
  int busy;           /* a thread is inside a call with the GIL released */
  int in_updater;     /* the Python updater is running ... */
  unsigned long updater_thread; /* ... on this thread (PyThread_get_thread_ident) */
  PyObject *meta;     /* dict: key -> (count, dtype), what init recorded: push and pull
                         check their buffers against it (fold_kv_push trusts the sizes it is given) */
  PyObject *names;    /* dict: key -> the string it came from, for messages and the updater */
  PyObject *updater;  /* the Python updater (NULL: none) */
  PyObject *pending;  /* the first exception the updater raised, for the next call to raise */
  PyObject *frombuffer; /* numpy.frombuffer, once an updater is set */
  fpy_buf *outs;      /* pulls' outputs, kept alive until wait/barrier/destroy */
  size_t nouts, capouts;
} fpy_kv;

/* keys and values flattened to one (key, buffer) per value */
typedef struct {
  Py_ssize_t n;
  int64_t *keys;
  fpy_buf *bufs;
  const void **ptrs;
} kv_args;

/* fold's message for rc as a Python exception (NULL) */
PyObject *fpy_kv_raise_rc(fpy_kv *self, int rc);
/* An int key, or a str through fold_kv_key (remembered for messages); -1 with an exception */
int fpy_kv_key_of(fpy_kv *self, PyObject *o, int64_t *key);
/* The object a key came from (its str if it was made from one), new reference */
PyObject *fpy_kv_key_obj(fpy_kv *self, int64_t key);
/* Flatten keys and values (one value, or a list per key) for op into a; -1 with an exception */
int fpy_kv_args_get(fpy_kv *self, const char *op, PyObject *keys, PyObject *vals, int writable, kv_args *a);
/* Free a (and release its buffers if release) */
void fpy_kv_args_free(kv_args *a, int release);
/* Keep a pull's output buffers alive until wait/barrier/destroy; -1 with an exception */
int fpy_kv_keep_outs(fpy_kv *self, kv_args *a);

#endif
