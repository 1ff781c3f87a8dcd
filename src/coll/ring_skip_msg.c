/* ring_skip_msg.c — ring_skip's messages: the buffer pool, sends to the right, the reduce-scatter and allgather streams from the left. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/ring_skip_int.h"
#include "patterns/patterns.h"

/* A message buffer of at least HDR + the call's largest block. The pool
 * keeps buffers of the largest size seen (pool_gen counts its growths):
 * with sizes interleaved, a pool sized for the last call only was freed
 * and refilled with fresh pages at every call, and a 4 MiB ring_skip call
 * after an 8 B one took 3-4 times ring's time on shm, skipping or not. */
char *fold__rs_buf_get(rs_call *s) {
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
void fold__rs_buf_put(rs_call *s, char *b) {
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
  fold__rs_buf_put(s, s->rmsg);
  if (s->hold)
    for (int j = 0; j < s->n; j++) fold__rs_buf_put(s, s->hold[j]);
  free(s->hold);
  free(s->cov);
  free(s->acc_cov);
  free(s->own_sent);
  free(s->full_at);
  free(s);
}

/* Send len bytes from data to the right on ctx. owned: a message buffer
 * of ours (ownership moves to the call), or NULL when data is the caller's
 * buffer or the result (they outlive the call's sends). */
int fold__rs_send(rs_call *s, int ctx, const void *data, size_t len, char *owned) {
  fold__coll *co = s->co;
  if (s->nouts == s->outcap) {
    int cap = s->outcap ? 2 * s->outcap : 8;
    out_msg *o = realloc(s->outs, (size_t)cap * sizeof *o);
    if (o == NULL) {
      fold__rs_buf_put(s, owned);
      return fold__error(co->comm, FOLD_ENOMEM, "%s: rank %d: out of memory", fold__coll_name(co->kind), co->rank);
    }
    s->outs = o;
    s->outcap = cap;
  }
  fold_request *r = NULL;
  int rc = fold__isend_bytes(co->comm, data, len, s->right, ctx, co->tag, &r);
  if (rc != FOLD_OK) {
    fold__rs_buf_put(s, owned);
    return rc;
  }
  s->outs[s->nouts++] = (out_msg){r, owned};
  return FOLD_OK;
}

/* A partial in message buffer buf (payload after the header). */
int fold__rs_send_partial(rs_call *s, char *buf, int j, int cov, unsigned flags, size_t bytes) {
  msg_hdr h = {(float)(fold__rs_class(s->rc, s->maxb)->t_ns / 1e3), s->out_ttrans_us, (uint32_t)j,
               (uint32_t)cov | flags};
  memcpy(buf, &h, HDR);
  return fold__rs_send(s, s->co->data_ctx, buf, HDR + bytes, buf);
}

int fold__rs_sends_step(rs_call *s) {
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
    fold__rs_buf_put(s, s->outs[i].buf);
  }
  s->nouts = k;
  return st;
}

int fold__rs_no_memory(rs_call *s) {
  return fold__error(s->co->comm, FOLD_ENOMEM, "%s: rank %d: out of memory", fold__coll_name(s->co->kind), s->r);
}


/* The reduce-scatter stream. Its first message from the left is always
 * the left's position 0 (its own contribution to block left-1, sent before
 * anything else), so it comes without a header: received behind the
 * header's room, the header is filled in on arrival. */
int fold__rs_post_recv(rs_call *s) {
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
int fold__rs_take(rs_call *s) {
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
      s->rmsg = fold__rs_buf_get(s);
      if (s->rmsg == NULL) return fold__rs_no_memory(s);
    } else {
      char *a = s->hold[j] + HDR;
      fold__op_reduce3(co->optab, co->op, co->dtype, a, a, s->rmsg + HDR, len);
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
  s->rmsg = fold__rs_buf_get(s);
  if (s->rmsg == NULL) {
    s->rmsg = buf;
    return fold__rs_no_memory(s);
  }
  return fold__rs_send(s, co->data_ctx, buf, HDR + bytes, buf);
}

/* The allgather stream (allreduce only), after our reduce-scatter: blocks
 * left, left-1, ..., right+1 arrive in this order (each rank sends its own
 * block first and then forwards in arrival order), each straight into the
 * result, and is forwarded from there unless the right neighbour owns it. */
int fold__rs_ag_step(rs_call *s, int *took) {
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
    if (s->right != j && (st = fold__rs_send(s, s->ag_ctx, out_of(s, j), bytes, NULL))) return st;
    j = fold__mod(s->left - s->ag_got, s->n);
    bytes = blk_len(s, j) * co->esize;
  }
  if (s->agreq == NULL && s->ag_got < s->n - 1)
    return fold__irecv_bytes(co->comm, out_of(s, j), bytes, s->left, s->ag_ctx, co->tag, &s->agreq);
  return FOLD_OK;
}
