/* op.c — the builtin reduction kernels, user-op dispatch and op/dtype validation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op/op.h"

/* Kernels (FOLD__KERNEL, op.h: AVX2 and baseline clones) are written so
 * that the compiler vectorises them (restrict pointers, no branches in the
 * body); CMake builds this file -O3. */
#define KERNEL FOLD__KERNEL

/* Signed sums and products wrap like the unsigned ones (two's complement)
 * instead of being undefined on overflow: compute them in the unsigned type. */
#define DEF_INT_KERNELS(name, T, U)                                                                     \
  KERNEL static void name##_sum(T *restrict o, const T *a, const T *b, size_t n) {                     \
    for (size_t i = 0; i < n; i++) o[i] = (T)((U)a[i] + (U)b[i]);                                      \
  }                                                                                                     \
  KERNEL static void name##_prod(T *restrict o, const T *a, const T *b, size_t n) {                    \
    for (size_t i = 0; i < n; i++) o[i] = (T)((U)a[i] * (U)b[i]);                                      \
  }                                                                                                     \
  KERNEL static void name##_min(T *restrict o, const T *a, const T *b, size_t n) {                     \
    for (size_t i = 0; i < n; i++) o[i] = a[i] < b[i] ? a[i] : b[i];                                   \
  }                                                                                                     \
  KERNEL static void name##_max(T *restrict o, const T *a, const T *b, size_t n) {                     \
    for (size_t i = 0; i < n; i++) o[i] = a[i] > b[i] ? a[i] : b[i];                                   \
  }                                                                                                     \
  KERNEL static void name##_band(T *restrict o, const T *a, const T *b, size_t n) {                    \
    for (size_t i = 0; i < n; i++) o[i] = a[i] & b[i];                                                 \
  }                                                                                                     \
  KERNEL static void name##_bor(T *restrict o, const T *a, const T *b, size_t n) {                     \
    for (size_t i = 0; i < n; i++) o[i] = a[i] | b[i];                                                 \
  }                                                                                                     \
  KERNEL static void name##_bxor(T *restrict o, const T *a, const T *b, size_t n) {                    \
    for (size_t i = 0; i < n; i++) o[i] = a[i] ^ b[i];                                                 \
  }

#define DEF_FLOAT_KERNELS(name, T)                                                                      \
  KERNEL static void name##_sum(T *restrict o, const T *a, const T *b, size_t n) {                     \
    for (size_t i = 0; i < n; i++) o[i] = a[i] + b[i];                                                 \
  }                                                                                                     \
  KERNEL static void name##_prod(T *restrict o, const T *a, const T *b, size_t n) {                    \
    for (size_t i = 0; i < n; i++) o[i] = a[i] * b[i];                                                 \
  }                                                                                                     \
  KERNEL static void name##_min(T *restrict o, const T *a, const T *b, size_t n) {                     \
    for (size_t i = 0; i < n; i++) o[i] = a[i] < b[i] ? a[i] : b[i];                                   \
  }                                                                                                     \
  KERNEL static void name##_max(T *restrict o, const T *a, const T *b, size_t n) {                     \
    for (size_t i = 0; i < n; i++) o[i] = a[i] > b[i] ? a[i] : b[i];                                   \
  }

DEF_INT_KERNELS(i8, int8_t, uint8_t)
DEF_INT_KERNELS(u8, uint8_t, uint8_t)
DEF_INT_KERNELS(i32, int32_t, uint32_t)
DEF_INT_KERNELS(u32, uint32_t, uint32_t)
DEF_INT_KERNELS(i64, int64_t, uint64_t)
DEF_INT_KERNELS(u64, uint64_t, uint64_t)
DEF_FLOAT_KERNELS(f32, float)
DEF_FLOAT_KERNELS(f64, double)

/* MINLOC / MAXLOC over (value, index) pairs: the pair with the smaller
 * (larger) value; of equal values the lower index (MPI's rule), so the
 * result does not depend on the order of combination. Pairs are copied as
 * bytes, padding included. No restrict: o may alias a or b, and a pair is
 * read whole before it is written. */
#define DEF_LOC_KERNELS(name, T)                                                                        \
  static void name##_minloc(T *o, const T *a, const T *b, size_t n) {                                   \
    for (size_t i = 0; i < n; i++) {                                                                    \
      T x, y;                                                                                           \
      memcpy(&x, &a[i], sizeof x);                                                                      \
      memcpy(&y, &b[i], sizeof y);                                                                      \
      int take_a = x.value < y.value || (!(y.value < x.value) && x.index <= y.index);                   \
      memcpy(&o[i], take_a ? &x : &y, sizeof x);                                                        \
    }                                                                                                   \
  }                                                                                                     \
  static void name##_maxloc(T *o, const T *a, const T *b, size_t n) {                                   \
    for (size_t i = 0; i < n; i++) {                                                                    \
      T x, y;                                                                                           \
      memcpy(&x, &a[i], sizeof x);                                                                      \
      memcpy(&y, &b[i], sizeof y);                                                                      \
      int take_a = x.value > y.value || (!(y.value > x.value) && x.index <= y.index);                   \
      memcpy(&o[i], take_a ? &x : &y, sizeof x);                                                        \
    }                                                                                                   \
  }

DEF_LOC_KERNELS(f32i32, fold_float32_int32)
DEF_LOC_KERNELS(f64i32, fold_float64_int32)
DEF_LOC_KERNELS(i32i32, fold_int32_int32)
DEF_LOC_KERNELS(i64i64, fold_int64_int64)

/* The restrict on `o` is only a promise when o aliases neither input; the
 * callers pass out == a or out == b. Element i of o depends on element i of
 * a and b only, so the vectorised loop stays correct under that aliasing
 * (loads of a block happen before its store). */

typedef void (*kernel_fn)(void *o, const void *a, const void *b, size_t n);

#define ROW_INT(name) {(kernel_fn)name##_sum, (kernel_fn)name##_prod, (kernel_fn)name##_min,          \
                       (kernel_fn)name##_max, (kernel_fn)name##_sum, (kernel_fn)name##_band,          \
                       (kernel_fn)name##_bor, (kernel_fn)name##_bxor, NULL, NULL}
#define ROW_FLT(name) {(kernel_fn)name##_sum, (kernel_fn)name##_prod, (kernel_fn)name##_min,          \
                       (kernel_fn)name##_max, (kernel_fn)name##_sum, NULL, NULL, NULL, NULL, NULL}
#define ROW_LOC(name) {[FOLD_MINLOC] = (kernel_fn)name##_minloc, [FOLD_MAXLOC] = (kernel_fn)name##_maxloc}

static const kernel_fn kernels[FOLD_DTYPE_COUNT][FOLD_OP_BUILTIN_COUNT] = {
  [FOLD_INT8] = ROW_INT(i8),   [FOLD_UINT8] = ROW_INT(u8),   [FOLD_INT32] = ROW_INT(i32),
  [FOLD_UINT32] = ROW_INT(u32), [FOLD_INT64] = ROW_INT(i64), [FOLD_UINT64] = ROW_INT(u64),
  [FOLD_FLOAT32] = ROW_FLT(f32), [FOLD_FLOAT64] = ROW_FLT(f64),
  [FOLD_FLOAT32_INT32] = ROW_LOC(f32i32), [FOLD_FLOAT64_INT32] = ROW_LOC(f64i32),
  [FOLD_INT32_INT32] = ROW_LOC(i32i32), [FOLD_INT64_INT64] = ROW_LOC(i64i64),
};

static const char *const builtin_names[] = {"sum", "prod",   "min",    "max",      "avg",      "band",
                                            "bor", "bxor",   "minloc", "maxloc",   "sum_exact"};
_Static_assert(sizeof builtin_names / sizeof *builtin_names == FOLD_OP_BUILTIN_COUNT, "a name per built-in op");

const char *fold__op_name(unsigned op, char *tmp, size_t cap) {
  if (op < FOLD_OP_BUILTIN_COUNT) return builtin_names[op];
  snprintf(tmp, cap, "user#%u", op - FOLD_OP_BUILTIN_COUNT);
  return tmp;
}

/* float16 / bfloat16: widen a block to float32, combine, round once. */
static void half_reduce(fold_op op, fold_dtype dt, uint16_t *o, const uint16_t *a, const uint16_t *b, size_t n) {
  enum { BLOCK = 256 };
  float fa[BLOCK], fb[BLOCK];
  int bf = dt == FOLD_BFLOAT16;
  kernel_fn k = kernels[FOLD_FLOAT32][op];
  for (size_t base = 0; base < n; base += BLOCK) {
    size_t m = n - base < BLOCK ? n - base : BLOCK;
    for (size_t i = 0; i < m; i++) {
      fa[i] = bf ? fold__bf16_to_f32(a[base + i]) : fold__f16_to_f32(a[base + i]);
      fb[i] = bf ? fold__bf16_to_f32(b[base + i]) : fold__f16_to_f32(b[base + i]);
    }
    k(fa, fa, fb, m);
    for (size_t i = 0; i < m; i++)
      o[base + i] = bf ? fold__f32_to_bf16(fa[i]) : fold__f32_to_f16(fa[i]);
  }
}

/* t may be NULL: built-in ops need no table (the kernels serve
 * capabilities that reduce outside a collective); user ops live in one. */
static const fold__user_op *user_op(const fold__op_table *t, fold_op op) {
  int k = (int)op - FOLD_OP_BUILTIN_COUNT;
  return (t != NULL && k >= 0 && k < t->n) ? &t->ops[k] : NULL;
}

/* The scratch op_reduce3 needs for one record too large for its stack
 * buffer, made here (where an error can still be returned) and kept with
 * the communicator. */
#define STACK_TMP 4096

static int record_scratch(fold_comm *c, fold__op_table *t, const char *what, size_t es) {
  if (es <= STACK_TMP || t->tmp_cap >= es) return FOLD_OK;
  void *p = malloc(es);
  if (p == NULL)
    return fold__error(c, FOLD_ENOMEM, "%s: rank %d: out of memory for a %zu-byte record's scratch", what, c->rank, es);
  free(t->tmp);
  t->tmp = p;
  t->tmp_cap = es;
  return FOLD_OK;
}

/* The checks of fold__op_check past its fast path, es being dtype's size
 * (0: invalid); *user is op's user op entry or NULL. */
static int op_check_slow(fold_comm *c, fold__op_table *t, const char *what, fold_op op, fold_dtype dtype,
                         size_t es, const fold__user_op **user) {
  *user = NULL;
  if (es == 0)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: invalid dtype %d", what, c->rank, (int)dtype);
  if ((int)op >= FOLD_OP_BUILTIN_COUNT) {
    if ((*user = user_op(t, op)) == NULL)
      return fold__error(c, FOLD_EINVAL, "%s: rank %d: op %d is neither a builtin nor a user op of this communicator",
                         what, c->rank, (int)op);
    return record_scratch(c, t, what, es);
  }
  if ((int)op < 0)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: invalid op %d", what, c->rank, (int)op);
  const char *name = builtin_names[op], *dt = fold_dtype_name(dtype);
  if (fold__dtype_is_record(dtype))
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: built-in op %s on record type %s: records are combined only by "
                       "user ops (fold_op_create)", what, c->rank, name, dt);
  int loc = op == FOLD_MINLOC || op == FOLD_MAXLOC, pair = fold__dtype_is_pair(dtype);
  if (loc && !pair)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: op %s needs a (value, index) pair type (float32_int32, "
                       "float64_int32, int32_int32, int64_int64), not %s", what, c->rank, name, dt);
  if (pair && !loc)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: op %s on pair type %s: pair types take minloc, maxloc or a "
                       "user op", what, c->rank, name, dt);
  if (op == FOLD_SUM_EXACT && fold__exact_acc_size(dtype) == 0)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: op sum_exact needs float32 or float64, not %s", what, c->rank, dt);
  int is_float = dtype == FOLD_FLOAT16 || dtype == FOLD_BFLOAT16 || dtype == FOLD_FLOAT32 || dtype == FOLD_FLOAT64;
  if (is_float && (op == FOLD_BAND || op == FOLD_BOR || op == FOLD_BXOR))
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: bitwise op %s on floating-point type %s", what, c->rank, name, dt);
  return FOLD_OK;
}

int fold__op_check(fold_comm *c, fold__op_table *t, const char *what, fold_op op, fold_dtype dtype) {
  /* the common call first: an arithmetic built-in on one of the ten
   * numeric types, which every check accepts */
  if ((unsigned)dtype <= FOLD_FLOAT64 && (unsigned)op <= FOLD_AVG) return FOLD_OK;
  const fold__user_op *u;
  return op_check_slow(c, t, what, op, dtype, fold_dtype_size(dtype), &u);
}

int fold__op_facts(fold_comm *c, fold__op_table *t, const char *what, fold_op op, fold_dtype dtype, size_t esize,
                   int *commutative, size_t *wsize, const fold__user_op **user) {
  *commutative = 1;
  *wsize = esize;
  *user = NULL;
  if ((unsigned)dtype <= FOLD_FLOAT64 && (unsigned)op <= FOLD_AVG) return FOLD_OK; /* fold__op_check's fast path */
  int rc = op_check_slow(c, t, what, op, dtype, esize, user);
  if (rc != FOLD_OK) return rc;
  if (*user) *commutative = (*user)->commutative;
  if (op == FOLD_SUM_EXACT) *wsize = fold__exact_acc_size(dtype);
  return FOLD_OK;
}

int fold__op_commutative(const fold__op_table *t, fold_op op) {
  const fold__user_op *u = user_op(t, op);
  return u ? u->commutative : 1;
}

void fold__op_reduce3(const fold__op_table *t, fold_op op, fold_dtype dt, void *out, const void *a, const void *b,
                      size_t count) {
  if (count == 0) return;
  const fold__user_op *u = user_op(t, op);
  if (u) {
    size_t bytes = count * fold_dtype_size(dt);
    if (out == b) {
      u->fn(out, a, count, dt, u->ctx);
    } else if (out != a) {
      memmove(out, b, bytes);
      u->fn(out, a, count, dt, u->ctx);
    } else {
      /* out aliases a: the user function needs `in` intact while it writes.
       * User ops are element-wise (MPI's rule), so go through a stack buffer
       * a chunk at a time instead of allocating. */
      size_t es = fold_dtype_size(dt);
      _Alignas(16) unsigned char stack_tmp[STACK_TMP];
      /* a record larger than the stack buffer goes one at a time through
       * the scratch fold__op_check made for it */
      unsigned char *tmp = es <= sizeof stack_tmp ? stack_tmp : t->tmp;
      size_t chunk = es <= sizeof stack_tmp ? sizeof stack_tmp / es : 1;
      for (size_t i = 0; i < count; i += chunk) {
        size_t m = count - i < chunk ? count - i : chunk;
        memcpy(tmp, (const char *)a + i * es, m * es);
        memmove((char *)out + i * es, (const char *)b + i * es, m * es);
        u->fn((char *)out + i * es, tmp, m, dt, u->ctx);
      }
    }
    return;
  }
  if (op == FOLD_SUM_EXACT) {
    fold__exact_add(dt, out, a, b, count);
    return;
  }
  if (dt == FOLD_FLOAT16 || dt == FOLD_BFLOAT16) {
    half_reduce(op, dt, out, a, b, count);
    return;
  }
  kernels[dt][op](out, a, b, count);
}

/* Divide in 64 bits: the rank count need not fit the element type
 * (uint8 with 256 ranks would divide by zero, int8 with 200 by a negative). */
#define DIV_LOOP(T, W)                                                                                  \
  do {                                                                                                  \
    T *p = buf;                                                                                         \
    for (size_t i = 0; i < count; i++) p[i] = (T)((W)p[i] / (W)n);                                    \
  } while (0)

void fold__op_finish(fold_op op, fold_dtype dt, void *buf, size_t count, int n) {
  if (op != FOLD_AVG || n == 1) return;
  switch (dt) {
  case FOLD_INT8: DIV_LOOP(int8_t, int64_t); break;
  case FOLD_UINT8: DIV_LOOP(uint8_t, uint64_t); break;
  case FOLD_INT32: DIV_LOOP(int32_t, int64_t); break;
  case FOLD_UINT32: DIV_LOOP(uint32_t, uint64_t); break;
  case FOLD_INT64: DIV_LOOP(int64_t, int64_t); break;
  case FOLD_UINT64: DIV_LOOP(uint64_t, uint64_t); break;
  case FOLD_FLOAT32: DIV_LOOP(float, float); break;
  case FOLD_FLOAT64: DIV_LOOP(double, double); break;
  case FOLD_FLOAT16:
  case FOLD_BFLOAT16: {
    uint16_t *p = buf;
    int bf = dt == FOLD_BFLOAT16;
    for (size_t i = 0; i < count; i++) {
      float v = (bf ? fold__bf16_to_f32(p[i]) : fold__f16_to_f32(p[i])) / (float)n;
      p[i] = bf ? fold__f32_to_bf16(v) : fold__f32_to_f16(v);
    }
    break;
  }
  default: break;
  }
}
