/* dtype.c — sizes and names of the datatypes. */
#include "core/internal.h"

static const struct { size_t size; const char *name; } dtypes[FOLD_DTYPE_COUNT] = {
  [FOLD_INT8] = {1, "int8"},       [FOLD_UINT8] = {1, "uint8"},
  [FOLD_INT32] = {4, "int32"},     [FOLD_UINT32] = {4, "uint32"},
  [FOLD_INT64] = {8, "int64"},     [FOLD_UINT64] = {8, "uint64"},
  [FOLD_FLOAT16] = {2, "float16"}, [FOLD_BFLOAT16] = {2, "bfloat16"},
  [FOLD_FLOAT32] = {4, "float32"}, [FOLD_FLOAT64] = {8, "float64"},
};

size_t fold_dtype_size(fold_dtype dtype) {
  return ((unsigned)dtype < FOLD_DTYPE_COUNT) ? dtypes[dtype].size : 0;
}

const char *fold_dtype_name(fold_dtype dtype) {
  return ((unsigned)dtype < FOLD_DTYPE_COUNT) ? dtypes[dtype].name : "invalid";
}
