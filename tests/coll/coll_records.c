/* coll_records.c — record types (fold_dtype_create) through every algorithm, MINLOC/MAXLOC pairs, bad inputs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coll/coll.h"
#include "fold.h"

/* Usage: coll_records threads N | procs | sim N | unit
 *
 * The reproducer: a user op over a 12-byte struct used to be passed
 * as FOLD_UINT8 with count = 12 x records, and ring, rabenseifner and shm cut
 * records in half: wrong results with FOLD_OK. Here the struct is a record
 * type, and every algorithm of every collective (forced in turn, read from
 * the library's own tables so that a new algorithm is covered too) must
 * give the serial reference's bytes exactly, or refuse with FOLD_EINVAL
 * where it cannot serve the call (an order-breaking algorithm with a
 * non-commutative op, shm where it cannot run or a record does not fit a
 * slot). The ops mix the fields of a record (products, sums, xor, max), so
 * a record split, shifted or combined piecewise comes out wrong. Counts:
 * 1, 1000, 10007 and 3n+1 records of 12 bytes, and a 5000-byte record
 * (larger than a 4096-byte shm slot, a segment, and the op's stack buffer).
 * Run with FOLD_SEGMENT_BYTES, FOLD_SHM_COLL_BYTES not multiples of 12.
 *   threads N  ranks are threads (inproc)
 *   procs      ranks are processes (foldrun), shm algorithms included
 *   sim N      the simulated network: nonblocking calls, fold_sim_run
 *   unit       bad inputs and the record-type table's limits (one process) */

typedef struct rec {
  int32_t a;
  float b;
  int32_t c;
} rec;
_Static_assert(sizeof(rec) == 12, "the issue's 12-byte record");

enum { BIG_BYTES = 5000, BIG_WORDS = BIG_BYTES / 4 };

static fold_dtype REC, BIG;
static atomic_int fn_wrong_dtype, fn_calls;

/* ---- the ops ------------------------------------------------------------------------
 * Non-commutative: (a, c) is the affine map v -> a*v + c (mod 2^32), the
 * lower rank's applied first; b is the max. Commutative: a sums, c xors, b
 * max. The big record: consecutive word pairs are affine maps (or sums). */

static rec combine(rec lo, rec up, int commutative) {
  rec r;
  uint32_t la = (uint32_t)lo.a, lc = (uint32_t)lo.c, ua = (uint32_t)up.a, uc = (uint32_t)up.c;
  if (commutative) {
    r.a = (int32_t)(la + ua);
    r.c = (int32_t)(lc ^ uc);
  } else {
    r.a = (int32_t)(ua * la);
    r.c = (int32_t)(ua * lc + uc);
  }
  r.b = lo.b > up.b ? lo.b : up.b;
  return r;
}

static void combine_big(uint32_t *out, const uint32_t *lo, const uint32_t *up, int commutative) {
  for (int w = 0; w < BIG_WORDS; w += 2) {
    uint32_t la = lo[w], lc = lo[w + 1], ua = up[w], uc = up[w + 1];
    out[w] = commutative ? la + ua : ua * la;
    out[w + 1] = commutative ? lc + uc : ua * lc + uc;
  }
}

/* MPI_User_function convention: inout[i] = in[i] op inout[i], in = lower ranks. */
static void rec_fn(void *inout, const void *in, size_t count, fold_dtype dtype, void *ctx) {
  int commutative = *(const int *)ctx;
  atomic_fetch_add(&fn_calls, 1);
  if (dtype == REC) {
    rec *io = inout;
    const rec *x = in;
    for (size_t i = 0; i < count; i++) io[i] = combine(x[i], io[i], commutative);
  } else if (dtype == BIG) {
    for (size_t i = 0; i < count; i++) {
      uint32_t *io = (uint32_t *)((char *)inout + i * BIG_BYTES);
      const uint32_t *x = (const uint32_t *)((const char *)in + i * BIG_BYTES);
      combine_big(io, x, io, commutative);
    }
  } else {
    atomic_fetch_add(&fn_wrong_dtype, 1);
  }
}
static int ctx_comm = 1, ctx_noncomm = 0;

/* ---- inputs and the serial reference ------------------------------------------------ */

static uint32_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return (uint32_t)(x ^ (x >> 33));
}

/* Element i of rank r's input (stream s keeps calls apart). */
static void fill_elem(void *p, fold_dtype dt, int r, size_t i, int s) {
  uint64_t k = ((uint64_t)(unsigned)s << 48) ^ ((uint64_t)(unsigned)r << 36) ^ i;
  if (dt == REC) {
    rec x = {(int32_t)(mix(k) | 1), (float)(mix(k + 7) % 4096) / 8.0f - 100.0f, (int32_t)mix(k + 13)};
    memcpy(p, &x, sizeof x);
  } else {
    uint32_t *w = p;
    for (int j = 0; j < BIG_WORDS; j++) w[j] = mix(k * 1315423911u + (uint64_t)j) | (j % 2 == 0);
  }
}

static void fill(char *buf, fold_dtype dt, int r, size_t first, size_t count, int s) {
  size_t es = fold_dtype_size(dt);
  for (size_t i = 0; i < count; i++) fill_elem(buf + i * es, dt, r, first + i, s);
}

/* The reduction of element i over ranks 0..n-1 in rank order. */
static void reduce_ref(void *out, fold_dtype dt, int n, size_t i, int s, int commutative) {
  if (dt == REC) {
    rec acc, x;
    fill_elem(&acc, dt, 0, i, s);
    for (int r = 1; r < n; r++) {
      fill_elem(&x, dt, r, i, s);
      acc = combine(acc, x, commutative);
    }
    memcpy(out, &acc, sizeof acc);
  } else {
    uint32_t acc[BIG_WORDS], x[BIG_WORDS];
    fill_elem(acc, dt, 0, i, s);
    for (int r = 1; r < n; r++) {
      fill_elem(x, dt, r, i, s);
      combine_big(acc, acc, x, commutative);
    }
    memcpy(out, acc, sizeof acc);
  }
}

/* ---- one case ------------------------------------------------------------------------ */

typedef struct tcase {
  fold__coll_kind kind;
  int algo; /* index in fold__algo_tables[kind] */
  size_t count;
  fold_dtype dt;
  int commutative; /* which user op (reductions) */
  int in_place;    /* allreduce only */
  int root;
  int stream;
} tcase;

typedef struct rank_ctx {
  fold_comm *c;
  fold_op op_comm, op_noncomm;
  char *sbuf, *rbuf, *want;
  size_t cap;
  fold_request *req;
  int expect_refusal, rc;
  int ran, refused, shm_ran; /* cases served, refused, and served by a `shm` algorithm with 12-byte records */
} rank_ctx;

static size_t buf_bytes(const tcase *t, int n) { return (t->count + 1) * (size_t)n * fold_dtype_size(t->dt); }

static void ensure(rank_ctx *x, size_t bytes) {
  if (x->cap >= bytes) return;
  free(x->sbuf), free(x->rbuf), free(x->want);
  x->sbuf = malloc(bytes), x->rbuf = malloc(bytes), x->want = malloc(bytes);
  if (!x->sbuf || !x->rbuf || !x->want) abort();
  x->cap = bytes;
}

static int reduces(fold__coll_kind k) {
  return k == FOLD__COLL_ALLREDUCE || k == FOLD__COLL_REDUCE || k == FOLD__COLL_REDUCE_SCATTER;
}

/* Whether the forced algorithm must refuse the call (FOLD_EINVAL). */
static int must_refuse(const rank_ctx *x, const tcase *t) {
  const fold__algo *a = fold__algo_tables[t->kind].algos[t->algo];
  if (a->usable && a->usable(x->c)) return 1;
  if (a->fits && a->fits(x->c, t->kind, fold_dtype_size(t->dt))) return 1;
  return reduces(t->kind) && !t->commutative && !a->noncommutative_ok;
}

/* Fill the inputs, force the algorithm, start the nonblocking call. */
static void start(rank_ctx *x, const tcase *t) {
  int n = fold_comm_size(x->c), me = fold_comm_rank(x->c);
  size_t es = fold_dtype_size(t->dt), cnt = t->count, blk = cnt * es;
  ensure(x, buf_bytes(t, n));
  memset(x->rbuf, 0xA5, buf_bytes(t, n));
  char spec[96];
  snprintf(spec, sizeof spec, "%s=%s", fold__algo_tables[t->kind].coll_name,
           fold__algo_tables[t->kind].algos[t->algo]->name);
  CHECK_OK(fold_comm_set_algo(x->c, spec), x->c);
  x->expect_refusal = must_refuse(x, t);
  fold_op op = t->commutative ? x->op_comm : x->op_noncomm;
  x->req = NULL;
  switch (t->kind) {
  case FOLD__COLL_ALLREDUCE:
    fill(t->in_place ? x->rbuf : x->sbuf, t->dt, me, 0, cnt, t->stream);
    x->rc = fold_iallreduce(t->in_place ? x->rbuf : x->sbuf, x->rbuf, cnt, t->dt, op, x->c, &x->req);
    break;
  case FOLD__COLL_REDUCE:
    fill(x->sbuf, t->dt, me, 0, cnt, t->stream);
    x->rc = fold_ireduce(x->sbuf, x->rbuf, cnt, t->dt, op, t->root, x->c, &x->req);
    break;
  case FOLD__COLL_REDUCE_SCATTER:
    fill(x->sbuf, t->dt, me, 0, cnt * (size_t)n, t->stream);
    x->rc = fold_ireduce_scatter(x->sbuf, x->rbuf, cnt, t->dt, op, x->c, &x->req);
    break;
  case FOLD__COLL_BROADCAST:
    if (me == t->root) fill(x->rbuf, t->dt, me, 0, cnt, t->stream);
    x->rc = fold_ibroadcast(x->rbuf, cnt, t->dt, t->root, x->c, &x->req);
    break;
  case FOLD__COLL_ALLGATHER:
    fill(x->sbuf, t->dt, me, 0, cnt, t->stream);
    x->rc = fold_iallgather(x->sbuf, x->rbuf, cnt, t->dt, x->c, &x->req);
    break;
  case FOLD__COLL_GATHER:
    fill(x->sbuf, t->dt, me, 0, cnt, t->stream);
    x->rc = fold_igather(x->sbuf, x->rbuf, cnt, t->dt, t->root, x->c, &x->req);
    break;
  case FOLD__COLL_SCATTER:
    if (me == t->root) fill(x->sbuf, t->dt, me, 0, cnt * (size_t)n, t->stream);
    x->rc = fold_iscatter(x->sbuf, x->rbuf, cnt, t->dt, t->root, x->c, &x->req);
    break;
  case FOLD__COLL_ALLTOALL:
    /* block p of rank r's sendbuf: elements p*cnt.. of r's stream */
    fill(x->sbuf, t->dt, me, 0, cnt * (size_t)n, t->stream);
    x->rc = fold_ialltoall(x->sbuf, x->rbuf, cnt, t->dt, x->c, &x->req);
    break;
  default: x->rc = FOLD_EINVAL; break;
  }
  (void)blk;
}

static void describe(const tcase *t, int n, char *buf, size_t cap) {
  snprintf(buf, cap, "%s/%s n=%d count=%zu %s%s%s root=%d", fold__algo_tables[t->kind].coll_name,
           fold__algo_tables[t->kind].algos[t->algo]->name, n, t->count, fold_dtype_name(t->dt),
           reduces(t->kind) ? (t->commutative ? " commutative" : " non-commutative") : "", t->in_place ? " in-place" : "",
           t->root);
}

/* After the call completed (x->rc its status): compare with the reference. */
static void check(rank_ctx *x, const tcase *t) {
  int n = fold_comm_size(x->c), me = fold_comm_rank(x->c);
  char d[160];
  describe(t, n, d, sizeof d);
  x->refused += x->expect_refusal;
  x->ran += !x->expect_refusal;
  x->shm_ran += !x->expect_refusal && t->dt == REC && !strcmp(fold__algo_tables[t->kind].algos[t->algo]->name, "shm");
  if (x->expect_refusal) {
    CHECK(x->rc == FOLD_EINVAL, "%s: rank %d: wanted FOLD_EINVAL (cannot serve), got %d (%s)", d, me, x->rc,
          fold_strerror(x->rc));
    return;
  }
  CHECK(x->rc == FOLD_OK, "%s: rank %d: %s: %s", d, me, fold_strerror(x->rc), fold_comm_last_error(x->c));
  if (x->rc != FOLD_OK) return;
  size_t es = fold_dtype_size(t->dt), cnt = t->count, nout = 0;
  char *w = x->want;
  switch (t->kind) {
  case FOLD__COLL_ALLREDUCE:
    for (size_t i = 0; i < cnt; i++) reduce_ref(w + i * es, t->dt, n, i, t->stream, t->commutative);
    nout = cnt;
    break;
  case FOLD__COLL_REDUCE:
    if (me != t->root) return;
    for (size_t i = 0; i < cnt; i++) reduce_ref(w + i * es, t->dt, n, i, t->stream, t->commutative);
    nout = cnt;
    break;
  case FOLD__COLL_REDUCE_SCATTER:
    for (size_t i = 0; i < cnt; i++)
      reduce_ref(w + i * es, t->dt, n, (size_t)me * cnt + i, t->stream, t->commutative);
    nout = cnt;
    break;
  case FOLD__COLL_BROADCAST:
    fill(w, t->dt, t->root, 0, cnt, t->stream);
    nout = cnt;
    break;
  case FOLD__COLL_ALLGATHER:
  case FOLD__COLL_GATHER:
    if (t->kind == FOLD__COLL_GATHER && me != t->root) return;
    for (int p = 0; p < n; p++) fill(w + (size_t)p * cnt * es, t->dt, p, 0, cnt, t->stream);
    nout = cnt * (size_t)n;
    break;
  case FOLD__COLL_SCATTER:
    fill(w, t->dt, t->root, (size_t)me * cnt, cnt, t->stream);
    nout = cnt;
    break;
  case FOLD__COLL_ALLTOALL:
    for (int p = 0; p < n; p++) fill(w + (size_t)p * cnt * es, t->dt, p, (size_t)me * cnt, cnt, t->stream);
    nout = cnt * (size_t)n;
    break;
  default: break;
  }
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < nout; i++)
    if (memcmp(x->rbuf + i * es, w + i * es, es) != 0 && bad++ == 0) first = i;
  CHECK(bad == 0, "%s: rank %d: %zu of %zu records wrong, first #%zu", d, me, bad, nout, first);
}

/* ---- the case list -------------------------------------------------------------------- */

static const fold__coll_kind kinds[] = {FOLD__COLL_ALLREDUCE, FOLD__COLL_REDUCE,   FOLD__COLL_REDUCE_SCATTER,
                                        FOLD__COLL_BROADCAST, FOLD__COLL_ALLGATHER, FOLD__COLL_GATHER,
                                        FOLD__COLL_SCATTER,   FOLD__COLL_ALLTOALL};

/* Every case for n ranks; returns how many (cases may be NULL to count). */
static int plan(tcase *cases, int n) {
  int k = 0, stream = 0;
  size_t rec_counts[] = {1, 1000, 10007, (size_t)(3 * n + 1)}, big_counts[] = {1, (size_t)(n + 2)};
  for (size_t ki = 0; ki < sizeof kinds / sizeof *kinds; ki++) {
    fold__coll_kind kind = kinds[ki];
    for (int a = 0; fold__algo_tables[kind].algos[a]; a++) {
      for (int big = 0; big < 2; big++) {
        size_t *counts = big ? big_counts : rec_counts;
        int ncounts = big ? 2 : 4;
        for (int ci = 0; ci < ncounts; ci++) {
          for (int comm = reduces(kind) ? 0 : 1; comm < 2; comm++) {
            tcase t = {kind, a, counts[ci], big ? BIG : REC, comm, 0, (int)((counts[ci] + (size_t)a) % (size_t)n), stream++};
            if (cases) cases[k] = t;
            k++;
            if (kind == FOLD__COLL_ALLREDUCE && ci == 2 && !big) { /* in place */
              t.in_place = 1;
              t.stream = stream++;
              if (cases) cases[k] = t;
              k++;
            }
          }
        }
      }
    }
  }
  return k;
}

static void make_ops(rank_ctx *x) {
  CHECK_OK(fold_op_create(&x->op_comm, rec_fn, &ctx_comm, 1, x->c), x->c);
  CHECK_OK(fold_op_create(&x->op_noncomm, rec_fn, &ctx_noncomm, 0, x->c), x->c);
}

/* ---- MINLOC / MAXLOC ------------------------------------------------------------------ */

/* Values from a set of three, so that many ranks tie; index = rank * 100000 + i. */
static double pair_value(int r, size_t i) { return (double)((r * 7 + (int)i) % 3) - 1.0; }

static void pair_set(void *buf, fold_dtype dt, size_t i, double v, int64_t idx) {
  switch (dt) {
  case FOLD_FLOAT32_INT32: ((fold_float32_int32 *)buf)[i] = (fold_float32_int32){(float)v, (int32_t)idx}; break;
  case FOLD_FLOAT64_INT32: {
    fold_float64_int32 p;
    memset(&p, 0, sizeof p); /* the padding too: results are compared as bytes */
    p.value = v, p.index = (int32_t)idx;
    memcpy((fold_float64_int32 *)buf + i, &p, sizeof p);
    break;
  }
  case FOLD_INT32_INT32: ((fold_int32_int32 *)buf)[i] = (fold_int32_int32){(int32_t)v, (int32_t)idx}; break;
  default: ((fold_int64_int64 *)buf)[i] = (fold_int64_int64){(int64_t)v, idx}; break;
  }
}

/* allreduce over every algorithm, reduce (binomial, the shm path), with MINLOC and MAXLOC, every pair type. */
static void pair_tests(rank_ctx *x) {
  static const fold_dtype pts[] = {FOLD_FLOAT32_INT32, FOLD_FLOAT64_INT32, FOLD_INT32_INT32, FOLD_INT64_INT64};
  int n = fold_comm_size(x->c), me = fold_comm_rank(x->c);
  size_t cnt = 1001;
  for (int pi = 0; pi < 4; pi++)
    for (int loc = 0; loc < 2; loc++)
      for (int a = 0; fold__algo_tables[FOLD__COLL_ALLREDUCE].algos[a]; a++) {
        fold_dtype dt = pts[pi];
        fold_op op = loc ? FOLD_MAXLOC : FOLD_MINLOC;
        const fold__algo *al = fold__algo_tables[FOLD__COLL_ALLREDUCE].algos[a];
        ensure(x, cnt * 16);
        for (size_t i = 0; i < cnt; i++) pair_set(x->sbuf, dt, i, pair_value(me, i), (int64_t)me * 100000 + (int64_t)i);
        for (size_t i = 0; i < cnt; i++) { /* the reference: best value, lowest rank among the ties */
          int best = 0;
          for (int r = 1; r < n; r++)
            if (loc ? pair_value(r, i) > pair_value(best, i) : pair_value(r, i) < pair_value(best, i)) best = r;
          pair_set(x->want, dt, i, pair_value(best, i), (int64_t)best * 100000 + (int64_t)i);
        }
        memset(x->rbuf, 0x5A, cnt * 16);
        char spec[64];
        snprintf(spec, sizeof spec, "allreduce=%s", al->name);
        CHECK_OK(fold_comm_set_algo(x->c, spec), x->c);
        int refuse = al->usable && al->usable(x->c);
        int rc = fold_allreduce(x->sbuf, x->rbuf, cnt, dt, op, x->c);
        if (refuse) {
          CHECK(rc == FOLD_EINVAL, "pairs %s %s %s: wanted a refusal, got %d", al->name, fold_dtype_name(dt),
                loc ? "maxloc" : "minloc", rc);
          continue;
        }
        CHECK(rc == FOLD_OK, "pairs %s %s: %s", al->name, fold_dtype_name(dt), fold_comm_last_error(x->c));
        CHECK(memcmp(x->rbuf, x->want, cnt * fold_dtype_size(dt)) == 0, "pairs allreduce=%s %s %s n=%d: wrong result",
              al->name, fold_dtype_name(dt), loc ? "maxloc" : "minloc", n);
      }
  CHECK_OK(fold_comm_set_algo(x->c, "allreduce=auto"), x->c);
}

/* ---- point-to-point -------------------------------------------------------------------- */

/* Each rank sends records to its right neighbour: a few (eager) and 10007
 * (over 64 KiB: rendezvous), and the 5000-byte record. */
static void p2p_tests(rank_ctx *x) {
  int n = fold_comm_size(x->c), me = fold_comm_rank(x->c);
  if (n < 2) return;
  int right = (me + 1) % n, left = (me + n - 1) % n;
  size_t counts[] = {5, 10007};
  for (int big = 0; big < 2; big++)
    for (int ci = 0; ci < 2; ci++) {
      fold_dtype dt = big ? BIG : REC;
      size_t cnt = big ? (size_t)(ci ? 30 : 1) : counts[ci], es = fold_dtype_size(dt);
      ensure(x, cnt * es);
      fill(x->sbuf, dt, me, 0, cnt, 900 + ci);
      fill(x->want, dt, left, 0, cnt, 900 + ci);
      fold_request *rr = NULL, *sr = NULL;
      CHECK_OK(fold_irecv(x->rbuf, cnt, dt, left, 7, x->c, &rr), x->c);
      CHECK_OK(fold_isend(x->sbuf, cnt, dt, right, 7, x->c, &sr), x->c);
      if (rr) CHECK_OK(fold_wait(rr), x->c);
      if (sr) CHECK_OK(fold_wait(sr), x->c);
      CHECK(memcmp(x->rbuf, x->want, cnt * es) == 0, "p2p %zu x %s from rank %d: wrong bytes", cnt,
            fold_dtype_name(dt), left);
    }
}

/* ---- drivers ------------------------------------------------------------------------ */

static void run_all(rank_ctx *x) {
  int n = fold_comm_size(x->c);
  int nc = plan(NULL, n);
  tcase *cases = malloc((size_t)nc * sizeof *cases);
  plan(cases, n);
  for (int i = 0; i < nc && atomic_load(&check_failures) < 20; i++) {
    start(x, &cases[i]);
    if (x->rc == FOLD_OK && x->req) x->rc = fold_wait(x->req);
    check(x, &cases[i]);
  }
  free(cases);
  pair_tests(x);
  p2p_tests(x);
}

static void *thread_main(void *arg) {
  rank_ctx *x = arg;
  fold_dtype again;
  CHECK_OK(fold_dtype_create(sizeof(rec), &again), NULL); /* any thread, any order: the same value */
  CHECK(again == REC, "record type of 12 bytes created again: %d, first %d", (int)again, (int)REC);
  run_all(x);
  return NULL;
}

static int run_threads(int n) {
  fold_comm *cs[64];
  rank_ctx xs[64] = {{0}};
  pthread_t th[64];
  CHECK_OK(fold_comm_init_threads(n, cs), NULL);
  for (int r = 0; r < n; r++) {
    xs[r].c = cs[r];
    make_ops(&xs[r]);
  }
  for (int r = 0; r < n; r++) pthread_create(&th[r], NULL, thread_main, &xs[r]);
  for (int r = 0; r < n; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < n; r++) {
    fold_comm_destroy(cs[r]);
    free(xs[r].sbuf), free(xs[r].rbuf), free(xs[r].want);
  }
  printf("threads n=%d: %d cases, %d served, %d refused (rank 0)\n", n, plan(NULL, n), xs[0].ran, xs[0].refused);
  return 0;
}

static int run_procs(void) {
  rank_ctx x = {0};
  if (fold_init(&x.c) != FOLD_OK) {
    fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
    return 2;
  }
  make_ops(&x);
  run_all(&x);
  CHECK_OK(fold_comm_set_algo(x.c, "barrier=auto"), x.c);
  CHECK_OK(fold_barrier(x.c), x.c);
  /* over shm, the shm algorithms must have served the 12-byte records (and refused only the 5000-byte ones) */
  if (!strcmp(fold_comm_transport(x.c), "shm")) CHECK(x.shm_ran >= 8 * 4, "shm algorithms served %d record cases", x.shm_ran);
  if (fold_comm_rank(x.c) == 0)
    printf("procs n=%d (%s): %d cases, %d served (%d by shm), %d refused\n", fold_comm_size(x.c),
           fold_comm_transport(x.c), plan(NULL, fold_comm_size(x.c)), x.ran, x.shm_ran, x.refused);
  fold_comm_destroy(x.c);
  free(x.sbuf), free(x.rbuf), free(x.want);
  return 0;
}

static int run_sim(int n) {
  fold_sim *sim;
  fold_comm *cs[64];
  rank_ctx xs[64] = {{0}};
  CHECK_OK(fold_sim_create(n, NULL, &sim, cs), NULL);
  for (int r = 0; r < n; r++) {
    xs[r].c = cs[r];
    make_ops(&xs[r]);
  }
  int nc = plan(NULL, n);
  tcase *cases = malloc((size_t)nc * sizeof *cases);
  plan(cases, n);
  for (int i = 0; i < nc && atomic_load(&check_failures) < 20; i++) {
    for (int r = 0; r < n; r++) start(&xs[r], &cases[i]);
    CHECK_OK(fold_sim_run(sim), NULL);
    for (int r = 0; r < n; r++) {
      if (xs[r].rc == FOLD_OK && xs[r].req) xs[r].rc = fold_wait(xs[r].req);
      check(&xs[r], &cases[i]);
    }
  }
  free(cases);
  fold_sim_destroy(sim);
  for (int r = 0; r < n; r++) free(xs[r].sbuf), free(xs[r].rbuf), free(xs[r].want);
  printf("sim n=%d: %d cases\n", n, nc);
  return 0;
}

/* ---- bad inputs ------------------------------------------------------------------------- */

static int run_unit(void) {
  fold_dtype d = FOLD_INT8;
  CHECK_RC(fold_dtype_create(0, &d), FOLD_EINVAL, NULL);
  CHECK(strstr(fold_comm_last_error(NULL), "0 bytes") != NULL, "message: %s", fold_comm_last_error(NULL));
  CHECK_RC(fold_dtype_create(12, NULL), FOLD_EINVAL, NULL);
  CHECK_RC(fold_dtype_create(FOLD_DTYPE_RECORD_MAX_BYTES + 1, &d), FOLD_EINVAL, NULL);
  CHECK_RC(fold_dtype_create(SIZE_MAX, &d), FOLD_EINVAL, NULL);
  CHECK(d == FOLD_INT8, "a failed create left *dtype alone");
  CHECK_OK(fold_dtype_create(FOLD_DTYPE_RECORD_MAX_BYTES, &d), NULL);
  CHECK(fold_dtype_size(d) == FOLD_DTYPE_RECORD_MAX_BYTES, "the largest record");
  fold_dtype r12, r12b;
  CHECK_OK(fold_dtype_create(12, &r12), NULL);
  CHECK_OK(fold_dtype_create(12, &r12b), NULL);
  CHECK(r12 == r12b && (int)r12 >= FOLD_DTYPE_COUNT, "same size, same value: %d %d", (int)r12, (int)r12b);
  CHECK(fold_dtype_size(r12) == 12 && strcmp(fold_dtype_name(r12), "record12") == 0, "record12: %zu %s",
        fold_dtype_size(r12), fold_dtype_name(r12));
  /* a record value never created is invalid, like any stray integer */
  fold_dtype r13 = (fold_dtype)((int)r12 + 1);
  CHECK(fold_dtype_size(r13) == 0 && strcmp(fold_dtype_name(r13), "invalid") == 0, "uncreated record 13 is invalid");
  /* pair types */
  CHECK(fold_dtype_size(FOLD_FLOAT64_INT32) == 16 && strcmp(fold_dtype_name(FOLD_INT64_INT64), "int64_int64") == 0,
        "pair sizes and names");

  fold_comm *cs[1];
  CHECK_OK(fold_comm_init_threads(1, cs), NULL);
  fold_comm *c = cs[0];
  rec s[4] = {{0}}, r[4];
  CHECK_RC(fold_allreduce(s, r, 4, r12, FOLD_SUM, c), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "record12") && strstr(fold_comm_last_error(c), "user op"), "message: %s",
        fold_comm_last_error(c));
  CHECK_RC(fold_reduce_scatter(s, r, 1, r12, FOLD_MAX, c), FOLD_EINVAL, c);
  CHECK_RC(fold_allreduce(s, r, 4, r12, FOLD_MINLOC, c), FOLD_EINVAL, c);
  CHECK_RC(fold_reduce(s, r, 4, FOLD_INT32, FOLD_MINLOC, 0, c), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "pair type") != NULL, "message: %s", fold_comm_last_error(c));
  CHECK_RC(fold_allreduce(s, r, 4, FOLD_FLOAT32, FOLD_MAXLOC, c), FOLD_EINVAL, c);
  CHECK_RC(fold_allreduce(s, r, 2, FOLD_INT32_INT32, FOLD_SUM, c), FOLD_EINVAL, c);
  CHECK_RC(fold_allreduce(s, r, 2, FOLD_FLOAT32_INT32, FOLD_MAX, c), FOLD_EINVAL, c);
  CHECK_RC(fold_allreduce(s, r, 2, FOLD_INT64_INT64, FOLD_BAND, c), FOLD_EINVAL, c);
  CHECK_RC(fold_allreduce(s, r, 4, r13, FOLD_SUM, c), FOLD_EINVAL, c);
  CHECK_RC(fold_send(s, 1, r13, 0, 0, c), FOLD_EINVAL, c);
  CHECK_RC(fold_broadcast(s, 1, r13, 0, c), FOLD_EINVAL, c);
  /* a user op over a record type is what serves records */
  fold_op u;
  CHECK_OK(fold_op_create(&u, rec_fn, &ctx_comm, 1, c), c);
  CHECK_OK(fold_allreduce(s, r, 4, r12, u, c), c);
  CHECK(memcmp(s, r, sizeof s) == 0, "one rank: the result is the input");
  /* moving records needs no op */
  CHECK_OK(fold_broadcast(s, 4, r12, 0, c), c);
  fold_comm_destroy(c);

  /* the table of sizes fills up at FOLD_DTYPE_RECORD_MAX_TYPES, then refuses new sizes but keeps the old */
  int made = 0, rc = FOLD_OK;
  for (size_t b = 100000; b < 100000 + 2 * FOLD_DTYPE_RECORD_MAX_TYPES && rc == FOLD_OK; b++)
    if ((rc = fold_dtype_create(b, &d)) == FOLD_OK) made++;
  CHECK(rc == FOLD_EINVAL && strstr(fold_comm_last_error(NULL), "limit"), "table full: %d after %d: %s", rc, made,
        fold_comm_last_error(NULL));
  CHECK(made + 2 == FOLD_DTYPE_RECORD_MAX_TYPES, "%d made besides 12 and 2^30, limit %d", made,
        FOLD_DTYPE_RECORD_MAX_TYPES);
  CHECK_OK(fold_dtype_create(12, &r12b), NULL);
  CHECK(r12b == r12 && fold_dtype_size((fold_dtype)((int)r12 + 100000 - 12)) == 100000, "old sizes survive");
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "unit";
  if (strcmp(mode, "unit") == 0) {
    run_unit();
    return check_report("coll_records unit");
  }
  CHECK_OK(fold_dtype_create(sizeof(rec), &REC), NULL);
  CHECK_OK(fold_dtype_create(BIG_BYTES, &BIG), NULL);
  int n = argc > 2 ? atoi(argv[2]) : 0;
  if (strcmp(mode, "threads") == 0 && n >= 1 && n <= 64) run_threads(n);
  else if (strcmp(mode, "sim") == 0 && n >= 1 && n <= 64) run_sim(n);
  else if (strcmp(mode, "procs") == 0) {
    if (run_procs() == 2) return 2;
  } else {
    fprintf(stderr, "usage: coll_records threads N | procs | sim N | unit\n");
    return 2;
  }
  CHECK(atomic_load(&fn_wrong_dtype) == 0, "the user op was called with another dtype %d times",
        atomic_load(&fn_wrong_dtype));
  CHECK(atomic_load(&fn_calls) > 0, "the user op was never called");
  char name[64];
  snprintf(name, sizeof name, "coll_records %s %d", mode, n);
  return check_report(name);
}
