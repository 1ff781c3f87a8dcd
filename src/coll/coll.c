/* coll.c — the round executor: emitters for the algorithms' rounds, transfers, local ops, the task step every collective runs. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "engine/engine.h"
#include "op/op.h"

/* ---- emitters ------------------------------------------------------------------- */

static fold__cop *push(fold__coll *co) {
  if (co->nops == co->cap) {
    int cap = co->cap ? co->cap * 2 : 8;
    fold__cop *ops = realloc(co->ops, (size_t)cap * sizeof *ops);
    if (ops == NULL) {
      co->failed = FOLD_ENOMEM;
      return NULL;
    }
    co->ops = ops;
    co->cap = cap;
  }
  fold__cop *op = &co->ops[co->nops++];
  memset(op, 0, sizeof *op);
  return op;
}

void fold__co_send(fold__coll *co, int peer, int buf, size_t off, size_t bytes) {
  fold__cop *op = bytes ? push(co) : NULL;
  if (op) *op = (fold__cop){.kind = FOLD__OP_SEND, .a_buf = (uint8_t)buf, .a_off = off, .peer = peer, .len = bytes};
}

void fold__co_send_nowait(fold__coll *co, int peer, int buf, size_t off, size_t bytes) {
  fold__cop *op = bytes ? push(co) : NULL;
  if (op)
    *op = (fold__cop){.kind = FOLD__OP_SEND, .a_buf = (uint8_t)buf, .a_off = off, .peer = peer, .len = bytes, .nowait = 1};
}

void fold__co_recv(fold__coll *co, int peer, int buf, size_t off, size_t bytes) {
  fold__cop *op = bytes ? push(co) : NULL;
  if (op)
    *op = (fold__cop){.kind = FOLD__OP_RECV, .out_buf = (uint8_t)buf, .out_off = off, .peer = peer, .len = bytes};
}

void fold__co_reduce(fold__coll *co, int out_buf, size_t out_off, int a_buf, size_t a_off, int b_buf, size_t b_off,
                     size_t count) {
  fold__cop *op = count ? push(co) : NULL;
  if (op)
    *op = (fold__cop){.kind = FOLD__OP_REDUCE, .out_buf = (uint8_t)out_buf, .out_off = out_off,
                      .a_buf = (uint8_t)a_buf, .a_off = a_off, .b_buf = (uint8_t)b_buf, .b_off = b_off,
                      .len = count};
}

void fold__co_copy(fold__coll *co, int dst_buf, size_t dst_off, int src_buf, size_t src_off, size_t bytes) {
  if (bytes == 0 || (dst_buf == src_buf && dst_off == src_off)) return;
  fold__cop *op = push(co);
  if (op)
    *op = (fold__cop){.kind = FOLD__OP_COPY, .out_buf = (uint8_t)dst_buf, .out_off = dst_off,
                      .a_buf = (uint8_t)src_buf, .a_off = src_off, .len = bytes};
}

/* ---- executor ----------------------------------------------------------------------
 * The call's start (argument checks, the algorithm's choice, reuse across
 * calls) is coll_start.c; its mismatch check coll_sig.c. The executor knows
 * algorithms only through fold__algo: rounds, or a step() of their own. */

/* co->reqs[i] is the request of co->ops[i] (NULL for local ops); nreqs
 * counts the round's started transfers, nlocal the ops before the first
 * local op not run yet (see run_ready_local_ops). */
/* Does not waiting for a send to peer pay? Where a large send completes
 * only as the receiver drains it (the transport's drain_sends: shm),
 * waiting holds back our next receive (fold__co_send_nowait). Over tcp a
 * large send is a rendezvous that completes once the receiver posted, and
 * not waiting was measured slower (ring allreduce, n = 4, 1 and 4 MiB: 2-3
 * times); the simulator models the rounds as written. */
static int nowait_pays(const fold_comm *c, int peer) {
  const fold__tp *tp = fold__peer_tp(c, peer);
  return tp && tp->ops->drain_sends;
}

static int start_comm_ops(fold__coll *co) {
  fold_comm *c = co->comm;
  if (co->reqcap < co->nops) {
    fold_request **r = realloc(co->reqs, (size_t)co->nops * sizeof *r);
    if (r == NULL) return FOLD_ENOMEM;
    co->reqs = r;
    co->reqcap = co->nops;
  }
  for (int i = 0; i < co->nops; i++) co->reqs[i] = NULL;
  co->nreqs = 0;
  co->nlocal = 0;
  /* receives first, so that eager arrivals land in place */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < co->nops; i++) {
      fold__cop *op = &co->ops[i];
      fold_request *r = NULL;
      int rc = 0;
      if (pass == 0 && op->kind == FOLD__OP_RECV)
        rc = fold__irecv_bytes(c, (char *)co->bufs[op->out_buf] + op->out_off, op->len, op->peer, co->data_ctx,
                               co->tag, &r);
      else if (pass == 1 && op->kind == FOLD__OP_SEND)
        rc = fold__isend_bytes(c, (char *)co->bufs[op->a_buf] + op->a_off, op->len, op->peer, co->data_ctx,
                               co->tag, &r);
      else
        continue;
      if (rc) return rc;
      if (op->kind == FOLD__OP_SEND && op->nowait && co->nnowait < FOLD__NOWAIT_MAX && nowait_pays(c, op->peer)) {
        /* the round does not wait for it (fold__co_send_nowait) */
        co->nowait[co->nnowait].req = r;
        co->nowait[co->nnowait].p = (const char *)co->bufs[op->a_buf] + op->a_off;
        co->nowait[co->nnowait].len = op->len;
        co->nnowait++;
        continue;
      }
      co->reqs[i] = r;
      co->nreqs++;
    }
  return FOLD_OK;
}

/* 1 when every request of the round is complete, 0 if not, <0 on failure. */
static int round_comm_done(fold__coll *co) {
  for (int i = 0; i < co->nops; i++)
    if (co->reqs[i] && !fold__req_done(co->reqs[i])) return 0;
  int st = FOLD_OK;
  for (int i = 0; i < co->nops; i++) {
    fold_request *r = co->reqs[i];
    if (r == NULL) continue;
    co->reqs[i] = NULL;
    if (st == FOLD_OK && r->kind == FOLD__REQ_RECV &&
        (r->status == FOLD_EMISMATCH || (r->status == FOLD_OK && r->got != r->bytes)))
      st = fold__coll_size_mismatch(co, r);
    else if (r->status == FOLD_EPEER && st == FOLD_OK) /* the peer's own report may be waiting */
      st = fold__fail_for_lost(co->comm, r->peer, r->kind == FOLD__REQ_SEND ? "send to" : "receive from");
    else if (r->status < 0 && st == FOLD_OK)
      st = r->status;
    fold__req_unref(r);
  }
  co->nreqs = 0;
  return st < 0 ? st : 1;
}

static void run_local_op(fold__coll *co, const fold__cop *op, double *busy) {
  if (op->kind == FOLD__OP_REDUCE) {
    fold__op_reduce3(co->optab, co->op, co->dtype, (char *)co->bufs[op->out_buf] + op->out_off,
                     (char *)co->bufs[op->a_buf] + op->a_off, (char *)co->bufs[op->b_buf] + op->b_off, op->len);
    *busy += fold__engine_reduce_cost(co->comm, op->len * co->esize);
  } else if (op->kind == FOLD__OP_COPY)
    memmove((char *)co->bufs[op->out_buf] + op->out_off, (char *)co->bufs[op->a_buf] + op->a_off, op->len);
}

/* Run the round's local ops not run yet, in order. */
static void run_local_ops(fold__coll *co) {
  /* The engine's clock says what the reductions cost: nothing extra on
   * real transports (the work took its time), op_overhead plus op_time
   * (gamma) per byte of virtual time in the simulator. */
  double busy = 0;
  for (int i = co->nlocal; i < co->nops; i++) run_local_op(co, &co->ops[i], &busy);
  if (busy > 0) fold__engine_charge(co->comm, busy);
  co->nops = 0;
  co->nlocal = 0;
}

/* ---- local ops overlapping the round's transfers ------------------------------------
 * A round's local ops run, in order, once its transfers are complete. But
 * a local op whose memory no pending transfer touches (no receive still
 * writing what it reads or writes, no send still reading what it writes)
 * may run at once: e.g. the reduction of one segment while the next
 * segments are on the wire. Memory is compared by address, because
 * buffers alias (in place). Only the ops' order is kept, so the results
 * are those of the round run as written. Rounds with many transfers skip
 * this (the check is quadratic), and so does the simulator, whose costs
 * model the round as written. */
#define FOLD__EARLY_MAX_OPS 64

static int mem_overlap(const fold__coll *co, int b1, size_t o1, size_t n1, int b2, size_t o2, size_t n2) {
  uintptr_t p = (uintptr_t)co->bufs[b1] + o1, q = (uintptr_t)co->bufs[b2] + o2;
  return n1 && n2 && p < q + n2 && q < p + n1;
}

static int local_ready(const fold__coll *co, const fold__cop *op) {
  size_t n = op->kind == FOLD__OP_REDUCE ? op->len * co->esize : op->len;
  for (int j = 0; j < co->nops; j++) {
    const fold_request *r = co->reqs[j];
    if (r == NULL || fold__req_done(r)) continue;
    const fold__cop *x = &co->ops[j];
    if (x->kind == FOLD__OP_RECV) {
      if (mem_overlap(co, x->out_buf, x->out_off, x->len, op->out_buf, op->out_off, n) ||
          mem_overlap(co, x->out_buf, x->out_off, x->len, op->a_buf, op->a_off, n) ||
          (op->kind == FOLD__OP_REDUCE && mem_overlap(co, x->out_buf, x->out_off, x->len, op->b_buf, op->b_off, n)))
        return 0;
    } else if (mem_overlap(co, x->a_buf, x->a_off, x->len, op->out_buf, op->out_off, n)) {
      return 0;
    }
  }
  return 1;
}

static void run_ready_local_ops(fold__coll *co) {
  /* a straggler (FOLD_INJECT_DELAY) runs no reduction before its delay */
  if (co->nops > FOLD__EARLY_MAX_OPS || fold__engine_virtual(co->comm) || fold__engine_inject_delay(co->comm)) return;
  double busy = 0;
  for (; co->nlocal < co->nops; co->nlocal++) {
    const fold__cop *op = &co->ops[co->nlocal];
    if (op->kind != FOLD__OP_REDUCE && op->kind != FOLD__OP_COPY) continue;
    if (!local_ready(co, op)) break;
    run_local_op(co, op, &busy);
  }
}

/* ---- FOLD_INJECT_DELAY: a straggler waits before each local reduction step -----------
 * The wait is an engine timer, not a sleep: the task says "waiting" until
 * the timer fires, so a delayed rank still moves its transfers, and the
 * simulator delays in virtual time. */

static void straggle_fired(fold_comm *c, fold__timer *t, void *arg) {
  fold__coll *co = arg;
  co->straggle = 2;
}

int fold__coll_straggle(fold__coll *co, int reduces) {
  int64_t d = fold__engine_inject_delay(co->comm);
  if (d <= 0 || co->straggle == 2) {
    co->straggle = 0; /* served (or none): the next step waits anew */
    return 0;
  }
  if (co->straggle == 1) return 1;
  if (!reduces) return 0;
  fold__timer_init(&co->straggle_timer, straggle_fired, co);
  if (fold__timer_arm_in(co->comm, &co->straggle_timer, d) < 0) return 0; /* the comm failed: nothing to wait for */
  co->straggle = 1;
  return 1;
}

/* Does the rest of the round (its local ops not run yet) reduce? */
static int round_reduces(const fold__coll *co) {
  for (int i = co->nlocal; i < co->nops; i++)
    if (co->ops[i].kind == FOLD__OP_REDUCE) return 1;
  return 0;
}

/* The result's last touch: FOLD_AVG divides by the rank count. */
static void finish_result(fold__coll *co) {
  if (co->exact_acc) { /* FOLD_SUM_EXACT: the one rounding, into the caller's buffer */
    if (co->exact_out) fold__exact_round(co->dtype, co->exact_out, co->rbuf, co->count);
    return;
  }
  if (co->op != FOLD_AVG) return;
  if (co->kind == FOLD__COLL_ALLREDUCE || (co->kind == FOLD__COLL_REDUCE && co->rank == co->root))
    fold__op_finish(co->op, co->dtype, co->rbuf, co->count, co->size);
  else if (co->kind == FOLD__COLL_REDUCE_SCATTER)
    fold__op_finish(co->op, co->dtype, co->rbuf, co->count, co->size);
}

/* Done when the rounds are, the left neighbour's signature matched, and our
 * own signature has left: the transport may still read it from co->sig,
 * which goes with the call. */
static int finished(fold__coll *co, int sig_ok) {
  return sig_ok && (co->sig_send == NULL || fold__req_done(co->sig_send));
}

/* The sends the rounds did not wait for (fold__co_send_nowait): drop the
 * completed ones (<0: one failed). Then 1 if the round just emitted must
 * wait before it starts: it writes memory one still under way reads, or,
 * when the rounds are over (last), any is still under way. Else 0. */
static int nowait_check(fold__coll *co, int last) {
  int st = FOLD_OK;
  for (int i = 0; i < co->nnowait;) {
    fold_request *r = co->nowait[i].req;
    if (!fold__req_done(r)) {
      i++;
      continue;
    }
    if (r->status == FOLD_EPEER && st == FOLD_OK)
      st = fold__fail_for_lost(co->comm, r->peer, "send to");
    else if (r->status < 0 && st == FOLD_OK)
      st = r->status;
    fold__req_unref(r);
    co->nowait[i] = co->nowait[--co->nnowait];
  }
  if (st < 0) return st;
  if (co->nnowait == 0) return 0;
  if (last) return 1;
  for (int j = 0; j < co->nops; j++) {
    const fold__cop *op = &co->ops[j];
    if (op->kind == FOLD__OP_SEND) continue;
    size_t n = op->kind == FOLD__OP_REDUCE ? op->len * co->esize : op->len;
    uintptr_t q = (uintptr_t)co->bufs[op->out_buf] + op->out_off;
    for (int i = 0; i < co->nnowait; i++) {
      uintptr_t p = (uintptr_t)co->nowait[i].p;
      if (n && co->nowait[i].len && p < q + n && q < p + co->nowait[i].len) return 1;
    }
  }
  return 0;
}

static int coll_step_body(fold__coll *co) {
  if (co->algo->step) { /* an algorithm with its own state machine (shm, ring_skip, hier): it runs no rounds here */
    int rc = co->algo->step(co);
    /* it divides FOLD_AVG itself chunk by chunk; FOLD_SUM_EXACT rounds here, once */
    if (rc > 0 && co->exact_acc) finish_result(co);
    return rc;
  }
  int sc = fold__coll_sig_check(co);
  if (sc < 0) return sc;
  if (co->round < 0) /* rounds done; waiting for the signatures */
    return finished(co, sc);
  for (;;) {
    if (co->nreqs) {
      int rc = round_comm_done(co);
      if (rc == 0) run_ready_local_ops(co);
      if (rc <= 0) return rc;
      co->local_due = 1;
    }
    if (co->local_due) { /* the round's transfers are done: its local ops */
      if (fold__coll_straggle(co, round_reduces(co))) return 0;
      run_local_ops(co);
      co->local_due = 0;
      co->round++;
    }
    if (co->failed) return co->failed;
    co->nops = 0;
    int more = co->algo->round(co, co->round);
    /* rounds are pure in their number: one that must wait is emitted again at the next step */
    int nw = co->nnowait ? nowait_check(co, !more) : 0;
    if (nw) {
      co->nops = 0;
      return nw < 0 ? nw : 0;
    }
    if (!more) {
      finish_result(co);
      co->round = -1;
      sc = fold__coll_sig_check(co);
      return sc < 0 ? sc : finished(co, sc);
    }
    if (co->failed) return co->failed;
    int rc = start_comm_ops(co);
    if (rc) return rc;
    if (co->nreqs == 0) co->local_due = 1; /* a round of local ops only: run at the loop's top */
  }
}

/* A peer's failure report for this call (or an earlier one) fails it here
 * too (fold__coll_told). Reports are read after each poll, before the
 * tasks step; the first step, though, runs at the call's start, before
 * any poll: a call whose data all waits there already (a rank that comes
 * late, the shm areas filled long ago) would complete before the reports
 * behind that data were read. So a call done at its first step completes
 * at the next step, after the wait's first poll pass: one flag test. A
 * blocking call skips that (its stepped flag is set from the start): its
 * wait polls before it looks at the request, and fold__coll_run checks
 * the reports after the wait. */
int fold__coll_task_step(fold__task *t) {
  fold__coll *co = (fold__coll *)t;
  if (fold__coll_told(co->comm, t->coll_seq)) return fold__coll_told_fail(co->comm, t, t->coll_seq);
  if (co->done_early) return 1;
  int rc = coll_step_body(co);
  if (rc > 0 && !co->stepped && co->size > 1) {
    co->done_early = 1;
    rc = 0;
  }
  co->stepped = 1;
  return rc;
}

/* ---- what a stuck call waits for -----------------------------------------------------
 * Only for a timeout's message (fold__task.describe): which ranks this rank
 * still waits on, and in which step. */

/* Rounds of the call in all: the rounds after the current one are emitted
 * into a scratch copy of the call and thrown away (round functions keep no
 * state beyond co->u/v, which the copy carries). Bounded. */
static int count_rounds(const fold__coll *co) {
  fold__coll tmp = *co;
  tmp.ops = NULL;
  tmp.cap = tmp.nops = 0;
  int k = co->round + 1;
  while (k < co->round + 100000 && co->algo->round(&tmp, k)) {
    tmp.nops = 0;
    k++;
  }
  free(tmp.ops);
  return k;
}

int fold__coll_task_describe(fold__task *t, char *buf, size_t cap) {
  fold__coll *co = (fold__coll *)t;
  buf[0] = '\0';
  if (co->done_early) return -1; /* done; waits for nobody */
  if (co->straggle == 1) { /* nobody else to blame: this rank is the straggler */
    snprintf(buf, cap, "its own FOLD_INJECT_DELAY before a reduction step of %s", co->algo->name);
    return -1;
  }
  if (co->algo->step) return co->algo->describe ? co->algo->describe(co, buf, cap) : -1;
  int first = -1;
  size_t len = 0;
  if (co->round >= 0 && co->nreqs) {
    int total = count_rounds(co);
    for (int i = 0; i < co->nops && len < cap; i++) {
      const fold_request *r = co->reqs[i];
      if (r == NULL || fold__req_done(r)) continue;
      int w;
      if (first < 0) {
        first = r->peer;
        w = snprintf(buf, cap, "rank %d (round %d of %d of %s: %s of %zu bytes)", r->peer, co->round + 1, total,
                     co->algo->name, r->kind == FOLD__REQ_SEND ? "send" : "receive", r->bytes);
      } else {
        int seen = 0; /* each further rank once */
        for (int j = 0; j < i && !seen; j++)
          seen = co->reqs[j] && !fold__req_done(co->reqs[j]) && co->reqs[j]->peer == r->peer;
        if (seen) continue;
        w = snprintf(buf + len, cap - len, ", rank %d", r->peer);
      }
      if (w > 0) len += (size_t)w;
    }
  }
  if (first < 0 && co->sig_recv && !fold__req_done(co->sig_recv)) {
    first = co->sig_recv->peer;
    snprintf(buf, cap, "rank %d (the signature of its call, after the last round of %s)", first, co->algo->name);
  } else if (first < 0 && co->sig_send && !fold__req_done(co->sig_send)) {
    first = co->sig_send->peer;
    snprintf(buf, cap, "rank %d (to take this rank's call signature)", first);
  }
  return first;
}
