/* ring_skip.c — the straggler-tolerant ring: reduce-scatter partials that do not wait for a slow left neighbour.
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
 * A rank that finds itself late (note_late: a partial waited for it
 * longer than the threshold, or it waited before its reductions) remembers
 * it for the next calls, of any size (fold__rs_threshold says when it
 * acts on it: late by more than the threshold, or late in two calls in a
 * row by more than handing on costs): from its first position on it
 * passes partials and its raw contribution on without reducing, so the
 * only reduction left on it is its own block's last one, which also tells
 * it whether it is still late. A rank that was in late mode and late
 * remembers it for LATE_MEMORY measuring calls on time (late_memory);
 * meanwhile one late reduction hands the rest of a call on (a straggler
 * late in bursts is handed on from a burst's first call).
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
#include "patterns/patterns.h"

static void watchdog_fired(fold_comm *c, fold__timer *t, void *arg) {
  (void)c;
  (void)t;
  ((rs_call *)arg)->fired = 1;
}

int fold__ring_skip_init(fold__coll *co) {
  fold_comm *c = co->comm;
  if (!co->commutative)
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
  s->rmsg = fold__rs_buf_get(s);
  s->pool_gen = rc->pool_gen;
  fold__timer_init(&s->watchdog, watchdog_fired, s);
  if (!s->hold || !s->cov || !s->acc_cov || !s->own_sent || !s->full_at || !s->rmsg) {
    fold__rs_call_free(c, s);
    return fold__error(c, FOLD_ENOMEM, "%s: rank %d: out of memory", fold__coll_name(co->kind), co->rank);
  }
  fold__rs_threshold(s);
  RS_TRACE(s, "start: blocks of %zu bytes, threshold %.1f us (T %.1f us, T_trans %.1f us, noise margin %.1f us), bar %.1f us, late %d",
           s->maxb, (double)s->threshold_ns / 1e3, s->t_ns / 1e3, (double)s->ttrans_ns / 1e3, (double)s->margin_ns / 1e3,
           (double)s->bar_ns / 1e3, s->late);
  s->late_min_ns = -1;
  co->u[7] = (size_t)(uintptr_t)s;
  co->tmp_bytes = 0;
  fold__list_push_front(&rc->calls, &s->link);
  rc->last_tag = co->tag;
  rc->last_nskip = 0;
  rc->last_skip = -1;
  /* the mismatch check of the round algorithms (coll_sig.c), done here */
  if (s->n > 1 && !fold__coll_state_of(c)->no_sig_check) {
    int rcode = fold__coll_sig_post(co, s->left, s->right);
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

/* dst = a (op) b over len elements, timed: when it started and how much
 * longer it took than the class's least recent reduction (the simulator's
 * charge stands for the time a reduction takes there). note_reduction
 * reads them. */
static void reduce_timed(rs_call *s, void *dst, const void *a, const void *b, size_t len) {
  fold__coll *co = s->co;
  int64_t t0 = fold__now(co->comm);
  double cost = fold__engine_reduce_cost(co->comm, len * co->esize);
  fold__op_reduce3(co->optab, co->op, co->dtype, dst, a, b, len);
  fold__engine_charge(co->comm, cost);
  double dur = (double)(fold__now(co->comm) - t0) + cost * 1e9;
  double least = fold__rs_r_sample(s->rc, s->maxb, dur);
  s->red_start = t0;
  s->red_excess = dur > least ? (int64_t)(dur - least) : 0;
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
    reduce_timed(s, buf + HDR, buf + HDR, own(s, j), len);
    s->hold[j] = NULL;
  } else {
    if ((buf = fold__rs_buf_get(s)) == NULL) return fold__rs_no_memory(s);
    if (bytes) memcpy(buf + HDR, own(s, j), bytes);
  }
  s->acc_cov[j] = 0;
  s->own_sent[j] = 1;
  return fold__rs_send_partial(s, buf, j, cov, flags, bytes);
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
    if ((rc = fold__rs_send_partial(s, buf, j, s->acc_cov[j], F_LATE, bytes))) return rc;
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

/* How late we are, learnt across calls (any size): the least, over the
 * reductions of this call (a straggler is late at every one; a rank
 * preempted once is not), of the time from when the reduction could start
 * (its partial here and our previous position done) to when it started,
 * plus what it took over a normal reduction of its class (reduce_timed).
 * A rank with nothing in its way measures about 0 whatever the transfer
 * and the host's load do to its steps; one that waits before each
 * reduction (FOLD_INJECT_DELAY, other work) measures that wait. A
 * self-skip counts the time the partial had waited for us. Empty blocks
 * measure nothing. */
static void note_late(rs_call *s, int j, int64_t x) {
  if (blk_len(s, j) == 0) return;
  if (x < 0) x = 0;
  if (s->late_min_ns < 0 || x < s->late_min_ns) s->late_min_ns = x;
}
static void note_reduction(rs_call *s, int j) {
  int64_t t0 = s->full_at[j] > s->ready_ns ? s->full_at[j] : s->ready_ns;
  note_late(s, j, s->red_start - t0 + s->red_excess);
}

/* Work positions while we can. 0: waiting; <0 error. */
static int advance(rs_call *s) {
  fold__coll *co = s->co;
  int n = s->n, rc;
  while (s->pos < n) {
    int p = s->pos, j = block_at(s, p);
    if (p == 0 && n > 1) { /* our contribution as it is, from the caller's buffer, without a header */
      s->own_sent[j] = 1;
      if ((rc = fold__rs_send(s, co->data_ctx, own(s, j), blk_len(s, j) * co->esize, NULL))) return rc;
      position_done(s, 0);
    } else if (p < n - 1) {
      int full = s->acc_cov[j] == p;
      /* A rank that was a straggler lately (late_memory: a call in late
       * mode found it late within the last LATE_MEMORY measuring calls) and finds
       * itself late again at a reduction of this call, by more than
       * handing on costs, hands on the rest of this call: a straggler
       * late in bursts is then handed on from the first call of a burst
       * (LATE_CALLS calls in a row would start late mode when the burst
       * is half over). One late reduction of a rank never found late
       * in late mode (preempted once) changes nothing. */
      if (!s->late && s->rc->late_memory > 0 && s->late_min_ns > s->bar_ns && s->threshold_ns > 0) {
        s->late = 1;
        RS_TRACE(s, "late again by %.1f us (bar %.1f us): handing on from step %d", (double)s->late_min_ns / 1e3,
                 (double)s->bar_ns / 1e3, p);
      }
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
        reduce_timed(s, out_of(s, j), s->hold[j] + HDR, own(s, j), len);
      }
      fold__rs_buf_put(s, s->hold[j]);
      s->hold[j] = NULL;
      s->acc_cov[j] = 0;
      if (p > 0) note_reduction(s, j); /* in late mode the only one left: still late? */
      position_done(s, s->late);
      if (s->allreduce && n > 1) /* start our block's allgather, from the result */
        if ((rc = fold__rs_send(s, s->ag_ctx, out_of(s, j), len * co->esize, NULL))) return rc;
    }
  }
  return 0;
}

static void call_end(rs_call *s, int status) {
  fold__coll *co = s->co;
  fold_comm *c = co->comm;
  co->u[7] = 0;
  RS_TRACE(s, "end (status %d, threshold %.1f us, bar %.1f us, late %d, measured late by %.1f us)", status,
           (double)s->threshold_ns / 1e3, (double)s->bar_ns / 1e3, s->late, (double)s->late_min_ns / 1e3);
  rs_comm *rc = fold__ext_get(c, &fold__rs_key);
  if (status == 1 && rc && rc->last_tag == co->tag) {
    fold__rs_report(s);
    /* What the next calls learn, at any size: how late this call found
     * us (note_late), and in how many calls in a row that was above the
     * measure's noise level (noise_ns). A call that measured nothing (no
     * reduction of a non-empty block) leaves both as they were; one that
     * measured a normal reduction forgets them. The next call hands its
     * reductions on from the start when that lateness is above its own
     * threshold, or above its own bar after LATE_CALLS such calls
     * (fold__rs_threshold). */
    if (s->late_min_ns >= 0) {
      int found = s->late_min_ns > s->noise_ns;
      rc->late_calls = found ? rc->late_calls + 1 : 0;
      rc->late_ns = s->late_min_ns;
      /* How a straggler is remembered, and forgotten: a call in late
       * mode that found us late again sets it; each measuring call that
       * found us on time takes one off. */
      if (found && s->late)
        rc->late_memory = LATE_MEMORY;
      else if (!found && rc->late_memory > 0)
        rc->late_memory--;
    }
    rc->left_suspect = s->saw_late || s->left_late;
  }
  if (status == 1 && rc) {
    fold__list_unlink(&s->link);
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
    if ((rc = fold__rs_post_recv(s))) goto fail;
    if (s->rreq && fold__req_done(s->rreq)) {
      if ((rc = fold__rs_take(s))) goto fail;
      continue;
    }
    if ((rc = fold__rs_ag_step(s, &took))) goto fail;
    if (took) continue;
    int pos = s->pos;
    if ((rc = advance(s)) < 0) goto fail;
    if (s->pos == pos) break;
  }
  if ((rc = fold__rs_sends_step(s)) < 0) goto fail;
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
