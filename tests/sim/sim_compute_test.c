/* sim_compute_test.c — simulated compute, fold_sim_at callbacks, per-rank parameters and op_overhead, timed exactly.
 * Usage: sim_compute_test <case>. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "fold.h"
#include "sim/sim_check.h"
#include "transport/sim/sim.h"

/* Dyadic parameters: every time below is exact in binary floating point,
 * so the formulas of docs/simulator.md are checked with ==. */
#define LAT (1.0 / 1024)          /* 2^-10 s */
#define BT (1.0 / (1 << 20))      /* 2^-20 s per byte */
#define B 4096                    /* bytes: one transfer takes 2^-8 s */
#define XFER ((double)B * BT)
#define GAMMA (1.0 / (1 << 24))   /* op_time: 2^-24 s per byte, B bytes take 2^-12 s */
#define OVH (1.0 / 64)            /* op_overhead: 2^-6 s per reduction call */
#define CNT (B / 4)               /* float32 elements in B bytes */

static unsigned char sbuf[8][B], rbuf[8][B];
static float fin[8][CNT], fout[8][CNT];

static fold_sim_params dyadic(void) {
  fold_sim_params p;
  fold_sim_params_default(&p);
  p.latency = LAT;
  p.byte_time = BT;
  return p;
}

/* A world without the collectives' signature exchange, so that a
 * collective's time is its algorithm's messages only (the signature is a
 * separate small message whose size is the executor's business). */
static fold_sim *make(int n, const fold_sim_params *p, fold_comm **comms) {
  setenv("FOLD_NO_MISMATCH_CHECK", "1", 1); /* read when the communicators are made */
  fold_sim *sim;
  CHECK_RC(fold_sim_create(n, p, &sim, comms), FOLD_OK, NULL);
  unsetenv("FOLD_NO_MISMATCH_CHECK");
  return sim;
}

/* Start allreduce=recursive_doubling (float32 sum of CNT elements) on ranks
 * [0, n); rank r contributes r + 1 everywhere. */
static void start_rd(fold_comm **c, int n, fold_request **req) {
  for (int r = 0; r < n; r++) {
    for (int i = 0; i < CNT; i++)
      fin[r][i] = (float)(r + 1);
    CHECK_RC(fold_comm_set_algo(c[r], "allreduce=recursive_doubling"), FOLD_OK, c[r]);
    CHECK_RC(fold_iallreduce(fin[r], fout[r], CNT, FOLD_FLOAT32, FOLD_SUM, c[r], &req[r]), FOLD_OK, c[r]);
  }
}

static void check_sum(int n) {
  for (int r = 0; r < n; r++)
    for (int i = 0; i < CNT; i += 97)
      CHECK(fout[r][i] == (float)(n * (n + 1) / 2));
}

/* A rank that computes sends later; the call itself takes no virtual time;
 * work adds up; a message posted before the compute is not delayed. */
static void case_compute_send(void) {
  fold_sim_params p = dyadic();
  fold_comm *c[2];
  fold_sim *sim = make(2, &p, c);
  fold_request *s1, *s2, *r1, *r2;
  CHECK_RC(fold_irecv(rbuf[1], B, FOLD_UINT8, 0, 0, c[1], &r1), FOLD_OK, c[1]);
  CHECK_RC(fold_irecv(rbuf[2], B, FOLD_UINT8, 0, 1, c[1], &r2), FOLD_OK, c[1]);
  CHECK_RC(fold_isend(sbuf[0], B, FOLD_UINT8, 1, 0, c[0], &s1), FOLD_OK, c[0]); /* before: leaves at 0 */
  CHECK_RC(fold_sim_compute(c[0], 0.25), FOLD_OK, c[0]);
  CHECK_RC(fold_sim_compute(c[0], 0.25), FOLD_OK, c[0]); /* busy until 0.5 */
  CHECK_RC(fold_sim_compute(c[0], 0), FOLD_OK, c[0]);    /* nothing */
  CHECK_T(fold_sim_time(sim), 0);
  CHECK_RC(fold_isend(sbuf[0], B, FOLD_UINT8, 1, 1, c[0], &s2), FOLD_OK, c[0]); /* after: leaves at 0.5 */
  CHECK_RC(fold_wait(r1), FOLD_OK, c[1]);
  CHECK_T(fold_sim_time(sim), LAT + XFER);
  CHECK_RC(fold_wait(s2), FOLD_OK, c[0]);
  CHECK_T(fold_sim_time(sim), 0.5 + XFER);
  CHECK_RC(fold_wait(r2), FOLD_OK, c[1]);
  CHECK_T(fold_sim_time(sim), 0.5 + LAT + XFER);
  CHECK_RC(fold_wait(s1), FOLD_OK, c[0]);

  /* a blocking send after a compute: returns when the bytes have left */
  double t0 = fold_sim_time(sim);
  CHECK_RC(fold_sim_compute(c[0], 0.125), FOLD_OK, c[0]);
  CHECK_RC(fold_send(sbuf[0], B, FOLD_UINT8, 1, 2, c[0]), FOLD_OK, c[0]);
  CHECK_T(fold_sim_time(sim), t0 + 0.125 + XFER);
  CHECK_RC(fold_recv(rbuf[1], B, FOLD_UINT8, 0, 2, c[1]), FOLD_OK, c[1]);
  CHECK_T(fold_sim_time(sim), t0 + 0.125 + LAT + XFER);
  /* compute alone: fold_sim_run reaches its end */
  t0 = fold_sim_time(sim);
  CHECK_RC(fold_sim_compute(c[1], 2.0), FOLD_OK, c[1]);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK_T(fold_sim_time(sim), t0 + 2.0);
  fold_sim_destroy(sim);
}

static double g_done_at_check[2]; /* when check_recv_done ran */
static int g_done_seen[2], g_checks;
static fold_request *g_req;

static void check_recv_done(void *arg) {
  g_done_at_check[g_checks] = fold_sim_time(arg);
  g_done_seen[g_checks++] = fold__req_done(g_req);
}

/* A computing receiver: the message arrives and its receive request
 * completes at arrival (buffered by the NIC), but a blocking receive returns
 * only when the compute is over; a collective on it reduces and sends after
 * its compute. */
static void case_compute_recv(void) {
  fold_sim_params p = dyadic();
  fold_comm *c[2];
  fold_sim *sim = make(2, &p, c);
  CHECK_RC(fold_sim_compute(c[1], 0.5), FOLD_OK, c[1]);
  fold_request *s;
  CHECK_RC(fold_irecv(rbuf[1], B, FOLD_UINT8, 0, 0, c[1], &g_req), FOLD_OK, c[1]);
  CHECK_RC(fold_isend(sbuf[0], B, FOLD_UINT8, 1, 0, c[0], &s), FOLD_OK, c[0]);
  /* look just before the arrival (LAT + XFER) and just after */
  CHECK_RC(fold_sim_at(sim, XFER, check_recv_done, sim), FOLD_OK, NULL);
  CHECK_RC(fold_sim_at(sim, 2 * LAT + XFER, check_recv_done, sim), FOLD_OK, NULL);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK(g_checks == 2 && g_done_seen[0] == 0 && g_done_seen[1] == 1);
  CHECK_T(g_done_at_check[0], XFER);
  CHECK_T(g_done_at_check[1], 2 * LAT + XFER);
  CHECK_T(fold_sim_time(sim), 0.5); /* the run went on to the end of the compute */
  CHECK_RC(fold_wait(g_req), FOLD_OK, c[1]);
  CHECK_RC(fold_wait(s), FOLD_OK, c[0]);

  /* blocking: the message is there at t0 + LAT + XFER, the rank at t0 + 0.5 */
  double t0 = fold_sim_time(sim);
  CHECK_RC(fold_sim_compute(c[1], 0.5), FOLD_OK, c[1]);
  CHECK_RC(fold_isend(sbuf[0], B, FOLD_UINT8, 1, 1, c[0], &s), FOLD_OK, c[0]);
  CHECK_RC(fold_recv(rbuf[1], B, FOLD_UINT8, 0, 1, c[1]), FOLD_OK, c[1]);
  CHECK_T(fold_sim_time(sim), t0 + 0.5);
  CHECK_RC(fold_wait(s), FOLD_OK, c[0]);
  fold_sim_destroy(sim);

  /* allreduce at n = 2 (one exchange, one reduction per rank), rank 1
   * computing 0.5 s first: its send leaves at 0.5 and ends at 0.5 + XFER,
   * when its round completes (rank 0's message is long there) and it
   * reduces; rank 0 reduces when rank 1's message arrives. */
  p.op_time = GAMMA;
  p.op_overhead = OVH;
  sim = make(2, &p, c);
  fold_request *req[2];
  CHECK_RC(fold_sim_compute(c[1], 0.5), FOLD_OK, c[1]);
  start_rd(c, 2, req);
  CHECK_RC(fold_wait(req[1]), FOLD_OK, c[1]);
  CHECK_T(fold_sim_time(sim), 0.5 + XFER + OVH + B * GAMMA);
  CHECK_RC(fold_wait(req[0]), FOLD_OK, c[0]);
  CHECK_T(fold_sim_time(sim), 0.5 + LAT + XFER + OVH + B * GAMMA);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  check_sum(2);
  fold_sim_destroy(sim);
}

/* ---- callbacks ------------------------------------------------------------------ */

typedef struct {
  fold_sim *sim;
  fold_comm **c;
  fold_request *req[8];
  double at[8]; /* fold_sim_time when each callback ran */
  int order[8], nran;
  int rc;
} world;

static void cb_send(void *arg) {
  world *w = arg;
  w->at[w->nran] = fold_sim_time(w->sim);
  w->order[w->nran++] = 0;
  w->rc = fold_isend(sbuf[0], B, FOLD_UINT8, 1, 0, w->c[0], &w->req[0]);
}

static void cb_allreduce(void *arg) {
  world *w = arg;
  w->at[w->nran] = fold_sim_time(w->sim);
  w->order[w->nran++] = 1;
  start_rd(w->c, 4, w->req);
}

static void cb_second(void *arg) {
  world *w = arg;
  w->at[w->nran] = fold_sim_time(w->sim);
  w->order[w->nran++] = 3;
}

/* Computes, schedules another callback for now (it runs after this one)
 * and one in the past (refused). */
static void cb_nested(void *arg) {
  world *w = arg;
  w->at[w->nran] = fold_sim_time(w->sim);
  w->order[w->nran++] = 2;
  w->rc = fold_sim_compute(w->c[2], 0.25);
  if (w->rc == FOLD_OK)
    w->rc = fold_sim_at(w->sim, fold_sim_time(w->sim), cb_second, w);
  if (w->rc == FOLD_OK && fold_sim_at(w->sim, fold_sim_time(w->sim) - LAT, cb_second, w) != FOLD_EINVAL)
    w->rc = -1000;
}

static void cb_blocks(void *arg) {
  world *w = arg;
  w->rc = fold_recv(rbuf[1], B, FOLD_UINT8, 0, 9, w->c[1]);
}

static void cb_never(void *arg) {
  world *w = arg;
  w->rc = -2000;
}

/* Callbacks run at their time, in scheduling order at equal times, and what
 * they start (sends, collectives, compute, callbacks) starts then. */
static void case_at(void) {
  fold_sim_params p = dyadic();
  fold_comm *c[4];
  world w = {0};
  w.sim = make(4, &p, c);
  w.c = c;
  fold_request *r;
  CHECK_RC(fold_irecv(rbuf[1], B, FOLD_UINT8, 0, 0, c[1], &r), FOLD_OK, c[1]);
  CHECK_RC(fold_sim_at(w.sim, 0.25, cb_send, &w), FOLD_OK, NULL);
  CHECK_RC(fold_sim_run(w.sim), FOLD_OK, NULL);
  CHECK(w.nran == 1 && w.rc == FOLD_OK);
  CHECK_T(w.at[0], 0.25);
  CHECK_T(fold_sim_time(w.sim), 0.25 + LAT + XFER);
  CHECK_RC(fold_wait(r), FOLD_OK, c[1]);
  CHECK_RC(fold_wait(w.req[0]), FOLD_OK, c[0]);

  /* a blocking call runs the simulator through the callback */
  w.nran = 0;
  CHECK_RC(fold_sim_at(w.sim, 0.5, cb_send, &w), FOLD_OK, NULL);
  CHECK_RC(fold_recv(rbuf[1], B, FOLD_UINT8, 0, 0, c[1]), FOLD_OK, c[1]);
  CHECK(w.nran == 1);
  CHECK_T(fold_sim_time(w.sim), 0.5 + LAT + XFER);
  CHECK_RC(fold_wait(w.req[0]), FOLD_OK, c[0]);

  /* a collective started by a callback at t = 1: two exchange rounds */
  w.nran = 0;
  CHECK_RC(fold_sim_at(w.sim, 1.0, cb_allreduce, &w), FOLD_OK, NULL);
  CHECK_RC(fold_sim_run(w.sim), FOLD_OK, NULL);
  CHECK(w.nran == 1);
  CHECK_T(fold_sim_time(w.sim), 1.0 + 2 * (LAT + XFER));
  for (int i = 0; i < 4; i++)
    CHECK_RC(fold_wait(w.req[i]), FOLD_OK, c[i]);
  check_sum(4);

  /* equal times keep scheduling order; a callback schedules another one at
   * its own time (it runs after) and computes */
  w.nran = 0;
  CHECK_RC(fold_sim_at(w.sim, 2.0, cb_nested, &w), FOLD_OK, NULL);
  CHECK_RC(fold_sim_at(w.sim, 2.0, cb_allreduce, &w), FOLD_OK, NULL);
  CHECK_RC(fold_sim_run(w.sim), FOLD_OK, NULL);
  CHECK(w.rc == FOLD_OK && w.nran == 3);
  CHECK(w.order[0] == 2 && w.order[1] == 1 && w.order[2] == 3);
  CHECK_T(w.at[0], 2.0);
  CHECK_T(w.at[2], 2.0);
  /* rank 2 computes until 2.25: its first send leaves then; its partner in
   * round one (rank 3) waits for it, then round two, which ranks 0 and 1
   * can only finish with ranks 2 and 3 */
  CHECK_T(fold_sim_time(w.sim), 2.25 + 2 * (LAT + XFER));
  for (int i = 0; i < 4; i++)
    CHECK_RC(fold_wait(w.req[i]), FOLD_OK, c[i]);
  check_sum(4);

  /* the past, and nonsense */
  double now = fold_sim_time(w.sim);
  CHECK_RC(fold_sim_at(w.sim, now - LAT, cb_send, &w), FOLD_EINVAL, NULL);
  printf("fold_sim_at in the past: %s\n", fold_comm_last_error(NULL));
  CHECK(strstr(fold_comm_last_error(NULL), "in the past") != NULL);
  CHECK_RC(fold_sim_at(w.sim, NAN, cb_send, &w), FOLD_EINVAL, NULL);
  CHECK_RC(fold_sim_at(w.sim, INFINITY, cb_send, &w), FOLD_EINVAL, NULL);
  CHECK_RC(fold_sim_at(NULL, 1.0, cb_send, &w), FOLD_EINVAL, NULL);
  CHECK(strstr(fold_comm_last_error(NULL), "sim is NULL") != NULL);
  CHECK_RC(fold_sim_at(w.sim, now + 1, NULL, &w), FOLD_EINVAL, NULL);
  CHECK(strstr(fold_comm_last_error(NULL), "fn is NULL") != NULL);
  CHECK_RC(fold_sim_at(w.sim, now, cb_second, &w), FOLD_OK, NULL); /* now itself is fine */
  w.nran = 0;
  CHECK_RC(fold_sim_run(w.sim), FOLD_OK, NULL);
  CHECK(w.nran == 1 && w.order[0] == 3);
  CHECK_T(fold_sim_time(w.sim), now);

  /* a callback must not block; one still pending at destroy never runs
   * (and leaks nothing: ASan) */
  w.rc = 0;
  CHECK_RC(fold_sim_at(w.sim, now + 1, cb_blocks, &w), FOLD_OK, NULL);
  CHECK_RC(fold_sim_run(w.sim), FOLD_OK, NULL);
  CHECK_RC(w.rc, FOLD_EINTERNAL, c[1]);
  printf("blocking in a callback: %s\n", fold_comm_last_error(c[1]));
  CHECK(strstr(fold_comm_last_error(c[1]), "rank 1") != NULL);
  CHECK_RC(fold_sim_at(w.sim, now + 5, cb_never, &w), FOLD_OK, NULL);
  fold_sim_destroy(w.sim);
  CHECK(w.rc == FOLD_EINTERNAL);
}

/* ---- per-rank parameters ------------------------------------------------------------ */

/* Two ranks, rank 1 slow (4x latency, 4x byte time): every message between
 * them takes the larger latency; 0 -> 1 enters rank 1 at its byte time, and
 * 1 -> 0 arrives no sooner than its last byte left rank 1. Reductions cost
 * what the reducing rank's op_time and op_overhead say. */
static void case_rank_params_2(void) {
  fold_sim_params p = dyadic(), slow = dyadic();
  slow.latency = 4 * LAT;
  slow.byte_time = 4 * BT;
  fold_comm *c[2];
  fold_sim *sim = make(2, &p, c);
  CHECK_RC(fold_sim_set_rank_params(sim, 1, &slow), FOLD_OK, NULL);
  fold_request *s0, *s1, *r0, *r1;
  CHECK_RC(fold_irecv(rbuf[1], B, FOLD_UINT8, 0, 0, c[1], &r1), FOLD_OK, c[1]);
  CHECK_RC(fold_irecv(rbuf[0], B, FOLD_UINT8, 1, 0, c[0], &r0), FOLD_OK, c[0]);
  CHECK_RC(fold_isend(sbuf[0], B, FOLD_UINT8, 1, 0, c[0], &s0), FOLD_OK, c[0]);
  CHECK_RC(fold_isend(sbuf[1], B, FOLD_UINT8, 0, 0, c[1], &s1), FOLD_OK, c[1]);
  CHECK_RC(fold_wait(s0), FOLD_OK, c[0]);
  CHECK_T(fold_sim_time(sim), XFER); /* rank 0's own link */
  CHECK_RC(fold_wait(s1), FOLD_OK, c[1]);
  CHECK_T(fold_sim_time(sim), 4 * XFER); /* rank 1's slow link */
  CHECK_RC(fold_wait(r1), FOLD_OK, c[1]);
  CHECK_T(fold_sim_time(sim), 4 * LAT + 4 * XFER); /* max latency, rank 1's in-link */
  CHECK_RC(fold_wait(r0), FOLD_OK, c[0]);
  CHECK_T(fold_sim_time(sim), 4 * LAT + 4 * XFER); /* the tail bound: not 4 LAT + XFER */
  fold_sim_destroy(sim);

  /* op_time and op_overhead of the reducing rank */
  p.op_time = GAMMA;
  p.op_overhead = OVH;
  slow.op_time = 4 * GAMMA;
  slow.op_overhead = 4 * OVH;
  sim = make(2, &p, c);
  CHECK_RC(fold_sim_set_rank_params(sim, 1, &slow), FOLD_OK, NULL);
  CHECK(fold__sim_op_time(c[0]) == GAMMA && fold__sim_op_time(c[1]) == 4 * GAMMA);
  CHECK(fold__sim_reduce_cost(c[1], B) == 4 * OVH + B * 4 * GAMMA);
  fold_request *req[2];
  start_rd(c, 2, req);
  CHECK_RC(fold_wait(req[0]), FOLD_OK, c[0]);
  CHECK_T(fold_sim_time(sim), 4 * LAT + 4 * XFER + OVH + B * GAMMA);
  CHECK_RC(fold_wait(req[1]), FOLD_OK, c[1]);
  CHECK_T(fold_sim_time(sim), 4 * LAT + 4 * XFER + 4 * OVH + B * 4 * GAMMA);
  check_sum(2);
  fold_sim_destroy(sim);
}

/* Three ranks, rank 2 slow: two messages into it share its slow in-link;
 * two out of it share its slow out-link; the fast pair 0 -> 1 is untouched. */
/* case_rank_params_3's five messages: into 2 from 0 and 1; out of 2 to 0
 * then 1; 0 -> 1 on tag 1. */
static void post_rank_params_3(fold_comm **c, fold_request **rr, fold_request **ss) {
  CHECK_RC(fold_irecv(rbuf[2], B, FOLD_UINT8, 0, 0, c[2], &rr[0]), FOLD_OK, c[2]);
  CHECK_RC(fold_irecv(rbuf[3], B, FOLD_UINT8, 1, 0, c[2], &rr[1]), FOLD_OK, c[2]);
  CHECK_RC(fold_irecv(rbuf[0], B, FOLD_UINT8, 2, 0, c[0], &rr[2]), FOLD_OK, c[0]);
  CHECK_RC(fold_irecv(rbuf[1], B, FOLD_UINT8, 2, 0, c[1], &rr[3]), FOLD_OK, c[1]);
  CHECK_RC(fold_irecv(rbuf[4], B, FOLD_UINT8, 0, 1, c[1], &rr[4]), FOLD_OK, c[1]);
  CHECK_RC(fold_isend(sbuf[0], B, FOLD_UINT8, 2, 0, c[0], &ss[0]), FOLD_OK, c[0]);
  CHECK_RC(fold_isend(sbuf[1], B, FOLD_UINT8, 2, 0, c[1], &ss[1]), FOLD_OK, c[1]);
  CHECK_RC(fold_isend(sbuf[2], B, FOLD_UINT8, 0, 0, c[2], &ss[2]), FOLD_OK, c[2]);
  CHECK_RC(fold_isend(sbuf[2], B, FOLD_UINT8, 1, 0, c[2], &ss[3]), FOLD_OK, c[2]);
  CHECK_RC(fold_isend(sbuf[0], B, FOLD_UINT8, 1, 1, c[0], &ss[4]), FOLD_OK, c[0]);
}

static void case_rank_params_3(void) {
  fold_sim_params p = dyadic(), slow = dyadic();
  slow.latency = 4 * LAT;
  slow.byte_time = 4 * BT;
  fold_comm *c[3];
  fold_sim *sim = make(3, &p, c);
  CHECK_RC(fold_sim_set_rank_params(sim, 2, &slow), FOLD_OK, NULL);
  fold_request *rr[5], *ss[5];
  post_rank_params_3(c, rr, ss);
  const double want_r[5] = {
      4 * LAT + 4 * XFER,            /* 0 -> 2: reaches at 4 LAT, 4 XFER on rank 2's in-link */
      4 * LAT + 8 * XFER,            /* 1 -> 2: reaches at 4 LAT too, waits for the first */
      4 * LAT + 4 * XFER,            /* 2 -> 0: leaves over 4 XFER: the tail bound */
      8 * XFER + 4 * LAT,            /* 2 -> 1: leaves after the first, at 4 XFER */
      XFER + LAT + XFER,             /* 0 -> 1 tag 1: behind 0 -> 2 on rank 0's out-link, latency LAT */
  };
  const double want_s[5] = {XFER, XFER, 4 * XFER, 8 * XFER, 2 * XFER};
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK_T(fold_sim_time(sim), 4 * LAT + 8 * XFER);
  fold_sim_destroy(sim);
  /* each time on its own: a fresh world per message, waited for blocking */
  for (int k = 0; k < 5; k++) {
    for (int half = 0; half < 2; half++) {
      sim = make(3, &p, c);
      CHECK_RC(fold_sim_set_rank_params(sim, 2, &slow), FOLD_OK, NULL);
      post_rank_params_3(c, rr, ss);
      fold_request *x = half ? ss[k] : rr[k];
      const int who[5][2] = {{2, 0}, {2, 1}, {0, 2}, {1, 2}, {1, 0}}; /* receiver, sender */
      CHECK_RC(fold_wait(x), FOLD_OK, c[who[k][half]]);
      CHECK_T(fold_sim_time(sim), half ? want_s[k] : want_r[k]);
      CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
      fold_sim_destroy(sim);
    }
  }
}

/* op_overhead is charged once per reduction call: allreduce=
 * recursive_doubling at n = 4 makes two per rank (one per exchange round),
 * each on the critical path: 2 (LAT + XFER + OVH + B GAMMA). */
static void case_op_overhead(void) {
  fold_sim_params p = dyadic();
  fold_comm *c[4];
  fold_request *req[4];
  double t[2];
  for (int k = 0; k < 2; k++) {
    p.op_overhead = k ? OVH : 0;
    p.op_time = k ? GAMMA : 0;
    fold_sim *sim = make(4, &p, c);
    start_rd(c, 4, req);
    CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
    t[k] = fold_sim_time(sim);
    for (int i = 0; i < 4; i++)
      CHECK_RC(fold_wait(req[i]), FOLD_OK, c[i]);
    check_sum(4);
    fold_sim_destroy(sim);
  }
  CHECK_T(t[0], 2 * (LAT + XFER));
  CHECK_T(t[1], 2 * (LAT + XFER + OVH + B * GAMMA));
  /* the default is 0 */
  fold_sim_params_default(&p);
  CHECK(p.op_overhead == 0);
  /* not simulated: no cost */
  CHECK(fold__sim_reduce_cost(NULL, 100) == 0);
}

/* Bad inputs: FOLD_EINVAL with a message. */
static void case_args(void) {
  fold_sim_params p = dyadic();
  fold_comm *c[3];
  fold_sim *sim = make(3, &p, c);
  CHECK_RC(fold_sim_compute(c[0], -1), FOLD_EINVAL, c[0]);
  printf("negative compute: %s\n", fold_comm_last_error(c[0]));
  CHECK(strstr(fold_comm_last_error(c[0]), "rank 0") != NULL);
  CHECK_RC(fold_sim_compute(c[1], NAN), FOLD_EINVAL, c[1]);
  CHECK_RC(fold_sim_compute(c[1], INFINITY), FOLD_EINVAL, c[1]);
  CHECK_RC(fold_sim_compute(NULL, 1), FOLD_EINVAL, NULL);
  CHECK(strstr(fold_comm_last_error(NULL), "comm is NULL") != NULL);
  CHECK_T(fold_sim_time(sim), 0);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL); /* nothing was charged */
  CHECK_T(fold_sim_time(sim), 0);

  CHECK_RC(fold_sim_set_rank_params(NULL, 0, &p), FOLD_EINVAL, NULL);
  CHECK(strstr(fold_comm_last_error(NULL), "sim is NULL") != NULL);
  CHECK_RC(fold_sim_set_rank_params(sim, 0, NULL), FOLD_EINVAL, NULL);
  CHECK_RC(fold_sim_set_rank_params(sim, 3, &p), FOLD_EINVAL, NULL);
  printf("rank out of range: %s\n", fold_comm_last_error(NULL));
  CHECK(strstr(fold_comm_last_error(NULL), "rank 3") != NULL);
  CHECK_RC(fold_sim_set_rank_params(sim, -1, &p), FOLD_EINVAL, NULL);
  fold_sim_params bad = p;
  bad.op_overhead = -1;
  CHECK_RC(fold_sim_set_rank_params(sim, 1, &bad), FOLD_EINVAL, NULL);
  CHECK(strstr(fold_comm_last_error(NULL), "rank 1") != NULL);
  bad = p;
  bad.byte_time = NAN;
  CHECK_RC(fold_sim_set_rank_params(sim, 1, &bad), FOLD_EINVAL, NULL);
  /* a refused change changed nothing: rank 1 still has the world's parameters */
  fold_request *r;
  CHECK_RC(fold_irecv(rbuf[1], B, FOLD_UINT8, 0, 0, c[1], &r), FOLD_OK, c[1]);
  CHECK_RC(fold_send(sbuf[0], B, FOLD_UINT8, 1, 0, c[0]), FOLD_OK, c[0]);
  CHECK_RC(fold_wait(r), FOLD_OK, c[1]);
  CHECK_T(fold_sim_time(sim), LAT + XFER);
  /* fold_sim_create checks op_overhead too */
  fold_sim *s2 = NULL;
  fold_comm *d[2];
  bad = p;
  bad.op_overhead = INFINITY;
  CHECK_RC(fold_sim_create(2, &bad, &s2, d), FOLD_EINVAL, NULL);
  CHECK(s2 == NULL && strstr(fold_comm_last_error(NULL), "op_overhead") != NULL);
  fold_sim_destroy(sim);

  /* not a simulated communicator */
  fold_comm *t;
  CHECK_RC(fold_comm_init_threads(1, &t), FOLD_OK, NULL);
  CHECK_RC(fold_sim_compute(t, 1.0), FOLD_EINVAL, t);
  printf("not simulated: %s\n", fold_comm_last_error(t));
  CHECK(strstr(fold_comm_last_error(t), "not a simulated communicator") != NULL);
  fold_comm_destroy(t);
}

int main(int argc, char **argv) {
  static const sim_check_case cases[] = {
      {"compute_send", case_compute_send}, {"compute_recv", case_compute_recv},
      {"at", case_at},                     {"rank_params_2", case_rank_params_2},
      {"rank_params_3", case_rank_params_3}, {"op_overhead", case_op_overhead},
      {"args", case_args},
  };
  return sim_check_run("sim_compute", cases, sizeof cases / sizeof cases[0], argc, argv);
}
