/* sum.c — the store's summing kernel: blocks of sources added with fold's kernels over a small thread pool. */
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
  unsigned gen;               /* bumped per job: a helper runs each generation once */
  int busy;                   /* helpers still inside the current job */
  int stop;
  sum_job *job;
  atomic_size_t helper_blocks; /* blocks the helpers summed, for tests */
};

/* Add every source into one block of dst. The sources go in 4 at a time,
 * as MXNet's ReduceSumCPU groups them; MXNet does so to read its output
 * back from memory once per 4 sources, here the block (at most 32 KiB)
 * stays in cache, so memory sees one read per source and one write of dst
 * whatever nsrc. Each addition is fold__op_reduce3's sum (vectorised, and
 * float16/bfloat16 widened and rounded per addition), applied left to
 * right: the per-element order is fixed, so the thread count cannot change
 * a bit of the result. */
static void sum_block(const sum_job *j, size_t b) {
  size_t off = b * FOLD__KV_SUM_BLOCK;
  size_t n = j->count - off < FOLD__KV_SUM_BLOCK ? j->count - off : FOLD__KV_SUM_BLOCK;
  char *d = j->dst + off * j->es;
#define SRC(i) ((const char *)j->srcs[i] + off * j->es)
  if (j->nsrc == 1) {
    if (d != SRC(0)) memcpy(d, SRC(0), n * j->es);
    return;
  }
  fold__op_reduce3(NULL, FOLD_SUM, j->dt, d, SRC(0), SRC(1), n);
  for (int g = 2; g < j->nsrc; g += 4) {
    int end = g + 4 < j->nsrc ? g + 4 : j->nsrc;
    for (int i = g; i < end; i++) fold__op_reduce3(NULL, FOLD_SUM, j->dt, d, d, SRC(i), n);
  }
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
    sum_job *j = p->job;
    pthread_mutex_unlock(&p->mu);
    atomic_fetch_add_explicit(&p->helper_blocks, run_blocks(j), memory_order_relaxed);
    pthread_mutex_lock(&p->mu);
    if (--p->busy == 0) pthread_cond_signal(&p->done);
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
  p->busy = p->started;
  p->gen++;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  (void)run_blocks(&j);
  /* The helpers read j (on this stack) until they report: wait for all. */
  pthread_mutex_lock(&p->mu);
  while (p->busy > 0) pthread_cond_wait(&p->done, &p->mu);
  p->job = NULL;
  pthread_mutex_unlock(&p->mu);
  pthread_mutex_unlock(&p->call_mu);
  return 0;
}
