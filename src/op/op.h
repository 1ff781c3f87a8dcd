/* op.h — reduction kernels (datatype x op) and user-defined ops. */
#ifndef FOLD_OP_H
#define FOLD_OP_H

#include "core/internal.h"

/* A user op made by fold_op_create. */
typedef struct fold__user_op {
  void (*fn)(void *inout, const void *in, size_t count, fold_dtype dtype, void *ctx);
  void *ctx;
  int commutative;
} fold__user_op;

/* A communicator's user ops (fold_op_create) and the scratch their
 * reductions of records over 4 KiB need. The op layer only reads and runs
 * them: the table is the communicator layer's (comm/comm.c), in the
 * well-known slot FOLD__SLOT_OPS (fold__op_table_of, comm/comm.h), since
 * fold_op_create holds the communicator against the progress thread, which
 * this layer below the engine cannot. t may be NULL everywhere below: no
 * user ops. */
typedef struct fold__op_table {
  fold__user_op *ops; /* user op k is FOLD_OP_BUILTIN_COUNT + k */
  int n;
  void *tmp;          /* one record's scratch, tmp_cap bytes (fold__op_check makes it) */
  size_t tmp_cap;
} fold__op_table;

/* FOLD_EINVAL (with a message naming `what` and c's rank) unless op is a
 * valid op for dtype: builtins with bitwise ops on integer types only, or
 * a user op of t (c's table). */
int fold__op_check(fold_comm *c, fold__op_table *t, const char *what, fold_op op, fold_dtype dtype);
/* An op's name for messages: "sum", ..., "maxloc" for the built-ins,
 * "user#K" (written into tmp) for the K-th user op. */
const char *fold__op_name(unsigned op, char *tmp, size_t cap);

/* 1 if op may combine in any order. */
int fold__op_commutative(const fold__op_table *t, fold_op op);

/* fold__op_check and what a call needs to know of op, in one visit (the
 * collective's start, coll/coll_start.c): t is c's table, esize is dtype's size (checked
 * by the caller, nonzero). FOLD_OK with *commutative, *wsize (the bytes
 * per element the reduction works on: esize, or FOLD_SUM_EXACT's
 * accumulator) and *user (op's entry if it is a user op of c, else NULL)
 * set; else fold__op_check's error. */
int fold__op_facts(fold_comm *c, fold__op_table *t, const char *what, fold_op op, fold_dtype dtype, size_t esize,
                   int *commutative, size_t *wsize, const fold__user_op **user);

/* out[i] = a[i] op b[i] for count elements, a being the lower ranks' part
 * (it matters for user ops only); out may alias a or b. FOLD_AVG sums here;
 * fold__op_finish divides. float16/bfloat16 go through float32, rounded
 * once per call. t may be NULL for the built-in ops (a user op needs the
 * table of the communicator it was created on). */
void fold__op_reduce3(const fold__op_table *t, fold_op op, fold_dtype dtype, void *out, const void *a,
                      const void *b, size_t count);

/* The last step of a reduction over n ranks: FOLD_AVG divides by n;
 * other ops do nothing. */
void fold__op_finish(fold_op op, fold_dtype dtype, void *buf, size_t count, int n);

/* FOLD_SUM_EXACT (exact.c): a collective runs on per-element fixed-point
 * accumulators of fold__exact_acc_size(dt) bytes (0 unless dt is float32
 * or float64): load converts count elements into accumulators, add sums two
 * accumulator arrays exactly (out may alias a or b), round writes the
 * correctly rounded elements. fold__op_reduce3 with FOLD_SUM_EXACT takes
 * accumulator arrays, not elements. */
size_t fold__exact_acc_size(fold_dtype dt);
void fold__exact_load(fold_dtype dt, void *acc, const void *x, size_t count);
void fold__exact_add(fold_dtype dt, void *out, const void *a, const void *b, size_t count);
void fold__exact_round(fold_dtype dt, void *x, const void *acc, size_t count);

/* Half-precision conversions (round to nearest even), exposed for tests. */
float fold__f16_to_f32(uint16_t h);
uint16_t fold__f32_to_f16(float f);
float fold__bf16_to_f32(uint16_t h);
uint16_t fold__f32_to_bf16(float f);

/* Marks a reduction kernel: compiled twice (AVX2 and baseline x86-64), the
 * loader picking one by CPU at run time (GCC target_clones + ifunc); plain
 * elsewhere and under the sanitizers. Used by op.c and the store's sum
 * (kv/sum.c). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define FOLD__KERNEL __attribute__((target_clones("avx2", "default")))
#else
#define FOLD__KERNEL
#endif

#endif
