/* tcp_send.c — the TCP transport's sending side: frames, gathered writes, eager sends and rendezvous requests. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "transport/tcp/tcp_tp.h"

static uint64_t tx_frame_len(const fold_request *r) {
  return FOLD__TCP_HDR + (fold__tcp_tx_state(r) == TX_RTS ? 0 : (uint64_t)r->bytes);
}

static void tx_header(const fold_request *r, uint8_t *out) {
  fold__tcp_frame f = {0};
  f.len = r->bytes;
  switch (fold__tcp_tx_state(r)) {
  case TX_EAGER:
    f.type = FOLD__TCP_EAGER;
    f.ctx = (uint32_t)r->ctx;
    f.tag = r->tag;
    f.cid = r->cid;
    break;
  case TX_RTS:
    f.type = FOLD__TCP_RTS;
    f.ctx = (uint32_t)r->ctx;
    f.tag = r->tag;
    f.cid = r->cid;
    f.cookie = fold__tcp_send_cookie(r);
    break;
  default:
    f.type = FOLD__TCP_RDATA;
    f.cookie = fold__tcp_send_cookie(r);
    break;
  }
  fold__tcp_frame_encode(out, &f);
}

/* Append the unwritten rest (from `off`) of a frame to iov. Returns 1 when
 * all of it fit, 0 when iov is full or the payload was cut at
 * TCP_IO_CHUNK (then nothing may follow it in this call). */
static int iov_add(struct iovec *iov, int *niov, int max, const uint8_t *hdr, const char *pay, uint64_t plen,
                   uint64_t off) {
  if (off < FOLD__TCP_HDR) {
    if (*niov == max)
      return 0;
    iov[(*niov)++] = (struct iovec){(void *)(hdr + off), FOLD__TCP_HDR - (size_t)off};
    off = FOLD__TCP_HDR;
  }
  uint64_t poff = off - FOLD__TCP_HDR;
  if (poff < plen) {
    if (*niov == max)
      return 0;
    uint64_t rest = plen - poff;
    size_t n = rest > TCP_IO_CHUNK ? TCP_IO_CHUNK : (size_t)rest;
    iov[(*niov)++] = (struct iovec){(void *)(pay + poff), n};
    if (n < rest)
      return 0;
  }
  return 1;
}

/* A data frame is fully written. */
static void tx_done(fold__tcp_tp *t, fold__tcp_peer *p, fold_request *r) {
  if (fold__tcp_tx_state(r) == TX_RTS) {
    r->tp_off = 0;
    fold__list_push_back(&p->cts_wait, &r->link);
    return;
  }
  if (r->bytes >= TCP_LINK_MIN) fold__tcp_link_sample(t, p, r->bytes);
  fold__req_complete(r, FOLD_OK);
  fold__req_unref(r);
}

/* Retire n written bytes from the frames gathered in items[] (in order). */
static void tx_account(fold__tcp_tp *t, fold__tcp_peer *p, fold__tcp_ctl **ctls, fold_request **reqs, int nitems, size_t n) {
  for (int i = 0; i < nitems && n > 0; i++) {
    if (ctls[i]) {
      fold__tcp_ctl *k = ctls[i];
      size_t rest = FOLD__TCP_HDR - k->off;
      if (n < rest) {
        k->off += n;
        p->tx_cur = TX_CUR_CTL;
        return;
      }
      n -= rest;
      fold__list_unlink(&k->link);
      free(k);
    } else {
      fold_request *r = reqs[i];
      uint64_t rest = tx_frame_len(r) - r->tp_off;
      if (n < rest) {
        r->tp_off += n;
        p->tx_cur = TX_CUR_REQ;
        return;
      }
      n -= (size_t)rest;
      fold__list_unlink(&r->link);
      tx_done(t, p, r);
    }
    p->tx_cur = TX_CUR_NONE;
  }
}

/* Write as much of p's queued frames as the socket takes. */
void fold__tcp_tx_flush(fold__tcp_tp *t, fold__tcp_peer *p) {
  while (p->fd >= 0 && (!fold__list_empty(&p->ctl) || !fold__list_empty(&p->txq))) {
    struct iovec iov[2 * TCP_TX_ITEMS];
    uint8_t hdrs[TCP_TX_ITEMS][FOLD__TCP_HDR];
    fold__tcp_ctl *ctls[TCP_TX_ITEMS];
    fold_request *reqs[TCP_TX_ITEMS];
    int niov = 0, nitems = 0, fits = 1;
    fold_request *r = FOLD__LIST_FIRST(&p->txq, fold_request, link);
    fold__tcp_ctl *k = FOLD__LIST_FIRST(&p->ctl, fold__tcp_ctl, link);
    /* A frame begun earlier goes first: frames never interleave. */
    if (p->tx_cur == TX_CUR_REQ && r) {
      tx_header(r, hdrs[0]);
      fits = iov_add(iov, &niov, 2 * TCP_TX_ITEMS, hdrs[0], r->buf, tx_frame_len(r) - FOLD__TCP_HDR, r->tp_off);
      ctls[0] = NULL;
      reqs[nitems++] = r;
      r = FOLD__LIST_NEXT(r, &p->txq, fold_request, link);
    }
    for (; fits && k && nitems < TCP_TX_ITEMS; k = FOLD__LIST_NEXT(k, &p->ctl, fold__tcp_ctl, link)) {
      fits = iov_add(iov, &niov, 2 * TCP_TX_ITEMS, k->hdr, NULL, 0, k->off);
      ctls[nitems] = k;
      reqs[nitems++] = NULL;
    }
    for (; fits && r && nitems < TCP_TX_ITEMS; r = FOLD__LIST_NEXT(r, &p->txq, fold_request, link)) {
      tx_header(r, hdrs[nitems]);
      fits = iov_add(iov, &niov, 2 * TCP_TX_ITEMS, hdrs[nitems], r->buf, tx_frame_len(r) - FOLD__TCP_HDR,
                     r->tp_off);
      ctls[nitems] = NULL;
      reqs[nitems++] = r;
    }
    size_t total = 0;
    for (int i = 0; i < niov; i++)
      total += iov[i].iov_len;
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
    ssize_t n = sendmsg(p->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        fold__tcp_set_pollout(t, p, 1);
        return;
      }
      fold__tcp_peer_gone(t, p, errno);
      return;
    }
    tx_account(t, p, ctls, reqs, nitems, (size_t)n);
    if ((size_t)n < total) { /* the socket buffer is full: wait for EPOLLOUT */
      fold__tcp_set_pollout(t, p, 1);
      return;
    }
  }
  fold__tcp_set_pollout(t, p, 0);
}

/* Queue a CTS or NACK for p; written at the end of this poll (or pull). */
int fold__tcp_ctl_queue(fold__tcp_tp *t, fold__tcp_peer *p, int type, uint64_t len, uint64_t cookie) {
  fold_comm *c = t->base.comm;
  fold__tcp_ctl *k = malloc(sizeof *k);
  if (k == NULL)
    return fold__comm_fail(c, FOLD_ENOMEM, "tcp: rank %d: out of memory answering rank %d", c->rank, p->rank);
  fold__tcp_frame f = {.type = type, .len = len, .cookie = cookie};
  fold__tcp_frame_encode(k->hdr, &f);
  k->off = 0;
  fold__list_push_back(&p->ctl, &k->link);
  fold__tcp_mark_dirty(t, p);
  return 0;
}

/* Write the frames queued while receiving. */
void fold__tcp_flush_dirty(fold__tcp_tp *t) {
  for (int i = 0; i < t->nflush && !t->down; i++) {
    fold__tcp_peer *p = &t->peers[t->flush[i]];
    p->dirty = 0;
    fold__tcp_tx_flush(t, p);
  }
  t->nflush = 0;
}

int fold__tcp_isend(fold__tp *tp, fold_request *r) {
  fold__tcp_tp *t = (fold__tcp_tp *)tp;
  fold_comm *c = tp->comm;
  if (t->down)
    return fold__comm_failed(c) ? fold__comm_failed(c) : FOLD_EPEER;
  if (r->tpeer < 0 || r->tpeer >= c->size ||
      (t->peers[r->tpeer].fd < 0 && !t->peers[r->tpeer].gone && t->lazy == NULL))
    return fold__error(c, FOLD_EINTERNAL, "tcp: rank %d: no connection to rank %d", c->rank, r->tpeer);
  fold__tcp_peer *p = &t->peers[r->tpeer];
  if (p->gone) /* the engine checks c->lost first; this is a second guard */
    return fold__comm_fail(c, FOLD_EPEER, "fold_send: rank %d: peer rank %d lost", c->rank, p->rank);
  r->tp_off = 0;
  /* Inside a batch the frame only joins the queue: flush() writes every
   * frame queued for p in one sendmsg. A failure report goes at once. */
  int hold = c->tx_batch > 0 && !c->telling;
  if (r->bytes <= fold__tcp_eager_max((uint32_t)r->ctx)) {
    fold__tcp_set_tx_state(r, TX_EAGER);
    if (!hold && p->fd >= 0 && fold__list_empty(&p->txq) && fold__list_empty(&p->ctl)) {
      /* Fast path: an idle connection usually takes the whole frame now,
       * and then the request completes without being queued at all. */
      uint8_t hdr[FOLD__TCP_HDR];
      tx_header(r, hdr);
      struct iovec iov[2] = {{hdr, FOLD__TCP_HDR}, {r->buf, r->bytes}};
      struct msghdr mh = {.msg_iov = iov, .msg_iovlen = r->bytes ? 2 : 1};
      ssize_t n;
      do
        n = sendmsg(p->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
      while (n < 0 && errno == EINTR);
      if (n == (ssize_t)(FOLD__TCP_HDR + r->bytes)) {
        if (r->bytes >= TCP_LINK_MIN) fold__tcp_link_sample(t, p, r->bytes);
        fold__req_complete(r, FOLD_OK);
        return 0;
      }
      int err = n < 0 && errno != EAGAIN && errno != EWOULDBLOCK ? errno : 0;
      fold__req_ref(r);
      fold__list_push_back(&p->txq, &r->link);
      if (n > 0) {
        r->tp_off = (size_t)n;
        p->tx_cur = TX_CUR_REQ;
      }
      if (err)
        fold__tcp_peer_gone(t, p, err);
      else
        fold__tcp_set_pollout(t, p, 1);
      return fold__comm_failed(c);
    }
  } else {
    fold__tcp_set_tx_state(r, TX_RTS);
    r->tp_data = (void *)++p->next_cookie;
  }
  fold__req_ref(r);
  fold__list_push_back(&p->txq, &r->link);
  if (p->fd < 0) { /* lazy: queued until the connection is up (tcp_lazy.c) */
    fold__tcp_lazy_want(t, p); /* it may be up now: taken over from the acceptor */
    if (p->fd < 0)
      return fold__comm_failed(c);
  }
  if (hold)
    fold__tcp_mark_dirty(t, p);
  else
    fold__tcp_tx_flush(t, p);
  return fold__comm_failed(c);
}
