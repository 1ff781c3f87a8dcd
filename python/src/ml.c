/* ml.c — _fold.kmeans and _fold.logreg: fold's KMeans and logistic regression on the iterative queue (fold_ml.h). */
#include "fold_py.h"

#include <fold_ml.h>

/* A float64 / int32 buffer of exactly `want` elements. */
static int get_exact(PyObject *o, int writable, const char *what, fold_dtype dt, size_t want, fpy_buf *b) {
  if (fpy_buf_get(o, writable, what, b) < 0) return -1;
  if (b->dtype != dt || b->count != want) {
    fpy_invalid("%s: holds %zu %s, wanted %zu %s", what, b->count, fold_dtype_name(b->dtype), want,
                fold_dtype_name(dt));
    fpy_buf_release(b);
    return -1;
  }
  return 0;
}

static PyObject *mod_kmeans(PyObject *m, PyObject *args, PyObject *kw) {
  static char *kl[] = {"comm", "x", "n_local", "dim", "centroids", "labels", "k", "max_iter", "tol", "init", "seed",
                       NULL};
  PyObject *commo, *xo, *co, *lo = Py_None, *inito = Py_None;
  Py_ssize_t n_local, dim;
  fold_kmeans_params p;
  fold_kmeans_params_default(&p);
  unsigned long long seed = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!OnnOOi|idOK:kmeans", kl, &fpy_comm_type, &commo, &xo, &n_local,
                                   &dim, &co, &lo, &p.k, &p.max_iter, &p.tol, &inito, &seed))
    return NULL;
  fold_comm *c = fpy_comm_use((fpy_comm *)commo);
  if (!c) return NULL;
  if (n_local < 0 || dim < 1 || p.k < 1) return fpy_invalid("kmeans: rank %d: bad shape or k", fold_comm_rank(c));
  p.seed = seed;
  fpy_buf x, cen, lab, ini;
  int hl = lo != Py_None, hi = inito != Py_None;
  if (get_exact(xo, 0, "kmeans: x", FOLD_FLOAT64, (size_t)n_local * (size_t)dim, &x) < 0) return NULL;
  if (get_exact(co, 1, "kmeans: centroids", FOLD_FLOAT64, (size_t)p.k * (size_t)dim, &cen) < 0) goto e1;
  if (hl && get_exact(lo, 1, "kmeans: labels", FOLD_INT32, (size_t)n_local, &lab) < 0) goto e2;
  if (hi && get_exact(inito, 0, "kmeans: init", FOLD_FLOAT64, (size_t)p.k * (size_t)dim, &ini) < 0) goto e3;
  p.init = hi ? ini.ptr : NULL;
  double inertia = 0;
  int n_iter = 0, rc;
  fpy_guard g;
  fpy_guard_begin(&g, ((fpy_comm *)commo)->simulated ? NULL : c);
  *((fpy_comm *)commo)->busy = 1;
  Py_BEGIN_ALLOW_THREADS
  rc = fold_kmeans(c, x.ptr, (size_t)n_local, (size_t)dim, &p, cen.ptr, hl ? lab.ptr : NULL, &inertia, &n_iter);
  Py_END_ALLOW_THREADS
  *((fpy_comm *)commo)->busy = 0;
  fpy_guard_end(&g);
  if (hi) fpy_buf_release(&ini);
  if (hl) fpy_buf_release(&lab);
  fpy_buf_release(&cen);
  fpy_buf_release(&x);
  if (PyErr_CheckSignals() < 0) return NULL;
  if (rc) return fpy_raise(rc, fold_comm_last_error(c));
  return Py_BuildValue("(di)", inertia, n_iter);
e3:
  if (hl) fpy_buf_release(&lab);
e2:
  fpy_buf_release(&cen);
e1:
  fpy_buf_release(&x);
  return NULL;
}

static PyObject *mod_logreg(PyObject *m, PyObject *args, PyObject *kw) {
  static char *kl[] = {"comm", "x", "y", "n_local", "dim", "coef", "C", "fit_intercept", "max_iter", "gtol",
                       "history", NULL};
  PyObject *commo, *xo, *yo, *co;
  Py_ssize_t n_local, dim;
  fold_logreg_params p;
  fold_logreg_params_default(&p);
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!OOnnO|dpidi:logreg", kl, &fpy_comm_type, &commo, &xo, &yo, &n_local,
                                   &dim, &co, &p.C, &p.fit_intercept, &p.max_iter, &p.gtol, &p.history))
    return NULL;
  fold_comm *c = fpy_comm_use((fpy_comm *)commo);
  if (!c) return NULL;
  if (n_local < 0 || dim < 1) return fpy_invalid("logreg: rank %d: bad shape", fold_comm_rank(c));
  fpy_buf x, y, coef;
  if (get_exact(xo, 0, "logreg: x", FOLD_FLOAT64, (size_t)n_local * (size_t)dim, &x) < 0) return NULL;
  if (get_exact(yo, 0, "logreg: y", FOLD_INT32, (size_t)n_local, &y) < 0) {
    fpy_buf_release(&x);
    return NULL;
  }
  if (get_exact(co, 1, "logreg: coef", FOLD_FLOAT64, (size_t)dim, &coef) < 0) {
    fpy_buf_release(&y);
    fpy_buf_release(&x);
    return NULL;
  }
  double icpt = 0;
  int n_iter = 0, rc;
  fpy_guard g;
  fpy_guard_begin(&g, ((fpy_comm *)commo)->simulated ? NULL : c);
  *((fpy_comm *)commo)->busy = 1;
  Py_BEGIN_ALLOW_THREADS
  rc = fold_logreg(c, x.ptr, y.ptr, (size_t)n_local, (size_t)dim, &p, coef.ptr, &icpt, &n_iter);
  Py_END_ALLOW_THREADS
  *((fpy_comm *)commo)->busy = 0;
  fpy_guard_end(&g);
  fpy_buf_release(&coef);
  fpy_buf_release(&y);
  fpy_buf_release(&x);
  if (PyErr_CheckSignals() < 0) return NULL;
  if (rc) return fpy_raise(rc, fold_comm_last_error(c));
  return Py_BuildValue("(di)", icpt, n_iter);
}

static PyMethodDef ml_functions[] = {
    {"kmeans", (PyCFunction)(void (*)(void))mod_kmeans, METH_VARARGS | METH_KEYWORDS,
     "kmeans(comm, x, n_local, dim, centroids, labels, k, max_iter=300, tol=0, init=None, seed=0) -> (inertia, "
     "n_iter): fold_kmeans; fold.KMeans wraps it."},
    {"logreg", (PyCFunction)(void (*)(void))mod_logreg, METH_VARARGS | METH_KEYWORDS,
     "logreg(comm, x, y, n_local, dim, coef, C=1, fit_intercept=True, max_iter=10000, gtol=1e-8, history=10) -> "
     "(intercept, n_iter): fold_logreg; fold.LogisticRegression wraps it."},
    {NULL},
};

int fpy_ml_init(PyObject *m) { return PyModule_AddFunctions(m, ml_functions); }
