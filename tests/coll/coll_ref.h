/* coll_ref.h — deterministic inputs and the serial reference the collective tests compare against. */
#ifndef FOLD_COLL_REF_H
#define FOLD_COLL_REF_H

#include <stdint.h>
#include <stddef.h>

#include "fold.h"

/* The non-commutative user op of the tests: each uint64 element packs an
 * affine map x -> a*x + b (a = low 32 bits, b = high 32 bits, mod 2^32),
 * i.e. the 2x2 matrix [[a, b], [0, 1]]; combining applies the lower rank's
 * map first. Element-wise, so algorithms may split vectors anywhere. */
void ref_affine_fn(void *inout, const void *in, size_t count, fold_dtype dtype, void *ctx);
uint64_t ref_affine_combine(uint64_t lower, uint64_t upper);

/* The numeric dtypes and the builtin ops over them that ref_* model; the
 * pair types and MINLOC/MAXLOC (and record types) have tests of their own
 * (tests/coll/coll_records.c). */
#define REF_NDTYPES (FOLD_FLOAT64 + 1)
#define REF_NOPS (FOLD_BXOR + 1)

/* An op id the tests use for the affine user op (mapped per communicator). */
#define REF_OP_AFFINE 1000

/* Fill buf with `count` elements: rank's contribution for input stream `stream`.
 * The values make every builtin op exact in every dtype (small integers,
 * products of +-1 and a few 2s), so results do not depend on the order. */
void ref_fill(void *buf, size_t count, fold_dtype dt, int op, int rank, uint64_t stream);

/* expected[i] = x_0 op x_1 op ... op x_(n-1) (rank order) over elements
 * [first, first+count) of the streams, then the AVG division. */
void ref_reduce(void *expected, size_t first, size_t count, fold_dtype dt, int op, int n, uint64_t stream);

/* Random floats in [-1, 1) for tolerance tests (float32/float64 only), and
 * the bound on |computed - exact| for a sum of n such values in any order. */
void ref_fill_random(void *buf, size_t count, fold_dtype dt, int rank, uint64_t stream);
double ref_value(const void *buf, size_t i, fold_dtype dt);
double ref_sum_bound(fold_dtype dt, int n);

/* Valid (dtype, op) pairs, the affine op included as (FOLD_UINT64, REF_OP_AFFINE). */
int ref_pairs(fold_dtype *dts, int *ops, int max);

#endif
