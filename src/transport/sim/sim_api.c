/* sim_api.c — the public fold_sim_* calls, the virtual clock and the simulator's hooks for the engine. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "transport/sim/sim.h"

/* How many stuck ranks a deadlock message names before "and N more". */
#define SIM_STUCK_LIST 8

static int sim_drive(fold_comm *c, fold_request *until);
static const fold__clock_hooks sim_hooks;

/* ---- the virtual clock ------------------------------------------------------- */

/* fold__now() on a simulated communicator: the virtual time in ns, rounded
 * to nearest so that a timer scheduled for t_ns (fold__sim_wake_at) reads
 * exactly t_ns when it fires. */
static int64_t sim_clock(void *ctx) {
  const struct fold_sim *sim = ctx;
  double x = sim->now * 1e9; /* >= 0: time starts at 0 and never goes back */
  int64_t i = (int64_t)x;
  return x - (double)i >= 0.5 ? i + 1 : i;
}

static struct fold_sim *sim_of(const fold_comm *c) {
  return (c && c->svc && c->svc->hooks == &sim_hooks) ? (struct fold_sim *)c->clock_ctx : NULL;
}

int fold__sim_is(const fold_comm *c) { return sim_of(c) != NULL; }

/* ---- deadlock reports --------------------------------------------------------- */

static const char *ctx_name(int ctx) {
  switch (ctx & 3) { /* a collective's data context carries a digest above the low bits */
  case FOLD__CTX_P2P: return "";
  case FOLD__CTX_COLL: return " (collective)";
  default: return " (library)";
  }
}

/* Append to buf what rank c is stuck on. */
static size_t describe_rank(char *buf, size_t cap, size_t len, const fold_comm *c) {
  if (len >= cap)
    return len;
  const fold_request *r = fold__posted_first(c);
  int w;
  if (r) {
    char from[32], tag[32]; /* a wildcard receive names "any source" / "any tag", not -1 */
    fold__recv_names(r->peer, r->tag, from, sizeof from, tag, sizeof tag);
    w = snprintf(buf + len, cap - len, "%srank %d (receive from %s, %s%s)", len ? ", " : "", c->rank, from, tag,
                 ctx_name(r->ctx));
  } else if (fold__comm_waits(c))
    w = snprintf(buf + len, cap - len, "%srank %d (an unfinished collective)", len ? ", " : "", c->rank);
  else
    w = snprintf(buf + len, cap - len, "%srank %d (an operation on a sub-communicator)", len ? ", " : "", c->rank);
  return w < 0 ? len : len + (size_t)w;
}

/* List the ranks with pending operations (a posted receive or an active
 * task) into buf. O(n): only called once nothing more can happen. Returns
 * how many ranks are stuck. */
static int describe_stuck(const struct fold_sim *sim, char *buf, size_t cap) {
  int stuck = 0;
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < sim->n; i++) {
    const fold_comm *c = sim->comms[i];
    if (c == NULL || ((fold__comm_failed(c) || !fold__comm_waits(c)) && !fold__fam_busy(c)))
      continue;
    if (stuck++ < SIM_STUCK_LIST)
      len = describe_rank(buf, cap, len, c);
  }
  if (stuck > SIM_STUCK_LIST && len < cap)
    snprintf(buf + len, cap - len, " and %d more", stuck - SIM_STUCK_LIST);
  return stuck;
}

/* ---- driving the simulator -------------------------------------------------------- */

/* The engine's hook (fold__clock_hooks.drive), called by fold__wait_req instead
 * of sleeping: run events in time order until `until` completes, then on
 * until this rank's charged work is over (busy time), so that a blocking call
 * returns when the rank could really go on. Fails c with FOLD_ETIMEDOUT,
 * naming the stuck ranks, if the event queue drains first (deadlock) or the
 * next event lies beyond FOLD_TIMEOUT of virtual time.
 * until == NULL asks for one step without blocking (fold_test): run at most
 * one event and return 0 (or c's failure status). */
static int sim_drive(fold_comm *c, fold_request *until) {
  struct fold_sim *sim = c->clock_ctx;
  if (sim->running)
    return fold__comm_fail(c, FOLD_EINTERNAL,
                           "rank %d: blocking wait inside a simulator event (tasks and fold_sim_at callbacks must not block)", c->rank);
  if (until == NULL) {
    sim->running = 1;
    fold__sim_step(sim);
    sim->running = 0;
    return fold__comm_failed(c);
  }
  sim->running = 1;
  double deadline = sim->now + (double)fold__req_timeout_ns(until) / 1e9;
  int st = fold__progress(c);
  while (!fold__req_done(until) && st == 0) {
    const fold__sim_ev *next = fold__heap_top(&sim->heap);
    if (next == NULL || next->t > deadline)
      break;
    fold__sim_step(sim);
    st = fold__comm_failed(c);
  }
  if (fold__req_done(until)) {
    while (sim->now < sim->busy[fold__root_rank(c, c->rank)] && fold__sim_step(sim)) {
    }
    sim->running = 0;
    return FOLD_OK;
  }
  sim->running = 0;
  if (st)
    return st;
  char who[FOLD__ERRLEN / 2], list[FOLD__ERRLEN / 2 + 64];
  list[0] = '\0';
  if (describe_stuck(sim, who, sizeof who) > 0)
    snprintf(list, sizeof list, "; ranks waiting: %s", who);
  char what[96];
  if (until->kind == FOLD__REQ_RECV || until->kind == FOLD__REQ_SEND)
    snprintf(what, sizeof what, "a %s rank %d (tag %d)", until->kind == FOLD__REQ_RECV ? "receive from" : "send to",
             until->peer, until->tag);
  else
    snprintf(what, sizeof what, "a collective");
  if (fold__heap_top(&sim->heap) == NULL)
    return fold__comm_fail(c, FOLD_ETIMEDOUT, "rank %d: simulated deadlock at t = %.9g s: %s can never complete%s",
                           c->rank, sim->now, what, list);
  return fold__comm_fail(c, FOLD_ETIMEDOUT,
                         "rank %d: %s not complete within %.3g s of virtual time (FOLD_TIMEOUT) at t = %.9g s%s",
                         c->rank, what, (double)fold__req_timeout_ns(until) / 1e9, sim->now, list);
}

int fold_sim_run(fold_sim *sim) {
  if (sim == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_sim_run: sim is NULL");
  if (sim->running)
    return fold__error(NULL, FOLD_EINVAL, "fold_sim_run: called while the simulator is running");
  sim->running = 1;
  /* Tasks started by the program since the last run may not have posted
   * anything yet: step every rank once, in rank order (deterministic). */
  for (int i = 0; i < sim->n; i++)
    if (sim->comms[i])
      fold__progress(sim->comms[i]);
  while (fold__sim_step(sim)) {
  }
  sim->running = 0;
  char who[FOLD__ERRLEN / 2];
  int stuck = describe_stuck(sim, who, sizeof who);
  if (stuck == 0)
    return FOLD_OK;
  /* Report, but do not fail the ranks: the program may post what they wait
   * for and run again. */
  for (int i = 0; i < sim->n; i++) {
    fold_comm *c = sim->comms[i];
    if (c && ((!fold__comm_failed(c) && fold__comm_waits(c)) || fold__fam_busy(c))) {
      char mine[FOLD__ERRLEN / 4];
      describe_rank(mine, sizeof mine, 0, c);
      fold__error(c, FOLD_ETIMEDOUT, "fold_sim_run: deadlock at t = %.9g s: %s can never complete", sim->now,
                  mine);
    }
  }
  return fold__error(NULL, FOLD_ETIMEDOUT, "fold_sim_run: deadlock at t = %.9g s: %d rank%s wait%s forever: %s",
                     sim->now, stuck, stuck == 1 ? "" : "s", stuck == 1 ? "s" : "", who);
}

double fold_sim_time(const fold_sim *sim) { return sim ? sim->now : 0.0; }

/* ---- hooks for the rest of fold ------------------------------------------------------ */

void fold__sim_charge(fold_comm *c, double seconds) {
  struct fold_sim *sim = sim_of(c);
  if (sim == NULL || !(seconds > 0))
    return;
  double *busy = &sim->busy[fold__root_rank(c, c->rank)];
  *busy = (*busy > sim->now ? *busy : sim->now) + seconds;
  /* Wake the rank when its work is done so that the clock reaches that time
   * even if nothing else happens (the final reduction of a collective). */
  if (fold__sim_sched(sim, *busy, FOLD__SIM_EV_WAKE, fold__root_rank(c, c->rank), NULL) != FOLD_OK)
    fold__comm_fail(c, FOLD_ENOMEM, "rank %d: out of memory scheduling a simulator event", c->rank);
}

double fold__sim_op_time(const fold_comm *c) {
  struct fold_sim *sim = sim_of(c);
  return sim ? sim->rp[fold__root_rank(c, c->rank)].op_time : 0.0;
}

int fold__sim_host(const fold_comm *c) {
  struct fold_sim *sim = sim_of(c);
  if (sim == NULL)
    return -1;
  int w = fold__root_rank(c, c->rank);
  return sim->host_of ? sim->host_of[w] : w;
}

double fold__sim_reduce_cost(const fold_comm *c, size_t bytes) {
  struct fold_sim *sim = sim_of(c);
  if (sim == NULL)
    return 0.0;
  const fold_sim_params *p = &sim->rp[fold__root_rank(c, c->rank)];
  return p->op_overhead + (double)bytes * p->op_time;
}

int fold__sim_wake_at(fold_comm *c, int64_t t_ns) {
  struct fold_sim *sim = sim_of(c);
  if (sim == NULL)
    return FOLD_EINVAL;
  /* division (correctly rounded) then llround in sim_clock gives back t_ns
   * exactly for any t_ns below 2^51 ns (26 days) */
  double t = (double)t_ns / 1e9;
  if (t < sim->now)
    t = sim->now;
  if (fold__sim_sched(sim, t, FOLD__SIM_EV_WAKE, fold__root_rank(c, c->rank), NULL) != FOLD_OK)
    return fold__error(c, FOLD_ENOMEM, "rank %d: out of memory scheduling a simulator timer", c->rank);
  return FOLD_OK;
}

/* The engine timers' hook: an event at t_ns for c's rank. fold__sim_step
 * skips it without moving the clock if no timer is due by then any more
 * (cancelled or moved), so a cancelled watchdog leaves no trace in the
 * virtual time. */
static int sim_timer_wake(fold_comm *c, int64_t t_ns) {
  struct fold_sim *sim = sim_of(c);
  double t = (double)t_ns / 1e9; /* exact back in sim_clock, as for fold__sim_wake_at */
  if (t < sim->now)
    t = sim->now;
  if (fold__sim_sched(sim, t, FOLD__SIM_EV_TIMER, c->rank, NULL) != FOLD_OK)
    return fold__comm_fail(c, FOLD_ENOMEM, "rank %d: out of memory scheduling a simulator timer", c->rank);
  return FOLD_OK;
}

/* The simulator's side of the engine's clock interface. */
static const fold__clock_hooks sim_hooks = {
    .charge = fold__sim_charge,
    .reduce_cost = fold__sim_reduce_cost,
    .wake_at = sim_timer_wake,
    .drive = sim_drive,
};

/* ---- compute, callbacks, per-rank parameters ------------------------------------------ */

int fold_sim_compute(fold_comm *comm, double seconds) {
  if (comm == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_sim_compute: comm is NULL");
  if (sim_of(comm) == NULL)
    return fold__error(comm, FOLD_EINVAL, "fold_sim_compute: rank %d: not a simulated communicator", comm->rank);
  if (!(isfinite(seconds) && seconds >= 0))
    return fold__error(comm, FOLD_EINVAL, "fold_sim_compute: rank %d: seconds = %g, need a finite value >= 0",
                       comm->rank, seconds);
  int st = fold__comm_failed(comm);
  if (st)
    return st;
  /* The same busy time as a reduction's: later postings wait for it, a
   * blocking call returns no earlier, and a wake-up makes the clock reach
   * it. The call itself does not advance the clock: the program goes on
   * playing the other ranks at the same virtual time. */
  fold__sim_charge(comm, seconds);
  return fold__comm_failed(comm);
}

int fold_sim_at(fold_sim *sim, double t, void (*fn)(void *arg), void *arg) {
  if (sim == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_sim_at: sim is NULL");
  if (fn == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_sim_at: fn is NULL");
  if (!isfinite(t) || t < sim->now)
    return fold__error(NULL, FOLD_EINVAL, "fold_sim_at: t = %.9g s is %s (now %.9g s)", t,
                       isfinite(t) ? "in the past" : "not finite", sim->now);
  fold__sim_call *call = malloc(sizeof *call);
  if (call == NULL || fold__sim_sched(sim, t, FOLD__SIM_EV_CALL, -1, call) != FOLD_OK) {
    free(call);
    return fold__error(NULL, FOLD_ENOMEM, "fold_sim_at: out of memory scheduling a callback");
  }
  call->fn = fn;
  call->arg = arg;
  return FOLD_OK;
}

static int param_ok(double x) { return isfinite(x) && x >= 0; }

static int params_ok(const char *who, int rank, const fold_sim_params *p) {
  if (param_ok(p->latency) && param_ok(p->byte_time) && param_ok(p->op_time) && param_ok(p->op_overhead))
    return FOLD_OK;
  char r[32] = "";
  if (rank >= 0)
    snprintf(r, sizeof r, "rank %d: ", rank);
  return fold__error(NULL, FOLD_EINVAL,
                     "%s: %sparameters must be finite and >= 0 (latency %g, byte_time %g, op_time %g, "
                     "op_overhead %g)",
                     who, r, p->latency, p->byte_time, p->op_time, p->op_overhead);
}

int fold_sim_set_rank_params(fold_sim *sim, int rank, const fold_sim_params *p) {
  if (sim == NULL || p == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_sim_set_rank_params: %s is NULL", sim ? "params" : "sim");
  if (rank < 0 || rank >= sim->n)
    return fold__error(NULL, FOLD_EINVAL, "fold_sim_set_rank_params: rank %d is not a rank of the world (n = %d)",
                       rank, sim->n);
  int rc = params_ok("fold_sim_set_rank_params", rank, p);
  if (rc)
    return rc;
  /* messages already posted keep the costs they were given */
  sim->rp[rank] = *p;
  return FOLD_OK;
}

int fold_sim_set_hosts(fold_sim *sim, int hosts, const int *host_of_rank, const fold_sim_params *host_link,
                       const fold_sim_params *net_link) {
  static const char *who = "fold_sim_set_hosts";
  if (sim == NULL)
    return fold__error(NULL, FOLD_EINVAL, "%s: sim is NULL", who);
  if (sim->running)
    return fold__error(NULL, FOLD_EINVAL, "%s: called while the simulator is running", who);
  /* Messages already timed, split_host's cached host ids and busy links
   * would mix two layouts: only a world nothing happened on yet regroups. */
  if (sim->next_seq != 0 || sim->layout)
    return fold__error(NULL, FOLD_EINVAL, "%s: operations have started on the world; call it before any", who);
  const int n = sim->n;
  if (hosts < 1 || hosts > n)
    return fold__error(NULL, FOLD_EINVAL, "%s: hosts = %d, need 1 <= hosts <= n = %d", who, hosts, n);
  fold_sim_params hl = host_link ? *host_link : sim->p, nl = net_link ? *net_link : sim->p;
  int rc = params_ok(host_link ? "fold_sim_set_hosts: host_link" : who, -1, &hl);
  if (rc == FOLD_OK)
    rc = params_ok(net_link ? "fold_sim_set_hosts: net_link" : who, -1, &nl);
  if (rc)
    return rc;
  int *of = malloc((size_t)n * sizeof *of), *count = calloc((size_t)hosts, sizeof *count);
  double *out = calloc((size_t)n + (size_t)hosts, sizeof *out), *in = calloc((size_t)n + (size_t)hosts, sizeof *in);
  if (!of || !count || !out || !in) {
    free(of), free(count), free(out), free(in);
    return fold__error(NULL, FOLD_ENOMEM, "%s: out of memory for %d ranks on %d hosts", who, n, hosts);
  }
  for (int r = 0; r < n; r++) {
    int h = host_of_rank ? host_of_rank[r] : (int)((int64_t)r * hosts / n);
    if (h < 0 || h >= hosts) {
      free(of), free(count), free(out), free(in);
      return fold__error(NULL, FOLD_EINVAL, "%s: rank %d is on host %d, not in [0, %d)", who, r, h, hosts);
    }
    of[r] = h;
    count[h]++;
  }
  for (int h = 0; h < hosts; h++)
    if (count[h] == 0) {
      free(of), free(count), free(out), free(in);
      return fold__error(NULL, FOLD_EINVAL, "%s: host %d has no rank (every host needs one)", who, h);
    }
  /* the world's node-local view: index among the host's ranks, by rank */
  memset(count, 0, (size_t)hosts * sizeof *count);
  for (int r = 0; r < n; r++)
    if (sim->comms[r])
      sim->comms[r]->local_rank = count[of[r]]++;
    else
      count[of[r]]++;
  int most = 0; /* the world's layout, for selection (every rank the same) */
  for (int h = 0; h < hosts; h++) most = count[h] > most ? count[h] : most;
  for (int r = 0; r < n; r++)
    if (sim->comms[r]) {
      sim->comms[r]->local_size = count[of[r]];
      sim->comms[r]->nhosts = hosts;
      sim->comms[r]->max_ppn = most;
    }
  free(count);
  free(sim->host_of), free(sim->out_free), free(sim->in_free);
  sim->host_of = of;
  sim->out_free = out;
  sim->in_free = in;
  sim->nhosts = hosts;
  sim->host_link = hl;
  sim->net_link = nl;
  return FOLD_OK;
}

/* ---- create / destroy ------------------------------------------------------------------ */

void fold_sim_params_default(fold_sim_params *p) {
  if (p == NULL)
    return;
  p->latency = 5e-6;
  p->byte_time = 8e-11;
  p->op_time = 0.0;
  p->op_overhead = 0.0;
}

int fold__sim_new(int n, const fold_sim_params *params, struct fold_sim **out) {
  *out = NULL;
  fold_sim_params p;
  fold_sim_params_default(&p);
  if (params)
    p = *params;
  int rc = params_ok("fold_sim_create", -1, &p);
  if (rc)
    return rc;
  struct fold_sim *sim = calloc(1, sizeof *sim);
  if (sim == NULL)
    return fold__error(NULL, FOLD_ENOMEM, "fold_sim_create: out of memory");
  sim->n = n;
  sim->p = p;
  fold__heap_init(&sim->heap, sizeof(fold__sim_ev), fold__sim_ev_before);
  fold__list_init(&sim->spare);
  sim->comms = calloc((size_t)n, sizeof *sim->comms);
  sim->tps = calloc((size_t)n, sizeof *sim->tps);
  sim->out_free = calloc((size_t)n, sizeof(double));
  sim->in_free = calloc((size_t)n, sizeof(double));
  sim->busy = calloc((size_t)n, sizeof(double));
  sim->rp = malloc((size_t)n * sizeof *sim->rp);
  sim->no_lost = calloc((size_t)n, 1);
  if (!sim->no_lost || !sim->comms || !sim->tps || !sim->out_free || !sim->in_free || !sim->busy || !sim->rp)
    rc = fold__error(NULL, FOLD_ENOMEM, "fold_sim_create: out of memory for %d ranks", n);
  for (int i = 0; i < n && rc == FOLD_OK; i++) {
    sim->rp[i] = p;
    if ((sim->tps[i] = fold__sim_tp_new(sim, i)) == NULL)
      rc = fold__error(NULL, FOLD_ENOMEM, "fold_sim_create: out of memory for rank %d", i);
  }
  if (rc != FOLD_OK) {
    fold__sim_free(sim);
    return rc;
  }
  *out = sim;
  return FOLD_OK;
}

void fold__sim_attach(struct fold_sim *sim, int i, fold_comm *c) {
  sim->comms[i] = c;
  c->clock = sim_clock;
  c->clock_ctx = sim;
  fold__engine_hooks_set(c, &sim_hooks);
  /* Every simulated rank has its own link to the switch: its own host. */
  c->local_rank = 0;
  c->local_size = 1;
  c->nhosts = c->size;
  c->max_ppn = 1;
}

void fold__sim_free(struct fold_sim *sim) {
  if (sim == NULL)
    return;
  /* transports never attached to a communicator (an attached one went with it) */
  for (int i = 0; sim->tps && i < sim->n; i++)
    free(sim->tps[i]);
  fold__sim_ev ev;
  while (fold__heap_pop(&sim->heap, &ev))
    if (ev.kind == FOLD__SIM_EV_ARRIVE || ev.kind == FOLD__SIM_EV_REACH) /* a message's later events: one at a time */
      fold__sim_msg_free(sim, ev.ptr);
    else if (ev.kind == FOLD__SIM_EV_CALL) /* callbacks never run */
      free(ev.ptr);
  for (fold__list *n; (n = fold__list_pop_front(&sim->spare)) != NULL;)
    free(FOLD__LIST_ENTRY(n, fold__sim_msg, link));
  fold__heap_fini(&sim->heap);
  free(sim->comms);
  free(sim->tps);
  free(sim->out_free);
  free(sim->in_free);
  free(sim->busy);
  free(sim->rp);
  free(sim->host_of);
  fold__sim_layout_free(sim);
  free(sim->no_lost);
  free(sim);
}
