/* coll_opts.c — per-call options (fold_coll_opts): algorithm, timeout and segment size for one call, checked on threads. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fold.h"

/* Every scenario runs N ranks as threads (fold_comm_init_threads) on a
 * fresh world, each rank calling fn(comm, arg). What is checked:
 *  - every collective, blocking and nonblocking, with opts.algo naming each
 *    of its algorithms that run on threads: exact int32 results;
 *  - opts.algo is what runs: ranks forcing other algorithms through opts
 *    (or one rank through opts, the others through fold_comm_set_algo) get
 *    FOLD_EMISMATCH naming both; "auto" overrides the communicator's forced
 *    choice; the communicator's choice is unchanged after an opts call;
 *  - bad options are FOLD_EINVAL on the calling rank, naming what is wrong,
 *    and leave the communicator usable;
 *  - opts.timeout bounds the wait (FOLD_TIMEOUT stays 300 s), blocking and
 *    through fold_wait of the nonblocking twin, and the message says which
 *    limit ran out;
 *  - opts.segment_bytes runs many segments with exact results, and ranks
 *    with different segment sizes get FOLD_EMISMATCH naming both. */

#define N 4
#define CNT 1000 /* elements per rank or per block */

typedef void (*rank_fn)(fold_comm *c, void *arg);
typedef struct {
  fold_comm *c;
  rank_fn fn;
  void *arg;
} thread_arg;

static void *thread_main(void *p) {
  thread_arg *t = p;
  t->fn(t->c, t->arg);
  return NULL;
}

static void run_world(int n, rank_fn fn, void *arg) {
  fold_comm *comms[N];
  CHECK_OK(fold_comm_init_threads(n, comms), NULL);
  pthread_t th[N];
  thread_arg a[N];
  for (int r = 0; r < n; r++) {
    a[r] = (thread_arg){comms[r], fn, arg};
    pthread_create(&th[r], NULL, thread_main, &a[r]);
  }
  for (int r = 0; r < n; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < n; r++) fold_comm_destroy(comms[r]);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- every collective with every algorithm, through opts ---- */

enum { C_BROADCAST, C_REDUCE, C_ALLREDUCE, C_REDUCE_SCATTER, C_ALLGATHER, C_GATHER, C_SCATTER, C_ALLTOALL, C_BARRIER };
static const char *coll_names[] = {"broadcast", "reduce", "allreduce", "reduce_scatter", "allgather",
                                   "gather", "scatter", "alltoall", "barrier"};
/* The algorithms that run on threads (shm needs processes: tested below as an error). */
static const char *algos[][10] = {
    [C_BROADCAST] = {"binomial", "scatter_allgather", "pipeline", NULL},
    [C_REDUCE] = {"binomial", "rabenseifner", NULL},
    [C_ALLREDUCE] = {"reduce_bcast", "recursive_doubling", "rabenseifner", "ring", "ring_segmented", "direct",
                     "ring_skip", NULL},
    [C_REDUCE_SCATTER] = {"recursive_halving", "ring", "pairwise", "ring_skip", NULL},
    [C_ALLGATHER] = {"recursive_doubling", "bruck", "ring", NULL},
    [C_GATHER] = {"binomial", NULL},
    [C_SCATTER] = {"binomial", NULL},
    [C_ALLTOALL] = {"pairwise", "bruck", NULL},
    [C_BARRIER] = {"dissemination", NULL},
};

static int32_t val(int r, size_t i) { return (int32_t)(1000 * r + (int)i + 1); }

typedef struct {
  int coll;
  const char *algo;
  int nonblocking;
  size_t seg;
} call_case;

/* Start (and finish) coll on c with opts; FOLD_OK or the error. */
static int call(fold_comm *c, int coll, const int32_t *in, int32_t *out, size_t cnt, const fold_coll_opts *o,
                int nonblocking) {
  int root = 1 % fold_comm_size(c), rc;
  fold_request *req = NULL;
  fold_request **rq = nonblocking ? &req : NULL;
#define GO(blocking_call, nonblocking_call) rc = nonblocking ? (nonblocking_call) : (blocking_call)
  switch (coll) {
  case C_BROADCAST:
    if (fold_comm_rank(c) == root) memcpy(out, in, cnt * sizeof *in);
    GO(fold_broadcast_opts(out, cnt, FOLD_INT32, root, c, o), fold_ibroadcast_opts(out, cnt, FOLD_INT32, root, c, o, rq));
    break;
  case C_REDUCE:
    GO(fold_reduce_opts(in, out, cnt, FOLD_INT32, FOLD_SUM, root, c, o),
       fold_ireduce_opts(in, out, cnt, FOLD_INT32, FOLD_SUM, root, c, o, rq));
    break;
  case C_ALLREDUCE:
    GO(fold_allreduce_opts(in, out, cnt, FOLD_INT32, FOLD_SUM, c, o),
       fold_iallreduce_opts(in, out, cnt, FOLD_INT32, FOLD_SUM, c, o, rq));
    break;
  case C_REDUCE_SCATTER:
    GO(fold_reduce_scatter_opts(in, out, cnt, FOLD_INT32, FOLD_SUM, c, o),
       fold_ireduce_scatter_opts(in, out, cnt, FOLD_INT32, FOLD_SUM, c, o, rq));
    break;
  case C_ALLGATHER:
    GO(fold_allgather_opts(in, out, cnt, FOLD_INT32, c, o), fold_iallgather_opts(in, out, cnt, FOLD_INT32, c, o, rq));
    break;
  case C_GATHER:
    GO(fold_gather_opts(in, out, cnt, FOLD_INT32, root, c, o),
       fold_igather_opts(in, out, cnt, FOLD_INT32, root, c, o, rq));
    break;
  case C_SCATTER:
    GO(fold_scatter_opts(in, out, cnt, FOLD_INT32, root, c, o),
       fold_iscatter_opts(in, out, cnt, FOLD_INT32, root, c, o, rq));
    break;
  case C_ALLTOALL:
    GO(fold_alltoall_opts(in, out, cnt, FOLD_INT32, c, o), fold_ialltoall_opts(in, out, cnt, FOLD_INT32, c, o, rq));
    break;
  default: GO(fold_barrier_opts(c, o), fold_ibarrier_opts(c, o, rq)); break;
  }
#undef GO
  if (rc == FOLD_OK && req) rc = fold_wait(req);
  return rc;
}

/* The exact result rank me must hold after coll (inputs: block p of rank r
 * is val(r, p*cnt + i); the root is 1). Returns the elements to compare. */
static size_t expect(int coll, int me, int n, size_t cnt, int32_t *want) {
  int root = 1 % n;
  switch (coll) {
  case C_BROADCAST:
    for (size_t i = 0; i < cnt; i++) want[i] = val(root, i);
    return cnt;
  case C_REDUCE:
  case C_ALLREDUCE:
    if (coll == C_REDUCE && me != root) return 0;
    for (size_t i = 0; i < cnt; i++) {
      want[i] = 0;
      for (int r = 0; r < n; r++) want[i] += val(r, i);
    }
    return cnt;
  case C_REDUCE_SCATTER:
    for (size_t i = 0; i < cnt; i++) {
      want[i] = 0;
      for (int r = 0; r < n; r++) want[i] += val(r, (size_t)me * cnt + i);
    }
    return cnt;
  case C_ALLGATHER:
  case C_GATHER:
    if (coll == C_GATHER && me != root) return 0;
    for (int p = 0; p < n; p++)
      for (size_t i = 0; i < cnt; i++) want[(size_t)p * cnt + i] = val(p, i);
    return (size_t)n * cnt;
  case C_SCATTER:
    for (size_t i = 0; i < cnt; i++) want[i] = val(root, (size_t)me * cnt + i);
    return cnt;
  case C_ALLTOALL:
    for (int p = 0; p < n; p++)
      for (size_t i = 0; i < cnt; i++) want[(size_t)p * cnt + i] = val(p, (size_t)me * cnt + i);
    return (size_t)n * cnt;
  default: return 0;
  }
}

static void rank_case(fold_comm *c, void *arg) {
  const call_case *k = arg;
  int me = fold_comm_rank(c), n = fold_comm_size(c);
  size_t all = (size_t)n * CNT;
  int32_t *in = malloc(all * sizeof *in), *out = malloc(all * sizeof *out), *want = malloc(all * sizeof *want);
  for (size_t i = 0; i < all; i++) {
    in[i] = val(me, i);
    out[i] = -7;
  }
  fold_coll_opts o = FOLD_COLL_OPTS_INIT;
  o.algo = k->algo;
  o.segment_bytes = k->seg;
  int rc = call(c, k->coll, in, out, CNT, &o, k->nonblocking);
  CHECK(rc == FOLD_OK, "%s algo=%s%s rank %d: %s", coll_names[k->coll], k->algo, k->nonblocking ? " (i)" : "", me,
        fold_comm_last_error(c));
  size_t m = expect(k->coll, me, n, CNT, want);
  for (size_t i = 0; rc == FOLD_OK && i < m; i++)
    if (out[i] != want[i]) {
      CHECK(0, "%s algo=%s%s rank %d: element %zu is %d, want %d", coll_names[k->coll], k->algo,
            k->nonblocking ? " (i)" : "", me, i, out[i], want[i]);
      break;
    }
  free(in);
  free(out);
  free(want);
}

static void test_every_algorithm(void) {
  int ran = 0;
  for (int coll = 0; coll <= C_BARRIER; coll++)
    for (int a = 0; algos[coll][a]; a++)
      for (int nb = 0; nb < 2; nb++)
        for (int n = 3; n <= N; n++) {
          call_case k = {coll, algos[coll][a], nb, 0};
          run_world(n, rank_case, &k);
          ran++;
        }
  CHECK(ran == 2 * 2 * 24, "ran %d cases", ran);
}

/* ---- the algorithm in opts is the one that runs ---- */

typedef struct {
  const char *comm_spec;     /* fold_comm_set_algo on every rank first, or NULL */
  const char *algo[N];       /* each rank's opts.algo (NULL: plain call) */
  size_t seg[N];             /* each rank's opts.segment_bytes */
  int want;                  /* FOLD_OK or FOLD_EMISMATCH on every rank */
  const char *names[2];      /* a mismatch message names both */
  int then_plain_ok;         /* after an OK call, a plain call of every rank works (the comm's choice unchanged) */
} pick_case;

static void rank_pick(fold_comm *c, void *arg) {
  const pick_case *k = arg;
  int me = fold_comm_rank(c), n = fold_comm_size(c);
  if (k->comm_spec) CHECK_OK(fold_comm_set_algo(c, k->comm_spec), c);
  int32_t in[64], out[64];
  for (int i = 0; i < 64; i++) in[i] = val(me, (size_t)i);
  fold_coll_opts o = FOLD_COLL_OPTS_INIT;
  o.algo = k->algo[me];
  o.segment_bytes = k->seg[me];
  double t0 = now_s();
  int rc = k->algo[me] || k->seg[me] ? fold_allreduce_opts(in, out, 64, FOLD_INT32, FOLD_SUM, c, &o)
                                     : fold_allreduce(in, out, 64, FOLD_INT32, FOLD_SUM, c);
  double dt = now_s() - t0;
  const char *err = fold_comm_last_error(c);
  CHECK(rc == k->want, "rank %d: got %d (%s), want %d: %s", me, rc, fold_strerror(rc), k->want, err);
  if (k->want == FOLD_EMISMATCH) {
    CHECK(dt < 60, "rank %d: the mismatch took %.1f s (a timeout, not a report?)", me, dt);
    for (int i = 0; i < 2; i++)
      CHECK(k->names[i] == NULL || strstr(err, k->names[i]), "rank %d: \"%s\" does not name %s", me, err, k->names[i]);
  } else if (rc == FOLD_OK) {
    for (int i = 0; i < 64; i++) {
      int32_t s = 0;
      for (int r = 0; r < n; r++) s += val(r, (size_t)i);
      if (out[i] != s) {
        CHECK(0, "rank %d: element %d is %d, want %d", me, i, out[i], s);
        break;
      }
    }
    if (k->then_plain_ok) CHECK_OK(fold_allreduce(in, out, 64, FOLD_INT32, FOLD_SUM, c), c);
  }
}

static void test_algorithm_is_used(void) {
  pick_case cases[] = {
      /* opts on one rank against opts on the others */
      {NULL, {"direct", "ring", "ring", "ring"}, {0}, FOLD_EMISMATCH, {"direct", "ring"}, 0},
      /* opts on one rank against the communicator's forced choice on the others */
      {"allreduce=ring", {"recursive_doubling", NULL, NULL, NULL}, {0}, FOLD_EMISMATCH, {"recursive_doubling", "ring"}, 0},
      /* the same algorithm through opts and through the communicator: one call */
      {"allreduce=ring", {"ring", NULL, NULL, NULL}, {0}, FOLD_OK, {NULL, NULL}, 1},
      /* every rank's opts override the communicator's choice, which stays for the next (plain) call */
      {"allreduce=ring_skip", {"direct", "direct", "direct", "direct"}, {0}, FOLD_OK, {NULL, NULL}, 1},
      /* "auto" is automatic selection even where the communicator forces an algorithm
         (automatic selection never picks ring_skip) */
      {"allreduce=ring_skip", {"auto", "auto", "auto", NULL}, {0}, FOLD_EMISMATCH, {"ring_skip", NULL}, 0},
      {"allreduce=ring_skip", {"auto", "auto", "auto", "auto"}, {0}, FOLD_OK, {NULL, NULL}, 1},
      /* segment sizes are part of the call */
      {NULL, {"ring_segmented", "ring_segmented", "ring_segmented", "ring_segmented"}, {64, 64, 128, 64},
       FOLD_EMISMATCH, {"segment_bytes=64", "segment_bytes=128"}, 0},
      {NULL, {"ring_segmented", "ring_segmented", "ring_segmented", "ring_segmented"}, {64, 64, 64, 64}, FOLD_OK,
       {NULL, NULL}, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_world(N, rank_pick, &cases[i]);
}

/* ---- bad options ---- */

typedef struct {
  int which;
} bad_case;

static void rank_bad(fold_comm *c, void *arg) {
  (void)arg;
  int me = fold_comm_rank(c);
  int32_t x[8] = {0};
  struct {
    fold_coll_opts o;
    unsigned char more[16];
  } big;
  struct {
    const char *what, *needle;
    fold_coll_opts o;
  } bad[] = {
      {"size 0", "FOLD_COLL_OPTS_INIT", {0, NULL, 0.0, 0}},
      {"unknown algorithm", "known:", {sizeof(fold_coll_opts), "no_such_algo", 0.0, 0}},
      {"another collective's algorithm", "has no algorithm", {sizeof(fold_coll_opts), "dissemination", 0.0, 0}},
      {"shm on threads", "cannot run on this communicator", {sizeof(fold_coll_opts), "shm", 0.0, 0}},
      {"negative timeout", "opts->timeout", {sizeof(fold_coll_opts), NULL, -1.0, 0}},
      {"NaN timeout", "opts->timeout", {sizeof(fold_coll_opts), NULL, NAN, 0}},
      {"infinite timeout", "opts->timeout", {sizeof(fold_coll_opts), NULL, INFINITY, 0}},
      {"huge segment", "opts->segment_bytes", {sizeof(fold_coll_opts), NULL, 0.0, ((size_t)1 << 30) + 1}},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    int rc = fold_allreduce_opts(x, x, 8, FOLD_INT32, FOLD_SUM, c, &bad[i].o);
    const char *err = fold_comm_last_error(c);
    CHECK(rc == FOLD_EINVAL, "rank %d, %s: got %d (%s)", me, bad[i].what, rc, err);
    CHECK(strstr(err, bad[i].needle) != NULL, "rank %d, %s: \"%s\" lacks \"%s\"", me, bad[i].what, err, bad[i].needle);
    char rk[16];
    snprintf(rk, sizeof rk, "rank %d", me);
    CHECK(strstr(err, rk) != NULL, "rank %d, %s: \"%s\" names no rank", me, bad[i].what, err);
    fold_request *req = NULL;
    rc = fold_iallreduce_opts(x, x, 8, FOLD_INT32, FOLD_SUM, c, &bad[i].o, &req);
    CHECK(rc == FOLD_EINVAL && req == NULL, "rank %d, %s (nonblocking): got %d", me, bad[i].what, rc);
  }
  /* a newer program's larger struct: its extra fields at their defaults (zero) are fine, set ones are not */
  memset(&big, 0, sizeof big);
  big.o.size = sizeof big;
  big.o.algo = "ring";
  CHECK_OK(fold_allreduce_opts(x, x, 8, FOLD_INT32, FOLD_SUM, c, &big.o), c);
  big.more[3] = 1;
  CHECK_RC(fold_allreduce_opts(x, x, 8, FOLD_INT32, FOLD_SUM, c, &big.o), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "newer") != NULL, "rank %d: %s", me, fold_comm_last_error(c));
  /* an older program's smaller struct: only the fields it has count (here: algo) */
  fold_coll_opts small = FOLD_COLL_OPTS_INIT;
  small.size = sizeof(size_t) + sizeof(const char *);
  small.algo = "ring";
  small.timeout = -5; /* beyond small.size: not read */
  CHECK_OK(fold_allreduce_opts(x, x, 8, FOLD_INT32, FOLD_SUM, c, &small), c);
  /* NULL opts is the plain call; every refusal above left the communicator usable */
  for (int i = 0; i < 8; i++) x[i] = 1;
  CHECK_OK(fold_allreduce_opts(x, x, 8, FOLD_INT32, FOLD_SUM, c, NULL), c);
  CHECK(x[0] == fold_comm_size(c), "rank %d: sum %d", me, x[0]);
  CHECK_OK(fold_barrier(c), c);
}

/* ---- timeout ---- */

typedef struct {
  int nonblocking;
  atomic_int done;
} timeout_case;

static void rank_timeout(fold_comm *c, void *arg) {
  timeout_case *k = arg;
  int me = fold_comm_rank(c);
  if (me != 0) {
    /* never calls: waits (bounded) for rank 0 to give up */
    for (int i = 0; i < 6000 && !atomic_load(&k->done); i++) usleep(10000);
    return;
  }
  int32_t x[4] = {1, 2, 3, 4};
  fold_coll_opts o = FOLD_COLL_OPTS_INIT;
  o.timeout = 0.3;
  double t0 = now_s();
  int rc;
  if (k->nonblocking) {
    fold_request *req = NULL;
    rc = fold_iallreduce_opts(x, x, 4, FOLD_INT32, FOLD_SUM, c, &o, &req);
    CHECK_OK(rc, c);
    if (rc == FOLD_OK) rc = fold_wait(req);
  } else {
    rc = fold_allreduce_opts(x, x, 4, FOLD_INT32, FOLD_SUM, c, &o);
  }
  double dt = now_s() - t0;
  atomic_store(&k->done, 1);
  CHECK(rc == FOLD_ETIMEDOUT, "rank 0: got %d (%s)", rc, fold_comm_last_error(c));
  /* FOLD_TIMEOUT is 300 s: the call's 0.3 s is what ended the wait (0.3 s
   * at least; the upper bound only tells it apart from 300 s) */
  CHECK(dt >= 0.29 && dt < 100, "rank 0: the wait lasted %.2f s", dt);
  CHECK(strstr(fold_comm_last_error(c), "the call's timeout") != NULL, "rank 0: %s", fold_comm_last_error(c));
}

int main(void) {
  setenv("FOLD_TIMEOUT", "300", 1);
  unsetenv("FOLD_ALGO");
  unsetenv("FOLD_SEGMENT_BYTES");
  test_every_algorithm();
  test_algorithm_is_used();
  bad_case b = {0};
  run_world(N, rank_bad, &b);
  for (int nb = 0; nb < 2; nb++) {
    timeout_case t = {nb, 0};
    run_world(2, rank_timeout, &t);
  }
  /* the segmenting algorithms with many segments (exact results) */
  size_t segs[] = {4, 100, 1000};
  for (size_t i = 0; i < 3; i++) {
    call_case k1 = {C_ALLREDUCE, "ring_segmented", 0, segs[i]}, k2 = {C_BROADCAST, "pipeline", 1, segs[i]};
    run_world(3, rank_case, &k1);
    run_world(N, rank_case, &k2);
  }
  return check_report("coll_opts");
}
