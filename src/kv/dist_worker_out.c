/* dist_worker_out.c — a distributed store worker's outgoing side: reply tags, requests in flight, the priority outbox. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "kv/dist_wrk.h"

int32_t fold__kvw_reply_tag(struct fold__kv_worker *w) {
  int32_t t = w->next_tag;
  w->next_tag = t == INT32_MAX ? FOLD__KV_REPLY_TAG0 : t + 1;
  return t;
}

int fold__kvw_pend_add(fold_kv *kv, fold_request *r, void *buf, size_t bytes) {
  struct fold__kv_worker *w = kv->w;
  if (w->npend == w->cappend) {
    size_t cap = w->cappend ? w->cappend * 2 : 64;
    kv_pend *p = realloc(w->pend, cap * sizeof *p);
    if (p == NULL) {
      fold__req_unref(r);
      free(buf);
      return fold__comm_fail(kv->c, FOLD_ENOMEM, "fold_kv: rank %d: out of memory", kv->c->rank);
    }
    w->pend = p;
    w->cappend = cap;
  }
  w->pend[w->npend++] = (kv_pend){r, buf, bytes};
  w->inflight += bytes;
  return FOLD_OK;
}

/* Drop the requests that completed (called by every push and pull, so a
 * worker that rarely waits does not pile them up). */
void fold__kvw_reap(struct fold__kv_worker *w) {
  size_t j = 0;
  for (size_t i = 0; i < w->npend; i++) {
    if (fold__req_done(w->pend[i].r)) {
      w->inflight -= w->pend[i].bytes;
      fold__req_unref(w->pend[i].r);
      free(w->pend[i].buf);
    } else {
      w->pend[j++] = w->pend[i];
    }
  }
  w->npend = j;
}

/* A request's message: the header, then room for `bytes` of payload. */
char *fold__kvw_msg_new(fold_kv *kv, const fold__kv_hdr *hdr, size_t bytes) {
  char *buf = malloc(sizeof *hdr + bytes);
  if (buf == NULL) {
    fold__comm_fail(kv->c, FOLD_ENOMEM, "fold_kv: rank %d: out of memory for a %zu-byte message", kv->c->rank,
                    sizeof *hdr + bytes);
    return NULL;
  }
  memcpy(buf, hdr, sizeof *hdr);
  return buf;
}

/* Send msg (from fold__kvw_msg_new, freed once sent) to rank `to` now. */
int fold__kvw_msg_send(fold_kv *kv, int to, int type, char *msg, size_t bytes) {
  fold_request *r = NULL;
  size_t len = sizeof(fold__kv_hdr) + bytes;
  int rc = fold__isend_bytes(kv->c, msg, len, to, fold__kv_ctx(), type, &r);
  if (rc != FOLD_OK) {
    free(msg);
    return rc;
  }
  return fold__kvw_pend_add(kv, r, msg, len);
}

/* Highest priority first; at equal priority the earlier queued (seq is
 * unique: a strict order, as core/heap.h asks). */
int fold__kvw_out_before(const void *x, const void *y) {
  const kv_out *a = x, *b = y;
  return a->prio > b->prio || (a->prio == b->prio && a->seq < b->seq);
}

/* Send queued messages, highest priority first, while the bytes in flight
 * are under the window (one message at least, however big). */
int fold__kvw_pump(fold_kv *kv) {
  struct fold__kv_worker *w = kv->w;
  int rc = fold__comm_failed(kv->c);
  fold__kvw_reap(w);
  kv_out top;
  while (rc == FOLD_OK && (w->inflight < KV_WINDOW || w->inflight == 0) && fold__heap_pop(&w->out, &top)) {
    if (top.ent) top.ent->queued--;
    rc = fold__kvw_msg_send(kv, top.to, top.type, top.msg, top.bytes);
  }
  return rc;
}

/* Queue msg for rank `to` with priority prio; a message of a key never
 * overtakes an earlier one of the same key (per-key order: a pull after a
 * push sees it), so its priority is capped by theirs. */
int fold__kvw_msg_queue(fold_kv *kv, int to, int type, char *msg, size_t bytes, int prio, fold__kv_ent *e) {
  struct fold__kv_worker *w = kv->w;
  if (fold__heap_reserve(&w->out, 1) != FOLD_OK) {
    free(msg);
    return fold__comm_fail(kv->c, FOLD_ENOMEM, "fold_kv: rank %d: out of memory queueing a message to rank %d",
                           kv->c->rank, to);
  }
  if (e) {
    if (e->queued > 0 && e->qprio < prio) prio = e->qprio;
    e->qprio = prio;
    e->queued++;
  }
  kv_out o = {msg, bytes, to, type, prio, w->seq++, e};
  return fold__heap_push(&w->out, &o); /* reserved: cannot fail */
}
