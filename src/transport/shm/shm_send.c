/* shm_send.c — the shared-memory transport's sending side: queue sends and stream them into the peers' rings.
 *
 * A send streams a header (ctx, tag, length, communicator id) and then the
 * payload into the receiver's ring for this rank, in chunks of a quarter
 * ring, ringing the receiver's doorbell after each full chunk so that it
 * copies out while we copy in (the whole protocol: shm.c). */
#include <stdlib.h>
#include <string.h>

#include "engine/family.h"
#include "transport/shm/shm_tp.h"

/* The status a receipt noted early in r->rdv (0: none yet). */
static int early_status(fold_request *r) {
  int v = atomic_load_explicit(&r->rdv, memory_order_relaxed);
  return v == 1 ? FOLD_OK : v == 2 ? FOLD_EMISMATCH : FOLD_EABORTED;
}

/* Write the queued receipts to p (between messages only): 0 all written,
 * 1 the ring is full, <0 corrupt. */
static int flush_receipts(fold__shm_tp *t, fold__shm_peer *p, int *wrote) {
  int k = 0;
  while (k < p->rc_n) {
    int64_t w = fold__ring_write_all(&p->out, &p->rc[k], sizeof p->rc[k]);
    if (w < 0)
      return fold__shm_corrupt(t, p, "ring to");
    if (w == 0)
      break;
    k++;
    *wrote = t->moved = 1;
  }
  if (k) {
    memmove(p->rc, p->rc + k, (size_t)(p->rc_n - k) * sizeof *p->rc);
    p->rc_n -= k;
  }
  return p->rc_n ? 1 : 0;
}

int fold__shm_push(fold__shm_tp *t, fold__shm_peer *p) {
  size_t chunk = fold__shm_chunk_of(&p->out);
  int wrote = 0;
  for (;;) {
    size_t need = 0; /* ring too full: bytes that must be free to go on */
    if (!p->sq_hdr_done && p->rc_n) { /* receipts go first, between messages */
      int rc = flush_receipts(t, p, &wrote);
      if (rc < 0)
        return rc;
      if (rc)
        need = sizeof(rcpt_hdr);
    }
    fold_request *r = FOLD__LIST_FIRST(&p->sq, fold_request, link);
    if (!need && r == NULL)
      break;
    if (!need && !p->sq_hdr_done) {
      msg_hdr h = {MSG_MAGIC, r->ctx, r->tag, r->cid, (uint64_t)r->bytes};
      int64_t w = fold__ring_write_all(&p->out, &h, sizeof h);
      if (w < 0)
        return fold__shm_corrupt(t, p, "ring to");
      if (w == 0)
        need = sizeof h; /* headers go in whole */
      else {
        p->sq_hdr_done = 1;
        r->tp_off = 0;
        if (fold__shm_answered(r->ctx, (uint64_t)r->bytes)) /* numbered as the receiver counts */
          r->tp_data = (void *)(uintptr_t)p->tx_seq++;
        p->tx_t0 = r->bytes >= LINK_MIN ? fold__now(t->base.comm) : 0;
        wrote = t->moved = 1;
      }
    }
    while (!need && r->tp_off < r->bytes) {
      size_t n = r->bytes - r->tp_off;
      if (n > chunk)
        n = chunk;
      int64_t w = fold__ring_write(&p->out, (const char *)r->buf + r->tp_off, n);
      if (w < 0)
        return fold__shm_corrupt(t, p, "ring to");
      if (w == 0) {
        need = 1;
        break;
      }
      r->tp_off += (size_t)w;
      wrote = t->moved = 1;
      if ((size_t)w == chunk) { /* let a sleeping receiver start on it while we copy on */
        fold__shm_ring_bell(t, p);
        wrote = 0;
      }
    }
    if (!need) {
      if (p->tx_t0) { /* the whole payload is in the ring: the link's rate */
        fold__meter_add(&p->tx_meter, (double)(fold__now(t->base.comm) - p->tx_t0) / (double)r->bytes);
        p->tx_t0 = 0;
      }
      fold__list_unlink(&r->link);
      p->sq_hdr_done = 0;
      if (fold__shm_answered(r->ctx, (uint64_t)r->bytes) && atomic_load(&r->rdv) == 0) {
        fold__list_push_back(&p->ack, &r->link); /* done at its receipt */
        continue;
      }
      fold__req_complete(r, fold__shm_answered(r->ctx, (uint64_t)r->bytes) ? early_status(r) : FOLD_OK);
      fold__req_unref(r);
      continue;
    }
    int64_t space = fold__ring_block(&p->out, need);
    if (space < 0)
      return fold__shm_corrupt(t, p, "ring to");
    if (space == 0)
      break; /* the receiver rings our doorbell once it frees space */
  }
  if (wrote)
    fold__shm_ring_bell(t, p);
  return 0;
}

int fold__shm_push_receipts(fold__shm_tp *t, fold__shm_peer *p) {
  if (p->sq_hdr_done)
    return 1; /* a message is half written: receipts go after it */
  int wrote = 0, rc = flush_receipts(t, p, &wrote);
  if (wrote)
    fold__shm_ring_bell(t, p);
  return rc;
}

int fold__shm_answer(fold__shm_tp *t, fold__shm_peer *p, uint32_t seq, int status, uint64_t room) {
  fold_comm *c = t->base.comm;
  if (t->down || !p->live)
    return 0; /* the sender learns of it through the loss */
  if (p->rc_n == p->rc_cap) {
    int cap = p->rc_cap ? 2 * p->rc_cap : 8;
    rcpt_hdr *n = realloc(p->rc, (size_t)cap * sizeof *n);
    if (n == NULL)
      return fold__comm_fail(c, FOLD_ENOMEM, "rank %d: out of memory queueing a receipt to peer rank %d", c->rank,
                             p->rank);
    p->rc = n;
    p->rc_cap = cap;
  }
  p->rc[p->rc_n++] = (rcpt_hdr){RCPT_MAGIC, status, seq, 0, room};
  t->moved = 1;
  return p->sq_hdr_done ? 0 : fold__shm_push(t, p);
}

int fold__shm_receipt(fold__shm_tp *t, fold__shm_peer *p, const rcpt_hdr *h) {
  if (h->zero != 0 || (h->status != FOLD_OK && h->status != FOLD_EMISMATCH && h->status != FOLD_EABORTED))
    return fold__shm_corrupt(t, p, "ring from");
  /* The receiver may match a message at its header, while we still stream
   * it: the send at the head of the queue then notes its receipt and
   * completes once its last byte is in (push). */
  fold_request *r = FOLD__LIST_FIRST(&p->sq, fold_request, link);
  int early = r && p->sq_hdr_done && fold__shm_answered(r->ctx, (uint64_t)r->bytes) &&
              (uint32_t)(uintptr_t)r->tp_data == h->seq && atomic_load(&r->rdv) == 0;
  if (!early) {
    r = NULL;
    FOLD__LIST_FOR_EACH(fold_request, q, &p->ack, link) {
      if ((uint32_t)(uintptr_t)q->tp_data == h->seq) {
        r = q;
        break;
      }
    }
    if (r == NULL)
      return fold__shm_corrupt(t, p, "ring from");
    fold__list_unlink(&r->link);
  }
  /* The message goes to the communicator the send was on, if it still
   * exists (a child may have been destroyed meanwhile: r->comm is then
   * gone; the root's numbering is the transport's). */
  fold_comm *c = t->base.comm, *k = r->cid && c->fam ? fold__fam_kid(c->fam, r->cid) : NULL;
  int to = p->rank;
  if (k) {
    c = k;
    to = r->peer;
  }
  if (h->status == FOLD_EMISMATCH)
    fold__error(c, FOLD_EMISMATCH,
                "fold_send: rank %d: message of %zu bytes to rank %d (tag %d) is larger than the receive buffer "
                "of %llu bytes",
                c->rank, r->bytes, to, r->tag, (unsigned long long)h->room);
  else if (h->status == FOLD_EABORTED)
    fold__error(c, FOLD_EABORTED,
                "fold_send: rank %d: rank %d discarded the message of %zu bytes (tag %d) unreceived: the "
                "communicator it was sent on is gone there",
                c->rank, to, r->bytes, r->tag);
  t->moved = 1;
  if (early) {
    atomic_store_explicit(&r->rdv, h->status == FOLD_OK ? 1 : h->status == FOLD_EMISMATCH ? 2 : 3,
                          memory_order_relaxed);
    return 0;
  }
  fold__req_complete(r, h->status);
  fold__req_unref(r);
  return 0;
}

int fold__shm_isend(fold__tp *tp, fold_request *r) {
  fold__shm_tp *t = (fold__shm_tp *)tp;
  fold_comm *c = tp->comm;
  if (t->down)
    return t->down_status;
  if (r->tpeer < 0 || r->tpeer >= c->size || t->peers[r->tpeer].map.hdr == NULL)
    return fold__error(c, FOLD_EINTERNAL, "rank %d: the shm transport does not reach rank %d", c->rank, r->tpeer);
  if ((uint64_t)r->bytes > MSG_MAX)
    return fold__error(c, FOLD_EINVAL, "fold_send: rank %d: message of %zu bytes to rank %d exceeds 1 TiB",
                       c->rank, r->bytes, r->peer);
  fold__shm_peer *p = &t->peers[r->tpeer];
  fold__req_ref(r);
  r->tp_off = 0;
  atomic_store_explicit(&r->rdv, 0, memory_order_relaxed); /* no receipt yet */
  fold__list_push_back(&p->sq, &r->link);
  if (!p->live) { /* the engine checks c->lost first; this is the backstop */
    fold__peer_lost(c, p->rank, 1, p->why);
    return fold__comm_failed(c) ? fold__comm_failed(c) : FOLD_EPEER;
  }
  /* Copy in now when nothing is queued ahead: small sends complete before
   * isend returns. */
  if (p->sq.next == &r->link)
    return fold__shm_push(t, p);
  return 0;
}
