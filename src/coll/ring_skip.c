/* ring_skip.c — the straggler-tolerant ring (issue 10): reduce-scatter partials that do not wait for a slow left neighbour.
 *
 * Block j of the vector belongs to rank j. Its partial sum starts at rank
 * j+1 and travels right, each rank adding its own contribution, until it
 * reaches rank j ("position" p of rank r in block j's chain: p = r-j-1 mod
 * n; position 0 only sends, position n-1 owns the result). Rank r works
 * its positions in order 0, 1, ..., n-1, as the plain ring does.
 *
 * The paper's rule, generalised: at a middle position (0 < p < n-1) rank r
 * waits for its left neighbour's partial at most alpha*T + T_trans (an
 * engine timer, the watchdog). If it fires, r sends what it has on (its
 * own contribution, plus any part already received) and goes to its next
 * position; the left neighbour was routed around. Whatever arrives later
 * for a block whose contribution r already sent is passed on untouched.
 * (The paper has the slow rank send straight to the rank after the one
 * that skipped it; passing the late partial through r costs one more hop
 * on a rank that is not slow, and keeps every message on the ring, which
 * is what makes several slow ranks, adjacent ones included, simple.)
 *
 * Why every contribution is counted exactly once: a message carries the
 * number of contributions in it (its coverage). A rank's own contribution
 * enters exactly one message (own_sent), and messages are only merged or
 * passed on, never copied. Contributions to block j that reach rank r
 * come from the ranks before it in the chain: exactly p of them, so r
 * knows it has seen everything of block j when the coverage it received
 * sums to p, and the owner (p = n-1) waits for all n-1. Nothing depends
 * on timing, so a late message racing the watchdog is harmless: it lands
 * either before the skip (merged) or after it (passed on).
 *
 * allreduce then runs a ring allgather on a second message stream: a
 * forward-only phase has no reduction a straggler could delay (its
 * transfers go on while it waits, algorithms never block), so there is
 * nothing to route around.
 *
 * The path without a straggler costs what `ring` costs (docs/straggler.md,
 * measured): no copy. A received partial is kept in the buffer it arrived
 * in (hold[j]) and our contribution is reduced into it in place, then that
 * buffer is sent on; the first message of a call (position 0: a rank's own
 * contribution, always the first it sends) goes headerless from the
 * caller's buffer; the allgather stream carries no headers at all, in a
 * fixed order (the rank's own block first, then the blocks it forwards in
 * the order they came), so each block is received straight into the
 * result and forwarded from there.
 *
 * A rank that finds itself late (a partial waited for it longer than the
 * threshold, or its own block's last reduction did) remembers it for the
 * next call at this size: from its first position on it passes partials
 * and its raw contribution on without reducing, so the only reduction left
 * on it is its own block's last one, which also tells it whether it is
 * still late.
 *
 * T is estimated online per communicator (ring_skip_comm.c); FOLD_SKIP_T,
 * FOLD_SKIP_TTRANS and FOLD_SKIP_ALPHA override. Integer results equal the
 * plain ring's bit for bit; floating-point ones may differ in the last
 * bits (the order of the additions depends on timing), so non-commutative
 * ops are refused.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/ring_skip_int.h"
#include "coll/shm_coll.h"
#include "patterns/patterns.h"

/* FOLD_DEBUG=TRACE: a line per event of a call with the engine's time
 * (virtual in the simulator): the per-rank timelines of docs/straggler.md. */
#define RS_TRACE(s, fmt, ...)                                                                                    \
  FOLD__TRACE((s)->co->comm, "ring_skip #%d %.1f us: " fmt, (s)->co->tag, (double)fold__now((s)->co->comm) / 1e3, \
              __VA_ARGS__)

/* A message buffer of at least HDR + the call's largest block. The pool
 * keeps buffers of the largest size seen (pool_gen counts its growths):
 * with sizes interleaved, a pool sized for the last call only was freed
 * and refilled with fresh pages at every call, and a 4 MiB ring_skip call
 * after an 8 B one took 3-4 times ring's time on shm, skipping or not. */
static char *buf_get(rs_call *s) {
  rs_comm *rc = s->rc;
  size_t sz = HDR + s->maxb + 1;
  if (rc->pool_sz < sz) {
    while (rc->npool) free(rc->pool[--rc->npool]);
    rc->pool_sz = sz;
    rc->pool_gen++;
  }
  return rc->npool ? rc->pool[--rc->npool] : malloc(rc->pool_sz);
}

/* A buffer back: pooled if the pool has not grown since the call began
 * (so it is of the pool's size), else freed. */
static void buf_put(rs_call *s, char *b) {
  rs_comm *rc = s->rc;
  if (b == NULL) return;
  if (s->pool_gen == rc->pool_gen && rc->npool < POOL_MAX)
    rc->pool[rc->npool++] = b;
  else
    free(b);
}

void fold__rs_call_free(fold_comm *c, rs_call *s) {
  if (s == NULL) return;
  fold__timer_cancel(c, &s->watchdog);
  if (s->rreq) {
    fold__unpost(c, s->rreq);
    fold__req_unref(s->rreq);
  }
  if (s->agreq) {
    fold__unpost(c, s->agreq);
    fold__req_unref(s->agreq);
  }
  for (int i = 0; i < s->nouts; i++) {
    fold__req_unref(s->outs[i].req);
    free(s->outs[i].buf); /* possibly still read by a transport: not back to the pool */
  }
  free(s->outs);
  buf_put(s, s->rmsg);
  if (s->hold)
    for (int j = 0; j < s->n; j++) buf_put(s, s->hold[j]);
  free(s->hold);
  free(s->cov);
  free(s->acc_cov);
  free(s->own_sent);
  free(s->full_at);
  free(s);
}

static size_t blk_start(const rs_call *s, int j) {
  const fold__coll *co = s->co;
  return s->allreduce ? fold__block_start(co->count, s->n, j) : (size_t)j * co->count;
}
static size_t blk_len(const rs_call *s, int j) {
  const fold__coll *co = s->co;
  return s->allreduce ? fold__block_len(co->count, s->n, j) : co->count;
}
static int pos_of(const rs_call *s, int j) { return fold__mod(s->r - j - 1, s->n); }
static int block_at(const rs_call *s, int p) { return fold__mod(s->r - p - 1, s->n); }

static const char *own(const rs_call *s, int j) {
  const fold__coll *co = s->co;
  const char *src = s->allreduce && co->in_place ? co->rbuf : co->sbuf;
  return src + blk_start(s, j) * co->esize;
}
static char *out_of(const rs_call *s, int j) {
  const fold__coll *co = s->co;
  return s->allreduce ? (char *)co->rbuf + blk_start(s, j) * co->esize : co->rbuf;
}

static void watchdog_fired(fold_comm *c, fold__timer *t, void *arg) {
  (void)c;
  (void)t;
  ((rs_call *)arg)->fired = 1;
}

int fold__ring_skip_init(fold__coll *co) {
  fold_comm *c = co->comm;
  if (!fold__op_commutative(c, co->op))
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: ring_skip reorders the reduction: it needs a commutative op",
                       fold__coll_name(co->kind), co->rank);
  rs_comm *rc = fold__rs_comm_state(c);
  rs_call *s = calloc(1, sizeof *s);
  if (rc == NULL || s == NULL) {
    free(s);
    return fold__error(c, FOLD_ENOMEM, "%s: rank %d: out of memory", fold__coll_name(co->kind), co->rank);
  }
  s->co = co;
  s->n = co->size;
  s->r = co->rank;
  s->left = fold__ring_left(s->r, s->n);
  s->right = fold__ring_right(s->r, s->n);
  s->allreduce = co->kind == FOLD__COLL_ALLREDUCE;
  s->maxb = (s->allreduce ? fold__block_len(co->count, s->n, 0) : co->count) * co->esize;
  size_t nn = (size_t)s->n;
  s->rc = rc;
  s->hold = calloc(nn, sizeof *s->hold);
  s->ag_ctx = co->data_ctx ^ 4;
  s->missing = (int64_t)s->n * (s->n - 1) / 2; /* block j expects pos_of(j): 0 + 1 + ... + n-1 */
  s->cov = calloc(nn, sizeof *s->cov);
  s->acc_cov = calloc(nn, sizeof *s->acc_cov);
  s->own_sent = calloc(nn, 1);
  s->full_at = calloc(nn, sizeof *s->full_at);
  s->rmsg = buf_get(s);
  s->pool_gen = rc->pool_gen;
  fold__timer_init(&s->watchdog, watchdog_fired, s);
  if (!s->hold || !s->cov || !s->acc_cov || !s->own_sent || !s->full_at || !s->rmsg) {
    fold__rs_call_free(c, s);
    return fold__error(c, FOLD_ENOMEM, "%s: rank %d: out of memory", fold__coll_name(co->kind), co->rank);
  }
  fold__rs_threshold(s);
  RS_TRACE(s, "start: blocks of %zu bytes, threshold %.1f us (noise margin %.1f us), late %d", s->maxb,
           (double)s->threshold_ns / 1e3, (double)s->margin_ns / 1e3, s->late);
  s->late_min_ns = -1;
  co->u[7] = (size_t)(uintptr_t)s;
  co->tmp_bytes = 0;
  s->next = rc->calls;
  rc->calls = s;
  rc->last_tag = co->tag;
  rc->last_nskip = 0;
  rc->last_skip = -1;
  /* the mismatch check of the round algorithms (coll.c), done here */
  if (s->n > 1 && !c->no_sig_check) {
    fold__shm_note_round_call(co);
    int rcode = fold__irecv_bytes(c, &co->left_sig, sizeof co->left_sig, s->left, FOLD__CTX_SIG, co->tag, &co->sig_recv);
    if (rcode == FOLD_OK)
      rcode = fold__isend_bytes(c, &co->sig, sizeof co->sig, s->right, FOLD__CTX_SIG, co->tag, &co->sig_send);
    if (rcode != FOLD_OK) return rcode; /* s stays on rc->calls: the signature receive may be posted */
  } else {
    s->sig_done = 1;
  }
  return FOLD_OK;
}

static int sig_step(rs_call *s) {
  fold__coll *co = s->co;
  if (s->sig_done) return 1;
  if (!fold__req_done(co->sig_recv)) return 0;
  s->sig_done = 1;
  int st = co->sig_recv->status;
  if (st == FOLD_EPEER) return fold__fail_for_lost(co->comm, s->left, "receive from");
  if (st < 0) return st;
  if (co->sig_recv->got == sizeof co->left_sig && fold__coll_sig_equal(&co->sig, &co->left_sig)) return 1;
  char mine[160], theirs[160], msg[FOLD__ERRLEN];
  fold__coll_describe(&co->sig, mine, sizeof mine);
  fold__coll_describe(&co->left_sig, theirs, sizeof theirs);
  snprintf(msg, sizeof msg, "collective #%d: rank %d called %s but rank %d called %s", co->tag, co->rank, mine, s->left,
           theirs);
  return fold__comm_fail_and_tell(co->comm, FOLD_EMISMATCH, msg);
}

/* Send len bytes from data to the right on ctx. owned: a message buffer
 * of ours (ownership moves to the call), or NULL when data is the caller's
 * buffer or the result (they outlive the call's sends). */
static int send_msg(rs_call *s, int ctx, const void *data, size_t len, char *owned) {
  fold__coll *co = s->co;
  if (s->nouts == s->outcap) {
    int cap = s->outcap ? 2 * s->outcap : 8;
    out_msg *o = realloc(s->outs, (size_t)cap * sizeof *o);
    if (o == NULL) {
      buf_put(s, owned);
      return fold__error(co->comm, FOLD_ENOMEM, "%s: rank %d: out of memory", fold__coll_name(co->kind), co->rank);
    }
    s->outs = o;
    s->outcap = cap;
  }
  fold_request *r = NULL;
  int rc = fold__isend_bytes(co->comm, data, len, s->right, ctx, co->tag, &r);
  if (rc != FOLD_OK) {
    buf_put(s, owned);
    return rc;
  }
  s->outs[s->nouts++] = (out_msg){r, owned};
  return FOLD_OK;
}

/* A partial in message buffer buf (payload after the header). */
static int send_partial(rs_call *s, char *buf, int j, int cov, unsigned flags, size_t bytes) {
  msg_hdr h = {(float)(fold__rs_class(s->rc, s->maxb)->t_ns / 1e3), s->out_ttrans_us, (uint32_t)j,
               (uint32_t)cov | flags};
  memcpy(buf, &h, HDR);
  return send_msg(s, s->co->data_ctx, buf, HDR + bytes, buf);
}

static int sends_step(rs_call *s) {
  int k = 0, st = FOLD_OK;
  for (int i = 0; i < s->nouts; i++) {
    fold_request *r = s->outs[i].req;
    if (!fold__req_done(r)) {
      s->outs[k++] = s->outs[i];
      continue;
    }
    if (r->status == FOLD_EPEER && st == FOLD_OK)
      st = fold__fail_for_lost(s->co->comm, s->right, "send to");
    else if (r->status < 0 && st == FOLD_OK)
      st = r->status;
    fold__req_unref(r);
    buf_put(s, s->outs[i].buf);
  }
  s->nouts = k;
  return st;
}

static int no_memory(rs_call *s) {
  return fold__error(s->co->comm, FOLD_ENOMEM, "%s: rank %d: out of memory", fold__coll_name(s->co->kind), s->r);
}

/* Send our contribution to block j, merged with what we hold of it: the
 * reduction goes into the buffer the partial arrived in, which is then
 * sent (no copy). With nothing held, a copy of ours behind a header
 * (only after a skip: the first position sends without a header). */
static int send_own(rs_call *s, int j, unsigned flags) {
  fold__coll *co = s->co;
  size_t len = blk_len(s, j), bytes = len * co->esize;
  char *buf = s->hold[j];
  int cov = s->acc_cov[j] + 1;
  if (buf) {
    fold__op_reduce3(co->comm, co->op, co->dtype, buf + HDR, buf + HDR, own(s, j), len);
    fold__engine_charge(co->comm, fold__engine_reduce_cost(co->comm, bytes));
    s->hold[j] = NULL;
  } else {
    if ((buf = buf_get(s)) == NULL) return no_memory(s);
    if (bytes) memcpy(buf + HDR, own(s, j), bytes);
  }
  s->acc_cov[j] = 0;
  s->own_sent[j] = 1;
  return send_partial(s, buf, j, cov, flags, bytes);
}

/* A counter, not a loop over the blocks: the step runs after every
 * message, and at n = 1,024 the loop was 84% of the simulator's time
 * (perf; it was first blamed on the engine's timer list). */
static int recv_expected(const rs_call *s) { return s->missing > 0; }

/* The reduce-scatter stream. Its first message from the left is always
 * the left's position 0 (its own contribution to block left-1, sent before
 * anything else), so it comes without a header: received behind the
 * header's room, the header is filled in on arrival. */
static int post_recv(rs_call *s) {
  fold__coll *co = s->co;
  if (s->rreq || !recv_expected(s)) return FOLD_OK;
  if (s->rs_taken == 0)
    return fold__irecv_bytes(co->comm, s->rmsg + HDR, s->maxb, s->left, co->data_ctx, co->tag, &s->rreq);
  return fold__irecv_bytes(co->comm, s->rmsg, HDR + s->maxb, s->left, co->data_ctx, co->tag, &s->rreq);
}

static int bad_msg(rs_call *s, const char *why) {
  char mine[160], msg[FOLD__ERRLEN];
  fold__coll_describe(&s->co->sig, mine, sizeof mine);
  snprintf(msg, sizeof msg, "collective #%d: rank %d called %s but rank %d sent %s", s->co->tag, s->r, mine, s->left, why);
  return fold__comm_fail_and_tell(s->co->comm, FOLD_EMISMATCH, msg);
}

static int req_status(rs_call *s, fold_request **rp, size_t *got) {
  fold_request *r = *rp;
  *rp = NULL;
  int st = r->status;
  *got = r->got;
  fold__req_unref(r);
  if (st == FOLD_EPEER) return fold__fail_for_lost(s->co->comm, s->left, "receive from");
  if (st == FOLD_EMISMATCH) return bad_msg(s, "a message larger than a block");
  return st < 0 ? st : FOLD_OK;
}

/* Take one arrived reduce-scatter message. */
static int take(rs_call *s) {
  fold__coll *co = s->co;
  size_t got;
  int st = req_status(s, &s->rreq, &got);
  if (st) return st;
  msg_hdr h;
  if (s->rs_taken++ == 0) {
    h = (msg_hdr){0, 0, (uint32_t)fold__mod(s->left - 1, s->n), 1};
    memcpy(s->rmsg, &h, HDR);
    got += HDR;
  }
  if (got < HDR) return bad_msg(s, "a message shorter than its header");
  memcpy(&h, s->rmsg, HDR);
  unsigned flags = h.cov & F_LATE;
  h.cov &= ~F_LATE;
  if (h.block >= (uint32_t)s->n || got != HDR + blk_len(s, (int)h.block) * co->esize) return bad_msg(s, "a malformed message");
  int j = (int)h.block;
  size_t len = blk_len(s, j), bytes = len * co->esize;
  if (h.cov < 1 || s->cov[j] + (int)h.cov > pos_of(s, j) || !(h.t_us >= 0) || !(h.ttrans_us >= 0))
    return bad_msg(s, "a partial with a wrong contribution count");
  rs_class *k = fold__rs_class(s->rc, s->maxb);
  if (h.t_us > 0) k->left_t_ns = (double)h.t_us * 1e3;
  if (h.ttrans_us > 0) k->left_ttrans_ns = (double)h.ttrans_us * 1e3;
  RS_TRACE(s, "got block %d cov %u%s%s", j, h.cov, flags ? " late" : "", s->own_sent[j] ? " (passed on)" : "");
  s->cov[j] += (int)h.cov;
  s->missing -= h.cov;
  if (flags) s->left_late = 1;
  if (!s->own_sent[j]) { /* not passed yet: hold it, in the buffer it came in */
    if (s->hold[j] == NULL) {
      s->hold[j] = s->rmsg;
      s->rmsg = buf_get(s);
      if (s->rmsg == NULL) return no_memory(s);
    } else {
      char *a = s->hold[j] + HDR;
      fold__op_reduce3(co->comm, co->op, co->dtype, a, a, s->rmsg + HDR, len);
      fold__engine_charge(co->comm, fold__engine_reduce_cost(co->comm, bytes));
    }
    s->acc_cov[j] += (int)h.cov;
    if (s->acc_cov[j] == pos_of(s, j)) s->full_at[j] = fold__now(co->comm);
    return FOLD_OK;
  }
  /* pass it on as it is (but for the link figure, which is ours to the
   * right): the buffer goes with the send */
  char *buf = s->rmsg;
  memcpy(buf + offsetof(msg_hdr, ttrans_us), &s->out_ttrans_us, sizeof s->out_ttrans_us);
  s->rmsg = buf_get(s);
  if (s->rmsg == NULL) {
    s->rmsg = buf;
    return no_memory(s);
  }
  return send_msg(s, co->data_ctx, buf, HDR + bytes, buf);
}

/* The allgather stream (allreduce only), after our reduce-scatter: blocks
 * left, left-1, ..., right+1 arrive in this order (each rank sends its own
 * block first and then forwards in arrival order), each straight into the
 * result, and is forwarded from there unless the right neighbour owns it. */
static int ag_step(rs_call *s, int *took) {
  fold__coll *co = s->co;
  *took = 0;
  if (!s->allreduce || s->n < 2) return FOLD_OK;
  if (s->pos < s->n) {
    /* Still in the reduce-scatter: the left neighbour's block may come
     * before we are done (it sends it as soon as its own part is), so its
     * receive is posted now, straight into the result, instead of the
     * block waiting as an unexpected message to be copied over later.
     * Out of place only: in place, our position-0 send reads that part of
     * the result. It is taken (and forwarded) only after our own block
     * went out, which keeps the stream's order. */
    if (s->agreq == NULL && s->ag_got == 0 && !co->in_place)
      return fold__irecv_bytes(co->comm, out_of(s, s->left), blk_len(s, s->left) * co->esize, s->left, s->ag_ctx,
                               co->tag, &s->agreq);
    return FOLD_OK;
  }
  int j = fold__mod(s->left - s->ag_got, s->n);
  size_t bytes = blk_len(s, j) * co->esize;
  if (s->agreq && fold__req_done(s->agreq)) {
    size_t got;
    int st = req_status(s, &s->agreq, &got);
    if (st) return st;
    if (got != bytes) return bad_msg(s, "an allgather block of the wrong size");
    s->ag_got++;
    *took = 1;
    RS_TRACE(s, "allgather block %d", j);
    if (s->right != j && (st = send_msg(s, s->ag_ctx, out_of(s, j), bytes, NULL))) return st;
    j = fold__mod(s->left - s->ag_got, s->n);
    bytes = blk_len(s, j) * co->esize;
  }
  if (s->agreq == NULL && s->ag_got < s->n - 1)
    return fold__irecv_bytes(co->comm, out_of(s, j), bytes, s->left, s->ag_ctx, co->tag, &s->agreq);
  return FOLD_OK;
}

static void position_done(rs_call *s, int skipped) {
  fold__coll *co = s->co;
  int64_t now = fold__now(co->comm);
  rs_comm *rc = fold__ext_get(co->comm, &fold__rs_key);
  int waited = s->pos > 0 && s->full_at[block_at(s, s->pos)] > s->ready_ns;
  if (!skipped && !s->late && waited && rc) fold__rs_t_sample(rc, s->maxb, (double)(now - s->ready_ns));
  RS_TRACE(s, "step %d (block %d) done%s%s, %.1f us", s->pos, block_at(s, s->pos), skipped ? " skipped" : "",
           waited ? " waited" : "", (double)(now - s->ready_ns) / 1e3);
  fold__timer_cancel(co->comm, &s->watchdog);
  s->fired = 0;
  s->pos++;
  s->ready_ns = now;
  if (s->pos > 0 && s->pos < s->n - 1 && s->threshold_ns > 0 && !s->late)
    fold__timer_arm_in(co->comm, &s->watchdog, s->threshold_ns);
}

/* We are the late one: pass what we hold of block j on as it is, and our
 * own contribution raw, without a reduction (two messages): the rank
 * after us, or the owner, reduces them. */
static int send_unreduced(rs_call *s, int j) {
  fold__coll *co = s->co;
  size_t bytes = blk_len(s, j) * co->esize;
  int rc;
  if (s->hold[j]) {
    char *buf = s->hold[j];
    s->hold[j] = NULL;
    if ((rc = send_partial(s, buf, j, s->acc_cov[j], F_LATE, bytes))) return rc;
    s->acc_cov[j] = 0;
  }
  return send_own(s, j, F_LATE); /* nothing held now: a copy, no reduction */
}

/* FOLD_INJECT_DELAY before reducing block j: an empty block is no
 * reduction (as in ring's rounds), so no delay. */
static int rs_straggle(rs_call *s, int j) {
  int was = s->co->straggle;
  int w = fold__coll_straggle(s->co, blk_len(s, j) > 0);
  if (w && !was) RS_TRACE(s, "delay before block %d", j);
  return w;
}

/* How late we are, learnt across calls (any size): the least excess over
 * the normal step of the reductions of this call (a straggler is late at
 * every one; a rank preempted once is not), a reduction's time counted
 * from when it could start. A self-skip counts the time the partial had
 * waited for us. Empty blocks measure nothing. */
static void note_late(rs_call *s, int j, int64_t x) {
  if (s->threshold_ns == 0 || blk_len(s, j) == 0) return;
  if (x < 0) x = 0;
  if (s->late_min_ns < 0 || x < s->late_min_ns) s->late_min_ns = x;
}
static void note_reduction(rs_call *s, int j) {
  int64_t t0 = s->full_at[j] > s->ready_ns ? s->full_at[j] : s->ready_ns;
  note_late(s, j, fold__now(s->co->comm) - t0 - (int64_t)s->t_ns);
}

/* Work positions while we can. 0: waiting; <0 error. */
static int advance(rs_call *s) {
  fold__coll *co = s->co;
  int n = s->n, rc;
  while (s->pos < n) {
    int p = s->pos, j = block_at(s, p);
    if (p == 0 && n > 1) { /* our contribution as it is, from the caller's buffer, without a header */
      s->own_sent[j] = 1;
      if ((rc = send_msg(s, co->data_ctx, own(s, j), blk_len(s, j) * co->esize, NULL))) return rc;
      position_done(s, 0);
    } else if (p < n - 1) {
      int full = s->acc_cov[j] == p;
      /* Late in the last call: hand on at once, partials come through
       * (own_sent) as they arrive. Otherwise the paper's rule from the
       * slow rank's side: our left neighbour's partial has waited for us
       * longer than the threshold, so we are the straggler. Our reduction
       * would hold up everyone after us, so hand it on (only when no delay
       * of ours is pending: a reduction we started waiting for is served). */
      if (s->late || (full && s->threshold_ns > 0 && co->straggle == 0 &&
                      fold__now(co->comm) - s->full_at[j] > s->threshold_ns)) {
        if (!s->late) note_late(s, j, fold__now(co->comm) - s->full_at[j]);
        s->self_skips++;
        if ((rc = send_unreduced(s, j))) return rc;
        position_done(s, 1);
        continue;
      }
      if (!full && !s->fired) return 0;
      if (!full) s->saw_late = 1;
      /* first lateness of the left on a noisy host: confirm it (ring_skip_comm.c, CONFIRM) */
      if (!full && !s->suspect && s->margin_ns > 0) {
        s->suspect = 1;
        s->fired = 0;
        fold__timer_arm_in(co->comm, &s->watchdog, (CONFIRM - 1) * s->threshold_ns);
        RS_TRACE(s, "rank %d late at step %d: waiting %d thresholds in all", s->left, p, CONFIRM);
        return 0;
      }
      if (rs_straggle(s, j)) return 0;
      if (!full) s->skips++;
      if ((rc = send_own(s, j, 0))) return rc;
      if (full) note_reduction(s, j);
      position_done(s, !full);
    } else {
      if (s->acc_cov[j] != p) return 0;
      if (rs_straggle(s, j)) return 0;
      size_t len = blk_len(s, j);
      if (p == 0 || len == 0) {
        if (len && out_of(s, j) != own(s, j)) memcpy(out_of(s, j), own(s, j), len * co->esize);
      } else {
        fold__op_reduce3(co->comm, co->op, co->dtype, out_of(s, j), s->hold[j] + HDR, own(s, j), len);
        fold__engine_charge(co->comm, fold__engine_reduce_cost(co->comm, len * co->esize));
      }
      buf_put(s, s->hold[j]);
      s->hold[j] = NULL;
      s->acc_cov[j] = 0;
      if (p > 0) note_reduction(s, j); /* in late mode the only one left: still late? */
      position_done(s, s->late);
      if (s->allreduce && n > 1) /* start our block's allgather, from the result */
        if ((rc = send_msg(s, s->ag_ctx, out_of(s, j), len * co->esize, NULL))) return rc;
    }
  }
  return 0;
}

static void call_end(rs_call *s, int status) {
  fold__coll *co = s->co;
  fold_comm *c = co->comm;
  co->u[7] = 0;
  RS_TRACE(s, "end (status %d, threshold %.1f us, late %d, measured late by %.1f us)", status,
           (double)s->threshold_ns / 1e3, s->late, (double)s->late_min_ns / 1e3);
  rs_comm *rc = fold__ext_get(c, &fold__rs_key);
  if (status == 1 && rc && rc->last_tag == co->tag) {
    fold__rs_report(s);
    /* What the next calls learn, at any size: how late this call found
     * us (note_late). A call that measured nothing (no reduction of a
     * non-empty block) leaves it as it was; one that measured a normal
     * step forgets it. The next call hands its reductions on from the
     * start when that lateness is above its own threshold. */
    if (s->late_min_ns >= 0) rc->late_ns = s->late_min_ns;
    rc->left_suspect = s->saw_late || s->left_late;
  }
  if (status == 1 && rc) {
    for (rs_call **pp = &rc->calls; *pp; pp = &(*pp)->next)
      if (*pp == s) {
        *pp = s->next;
        break;
      }
    fold__rs_call_free(c, s);
  } else { /* failed: sends may still be in a transport's hands; freed with the communicator */
    fold__timer_cancel(c, &s->watchdog);
  }
}

int fold__ring_skip_step(fold__coll *co) {
  rs_call *s = (rs_call *)(uintptr_t)co->u[7];
  if (s == NULL) return FOLD_EINTERNAL;
  int rc = s->n > 1 ? sig_step(s) : 1, took;
  if (rc < 0) goto fail;
  for (;;) { /* take everything that arrived, work what it allows */
    if ((rc = post_recv(s))) goto fail;
    if (s->rreq && fold__req_done(s->rreq)) {
      if ((rc = take(s))) goto fail;
      continue;
    }
    if ((rc = ag_step(s, &took))) goto fail;
    if (took) continue;
    int pos = s->pos;
    if ((rc = advance(s)) < 0) goto fail;
    if (s->pos == pos) break;
  }
  if ((rc = sends_step(s)) < 0) goto fail;
  if (s->pos < s->n || s->rreq || recv_expected(s) || s->nouts || !s->sig_done) return 0;
  if (s->allreduce && s->n > 1 && (s->agreq || s->ag_got < s->n - 1)) return 0;
  if (co->sig_send && !fold__req_done(co->sig_send)) return 0;
  if (co->op == FOLD_AVG) fold__op_finish(co->op, co->dtype, co->rbuf, co->count, s->n);
  call_end(s, 1);
  return 1;
fail:
  call_end(s, rc);
  return rc;
}

int fold__ring_skip_describe(fold__coll *co, char *buf, size_t cap) {
  rs_call *s = (rs_call *)(uintptr_t)co->u[7];
  if (s == NULL) {
    snprintf(buf, cap, "ring_skip: nothing");
    return -1;
  }
  if (s->pos < s->n)
    snprintf(buf, cap, "ring_skip: rank %d's partial of block %d (step %d of %d)", s->left, block_at(s, s->pos), s->pos,
             s->n - 1);
  else {
    int j = 0;
    while (j < s->n && s->cov[j] >= pos_of(s, j)) j++;
    if (j < s->n) /* contributions routed around that have not come through yet */
      snprintf(buf, cap, "ring_skip: rank %d to pass on late partials of block %d (%d of %d contributions seen)",
               s->left, j, s->cov[j], pos_of(s, j));
    else
      snprintf(buf, cap, "ring_skip: rank %d's allgather blocks (%d of %d)", s->left, s->ag_got, s->n - 1);
  }
  return s->left;
}
