/* shm_send.c — the shared-memory transport's sending side: queue sends and stream them into the peers' rings.
 *
 * A send streams a header (ctx, tag, length, communicator id) and then the
 * payload into the receiver's ring for this rank, in chunks of a quarter
 * ring, ringing the receiver's doorbell after each full chunk so that it
 * copies out while we copy in (the whole protocol: shm.c). */
#include <stdlib.h>
#include <string.h>

#include "core/queue.h"
#include "transport/shm/shm_tp.h"

int fold__shm_push(fold__shm_tp *t, fold__shm_peer *p) {
  size_t chunk = fold__shm_chunk_of(&p->out);
  int wrote = 0;
  while (p->sq_head) {
    fold_request *r = p->sq_head;
    size_t need = 0; /* ring too full: bytes that must be free to go on */
    if (!p->sq_hdr_done) {
      msg_hdr h = {MSG_MAGIC, r->ctx, r->tag, r->cid, (uint64_t)r->bytes};
      int64_t w = fold__ring_write_all(&p->out, &h, sizeof h);
      if (w < 0)
        return fold__shm_corrupt(t, p, "ring to");
      if (w == 0)
        need = sizeof h; /* headers go in whole */
      else {
        p->sq_hdr_done = 1;
        r->tp_off = 0;
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
      FOLD__QUEUE_POP_HEAD(p->sq_head, p->sq_tail, r);
      p->sq_hdr_done = 0;
      fold__req_complete(r, FOLD_OK);
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
  FOLD__QUEUE_PUSH(p->sq_head, p->sq_tail, r);
  if (!p->live) { /* the engine checks c->lost first; this is the backstop */
    fold__peer_lost(c, p->rank, 1, p->why);
    return fold__comm_failed(c) ? fold__comm_failed(c) : FOLD_EPEER;
  }
  /* Copy in now when nothing is queued ahead: small sends complete before
   * isend returns. */
  if (p->sq_head == r)
    return fold__shm_push(t, p);
  return 0;
}
