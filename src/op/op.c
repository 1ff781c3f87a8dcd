/* op.c — the builtin reduction kernels, user-op dispatch and op/dtype validation. */
#include <stdlib.h>
#include <string.h>

#include "op/op.h"

/* Kernels are compiled twice (AVX2 and baseline x86-64) and the loader picks
 * one by CPU at run time (GCC target_clones + ifunc): portable builds, fast
 * machines used fully. Loops are written so that the compiler vectorises them
 * (restrict pointers, no branches in the body); CMake builds this file -O3. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define KERNEL __attribute__((target_clones("avx2", "default")))
#else
#define KERNEL
#endif

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

/* The restrict on `o` is only a promise when o aliases neither input; the
 * callers pass out == a or out == b. Element i of o depends on element i of
 * a and b only, so the vectorised loop stays correct under that aliasing
 * (loads of a block happen before its store). */

typedef void (*kernel_fn)(void *o, const void *a, const void *b, size_t n);

#define ROW_INT(name) {(kernel_fn)name##_sum, (kernel_fn)name##_prod, (kernel_fn)name##_min,          \
                       (kernel_fn)name##_max, (kernel_fn)name##_sum, (kernel_fn)name##_band,          \
                       (kernel_fn)name##_bor, (kernel_fn)name##_bxor}
#define ROW_FLT(name) {(kernel_fn)name##_sum, (kernel_fn)name##_prod, (kernel_fn)name##_min,          \
                       (kernel_fn)name##_max, (kernel_fn)name##_sum, NULL, NULL, NULL}

static const kernel_fn kernels[FOLD_DTYPE_COUNT][FOLD_OP_BUILTIN_COUNT] = {
  [FOLD_INT8] = ROW_INT(i8),   [FOLD_UINT8] = ROW_INT(u8),   [FOLD_INT32] = ROW_INT(i32),
  [FOLD_UINT32] = ROW_INT(u32), [FOLD_INT64] = ROW_INT(i64), [FOLD_UINT64] = ROW_INT(u64),
  [FOLD_FLOAT32] = ROW_FLT(f32), [FOLD_FLOAT64] = ROW_FLT(f64),
};

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

static const fold__user_op *user_op(const fold_comm *c, fold_op op) {
  int k = (int)op - FOLD_OP_BUILTIN_COUNT;
  return (k >= 0 && k < c->nuser_ops) ? &c->user_ops[k] : NULL;
}

int fold__op_check(fold_comm *c, const char *what, fold_op op, fold_dtype dtype) {
  if (fold_dtype_size(dtype) == 0)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: invalid dtype %d", what, c->rank, (int)dtype);
  if ((int)op >= FOLD_OP_BUILTIN_COUNT) {
    if (user_op(c, op) == NULL)
      return fold__error(c, FOLD_EINVAL, "%s: rank %d: op %d is neither a builtin nor a user op of this communicator",
                         what, c->rank, (int)op);
    return FOLD_OK;
  }
  if ((int)op < 0)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: invalid op %d", what, c->rank, (int)op);
  int is_float = dtype == FOLD_FLOAT16 || dtype == FOLD_BFLOAT16 || dtype == FOLD_FLOAT32 || dtype == FOLD_FLOAT64;
  if (is_float && (op == FOLD_BAND || op == FOLD_BOR || op == FOLD_BXOR))
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: bitwise op %s on floating-point type %s", what, c->rank,
                       op == FOLD_BAND ? "band" : op == FOLD_BOR ? "bor" : "bxor", fold_dtype_name(dtype));
  return FOLD_OK;
}

int fold__op_commutative(const fold_comm *c, fold_op op) {
  const fold__user_op *u = user_op(c, op);
  return u ? u->commutative : 1;
}

void fold__op_reduce3(const fold_comm *c, fold_op op, fold_dtype dt, void *out, const void *a, const void *b,
                      size_t count) {
  if (count == 0) return;
  const fold__user_op *u = user_op(c, op);
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
      _Alignas(16) unsigned char tmp[4096];
      size_t chunk = sizeof tmp / es;
      for (size_t i = 0; i < count; i += chunk) {
        size_t m = count - i < chunk ? count - i : chunk;
        memcpy(tmp, (const char *)a + i * es, m * es);
        memmove((char *)out + i * es, (const char *)b + i * es, m * es);
        u->fn((char *)out + i * es, tmp, m, dt, u->ctx);
      }
    }
    return;
  }
  if (dt == FOLD_FLOAT16 || dt == FOLD_BFLOAT16) {
    half_reduce(op, dt, out, a, b, count);
    return;
  }
  kernels[dt][op](out, a, b, count);
}

void fold__op_reduce(const fold_comm *c, fold_op op, fold_dtype dt, void *inout, const void *in, size_t count) {
  fold__op_reduce3(c, op, dt, inout, in, inout, count);
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

int fold_op_create(fold_op *op, void (*fn)(void *, const void *, size_t, fold_dtype, void *), void *ctx,
                   int commutative, fold_comm *comm) {
  if (comm == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_op_create: communicator is NULL");
  if (op == NULL || fn == NULL)
    return fold__error(comm, FOLD_EINVAL, "fold_op_create: rank %d: %s is NULL", comm->rank, op ? "fn" : "op");
  fold__user_op *ops = realloc(comm->user_ops, (size_t)(comm->nuser_ops + 1) * sizeof *ops);
  if (ops == NULL) return fold__error(comm, FOLD_ENOMEM, "fold_op_create: out of memory");
  comm->user_ops = ops;
  ops[comm->nuser_ops] = (fold__user_op){fn, ctx, commutative != 0};
  *op = (fold_op)(FOLD_OP_BUILTIN_COUNT + comm->nuser_ops++);
  return FOLD_OK;
}
