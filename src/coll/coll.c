/* coll.c — the round executor that runs every collective algorithm, argument checks, mismatch detection. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "coll/shm_coll.h"
#include "engine/engine.h"
#include "op/op.h"
#include "select/select.h"

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

/* ---- mismatch check: src/coll/coll_sig.c ---- */

/* ---- executor ---------------------------------------------------------------------- */

/* co->reqs[i] is the request of co->ops[i] (NULL for local ops); nreqs
 * counts the round's started transfers, nlocal the ops before the first
 * local op not run yet (see run_ready_local_ops). */
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
      co->reqs[i] = r;
      co->nreqs++;
    }
  return FOLD_OK;
}

/* A message of the wrong size: the ranks called different things. Tell
 * everyone, naming our call (the signature check names both calls when
 * it gets there first). */
static int size_mismatch(fold__coll *co, const fold_request *r) {
  char mine[160], msg[FOLD__ERRLEN];
  fold__coll_describe(&co->sig, mine, sizeof mine);
  snprintf(msg, sizeof msg, "collective #%d: rank %d called %s but rank %d sent a message of %s bytes where %zu were expected",
           co->tag, co->rank, mine, r->peer, r->status == FOLD_EMISMATCH ? "more" : "fewer", r->bytes);
  return fold__comm_fail_and_tell(co->comm, FOLD_EMISMATCH, msg);
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
      st = size_mismatch(co, r);
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
    fold__op_reduce3(co->comm, co->op, co->dtype, (char *)co->bufs[op->out_buf] + op->out_off,
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

static int coll_step_body(fold__coll *co) {
  if (co->algo->step) { /* an algorithm with its own state machine (shm): no rounds, no signature messages */
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
    if (!co->algo->round(co, co->round)) {
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
static int coll_step(fold__task *t) {
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

static int coll_describe_wait(fold__task *t, char *buf, size_t cap) {
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

/* ---- reuse across calls ------------------------------------------------------------
 * A finished call's state (its op and request arrays and its scratch) waits
 * in the communicator's cache for the next call, so that the hot path neither
 * allocates nor page-faults: a fresh calloc of a large scratch is a new
 * mmap of zero pages, faulted in on every call (512 KiB allreduce at n=2
 * over shm: 403 us out of place against 91 us in place). One call's state
 * is kept; with several calls in flight the others allocate their own, and
 * of two the one with the larger scratch stays. Freed with the comm. */

static void coll_free(fold__coll *co) {
  free(co->exact_acc);
  free(co->tmp_mem);
  free(co->ops);
  free(co->reqs);
  free(co);
}

/* The cache hangs in an extension slot of the communicator; its teardown
 * hook frees it when the communicator goes. */
typedef struct coll_cache {
  fold__coll *co;
} coll_cache;
static const char cache_slot; /* the slot's key */

static void cache_teardown(void *p) {
  coll_cache *k = p;
  if (k->co) coll_free(k->co);
  free(k);
}

/* c's cache, attached at the first call (NULL without memory: no reuse). */
static coll_cache *cache_of(fold_comm *c) {
  coll_cache *k = fold__ext_get(c, &cache_slot);
  if (k == NULL && (k = calloc(1, sizeof *k)) != NULL && fold__ext_attach(c, &cache_slot, k, cache_teardown) != FOLD_OK) {
    free(k);
    k = NULL;
  }
  return k;
}

fold__coll *fold__coll_cached(fold_comm *c) {
  coll_cache *k = fold__ext_get(c, &cache_slot);
  return k ? k->co : NULL;
}

/* The digest cache's bytes in fold__coll: [DIG_FROM, DIG_TO), kept by
 * coll_get; its three fields are declared together, in this order. */
#define DIG_FROM offsetof(fold__coll, dig_sig)
#define DIG_TO offsetof(fold__coll, sig_send)
_Static_assert(offsetof(fold__coll, dig_sig) < offsetof(fold__coll, dig_ctx) &&
                 offsetof(fold__coll, dig_ctx) < offsetof(fold__coll, dig_next) &&
                 offsetof(fold__coll, dig_next) < offsetof(fold__coll, sig_send),
               "the digest cache lies between dig_sig and sig_send");

static fold__coll *coll_get(fold_comm *c) {
  coll_cache *k = cache_of(c);
  fold__coll *co = k ? k->co : NULL;
  if (co == NULL) return calloc(1, sizeof *co);
  k->co = NULL;
  /* Kept: the op and request arrays, the scratch and the digest cache; the
   * rest starts zeroed. The cache (a third of the struct) stays in place and
   * nothing is copied whole: a copy and a clear of the whole struct were
   * ~140 instructions of a 2-3k instruction small call. */
  fold__cop *ops = co->ops;
  fold_request **reqs = co->reqs;
  void *tmp_mem = co->tmp_mem;
  int cap = co->cap, reqcap = co->reqcap;
  size_t tmp_cap = co->tmp_cap;
  memset(co, 0, DIG_FROM);
  memset((char *)co + DIG_TO, 0, sizeof *co - DIG_TO);
  co->ops = ops;
  co->cap = cap;
  co->reqs = reqs;
  co->reqcap = reqcap;
  co->tmp_mem = tmp_mem;
  co->tmp_cap = tmp_cap;
  return co;
}

/* Point bufs[FOLD__B_TMP] at tmp_bytes of scratch, growing it if needed.
 * New scratch is zeroed so that every byte sent is defined (a barrier's
 * token); reused scratch holds an earlier call's bytes, defined too. */
static int scratch_get(fold__coll *co) {
  if (co->tmp_cap < co->tmp_bytes) {
    free(co->tmp_mem);
    co->tmp_cap = 0;
    co->tmp_mem = calloc(1, co->tmp_bytes);
    if (co->tmp_mem == NULL) return FOLD_ENOMEM;
    co->tmp_cap = co->tmp_bytes;
  }
  co->bufs[FOLD__B_TMP] = co->tmp_mem;
  return FOLD_OK;
}

static void coll_release(fold__task *t) {
  fold__coll *co = (fold__coll *)t;
  for (int i = 0; co->reqs && i < co->nops && i < co->reqcap; i++) {
    fold__req_unref(co->reqs[i]);
    co->reqs[i] = NULL;
  }
  co->nreqs = 0;
  fold__req_unref(co->sig_send);
  fold__req_unref(co->sig_recv);
  fold__timer_cancel(co->comm, &co->straggle_timer);
  free(co->exact_acc);
  co->exact_acc = NULL;
  coll_cache *k = cache_of(co->comm);
  if (k == NULL) {
    coll_free(co);
    return;
  }
  if (k->co && k->co->tmp_cap < co->tmp_cap) {
    coll_free(k->co);
    k->co = NULL;
  }
  if (k->co == NULL)
    k->co = co;
  else
    coll_free(co);
}

/* ---- argument checks ------------------------------------------------------------------ */

static int need(fold_comm *c, const char *opname, const void *buf, const char *which, size_t count) {
  if (buf == NULL && count > 0)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: %s is NULL with count %zu", opname, c->rank, which, count);
  return FOLD_OK;
}

static int check_args(fold_comm *c, const char *opname, const fold__coll_args *a, size_t esize) {
  int n = c->size, me = c->rank, rc;
  size_t count = a->count;
  int rooted = a->kind == FOLD__COLL_BROADCAST || a->kind == FOLD__COLL_REDUCE || a->kind == FOLD__COLL_GATHER ||
               a->kind == FOLD__COLL_SCATTER;
  if (rooted && (a->root < 0 || a->root >= n))
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: root %d is not a rank of this communicator (size %d)", opname, me,
                       a->root, n);
  if (count > SIZE_MAX / esize / (size_t)n)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: count %zu overflows", opname, me, count);
  int reduces = a->kind == FOLD__COLL_REDUCE || a->kind == FOLD__COLL_ALLREDUCE || a->kind == FOLD__COLL_REDUCE_SCATTER;
  if (reduces && (rc = fold__op_check(c, opname, a->op, a->dtype))) return rc;
  int is_root = me == a->root;
  switch (a->kind) {
  case FOLD__COLL_BROADCAST: return need(c, opname, a->rbuf, "buf", count);
  case FOLD__COLL_REDUCE:
    if ((rc = need(c, opname, a->sbuf, "sendbuf", count))) return rc;
    return is_root ? need(c, opname, a->rbuf, "recvbuf", count) : FOLD_OK;
  case FOLD__COLL_GATHER:
    if ((rc = need(c, opname, a->sbuf, "sendbuf", count))) return rc;
    return is_root ? need(c, opname, a->rbuf, "recvbuf", count) : FOLD_OK;
  case FOLD__COLL_SCATTER:
    if ((rc = need(c, opname, a->rbuf, "recvbuf", count))) return rc;
    return is_root ? need(c, opname, a->sbuf, "sendbuf", count) : FOLD_OK;
  case FOLD__COLL_ALLTOALL:
    if (a->sbuf == a->rbuf && count > 0)
      return fold__error(c, FOLD_EINVAL, "%s: rank %d: in-place alltoall is not supported (sendbuf == recvbuf)",
                         opname, me);
    /* fall through */
  case FOLD__COLL_ALLREDUCE:
  case FOLD__COLL_REDUCE_SCATTER:
  case FOLD__COLL_ALLGATHER:
    if ((rc = need(c, opname, a->sbuf, "sendbuf", count))) return rc;
    return need(c, opname, a->rbuf, "recvbuf", count);
  default: return FOLD_OK;
  }
}

static int detect_in_place(const fold__coll_args *a, int me, size_t esize) {
  const char *s = a->sbuf, *r = a->rbuf;
  size_t block = a->count * esize;
  switch (a->kind) {
  case FOLD__COLL_ALLREDUCE:
  case FOLD__COLL_REDUCE: return s == r && s != NULL;
  case FOLD__COLL_ALLGATHER: return r != NULL && s == r + (size_t)me * block;
  case FOLD__COLL_GATHER: return me == a->root && r != NULL && s == r + (size_t)me * block;
  case FOLD__COLL_REDUCE_SCATTER: return s != NULL && r == s + (size_t)me * block;
  case FOLD__COLL_SCATTER: return me == a->root && s != NULL && r == s + (size_t)me * block;
  default: return 0;
  }
}

/* ---- start ------------------------------------------------------------------------------- */

static int coll_start(fold_comm *c, const char *opname, const fold__coll_args *a, fold_request **req, int blocking);

int fold__coll_start(fold_comm *c, const char *opname, const fold__coll_args *a, fold_request **req) {
  return coll_start(c, opname, a, req, 0);
}

/* blocking: the caller waits at once (fold__coll_run), and its wait polls
 * before it looks at the request: a call done at its first step may
 * complete there (the caller checks fold__coll_told after the wait). */
static int coll_start(fold_comm *c, const char *opname, const fold__coll_args *a, fold_request **req, int blocking) {
  int rc;
  if (req) *req = NULL;
  if ((rc = fold__check_comm(c))) return rc;
  if (atomic_load_explicit(&c->abort_req, memory_order_acquire)) fold__progress(c);
  if ((rc = fold__comm_failed(c))) return rc;
  fold_dtype dtype = a->kind == FOLD__COLL_BARRIER ? FOLD_UINT8 : a->dtype;
  size_t esize = fold_dtype_size(dtype);
  if (esize == 0) return fold__error(c, FOLD_EINVAL, "%s: rank %d: invalid dtype %d", opname, c->rank, (int)a->dtype);
  if ((rc = check_args(c, opname, a, esize))) return rc;
  fold__call_opts opt;
  if ((rc = fold__call_opts_read(c, opname, a, &opt))) return rc;
  const fold__algo *algo = NULL;
  int reduces = a->kind == FOLD__COLL_REDUCE || a->kind == FOLD__COLL_ALLREDUCE || a->kind == FOLD__COLL_REDUCE_SCATTER;
  int commutative = reduces ? fold__op_commutative(c, a->op) : 1;
  /* FOLD_SUM_EXACT runs the whole collective on accumulators (wsize bytes
   * per element) and rounds once at the end: algorithms see a wider type. */
  int exact = reduces && a->op == FOLD_SUM_EXACT;
  size_t wsize = exact ? fold__exact_acc_size(dtype) : esize;
  size_t in_n = a->kind == FOLD__COLL_REDUCE_SCATTER ? a->count * (size_t)c->size : a->count;
  if (exact && in_n > SIZE_MAX / wsize)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: count %zu overflows with sum_exact's accumulators", opname,
                       c->rank, a->count);
  if ((rc = fold__select_call(c, a->kind, a->count * wsize, wsize, commutative, opt.force, &algo, opname))) return rc;

  fold__coll *co = coll_get(c);
  fold_request *r = co ? fold__req_new(c, FOLD__REQ_TASK) : NULL;
  if (r == NULL) {
    if (co) coll_free(co);
    return fold__error(c, FOLD_ENOMEM, "%s: rank %d: out of memory", opname, c->rank);
  }
  co->comm = c;
  co->algo = algo;
  co->kind = a->kind;
  co->rank = c->rank;
  co->size = c->size;
  co->sbuf = a->sbuf;
  co->rbuf = a->rbuf;
  co->count = a->kind == FOLD__COLL_BARRIER ? 0 : a->count;
  co->dtype = dtype;
  co->esize = esize;
  co->op = reduces ? a->op : FOLD_SUM;
  co->root = a->root;
  co->seg_bytes = opt.seg_bytes;
  r->timeout_ns = opt.timeout_ns;
  co->in_place = detect_in_place(a, c->rank, esize);
  co->exact_acc = co->exact_out = NULL;
  if (exact) {
    co->exact_acc = malloc(in_n ? in_n * wsize : 1);
    if (co->exact_acc == NULL) {
      fold__req_unref(r); /* releases co */
      return fold__error(c, FOLD_ENOMEM, "%s: rank %d: out of memory for %zu sum_exact accumulators", opname, c->rank,
                         in_n);
    }
    fold__exact_load(dtype, co->exact_acc, a->sbuf, in_n);
    /* in place on the accumulators: the input is consumed, the result
     * rounded into the caller's recvbuf (NULL at a reduce's non-root) */
    co->exact_out = a->kind == FOLD__COLL_REDUCE && c->rank != a->root ? NULL : a->rbuf;
    co->sbuf = co->exact_acc;
    co->rbuf = (char *)co->exact_acc + (a->kind == FOLD__COLL_REDUCE_SCATTER ? (size_t)c->rank * a->count * wsize : 0);
    co->esize = wsize;
    co->in_place = 1;
  }
  co->tag = (int)(c->coll_seq++ & 0x7fffffff);
  co->bufs[FOLD__B_SEND] = (void *)co->sbuf;
  co->bufs[FOLD__B_RECV] = co->rbuf;
  co->task.step = coll_step;
  co->task.release = coll_release;
  co->task.describe = coll_describe_wait;
  co->task.req = r;
  co->stepped = blocking; /* see coll_step */
  co->task.is_coll = 1;
  co->task.coll_seq = c->coll_seq - 1; /* the call's number, unmasked (the tag is its low 31 bits) */
  r->task = &co->task;
  int rooted = a->kind == FOLD__COLL_BROADCAST || a->kind == FOLD__COLL_REDUCE || a->kind == FOLD__COLL_GATHER ||
               a->kind == FOLD__COLL_SCATTER;
  co->sig = (fold__sig){.count = co->count, .root = rooted ? a->root : -1, .esize = (uint32_t)co->esize,
                        .op = (uint16_t)(reduces ? a->op : a->sig_op), .coll = (uint8_t)a->kind, .dtype = (uint32_t)dtype,
                        .algo = (uint8_t)fold__coll_algo_index(a->kind, algo), .seg = (uint32_t)co->seg_bytes};
  co->data_ctx = c->no_sig_check ? FOLD__CTX_COLL : fold__coll_data_ctx(co);
  co->sig_rounds = fold__coll_sig_rounds(co);

  if ((rc = algo->init(co)) == FOLD_OK && co->tmp_bytes) {
    if (scratch_get(co) != FOLD_OK)
      rc = fold__error(c, FOLD_ENOMEM, "%s: rank %d: out of memory for %zu bytes of scratch", opname, c->rank,
                       co->tmp_bytes);
  }
  /* FOLD_NO_MISMATCH_CHECK=1 skips the signature exchange; it exists only
   * to measure what the check costs (bench/coll_time), and every rank of a
   * job must agree on it. */
  /* The signature and the first round's sends leave together: to one
   * neighbour they are one write instead of two. */
  fold__tx_batch_begin(c);
  if (rc == FOLD_OK && c->size > 1 && !c->no_sig_check && !algo->step) {
    fold__shm_note_round_call(co); /* for shm-running ranks of a mixed call (shm_coll.c) */
    int right = (c->rank + 1) % c->size, left = (c->rank + c->size - 1) % c->size;
    rc = fold__irecv_bytes(c, &co->left_sig, sizeof co->left_sig, left, FOLD__CTX_SIG, co->tag, &co->sig_recv);
    if (rc == FOLD_OK)
      rc = fold__isend_bytes(c, &co->sig, sizeof co->sig, right, FOLD__CTX_SIG, co->tag, &co->sig_send);
  }
  if (rc != FOLD_OK) {
    fold__tx_batch_end(c);
    if (co->sig_recv && fold__unpost(c, co->sig_recv) == 0 && !fold__req_done(co->sig_recv))
      rc = fold__comm_fail(c, FOLD_EINTERNAL, "%s: rank %d: signature receive lost", opname, c->rank);
    fold__req_unref(r); /* releases co */
    if (rc == FOLD_EINVAL) {
      c->coll_seq--; /* every rank refuses alike (e.g. a forced algorithm): the call never happened */
    } else if (!fold__comm_failed(c)) {
      /* this rank alone cannot take part: the others must not wait for it */
      char msg[FOLD__ERRLEN];
      snprintf(msg, sizeof msg, "%s: rank %d cannot take part: %.300s", opname, c->rank, c->last_error);
      rc = fold__comm_fail_and_tell(c, rc, msg);
    }
    return rc;
  }
  fold__task_start(c, &co->task);
  fold__tx_batch_end(c);
  *req = r;
  return FOLD_OK;
}

/* The public collectives enter here: held against the progress thread
 * (fold__enter) for the whole call. */
int fold__coll_start_user(fold_comm *c, const char *opname, const fold__coll_args *a, fold_request **req) {
  fold__enter(c);
  int rc = fold__coll_start(c, opname, a, req);
  if (rc == FOLD_OK) fold__req_user_give(*req);
  fold__leave(c);
  return rc;
}

int fold__coll_run(fold_comm *c, const char *opname, const fold__coll_args *a) {
  fold_request *r;
  fold__enter(c);
  int rc = coll_start(c, opname, a, &r, 1);
  if (rc == FOLD_OK) {
    fold__wait_req(c, r, opname);
    rc = r->status;
    /* the wait polled and read the reports at least once: one that says
     * this call failed elsewhere fails it here too, even if it completed
     * at its first step (see coll_step) */
    if (rc == FOLD_OK && fold__coll_told(c, r->task->coll_seq)) rc = fold__coll_told_fail(c, r->task, r->task->coll_seq);
    fold__req_unref(r);
  }
  fold__leave(c);
  return rc;
}
