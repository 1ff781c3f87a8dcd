/* coll_start.c — a collective's start: argument checks, the algorithm's choice, the call's state reused across calls, the blocking form. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "comm/comm.h"
#include "engine/engine.h"
#include "op/op.h"
#include "select/select.h"

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

/* The cache is the collectives' state's `cached` (fold__coll_state, in the
 * well-known slot FOLD__SLOT_COLL); its teardown frees it when the
 * communicator goes. */
const fold__coll_state fold__coll_state_none;

static void state_teardown(void *p) {
  fold__coll_state *st = p;
  if (st->cached) coll_free(st->cached);
  free(st);
}

/* A zeroed state in c's slot, or NULL (the error on c). */
static fold__coll_state *state_attach(fold_comm *c) {
  void *p;
  return fold__slot_attach_new(c, FOLD__SLOT_COLL, sizeof(fold__coll_state), state_teardown, "the collectives' state",
                               &p) == FOLD_OK
             ? p
             : NULL;
}

int fold__coll_state_init(fold_comm *c) {
  fold__coll_state *st = state_attach(c);
  if (st == NULL) return FOLD_ENOMEM;
  st->no_sig_check = fold__param_u64(FOLD__P_NO_MISMATCH_CHECK) == 1;
  st->segment_bytes = fold__param_u64(FOLD__P_SEGMENT_BYTES);
  st->piece_size = fold__param_u64(FOLD__P_PIECE_SIZE);
  return FOLD_OK;
}

int fold__coll_state_inherit(fold_comm *k, const fold_comm *parent) {
  fold__coll_state *st = state_attach(k);
  if (st == NULL) return FOLD_ENOMEM;
  st->no_sig_check = fold__coll_state_of(parent)->no_sig_check;
  return FOLD_OK;
}

/* c's cache (NULL: the communicator has no state, or it was torn down:
 * no reuse). */
static fold__coll_state *cache_of(fold_comm *c) { return fold__slot_get(c, FOLD__SLOT_COLL); }

fold__coll *fold__coll_cached(fold_comm *c) {
  fold__coll_state *k = cache_of(c);
  return k ? k->cached : NULL;
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
  fold__coll_state *k = cache_of(c);
  fold__coll *co = k ? k->cached : NULL;
  if (co == NULL) return calloc(1, sizeof *co);
  k->cached = NULL;
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
  for (int i = 0; i < co->nnowait; i++) fold__req_unref(co->nowait[i].req);
  co->nnowait = 0;
  fold__req_unref(co->sig_send);
  fold__req_unref(co->sig_recv);
  fold__timer_cancel(co->comm, &co->straggle_timer);
  free(co->exact_acc);
  co->exact_acc = NULL;
  fold__coll_state *k = cache_of(co->comm);
  if (k == NULL) {
    coll_free(co);
    return;
  }
  if (k->cached && k->cached->tmp_cap < co->tmp_cap) {
    coll_free(k->cached);
    k->cached = NULL;
  }
  if (k->cached == NULL)
    k->cached = co;
  else
    coll_free(co);
}

/* ---- argument checks ------------------------------------------------------------------ */

static int need(fold_comm *c, const char *opname, const void *buf, const char *which, size_t count) {
  if (buf == NULL && count > 0)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: %s is NULL with count %zu", opname, c->rank, which, count);
  return FOLD_OK;
}

/* The root, the count, the op (fold__op_facts: call's op facts set) and
 * the buffers, in that order; call's kind, esize and rooted are set. */
static int check_args(fold_comm *c, const char *opname, const fold__coll_args *a, fold__call *call) {
  int n = c->size, me = c->rank, rc;
  size_t count = a->count;
  if (call->rooted && (a->root < 0 || a->root >= n))
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: root %d is not a rank of this communicator (size %d)", opname, me,
                       a->root, n);
  if (count > SIZE_MAX / call->esize / (size_t)n)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: count %zu overflows", opname, me, count);
  call->op = call->reduces ? a->op : FOLD_SUM;
  call->commutative = 1;
  call->wsize = call->esize;
  call->user = NULL;
  if (call->reduces &&
      (rc = fold__op_facts(c, fold__op_table_of(c), opname, a->op, a->dtype, call->esize, &call->commutative,
                           &call->wsize, &call->user)))
    return rc;
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

/* The one place a call's facts are worked out (coll.h); errors in the
 * order dtype, root, count, op, buffers, options. */
int fold__call_init(fold_comm *c, const char *opname, const fold__coll_args *a, fold__call *call) {
  int rc;
  fold__coll_kind kind = a->kind;
  call->kind = kind;
  call->dtype = kind == FOLD__COLL_BARRIER ? FOLD_UINT8 : a->dtype;
  call->esize = fold_dtype_size(call->dtype);
  if (call->esize == 0)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: invalid dtype %d", opname, c->rank, (int)a->dtype);
  call->count = kind == FOLD__COLL_BARRIER ? 0 : a->count;
  call->rooted = kind == FOLD__COLL_BROADCAST || kind == FOLD__COLL_REDUCE || kind == FOLD__COLL_GATHER ||
                 kind == FOLD__COLL_SCATTER;
  call->reduces = kind == FOLD__COLL_REDUCE || kind == FOLD__COLL_ALLREDUCE || kind == FOLD__COLL_REDUCE_SCATTER;
  call->root = a->root;
  if ((rc = check_args(c, opname, a, call))) return rc;
  if (a->opts == NULL) /* the common call: the communicator's settings, without a call to coll_opts.c */
    call->opt = (fold__call_opts){FOLD__SELECT_COMM, 0, fold__coll_state_of(c)->segment_bytes};
  else if ((rc = fold__call_opts_read(c, opname, a, &call->opt)))
    return rc;
  /* FOLD_SUM_EXACT runs the whole collective on accumulators (wsize bytes
   * per element) and rounds once at the end: algorithms see a wider type. */
  call->exact = call->reduces && a->op == FOLD_SUM_EXACT;
  call->in_n = kind == FOLD__COLL_REDUCE_SCATTER ? a->count * (size_t)c->size : a->count;
  if (call->exact && call->in_n > SIZE_MAX / call->wsize)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: count %zu overflows with sum_exact's accumulators", opname,
                       c->rank, a->count);
  call->bytes = a->count * call->wsize;
  call->in_place = detect_in_place(a, c->rank, call->esize);
  call->algo = NULL;
  call->algo_idx = -1;
  return FOLD_OK;
}

/* blocking: the caller waits at once (fold__coll_run), and its wait polls
 * before it looks at the request: a call done at its first step may
 * complete there (the caller checks fold__coll_told after the wait). */
static int coll_start(fold_comm *c, const char *opname, const fold__coll_args *a, fold_request **req, int blocking) {
  int rc;
  if (req) *req = NULL;
  if ((rc = fold__check_comm(c))) return rc;
  if (fold__abort_asker(c)) fold__progress(c);
  if ((rc = fold__comm_failed(c))) return rc;
  fold__call call;
  if ((rc = fold__call_init(c, opname, a, &call))) return rc;
  if ((rc = fold__select_call(c, &call, opname))) return rc;
  const fold__algo *algo = call.algo;

  fold__coll *co = coll_get(c);
  fold_request *r = co ? fold__req_new(c, FOLD__REQ_TASK) : NULL;
  if (r == NULL) {
    if (co) coll_free(co);
    return fold__error(c, FOLD_ENOMEM, "%s: rank %d: out of memory", opname, c->rank);
  }
  co->comm = c;
  co->algo = algo;
  co->kind = call.kind;
  co->rank = c->rank;
  co->size = c->size;
  co->sbuf = a->sbuf;
  co->rbuf = a->rbuf;
  co->count = call.count;
  co->dtype = call.dtype;
  co->esize = call.esize;
  co->op = call.op;
  co->commutative = call.commutative;
  co->optab = call.user ? fold__op_table_of(c) : NULL;
  co->root = call.root;
  co->seg_bytes = call.opt.seg_bytes;
  r->timeout_ns = call.opt.timeout_ns;
  co->in_place = call.in_place;
  co->exact_acc = co->exact_out = NULL;
  if (call.exact) {
    size_t in_n = call.in_n, wsize = call.wsize;
    co->exact_acc = malloc(in_n ? in_n * wsize : 1);
    if (co->exact_acc == NULL) {
      fold__req_unref(r); /* releases co */
      return fold__error(c, FOLD_ENOMEM, "%s: rank %d: out of memory for %zu sum_exact accumulators", opname, c->rank,
                         in_n);
    }
    fold__exact_load(call.dtype, co->exact_acc, a->sbuf, in_n);
    /* in place on the accumulators: the input is consumed, the result
     * rounded into the caller's recvbuf (NULL at a reduce's non-root) */
    co->exact_out = a->kind == FOLD__COLL_REDUCE && c->rank != a->root ? NULL : a->rbuf;
    co->sbuf = co->exact_acc;
    co->rbuf = (char *)co->exact_acc + (a->kind == FOLD__COLL_REDUCE_SCATTER ? (size_t)c->rank * a->count * wsize : 0);
    co->esize = wsize;
    co->in_place = 1;
  }
  co->tag = (int)(c->svc->coll_seq++ & 0x7fffffff);
  co->bufs[FOLD__B_SEND] = (void *)co->sbuf;
  co->bufs[FOLD__B_RECV] = co->rbuf;
  co->task.step = fold__coll_task_step;
  co->task.release = coll_release;
  co->task.describe = fold__coll_task_describe;
  co->task.req = r;
  co->stepped = blocking; /* see fold__coll_task_step (coll.c) */
  co->task.is_coll = 1;
  co->task.coll_seq = c->svc->coll_seq - 1; /* the call's number, unmasked (the tag is its low 31 bits) */
  r->task = &co->task;
  co->sig = (fold__sig){.count = co->count, .root = call.rooted ? call.root : -1, .esize = (uint32_t)co->esize,
                        .op = (uint16_t)(a->sig_op ? a->sig_op : call.reduces ? call.op : 0), .coll = (uint8_t)call.kind,
                        .dtype = (uint32_t)call.dtype, .algo = (uint8_t)call.algo_idx, .seg = (uint32_t)co->seg_bytes};
  int no_sig_check = fold__coll_state_of(c)->no_sig_check;
  co->data_ctx = no_sig_check ? FOLD__CTX_COLL : fold__coll_data_ctx(co);
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
  if (rc == FOLD_OK && c->size > 1 && !no_sig_check && !algo->step)
    rc = fold__coll_sig_post(co, (c->rank + c->size - 1) % c->size, (c->rank + 1) % c->size);
  if (rc != FOLD_OK) {
    fold__tx_batch_end(c);
    if (co->sig_recv && fold__unpost(c, co->sig_recv) == 0 && !fold__req_done(co->sig_recv))
      rc = fold__comm_fail(c, FOLD_EINTERNAL, "%s: rank %d: signature receive lost", opname, c->rank);
    fold__req_unref(r); /* releases co */
    if (rc == FOLD_EINVAL) {
      c->svc->coll_seq--; /* every rank refuses alike (e.g. a forced algorithm): the call never happened */
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
     * at its first step (see fold__coll_task_step, coll.c) */
    if (rc == FOLD_OK && fold__coll_told(c, r->task->coll_seq)) rc = fold__coll_told_fail(c, r->task, r->task->coll_seq);
    fold__req_unref(r);
  }
  fold__leave(c);
  return rc;
}
