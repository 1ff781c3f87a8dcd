/* coll_ref.c — deterministic inputs and serial reference reductions for the collective tests. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll_ref.h"
#include "op/op.h"

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

uint64_t ref_affine_combine(uint64_t lower, uint64_t upper) {
  uint32_t a1 = (uint32_t)lower, b1 = (uint32_t)(lower >> 32);
  uint32_t a2 = (uint32_t)upper, b2 = (uint32_t)(upper >> 32);
  /* apply lower then upper: x -> a2*(a1*x + b1) + b2 */
  uint32_t a = a2 * a1, b = a2 * b1 + b2;
  return (uint64_t)a | ((uint64_t)b << 32);
}

void ref_affine_fn(void *inout, const void *in, size_t count, fold_dtype dtype, void *ctx) {
  (void)dtype;
  (void)ctx;
  uint64_t *io = inout;
  const uint64_t *lo = in;
  for (size_t i = 0; i < count; i++) io[i] = ref_affine_combine(lo[i], io[i]);
}

static int is_float(fold_dtype dt) {
  return dt == FOLD_FLOAT16 || dt == FOLD_BFLOAT16 || dt == FOLD_FLOAT32 || dt == FOLD_FLOAT64;
}
static int is_signed(fold_dtype dt) {
  return dt == FOLD_INT8 || dt == FOLD_INT32 || dt == FOLD_INT64 || is_float(dt);
}

/* The logical value of element i of rank's stream. */
static int64_t value(fold_dtype dt, int op, int rank, size_t i, uint64_t stream) {
  uint64_t h = mix(stream * 0x9E3779B97F4A7C15ULL ^ mix((uint64_t)rank * 1000003 + i));
  switch (op) {
  case FOLD_SUM:
  case FOLD_AVG: return is_signed(dt) ? (int64_t)(h % 17) - 8 : (int64_t)(h % 17);
  case FOLD_PROD:
    if (!is_signed(dt)) return (h & 1) ? 3 : 1;
    if (rank < 4 && (h & 7) == 0) return (h & 8) ? 2 : -2;
    return (h & 16) ? 1 : -1;
  case FOLD_MIN:
  case FOLD_MAX: return is_signed(dt) ? (int64_t)(h % 201) - 100 : (int64_t)(h % 201);
  default: return (int64_t)h; /* bitwise and affine: raw bits */
  }
}

static void store(void *buf, size_t i, fold_dtype dt, int64_t iv, double fv) {
  switch (dt) {
  case FOLD_INT8: ((int8_t *)buf)[i] = (int8_t)iv; break;
  case FOLD_UINT8: ((uint8_t *)buf)[i] = (uint8_t)iv; break;
  case FOLD_INT32: ((int32_t *)buf)[i] = (int32_t)iv; break;
  case FOLD_UINT32: ((uint32_t *)buf)[i] = (uint32_t)iv; break;
  case FOLD_INT64: ((int64_t *)buf)[i] = iv; break;
  case FOLD_UINT64: ((uint64_t *)buf)[i] = (uint64_t)iv; break;
  case FOLD_FLOAT16: ((uint16_t *)buf)[i] = fold__f32_to_f16((float)fv); break;
  case FOLD_BFLOAT16: ((uint16_t *)buf)[i] = fold__f32_to_bf16((float)fv); break;
  case FOLD_FLOAT32: ((float *)buf)[i] = (float)fv; break;
  case FOLD_FLOAT64: ((double *)buf)[i] = fv; break;
  default: break;
  }
}

void ref_fill(void *buf, size_t count, fold_dtype dt, int op, int rank, uint64_t stream) {
  for (size_t i = 0; i < count; i++) {
    int64_t v = value(dt, op, rank, i, stream);
    store(buf, i, dt, v, (double)v);
  }
}

/* Wrap a 64-bit result to the width of dt, sign-extending signed types. */
static int64_t wrap(fold_dtype dt, uint64_t v) {
  switch (dt) {
  case FOLD_INT8: return (int8_t)v;
  case FOLD_UINT8: return (uint8_t)v;
  case FOLD_INT32: return (int32_t)v;
  case FOLD_UINT32: return (uint32_t)v;
  default: return (int64_t)v;
  }
}

void ref_reduce(void *expected, size_t first, size_t count, fold_dtype dt, int op, int n, uint64_t stream) {
  for (size_t k = 0; k < count; k++) {
    size_t i = first + k;
    if (op == REF_OP_AFFINE) {
      uint64_t acc = (uint64_t)value(dt, op, 0, i, stream);
      for (int r = 1; r < n; r++) acc = ref_affine_combine(acc, (uint64_t)value(dt, op, r, i, stream));
      ((uint64_t *)expected)[k] = acc;
      continue;
    }
    if (is_float(dt)) {
      double acc = (double)value(dt, op, 0, i, stream);
      for (int r = 1; r < n; r++) {
        double x = (double)value(dt, op, r, i, stream);
        if (op == FOLD_SUM || op == FOLD_AVG) acc += x;
        else if (op == FOLD_PROD) acc *= x;
        else if (op == FOLD_MIN) acc = x < acc ? x : acc;
        else if (op == FOLD_MAX) acc = x > acc ? x : acc;
      }
      if (op == FOLD_AVG && n > 1) {
        if (dt == FOLD_FLOAT64) acc = acc / n;
        else acc = (double)((float)acc / (float)n); /* fold divides half types in float32 too */
      }
      store(expected, k, dt, 0, acc);
      continue;
    }
    uint64_t acc = (uint64_t)value(dt, op, 0, i, stream);
    for (int r = 1; r < n; r++) {
      uint64_t x = (uint64_t)value(dt, op, r, i, stream);
      switch (op) {
      case FOLD_SUM:
      case FOLD_AVG: acc += x; break;
      case FOLD_PROD: acc *= x; break;
      case FOLD_MIN:
        if (is_signed(dt) ? wrap(dt, x) < wrap(dt, acc) : (uint64_t)wrap(dt, x) < (uint64_t)wrap(dt, acc)) acc = x;
        break;
      case FOLD_MAX:
        if (is_signed(dt) ? wrap(dt, x) > wrap(dt, acc) : (uint64_t)wrap(dt, x) > (uint64_t)wrap(dt, acc)) acc = x;
        break;
      case FOLD_BAND: acc &= x; break;
      case FOLD_BOR: acc |= x; break;
      case FOLD_BXOR: acc ^= x; break;
      }
    }
    int64_t w = wrap(dt, acc);
    if (op == FOLD_AVG && n > 1) {
      if (is_signed(dt)) w = w / n;
      else w = (int64_t)((uint64_t)w / (uint64_t)n);
    }
    store(expected, k, dt, w, 0);
  }
}

void ref_fill_random(void *buf, size_t count, fold_dtype dt, int rank, uint64_t stream) {
  for (size_t i = 0; i < count; i++) {
    uint64_t h = mix(stream ^ mix((uint64_t)rank * 7919 + i * 104729));
    double v = (double)(h >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    if (dt == FOLD_FLOAT32) ((float *)buf)[i] = (float)v;
    else ((double *)buf)[i] = v;
  }
}

double ref_value(const void *buf, size_t i, fold_dtype dt) {
  return dt == FOLD_FLOAT32 ? ((const float *)buf)[i] : ((const double *)buf)[i];
}

/* A sum of n terms with n-1 roundings of relative size eps each: the error
 * is at most (n-1) eps sum|x| to first order; with |x| <= 1, sum|x| <= n. */
double ref_sum_bound(fold_dtype dt, int n) {
  double eps = dt == FOLD_FLOAT32 ? ldexp(1.0, -24) : ldexp(1.0, -53);
  return 1.01 * (n > 1 ? n - 1 : 0) * eps * n + 1e-300;
}

int ref_pairs(fold_dtype *dts, int *ops, int max) {
  int k = 0;
  for (int d = 0; d < REF_NDTYPES; d++)
    for (int o = 0; o < REF_NOPS; o++) {
      if (is_float((fold_dtype)d) && (o == FOLD_BAND || o == FOLD_BOR || o == FOLD_BXOR)) continue;
      if (k < max) dts[k] = (fold_dtype)d, ops[k] = o;
      k++;
    }
  if (k < max) dts[k] = FOLD_UINT64, ops[k] = REF_OP_AFFINE;
  return k + 1;
}
