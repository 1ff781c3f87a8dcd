/* tcp_recv.c — the TCP transport's receiving side: frame parsing, eager delivery, the rendezvous answers (CTS/NACK/RDATA). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "transport/tcp/tcp_tp.h"

static void rx_body_start(fold__tcp_peer *p, const fold__tcp_frame *f, void *dst) {
  p->rx = *f;
  p->rx_dst = dst;
  p->rx_left = f->len;
  p->rx_body = 1;
}

static void rx_body_done(fold__tcp_tp *t, fold__tcp_peer *p) {
  p->rx_body = 0;
  if (p->rx_req) {
    fold_request *r = p->rx_req;
    p->rx_req = NULL;
    r->got = (size_t)p->rx.len;
    fold__req_complete(r, FOLD_OK);
    fold__req_unref(r);
  } else if (p->rx_unexp) {
    fold__unexp *u = p->rx_unexp;
    p->rx_unexp = NULL;
    fold__deliver_unexp(t->base.comm, u);
  }
}

/* Receive r matched a rendezvous message: ask for the data (CTS), or refuse
 * it (NACK) when it does not fit. A refused message is never sent: the
 * receive fails with FOLD_EMISMATCH via fold__recv_too_small and the sender's
 * request with FOLD_EMISMATCH when the NACK arrives. */
int fold__tcp_rdv_accept(fold__tcp_tp *t, fold__tcp_peer *p, fold_request *r, uint64_t len, uint64_t cookie) {
  if (len > r->bytes) {
    uint64_t cap = r->bytes;
    fold__recv_too_small(r, (size_t)len);
    return fold__tcp_ctl_queue(t, p, FOLD__TCP_NACK, cap, cookie);
  }
  r->got = (size_t)len;
  r->tp_off = (size_t)cookie;
  fold__req_ref(r);
  fold__list_push_back(&p->rdata_wait, &r->link);
  return fold__tcp_ctl_queue(t, p, FOLD__TCP_CTS, len, cookie);
}

static int rx_eager(fold__tcp_tp *t, fold__tcp_peer *p, const fold__tcp_frame *f) {
  fold_comm *c = t->base.comm;
  fold_request *r = fold__match_cid(c, f->cid, p->rank, (int)f->ctx, f->tag);
  if (r) {
    if (f->len > r->bytes) {
      fold__recv_too_small(r, (size_t)f->len);
      if (f->len)
        rx_body_start(p, f, NULL);
    } else if (f->len == 0) {
      r->got = 0;
      fold__req_complete(r, FOLD_OK);
    } else {
      fold__req_ref(r);
      p->rx_req = r;
      rx_body_start(p, f, r->buf);
    }
    return 0;
  }
  fold__unexp *u = fold__unexp_new(p->rank, (int)f->ctx, f->tag, (size_t)f->len, (size_t)f->len);
  if (u == NULL)
    return fold__comm_fail(c, FOLD_ENOMEM, "tcp: rank %d: out of memory buffering a message from rank %d",
                           c->rank, p->rank);
  u->cid = f->cid;
  if (f->len == 0) {
    fold__deliver_unexp(c, u);
    return 0;
  }
  p->rx_unexp = u;
  rx_body_start(p, f, u->data);
  return 0;
}

static int rx_rts(fold__tcp_tp *t, fold__tcp_peer *p, const fold__tcp_frame *f) {
  fold_comm *c = t->base.comm;
  if (f->len > SIZE_MAX) {
    fold__tcp_proto_error(t, p, "message longer than this host's address space");
    return -1;
  }
  fold_request *r = fold__match_cid(c, f->cid, p->rank, (int)f->ctx, f->tag);
  if (r)
    return fold__tcp_rdv_accept(t, p, r, f->len, f->cookie);
  /* No receive yet: park a rendezvous record in the unexpected queue; its
   * data stays with the sender until pull() sends the CTS. */
  fold__tcp_rdv_in *ri = malloc(sizeof *ri);
  fold__unexp *u = ri ? fold__unexp_new(p->rank, (int)f->ctx, f->tag, (size_t)f->len, 0) : NULL;
  if (u == NULL) {
    free(ri);
    return fold__comm_fail(c, FOLD_ENOMEM, "tcp: rank %d: out of memory for a message from rank %d", c->rank,
                           p->rank);
  }
  u->cid = f->cid;
  ri->peer = p->rank;
  ri->cookie = f->cookie;
  fold__list_push_back(&t->rdv_in, &ri->link);
  u->tp = &t->base;
  u->cookie = ri;
  fold__deliver_unexp(c, u);
  return 0;
}

/* CTS or NACK for one of our rendezvous sends. */
static int rx_answer(fold__tcp_tp *t, fold__tcp_peer *p, const fold__tcp_frame *f) {
  fold_request *r = NULL;
  FOLD__LIST_FOR_EACH(fold_request, q, &p->cts_wait, link) {
    if (fold__tcp_send_cookie(q) == f->cookie) {
      r = q;
      break;
    }
  }
  if (r == NULL) {
    fold__tcp_proto_error(t, p, f->type == FOLD__TCP_CTS ? "CTS for no pending message" : "NACK for no pending message");
    return -1;
  }
  if (f->type == FOLD__TCP_CTS && f->len != r->bytes) {
    fold__tcp_proto_error(t, p, "CTS length differs from the message length");
    return -1;
  }
  fold__list_unlink(&r->link);
  if (f->type == FOLD__TCP_NACK) {
    fold_comm *c = t->base.comm;
    fold__error(c, FOLD_EMISMATCH,
                "fold_send: rank %d: message of %zu bytes to rank %d (tag %d) is larger than the receive buffer "
                "of %llu bytes",
                c->rank, r->bytes, p->rank, r->tag, (unsigned long long)f->len);
    fold__req_complete(r, FOLD_EMISMATCH);
    fold__req_unref(r);
    return 0;
  }
  fold__tcp_set_tx_state(r, TX_RDATA);
  r->tp_off = 0;
  fold__list_push_back(&p->txq, &r->link);
  fold__tcp_mark_dirty(t, p);
  return 0;
}

static int rx_rdata(fold__tcp_tp *t, fold__tcp_peer *p, const fold__tcp_frame *f) {
  fold_request *r = NULL;
  FOLD__LIST_FOR_EACH(fold_request, q, &p->rdata_wait, link) {
    if ((uint64_t)q->tp_off == f->cookie) {
      r = q;
      break;
    }
  }
  if (r == NULL || (uint64_t)r->got != f->len) {
    fold__tcp_proto_error(t, p, r ? "RDATA length differs from the announced length" : "RDATA for no requested message");
    return -1;
  }
  fold__list_unlink(&r->link);
  p->rx_req = r; /* the reference taken in rdv_accept moves here */
  rx_body_start(p, f, r->buf);
  return 0;
}

/* One header arrived. Returns 0, or -1 when the comm failed. */
static int rx_header(fold__tcp_tp *t, fold__tcp_peer *p, const uint8_t *hdr) {
  fold__tcp_frame f;
  if (fold__tcp_frame_parse(hdr, FOLD__TCP_HDR, &f) < 0) {
    fold__tcp_proto_error(t, p, f.why);
    return -1;
  }
  int rc;
  switch (f.type) {
  case FOLD__TCP_EAGER: rc = rx_eager(t, p, &f); break;
  case FOLD__TCP_RTS: rc = rx_rts(t, p, &f); break;
  case FOLD__TCP_RDATA: rc = rx_rdata(t, p, &f); break;
  default: rc = rx_answer(t, p, &f); break;
  }
  return rc < 0 || t->down ? -1 : 0;
}

/* Feed n bytes read from p's stream (headers and payloads). */
static void rx_consume(fold__tcp_tp *t, fold__tcp_peer *p, const uint8_t *b, size_t n) {
  size_t off = 0;
  while (off < n && !t->down) {
    if (p->rx_body) {
      size_t k = (uint64_t)(n - off) < p->rx_left ? n - off : (size_t)p->rx_left;
      if (p->rx_dst) {
        memcpy(p->rx_dst, b + off, k);
        p->rx_dst += k;
      }
      p->rx_left -= k;
      off += k;
      if (p->rx_left == 0)
        rx_body_done(t, p);
      continue;
    }
    const uint8_t *hdr;
    if (p->part_len > 0 || n - off < FOLD__TCP_HDR) {
      size_t k = FOLD__TCP_HDR - p->part_len;
      if (k > n - off)
        k = n - off;
      memcpy(p->part + p->part_len, b + off, k);
      p->part_len += k;
      off += k;
      if (p->part_len < FOLD__TCP_HDR)
        return;
      p->part_len = 0;
      hdr = p->part;
    } else {
      hdr = b + off;
      off += FOLD__TCP_HDR;
    }
    if (rx_header(t, p, hdr) < 0)
      return;
  }
}

/* Read what p sent. Large payload rests are read straight into their
 * destination, with the scratch buffer behind them for the next headers. */
void fold__tcp_rx_drain(fold__tcp_tp *t, fold__tcp_peer *p) {
  for (int round = 0; round < TCP_RX_ROUNDS && p->fd >= 0 && !t->down; round++) {
    struct iovec iov[2];
    int niov = 1;
    size_t direct = 0;
    if (p->rx_body && p->rx_dst && p->rx_left >= TCP_DIRECT_MIN) {
      direct = p->rx_left > TCP_IO_CHUNK ? TCP_IO_CHUNK : (size_t)p->rx_left;
      iov[0] = (struct iovec){p->rx_dst, direct};
      iov[1] = (struct iovec){t->scratch, TCP_SCRATCH};
      niov = direct == p->rx_left ? 2 : 1;
    } else {
      iov[0] = (struct iovec){t->scratch, TCP_SCRATCH};
    }
    size_t want = iov[0].iov_len + (niov == 2 ? iov[1].iov_len : 0);
    ssize_t n = readv(p->fd, iov, niov);
    if (n == 0) {
      fold__tcp_peer_gone(t, p, 0);
      return;
    }
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        fold__tcp_peer_gone(t, p, errno);
      return;
    }
    size_t got = (size_t)n;
    if (direct) {
      size_t k = got < direct ? got : direct;
      p->rx_dst += k;
      p->rx_left -= k;
      got -= k;
      if (p->rx_left == 0)
        rx_body_done(t, p);
    }
    if (got)
      rx_consume(t, p, t->scratch, got);
    if ((size_t)n < want) /* drained: epoll says when more comes */
      return;
  }
}
