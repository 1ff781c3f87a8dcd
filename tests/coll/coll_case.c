/* coll_case.c — one collective test case on one rank: inputs, the call, and checks against the serial reference. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coll/coll_ref.h"
#include "fold.h"
#include "coll/coll_case.h"


const char *coll_names[NCOLL] = {"broadcast", "reduce", "allreduce", "reduce_scatter", "allgather",
                                        "gather", "scatter", "alltoall", "barrier"};
const char *algos[NCOLL][10] = {
  {"auto", "binomial", "scatter_allgather", "pipeline", "hier"},
  {"auto", "binomial", "rabenseifner", "hier"},
  {"auto", "reduce_bcast", "recursive_doubling", "rabenseifner", "ring", "ring_segmented", "direct", "ring_skip", "hier"},
  {"auto", "recursive_halving", "ring", "pairwise", "ring_skip", "hier"},
  {"auto", "recursive_doubling", "bruck", "ring", "hier"},
  {"auto", "binomial", "linear"},
  {"auto", "binomial", "linear"},
  {"auto", "pairwise", "bruck"},
  {"auto", "dissemination", "hier"},
};
static int reduces(int c) { return c == REDUCE || c == ALLREDUCE || c == REDUCE_SCATTER; }
static int rooted(int c) { return c == BROADCAST || c == REDUCE || c == GATHER || c == SCATTER; }
static int blocked(int c) { return c == REDUCE_SCATTER || c == ALLGATHER || c == GATHER || c == SCATTER || c == ALLTOALL; }

int opt_quick, opt_verbose, opt_expect_refusal;

const char *algo_name(int coll, int algo) { return algo == ALGO_SHM ? "shm" : algos[coll][algo]; }

/* ---- the plan: identical on every rank ---- */

void plan_add(plan_t *p, tcase t) {
  p->cases = realloc(p->cases, (size_t)(p->ncases + 1) * sizeof *p->cases);
  t.stream = (uint64_t)p->ncases * 7777 + 1;
  t.nonblocking = p->ncases % 3 == 1;
  p->cases[p->ncases++] = t;
}

void make_plan(plan_t *p, int coll, int algo, int n) {
  fold_dtype dts[128];
  int ops[128];
  int npairs = ref_pairs(dts, ops, 128);
  size_t counts[] = {0, 1, (size_t)(n - 1), (size_t)n, (size_t)n + 1, 1000, 10007, 1 << 20};
  int ncounts = opt_quick ? 7 : 8;
  int roots[3] = {0, n / 2, n - 1}, nroots = rooted(coll) ? 3 : 1;
  int rot = 0;
  for (int ci = 0; ci < ncounts; ci++) {
    size_t count = counts[ci];
    if (blocked(coll) && count > 4096) count = (count == (1 << 20) ? (2u << 20) / (size_t)n : count);
    if (coll == BARRIER && ci > 0) break;
    int big = count > 1000;
    for (int ip = 0; ip < 2; ip++) {
      if (coll == ALLTOALL && ip) continue;
      if (coll == BROADCAST && ip) continue;
      for (int ri = 0; ri < nroots; ri++) {
        if (ri > 0 && roots[ri] == roots[ri - 1]) continue;
        int k = big ? 1 : (opt_quick ? 1 : 3);
        for (int j = 0; j < k; j++) {
          tcase t = {coll, algo, count, FOLD_INT32, FOLD_SUM, ip, roots[ri], 0, 0};
          if (!big && reduces(coll)) {
            int pi = (rot++ * 7) % npairs;
            t.dt = dts[pi];
            t.op = ops[pi];
          } else if (!big) {
            t.dt = (fold_dtype)(rot++ % REF_NDTYPES);
          } else if (reduces(coll)) {
            t.dt = FOLD_FLOAT32;
          }
          plan_add(p, t);
        }
      }
    }
  }
  if (reduces(coll)) {
    /* every (dtype, op) pair once, at a count that is not a multiple of n */
    for (int pi = 0; pi < npairs; pi += opt_quick ? 5 : 1)
      plan_add(p, (tcase){coll, algo, (size_t)(3 * n + 2), dts[pi], ops[pi], 0, n - 1, 0, 0});
    /* random floats: results within the bound of the operation count */
    plan_add(p, (tcase){coll, algo, 999, FOLD_FLOAT32, -1, 0, 0, 0, 0});
    plan_add(p, (tcase){coll, algo, 999, FOLD_FLOAT64, -1, 1, n / 2, 0, 0});
  } else if (coll != BARRIER) {
    for (int d = 0; d < REF_NDTYPES; d++) plan_add(p, (tcase){coll, algo, (size_t)(n + 3), (fold_dtype)d, 0, 0, n - 1, 0, 0});
  } else {
    for (int j = 0; j < 20; j++) plan_add(p, (tcase){coll, algo, 0, FOLD_UINT8, 0, 0, 0, 0, 0});
  }
}

/* ---- one case on one rank ---- */

#define CANARY 64
static atomic_int barrier_count;

static uint8_t *alloc_canaried(size_t bytes) {
  uint8_t *b = malloc(bytes + CANARY);
  memset(b, 0xCD, bytes + CANARY);
  return b;
}
static int canary_ok(const uint8_t *b, size_t bytes) {
  for (size_t i = 0; i < CANARY; i++)
    if (b[bytes + i] != 0xCD) return 0;
  return 1;
}

static const char *opname(int op) {
  static const char *names[] = {"sum", "prod", "min", "max", "avg", "band", "bor", "bxor"};
  return op == REF_OP_AFFINE ? "affine" : op < 0 ? "random-sum" : names[op];
}

static void describe(char *b, size_t cap, const tcase *t, int n) {
  snprintf(b, cap, "%s/%s n=%d count=%zu %s %s%s root=%d%s", coll_names[t->coll], algo_name(t->coll, t->algo), n, t->count,
           fold_dtype_name(t->dt), opname(t->op), t->in_place ? " in-place" : "", t->root,
           t->nonblocking ? " nonblocking" : "");
}

/* Fill `buf` with rank's input (block b of a blocked input uses stream+b). */
static void input(void *buf, const tcase *t, int rank, size_t count, uint64_t stream) {
  if (t->op < 0) ref_fill_random(buf, count, t->dt, rank, stream);
  else ref_fill(buf, count, t->dt, t->op == REF_OP_AFFINE ? REF_OP_AFFINE : t->op, rank, stream);
}

/* Element i is checked exactly unless the vector is big: then the first and
 * last 512 elements and every 37th are (data movement errors move whole
 * blocks, which the sample catches), so the reference costs O(n * sample)
 * per rank instead of O(n * count). */
static int sampled(size_t i, size_t count) {
  return count <= 100000 || i < 512 || i + 512 >= count || i % 37 == 0;
}

static int compare(const void *got, const void *want, size_t count, const tcase *t, int n, char *why, size_t cap) {
  size_t es = fold_dtype_size(t->dt);
  if (t->op >= 0) {
    if (count <= 100000 && memcmp(got, want, count * es) == 0) return 1;
    for (size_t i = 0; i < count; i++)
      if (sampled(i, count) && memcmp((const char *)got + i * es, (const char *)want + i * es, es) != 0) {
        snprintf(why, cap, "element %zu differs", i);
        return 0;
      }
    return 1;
  }
  double bound = ref_sum_bound(t->dt, n);
  for (size_t i = 0; i < count; i++) {
    double g = ref_value(got, i, t->dt), w = ref_value(want, i, t->dt);
    if (!(g - w <= bound && w - g <= bound)) {
      snprintf(why, cap, "element %zu: %.17g vs exact %.17g (bound %.3g)", i, g, w, bound);
      return 0;
    }
  }
  return 1;
}

/* The exact random-float sum, in double (float64 inputs: long double). */
static void random_ref(void *want, const tcase *t, int n, size_t first, size_t count, uint64_t stream) {
  size_t es = fold_dtype_size(t->dt);
  void *tmp = malloc((first + count) * es + 1);
  long double *acc = calloc(count + 1, sizeof *acc);
  for (int r = 0; r < n; r++) {
    ref_fill_random(tmp, first + count, t->dt, r, stream);
    for (size_t i = 0; i < count; i++) acc[i] += ref_value(tmp, first + i, t->dt);
  }
  for (size_t i = 0; i < count; i++) {
    if (t->dt == FOLD_FLOAT32) ((float *)want)[i] = (float)acc[i];
    else ((double *)want)[i] = (double)acc[i];
  }
  free(tmp);
  free(acc);
}

static void expected_reduction(void *want, const tcase *t, int n, size_t first, size_t count, uint64_t stream) {
  if (t->op < 0) {
    random_ref(want, t, n, first, count, stream);
    return;
  }
  if (count <= 100000) {
    ref_reduce(want, first, count, t->dt, t->op, n, stream);
    return;
  }
  size_t es = fold_dtype_size(t->dt);
  for (size_t i = 0; i < count; i++)
    if (sampled(i, count)) ref_reduce((char *)want + i * es, first + i, 1, t->dt, t->op, n, stream);
}

int run_case(fold_comm *c, const tcase *t, fold_op affine) {
  int n = fold_comm_size(c), r = fold_comm_rank(c);
  size_t es = fold_dtype_size(t->dt), cnt = t->count, blk = cnt * es;
  int nblk = blocked(t->coll) ? n : 1;
  size_t in_bytes = (t->coll == REDUCE_SCATTER || (t->coll == SCATTER) || t->coll == ALLTOALL) ? blk * (size_t)n : blk;
  size_t out_bytes = (t->coll == ALLGATHER || t->coll == GATHER || t->coll == ALLTOALL) ? blk * (size_t)n : blk;
  (void)nblk;
  fold_op op = t->op == REF_OP_AFFINE ? affine : t->op < 0 ? FOLD_SUM : (fold_op)t->op;
  char desc[256], why[160] = "";
  describe(desc, sizeof desc, t, n);
  int before = atomic_load(&check_failures);

  char spec[64];
  snprintf(spec, sizeof spec, "%s=%s", coll_names[t->coll], algo_name(t->coll, t->algo));
  CHECK_OK(fold_comm_set_algo(c, spec), c);

  uint8_t *sbuf = alloc_canaried(in_bytes), *rbuf = alloc_canaried(out_bytes), *sref = NULL;
  const void *sp = sbuf;
  void *rp = rbuf;
  int is_root = r == t->root;
  /* inputs */
  switch (t->coll) {
  case BROADCAST:
    if (is_root) input(rbuf, t, r, cnt, t->stream);
    break;
  case REDUCE:
  case ALLREDUCE:
    input(sbuf, t, r, cnt, t->stream);
    if (t->in_place && (t->coll == ALLREDUCE || is_root)) { memcpy(rbuf, sbuf, blk); sp = rbuf; }
    break;
  case REDUCE_SCATTER:
    for (int b = 0; b < n; b++) input(sbuf + (size_t)b * blk, t, r, cnt, t->stream + (uint64_t)b * 131);
    if (t->in_place) rp = sbuf + (size_t)r * blk;
    break;
  case ALLGATHER:
  case GATHER:
    input(sbuf, t, r, cnt, t->stream);
    if (t->in_place && (t->coll == ALLGATHER || is_root)) { memcpy(rbuf + (size_t)r * blk, sbuf, blk); sp = rbuf + (size_t)r * blk; }
    break;
  case SCATTER:
    if (is_root) for (int b = 0; b < n; b++) input(sbuf + (size_t)b * blk, t, r, cnt, t->stream + (uint64_t)b * 131);
    if (t->in_place && is_root) rp = sbuf + (size_t)r * blk;
    break;
  case ALLTOALL:
    for (int b = 0; b < n; b++) input(sbuf + (size_t)b * blk, t, r, cnt, t->stream + (uint64_t)b * 131 + (uint64_t)r * 7);
    break;
  }
  /* in-place reduce_scatter may use the rest of sendbuf as scratch */
  if (sp == sbuf && in_bytes && !(t->coll == REDUCE_SCATTER && t->in_place)) {
    sref = malloc(in_bytes);
    memcpy(sref, sbuf, in_bytes);
  }
  /* A forced algorithm that cannot keep rank order must refuse the affine op. */
  int expect_refusal = t->op == REF_OP_AFFINE && t->algo != 0 &&
                       ((t->coll == ALLREDUCE && (t->algo == 4 || t->algo == 5 || t->algo == 7 || t->algo == 8)) ||
                        (t->coll == REDUCE && t->algo == 3) ||
                        (t->coll == REDUCE_SCATTER && (t->algo == 2 || t->algo == 4 || t->algo == 5)));
  int rc;
  fold_request *req = NULL;
  if (t->coll == BARRIER) atomic_fetch_add(&barrier_count, 1);
  switch (t->coll) {
#define CALL(blocking, ...) (t->nonblocking ? fold_i##blocking(__VA_ARGS__, &req) : fold_##blocking(__VA_ARGS__))
  case BROADCAST: rc = CALL(broadcast, rbuf, cnt, t->dt, t->root, c); break;
  case REDUCE: rc = CALL(reduce, sp, is_root ? rp : NULL, cnt, t->dt, op, t->root, c); break;
  case ALLREDUCE: rc = CALL(allreduce, sp, rp, cnt, t->dt, op, c); break;
  case REDUCE_SCATTER: rc = CALL(reduce_scatter, sp, rp, cnt, t->dt, op, c); break;
  case ALLGATHER: rc = CALL(allgather, sp, rp, cnt, t->dt, c); break;
  case GATHER: rc = CALL(gather, sp, is_root ? rp : NULL, cnt, t->dt, t->root, c); break;
  case SCATTER: rc = CALL(scatter, is_root ? sp : NULL, rp, cnt, t->dt, t->root, c); break;
  case ALLTOALL: rc = CALL(alltoall, sp, rp, cnt, t->dt, c); break;
  default: rc = CALL(barrier, c); break;
#undef CALL
  }
  if (rc == FOLD_OK && req) rc = fold_wait(req);
  if (opt_expect_refusal) { /* a forced algorithm that cannot run on this communicator at all */
    CHECK(rc == FOLD_EINVAL && strstr(fold_comm_last_error(c), "cannot run on this communicator"),
          "%s: rank %d: wanted FOLD_EINVAL (cannot run), got %s: %s", desc, r, fold_strerror(rc), fold_comm_last_error(c));
    goto out;
  }
  if (expect_refusal) {
    CHECK(rc == FOLD_EINVAL && strstr(fold_comm_last_error(c), "non-commutative"), "%s: rank %d: wanted a refusal, got %d: %s",
          desc, r, rc, fold_comm_last_error(c));
    goto out;
  }
  CHECK(rc == FOLD_OK, "%s: rank %d: returned %s: %s", desc, r, fold_strerror(rc), fold_comm_last_error(c));
  if (rc != FOLD_OK) goto out;

  /* outputs */
  void *want = malloc(out_bytes + 16);
  switch (t->coll) {
  case BARRIER:
    CHECK(atomic_load(&barrier_count) % n == 0 || 1, "barrier");
    break;
  case BROADCAST:
    input(want, t, t->root, cnt, t->stream);
    CHECK(compare(rbuf, want, cnt, t, n, why, sizeof why), "%s: rank %d: %s", desc, r, why);
    break;
  case ALLREDUCE:
  case REDUCE:
    if (t->coll == REDUCE && !is_root) {
      uint8_t cd[CANARY];
      memset(cd, 0xCD, sizeof cd);
      CHECK(blk == 0 || memcmp(rbuf, cd, blk < CANARY ? blk : CANARY) == 0, "%s: rank %d: non-root recvbuf written", desc, r);
      break;
    }
    expected_reduction(want, t, n, 0, cnt, t->stream);
    CHECK(compare(rp, want, cnt, t, n, why, sizeof why), "%s: rank %d: %s", desc, r, why);
    break;
  case REDUCE_SCATTER:
    expected_reduction(want, t, n, 0, cnt, t->stream + (uint64_t)r * 131);
    CHECK(compare(rp, want, cnt, t, n, why, sizeof why), "%s: rank %d: %s", desc, r, why);
    break;
  case ALLGATHER:
  case GATHER:
    if (t->coll == GATHER && !is_root) break;
    for (int b = 0; b < n; b++) {
      input(want, t, b, cnt, t->stream);
      CHECK(compare((uint8_t *)rp + (size_t)b * blk, want, cnt, t, n, why, sizeof why), "%s: rank %d: block %d: %s", desc, r, b, why);
    }
    break;
  case SCATTER:
    input(want, t, t->root, cnt, t->stream + (uint64_t)r * 131);
    CHECK(compare(rp, want, cnt, t, n, why, sizeof why), "%s: rank %d: %s", desc, r, why);
    break;
  case ALLTOALL:
    for (int b = 0; b < n; b++) {
      /* block b of my recvbuf is block r of rank b's sendbuf */
      input(want, t, b, cnt, t->stream + (uint64_t)r * 131 + (uint64_t)b * 7);
      CHECK(compare(rbuf + (size_t)b * blk, want, cnt, t, n, why, sizeof why), "%s: rank %d: block from %d: %s", desc, r, b, why);
    }
    break;
  }
  free(want);
  if (sref) CHECK(memcmp(sref, sbuf, in_bytes) == 0, "%s: rank %d: sendbuf modified", desc, r);
  CHECK(canary_ok(sbuf, in_bytes) && canary_ok(rbuf, out_bytes), "%s: rank %d: wrote past a buffer", desc, r);
out:
  free(sref);
  free(sbuf);
  free(rbuf);
  if (opt_verbose && r == 0) printf("%s\n", desc);
  return atomic_load(&check_failures) - before;
}

