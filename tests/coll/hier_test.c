/* hier_test.c — the hierarchical collectives (`hier`) on test layouts: results bit-identical to ring's, nonblocking calls interleaved, mismatches, a dead rank, destroy orders. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"
#include "fold.h"
#include "fold_sim.h"

/* Usage:
 *   hier_test threads   layouts over threads (FOLD_TEST_HOST_MAP splits
 *                       them into hosts for split_host and hier): uneven
 *                       (3+1+2+2), round-robin, one host, a rank per host,
 *                       a host of one
 *   hier_test mismatch  threads, one rank forces ring: FOLD_EMISMATCH on all
 *   hier_test procs     one process per rank under foldrun (the layout from
 *                       the environment: shm within a host, tcp between)
 *   hier_test sim       simulated ranks (each its own host: the leaders'
 *                       phase alone), nonblocking calls run by fold_sim_run
 *   hier_test sim-big   4,096 simulated ranks on 256 hosts of 16, contiguous
 *                       and round-robin, and 1,000 on 300 uneven hosts: hier
 *                       allreduce results, and the peak RSS per rank bounded
 *                       (not under ASan or TSan); a rank forcing ring on a 2 x 4
 *                       world: FOLD_EMISMATCH on all, naming it
 *   hier_test lanes     threads on layouts whose hosts are of one size
 *                       (contiguous and round-robin; an uneven one, where
 *                       allreduce keeps one leader), for FOLD_HIER_LEADERS
 *                       set by the test (all, one, unset)
 *   hier_test lanes-pipe  lanes' 3 x 3 round-robin and uneven layouts only
 *   hier_test lanes-trace  one allreduce on 2 x 4 threads (with
 *                       FOLD_DEBUG=TRACE the test counts the lane calls)
 *   hier_test sim-pipe  simulated hosts of one size (contiguous and
 *                       round-robin), allreduce with FOLD_HIER_LEADERS=all
 *                       and FOLD_HIER_CHUNKS set by the test (pipelined)
 *   hier_test kill K [COLL]  under foldrun: rank K exits after the first
 *                       call (allreduce, or COLL: allgather, reduce_scatter,
 *                       allreduce64: allreduce of 64 elements);
 *                       every survivor prints EPEER-naming-rank-K when its
 *                       error names it */

static const char *ALL_HIER =
    "allreduce=hier,broadcast=hier,reduce=hier,barrier=hier,allgather=hier,reduce_scatter=hier";

/* Values that overflow int64 sums and products (wrap-around is exact, so
 * every order gives the same bits). */
static int64_t val(int r, size_t i, int call) {
  return (int64_t)((uint64_t)(r + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(i * 2654435761u + (size_t)call));
}

/* The options of a ring call: one constant every thread reads (writing a
 * shared one from each rank thread was a data race, TSan). */
static const fold_coll_opts ring_o = {.size = sizeof(fold_coll_opts), .algo = "ring"};
static const fold_coll_opts *ring_opts(void) { return &ring_o; }

/* allgather and reduce_scatter at cnt elements per rank: hier's results
 * bit-identical to ring's (and allgather's to the inputs), in place too. */
static void blocks(fold_comm *c, size_t cnt, int call) {
  int n = fold_comm_size(c), me = fold_comm_rank(c);
  size_t all = (size_t)n * cnt;
  int64_t *in = malloc((all + 1) * sizeof *in), *a = malloc((all + 1) * sizeof *a), *b = malloc((all + 1) * sizeof *b);
  for (size_t i = 0; i < all; i++) in[i] = val(me, i, call + 50);
  /* allgather: rank r's block at block r, whatever host r is on */
  memset(a, 0x5a, (all + 1) * sizeof *a);
  CHECK_OK(fold_allgather(in, a, cnt, FOLD_INT64, c), c);
  for (size_t i = 0; i < all; i++)
    if (a[i] != val((int)(i / cnt), i % cnt, call + 50)) {
      CHECK(0, "rank %d: allgather count %zu: element %zu (block %zu) wrong", me, cnt, i, i / cnt);
      break;
    }
  CHECK(a[all] == (int64_t)0x5a5a5a5a5a5a5a5all, "rank %d: allgather count %zu wrote past recvbuf", me, cnt);
  memcpy(b, a, all * sizeof *b);
  memset(a, 0x5a, all * sizeof *a);
  memcpy(a + (size_t)me * cnt, in, cnt * sizeof *a); /* in place */
  CHECK_OK(fold_allgather(a + (size_t)me * cnt, a, cnt, FOLD_INT64, c), c);
  CHECK(cnt == 0 || !memcmp(a, b, all * sizeof *a), "rank %d: in-place allgather count %zu wrong", me, cnt);
  /* reduce_scatter: every op, against ring */
  fold_op ops[] = {FOLD_SUM, FOLD_PROD, FOLD_MAX, FOLD_BXOR};
  for (int k = 0; k < 4; k++) {
    memset(a, 0x5a, (cnt + 1) * sizeof *a);
    CHECK_OK(fold_reduce_scatter(in, a, cnt, FOLD_INT64, ops[k], c), c);
    CHECK_OK(fold_reduce_scatter_opts(in, b, cnt, FOLD_INT64, ops[k], c, ring_opts()), c);
    CHECK(cnt == 0 || !memcmp(a, b, cnt * sizeof *a), "rank %d: reduce_scatter count %zu op %d: hier differs from ring",
          me, cnt, (int)ops[k]);
    CHECK(a[cnt] == (int64_t)0x5a5a5a5a5a5a5a5all, "rank %d: reduce_scatter count %zu wrote past recvbuf", me, cnt);
  }
  /* in place: recvbuf is block `me` of sendbuf (b holds ring's bxor) */
  memcpy(a, in, all * sizeof *a);
  CHECK_OK(fold_reduce_scatter(a, a + (size_t)me * cnt, cnt, FOLD_INT64, FOLD_BXOR, c), c);
  CHECK(cnt == 0 || !memcmp(a + (size_t)me * cnt, b, cnt * sizeof *a), "rank %d: in-place reduce_scatter count %zu wrong",
        me, cnt);
  free(in);
  free(a);
  free(b);
}

/* One rank's checks on communicator c (every rank of c runs it). */
static void body(fold_comm *c, int expect_local) {
  int n = fold_comm_size(c), me = fold_comm_rank(c);
  fold_comm *host = NULL;
  CHECK_OK(fold_comm_split_host(c, &host), c);
  if (host && expect_local > 0)
    CHECK(fold_comm_size(host) == expect_local, "rank %d: host of %d ranks, the layout says %d", me,
          fold_comm_size(host), expect_local);
  fold_comm_destroy(host);
  CHECK_OK(fold_comm_set_algo(c, ALL_HIER), c);
  const char *got = fold_comm_get_algo(c, "allreduce", 1000, FOLD_INT64, FOLD_SUM);
  CHECK(got && !strcmp(got, "hier"), "rank %d: fold_comm_get_algo says %s", me, got ? got : "NULL");
  size_t counts[] = {0, 1, 7, 1000, 100003};
  fold_op ops[] = {FOLD_SUM, FOLD_PROD, FOLD_MAX, FOLD_BXOR};
  for (int call = 0; call < 5; call++) {
    size_t cnt = counts[call];
    int64_t *in = malloc((cnt + 1) * sizeof *in), *a = malloc((cnt + 1) * sizeof *a), *b = malloc((cnt + 1) * sizeof *b);
    for (size_t i = 0; i < cnt; i++) in[i] = val(me, i, call);
    for (int k = 0; k < 4; k++) {
      fold_op op = ops[k];
      CHECK_OK(fold_allreduce(in, a, cnt, FOLD_INT64, op, c), c);
      CHECK_OK(fold_allreduce_opts(in, b, cnt, FOLD_INT64, op, c, ring_opts()), c);
      CHECK(cnt == 0 || !memcmp(a, b, cnt * sizeof *a), "rank %d: allreduce count %zu op %d: hier differs from ring",
            me, cnt, (int)op);
      int root = (call * 3 + k) % n;
      memset(a, 0x5a, (cnt + 1) * sizeof *a);
      CHECK_OK(fold_reduce(in, me == root ? a : NULL, cnt, FOLD_INT64, op, root, c), c);
      if (me == root)
        CHECK(cnt == 0 || !memcmp(a, b, cnt * sizeof *a), "rank %d: reduce to %d count %zu op %d: differs from ring",
              me, root, cnt, (int)op);
    }
    /* in place */
    memcpy(a, in, cnt * sizeof *a);
    CHECK_OK(fold_allreduce(a, a, cnt, FOLD_INT64, FOLD_SUM, c), c);
    CHECK_OK(fold_allreduce_opts(in, b, cnt, FOLD_INT64, FOLD_SUM, c, ring_opts()), c);
    CHECK(cnt == 0 || !memcmp(a, b, cnt * sizeof *a), "rank %d: in-place allreduce count %zu differs", me, cnt);
    /* broadcast from every root */
    for (int root = 0; root < n; root++) {
      for (size_t i = 0; i < cnt; i++) a[i] = me == root ? val(root, i, call) : -1;
      CHECK_OK(fold_broadcast(a, cnt, FOLD_INT64, root, c), c);
      for (size_t i = 0; i < cnt; i++)
        if (a[i] != val(root, i, call)) {
          CHECK(0, "rank %d: broadcast from %d count %zu: element %zu wrong", me, root, cnt, i);
          break;
        }
    }
    free(in);
    free(a);
    free(b);
    blocks(c, cnt, call);
  }
  /* nonblocking hier calls interleaved, waited in the reverse order */
  enum { K = 6 };
  fold_request *req[K];
  int64_t x[K][33], want[K][33];
  for (int j = 0; j < K; j++) {
    for (int i = 0; i < 33; i++) x[j][i] = val(me, (size_t)i, 100 + j);
    if (j % 3 == 2) {
      CHECK_OK(fold_ibroadcast(x[j], 33, FOLD_INT64, j % n, c, &req[j]), c);
    } else {
      CHECK_OK(fold_iallreduce(x[j], x[j], 33, FOLD_INT64, FOLD_SUM, c, &req[j]), c);
    }
  }
  /* and an allgather and a reduce_scatter started among them */
  int64_t *gin = malloc(3 * sizeof *gin), *gout = malloc((size_t)n * 3 * sizeof *gout);
  int64_t *rin = malloc((size_t)n * 5 * sizeof *rin), rout[5];
  for (int i = 0; i < 3; i++) gin[i] = val(me, (size_t)i, 200);
  for (int i = 0; i < n * 5; i++) rin[i] = val(me, (size_t)i, 201);
  fold_request *greq, *rreq;
  CHECK_OK(fold_iallgather(gin, gout, 3, FOLD_INT64, c, &greq), c);
  CHECK_OK(fold_ireduce_scatter(rin, rout, 5, FOLD_INT64, FOLD_SUM, c, &rreq), c);
  CHECK_OK(fold_wait(rreq), c);
  for (int j = K - 1; j >= 0; j--) CHECK_OK(fold_wait(req[j]), c);
  CHECK_OK(fold_wait(greq), c);
  for (int i = 0; i < n * 3; i++)
    if (gout[i] != val(i / 3, (size_t)(i % 3), 200)) {
      CHECK(0, "rank %d: nonblocking allgather element %d wrong", me, i);
      break;
    }
  for (int i = 0; i < 5; i++) {
    uint64_t sum = 0;
    for (int r = 0; r < n; r++) sum += (uint64_t)val(r, (size_t)(me * 5 + i), 201);
    CHECK(rout[i] == (int64_t)sum, "rank %d: nonblocking reduce_scatter element %d wrong", me, i);
  }
  free(gin);
  free(gout);
  free(rin);
  for (int j = 0; j < K; j++) {
    for (int i = 0; i < 33; i++) {
      if (j % 3 == 2) {
        want[j][i] = val(j % n, (size_t)i, 100 + j);
      } else {
        uint64_t s = 0;
        for (int r = 0; r < n; r++) s += (uint64_t)val(r, (size_t)i, 100 + j);
        want[j][i] = (int64_t)s;
      }
    }
    CHECK(!memcmp(x[j], want[j], sizeof x[j]), "rank %d: nonblocking call %d wrong", me, j);
  }
  /* float AVG: the mean over every rank (sum at the end, divided once) */
  float f = (float)me, fa = 0;
  CHECK_OK(fold_allreduce(&f, &fa, 1, FOLD_FLOAT32, FOLD_AVG, c), c);
  CHECK(fa == (float)(n - 1) / 2.0f, "rank %d: avg %g, want %g", me, (double)fa, (n - 1) / 2.0);
  /* reduce_scatter AVG: block r of rank q's input is q + r; the mean of block me is (n - 1) / 2 + me */
  float *fin = malloc((size_t)n * 2 * sizeof *fin), fout[2] = {0, 0};
  for (int i = 0; i < n * 2; i++) fin[i] = (float)(me + i / 2);
  CHECK_OK(fold_reduce_scatter(fin, fout, 2, FOLD_FLOAT32, FOLD_AVG, c), c);
  CHECK(fout[0] == (float)(n - 1) / 2.0f + (float)me && fout[1] == fout[0], "rank %d: reduce_scatter avg %g %g, want %g",
        me, (double)fout[0], (double)fout[1], (n - 1) / 2.0 + me);
  free(fin);
  for (int i = 0; i < 3; i++) CHECK_OK(fold_barrier(c), c);
}

typedef struct {
  fold_comm *c;
  int local;
  int mode;
} targ;

static void *thread_main(void *p) {
  targ *t = p;
  if (t->mode == 0) {
    body(t->c, t->local);
  } else if (t->mode == 4) { /* lanes-trace: one allreduce of 1003 elements against ring */
    int me = fold_comm_rank(t->c), n = fold_comm_size(t->c);
    enum { CNT = 1003 };
    int64_t *in = malloc(CNT * sizeof *in), *a = malloc(CNT * sizeof *a), *b = malloc(CNT * sizeof *b);
    for (size_t i = 0; i < CNT; i++) in[i] = val(me, i, 4);
    CHECK_OK(fold_comm_set_algo(t->c, "allreduce=hier"), t->c);
    CHECK_OK(fold_allreduce(in, a, CNT, FOLD_INT64, FOLD_SUM, t->c), t->c);
    CHECK_OK(fold_allreduce_opts(in, b, CNT, FOLD_INT64, FOLD_SUM, t->c, ring_opts()), t->c);
    CHECK(!memcmp(a, b, CNT * sizeof *a), "rank %d of %d: allreduce differs from ring", me, n);
    free(in);
    free(a);
    free(b);
  } else { /* mismatch: rank 3 forces ring (mode 1 allreduce, 2 allgather, 3 reduce_scatter) */
    int me = fold_comm_rank(t->c), n = fold_comm_size(t->c);
    static const char *ring[] = {"", "allreduce=ring", "allgather=ring", "reduce_scatter=ring"};
    CHECK_OK(fold_comm_set_algo(t->c, me == 3 ? ring[t->mode] : ALL_HIER), t->c);
    int64_t v[64] = {0}, s[64];
    for (int i = 0; i < n; i++) v[i] = me + i;
    int rc = t->mode == 1   ? fold_allreduce(v, s, 1, FOLD_INT64, FOLD_SUM, t->c)
             : t->mode == 2 ? fold_allgather(v, s, 1, FOLD_INT64, t->c)
                            : fold_reduce_scatter(v, s, 1, FOLD_INT64, FOLD_SUM, t->c);
    CHECK(rc == FOLD_EMISMATCH, "rank %d: wanted FOLD_EMISMATCH, got %s: %s", me, fold_strerror(rc),
          fold_comm_last_error(t->c));
  }
  return NULL;
}

/* The host size of rank r under map (entries r % len). */
static int local_size_of(const char *map, int n, int r) {
  int len = 1, h[64];
  for (const char *p = map; *p; p++) len += *p == ',';
  const char *p = map;
  for (int i = 0; i < len; i++) {
    h[i] = atoi(p);
    p = strchr(p, ',');
    p = p ? p + 1 : "";
  }
  int k = 0;
  for (int q = 0; q < n; q++) k += h[q % len] == h[r % len];
  return k;
}

static void run_threads(int n, const char *map, int mode) {
  setenv("FOLD_TEST_HOST_MAP", map, 1);
  fold_comm *comms[32];
  CHECK_OK(fold_comm_init_threads(n, comms), NULL);
  pthread_t th[32];
  targ a[32];
  for (int r = 0; r < n; r++) {
    a[r] = (targ){comms[r], local_size_of(map, n, r), mode};
    pthread_create(&th[r], NULL, thread_main, &a[r]);
  }
  for (int r = 0; r < n; r++) pthread_join(th[r], NULL);
  /* the world goes first here, its hier children with it */
  for (int r = 0; r < n; r++) CHECK_OK(fold_comm_destroy(comms[r]), NULL);
  printf("%s%s n=%d FOLD_TEST_HOST_MAP=%s: %s\n", mode == 4 ? "lanes-trace" : mode ? "mismatch " : "threads",
         mode == 1 ? "allreduce" : mode == 2 ? "allgather" : mode == 3 ? "reduce_scatter" : "", n, map,
         atomic_load(&check_failures) ? "FAILED" : "ok");
  unsetenv("FOLD_TEST_HOST_MAP");
}

/* The simulator: every rank starts its calls, then fold_sim_run runs them
 * (a rank's blocking call could not wait for ranks the program has not
 * played yet). Three calls per rank, the first of which makes the
 * children inside the simulation. */
static void run_sim(int n) {
  fold_sim *sim;
  fold_comm *comms[64];
  fold_sim_params prm;
  fold_sim_params_default(&prm);
  CHECK_OK(fold_sim_create(n, &prm, &sim, comms), NULL);
  enum { CNT = 1000 };
  static int64_t in[64][CNT], out[64][CNT], bc[64][CNT], red[64][CNT];
  enum { BC = 10 }; /* allgather and reduce_scatter: BC elements per rank */
  static int64_t ag_out[64][64 * BC], rs_in[64][64 * BC], rs_out[64][BC];
  fold_request *req[64][5];
  for (int r = 0; r < n; r++) {
    CHECK_OK(fold_comm_set_algo(comms[r], ALL_HIER), comms[r]);
    for (int i = 0; i < CNT; i++) in[r][i] = val(r, (size_t)i, 7), bc[r][i] = r == 1 % n ? val(r, (size_t)i, 8) : 0;
    CHECK_OK(fold_iallreduce(in[r], out[r], CNT, FOLD_INT64, FOLD_SUM, comms[r], &req[r][0]), comms[r]);
    CHECK_OK(fold_ibroadcast(bc[r], CNT, FOLD_INT64, 1 % n, comms[r], &req[r][1]), comms[r]);
    CHECK_OK(fold_ireduce(in[r], red[r], CNT, FOLD_INT64, FOLD_MAX, n - 1, comms[r], &req[r][2]), comms[r]);
    for (int i = 0; i < n * BC; i++) rs_in[r][i] = val(r, (size_t)i, 9);
    CHECK_OK(fold_iallgather(in[r], ag_out[r], BC, FOLD_INT64, comms[r], &req[r][3]), comms[r]);
    CHECK_OK(fold_ireduce_scatter(rs_in[r], rs_out[r], BC, FOLD_INT64, FOLD_SUM, comms[r], &req[r][4]), comms[r]);
  }
  CHECK_OK(fold_sim_run(sim), NULL);
  for (int r = 0; r < n; r++)
    for (int j = 0; j < 5; j++) CHECK_OK(fold_wait(req[r][j]), comms[r]);
  for (int r = 0; r < n; r++)
    for (int i = 0; i < CNT; i++) {
      uint64_t s = 0;
      int64_t m = INT64_MIN;
      for (int q = 0; q < n; q++) s += (uint64_t)val(q, (size_t)i, 7), m = val(q, (size_t)i, 7) > m ? val(q, (size_t)i, 7) : m;
      if (out[r][i] != (int64_t)s || bc[r][i] != val(1 % n, (size_t)i, 8) || (r == n - 1 && red[r][i] != m)) {
        CHECK(0, "sim n=%d rank %d element %d wrong", n, r, i);
        break;
      }
    }
  for (int r = 0; r < n; r++)
    for (int i = 0; i < n * BC; i++) {
      uint64_t s = 0;
      for (int q = 0; q < n; q++) s += (uint64_t)val(q, (size_t)(r * BC + i % BC), 9);
      if (ag_out[r][i] != val(i / BC, (size_t)(i % BC), 7) || (i < BC && rs_out[r][i] != (int64_t)s)) {
        CHECK(0, "sim n=%d rank %d: allgather or reduce_scatter element %d wrong", n, r, i);
        break;
      }
    }
  CHECK_OK(fold_sim_destroy(sim), NULL);
  printf("sim n=%d: %s\n", n, atomic_load(&check_failures) ? "FAILED" : "ok");
}

/* hier on a large simulated world (n ranks on `hosts` hosts: contiguous,
 * or round-robin when rr): an allreduce of 1 element (one leader per host)
 * and of 256 (every rank leads its slice where hosts are of one size),
 * every rank's result checked. With max_kb_per_rank > 0 (not under ASan or TSan,
 * whose allocators keep freed memory and shadow it) the process's peak RSS grew by at
 * most that much per simulated rank: the hier split keeps no table of the
 * world's size per rank (it used to: 24 n bytes of records, more than
 * 150 KB per rank at n = 4,096). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HIER_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HIER_SANITIZED 1
#endif
#endif
static long peak_kb(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : 0;
}

static void run_sim_big(int n, int hosts, int rr, long max_kb_per_rank) {
  long kb0 = peak_kb();
  double t0 = check_now_s();
  fold_sim *sim;
  fold_comm **comms = calloc((size_t)n, sizeof *comms);
  int *of = malloc((size_t)n * sizeof *of);
  enum { BIG = 256 };
  int64_t *in = malloc((size_t)n * BIG * sizeof *in), *out = calloc((size_t)n * (BIG + 1), sizeof *out);
  int64_t want[BIG] = {0}, want1 = 0;
  fold_request **req = calloc((size_t)n * 2, sizeof *req);
  if (!comms || !of || !in || !out || !req) {
    CHECK(0, "sim-big n=%d: out of memory", n);
    goto done;
  }
  for (int r = 0; r < n; r++) of[r] = rr ? r % hosts : (int)((int64_t)r * hosts / n);
  fold_sim_params prm;
  fold_sim_params_default(&prm);
  CHECK_OK(fold_sim_create(n, &prm, &sim, comms), NULL);
  CHECK_OK(fold_sim_set_hosts(sim, hosts, of, NULL, NULL), NULL);
  for (int r = 0; r < n; r++) {
    for (int i = 0; i < BIG; i++) in[(size_t)r * BIG + i] = val(r, (size_t)i, 3);
    for (int i = 0; i < BIG; i++) want[i] = (int64_t)((uint64_t)want[i] + (uint64_t)in[(size_t)r * BIG + i]);
    want1 = (int64_t)((uint64_t)want1 + (uint64_t)val(r, 0, 5));
    CHECK_OK(fold_comm_set_algo(comms[r], "allreduce=hier"), comms[r]);
  }
  /* the first call makes the children inside the simulation, the second
   * runs on them */
  for (int r = 0; r < n; r++) {
    out[(size_t)r * (BIG + 1) + BIG] = val(r, 0, 5);
    CHECK_OK(fold_iallreduce(&out[(size_t)r * (BIG + 1) + BIG], &out[(size_t)r * (BIG + 1) + BIG], 1, FOLD_INT64, FOLD_SUM, comms[r],
                             &req[2 * r]), comms[r]);
    CHECK_OK(fold_iallreduce(&in[(size_t)r * BIG], &out[(size_t)r * (BIG + 1)], BIG, FOLD_INT64, FOLD_SUM, comms[r],
                             &req[2 * r + 1]), comms[r]);
  }
  CHECK_OK(fold_sim_run(sim), NULL);
  int bad = 0;
  for (int r = 0; r < n; r++) {
    CHECK_OK(fold_wait(req[2 * r]), comms[r]);
    CHECK_OK(fold_wait(req[2 * r + 1]), comms[r]);
    const int64_t *o = &out[(size_t)r * (BIG + 1)];
    if (!bad && (o[BIG] != want1 || memcmp(o, want, sizeof want) != 0)) {
      CHECK(0, "sim-big n=%d hosts=%d%s: rank %d's sum is wrong", n, hosts, rr ? " (round-robin)" : "", r);
      bad = 1;
    }
  }
  CHECK_OK(fold_sim_destroy(sim), NULL);
  long grew = peak_kb() - kb0;
  printf("sim-big n=%d hosts=%d%s: %.2f s, peak RSS +%ld KB (%.1f KB per rank)%s\n", n, hosts,
         rr ? " round-robin" : "", check_now_s() - t0, grew, (double)grew / n,
         max_kb_per_rank > 0 ? "" : " (not bounded here)");
  if (max_kb_per_rank > 0)
    CHECK(grew <= max_kb_per_rank * n, "sim-big n=%d: peak RSS grew %ld KB, %.1f KB per rank (bound %ld)", n, grew,
          (double)grew / n, max_kb_per_rank);
done:
  free(comms);
  free(of);
  free(in);
  free(out);
  free(req);
}

/* A simulated world of 2 x 4 whose rank 3 forces ring while the others
 * make hier's children: FOLD_EMISMATCH on every rank, naming rank 3. */
static void run_sim_mismatch(void) {
  enum { N = 8 };
  fold_sim *sim;
  fold_comm *comms[N];
  fold_request *req[N];
  int64_t v[N], o[N];
  fold_sim_params prm;
  fold_sim_params_default(&prm);
  CHECK_OK(fold_sim_create(N, &prm, &sim, comms), NULL);
  CHECK_OK(fold_sim_set_hosts(sim, 2, NULL, NULL, NULL), NULL);
  for (int r = 0; r < N; r++) {
    v[r] = r;
    CHECK_OK(fold_comm_set_algo(comms[r], r == 3 ? "allreduce=ring" : "allreduce=hier"), comms[r]);
    CHECK_OK(fold_iallreduce(&v[r], &o[r], 1, FOLD_INT64, FOLD_SUM, comms[r], &req[r]), comms[r]);
  }
  CHECK_OK(fold_sim_run(sim), NULL);
  for (int r = 0; r < N; r++) {
    int rc = fold_wait(req[r]);
    CHECK(rc == FOLD_EMISMATCH && strstr(fold_comm_last_error(comms[r]), "rank 3 called") != NULL,
          "sim mismatch: rank %d: %s: %s", r, fold_strerror(rc), fold_comm_last_error(comms[r]));
  }
  CHECK_OK(fold_sim_destroy(sim), NULL);
  printf("sim mismatch: %s\n", atomic_load(&check_failures) ? "FAILED" : "ok");
}

/* The pipelined allreduce in the simulator (FOLD_HIER_LEADERS=all and
 * FOLD_HIER_CHUNKS set by the test): `hosts` hosts of n / hosts ranks,
 * contiguous or round-robin; per rank an int64 sum of cnt elements out of
 * place and one in place, both nonblocking, then a bxor, all checked
 * against the sums computed here. */
static void run_sim_pipe(int n, int hosts, int rr, size_t cnt) {
  fold_sim *sim;
  fold_comm *comms[16];
  fold_sim_params prm, host;
  fold_sim_params_default(&prm);
  fold_sim_params_default(&host);
  host.latency = 5e-7;
  host.byte_time = 2e-11;
  int host_of[16];
  for (int r = 0; r < n; r++) host_of[r] = rr ? r % hosts : r / (n / hosts);
  CHECK_OK(fold_sim_create(n, &prm, &sim, comms), NULL);
  CHECK_OK(fold_sim_set_hosts(sim, hosts, host_of, &host, &prm), NULL);
  int64_t *in[16], *out[16], *inp[16], *x[16];
  fold_request *req[16][3];
  for (int r = 0; r < n; r++) {
    in[r] = malloc(cnt * sizeof(int64_t));
    out[r] = malloc((cnt + 1) * sizeof(int64_t));
    inp[r] = malloc(cnt * sizeof(int64_t));
    x[r] = malloc(cnt * sizeof(int64_t));
    out[r][cnt] = 0x5a5a;
    for (size_t i = 0; i < cnt; i++) in[r][i] = val(r, i, 11), inp[r][i] = val(r, i, 12), x[r][i] = val(r, i, 13);
    CHECK_OK(fold_comm_set_algo(comms[r], "allreduce=hier"), comms[r]);
    CHECK_OK(fold_iallreduce(in[r], out[r], cnt, FOLD_INT64, FOLD_SUM, comms[r], &req[r][0]), comms[r]);
    CHECK_OK(fold_iallreduce(inp[r], inp[r], cnt, FOLD_INT64, FOLD_SUM, comms[r], &req[r][1]), comms[r]);
    CHECK_OK(fold_iallreduce(x[r], x[r], cnt, FOLD_INT64, FOLD_BXOR, comms[r], &req[r][2]), comms[r]);
  }
  CHECK_OK(fold_sim_run(sim), NULL);
  for (int r = 0; r < n; r++)
    for (int j = 0; j < 3; j++) CHECK_OK(fold_wait(req[r][j]), comms[r]);
  for (int r = 0; r < n; r++) {
    CHECK(out[r][cnt] == 0x5a5a, "sim-pipe rank %d: written past recvbuf", r);
    for (size_t i = 0; i < cnt; i++) {
      uint64_t s = 0, sp = 0, b = 0;
      for (int q = 0; q < n; q++) s += (uint64_t)val(q, i, 11), sp += (uint64_t)val(q, i, 12), b ^= (uint64_t)val(q, i, 13);
      if (out[r][i] != (int64_t)s || inp[r][i] != (int64_t)sp || x[r][i] != (int64_t)b) {
        CHECK(0, "sim-pipe n=%d hosts=%d%s count %zu: rank %d element %zu wrong", n, hosts, rr ? " rr" : "", cnt, r, i);
        break;
      }
    }
    free(in[r]);
    free(out[r]);
    free(inp[r]);
    free(x[r]);
  }
  CHECK_OK(fold_sim_destroy(sim), NULL);
  printf("sim-pipe n=%d hosts=%d %s count %zu: %s\n", n, hosts, rr ? "round-robin" : "contiguous", cnt,
         atomic_load(&check_failures) ? "FAILED" : "ok");
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "threads";
  if (!strcmp(mode, "threads")) {
    static const struct { int n; const char *map; } lay[] = {
        {8, "0,0,0,1,2,2,3,3"}, /* uneven: 3 + 1 + 2 + 2 */
        {7, "0,1,2"},           /* round-robin: rank r on host r % 3 */
        {5, "0"},               /* one host: the host phase alone */
        {4, "0,1,2,3"},         /* a rank per host: the network phase alone */
        {6, "0,0,0,0,0,1"},     /* a host of one */
        {1, "0"},
        {2, "0,1"},
    };
    for (size_t i = 0; i < sizeof lay / sizeof *lay; i++) run_threads(lay[i].n, lay[i].map, 0);
  } else if (!strcmp(mode, "lanes")) {
    static const struct { int n; const char *map; } lay[] = {
        {8, "0,0,0,0,1,1,1,1"}, /* 2 x 4 contiguous */
        {6, "0,1,2"},           /* 3 x 2 round-robin */
        {9, "0,1,2"},           /* 3 x 3 round-robin: slices padded for most counts */
        {8, "0,0,1,1"},         /* 2 x 4, pairs interleaved */
        {8, "0,0,0,1,2,2,3,3"}, /* uneven: one leader whatever is asked */
    };
    for (size_t i = 0; i < sizeof lay / sizeof *lay; i++) run_threads(lay[i].n, lay[i].map, 0);
  } else if (!strcmp(mode, "lanes-pipe")) { /* two of them, for the pipeline forced on (kept short) */
    run_threads(9, "0,1,2", 0);
    run_threads(8, "0,0,0,1,2,2,3,3", 0);
  } else if (!strcmp(mode, "lanes-trace")) {
    run_threads(8, "0,0,0,0,1,1,1,1", 4);
  } else if (!strcmp(mode, "sim")) {
    run_sim(1);
    run_sim(5);
    run_sim(64);
  } else if (!strcmp(mode, "sim-big")) {
#ifdef HIER_SANITIZED /* their allocators and shadow memory, not the library, decide the RSS there */
    long bound = 0;
#else
    long bound = 48;
#endif
    run_sim_big(4096, 256, 0, bound); /* 256 x 16 */
    run_sim_big(4096, 256, 1, 0);     /* 256 x 16 round-robin: the peak is the first run's */
    run_sim_big(1000, 300, 0, 0);     /* hosts of 3 and 4 ranks: one leader */
    run_sim_mismatch();
  } else if (!strcmp(mode, "sim-pipe")) {
    run_sim_pipe(12, 4, 0, 1001); /* 4 x 3: slices and chunks padded */
    run_sim_pipe(12, 4, 1, 1001);
    run_sim_pipe(8, 2, 0, 4099);  /* 2 x 4 */
    run_sim_pipe(6, 3, 1, 13);    /* 3 x 2: chunks of 2 elements per rank, the last of 1 padded to 2 */
  } else if (!strcmp(mode, "mismatch")) {
    for (int mode = 1; mode <= 3; mode++) {
      run_threads(6, "0,0,1,1,2,2", mode);
      run_threads(5, "0,1", mode);
    }
  } else if (!strcmp(mode, "procs")) {
    fold_comm *c;
    if (fold_init(&c) != FOLD_OK) {
      fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
      return 2;
    }
    body(c, -1);
    /* a dup's hier, then the world destroyed before the dup */
    fold_comm *d = NULL;
    CHECK_OK(fold_comm_dup(c, &d), c);
    int64_t v = fold_comm_rank(c), s = 0;
    CHECK_OK(fold_comm_set_algo(d, ALL_HIER), d);
    CHECK_OK(fold_allreduce(&v, &s, 1, FOLD_INT64, FOLD_SUM, d), d);
    int n = fold_comm_size(c);
    CHECK(s == (int64_t)n * (n - 1) / 2, "dup: sum %lld", (long long)s);
    CHECK_OK(fold_barrier(d), d);
    CHECK_OK(fold_comm_destroy(c), NULL);
    CHECK_OK(fold_comm_destroy(d), NULL);
  } else if (!strcmp(mode, "kill") && argc > 2) {
    int k = atoi(argv[2]);
    fold_comm *c;
    if (fold_init(&c) != FOLD_OK) return 2;
    int me = fold_comm_rank(c);
    CHECK_OK(fold_comm_set_algo(c, ALL_HIER), c);
    /* the collective of the calls: allreduce, or argv[3] (allgather, reduce_scatter) */
    const char *coll = argc > 3 ? argv[3] : "allreduce";
    int n = fold_comm_size(c);
    int64_t v[64] = {0}, s[64];
    for (int i = 0; i < n && i < 64; i++) v[i] = me + i;
    size_t ar_cnt = !strcmp(coll, "allreduce64") ? 64 : 1; /* 64: enough to pipeline over chunks */
    int rc = FOLD_OK;
    for (int i = 0; i < 21 && rc == FOLD_OK; i++) {
      if (i == 1 && me == k) _exit(0); /* after the first call: the children exist */
      rc = !strcmp(coll, "allgather")        ? fold_allgather(v, s, 1, FOLD_INT64, c)
           : !strcmp(coll, "reduce_scatter") ? fold_reduce_scatter(v, s, 1, FOLD_INT64, FOLD_SUM, c)
                                             : fold_allreduce(v, s, ar_cnt, FOLD_INT64, FOLD_SUM, c);
      if (i == 0) CHECK_OK(rc, c);
    }
    char name[32];
    snprintf(name, sizeof name, "rank %d", k);
    printf("rank %d: %s%s: %s\n", me, fold_strerror(rc), strstr(fold_comm_last_error(c), name) ? " EPEER-naming-rank-K" : "",
           fold_comm_last_error(c));
    CHECK(rc == FOLD_EPEER, "rank %d: wanted FOLD_EPEER, got %s", me, fold_strerror(rc));
    /* allreduce64 (pipelined): a survivor that closes its connections while
     * another survivor's chunk is still on its way to it resets them, and the
     * kernel drops the failure notice still unread on the other side, which
     * then names this rank instead of K (docs/hierarchy.md, "Failures"): the
     * survivors wait a second before they go */
    if (ar_cnt > 1) sleep(1);
    fold_comm_destroy(c);
  } else {
    fprintf(stderr, "usage: hier_test threads|lanes|lanes-pipe|lanes-trace|mismatch|sim|sim-big|sim-pipe|procs|kill K\n");
    return 2;
  }
  return check_report("hier_test");
}
