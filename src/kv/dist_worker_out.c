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

/* Room for one more item at the end of a[head..n), an array of cap items
 * of esize bytes whose front was consumed: empty, it starts again at 0;
 * full, its items move down to the front when that has room, else it
 * doubles. Returns the array (realloc may move it), or NULL when out of
 * memory (a unchanged); *moved is set when indices into it changed. The
 * requests' fifos and the outbox's fifo both grow this way. */
static void *room_at_end(void *a, size_t *head, size_t *n, size_t *cap, size_t esize, int *moved) {
  *moved = 0;
  if (*head > 0 && (*head == *n || *n == *cap)) {
    memmove(a, (char *)a + *head * esize, (*n - *head) * esize);
    *n -= *head;
    *head = 0;
    *moved = 1;
  }
  if (*n < *cap) return a;
  size_t c = *cap ? *cap * 2 : 64;
  void *b = realloc(a, c * esize);
  if (b != NULL) *cap = c;
  return b;
}

static int fifo_add(struct fold__kv_worker *w, kv_fifo *f, kv_pend p) {
  int moved;
  kv_pend *at = room_at_end(f->at, &f->head, &f->n, &f->cap, sizeof *f->at, &moved);
  if (moved) w->reaps++;
  if (at == NULL) return FOLD_ENOMEM;
  f->at = at;
  f->at[f->n++] = p;
  return FOLD_OK;
}

int fold__kvw_pend_add(fold_kv *kv, fold_request *r, void *buf, size_t bytes) {
  struct fold__kv_worker *w = kv->w;
  if (fifo_add(w, r->kind == FOLD__REQ_SEND ? &w->sends : &w->recvs, (kv_pend){r, buf, bytes}) != FOLD_OK) {
    fold__req_unref(r);
    free(buf);
    return fold__comm_fail(kv->c, FOLD_ENOMEM, "fold_kv: rank %d: out of memory", kv->c->rank);
  }
  w->inflight += bytes;
  return FOLD_OK;
}

static void pend_release(struct fold__kv_worker *w, kv_pend *p) {
  w->inflight -= p->bytes;
  fold__req_unref(p->r);
  free(p->buf);
}

static size_t fifo_sweep(struct fold__kv_worker *w, kv_fifo *f) {
  size_t j = 0;
  for (size_t i = f->head; i < f->n; i++) {
    if (fold__req_done(f->at[i].r))
      pend_release(w, &f->at[i]);
    else
      f->at[j++] = f->at[i];
  }
  f->head = 0;
  f->n = j;
  return j;
}

void fold__kvw_reap(struct fold__kv_worker *w) {
  size_t left = fifo_sweep(w, &w->sends) + fifo_sweep(w, &w->recvs);
  w->reap_at = left < 32 ? 64 : 2 * left;
  w->reaps++;
}

static void fifo_front(struct fold__kv_worker *w, kv_fifo *f) {
  while (f->head < f->n && fold__req_done(f->at[f->head].r)) pend_release(w, &f->at[f->head++]);
}

void fold__kvw_reap_some(struct fold__kv_worker *w) {
  fifo_front(w, &w->sends);
  fifo_front(w, &w->recvs);
  if (w->inflight >= KV_WINDOW || (w->sends.n - w->sends.head) + (w->recvs.n - w->recvs.head) >= w->reap_at)
    fold__kvw_reap(w);
}

fold_request *fold__kvw_first_pending(struct fold__kv_worker *w, kv_fifo *f, size_t *i, uint64_t *reaps) {
  if (*reaps != w->reaps || *i < f->head) {
    *i = f->head;
    *reaps = w->reaps;
  }
  while (*i < f->n && fold__req_done(f->at[*i].r)) ++*i;
  return *i < f->n ? f->at[*i].r : NULL;
}

void fold__kvw_pend_free(struct fold__kv_worker *w) {
  kv_fifo *fs[2] = {&w->sends, &w->recvs};
  for (int k = 0; k < 2; k++) {
    for (size_t i = fs[k]->head; i < fs[k]->n; i++) {
      fold__req_unref(fs[k]->at[i].r);
      free(fs[k]->at[i].buf);
    }
    free(fs[k]->at);
    *fs[k] = (kv_fifo){0};
  }
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

void fold__kvw_out_init(kv_outbox *o) {
  *o = (kv_outbox){0};
  fold__heap_init(&o->heap, sizeof(kv_out), fold__kvw_out_before);
}

void fold__kvw_out_free(kv_outbox *o) {
  for (size_t i = o->head; i < o->n; i++) free(o->run[i].msg);
  for (size_t i = 0; i < fold__heap_size(&o->heap); i++) free(((kv_out *)fold__heap_at(&o->heap, i))->msg);
  free(o->run);
  fold__heap_fini(&o->heap);
  *o = (kv_outbox){0};
  fold__heap_init(&o->heap, sizeof(kv_out), fold__kvw_out_before);
}

int fold__kvw_out_push(kv_outbox *o, const kv_out *m) {
  if (o->n > o->head && m->prio > o->run[o->n - 1].prio) return fold__heap_push(&o->heap, m);
  int moved;
  kv_out *run = room_at_end(o->run, &o->head, &o->n, &o->cap, sizeof *o->run, &moved);
  if (run == NULL) return FOLD_ENOMEM;
  o->run = run;
  o->run[o->n++] = *m;
  return FOLD_OK;
}

int fold__kvw_out_pop(kv_outbox *o, kv_out *m) {
  const kv_out *top = fold__heap_top(&o->heap);
  if (o->head < o->n && (top == NULL || fold__kvw_out_before(&o->run[o->head], top))) {
    *m = o->run[o->head++];
    return 1;
  }
  return fold__heap_pop(&o->heap, m);
}

/* Send queued messages, highest priority first, while the bytes in flight
 * are under the window (one message at least, however big). */
int fold__kvw_pump(fold_kv *kv) {
  struct fold__kv_worker *w = kv->w;
  int rc = fold__comm_failed(kv->c);
  fold__kvw_reap_some(w);
  kv_out top;
  while (rc == FOLD_OK && (w->inflight < KV_WINDOW || w->inflight == 0) && fold__kvw_out_pop(&w->out, &top)) {
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
  if (e && e->queued > 0 && e->qprio < prio) prio = e->qprio;
  kv_out o = {msg, bytes, to, type, prio, w->seq++, e};
  if (fold__kvw_out_push(&w->out, &o) != FOLD_OK) {
    free(msg);
    return fold__comm_fail(kv->c, FOLD_ENOMEM, "fold_kv: rank %d: out of memory queueing a message to rank %d",
                           kv->c->rank, to);
  }
  if (e) {
    e->qprio = prio;
    e->queued++;
  }
  return FOLD_OK;
}
