/* sim.c — the simulated transport: messages become timed events on the virtual clock. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "transport/sim/sim.h"

static const fold__tp_ops sim_ops;

static inline double dmax(double a, double b) { return a > b ? a : b; }

/* ---- message records: small ones are kept for reuse -------------------------- */

/* A message of up to SIM_SMALL payload bytes takes a SIM_SMALL record from
 * the simulator's free list (reused, never returned to malloc before
 * fold__sim_free): collectives of many ranks send millions of small
 * messages, and malloc's bins were a fifth of the run. */
#define SIM_SMALL 64

static fold__sim_msg *msg_new(struct fold_sim *sim, size_t bytes) {
  fold__list *n = bytes <= SIM_SMALL ? fold__list_pop_front(&sim->spare) : NULL;
  if (n) return FOLD__LIST_ENTRY(n, fold__sim_msg, link);
  fold__sim_msg *m = malloc(sizeof(fold__sim_msg) + (bytes <= SIM_SMALL ? SIM_SMALL : bytes));
  if (m) fold__list_init(&m->link);
  return m;
}

static void msg_free(struct fold_sim *sim, fold__sim_msg *m) {
  if (m && m->bytes <= SIM_SMALL) {
    fold__list_push_front(&sim->spare, &m->link); /* off its sender's list since SEND_DONE */
  } else {
    free(m);
  }
}

void fold__sim_msg_free(struct fold_sim *sim, void *m) { msg_free(sim, m); }

int fold__sim_ev_before(const void *a, const void *b) {
  const fold__sim_ev *x = a, *y = b;
  if (x->t != y->t)
    return x->t < y->t;
  return x->seq < y->seq;
}

/* ---- the sender's list of messages whose send request is pending ---------- */

/* Complete every send request this rank still has in flight with status and
 * drop the references; the messages themselves stay on the wire. */
static void sending_fail_all(fold__sim_tp *tp, int status) {
  for (fold__list *n; (n = fold__list_pop_front(&tp->sending)) != NULL;) {
    fold__sim_msg *m = FOLD__LIST_ENTRY(n, fold__sim_msg, link);
    fold_request *r = m->sreq;
    m->sreq = NULL;
    fold__req_complete(r, status);
    fold__req_unref(r);
  }
}

/* ---- vtable ----------------------------------------------------------------- */

fold__sim_tp *fold__sim_tp_new(struct fold_sim *sim, int rank) {
  fold__sim_tp *tp = calloc(1, sizeof *tp);
  if (tp == NULL)
    return NULL;
  tp->base.ops = &sim_ops;
  tp->sim = sim;
  tp->rank = rank;
  fold__list_init(&tp->sending);
  return tp;
}

/* Post a message: compute when it leaves and arrives (the cost model in
 * sim.h), copy the payload, and schedule the two events. The link state is
 * updated only once nothing can fail any more. */
static int sim_isend(fold__tp *tp_, fold_request *r) {
  fold__sim_tp *tp = (fold__sim_tp *)tp_;
  struct fold_sim *sim = tp->sim;
  fold_comm *c = tp->base.comm;
  const int s = tp->rank, d = r->tpeer;
  if (d < 0 || d >= sim->n || d == s)
    return fold__error(c, FOLD_EINTERNAL, "rank %d: simulated send to invalid peer %d", s, d);
  if (sim->comms[d] == NULL) {
    /* the peer was destroyed with fold_comm_destroy: it is lost */
    fold__peer_lost(c, d, 1, "destroyed with fold_comm_destroy");
    int st = fold__comm_failed(c);
    return st ? st : FOLD_EPEER;
  }
  if (r->bytes > SIZE_MAX - sizeof(fold__sim_msg))
    return fold__error(c, FOLD_ENOMEM, "rank %d: simulated message of %zu bytes to rank %d is too large", s,
                       r->bytes, d);
  fold__sim_msg *m = msg_new(sim, r->bytes);
  if (m == NULL || fold__heap_reserve(&sim->heap, 2) != FOLD_OK) {
    free(m);
    return fold__error(c, FOLD_ENOMEM, "rank %d: out of memory buffering %zu bytes to rank %d", s, r->bytes, d);
  }
  m->src = s;
  m->dst = d;
  m->cid = r->cid;
  m->ctx = r->ctx;
  m->tag = r->tag;
  m->bytes = r->bytes;
  if (r->bytes)
    memcpy(m->data, r->buf, r->bytes);

  double t0, xfer, reach;
  if (sim->host_of) {
    /* Hosts: the class decides. Inside a host the ranks' own links carry
     * it; between hosts the hosts' NICs, which their ranks share: each NIC
     * direction carries one message at a time (egress in posting order,
     * ingress in the order messages reach it, as a rank's links do). */
    const int hs = sim->host_of[s], hd = sim->host_of[d];
    const fold_sim_params *k = hs == hd ? &sim->host_link : &sim->net_link;
    double *out = hs == hd ? &sim->out_free[s] : &sim->out_free[sim->n + hs];
    m->port = hs == hd ? d : sim->n + hd;
    t0 = dmax(dmax(sim->now, sim->busy[s]), *out);
    xfer = (double)r->bytes * k->byte_time;
    reach = t0 + k->latency;
    *out = t0 + xfer;
    m->in_xfer = xfer;
  } else {
    const fold_sim_params *ps = &sim->rp[s], *pd = &sim->rp[d];
    /* Each link serialises on its own (full-duplex links, a switch that
     * buffers): the message leaves when the sender's out-link is free; its
     * head reaches the receiver's switch port `latency` later (REACH event),
     * and the port serves messages in the order they reach it: the receiver's
     * in-link carries it from max(reach, in_free[d]) for b*beta. A message
     * waiting for a busy receiver never holds the sender's link, and the port
     * is never idle while a message waits for it.
     * Ranks with their own parameters: the sender's byte_time times its
     * out-link, the receiver's its in-link, and the larger latency of the two
     * applies (a slow node is slow to reach both ways). Bytes cannot arrive
     * faster than they left: with a slower sender the arrival waits for the
     * tail, reach + b*bt[s] (with equal byte_times that bound never binds). */
    t0 = dmax(dmax(sim->now, sim->busy[s]), sim->out_free[s]);
    xfer = (double)r->bytes * ps->byte_time;
    reach = t0 + dmax(ps->latency, pd->latency);
    sim->out_free[s] = t0 + xfer;
    m->in_xfer = (double)r->bytes * pd->byte_time;
    m->port = d;
  }
  double sent = t0 + xfer;
  m->tail = reach + xfer;

  fold__req_ref(r);
  m->sreq = r;
  fold__list_push_front(&tp->sending, &m->link);
  /* SEND_DONE first: at equal times it must run before ARRIVE frees m. */
  fold__sim_sched(sim, sent, FOLD__SIM_EV_SEND_DONE, s, m);
  fold__sim_sched(sim, reach, FOLD__SIM_EV_REACH, d, m);
  FOLD__TRACE(c, "sim: t=%.9g send %zu bytes to rank %d (ctx %d, tag %d): start %.9g, reach %.9g", sim->now,
              r->bytes, d, r->ctx, r->tag, t0, reach);
  return FOLD_OK;
}

/* Everything happens in events; polling has nothing to move. */
static int sim_poll(fold__tp *tp) { return fold__comm_failed(tp->comm); }

/* Never called for simulated communicators (fold__wait_req drives the simulator);
 * must not sleep in real time if it ever is. */
static int sim_wait(fold__tp *tp, int64_t timeout_ns) { return 0; }

/* The simulator delivers every payload eagerly, so it never creates
 * rendezvous records; comm.c may still call this with r == NULL to free one. */
static int sim_pull(fold__tp *tp, fold__unexp *u, fold_request *r) {
  free(u);
  return r ? fold__error(tp->comm, FOLD_EINTERNAL, "rank %d: simulated transport asked to pull", tp->comm->rank)
           : FOLD_OK;
}

static void sim_shutdown(fold__tp *tp_, int status) { sending_fail_all((fold__sim_tp *)tp_, status); }

/* The rank is going away (fold_sim_destroy or fold_comm_destroy): its pending
 * send requests become invalid; their messages still arrive. */
static void sim_destroy(fold__tp *tp_) {
  fold__sim_tp *tp = (fold__sim_tp *)tp_;
  sending_fail_all(tp, FOLD_EABORTED);
  if (tp->sim->tps[tp->rank] == tp)
    tp->sim->tps[tp->rank] = NULL;
  free(tp);
}

/* The model is the measurement: a message between the two reaches the
 * other after the larger latency and takes the larger byte time (sim.h);
 * with hosts, the latency and byte time of their class. */
static int sim_link(fold__tp *tp_, int tpeer, fold__link *out) {
  fold__sim_tp *tp = (fold__sim_tp *)tp_;
  const struct fold_sim *sim = tp->sim;
  if (tpeer < 0 || tpeer >= sim->n) return FOLD_EINVAL;
  if (sim->host_of) {
    const fold_sim_params *k = sim->host_of[tp->rank] == sim->host_of[tpeer] ? &sim->host_link : &sim->net_link;
    out->lat_ns = k->latency * 1e9;
    out->ns_per_byte = k->byte_time * 1e9;
    return 0;
  }
  const fold_sim_params *a = &sim->rp[tp->rank], *b = &sim->rp[tpeer];
  out->lat_ns = (a->latency > b->latency ? a->latency : b->latency) * 1e9;
  out->ns_per_byte = (a->byte_time > b->byte_time ? a->byte_time : b->byte_time) * 1e9;
  return 0;
}

static const fold__tp_ops sim_ops = {
    .name = "sim",
    .kind = FOLD__TP_KIND_SIM,
    .isend = sim_isend,
    .poll = sim_poll,
    .wait = sim_wait,
    .pull = sim_pull,
    .shutdown = sim_shutdown,
    .joined = NULL,
    .destroy = sim_destroy,
    .link = sim_link,
};

/* ---- events -------------------------------------------------------------------- */

/* The message is at d: hand it to the oldest matching posted receive, else
 * queue it as unexpected (the transport delivery contract). */
static void deliver(fold_comm *c, fold__sim_msg *m) {
  fold_request *r = fold__match_cid(c, m->cid, m->src, m->ctx, m->tag);
  if (r) {
    fold__recv_fill(r, m->data, m->bytes);
    return;
  }
  fold__unexp *u = fold__unexp_new(m->src, m->ctx, m->tag, m->bytes, m->bytes);
  if (u) u->cid = m->cid;
  if (u == NULL) {
    fold__comm_fail(c, FOLD_ENOMEM, "rank %d: out of memory queueing %zu bytes from rank %d", c->rank, m->bytes,
                    m->src);
    return;
  }
  if (m->bytes)
    memcpy(u->data, m->data, m->bytes);
  fold__deliver_unexp(c, u);
}

int fold__sim_step(struct fold_sim *sim) {
  fold__sim_ev ev;
  if (!fold__heap_pop(&sim->heap, &ev))
    return 0;
  if (ev.kind == FOLD__SIM_EV_TIMER) {
    /* A timer's event is stale when no timer of the rank is due by its
     * time any more (cancelled, moved later: that one has its own event),
     * or the rank is gone or failed: skipped, the clock stays. */
    fold_comm *c = sim->comms[ev.rank];
    double x = ev.t * 1e9;
    if (c == NULL || fold__comm_failed(c) || (double)fold__timer_next(c) > x + 0.5)
      return 1;
  }
  if (ev.t > sim->now) /* events are never scheduled in the past */
    sim->now = ev.t;
  fold_comm *touched = NULL;
  fold__sim_msg *m = ev.ptr;
  switch (ev.kind) {
  case FOLD__SIM_EV_SEND_DONE:
    touched = sim->comms[m->src];
    if (m->sreq) { /* NULL if the sender failed or was destroyed meanwhile */
      fold__list_unlink(&m->link);
      fold_request *r = m->sreq;
      m->sreq = NULL;
      fold__req_complete(r, FOLD_OK);
      fold__req_unref(r);
    }
    break;
  case FOLD__SIM_EV_REACH: {
    /* The port serves in reaching order. Messages of one pair reach it in
     * sending order (equal times keep posting order), so they never
     * overtake; the clamp guards that against rounding. */
    double *in = &sim->in_free[m->port];
    double arrive = dmax(dmax(sim->now, *in) + m->in_xfer, m->tail);
    if (arrive < *in)
      arrive = *in;
    *in = arrive;
    fold__sim_sched(sim, arrive, FOLD__SIM_EV_ARRIVE, m->dst, m); /* the pop made room */
    break;
  }
  case FOLD__SIM_EV_ARRIVE:
    touched = sim->comms[m->dst];
    /* a destroyed or failed receiver drops what arrives (a failed world
     * still takes its children's messages) */
    if (touched && (!fold__comm_failed(touched) || (touched->fam && m->cid != 0)))
      deliver(touched, m);
    msg_free(sim, m);
    break;
  case FOLD__SIM_EV_WAKE:
  case FOLD__SIM_EV_TIMER: /* fold__progress fires the due timers */
    touched = sim->comms[ev.rank];
    break;
  case FOLD__SIM_EV_CALL: {
    /* what the callback starts posts and steps on its own (postings are
     * scheduled at once, a new collective steps once when it starts) */
    fold__sim_call *call = ev.ptr;
    call->fn(call->arg);
    free(call);
    break;
  }
  default:
    break;
  }
  /* Let tasks (collective state machines) react at this virtual time; what
   * they post is scheduled from now on. */
  if (touched)
    fold__progress(touched);
  return 1;
}
