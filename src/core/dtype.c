/* dtype.c — sizes and names of the datatypes: the built-in table and the process's record types. */
#include <pthread.h>
#include <stdio.h>

#include "core/internal.h"

static const struct { size_t size; const char *name; } dtypes[] = {
  [FOLD_INT8] = {1, "int8"},       [FOLD_UINT8] = {1, "uint8"},
  [FOLD_INT32] = {4, "int32"},     [FOLD_UINT32] = {4, "uint32"},
  [FOLD_INT64] = {8, "int64"},     [FOLD_UINT64] = {8, "uint64"},
  [FOLD_FLOAT16] = {2, "float16"}, [FOLD_BFLOAT16] = {2, "bfloat16"},
  [FOLD_FLOAT32] = {4, "float32"}, [FOLD_FLOAT64] = {8, "float64"},
  [FOLD_FLOAT32_INT32] = {sizeof(fold_float32_int32), "float32_int32"},
  [FOLD_FLOAT64_INT32] = {sizeof(fold_float64_int32), "float64_int32"},
  [FOLD_INT32_INT32] = {sizeof(fold_int32_int32), "int32_int32"},
  [FOLD_INT64_INT64] = {sizeof(fold_int64_int64), "int64_int64"},
};
/* Unsized, so that a type added at the end of fold_dtype without a row here
 * stops the build (a row left out in the middle: tests/core, dtype names). */
_Static_assert(sizeof dtypes / sizeof *dtypes == FOLD_DTYPE_COUNT, "a row per built-in dtype");

/* ---- record types ----------------------------------------------------------------
 * A record type's value is FOLD__DTYPE_RECORD_BASE + its size, so it is the
 * same in every process and thread without any agreement on creation order,
 * and the collective signature (which carries the value) compares sizes.
 * Only created sizes are valid, so a stray integer is still FOLD_EINVAL:
 * the created sizes sit in an open-addressing table that only grows.
 * Inserts take a lock; lookups (every call's argument check) read without
 * one: a slot's name is written before its size is published (release),
 * and a published slot never changes. */
#define TABLE_SLOTS (2 * FOLD_DTYPE_RECORD_MAX_TYPES) /* a power of two, at most half full */

static _Atomic size_t rec_size[TABLE_SLOTS]; /* 0: empty */
static char rec_name[TABLE_SLOTS][24];
static int rec_count;
static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t slot_of(size_t bytes) { return (size_t)(bytes * 0x9E3779B97F4A7C15ull >> 32) & (TABLE_SLOTS - 1); }

/* The slot holding bytes, or -1. */
static long rec_find(size_t bytes) {
  for (size_t i = slot_of(bytes), k = 0; k < TABLE_SLOTS; k++, i = (i + 1) & (TABLE_SLOTS - 1)) {
    size_t s = atomic_load_explicit(&rec_size[i], memory_order_acquire);
    if (s == bytes) return (long)i;
    if (s == 0) return -1;
  }
  return -1;
}

/* The slot of record value dtype if it was created, else -1. */
static long rec_slot(fold_dtype dtype) {
  unsigned long v = (unsigned long)(unsigned)dtype;
  if (v <= FOLD__DTYPE_RECORD_BASE || v - FOLD__DTYPE_RECORD_BASE > FOLD_DTYPE_RECORD_MAX_BYTES) return -1;
  return rec_find(v - FOLD__DTYPE_RECORD_BASE);
}

int fold_dtype_create(size_t bytes, fold_dtype *dtype) {
  if (dtype == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_dtype_create: dtype is NULL");
  if (bytes == 0) return fold__error(NULL, FOLD_EINVAL, "fold_dtype_create: a record of 0 bytes");
  if (bytes > FOLD_DTYPE_RECORD_MAX_BYTES)
    return fold__error(NULL, FOLD_EINVAL, "fold_dtype_create: a record of %zu bytes is over the limit of %zu",
                       bytes, FOLD_DTYPE_RECORD_MAX_BYTES);
  if (rec_find(bytes) < 0) {
    pthread_mutex_lock(&rec_lock);
    if (rec_find(bytes) < 0) {
      if (rec_count == FOLD_DTYPE_RECORD_MAX_TYPES) {
        pthread_mutex_unlock(&rec_lock);
        return fold__error(NULL, FOLD_EINVAL, "fold_dtype_create: %d record types of distinct sizes exist already "
                           "(the limit); a record of %zu bytes would be one more", FOLD_DTYPE_RECORD_MAX_TYPES, bytes);
      }
      size_t i = slot_of(bytes);
      while (atomic_load_explicit(&rec_size[i], memory_order_relaxed) != 0) i = (i + 1) & (TABLE_SLOTS - 1);
      snprintf(rec_name[i], sizeof rec_name[i], "record%zu", bytes);
      atomic_store_explicit(&rec_size[i], bytes, memory_order_release);
      rec_count++;
    }
    pthread_mutex_unlock(&rec_lock);
  }
  *dtype = (fold_dtype)(FOLD__DTYPE_RECORD_BASE + bytes);
  return FOLD_OK;
}

int fold__dtype_is_record(fold_dtype dtype) { return rec_slot(dtype) >= 0; }

int fold__dtype_is_pair(fold_dtype dtype) {
  return dtype == FOLD_FLOAT32_INT32 || dtype == FOLD_FLOAT64_INT32 || dtype == FOLD_INT32_INT32 ||
         dtype == FOLD_INT64_INT64;
}

size_t fold_dtype_size(fold_dtype dtype) {
  if ((unsigned)dtype < FOLD_DTYPE_COUNT) return dtypes[dtype].size;
  long s = rec_slot(dtype);
  return s >= 0 ? atomic_load_explicit(&rec_size[s], memory_order_relaxed) : 0;
}

const char *fold_dtype_name(fold_dtype dtype) {
  if ((unsigned)dtype < FOLD_DTYPE_COUNT) return dtypes[dtype].name;
  long s = rec_slot(dtype);
  return s >= 0 ? rec_name[s] : "invalid";
}
