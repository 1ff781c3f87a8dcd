/* coll_reuse.c — the executor's state and scratch reused across calls: growing and shrinking sizes, several calls in flight. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coll/coll.h"
#include "fold.h"

#define NMAX 4
#define BIG 250000
static fold_comm *comms[NMAX];
static int nranks;

/* Input of rank r, call k, element i: small integers, so every sum is exact. */
static int32_t val(int r, int k, size_t i) { return (int32_t)((r + 1) * (int)(i % 13) + k); }

static int32_t want_sum(int k, size_t i) {
  int32_t s = 0;
  for (int q = 0; q < nranks; q++) s += val(q, k, i);
  return s;
}

static void check_sum(int r, const char *what, int k, const int32_t *out, size_t count) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < count; i++)
    if (out[i] != want_sum(k, i) && bad++ == 0) first = i;
  CHECK(bad == 0, "n=%d rank %d %s call %d count %zu: %zu wrong elements, first %zu: %d vs %d", nranks, r, what, k,
        count, bad, first, out[first], want_sum(k, first));
}

/* Sizes up and down, algorithms with scratch of different shapes, out of
 * place and in place: a reused scratch holds the previous call's bytes,
 * which must never show in a result. */
static void sequence(int r, fold_comm *c, int32_t *in, int32_t *out) {
  static const size_t counts[] = {100000, 7, BIG, 3000, 100000, 1, 40000, BIG, 2};
  static const char *const algos[] = {"allreduce=recursive_doubling", "allreduce=ring_segmented",
                                      "allreduce=rabenseifner", "allreduce=auto"};
  int k = 0;
  for (int a = 0; a < 4; a++) {
    CHECK_OK(fold_comm_set_algo(c, algos[a]), c);
    for (size_t s = 0; s < sizeof counts / sizeof *counts; s++, k++) {
      size_t n = counts[s];
      int in_place = (k % 3) == 1;
      for (size_t i = 0; i < n; i++) (in_place ? out : in)[i] = val(r, k, i);
      CHECK_OK(fold_allreduce(in_place ? out : in, out, n, FOLD_INT32, FOLD_SUM, c), c);
      check_sum(r, algos[a], k, out, n);
    }
  }
  CHECK_OK(fold_comm_set_algo(c, "allreduce=auto"), c);
}

/* The same call twice: the second runs on the first one's state and
 * scratch (white box: the cached pointers stay). */
static void same_scratch(int r, fold_comm *c, int32_t *in, int32_t *out) {
  CHECK_OK(fold_comm_set_algo(c, "allreduce=recursive_doubling"), c);
  for (size_t i = 0; i < BIG; i++) in[i] = val(r, 1000, i);
  CHECK_OK(fold_allreduce(in, out, BIG, FOLD_INT32, FOLD_SUM, c), c);
  fold__coll *co = fold__coll_cached(c);
  CHECK(co != NULL && co->tmp_cap >= BIG * sizeof(int32_t), "rank %d: no scratch cached after a call", r);
  void *tmp = co ? co->tmp_mem : NULL, *ops = co ? co->ops : NULL;
  memset(out, 0, BIG * sizeof *out);
  CHECK_OK(fold_allreduce(in, out, BIG, FOLD_INT32, FOLD_SUM, c), c);
  check_sum(r, "repeat", 1000, out, BIG);
  co = fold__coll_cached(c);
  CHECK(co != NULL && co->tmp_mem == tmp && co->ops == ops, "rank %d: the second call did not reuse the first's state",
        r);
  /* a small call keeps the large scratch */
  CHECK_OK(fold_allreduce(in, out, 3, FOLD_INT32, FOLD_SUM, c), c);
  co = fold__coll_cached(c);
  CHECK(co != NULL && co->tmp_mem == tmp, "rank %d: a small call dropped the cached large scratch", r);
  CHECK_OK(fold_comm_set_algo(c, "allreduce=auto"), c);
}

/* Calls in flight at once: only one can hold the cached state, the others
 * allocate theirs; completion order differs from start order, and the
 * largest scratch is what stays. Repeated, so later rounds start from the
 * cache the earlier ones left. */
static void in_flight(int r, fold_comm *c, int32_t *in, int32_t *out) {
  enum { K = 4 };
  static const size_t counts[K] = {60000, 5, BIG / 2, 1000};
  static const int order[K] = {2, 0, 3, 1};
  CHECK_OK(fold_comm_set_algo(c, "allreduce=recursive_doubling"), c);
  for (int rep = 0; rep < 3; rep++) {
    fold_request *req[K + 2];
    size_t off = 0, offs[K];
    for (int k = 0; k < K; k++) {
      offs[k] = off;
      for (size_t i = 0; i < counts[k]; i++) in[off + i] = val(r, 2000 + 10 * rep + k, i);
      CHECK_OK(fold_iallreduce(in + off, out + off, counts[k], FOLD_INT32, FOLD_SUM, c, &req[k]), c);
      off += counts[k];
    }
    /* other collectives with scratch share the cache too */
    int32_t rs_in[NMAX * 100], rs_out[100], ag_in[50], ag_out[NMAX * 50];
    for (int i = 0; i < nranks * 100; i++) rs_in[i] = r + i;
    for (int i = 0; i < 50; i++) ag_in[i] = 1000 * r + i;
    CHECK_OK(fold_ireduce_scatter(rs_in, rs_out, 100, FOLD_INT32, FOLD_SUM, c, &req[K]), c);
    CHECK_OK(fold_iallgather(ag_in, ag_out, 50, FOLD_INT32, c, &req[K + 1]), c);
    CHECK_OK(fold_wait(req[K + 1]), c);
    for (int k = 0; k < K; k++) CHECK_OK(fold_wait(req[order[k]]), c);
    CHECK_OK(fold_wait(req[K]), c);
    for (int k = 0; k < K; k++) check_sum(r, "in flight", 2000 + 10 * rep + k, out + offs[k], counts[k]);
    int bad = 0;
    for (int i = 0; i < 100; i++) {
      int32_t w = 0;
      for (int q = 0; q < nranks; q++) w += q + r * 100 + i;
      bad += rs_out[i] != w;
    }
    CHECK(bad == 0, "n=%d rank %d in-flight reduce_scatter: %d wrong", nranks, r, bad);
    bad = 0;
    for (int q = 0; q < nranks; q++)
      for (int i = 0; i < 50; i++) bad += ag_out[q * 50 + i] != 1000 * q + i;
    CHECK(bad == 0, "n=%d rank %d in-flight allgather: %d wrong", nranks, r, bad);
    fold__coll *co = fold__coll_cached(c);
    CHECK(co != NULL && co->tmp_cap >= counts[2] * sizeof(int32_t),
          "rank %d: the largest scratch of the calls in flight was not kept", r);
  }
  CHECK_OK(fold_comm_set_algo(c, "allreduce=auto"), c);
}

static void *rank_main(void *p) {
  int r = (int)(intptr_t)p;
  fold_comm *c = comms[r];
  int32_t *in = malloc(BIG * sizeof *in), *out = malloc(BIG * sizeof *out);
  CHECK(in && out, "out of memory");
  if (in && out) {
    sequence(r, c, in, out);
    same_scratch(r, c, in, out);
    in_flight(r, c, in, out);
  }
  free(in);
  free(out);
  return NULL;
}

int main(void) {
  setenv("FOLD_DEBUG", "NONE", 0);
  setenv("FOLD_TIMEOUT", "60", 0);
  /* small segments: ring_segmented runs many rounds on the reused scratch */
  setenv("FOLD_SEGMENT_BYTES", "8192", 0);
  for (nranks = 2; nranks <= NMAX; nranks++) {
    CHECK_OK(fold_comm_init_threads(nranks, comms), NULL);
    pthread_t th[NMAX];
    for (int r = 0; r < nranks; r++) pthread_create(&th[r], NULL, rank_main, (void *)(intptr_t)r);
    for (int r = 0; r < nranks; r++) pthread_join(th[r], NULL);
    for (int r = 0; r < nranks; r++) fold_comm_destroy(comms[r]);
  }
  return check_report("coll_reuse");
}
