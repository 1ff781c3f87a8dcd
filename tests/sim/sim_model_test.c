/* sim_model_test.c — the simulated network's cost model, determinism,
 * deadlock reports and blocking calls. Usage: sim_model_test <case>. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "fold.h"
#include "sim/sim_check.h"
#include "transport/sim/sim.h"

/* Dyadic parameters: every time below is exact in binary floating point,
 * so the model's formulas can be checked with ==. */
#define LAT (1.0 / 1024)          /* 2^-10 s */
#define BT (1.0 / (1 << 20))      /* 2^-20 s per byte */
#define B 4096                    /* bytes: one transfer takes 2^-8 s */
#define XFER ((double)B * BT)

static unsigned char sbuf[8][B], rbuf[8][B];

static fold_sim *make(int n, fold_comm **comms) {
  fold_sim_params p = {.latency = LAT, .byte_time = BT, .op_time = 0};
  fold_sim *sim;
  CHECK_RC(fold_sim_create(n, &p, &sim, comms), FOLD_OK, NULL);
  return sim;
}

static void fill(int i) {
  for (int k = 0; k < B; k++)
    sbuf[i][k] = (unsigned char)(i * 31 + k);
}

static int same(int s, int r, size_t bytes) { return memcmp(sbuf[s], rbuf[r], bytes) == 0; }

/* One message: it arrives after latency + b*byte_time; the blocking send
 * returns when the sender's link has pushed the bytes (b*byte_time). */
static void case_one_message(void) {
  fold_comm *c[2];
  fold_sim *sim = make(2, c);
  fill(0);
  fold_request *r;
  CHECK_RC(fold_irecv(rbuf[1], B, FOLD_UINT8, 0, 3, c[1], &r), FOLD_OK, c[1]);
  CHECK_RC(fold_send(sbuf[0], B, FOLD_UINT8, 1, 3, c[0]), FOLD_OK, c[0]);
  CHECK_T(fold_sim_time(sim), XFER);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK_T(fold_sim_time(sim), LAT + XFER);
  CHECK_RC(fold_wait(r), FOLD_OK, c[1]);
  CHECK(same(0, 1, B));
  fold_sim_destroy(sim);

  /* the default parameters, compared with the same expression */
  fold_comm *d[2];
  fold_sim_params p;
  fold_sim_params_default(&p);
  CHECK(p.latency == 5e-6 && p.byte_time == 8e-11 && p.op_time == 0);
  CHECK_RC(fold_sim_create(2, NULL, &sim, d), FOLD_OK, NULL);
  CHECK_RC(fold_isend(sbuf[0], 1000, FOLD_UINT8, 1, 0, d[0], &r), FOLD_OK, d[0]);
  CHECK_RC(fold_recv(rbuf[1], 1000, FOLD_UINT8, 0, 0, d[1]), FOLD_OK, d[1]);
  CHECK_T(fold_sim_time(sim), p.latency + 1000.0 * p.byte_time);
  CHECK_RC(fold_wait(r), FOLD_OK, d[0]);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK(same(0, 1, 1000));
  fold_sim_destroy(sim);
}

/* Every rank sends to its right neighbour at once: one step of a ring takes
 * latency + b*byte_time, no matter how many ranks. */
static void case_ring_step(void) {
  enum { N = 8 };
  fold_comm *c[N];
  fold_sim *sim = make(N, c);
  fold_request *rs[N], *rr[N];
  for (int i = 0; i < N; i++) {
    fill(i);
    CHECK_RC(fold_irecv(rbuf[i], B, FOLD_UINT8, (i + N - 1) % N, 0, c[i], &rr[i]), FOLD_OK, c[i]);
    CHECK_RC(fold_isend(sbuf[i], B, FOLD_UINT8, (i + 1) % N, 0, c[i], &rs[i]), FOLD_OK, c[i]);
  }
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK_T(fold_sim_time(sim), LAT + XFER);
  for (int i = 0; i < N; i++) {
    CHECK_RC(fold_wait(rr[i]), FOLD_OK, c[i]);
    CHECK_RC(fold_wait(rs[i]), FOLD_OK, c[i]);
    CHECK(same((i + N - 1) % N, i, B));
  }
  /* a second step starts from where the first ended */
  for (int i = 0; i < N; i++) {
    CHECK_RC(fold_irecv(rbuf[i], B, FOLD_UINT8, (i + N - 1) % N, 1, c[i], &rr[i]), FOLD_OK, c[i]);
    CHECK_RC(fold_isend(sbuf[i], B, FOLD_UINT8, (i + 1) % N, 1, c[i], &rs[i]), FOLD_OK, c[i]);
  }
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK_T(fold_sim_time(sim), 2 * (LAT + XFER));
  for (int i = 0; i < N; i++) {
    CHECK_RC(fold_wait(rr[i]), FOLD_OK, c[i]);
    CHECK_RC(fold_wait(rs[i]), FOLD_OK, c[i]);
  }
  fold_sim_destroy(sim);
}

/* Two messages posted back to back by one sender (to different receivers)
 * share its outgoing link: the second starts when the first has left. */
static void case_sender_serialises(void) {
  fold_comm *c[3];
  fold_sim *sim = make(3, c);
  fill(0);
  fold_request *s1, *s2, *r1, *r2;
  CHECK_RC(fold_irecv(rbuf[1], B, FOLD_UINT8, 0, 0, c[1], &r1), FOLD_OK, c[1]);
  CHECK_RC(fold_irecv(rbuf[2], B / 2, FOLD_UINT8, 0, 0, c[2], &r2), FOLD_OK, c[2]);
  CHECK_RC(fold_isend(sbuf[0], B, FOLD_UINT8, 1, 0, c[0], &s1), FOLD_OK, c[0]);
  CHECK_RC(fold_isend(sbuf[0], B / 2, FOLD_UINT8, 2, 0, c[0], &s2), FOLD_OK, c[0]);
  CHECK_RC(fold_wait(s1), FOLD_OK, c[0]);
  CHECK_T(fold_sim_time(sim), XFER);
  CHECK_RC(fold_wait(r1), FOLD_OK, c[1]);
  CHECK_T(fold_sim_time(sim), LAT + XFER);
  CHECK_RC(fold_wait(s2), FOLD_OK, c[0]);
  CHECK_T(fold_sim_time(sim), XFER + XFER / 2);
  CHECK_RC(fold_wait(r2), FOLD_OK, c[2]);
  CHECK_T(fold_sim_time(sim), XFER + LAT + XFER / 2);
  CHECK(same(0, 1, B) && same(0, 2, B / 2));
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  fold_sim_destroy(sim);
}

/* Two senders to one receiver share its incoming link: the second message
 * starts when the first has fully entered, and its send completes late. */
static void case_receiver_serialises(void) {
  fold_comm *c[3];
  fold_sim *sim = make(3, c);
  fill(1);
  fill(2);
  fold_request *s1, *s2, *r1, *r2;
  CHECK_RC(fold_irecv(rbuf[0], B, FOLD_UINT8, 1, 0, c[0], &r1), FOLD_OK, c[0]);
  CHECK_RC(fold_irecv(rbuf[3], B, FOLD_UINT8, 2, 0, c[0], &r2), FOLD_OK, c[0]);
  CHECK_RC(fold_isend(sbuf[1], B, FOLD_UINT8, 0, 0, c[1], &s1), FOLD_OK, c[1]);
  CHECK_RC(fold_isend(sbuf[2], B, FOLD_UINT8, 0, 0, c[2], &s2), FOLD_OK, c[2]);
  CHECK_RC(fold_wait(r1), FOLD_OK, c[0]);
  CHECK_T(fold_sim_time(sim), LAT + XFER);
  /* s2 left at once on rank 2's own link and completed at XFER (the switch
   * holds it while rank 0's link is busy), so waiting for it takes no time */
  CHECK_RC(fold_wait(s2), FOLD_OK, c[2]);
  CHECK_T(fold_sim_time(sim), LAT + XFER);
  CHECK_RC(fold_wait(r2), FOLD_OK, c[0]); /* rank 0's link takes it after the first: + XFER */
  CHECK_T(fold_sim_time(sim), XFER + LAT + XFER);
  CHECK_RC(fold_wait(s1), FOLD_OK, c[1]);
  CHECK(same(1, 0, B) && same(2, 3, B));
  fold_sim_destroy(sim);
}

/* Messages of one pair and tag never overtake each other, whatever their
 * sizes, also with parameters whose sums round. */
static void case_order(void) {
  enum { M = 200 };
  fold_comm *c[2];
  fold_sim *sim;
  fold_sim_params p = {.latency = 3.3e-6, .byte_time = 7.1e-11, .op_time = 0};
  CHECK_RC(fold_sim_create(2, &p, &sim, c), FOLD_OK, NULL);
  static uint32_t msg[M][64], got[M][64];
  fold_request *rs[M], *rr[M];
  uint32_t x = 12345;
  for (int m = 0; m < M; m++) {
    x = x * 1103515245u + 12345u;
    size_t words = 1 + (x >> 16) % 64;
    for (size_t k = 0; k < words; k++)
      msg[m][k] = (uint32_t)m;
    /* half the receives are posted before their message arrives, half after */
    if (m % 2 == 0)
      CHECK_RC(fold_irecv(got[m], 64, FOLD_UINT32, 0, 9, c[1], &rr[m]), FOLD_OK, c[1]);
    CHECK_RC(fold_isend(msg[m], words, FOLD_UINT32, 1, 9, c[0], &rs[m]), FOLD_OK, c[0]);
    if (m % 2 == 1)
      CHECK_RC(fold_irecv(got[m], 64, FOLD_UINT32, 0, 9, c[1], &rr[m]), FOLD_OK, c[1]);
  }
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  for (int m = 0; m < M; m++) {
    CHECK_RC(fold_wait(rr[m]), FOLD_OK, c[1]);
    CHECK_RC(fold_wait(rs[m]), FOLD_OK, c[0]);
    CHECK(got[m][0] == (uint32_t)m);
  }
  fold_sim_destroy(sim);
}

/* A scattered exchange with default parameters: returns the list of times at
 * which each receive completed (blocking waits in a fixed order) and the
 * final time. */
static void scattered(double *times, int *ntimes) {
  enum { N = 16, K = 3 };
  fold_comm *c[N];
  fold_sim *sim;
  CHECK_RC(fold_sim_create(N, NULL, &sim, c), FOLD_OK, NULL);
  static unsigned char buf[N][K][512], in[N][K][512];
  fold_request *rs[N][K], *rr[N][K];
  uint32_t x = 99;
  for (int i = 0; i < N; i++)
    for (int k = 0; k < K; k++) {
      x = x * 1103515245u + 12345u;
      int to = (i + 1 + k * 5) % N;
      size_t bytes = (x >> 8) % 512;
      CHECK_RC(fold_isend(buf[i][k], bytes, FOLD_UINT8, to, k, c[i], &rs[i][k]), FOLD_OK, c[i]);
      int from = (i - 1 - k * 5 + 2 * N) % N;
      CHECK_RC(fold_irecv(in[i][k], 512, FOLD_UINT8, from, k, c[i], &rr[i][k]), FOLD_OK, c[i]);
    }
  fold__sim_charge(c[5], 1e-6); /* some local work too */
  int t = 0;
  for (int i = N - 1; i >= 0; i--)
    for (int k = 0; k < K; k++) {
      CHECK_RC(fold_wait(rr[i][k]), FOLD_OK, c[i]);
      times[t++] = fold_sim_time(sim);
    }
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  times[t++] = fold_sim_time(sim);
  for (int i = 0; i < N; i++)
    for (int k = 0; k < K; k++)
      CHECK_RC(fold_wait(rs[i][k]), FOLD_OK, c[i]);
  *ntimes = t;
  fold_sim_destroy(sim);
}

/* The same program gives bit-identical times. */
static void case_determinism(void) {
  double a[64], b[64];
  int na, nb;
  scattered(a, &na);
  scattered(b, &nb);
  CHECK(na == nb && na > 1);
  CHECK(memcmp(a, b, (size_t)na * sizeof a[0]) == 0);
  CHECK(a[na - 1] > 0);
}

/* A receive that nothing matches: fold_sim_run reports the rank; the
 * receive stays pending, so posting the missing send completes it. A
 * blocking receive that can never complete fails its rank with
 * FOLD_ETIMEDOUT naming it. */
static void case_deadlock(void) {
  fold_comm *c[4];
  fold_sim *sim = make(4, c);
  fold_request *r, *s;
  CHECK_RC(fold_irecv(rbuf[1], B, FOLD_UINT8, 0, 5, c[1], &r), FOLD_OK, c[1]);
  CHECK_RC(fold_sim_run(sim), FOLD_ETIMEDOUT, NULL);
  const char *msg = fold_comm_last_error(NULL);
  printf("fold_sim_run: %s\n", msg);
  CHECK(strstr(msg, "rank 1 (receive from rank 0, tag 5)") != NULL);
  CHECK(strstr(msg, "1 rank waits") != NULL);
  CHECK(strstr(fold_comm_last_error(c[1]), "rank 1") != NULL);

  fill(0);
  CHECK_RC(fold_isend(sbuf[0], B, FOLD_UINT8, 1, 5, c[0], &s), FOLD_OK, c[0]);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK_RC(fold_wait(r), FOLD_OK, c[1]);
  CHECK_RC(fold_wait(s), FOLD_OK, c[0]);
  CHECK(same(0, 1, B));

  CHECK_RC(fold_recv(rbuf[2], B, FOLD_UINT8, 3, 8, c[2]), FOLD_ETIMEDOUT, c[2]);
  msg = fold_comm_last_error(c[2]);
  printf("fold_recv: %s\n", msg);
  CHECK(strstr(msg, "rank 2") != NULL && strstr(msg, "deadlock") != NULL);
  /* the failure is fail-stop for rank 2 only */
  CHECK_RC(fold_send(sbuf[0], 1, FOLD_UINT8, 2, 0, c[2]), FOLD_ETIMEDOUT, c[2]);
  CHECK_RC(fold_send(sbuf[0], 1, FOLD_UINT8, 0, 0, c[3]), FOLD_OK, c[3]);
  CHECK_RC(fold_recv(rbuf[0], 1, FOLD_UINT8, 3, 0, c[0]), FOLD_OK, c[0]);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  fold_sim_destroy(sim);
}

/* Blocking calls drive the simulator; the unexpected-message path works
 * across runs; self-sends and empty messages work. */
static void case_blocking(void) {
  fold_comm *c[2];
  fold_sim *sim = make(2, c);
  fill(0);
  fill(1);
  fold_request *s;
  CHECK_RC(fold_isend(sbuf[0], B, FOLD_UINT8, 1, 1, c[0], &s), FOLD_OK, c[0]);
  CHECK_RC(fold_recv(rbuf[1], B, FOLD_UINT8, 0, 1, c[1]), FOLD_OK, c[1]);
  CHECK_T(fold_sim_time(sim), LAT + XFER);
  CHECK(same(0, 1, B));
  CHECK_RC(fold_wait(s), FOLD_OK, c[0]);

  /* blocking send with no receive posted: eager, completes when sent */
  double t0 = fold_sim_time(sim);
  CHECK_RC(fold_send(sbuf[1], B, FOLD_UINT8, 0, 2, c[1]), FOLD_OK, c[1]);
  CHECK_T(fold_sim_time(sim), t0 + XFER);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL); /* arrives unexpected */
  CHECK_T(fold_sim_time(sim), t0 + LAT + XFER);
  fold_request *r;
  int done = 0;
  CHECK_RC(fold_irecv(rbuf[0], B, FOLD_UINT8, 1, 2, c[0], &r), FOLD_OK, c[0]);
  CHECK_RC(fold_test(r, &done), FOLD_OK, c[0]);
  CHECK(done == 1 && same(1, 0, B));

  /* an empty message takes exactly the latency */
  t0 = fold_sim_time(sim);
  CHECK_RC(fold_send(NULL, 0, FOLD_FLOAT32, 0, 3, c[1]), FOLD_OK, c[1]);
  CHECK_RC(fold_recv(NULL, 0, FOLD_FLOAT32, 1, 3, c[0]), FOLD_OK, c[0]);
  CHECK_T(fold_sim_time(sim), t0 + LAT);

  /* to oneself: no network, no time */
  t0 = fold_sim_time(sim);
  CHECK_RC(fold_isend(sbuf[0], 16, FOLD_UINT8, 0, 4, c[0], &s), FOLD_OK, c[0]);
  CHECK_RC(fold_recv(rbuf[2], 16, FOLD_UINT8, 0, 4, c[0]), FOLD_OK, c[0]);
  CHECK_RC(fold_wait(s), FOLD_OK, c[0]);
  CHECK(memcmp(sbuf[0], rbuf[2], 16) == 0);
  CHECK_T(fold_sim_time(sim), t0);

  /* a message longer than the receive buffer fails only that receive */
  CHECK_RC(fold_isend(sbuf[0], 64, FOLD_UINT8, 1, 5, c[0], &s), FOLD_OK, c[0]);
  CHECK_RC(fold_recv(rbuf[1], 32, FOLD_UINT8, 0, 5, c[1]), FOLD_EMISMATCH, c[1]);
  CHECK_RC(fold_wait(s), FOLD_OK, c[0]);
  CHECK_RC(fold_send(sbuf[1], 8, FOLD_UINT8, 0, 6, c[1]), FOLD_OK, c[1]);
  CHECK_RC(fold_recv(rbuf[0], 8, FOLD_UINT8, 1, 6, c[0]), FOLD_OK, c[0]);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);

  /* the engine hook's single step (for fold_test): one event per call */
  fold_request *rr;
  t0 = fold_sim_time(sim);
  CHECK_RC(fold_irecv(rbuf[1], B, FOLD_UINT8, 0, 7, c[1], &rr), FOLD_OK, c[1]);
  CHECK_RC(fold_isend(sbuf[0], B, FOLD_UINT8, 1, 7, c[0], &s), FOLD_OK, c[0]);
  CHECK(LAT < XFER); /* so the head reaches the port before the send is done */
  CHECK_RC(fold__engine_drive(c[1], NULL), FOLD_OK, c[1]); /* head reaches rank 1's port */
  CHECK_T(fold_sim_time(sim), t0 + LAT);
  CHECK(!fold__req_done(s) && !fold__req_done(rr));
  CHECK_RC(fold__engine_drive(c[1], NULL), FOLD_OK, c[1]); /* send done */
  CHECK_T(fold_sim_time(sim), t0 + XFER);
  CHECK(fold__req_done(s) && !fold__req_done(rr));
  CHECK_RC(fold__engine_drive(c[1], NULL), FOLD_OK, c[1]); /* arrival */
  CHECK_T(fold_sim_time(sim), t0 + LAT + XFER);
  CHECK(fold__req_done(rr));
  CHECK_RC(fold__engine_drive(c[1], NULL), FOLD_OK, c[1]); /* nothing left: no-op */
  CHECK_RC(fold_wait(rr), FOLD_OK, c[1]);
  CHECK_RC(fold_wait(s), FOLD_OK, c[0]);
  fold_sim_destroy(sim);
}

/* Busy time (fold__sim_charge) delays the rank's next postings and the end
 * of its blocking calls; timers (fold__sim_wake_at) fire at their time. */
static void case_charge_and_timers(void) {
  fold_comm *c[2];
  fold_sim_params p = {.latency = LAT, .byte_time = BT, .op_time = 0.25};
  fold_sim *sim;
  CHECK_RC(fold_sim_create(2, &p, &sim, c), FOLD_OK, NULL);
  CHECK(fold__sim_is(c[0]) && fold__sim_op_time(c[1]) == 0.25);
  fold__sim_charge(c[0], 0.5);
  fold__sim_charge(c[0], 0.25); /* adds up: busy until 0.75 */
  fold_request *r;
  CHECK_RC(fold_irecv(rbuf[1], B, FOLD_UINT8, 0, 0, c[1], &r), FOLD_OK, c[1]);
  CHECK_RC(fold_send(sbuf[0], B, FOLD_UINT8, 1, 0, c[0]), FOLD_OK, c[0]);
  CHECK_T(fold_sim_time(sim), 0.75 + XFER);
  CHECK_RC(fold_wait(r), FOLD_OK, c[1]);
  CHECK_T(fold_sim_time(sim), 0.75 + LAT + XFER);
  /* work alone advances the final time */
  fold__sim_charge(c[1], 1.0);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK_T(fold_sim_time(sim), 0.75 + LAT + XFER + 1.0);
  /* a blocking call returns only when the caller's work is over */
  double t0 = fold_sim_time(sim);
  fold__sim_charge(c[1], 0.125);
  fold_request *s;
  CHECK_RC(fold_isend(sbuf[0], B, FOLD_UINT8, 1, 1, c[0], &s), FOLD_OK, c[0]);
  CHECK_RC(fold_recv(rbuf[1], B, FOLD_UINT8, 0, 1, c[1]), FOLD_OK, c[1]);
  CHECK_T(fold_sim_time(sim), t0 + 0.125);
  CHECK_RC(fold_wait(s), FOLD_OK, c[0]);
  /* timers read exactly their time when they fire */
  int64_t base = fold__now(c[0]);
  int64_t at[] = {base + 1, base + 123456789, base + 999999999999LL};
  for (int i = 2; i >= 0; i--)
    CHECK_RC(fold__sim_wake_at(c[i % 2], at[i]), FOLD_OK, c[0]);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK(fold__now(c[0]) == at[2] && fold__now(c[1]) == at[2]);
  for (int64_t t = 1; t < (int64_t)1 << 50; t = t * 3 + 7)
    CHECK((int64_t)llround(((double)t / 1e9) * 1e9) == t);
  fold_sim_destroy(sim);
  /* not a simulated communicator: the hooks do nothing */
  CHECK(!fold__sim_is(NULL) && fold__sim_op_time(NULL) == 0);
  fold__sim_charge(NULL, 1.0);
}

/* fold_comm_destroy on one simulated rank frees it; peers see it as lost. */
static void case_destroy_rank(void) {
  fold_comm *c[4];
  fold_sim *sim = make(4, c);
  fold_request *r;
  CHECK_RC(fold_irecv(rbuf[2], B, FOLD_UINT8, 1, 0, c[2], &r), FOLD_OK, c[2]);
  CHECK_RC(fold_comm_destroy(c[1]), FOLD_OK, NULL);
  CHECK_RC(fold_wait(r), FOLD_EPEER, c[2]);
  CHECK(strstr(fold_comm_last_error(c[2]), "rank 1") != NULL);
  CHECK_RC(fold_send(sbuf[0], 4, FOLD_UINT8, 1, 0, c[0]), FOLD_EPEER, c[0]);
  printf("send to destroyed rank: %s\n", fold_comm_last_error(c[0]));
  CHECK(strstr(fold_comm_last_error(c[0]), "rank 1") != NULL);
  /* the others go on (rank 0 failed: what arrives there is dropped) */
  CHECK_RC(fold_send(sbuf[0], 4, FOLD_UINT8, 0, 0, c[3]), FOLD_OK, c[3]);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK_RC(fold_sim_destroy(sim), FOLD_OK, NULL);
}

/* A wait is bounded by FOLD_TIMEOUT of virtual time: a message that would
 * arrive later fails the waiting rank with FOLD_ETIMEDOUT. */
static void case_virtual_timeout(void) {
  setenv("FOLD_TIMEOUT", "1", 1); /* read when the communicators are made */
  fold_comm *c[2];
  fold_sim *sim = make(2, c);
  unsetenv("FOLD_TIMEOUT");
  fold__sim_charge(c[0], 5.0);
  fold_request *s;
  CHECK_RC(fold_isend(sbuf[0], 8, FOLD_UINT8, 1, 0, c[0], &s), FOLD_OK, c[0]);
  CHECK_RC(fold_recv(rbuf[1], 8, FOLD_UINT8, 0, 0, c[1]), FOLD_ETIMEDOUT, c[1]);
  printf("fold_recv: %s\n", fold_comm_last_error(c[1]));
  CHECK(strstr(fold_comm_last_error(c[1]), "virtual time") != NULL);
  CHECK(fold_sim_time(sim) < 1.0);
  /* fold_sim_run has no bound: the message still leaves at t = 5 s (and is
   * dropped by the failed receiver) */
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK_T(fold_sim_time(sim), 5.0 + LAT + 8 * BT);
  CHECK_RC(fold_wait(s), FOLD_OK, c[0]);
  fold_sim_destroy(sim);
}

/* Argument checks. */
static void case_args(void) {
  fold_comm *c[2];
  fold_sim *sim = (fold_sim *)&sim;
  fold_sim_params bad = {.latency = -1, .byte_time = 0, .op_time = 0};
  CHECK_RC(fold_sim_create(0, NULL, &sim, c), FOLD_EINVAL, NULL);
  CHECK(sim == NULL);
  CHECK_RC(fold_sim_create(2, &bad, &sim, c), FOLD_EINVAL, NULL);
  bad.latency = 0;
  bad.byte_time = NAN;
  CHECK_RC(fold_sim_create(2, &bad, &sim, c), FOLD_EINVAL, NULL);
  bad.byte_time = 0;
  bad.op_time = INFINITY;
  CHECK_RC(fold_sim_create(2, &bad, &sim, c), FOLD_EINVAL, NULL);
  CHECK_RC(fold_sim_create(2, NULL, NULL, c), FOLD_EINVAL, NULL);
  CHECK_RC(fold_sim_create(2, NULL, &sim, NULL), FOLD_EINVAL, NULL);
  CHECK_RC(fold_sim_run(NULL), FOLD_EINVAL, NULL);
  CHECK_RC(fold_sim_destroy(NULL), FOLD_OK, NULL);
  CHECK(fold_sim_time(NULL) == 0);
  /* a world of one; zero latency and bandwidth cost: everything is instant */
  bad.op_time = 0;
  CHECK_RC(fold_sim_create(1, &bad, &sim, c), FOLD_OK, NULL);
  CHECK(fold_comm_rank(c[0]) == 0 && fold_comm_size(c[0]) == 1);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK(fold_sim_time(sim) == 0);
  fold_sim_destroy(sim);
}

/* A message longer than the receive buffer (fold.h, point-to-point): the
 * receive fails with FOLD_EMISMATCH and writes nothing past its buffer; the
 * simulator, which models no answer from the receiver, completes the send
 * with FOLD_OK whatever the size; the next message on the tag arrives. */
static void case_oversized(void) {
  fold_comm *c[2];
  fold_sim *sim = make(2, c);
  static const size_t sizes[] = {100, 200000};
  for (int s = 0; s < 2; s++) {
    size_t b = sizes[s];
    unsigned char *out = malloc(b), *in = malloc(b);
    CHECK(out && in);
    for (size_t i = 0; i < b; i++) out[i] = (unsigned char)(i * 7 + s);
    memset(in, 0x5A, b);
    fold_request *r;
    CHECK_RC(fold_irecv(in, b / 2, FOLD_UINT8, 0, 5, c[1], &r), FOLD_OK, c[1]);
    CHECK_RC(fold_send(out, b, FOLD_UINT8, 1, 5, c[0]), FOLD_OK, c[0]);
    CHECK_RC(fold_wait(r), FOLD_EMISMATCH, c[1]);
    CHECK(strstr(fold_comm_last_error(c[1]), "larger than the receive buffer") != NULL);
    for (size_t i = b / 2; i < b; i++) CHECK(in[i] == 0x5A);
    /* unexpected: the message is there before the receive */
    CHECK_RC(fold_isend(out, b, FOLD_UINT8, 1, 6, c[0], &r), FOLD_OK, c[0]);
    CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
    CHECK_RC(fold_wait(r), FOLD_OK, c[0]);
    CHECK_RC(fold_recv(in, b / 2, FOLD_UINT8, 0, 6, c[1]), FOLD_EMISMATCH, c[1]);
    for (size_t i = b / 2; i < b; i++) CHECK(in[i] == 0x5A);
    /* still usable */
    CHECK_RC(fold_isend(out, b, FOLD_UINT8, 1, 5, c[0], &r), FOLD_OK, c[0]);
    CHECK_RC(fold_recv(in, b, FOLD_UINT8, 0, 5, c[1]), FOLD_OK, c[1]);
    CHECK_RC(fold_wait(r), FOLD_OK, c[0]);
    CHECK(memcmp(in, out, b) == 0);
    free(out);
    free(in);
  }
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  fold_sim_destroy(sim);
}

int main(int argc, char **argv) {
  static const sim_check_case cases[] = {
      {"one_message", case_one_message},
      {"ring_step", case_ring_step},
      {"sender_serialises", case_sender_serialises},
      {"receiver_serialises", case_receiver_serialises},
      {"order", case_order},
      {"determinism", case_determinism},
      {"deadlock", case_deadlock},
      {"blocking", case_blocking},
      {"charge_and_timers", case_charge_and_timers},
      {"destroy_rank", case_destroy_rank},
      {"virtual_timeout", case_virtual_timeout},
      {"args", case_args},
      {"oversized", case_oversized},
  };
  return sim_check_run("sim_model", cases, sizeof cases / sizeof cases[0], argc, argv);
}
