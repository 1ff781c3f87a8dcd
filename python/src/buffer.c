/* buffer.c — Python objects (buffer protocol, torch CPU tensors) as contiguous fold buffers, zero-copy. */
#include "fold_py.h"

#include <string.h>

/* One field code of a struct format ("f", "<i", "=q"): 'f' float32, 'd'
 * float64, '4' a 4-byte integer, '8' an 8-byte one, 0 otherwise. */
static char field_kind(const char *t, size_t len) {
  if (len == 2 && (t[0] == '<' || t[0] == '=' || t[0] == '@')) t++, len--;
  if (len != 1) return 0;
  switch (*t) {
  case 'f': return 'f';
  case 'd': return 'd';
  case 'i': return '4';
  case 'l': case 'q': return '8';
  default: return 0;
  }
}

/* A numpy structured element of two fields (value, index): fold's pair
 * types for minloc/maxloc ("T{f:value:i:index:}"), by field types and the
 * element's size (padding is implied by it). -1 for any other struct. */
static int dtype_from_struct(const char *fmt, Py_ssize_t itemsize) {
  char kinds[3] = {0};
  int nf = 0, field = 1; /* tokens alternate: type, name, type, name */
  const char *p = fmt + 2;
  while (*p && *p != '}') {
    const char *e = strchr(p, ':');
    if (!e) return -1;
    if (field) {
      if (nf == 2 || !(kinds[nf++] = field_kind(p, (size_t)(e - p)))) return -1;
    }
    field = !field;
    p = e + 1;
  }
  if (nf != 2 || strcmp(p, "}") != 0) return -1;
  if (kinds[0] == 'f' && kinds[1] == '4' && itemsize == 8) return FOLD_FLOAT32_INT32;
  if (kinds[0] == 'd' && kinds[1] == '4' && itemsize == 16) return FOLD_FLOAT64_INT32;
  if (kinds[0] == '4' && kinds[1] == '4' && itemsize == 8) return FOLD_INT32_INT32;
  if (kinds[0] == '8' && kinds[1] == '8' && itemsize == 16) return FOLD_INT64_INT64;
  return -1;
}

/* The fold dtype of a struct-module format character with its item size;
 * -1 if fold has no such type (int16, complex, other structs, ...). */
static int dtype_from_format(const char *fmt, Py_ssize_t itemsize) {
  if (!fmt) return FOLD_UINT8; /* no format: plain bytes */
  if (fmt[0] == 'T' && fmt[1] == '{') return dtype_from_struct(fmt, itemsize);
  /* '@' and '=' are native order; '<' is native on the little-endian hosts
   * fold runs on; '>' and '!' would need byte swapping: refused unless one byte */
  if (*fmt == '@' || *fmt == '=' || *fmt == '<') fmt++;
  else if ((*fmt == '>' || *fmt == '!') && itemsize == 1) fmt++;
  if (!fmt[0] || fmt[1]) return -1;
  switch (fmt[0]) {
  case 'b': return FOLD_INT8;
  case 'B': case 'c': case '?': return FOLD_UINT8;
  case 'i': case 'l': case 'q': case 'n':
    return itemsize == 4 ? FOLD_INT32 : itemsize == 8 ? FOLD_INT64 : -1;
  case 'I': case 'L': case 'Q': case 'N':
    return itemsize == 4 ? FOLD_UINT32 : itemsize == 8 ? FOLD_UINT64 : -1;
  case 'e': return itemsize == 2 ? FOLD_FLOAT16 : -1;
  case 'f': return itemsize == 4 ? FOLD_FLOAT32 : -1;
  case 'd': return itemsize == 8 ? FOLD_FLOAT64 : -1;
  default: return -1;
  }
}

static const struct { const char *name; fold_dtype dt; } torch_dtypes[] = {
    {"torch.float32", FOLD_FLOAT32}, {"torch.float64", FOLD_FLOAT64}, {"torch.float16", FOLD_FLOAT16},
    {"torch.bfloat16", FOLD_BFLOAT16}, {"torch.int32", FOLD_INT32}, {"torch.int64", FOLD_INT64},
    {"torch.int8", FOLD_INT8}, {"torch.uint8", FOLD_UINT8}, {"torch.bool", FOLD_UINT8},
};

/* torch.Tensor if torch is imported already (never imported here: numpy
 * users do not pay for it), cached once seen. Borrowed; NULL if none. */
static PyObject *torch_tensor_type(void) {
  static PyObject *cls;
  if (cls) return cls;
  PyObject *name = PyUnicode_FromString("torch");
  if (!name) return NULL;
  PyObject *torch = PyImport_GetModule(name);
  Py_DECREF(name);
  if (!torch) {
    PyErr_Clear();
    return NULL;
  }
  cls = PyObject_GetAttrString(torch, "Tensor"); /* kept for the process' life */
  Py_DECREF(torch);
  if (!cls) PyErr_Clear();
  return cls;
}

/* A torch CPU tensor, read through its attributes (bfloat16 has no numpy view). */
static int tensor_get(PyObject *t, const char *what, fpy_buf *b) {
  PyObject *dev = NULL, *devtype = NULL, *dt = NULL, *dts = NULL, *r = NULL;
  int ret = -1;
  if (!(dev = PyObject_GetAttrString(t, "device")) || !(devtype = PyObject_GetAttrString(dev, "type"))) goto out;
  if (!PyUnicode_Check(devtype) || strcmp(PyUnicode_AsUTF8(devtype), "cpu") != 0) {
    fpy_invalid("%s: a tensor on device '%U' (fold moves CPU tensors only)", what, devtype);
    goto out;
  }
  if (!(dt = PyObject_GetAttrString(t, "dtype")) || !(dts = PyObject_Str(dt))) goto out;
  const char *dname = PyUnicode_AsUTF8(dts);
  int found = -1;
  for (size_t i = 0; i < sizeof torch_dtypes / sizeof torch_dtypes[0]; i++)
    if (strcmp(dname, torch_dtypes[i].name) == 0) found = (int)torch_dtypes[i].dt;
  if (found < 0) {
    fpy_invalid("%s: tensor dtype %s is not one fold reduces (float16/bfloat16/32/64, int8/32/64, uint8, bool)",
                what, dname);
    goto out;
  }
  if (!(r = PyObject_CallMethod(t, "is_contiguous", NULL))) goto out;
  int contig = PyObject_IsTrue(r);
  Py_CLEAR(r);
  if (contig < 0) goto out;
  if (!contig) {
    fpy_invalid("%s: the tensor is not contiguous (call .contiguous() first: fold never copies behind your back)",
                what);
    goto out;
  }
  if (!(r = PyObject_CallMethod(t, "numel", NULL))) goto out;
  size_t numel = PyLong_AsSize_t(r);
  Py_CLEAR(r);
  if (numel == (size_t)-1 && PyErr_Occurred()) goto out;
  if (!(r = PyObject_CallMethod(t, "data_ptr", NULL))) goto out;
  void *p = PyLong_AsVoidPtr(r);
  Py_CLEAR(r);
  if (!p && PyErr_Occurred()) goto out;
  b->obj = t;
  Py_INCREF(t);
  b->has_view = 0;
  b->ptr = p;
  b->dtype = (fold_dtype)found;
  b->count = numel;
  b->nbytes = numel * fold_dtype_size(b->dtype);
  ret = 0;
out:
  Py_XDECREF(dev);
  Py_XDECREF(devtype);
  Py_XDECREF(dt);
  Py_XDECREF(dts);
  return ret;
}

int fpy_buf_get(PyObject *obj, int writable, const char *what, fpy_buf *b) {
  memset(b, 0, sizeof *b);
  if (obj == NULL || obj == Py_None) {
    fpy_invalid("%s: a buffer is needed here, got None", what);
    return -1;
  }
  if (PyObject_CheckBuffer(obj)) {
    /* ask for strides so that a non-contiguous view is seen (and refused
     * with our message) instead of failing inside the exporter */
    int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &b->view, flags) < 0) {
      if (writable && PyObject_GetBuffer(obj, &b->view, PyBUF_STRIDES | PyBUF_FORMAT) == 0) {
        PyBuffer_Release(&b->view);
        PyErr_Clear();
        fpy_invalid("%s: the buffer is read-only, and this call writes into it (pass out= or a writable array)",
                    what);
        return -1;
      }
      PyObject *type, *value, *tb;
      PyErr_Fetch(&type, &value, &tb);
      fpy_invalid("%s: cannot read the buffer of a %s object (%S)", what, Py_TYPE(obj)->tp_name,
                  value ? value : Py_None);
      Py_XDECREF(type);
      Py_XDECREF(value);
      Py_XDECREF(tb);
      return -1;
    }
    b->has_view = 1;
    if (!PyBuffer_IsContiguous(&b->view, 'C')) {
      fpy_invalid("%s: the array is not contiguous (strides of a slice or a transpose): pass a contiguous copy, "
                  "e.g. numpy.ascontiguousarray(x)", what);
      fpy_buf_release(b);
      return -1;
    }
    int dt = dtype_from_format(b->view.format, b->view.itemsize);
    if (dt < 0) {
      fpy_invalid("%s: element format '%s' (%zd bytes) is not a type fold knows (float16/32/64, int8/32/64, "
                  "uint8/32/64, or a (value, index) pair for minloc/maxloc: (float32, int32), (float64, int32) "
                  "aligned, (int32, int32), (int64, int64))", what, b->view.format ? b->view.format : "B",
                  b->view.itemsize);
      fpy_buf_release(b);
      return -1;
    }
    b->obj = obj;
    Py_INCREF(obj);
    b->ptr = b->view.buf;
    b->dtype = (fold_dtype)dt;
    b->nbytes = (size_t)b->view.len;
    b->count = b->nbytes / fold_dtype_size(b->dtype);
    return 0;
  }
  PyObject *tt = torch_tensor_type();
  if (tt) {
    int is = PyObject_IsInstance(obj, tt);
    if (is < 0) return -1;
    if (is) return tensor_get(obj, what, b);
  }
  fpy_invalid("%s: a %s is not a buffer (use a numpy array, bytearray, memoryview or torch CPU tensor)", what,
              Py_TYPE(obj)->tp_name);
  return -1;
}

void fpy_buf_release(fpy_buf *b) {
  if (b->has_view) PyBuffer_Release(&b->view);
  b->has_view = 0;
  Py_CLEAR(b->obj);
}
