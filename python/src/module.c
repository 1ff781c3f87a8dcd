/* module.c — the fold._fold extension module: init, constants, the types. */
#include "fold_py.h"

static PyObject *mod_init(PyObject *m, PyObject *unused) {
  fold_comm *c = NULL;
  int rc;
  /* fold_init blocks until every rank joined */
  Py_BEGIN_ALLOW_THREADS
  rc = fold_init(&c);
  Py_END_ALLOW_THREADS
  if (rc) return fpy_raise(rc, fold_comm_last_error(NULL));
  return fpy_comm_new(c, NULL, 0);
}

static PyObject *mod_version(PyObject *m, PyObject *unused) { return PyUnicode_FromString(fold_version()); }

static PyMethodDef mod_methods[] = {
    {"init", mod_init, METH_NOARGS,
     "init() -> Comm: the world communicator from the environment (foldrun, torchrun, mpirun, srun, or a world "
     "of one when started by hand), as fold_init. Blocks until every rank joined."},
    {"library_version", mod_version, METH_NOARGS, "the version of libfold that runs"},
    {NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "fold._fold", "fold's CPython extension", -1,
                                    mod_methods};

PyMODINIT_FUNC PyInit__fold(void) {
  PyObject *m = PyModule_Create(&moddef);
  if (!m) return NULL;
  if (fpy_errors_init(m) < 0 || fpy_comm_init_type(m) < 0 || fpy_request_init_types(m) < 0 || fpy_sim_init_type(m) < 0 ||
      fpy_areduce_init_type(m) < 0 || fpy_ml_init(m) < 0 || fpy_iterq_init_type(m) < 0 || fpy_kv_init_type(m) < 0 ||
      PyModule_AddIntConstant(m, "ANY_SOURCE", FOLD_ANY_SOURCE) < 0 ||
      PyModule_AddIntConstant(m, "ANY_TAG", FOLD_ANY_TAG) < 0 ||
      PyModule_AddIntConstant(m, "UNDEFINED", FOLD_UNDEFINED) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
