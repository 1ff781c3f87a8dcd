/* engine_timer.c — the engine's timers: real-time order, cancel and waits on
 * threads; exact virtual firing times in the simulator. Usage:
 * engine_timer <case>. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "engine/engine.h"
#include "fold.h"
#include "sim/sim_check.h"

#define MS 1000000LL

/* A timer that records when (engine time) and in which order it fired. */
typedef struct rec_timer {
  fold__timer t;
  int id;
  int64_t fired_at; /* engine ns; -1 while it has not fired */
  double sim_at;    /* fold_sim_time at firing (simulator cases) */
  int *log, *nlog;  /* ids in firing order */
  fold__timer *cancel; /* cancel this one when firing (NULL: none) */
  int rearm_left;      /* periodic: re-arm this many more times */
  int64_t period;
  fold_sim *sim;
} rec_timer;

static void rec_fire(fold_comm *c, fold__timer *t, void *arg) {
  rec_timer *r = arg;
  r->fired_at = fold__now(c);
  if (r->sim) r->sim_at = fold_sim_time(r->sim);
  r->log[(*r->nlog)++] = r->id;
  if (r->cancel) fold__timer_cancel(c, r->cancel);
  if (r->rearm_left > 0) {
    r->rearm_left--;
    CHECK(fold__timer_arm(c, t, t->due + r->period) == FOLD_OK); /* drift-free: from the deadline */
  }
}

static void rec_init(rec_timer *r, int id, int *log, int *nlog) {
  memset(r, 0, sizeof *r);
  r->id = id;
  r->fired_at = -1;
  r->log = log;
  r->nlog = nlog;
  fold__timer_init(&r->t, rec_fire, r);
}

/* Drive c with fold_progress until *nlog reaches want or `limit` ns pass. */
static void progress_until(fold_comm *c, const int *nlog, int want, int64_t limit) {
  int64_t end = fold__now(c) + limit;
  while (*nlog < want && fold__now(c) < end) CHECK_RC(fold_progress(c), FOLD_OK, c);
}

/* ---- real time, ranks as threads --------------------------------------------------- */

/* Timers fire in deadline order, never early; a cancelled one never fires,
 * also when a callback cancels it just before its turn; re-arming moves a
 * timer. Every rank runs this on its own thread at once. */
static void *order_rank(void *arg) {
  fold_comm *c = arg;
  int log[16], nlog = 0;
  rec_timer a, b, d, e, f, g;
  rec_init(&a, 30, log, &nlog);
  rec_init(&b, 10, log, &nlog);
  rec_init(&d, 20, log, &nlog);
  rec_init(&e, 15, log, &nlog); /* cancelled before it is due */
  rec_init(&f, 25, log, &nlog); /* cancelled by d's callback, due right after it */
  rec_init(&g, 5, log, &nlog);  /* armed for 40 ms, then moved to 5 ms */
  d.cancel = &f.t;
  int64_t t0 = fold__now(c);
  CHECK_RC(fold__timer_arm(c, &a.t, t0 + 30 * MS), FOLD_OK, c);
  CHECK_RC(fold__timer_arm(c, &b.t, t0 + 10 * MS), FOLD_OK, c);
  CHECK_RC(fold__timer_arm(c, &d.t, t0 + 20 * MS), FOLD_OK, c);
  CHECK_RC(fold__timer_arm(c, &e.t, t0 + 15 * MS), FOLD_OK, c);
  CHECK_RC(fold__timer_arm(c, &f.t, t0 + 20 * MS), FOLD_OK, c);
  CHECK_RC(fold__timer_arm_in(c, &g.t, 40 * MS), FOLD_OK, c);
  CHECK_RC(fold__timer_arm(c, &g.t, t0 + 5 * MS), FOLD_OK, c);
  CHECK(fold__timer_next(c) == t0 + 5 * MS);
  fold__timer_cancel(c, &e.t);
  fold__timer_cancel(c, &e.t); /* twice: harmless */
  CHECK(!fold__timer_armed(&e.t) && fold__timer_armed(&a.t));
  progress_until(c, &nlog, 4, 5000 * MS);
  CHECK(nlog == 4);
  CHECK(log[0] == 5 && log[1] == 10 && log[2] == 20 && log[3] == 30);
  CHECK(g.fired_at >= t0 + 5 * MS && b.fired_at >= t0 + 10 * MS && d.fired_at >= t0 + 20 * MS &&
        a.fired_at >= t0 + 30 * MS);
  CHECK(e.fired_at == -1 && f.fired_at == -1 && !fold__timer_armed(&f.t));
  CHECK(fold__timer_next(c) == INT64_MAX);
  return NULL;
}

static void case_threads_order(void) {
  enum { N = 4 };
  fold_comm *c[N];
  pthread_t th[N];
  CHECK_RC(fold_comm_init_threads(N, c), FOLD_OK, NULL);
  for (int i = 0; i < N; i++) CHECK(pthread_create(&th[i], NULL, order_rank, c[i]) == 0);
  for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < N; i++) fold_comm_destroy(c[i]);
}

/* A periodic timer re-arms itself from its callback: it fires every period,
 * and a re-arm for a time already due waits for the next progress pass. */
static void case_threads_periodic(void) {
  fold_comm *c;
  CHECK_RC(fold_comm_init_threads(1, &c), FOLD_OK, NULL);
  int log[16], nlog = 0;
  rec_timer p;
  rec_init(&p, 1, log, &nlog);
  p.rearm_left = 5;
  p.period = 2 * MS;
  int64_t t0 = fold__now(c);
  CHECK_RC(fold__timer_arm(c, &p.t, t0 + 2 * MS), FOLD_OK, c);
  progress_until(c, &nlog, 6, 5000 * MS);
  CHECK(nlog == 6 && p.fired_at >= t0 + 12 * MS && !fold__timer_armed(&p.t));
  /* "now" again and again: one firing per pass, never a spin */
  rec_timer q;
  rec_init(&q, 2, log, &nlog);
  q.rearm_left = 3;
  q.period = 0;
  nlog = 0;
  CHECK_RC(fold__timer_arm(c, &q.t, fold__now(c) - 1), FOLD_OK, c);
  CHECK(fold__timers_run(c) == 1 && nlog == 1 && fold__timer_armed(&q.t));
  CHECK(fold__timers_run(c) == 1 && nlog == 2);
  fold_comm_destroy(c);
}

/* A timer's callback starts an operation: rank 0's timer sends to rank 1,
 * which waits in a blocking receive; and a blocking wait never sleeps past
 * a timer's deadline (the transports' sleep is capped at 50 ms: a 5 ms
 * timer that waited for the cap would finish the wait after >= 50 ms). */
typedef struct send_timer {
  fold__timer t;
  int32_t v;
  fold_request *r;
  int peer;
} send_timer;

static void send_fire(fold_comm *c, fold__timer *t, void *arg) {
  send_timer *s = arg;
  CHECK(fold__isend_bytes(c, &s->v, sizeof s->v, s->peer, FOLD__CTX_P2P, 7, &s->r) == FOLD_OK);
}

static void *sender_rank(void *arg) {
  fold_comm *c = arg;
  send_timer s = {.v = 4242, .peer = 1};
  fold__timer_init(&s.t, send_fire, &s);
  CHECK_RC(fold__timer_arm_in(c, &s.t, 20 * MS), FOLD_OK, c);
  int32_t ack;
  CHECK_RC(fold_recv(&ack, 1, FOLD_INT32, 1, 8, c), FOLD_OK, c); /* the timer fires inside this wait */
  CHECK(ack == 4243 && s.r != NULL);
  if (s.r) CHECK_RC(fold_wait(s.r), FOLD_OK, c);
  return NULL;
}

static void *receiver_rank(void *arg) {
  fold_comm *c = arg;
  int32_t v = 0;
  CHECK_RC(fold_recv(&v, 1, FOLD_INT32, 0, 7, c), FOLD_OK, c);
  CHECK(v == 4242);
  v++;
  CHECK_RC(fold_send(&v, 1, FOLD_INT32, 0, 8, c), FOLD_OK, c);
  return NULL;
}

static void case_threads_wait(void) {
  fold_comm *c[2];
  pthread_t th[2];
  CHECK_RC(fold_comm_init_threads(2, c), FOLD_OK, NULL);
  CHECK(pthread_create(&th[0], NULL, sender_rank, c[0]) == 0);
  CHECK(pthread_create(&th[1], NULL, receiver_rank, c[1]) == 0);
  pthread_join(th[0], NULL);
  pthread_join(th[1], NULL);
  fold_comm_destroy(c[0]);
  fold_comm_destroy(c[1]);

  /* one rank sending to itself from a 5 ms timer: the wait ends soon after */
  fold_comm *one;
  CHECK_RC(fold_comm_init_threads(1, &one), FOLD_OK, NULL);
  int64_t best = INT64_MAX;
  for (int rep = 0; rep < 5; rep++) {
    send_timer s = {.v = rep, .peer = 0};
    fold__timer_init(&s.t, send_fire, &s);
    int32_t got = -1;
    fold_request *r;
    CHECK_RC(fold_irecv(&got, 1, FOLD_INT32, 0, 7, one, &r), FOLD_OK, one);
    int64_t t0 = fold__now(one);
    CHECK_RC(fold__timer_arm_in(one, &s.t, 5 * MS), FOLD_OK, one);
    CHECK_RC(fold_wait(r), FOLD_OK, one);
    int64_t took = fold__now(one) - t0;
    CHECK(got == rep && took >= 5 * MS);
    if (took < best) best = took;
    if (s.r) CHECK_RC(fold_wait(s.r), FOLD_OK, one);
  }
  printf("a wait woken by a 5 ms timer took %.3f ms at best (the sleep cap is 50 ms)\n", (double)best / 1e6);
  CHECK(best < 40 * MS);
  fold_comm_destroy(one);
}

/* A task that posts a receive when a 3 ms timer fired (long past the
 * wait's spin), for a message that had arrived before, and returns waiting
 * without looking at it again: the wait passes again before it sleeps
 * (engine/request.c). Before, a lone rank slept the 50 ms cap, nothing
 * else waking it; ring_skip in place on shm slept until the next call. */
typedef struct post_task {
  fold__task task;
  fold__timer t;
  int fired;
  int32_t got;
  fold_request *r;
} post_task;

static void post_fire(fold_comm *c, fold__timer *t, void *arg) {
  (void)c;
  (void)t;
  ((post_task *)arg)->fired = 1;
}

static int post_step(fold__task *t) {
  post_task *p = (post_task *)t;
  if (p->r) return fold__req_done(p->r) ? 1 : 0;
  if (!p->fired) return 0;
  CHECK(fold__irecv_bytes(t->req->comm, &p->got, sizeof p->got, 0, FOLD__CTX_P2P, 9, &p->r) == FOLD_OK);
  return 0; /* it looks at p->r in its next step only */
}

static void case_threads_postmatch(void) {
  fold_comm *one;
  CHECK_RC(fold_comm_init_threads(1, &one), FOLD_OK, NULL);
  int64_t best = INT64_MAX;
  for (int rep = 0; rep < 5; rep++) {
    int32_t v = 100 + rep;
    CHECK_RC(fold_send(&v, 1, FOLD_INT32, 0, 9, one), FOLD_OK, one); /* eager: complete, and queued unexpected */
    post_task p = {0};
    fold__timer_init(&p.t, post_fire, &p);
    p.task.step = post_step;
    CHECK((p.task.req = fold__req_new(one, FOLD__REQ_TASK)) != NULL);
    p.task.req->task = &p.task;
    int64_t t0 = fold__now(one);
    CHECK_RC(fold__timer_arm_in(one, &p.t, 3 * MS), FOLD_OK, one);
    fold__task_start(one, &p.task);
    CHECK_RC(fold__wait_req(one, p.task.req, "postmatch"), FOLD_OK, one);
    int64_t took = fold__now(one) - t0;
    CHECK(p.r != NULL && fold__req_done(p.r) && p.got == v && took >= 3 * MS);
    if (took < best) best = took;
    fold__req_unref(p.r);
    fold__req_unref(p.task.req);
  }
  printf("a wait whose task took an arrived message 3 ms in took %.3f ms at best (the sleep cap is 50 ms)\n",
         (double)best / 1e6);
  CHECK(best < 25 * MS);
  fold_comm_destroy(one);
}

/* ---- the simulator: exact virtual times ---------------------------------------------- */

#define LAT (1.0 / 512)   /* 2^-9 s = 1953125 ns: whole nanoseconds, so timers read it exactly */
#define BT (1.0 / (1 << 20))
#define B 4096            /* 2^-8 s on the wire */
#define XFER ((double)B * BT)
#define NS(s) ((int64_t)((s) * 1e9))

static fold_sim *make(int n, fold_comm **c) {
  fold_sim_params p = {.latency = LAT, .byte_time = BT};
  fold_sim *sim;
  CHECK_RC(fold_sim_create(n, &p, &sim, c), FOLD_OK, NULL);
  return sim;
}

/* Timers on two ranks fire at exactly their deadlines, in order; a
 * cancelled one (and a moved one's old deadline) leaves no trace in the
 * virtual time; a callback cancels a timer due at the same instant. */
static void case_sim_exact(void) {
  fold_comm *c[2];
  fold_sim *sim = make(2, c);
  int log[16], nlog = 0;
  rec_timer a, b, x, y, z, m;
  rec_init(&a, 1, log, &nlog);
  rec_init(&b, 2, log, &nlog);
  rec_init(&x, 3, log, &nlog); /* cancelled: was due at 4 s */
  rec_init(&y, 4, log, &nlog); /* cancelled by z at the same instant */
  rec_init(&z, 5, log, &nlog);
  rec_init(&m, 6, log, &nlog); /* armed for 8 s, moved to 0.375 s */
  a.sim = b.sim = y.sim = z.sim = m.sim = sim;
  z.cancel = &y.t;
  CHECK_RC(fold__timer_arm(c[0], &a.t, NS(0.25)), FOLD_OK, c[0]);
  CHECK_RC(fold__timer_arm(c[1], &b.t, NS(0.125)), FOLD_OK, c[1]);
  CHECK_RC(fold__timer_arm(c[0], &x.t, NS(4.0)), FOLD_OK, c[0]);
  CHECK_RC(fold__timer_arm(c[1], &z.t, NS(0.3125)), FOLD_OK, c[1]);
  CHECK_RC(fold__timer_arm(c[1], &y.t, NS(0.3125)), FOLD_OK, c[1]);
  CHECK_RC(fold__timer_arm(c[0], &m.t, NS(8.0)), FOLD_OK, c[0]);
  CHECK_RC(fold__timer_arm(c[0], &m.t, NS(0.375)), FOLD_OK, c[0]);
  fold__timer_cancel(c[0], &x.t);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK(nlog == 4 && log[0] == 2 && log[1] == 1 && log[2] == 5 && log[3] == 6);
  CHECK_T(b.sim_at, 0.125);
  CHECK_T(a.sim_at, 0.25);
  CHECK_T(z.sim_at, 0.3125);
  CHECK_T(m.sim_at, 0.375);
  CHECK(a.fired_at == NS(0.25) && b.fired_at == NS(0.125) && m.fired_at == NS(0.375));
  CHECK(y.fired_at == -1 && x.fired_at == -1);
  CHECK_T(fold_sim_time(sim), 0.375); /* not 4 or 8: cancelled and moved deadlines are skipped */
  fold_sim_destroy(sim);
}

/* A timer that re-arms itself every 1/16 s fires at exactly k/16 s. */
static double periodic_at[16];
static int nperiodic;
static void periodic_fire(fold_comm *c, fold__timer *t, void *arg) {
  fold_sim *sim = arg;
  periodic_at[nperiodic++] = fold_sim_time(sim);
  if (nperiodic < 8) CHECK(fold__timer_arm(c, t, t->due + NS(0.0625)) == FOLD_OK);
}

static void case_sim_periodic(void) {
  fold_comm *c[3];
  fold_sim *sim = make(3, c);
  fold__timer t;
  fold__timer_init(&t, periodic_fire, sim);
  nperiodic = 0;
  CHECK_RC(fold__timer_arm(c[2], &t, NS(0.0625)), FOLD_OK, c[2]);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK(nperiodic == 8);
  for (int k = 0; k < 8; k++) CHECK_T(periodic_at[k], (k + 1) * 0.0625);
  CHECK_T(fold_sim_time(sim), 0.5);
  fold_sim_destroy(sim);
}

/* A timer armed from a fold_sim_at callback fires exactly on time, and its
 * callback's send arrives latency + transfer later; a blocking receive on
 * the other rank runs the simulator up to the timer and the arrival. */
typedef struct at_ctx {
  fold_comm *c;
  send_timer s;
  double fired;
  fold_sim *sim;
} at_ctx;

static unsigned char big[B];

static void at_send_fire(fold_comm *c, fold__timer *t, void *arg) {
  at_ctx *a = arg;
  a->fired = fold_sim_time(a->sim);
  CHECK(fold__isend_bytes(c, big, B, a->s.peer, FOLD__CTX_P2P, 7, &a->s.r) == FOLD_OK);
}

static void at_cb(void *arg) {
  at_ctx *a = arg;
  CHECK(fold__timer_arm(a->c, &a->s.t, fold__now(a->c) + NS(0.125)) == FOLD_OK);
}

static void case_sim_at(void) {
  fold_comm *c[2];
  fold_sim *sim = make(2, c);
  at_ctx a = {.c = c[1], .s = {.peer = 0}, .fired = -1, .sim = sim};
  fold__timer_init(&a.s.t, at_send_fire, &a);
  CHECK_RC(fold_sim_at(sim, 0.375, at_cb, &a), FOLD_OK, NULL);
  static unsigned char rb[B];
  fold_request *r;
  CHECK_RC(fold_irecv(rb, B, FOLD_UINT8, 1, 7, c[0], &r), FOLD_OK, c[0]);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK_T(a.fired, 0.5);
  CHECK_T(fold_sim_time(sim), 0.5 + LAT + XFER);
  CHECK_RC(fold_wait(r), FOLD_OK, c[0]);
  CHECK_RC(fold_wait(a.s.r), FOLD_OK, c[1]);

  /* a blocking receive drives the simulator to the sender's timer */
  at_ctx b = {.c = c[1], .s = {.peer = 0}, .fired = -1, .sim = sim};
  fold__timer_init(&b.s.t, at_send_fire, &b);
  double t0 = fold_sim_time(sim);
  CHECK_RC(fold__timer_arm(c[1], &b.s.t, fold__now(c[1]) + NS(0.25)), FOLD_OK, c[1]);
  CHECK_RC(fold_recv(rb, B, FOLD_UINT8, 1, 7, c[0]), FOLD_OK, c[0]);
  CHECK_T(b.fired, t0 + 0.25);
  CHECK_T(fold_sim_time(sim), t0 + 0.25 + LAT + XFER);
  CHECK_RC(fold_wait(b.s.r), FOLD_OK, c[1]);
  /* fold_progress on a simulated rank runs one event: the timer's */
  at_ctx d = {.c = c[1], .s = {.peer = 0}, .fired = -1, .sim = sim};
  fold__timer_init(&d.s.t, at_send_fire, &d);
  t0 = fold_sim_time(sim);
  CHECK_RC(fold__timer_arm(c[1], &d.s.t, fold__now(c[1]) + NS(0.125)), FOLD_OK, c[1]);
  CHECK_RC(fold_progress(c[1]), FOLD_OK, c[1]);
  CHECK_T(d.fired, t0 + 0.125);
  CHECK_RC(fold_recv(rb, B, FOLD_UINT8, 1, 7, c[0]), FOLD_OK, c[0]);
  CHECK_RC(fold_wait(d.s.r), FOLD_OK, c[1]);
  fold_sim_destroy(sim);
}

/* A failed communicator fires no timers, and its timer events do not move
 * the virtual clock. */
static void case_sim_failed(void) {
  fold_comm *c[2];
  fold_sim *sim = make(2, c);
  int log[4], nlog = 0;
  rec_timer a;
  rec_init(&a, 1, log, &nlog);
  CHECK_RC(fold__timer_arm(c[0], &a.t, NS(1.0)), FOLD_OK, c[0]);
  CHECK_RC(fold_comm_abort(c[0]), FOLD_OK, c[0]);
  CHECK_RC(fold_progress(c[0]), FOLD_EABORTED, c[0]);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK(nlog == 0);
  CHECK_T(fold_sim_time(sim), 0.0);
  fold_sim_destroy(sim);
}

int main(int argc, char **argv) {
  static const sim_check_case cases[] = {
      {"threads_order", case_threads_order},
      {"threads_periodic", case_threads_periodic},
      {"threads_wait", case_threads_wait},
      {"threads_postmatch", case_threads_postmatch},
      {"sim_exact", case_sim_exact},
      {"sim_periodic", case_sim_periodic},
      {"sim_at", case_sim_at},
      {"sim_failed", case_sim_failed},
  };
  return sim_check_run("engine_timer", cases, sizeof cases / sizeof cases[0], argc, argv);
}
