/* kv_util.h — element access by dtype for the key-value store's tests. */
#ifndef FOLD_TEST_KV_UTIL_H
#define FOLD_TEST_KV_UTIL_H

#include <stdint.h>
#include <string.h>

#include "fold.h"
#include "op/op.h"

static inline double kv_get(const void *b, size_t i, fold_dtype d) {
  switch (d) {
  case FOLD_INT8: return ((const int8_t *)b)[i];
  case FOLD_UINT8: return ((const uint8_t *)b)[i];
  case FOLD_INT32: return ((const int32_t *)b)[i];
  case FOLD_UINT32: return ((const uint32_t *)b)[i];
  case FOLD_INT64: return (double)((const int64_t *)b)[i];
  case FOLD_UINT64: return (double)((const uint64_t *)b)[i];
  case FOLD_FLOAT16: return fold__f16_to_f32(((const uint16_t *)b)[i]);
  case FOLD_BFLOAT16: return fold__bf16_to_f32(((const uint16_t *)b)[i]);
  case FOLD_FLOAT32: return ((const float *)b)[i];
  case FOLD_FLOAT64: return ((const double *)b)[i];
  default: return 0;
  }
}

static inline int kv_is_int(fold_dtype d) { return d <= FOLD_UINT64; }

/* Integers wrap (through int64: a negative value is its two's complement). */
static inline void kv_set(void *b, size_t i, fold_dtype d, double v) {
  switch (d) {
  case FOLD_INT8: ((int8_t *)b)[i] = (int8_t)(int64_t)v; break;
  case FOLD_UINT8: ((uint8_t *)b)[i] = (uint8_t)(int64_t)v; break;
  case FOLD_INT32: ((int32_t *)b)[i] = (int32_t)(int64_t)v; break;
  case FOLD_UINT32: ((uint32_t *)b)[i] = (uint32_t)(int64_t)v; break;
  case FOLD_INT64: ((int64_t *)b)[i] = (int64_t)v; break;
  case FOLD_UINT64: ((uint64_t *)b)[i] = (uint64_t)(int64_t)v; break;
  case FOLD_FLOAT16: ((uint16_t *)b)[i] = fold__f32_to_f16((float)v); break;
  case FOLD_BFLOAT16: ((uint16_t *)b)[i] = fold__f32_to_bf16((float)v); break;
  case FOLD_FLOAT32: ((float *)b)[i] = (float)v; break;
  case FOLD_FLOAT64: ((double *)b)[i] = v; break;
  default: break;
  }
}

#endif
