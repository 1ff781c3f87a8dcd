/* sum.h — the key-value store's summing kernel and its thread pool. */
#ifndef FOLD_KV_SUM_H
#define FOLD_KV_SUM_H

#include "core/internal.h"

/* Elements per block: the unit of work a pool thread takes (MXNet's
 * ReduceSumCPU step). 4K elements of float64 are 32 KiB, so a block of dst
 * stays in the L1/L2 cache while every source is added into it. */
#define FOLD__KV_SUM_BLOCK 4096

/* A fixed set of helper threads for large sums (FOLD_KV_REDUCE_THREADS,
 * read by the caller). A pool of nthreads runs nthreads - 1 helpers: the
 * calling thread is the nthreads-th worker, so a pool of 1 starts none. */
typedef struct fold__kv_pool fold__kv_pool;

/* A pool of nthreads (>= 1) threads, or NULL with fold_comm_last_error(NULL)
 * set: FOLD_EINVAL for nthreads < 1 or > 1024, or a failed allocation or
 * pthread_create (its helpers already started are joined). */
fold__kv_pool *fold__kv_pool_create(int nthreads);
/* Stops and joins the helpers and frees p. NULL is a no-op. Must not run
 * while a fold__kv_sum on p is in progress. */
void fold__kv_pool_destroy(fold__kv_pool *p);
/* The pool's thread count (1 for NULL). */
int fold__kv_pool_threads(const fold__kv_pool *p);
/* How many blocks p's helpers (not the callers) have summed so far: tests
 * check with it that large sums are really spread. */
size_t fold__kv_pool_helper_blocks(fold__kv_pool *p);

/* dst = srcs[0] + srcs[1] + ... + srcs[nsrc-1], count elements of dtype.
 * dst may alias srcs[0] (only: a later source must not overlap dst).
 * Blocks of FOLD__KV_SUM_BLOCK elements; in each block the sources are
 * added 4 at a time (MXNet's ReduceSumCPU: four-input kernels in sum.c,
 * fold__op_reduce3 for the 1-3 left over and for the half types), so
 * every element is summed left to right: ((s0 + s1) + s2) + ... , whatever
 * the thread count. Integers thus equal the serial sum bit for bit (wrapping
 * on overflow), float32/float64 equal the serial left-to-right sum bit for
 * bit, float16/bfloat16 are rounded after each addition (as
 * fold__op_reduce3 does).
 * Once count > big_bound the blocks are spread over p's threads (the caller
 * among them); otherwise, or when p is NULL, the caller sums alone. Blocks
 * until the sum is complete (it is pure computation: no communication).
 * Concurrent calls on one pool are serialised.
 * Returns 0, or FOLD_EINVAL (message in fold_comm_last_error(NULL)) for a
 * dtype that cannot be summed (pairs, records), nsrc < 1, a NULL dst or
 * source with count > 0, or a byte size that overflows size_t. */
int fold__kv_sum(fold__kv_pool *p, void *dst, const void *const *srcs, int nsrc, size_t count, fold_dtype dtype,
                 size_t big_bound);

#endif
