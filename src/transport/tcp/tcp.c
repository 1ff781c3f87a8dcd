/* tcp.c — the TCP transport's data path: framed streams per peer, eager and rendezvous messages, one epoll. */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "engine/engine.h"
#include "transport/tcp/tcp.h"
#include "transport/tcp/tcp_wire.h"

#define TCP_SCRATCH (256 * 1024)        /* read staging, shared by all peers of a rank */
#define TCP_DIRECT_MIN (16 * 1024)      /* payload rests this big are read straight into place */
#define TCP_IO_CHUNK ((size_t)1 << 30)  /* largest iovec: stays below Linux's 0x7ffff000 per call */
#define TCP_TX_ITEMS 32                 /* frames gathered into one sendmsg */
#define TCP_EVENTS 64
#define TCP_RX_ROUNDS 16                /* reads per peer per poll: one fast sender cannot starve the rest */

/* What a send request is doing, kept in r->rdv (the transport owns it). */
enum { TX_EAGER = 1, TX_RTS = 2, TX_RDATA = 3 };
/* Which queue's head holds a frame that is partly written (tx_cur). */
enum { TX_CUR_NONE = 0, TX_CUR_CTL = 1, TX_CUR_REQ = 2 };

/* A control frame (CTS or NACK) waiting to be written. */
typedef struct tcp_ctl {
  struct tcp_ctl *next;
  size_t off; /* bytes already written */
  uint8_t hdr[FOLD__TCP_HDR];
} tcp_ctl;

/* An RTS that matched no posted receive: the cookie of its fold__unexp
 * record until the receive is posted (pull) or the comm is freed. */
typedef struct tcp_rdv_in {
  struct tcp_rdv_in *next;
  int peer;
  uint64_t cookie;
} tcp_rdv_in;

typedef struct tcp_peer {
  int fd;   /* -1: no connection (self, other transport, gone, shut down) */
  int rank;
  int gone; /* the connection broke or the peer left */
  /* sending: data frames (requests, linked by ->next) and control frames;
   * frames go out back to back, so a partly written one is finished first */
  fold_request *txq_head, *txq_tail;
  tcp_ctl *ctl_head, *ctl_tail;
  int tx_cur;
  int pollout; /* EPOLLOUT is registered */
  int dirty;   /* on the transport's flush list */
  fold_request *cts_wait; /* RTS written, waiting for CTS/NACK (cookie in tp_data) */
  uintptr_t next_cookie;
  /* receiving */
  uint8_t part[FOLD__TCP_HDR]; /* a header split across reads */
  size_t part_len;
  int rx_body;                 /* a payload is arriving */
  fold__tcp_frame rx;          /* ... with this header */
  char *rx_dst;                /* where its bytes go; NULL: discard */
  uint64_t rx_left;
  fold_request *rx_req;        /* receive being filled (we hold a reference) */
  fold__unexp *rx_unexp;       /* or unexpected record being filled */
  fold_request *rdata_wait;    /* CTS sent, waiting for RDATA (cookie in tp_off, length in got) */
} tcp_peer;

typedef struct tcp_tp {
  fold__tp base;
  int epfd;
  int down;            /* shut down: no more I/O */
  tcp_peer *peers;     /* [comm size] */
  int *flush;          /* peers with frames queued during a poll */
  int nflush;
  tcp_rdv_in *rdv_in;
  uint8_t *scratch;
  struct epoll_event ev[TCP_EVENTS]; /* events seen by wait(), used by the next poll() */
  int nev;
} tcp_tp;

static const fold__tp_ops tcp_ops;

static int tx_state(const fold_request *r) {
  return atomic_load_explicit(&((fold_request *)r)->rdv, memory_order_relaxed);
}

static void set_tx_state(fold_request *r, int s) { atomic_store_explicit(&r->rdv, s, memory_order_relaxed); }

static uint64_t send_cookie(const fold_request *r) { return (uint64_t)(uintptr_t)r->tp_data; }

static void set_pollout(tcp_tp *t, tcp_peer *p, int on) {
  if (p->pollout == on || p->fd < 0)
    return;
  struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.u32 = (uint32_t)p->rank};
  if (epoll_ctl(t->epfd, EPOLL_CTL_MOD, p->fd, &ev) == 0)
    p->pollout = on;
}

static void mark_dirty(tcp_tp *t, tcp_peer *p) {
  if (!p->dirty) {
    p->dirty = 1;
    t->flush[t->nflush++] = p->rank;
  }
}

/* The connection to p broke or p left. What p sent before is delivered
 * already; whether that fails the comm now depends on whether anything
 * still needs p (fold__peer_lost). */
static void peer_gone(tcp_tp *t, tcp_peer *p, int err) {
  if (p->fd < 0)
    return;
  char buf[96];
  const char *why = err ? strerror_r(err, buf, sizeof buf) : "connection closed by peer";
  close(p->fd);
  p->fd = -1;
  p->gone = 1;
  /* A message cut short that no receive asked for yet is dropped as if it
   * was never sent: a later receive for it fails on the lost peer. What
   * arrived complete stays deliverable. */
  int pending = p->txq_head || p->ctl_head || p->cts_wait || p->rdata_wait || p->rx_req;
  free(p->rx_unexp);
  p->rx_unexp = NULL;
  p->rx_body = 0;
  p->part_len = 0;
  fold__peer_lost(t->base.comm, p->rank, pending, why);
}

/* An authenticated peer broke the protocol: a bug or corruption. Nothing it
 * sends can be trusted any more, so it counts as lost. */
static void proto_error(tcp_tp *t, tcp_peer *p, const char *what) {
  fold_comm *c = t->base.comm;
  fold__comm_fail(c, FOLD_EPEER, "tcp: rank %d: peer rank %d lost (protocol error: %s)", c->rank, p->rank, what);
}

/* ---- sending ------------------------------------------------------------------- */

static uint64_t tx_frame_len(const fold_request *r) {
  return FOLD__TCP_HDR + (tx_state(r) == TX_RTS ? 0 : (uint64_t)r->bytes);
}

static void tx_header(const fold_request *r, uint8_t *out) {
  fold__tcp_frame f = {0};
  f.len = r->bytes;
  switch (tx_state(r)) {
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
    f.cookie = send_cookie(r);
    break;
  default:
    f.type = FOLD__TCP_RDATA;
    f.cookie = send_cookie(r);
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
static void tx_done(tcp_peer *p, fold_request *r) {
  if (tx_state(r) == TX_RTS) {
    r->tp_off = 0;
    r->next = p->cts_wait;
    p->cts_wait = r;
    return;
  }
  fold__req_complete(r, FOLD_OK);
  fold__req_unref(r);
}

/* Retire n written bytes from the frames gathered in items[] (in order). */
static void tx_account(tcp_peer *p, tcp_ctl **ctls, fold_request **reqs, int nitems, size_t n) {
  for (int i = 0; i < nitems && n > 0; i++) {
    if (ctls[i]) {
      tcp_ctl *k = ctls[i];
      size_t rest = FOLD__TCP_HDR - k->off;
      if (n < rest) {
        k->off += n;
        p->tx_cur = TX_CUR_CTL;
        return;
      }
      n -= rest;
      p->ctl_head = k->next;
      if (p->ctl_head == NULL)
        p->ctl_tail = NULL;
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
      p->txq_head = r->next;
      if (p->txq_head == NULL)
        p->txq_tail = NULL;
      r->next = NULL;
      tx_done(p, r);
    }
    p->tx_cur = TX_CUR_NONE;
  }
}

/* Write as much of p's queued frames as the socket takes. */
static void tx_flush(tcp_tp *t, tcp_peer *p) {
  while (p->fd >= 0 && (p->ctl_head || p->txq_head)) {
    struct iovec iov[2 * TCP_TX_ITEMS];
    uint8_t hdrs[TCP_TX_ITEMS][FOLD__TCP_HDR];
    tcp_ctl *ctls[TCP_TX_ITEMS];
    fold_request *reqs[TCP_TX_ITEMS];
    int niov = 0, nitems = 0, fits = 1;
    fold_request *r = p->txq_head;
    tcp_ctl *k = p->ctl_head;
    /* A frame begun earlier goes first: frames never interleave. */
    if (p->tx_cur == TX_CUR_REQ && r) {
      tx_header(r, hdrs[0]);
      fits = iov_add(iov, &niov, 2 * TCP_TX_ITEMS, hdrs[0], r->buf, tx_frame_len(r) - FOLD__TCP_HDR, r->tp_off);
      ctls[0] = NULL;
      reqs[nitems++] = r;
      r = r->next;
    }
    for (; fits && k && nitems < TCP_TX_ITEMS; k = k->next) {
      fits = iov_add(iov, &niov, 2 * TCP_TX_ITEMS, k->hdr, NULL, 0, k->off);
      ctls[nitems] = k;
      reqs[nitems++] = NULL;
    }
    for (; fits && r && nitems < TCP_TX_ITEMS; r = r->next) {
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
        set_pollout(t, p, 1);
        return;
      }
      peer_gone(t, p, errno);
      return;
    }
    tx_account(p, ctls, reqs, nitems, (size_t)n);
    if ((size_t)n < total) { /* the socket buffer is full: wait for EPOLLOUT */
      set_pollout(t, p, 1);
      return;
    }
  }
  set_pollout(t, p, 0);
}

/* Queue a CTS or NACK for p; written at the end of this poll (or pull). */
static int ctl_queue(tcp_tp *t, tcp_peer *p, int type, uint64_t len, uint64_t cookie) {
  fold_comm *c = t->base.comm;
  tcp_ctl *k = malloc(sizeof *k);
  if (k == NULL)
    return fold__comm_fail(c, FOLD_ENOMEM, "tcp: rank %d: out of memory answering rank %d", c->rank, p->rank);
  fold__tcp_frame f = {.type = type, .len = len, .cookie = cookie};
  fold__tcp_frame_encode(k->hdr, &f);
  k->off = 0;
  k->next = NULL;
  if (p->ctl_tail)
    p->ctl_tail->next = k;
  else
    p->ctl_head = k;
  p->ctl_tail = k;
  mark_dirty(t, p);
  return 0;
}

/* Write the frames queued while receiving. */
static void flush_dirty(tcp_tp *t) {
  for (int i = 0; i < t->nflush && !t->down; i++) {
    tcp_peer *p = &t->peers[t->flush[i]];
    p->dirty = 0;
    tx_flush(t, p);
  }
  t->nflush = 0;
}

/* ---- receiving ------------------------------------------------------------------ */

static void rx_body_start(tcp_peer *p, const fold__tcp_frame *f, void *dst) {
  p->rx = *f;
  p->rx_dst = dst;
  p->rx_left = f->len;
  p->rx_body = 1;
}

static void rx_body_done(tcp_tp *t, tcp_peer *p) {
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
static int rdv_accept(tcp_tp *t, tcp_peer *p, fold_request *r, uint64_t len, uint64_t cookie) {
  if (len > r->bytes) {
    uint64_t cap = r->bytes;
    fold__recv_too_small(r, (size_t)len);
    return ctl_queue(t, p, FOLD__TCP_NACK, cap, cookie);
  }
  r->got = (size_t)len;
  r->tp_off = (size_t)cookie;
  fold__req_ref(r);
  r->next = p->rdata_wait;
  p->rdata_wait = r;
  return ctl_queue(t, p, FOLD__TCP_CTS, len, cookie);
}

static int rx_eager(tcp_tp *t, tcp_peer *p, const fold__tcp_frame *f) {
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

static int rx_rts(tcp_tp *t, tcp_peer *p, const fold__tcp_frame *f) {
  fold_comm *c = t->base.comm;
  if (f->len > SIZE_MAX) {
    proto_error(t, p, "message longer than this host's address space");
    return -1;
  }
  fold_request *r = fold__match_cid(c, f->cid, p->rank, (int)f->ctx, f->tag);
  if (r)
    return rdv_accept(t, p, r, f->len, f->cookie);
  /* No receive yet: park a rendezvous record in the unexpected queue; its
   * data stays with the sender until pull() sends the CTS. */
  tcp_rdv_in *ri = malloc(sizeof *ri);
  fold__unexp *u = ri ? fold__unexp_new(p->rank, (int)f->ctx, f->tag, (size_t)f->len, 0) : NULL;
  if (u == NULL) {
    free(ri);
    return fold__comm_fail(c, FOLD_ENOMEM, "tcp: rank %d: out of memory for a message from rank %d", c->rank,
                           p->rank);
  }
  u->cid = f->cid;
  ri->peer = p->rank;
  ri->cookie = f->cookie;
  ri->next = t->rdv_in;
  t->rdv_in = ri;
  u->tp = &t->base;
  u->cookie = ri;
  fold__deliver_unexp(c, u);
  return 0;
}

/* CTS or NACK for one of our rendezvous sends. */
static int rx_answer(tcp_tp *t, tcp_peer *p, const fold__tcp_frame *f) {
  fold_request **pp = &p->cts_wait;
  while (*pp && send_cookie(*pp) != f->cookie)
    pp = &(*pp)->next;
  fold_request *r = *pp;
  if (r == NULL) {
    proto_error(t, p, f->type == FOLD__TCP_CTS ? "CTS for no pending message" : "NACK for no pending message");
    return -1;
  }
  if (f->type == FOLD__TCP_CTS && f->len != r->bytes) {
    proto_error(t, p, "CTS length differs from the message length");
    return -1;
  }
  *pp = r->next;
  r->next = NULL;
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
  set_tx_state(r, TX_RDATA);
  r->tp_off = 0;
  if (p->txq_tail)
    p->txq_tail->next = r;
  else
    p->txq_head = r;
  p->txq_tail = r;
  mark_dirty(t, p);
  return 0;
}

static int rx_rdata(tcp_tp *t, tcp_peer *p, const fold__tcp_frame *f) {
  fold_request **pp = &p->rdata_wait;
  while (*pp && (uint64_t)(*pp)->tp_off != f->cookie)
    pp = &(*pp)->next;
  fold_request *r = *pp;
  if (r == NULL || (uint64_t)r->got != f->len) {
    proto_error(t, p, r ? "RDATA length differs from the announced length" : "RDATA for no requested message");
    return -1;
  }
  *pp = r->next;
  r->next = NULL;
  p->rx_req = r; /* the reference taken in rdv_accept moves here */
  rx_body_start(p, f, r->buf);
  return 0;
}

/* One header arrived. Returns 0, or -1 when the comm failed. */
static int rx_header(tcp_tp *t, tcp_peer *p, const uint8_t *hdr) {
  fold__tcp_frame f;
  if (fold__tcp_frame_parse(hdr, FOLD__TCP_HDR, &f) < 0) {
    proto_error(t, p, f.why);
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
static void rx_consume(tcp_tp *t, tcp_peer *p, const uint8_t *b, size_t n) {
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
static void rx_drain(tcp_tp *t, tcp_peer *p) {
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
      peer_gone(t, p, 0);
      return;
    }
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        peer_gone(t, p, errno);
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

/* ---- the vtable ----------------------------------------------------------------- */

int fold__tcp_tp_create(fold_comm *c, int *fds, fold__tp **out) {
  *out = NULL;
  int rc = 0;
  tcp_tp *t = calloc(1, sizeof *t);
  if (t) {
    t->epfd = -1;
    t->peers = calloc((size_t)c->size, sizeof *t->peers);
    t->flush = calloc((size_t)c->size, sizeof *t->flush);
    t->scratch = malloc(TCP_SCRATCH);
  }
  if (t == NULL || t->peers == NULL || t->flush == NULL || t->scratch == NULL)
    rc = fold__error(c, FOLD_ENOMEM, "out of memory for the tcp transport");
  else if ((t->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
    rc = fold__error(c, FOLD_ESYS, "epoll_create1: %s", strerror(errno));
  for (int p = 0; t && t->peers && p < c->size; p++) {
    t->peers[p].rank = p;
    t->peers[p].fd = -1;
  }
  for (int p = 0; rc == 0 && p < c->size; p++) {
    if (fds[p] < 0)
      continue;
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)p};
    if (fold__tcp_sock_tune(fds[p]) < 0 || epoll_ctl(t->epfd, EPOLL_CTL_ADD, fds[p], &ev) < 0) {
      rc = fold__error(c, FOLD_ESYS, "cannot set up the connection to rank %d: %s", p, strerror(errno));
      break;
    }
    t->peers[p].fd = fds[p];
    fds[p] = -1;
  }
  for (int p = 0; p < c->size; p++)
    if (fds[p] >= 0) {
      close(fds[p]);
      fds[p] = -1;
    }
  if (rc < 0) {
    if (t) {
      t->base.comm = c;
      t->base.ops = &tcp_ops;
      tcp_ops.destroy(&t->base);
    }
    return rc;
  }
  t->base.ops = &tcp_ops;
  t->base.comm = c;
  *out = &t->base;
  return 0;
}

static int tcp_isend(fold__tp *tp, fold_request *r) {
  tcp_tp *t = (tcp_tp *)tp;
  fold_comm *c = tp->comm;
  if (t->down)
    return fold__comm_failed(c) ? fold__comm_failed(c) : FOLD_EPEER;
  if (r->tpeer < 0 || r->tpeer >= c->size || (t->peers[r->tpeer].fd < 0 && !t->peers[r->tpeer].gone))
    return fold__error(c, FOLD_EINTERNAL, "tcp: rank %d: no connection to rank %d", c->rank, r->tpeer);
  tcp_peer *p = &t->peers[r->tpeer];
  if (p->gone) /* the engine checks c->lost first; this is a second guard */
    return fold__comm_fail(c, FOLD_EPEER, "fold_send: rank %d: peer rank %d lost", c->rank, p->rank);
  r->tp_off = 0;
  r->next = NULL;
  /* Inside a batch the frame only joins the queue: flush() writes every
   * frame queued for p in one sendmsg. A failure report goes at once. */
  int hold = c->tx_batch > 0 && !c->telling;
  if (r->bytes <= FOLD__TCP_EAGER_MAX) {
    set_tx_state(r, TX_EAGER);
    if (!hold && p->txq_head == NULL && p->ctl_head == NULL) {
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
        fold__req_complete(r, FOLD_OK);
        return 0;
      }
      int err = n < 0 && errno != EAGAIN && errno != EWOULDBLOCK ? errno : 0;
      fold__req_ref(r);
      p->txq_head = p->txq_tail = r;
      if (n > 0) {
        r->tp_off = (size_t)n;
        p->tx_cur = TX_CUR_REQ;
      }
      if (err)
        peer_gone(t, p, err);
      else
        set_pollout(t, p, 1);
      return fold__comm_failed(c);
    }
  } else {
    set_tx_state(r, TX_RTS);
    r->tp_data = (void *)++p->next_cookie;
  }
  fold__req_ref(r);
  if (p->txq_tail)
    p->txq_tail->next = r;
  else
    p->txq_head = r;
  p->txq_tail = r;
  if (hold)
    mark_dirty(t, p);
  else
    tx_flush(t, p);
  return fold__comm_failed(c);
}

static void tcp_flush(fold__tp *tp) {
  tcp_tp *t = (tcp_tp *)tp;
  if (!t->down)
    flush_dirty(t);
}

static int tcp_poll(fold__tp *tp) {
  tcp_tp *t = (tcp_tp *)tp;
  fold_comm *c = tp->comm;
  if (t->down)
    return fold__comm_failed(c);
  int n = t->nev;
  t->nev = 0;
  if (n == 0)
    n = epoll_wait(t->epfd, t->ev, TCP_EVENTS, 0);
  for (int i = 0; i < n && !t->down; i++) {
    uint32_t e = t->ev[i].events;
    tcp_peer *p = &t->peers[t->ev[i].data.u32];
    if (e & (EPOLLIN | EPOLLHUP | EPOLLERR))
      rx_drain(t, p);
    if ((e & EPOLLOUT) && !t->down)
      tx_flush(t, p);
  }
  flush_dirty(t);
  return fold__comm_failed(c);
}

static int tcp_wait(fold__tp *tp, int64_t timeout_ns) {
  tcp_tp *t = (tcp_tp *)tp;
  if (t->down || t->nev > 0)
    return 0;
  /* epoll_wait counts milliseconds; round up so a short wait still sleeps
   * instead of spinning. Level-triggered epoll keeps every readiness that
   * arrived since the last poll, so no wake-up is lost. */
  int64_t ms = timeout_ns <= 0 ? 0 : (timeout_ns + 999999) / 1000000;
  if (ms > INT_MAX)
    ms = INT_MAX;
  int n = epoll_wait(t->epfd, t->ev, TCP_EVENTS, (int)ms);
  t->nev = n > 0 ? n : 0;
  return 0;
}

/* One sleep over several transports: the epoll fd itself is pollable, and
 * readable while any of our sockets is ready (level-triggered, so nothing
 * that arrived since the last poll is lost and no announcement is needed). */
static int tcp_wait_fd(fold__tp *tp) { return ((tcp_tp *)tp)->epfd; }

static int tcp_wait_arm(fold__tp *tp) {
  tcp_tp *t = (tcp_tp *)tp;
  return t->down || t->nev > 0;
}

static void tcp_wait_disarm(fold__tp *tp) { (void)tp; }

static int tcp_pull(fold__tp *tp, fold__unexp *u, fold_request *r) {
  tcp_tp *t = (tcp_tp *)tp;
  fold_comm *c = tp->comm;
  tcp_rdv_in *ri = u->cookie, **pp = &t->rdv_in;
  while (*pp && *pp != ri)
    pp = &(*pp)->next;
  if (*pp)
    *pp = ri->next;
  int peer = ri->peer;
  uint64_t cookie = ri->cookie;
  size_t bytes = u->bytes;
  free(ri);
  free(u);
  if (r == NULL) /* the comm is being freed */
    return 0;
  if (t->down)
    return fold__comm_failed(c) ? fold__comm_failed(c) : FOLD_EPEER;
  tcp_peer *p = &t->peers[peer];
  if (p->gone)
    return fold__comm_fail(c, FOLD_EPEER,
                           "fold_recv: rank %d: peer rank %d lost (%s) before sending its %zu-byte message (tag %d)",
                           c->rank, peer, fold__lost_why(c, peer), bytes, r->tag);
  int rc = rdv_accept(t, p, r, bytes, cookie);
  flush_dirty(t);
  return rc < 0 ? rc : fold__comm_failed(c);
}

/* Complete every request on a list with status and drop our reference. */
static void drop_list(fold_request *r, int status) {
  while (r) {
    fold_request *next = r->next;
    r->next = NULL;
    fold__req_complete(r, status);
    fold__req_unref(r);
    r = next;
  }
}

static void tcp_shutdown(fold__tp *tp, int status) {
  tcp_tp *t = (tcp_tp *)tp;
  if (t->down)
    return;
  t->down = 1;
  for (int i = 0; i < tp->comm->size; i++) {
    tcp_peer *p = &t->peers[i];
    if (p->fd >= 0) { /* peers see EOF and learn that this rank is gone */
      close(p->fd);
      p->fd = -1;
    }
    drop_list(p->txq_head, status);
    drop_list(p->cts_wait, status);
    drop_list(p->rdata_wait, status);
    p->txq_head = p->txq_tail = p->cts_wait = p->rdata_wait = NULL;
    if (p->rx_req) {
      fold__req_complete(p->rx_req, status);
      fold__req_unref(p->rx_req);
      p->rx_req = NULL;
    }
    free(p->rx_unexp);
    p->rx_unexp = NULL;
    while (p->ctl_head) {
      tcp_ctl *k = p->ctl_head;
      p->ctl_head = k->next;
      free(k);
    }
    p->ctl_tail = NULL;
    p->rx_body = 0;
    p->part_len = 0;
    p->tx_cur = TX_CUR_NONE;
  }
  t->nflush = 0;
  t->nev = 0;
}

/* Close the connection to p so that what this rank sent last still
 * arrives: closing a socket with unread bytes makes the kernel reset the
 * connection and drop the data it has not sent yet, so half-close first and
 * discard what is waiting to be read (bounded: destroy never hangs). */
static void close_gracefully(tcp_tp *t, tcp_peer *p) {
  (void)shutdown(p->fd, SHUT_WR);
  for (int i = 0; i < 64; i++) {
    ssize_t n = recv(p->fd, t->scratch, TCP_SCRATCH, MSG_DONTWAIT);
    if (n <= 0 && !(n < 0 && errno == EINTR))
      break;
  }
  close(p->fd);
  p->fd = -1;
}

static void tcp_destroy(fold__tp *tp) {
  tcp_tp *t = (tcp_tp *)tp;
  for (int i = 0; t->peers && t->scratch && !t->down && i < tp->comm->size; i++)
    if (t->peers[i].fd >= 0)
      close_gracefully(t, &t->peers[i]);
  if (t->peers)
    tcp_shutdown(tp, FOLD_EABORTED);
  /* Records still here had no unexpected-queue entry left (the comm pulls
   * its queue with r = NULL before destroying transports). */
  while (t->rdv_in) {
    tcp_rdv_in *ri = t->rdv_in;
    t->rdv_in = ri->next;
    free(ri);
  }
  if (t->epfd >= 0)
    close(t->epfd);
  free(t->peers);
  free(t->flush);
  free(t->scratch);
  free(t);
}

static const fold__tp_ops tcp_ops = {
    .name = "tcp",
    .kind = FOLD__TP_KIND_TCP,
    .isend = tcp_isend,
    .poll = tcp_poll,
    .wait = tcp_wait,
    .wait_fd = tcp_wait_fd,
    .wait_arm = tcp_wait_arm,
    .wait_disarm = tcp_wait_disarm,
    .pull = tcp_pull,
    .shutdown = tcp_shutdown,
    .flush = tcp_flush,
    .joined = NULL, /* the listener is closed as soon as every peer connected */
    .destroy = tcp_destroy,
};
