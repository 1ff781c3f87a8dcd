/* shm_recv.c — the shared-memory transport's receiving side: take messages out of our rings and deliver them.
 *
 * A frame header is matched at once; a matched payload is copied straight
 * into the user's buffer, an unmatched one is buffered whole (an eager
 * unexpected record) and may be moved to a receive posted while it still
 * streams in (shm.c says why it is never paused). */
#include <stdlib.h>
#include <string.h>

#include "transport/shm/shm_tp.h"

/* The message streaming in from p (rx_off bytes of it already in `sofar`)
 * is matched to receive r: stream the rest there, or skip it when r is too
 * small; an answered one's sender gets the verdict. */
static int rx_matched(fold__shm_tp *t, fold__shm_peer *p, fold_request *r, const void *sofar) {
  int st = FOLD_OK;
  if (p->rx_bytes > r->bytes) {
    st = fold__recv_too_small(r, (size_t)p->rx_bytes); /* completes r; the payload is skipped */
  } else {
    if (p->rx_off && sofar) /* from rx_start: nothing arrived yet (sofar NULL) */
      memcpy(r->buf, sofar, (size_t)p->rx_off);
    fold__req_ref(r);
    p->rx_req = r;
  }
  return p->rx_answer ? fold__shm_answer(t, p, p->rx_seq, st, r->bytes) : 0;
}

/* A frame header arrived from p: check it and find where its payload goes. */
static int rx_start(fold__shm_tp *t, fold__shm_peer *p, const msg_hdr *h) {
  fold_comm *c = t->base.comm;
  if (h->magic != MSG_MAGIC || !fold__ctx_valid(h->ctx) || h->tag < 0 ||
      h->bytes > MSG_MAX)
    return fold__comm_fail(c, FOLD_EINTERNAL,
                           "rank %d: corrupt message header from peer rank %d (ctx %d, tag %d, %llu bytes)",
                           c->rank, p->rank, (int)h->ctx, (int)h->tag, (unsigned long long)h->bytes);
  p->rx_active = 1;
  p->rx_ctx = h->ctx;
  p->rx_cid = h->cid;
  p->rx_tag = h->tag;
  p->rx_bytes = h->bytes;
  p->rx_off = 0;
  p->rx_req = NULL;
  p->rx_unexp = NULL;
  p->rx_answer = fold__shm_answered(h->ctx, h->bytes);
  if (p->rx_answer)
    p->rx_seq = p->rx_seq_next++;
  fold_request *r = fold__match_cid(c, h->cid, p->rank, h->ctx, h->tag);
  if (r)
    return rx_matched(t, p, r, 0);
  /* an answered message waits with its number just past the payload */
  size_t room = (size_t)h->bytes + (p->rx_answer ? sizeof(fold__shm_held) : 0);
  p->rx_unexp = fold__unexp_new(p->rank, h->ctx, h->tag, (size_t)h->bytes, room);
  if (p->rx_unexp)
    p->rx_unexp->cid = h->cid;
  if (p->rx_unexp == NULL)
    return fold__comm_fail(c, FOLD_ENOMEM,
                           "rank %d: out of memory buffering an unexpected message of %llu bytes from peer rank %d "
                           "(tag %d)",
                           c->rank, (unsigned long long)h->bytes, p->rank, (int)h->tag);
  return 0;
}

/* A receive may have been posted for the large unexpected message still
 * streaming from p: move what arrived so far and stream the rest there. */
static int rx_upgrade(fold__shm_tp *t, fold__shm_peer *p) {
  fold_request *r = fold__match_cid(t->base.comm, p->rx_cid, p->rank, p->rx_ctx, p->rx_tag);
  if (r == NULL)
    return 0;
  fold__unexp *u = p->rx_unexp;
  p->rx_unexp = NULL;
  FOLD__TRACE(t->base.comm, "shm: receive posted for a message streaming in from rank %d (tag %d): %llu of %llu "
              "bytes were buffered", p->rank, p->rx_tag, (unsigned long long)p->rx_off,
              (unsigned long long)p->rx_bytes);
  int rc = rx_matched(t, p, r, u->data);
  free(u); /* fold__unexp_new makes one allocation (as the engine frees it) */
  return rc;
}

static void rx_finish(fold__shm_tp *t, fold__shm_peer *p) {
  fold_request *r = p->rx_req;
  fold__unexp *u = p->rx_unexp;
  p->rx_active = 0;
  p->rx_req = NULL;
  p->rx_unexp = NULL;
  if (r) {
    r->got = (size_t)p->rx_bytes;
    fold__req_complete(r, FOLD_OK);
    fold__req_unref(r);
  } else if (u) {
    if (p->rx_answer) { /* a rendezvous record: the vtable's pull answers */
      fold__shm_held held = {p->rank, p->rx_seq};
      memcpy((char *)u->data + u->bytes, &held, sizeof held);
      u->tp = &t->base;
      u->cookie = (char *)u->data + u->bytes;
    }
    fold__deliver_unexp(t->base.comm, u);
  }
}

int fold__shm_drain(fold__shm_tp *t, fold__shm_peer *p, uint64_t budget) {
  size_t chunk = fold__shm_chunk_of(&p->in);
  uint64_t got = 0, unwoken = 0;
  if (p->rx_active && p->rx_unexp && p->rx_bytes > EAGER_MAX) {
    int rc = rx_upgrade(t, p);
    if (rc)
      return rc;
  }
  for (;;) {
    if (!p->rx_active) {
      msg_hdr h;
      int64_t k = fold__ring_read_all(&p->in, &h, sizeof h);
      if (k < 0)
        return fold__shm_corrupt(t, p, "ring from");
      if (k == 0)
        break;
      got += sizeof h;
      unwoken += sizeof h;
      if (h.magic == RCPT_MAGIC) { /* a receipt for one of our sends: no payload */
        rcpt_hdr a;
        memcpy(&a, &h, sizeof a);
        int rc = fold__shm_receipt(t, p, &a);
        if (rc)
          return rc;
        continue;
      }
      int rc = rx_start(t, p, &h);
      if (rc)
        return rc;
    }
    int stalled = 0;
    while (p->rx_off < p->rx_bytes) {
      uint64_t n = p->rx_bytes - p->rx_off;
      if (n > chunk)
        n = chunk;
      char *dst = p->rx_req     ? (char *)p->rx_req->buf + p->rx_off
                  : p->rx_unexp ? (char *)p->rx_unexp->data + p->rx_off
                                : NULL; /* too small: skip */
      int64_t k = fold__ring_read(&p->in, dst, (size_t)n);
      if (k < 0)
        return fold__shm_corrupt(t, p, "ring from");
      if (k == 0) {
        stalled = 1;
        break;
      }
      p->rx_off += (uint64_t)k;
      got += (uint64_t)k;
      unwoken += (uint64_t)k;
      if (unwoken >= chunk) { /* a blocked sender may refill while we copy on */
        if (fold__ring_unblock_needed(&p->in))
          fold__shm_ring_bell(t, p);
        unwoken = 0;
      }
      if (got >= budget)
        break;
    }
    if (stalled)
      break;
    if (p->rx_off == p->rx_bytes)
      rx_finish(t, p);
    if (got >= budget) {
      t->more = 1; /* fairness: let other peers and tasks run, then come back */
      break;
    }
  }
  if (got)
    t->moved = 1;
  if (unwoken && fold__ring_unblock_needed(&p->in))
    fold__shm_ring_bell(t, p);
  return 0;
}
