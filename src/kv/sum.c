/* sum.c — the store's summing kernel: blocks of sources added four at a time, spread over a small thread pool. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kv/sum.h"
#include "op/op.h"

/* One sum in flight: the blocks are handed out through `next`, so a thread
 * that finishes early takes more (threads share a core with other work). */
typedef struct sum_job {
  char *dst;
  const void *const *srcs;
  int nsrc;
  size_t count, es, nblocks;
  fold_dtype dt;
  atomic_size_t next;
} sum_job;

struct fold__kv_pool {
  int nthreads;               /* helpers + the caller */
  int started;                /* helpers running */
  pthread_t *th;
  pthread_mutex_t call_mu;    /* one sum at a time on a pool */
  pthread_mutex_t mu;         /* guards the fields below */
  pthread_cond_t go, done;
  unsigned gen;               /* bumped per job: a helper looks at each generation once */
  int open;                   /* the current job still takes helpers */
  int active;                 /* helpers inside the current job */
  int stop;
  sum_job *job;
  atomic_size_t helper_blocks; /* blocks the helpers summed, for tests */
};

/* Four sources at a time (MXNet's ReduceSumCPU): one pass over a block
 * reads four source streams at once, which keeps more memory reads in
 * flight than adding one source per pass (measured: bench/kv_local.c,
 * docs/kvstore.md), and the block of dst (at most 32 KiB) stays in cache
 * between passes, so memory sees one read per source and one write of dst.
 * fold's kernels (op.h) combine two arrays; these are the four-input forms,
 * compiled like op.c's (AVX2 and baseline clones, -O3). Each element is
 * still summed left to right, ((o + a) + b) + c) + d, the order of the
 * serial sum; signed integers wrap through the unsigned type as in op.c. */
#define KERNEL FOLD__KERNEL

/* first4: o = a + b + c + d (o may alias a); add4: o += a + b + c + d (no
 * source overlaps o). */
#define DEF_SUM4(name, T, U)                                                                            \
  KERNEL static void name##_first4(T *o, const T *a, const T *b, const T *c, const T *d, size_t n) {  \
    for (size_t i = 0; i < n; i++) o[i] = (T)((U)((U)((U)a[i] + (U)b[i]) + (U)c[i]) + (U)d[i]);        \
  }                                                                                                     \
  KERNEL static void name##_add4(T *restrict o, const T *restrict a, const T *restrict b,              \
                                 const T *restrict c, const T *restrict d, size_t n) {                 \
    for (size_t i = 0; i < n; i++)                                                                      \
      o[i] = (T)((U)((U)((U)((U)o[i] + (U)a[i]) + (U)b[i]) + (U)c[i]) + (U)d[i]);                      \
  }

DEF_SUM4(i8, int8_t, uint8_t)
DEF_SUM4(u8, uint8_t, uint8_t)
DEF_SUM4(i32, int32_t, uint32_t)
DEF_SUM4(u32, uint32_t, uint32_t)
DEF_SUM4(i64, int64_t, uint64_t)
DEF_SUM4(u64, uint64_t, uint64_t)
DEF_SUM4(f32, float, float)
DEF_SUM4(f64, double, double)

typedef void (*sum4_fn)(void *o, const void *a, const void *b, const void *c, const void *d, size_t n);
/* Indexed by dtype; float16/bfloat16 have none: they go through
 * fold__op_reduce3, which widens and rounds per addition. */
static const struct {
  sum4_fn first4, add4;
} sum4[FOLD_FLOAT64 + 1] = {
#define ROW(D, name) [D] = {(sum4_fn)name##_first4, (sum4_fn)name##_add4}
  ROW(FOLD_INT8, i8),     ROW(FOLD_UINT8, u8),     ROW(FOLD_INT32, i32),   ROW(FOLD_UINT32, u32),
  ROW(FOLD_INT64, i64),   ROW(FOLD_UINT64, u64),   ROW(FOLD_FLOAT32, f32), ROW(FOLD_FLOAT64, f64),
#undef ROW
};

/* Add every source into one block of dst: groups of four with the kernels
 * above, the one to three left over (and every source of a half type) with
 * fold__op_reduce3. The per-element order is fixed, so the thread count
 * cannot change a bit of the result. */
static void sum_block(const sum_job *j, size_t b) {
  size_t off = b * FOLD__KV_SUM_BLOCK;
  size_t n = j->count - off < FOLD__KV_SUM_BLOCK ? j->count - off : FOLD__KV_SUM_BLOCK;
  char *d = j->dst + off * j->es;
#define SRC(i) ((const char *)j->srcs[i] + off * j->es)
  if (j->nsrc == 1) {
    if (d != SRC(0)) memcpy(d, SRC(0), n * j->es);
    return;
  }
  int next;
  sum4_fn first4 = sum4[j->dt].first4, add4 = sum4[j->dt].add4;
  if (first4 != NULL && j->nsrc >= 4) {
    first4(d, SRC(0), SRC(1), SRC(2), SRC(3), n);
    next = 4;
    for (; add4 != NULL && next + 4 <= j->nsrc; next += 4) add4(d, SRC(next), SRC(next + 1), SRC(next + 2), SRC(next + 3), n);
  } else {
    fold__op_reduce3(NULL, FOLD_SUM, j->dt, d, SRC(0), SRC(1), n);
    next = 2;
  }
  for (; next < j->nsrc; next++) fold__op_reduce3(NULL, FOLD_SUM, j->dt, d, d, SRC(next), n);
#undef SRC
}

static size_t run_blocks(sum_job *j) {
  size_t done = 0;
  for (;; done++) {
    size_t b = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
    if (b >= j->nblocks) return done;
    sum_block(j, b);
  }
}

static void *helper_main(void *arg) {
  fold__kv_pool *p = arg;
  unsigned seen = 0; /* jobs are posted only after create returned: gen starts at 0 */
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->gen == seen) pthread_cond_wait(&p->go, &p->mu);
    if (p->stop) break;
    seen = p->gen;
    /* A helper that wakes after the caller finished the blocks alone
     * (the machine busy, this thread not scheduled) stays out: the caller
     * waits only for helpers inside the job, never for a wake-up. */
    if (!p->open) continue;
    p->active++;
    sum_job *j = p->job;
    pthread_mutex_unlock(&p->mu);
    atomic_fetch_add_explicit(&p->helper_blocks, run_blocks(j), memory_order_relaxed);
    pthread_mutex_lock(&p->mu);
    if (--p->active == 0) pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static void stop_helpers(fold__kv_pool *p) {
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->started; i++) pthread_join(p->th[i], NULL);
  p->started = 0;
}

fold__kv_pool *fold__kv_pool_create(int nthreads) {
  if (nthreads < 1 || nthreads > 1024) {
    fold__error(NULL, FOLD_EINVAL, "fold kv: FOLD_KV_REDUCE_THREADS=%d: want 1 to 1024 threads", nthreads);
    return NULL;
  }
  fold__kv_pool *p = calloc(1, sizeof *p);
  if (p == NULL || (nthreads > 1 && (p->th = calloc((size_t)nthreads - 1, sizeof *p->th)) == NULL)) {
    free(p);
    fold__error(NULL, FOLD_ENOMEM, "fold kv: no memory for a pool of %d summing threads", nthreads);
    return NULL;
  }
  p->nthreads = nthreads;
  atomic_init(&p->helper_blocks, 0);
  pthread_mutex_init(&p->call_mu, NULL);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->go, NULL);
  pthread_cond_init(&p->done, NULL);
  for (int i = 0; i < nthreads - 1; i++) {
    int rc = pthread_create(&p->th[i], NULL, helper_main, p);
    if (rc != 0) {
      fold__error(NULL, FOLD_ESYS, "fold kv: starting summing thread %d of %d: %s", i + 2, nthreads, strerror(rc));
      fold__kv_pool_destroy(p);
      return NULL;
    }
    p->started++;
  }
  return p;
}

void fold__kv_pool_destroy(fold__kv_pool *p) {
  if (p == NULL) return;
  stop_helpers(p);
  pthread_cond_destroy(&p->done);
  pthread_cond_destroy(&p->go);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->call_mu);
  free(p->th);
  free(p);
}

int fold__kv_pool_threads(const fold__kv_pool *p) { return p ? p->nthreads : 1; }

size_t fold__kv_pool_helper_blocks(fold__kv_pool *p) {
  return p ? atomic_load_explicit(&p->helper_blocks, memory_order_relaxed) : 0;
}

int fold__kv_sum(fold__kv_pool *p, void *dst, const void *const *srcs, int nsrc, size_t count, fold_dtype dtype,
                 size_t big_bound) {
  /* The ten numeric types; pairs and records have no sum. */
  if ((unsigned)dtype > FOLD_FLOAT64)
    return fold__error(NULL, FOLD_EINVAL, "fold kv: cannot sum dtype %s (%d): only the numeric types sum",
                       fold_dtype_name(dtype), (int)dtype);
  if (nsrc < 1 || srcs == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold kv: summing %d values: want at least one", srcs ? nsrc : 0);
  if (count == 0) return 0;
  size_t es = fold_dtype_size(dtype);
  if (count > SIZE_MAX / es)
    return fold__error(NULL, FOLD_EINVAL, "fold kv: summing %zu elements of %s overflows the address space", count,
                       fold_dtype_name(dtype));
  if (dst == NULL) return fold__error(NULL, FOLD_EINVAL, "fold kv: summing into a NULL buffer");
  for (int i = 0; i < nsrc; i++)
    if (srcs[i] == NULL) return fold__error(NULL, FOLD_EINVAL, "fold kv: value %d of %d to sum is NULL", i, nsrc);

  sum_job j = {.dst = dst, .srcs = srcs, .nsrc = nsrc, .count = count, .es = es, .dt = dtype,
               .nblocks = (count + FOLD__KV_SUM_BLOCK - 1) / FOLD__KV_SUM_BLOCK};
  atomic_init(&j.next, 0);
  if (p == NULL || p->started == 0 || count <= big_bound || j.nblocks == 1) {
    (void)run_blocks(&j);
    return 0;
  }
  pthread_mutex_lock(&p->call_mu);
  pthread_mutex_lock(&p->mu);
  p->job = &j;
  p->open = 1;
  p->gen++;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  (void)run_blocks(&j);
  /* Close the job to late helpers, then wait for those inside it: they
   * read j, which lives on this stack. */
  pthread_mutex_lock(&p->mu);
  p->open = 0;
  while (p->active > 0) pthread_cond_wait(&p->done, &p->mu);
  p->job = NULL;
  pthread_mutex_unlock(&p->mu);
  pthread_mutex_unlock(&p->call_mu);
  return 0;
}
