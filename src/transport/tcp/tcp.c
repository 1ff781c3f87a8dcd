/* tcp.c — the TCP transport's data path: framed streams per peer, eager and rendezvous messages, one epoll; its vtable, lifecycle, waiting and peer loss (sending: tcp_send.c, receiving: tcp_recv.c). */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "transport/tcp/tcp_info.h"
#include "transport/tcp/tcp_tp.h"

static const fold__tp_ops tcp_ops;

void fold__tcp_set_pollout(fold__tcp_tp *t, fold__tcp_peer *p, int on) {
  if (p->pollout == on || p->fd < 0)
    return;
  struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.u64 = (uint64_t)p->rank};
  if (epoll_ctl(t->epfd, EPOLL_CTL_MOD, p->fd, &ev) == 0)
    p->pollout = on;
}

void fold__tcp_mark_dirty(fold__tcp_tp *t, fold__tcp_peer *p) {
  if (!p->dirty) {
    p->dirty = 1;
    t->flush[t->nflush++] = p->rank;
  }
}

/* Is something (bytes, an end or an error) waiting to be read on fd? */
static int rx_pending(int fd) {
  struct pollfd q = {.fd = fd, .events = POLLIN};
  return poll(&q, 1, 0) > 0 && (q.revents & (POLLIN | POLLHUP | POLLERR));
}

/* The connection to p broke or p left. What p sent before is delivered
 * first: a send that met the reset of a peer that closed with unread data
 * comes here before the poll has read that peer's last frames (its kernel
 * delivered them before the reset), and a failure report among them must
 * be seen before p's loss. Reading ends at the connection's end (a read of
 * 0 or an error, which come back here and close it), at EAGAIN, or after a
 * bounded number of passes. Whether the loss fails the comm now depends on
 * whether anything still needs p (fold__peer_lost). */
void fold__tcp_peer_gone(fold__tcp_tp *t, fold__tcp_peer *p, int err) {
  if (p->fd < 0)
    return;
  if (!p->reading_last) {
    p->reading_last = 1;
    for (int i = 0; i < 64 && p->fd >= 0 && !t->down && rx_pending(p->fd); i++)
      fold__tcp_rx_drain(t, p);
    p->reading_last = 0;
    if (p->fd < 0 || t->down)
      return;
  }
  char buf[96];
  const char *why = err ? strerror_r(err, buf, sizeof buf) : "connection closed by peer";
  close(p->fd);
  p->fd = -1;
  p->gone = 1;
  /* A message cut short that no receive asked for yet is dropped as if it
   * was never sent: a later receive for it fails on the lost peer. What
   * arrived complete stays deliverable. */
  int pending = !fold__list_empty(&p->txq) || !fold__list_empty(&p->ctl) || !fold__list_empty(&p->cts_wait) ||
                !fold__list_empty(&p->rdata_wait) || p->rx_req;
  free(p->rx_unexp);
  p->rx_unexp = NULL;
  p->rx_body = 0;
  p->part_len = 0;
  fold__peer_lost(t->base.comm, p->rank, pending, why);
}

/* An authenticated peer broke the protocol: a bug or corruption. Nothing it
 * sends can be trusted any more, so it counts as lost. */
void fold__tcp_proto_error(fold__tcp_tp *t, fold__tcp_peer *p, const char *what) {
  fold_comm *c = t->base.comm;
  fold__comm_fail(c, FOLD_EPEER, "tcp: rank %d: peer rank %d lost (protocol error: %s)", c->rank, p->rank, what);
}

/* ---- the vtable ----------------------------------------------------------------- */

int fold__tcp_tp_create(fold_comm *c, int *fds, fold__tp **out) {
  *out = NULL;
  int rc = 0;
  fold__tcp_tp *t = calloc(1, sizeof *t);
  if (t) {
    t->epfd = -1;
    fold__list_init(&t->rdv_in);
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
    fold__list_init(&t->peers[p].txq);
    fold__list_init(&t->peers[p].ctl);
    fold__list_init(&t->peers[p].cts_wait);
    fold__list_init(&t->peers[p].rdata_wait);
  }
  for (int p = 0; rc == 0 && p < c->size; p++) {
    if (fds[p] < 0)
      continue;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)p};
    if (fold__tcp_sock_tune(fds[p]) < 0 || epoll_ctl(t->epfd, EPOLL_CTL_ADD, fds[p], &ev) < 0) {
      rc = fold__error(c, FOLD_ESYS, "cannot set up the connection to rank %d: %s", p, strerror(errno));
      break;
    }
    t->peers[p].fd = fds[p];
    t->peers[p].made = 1;
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

static int tcp_flush(fold__tp *tp) {
  fold__tcp_tp *t = (fold__tcp_tp *)tp;
  int held = t->nflush > 0;
  if (!t->down)
    fold__tcp_flush_dirty(t);
  return held;
}

static int tcp_poll(fold__tp *tp) {
  fold__tcp_tp *t = (fold__tcp_tp *)tp;
  fold_comm *c = tp->comm;
  if (t->down)
    return fold__comm_failed(c);
  int n = t->nev;
  t->nev = 0;
  if (n == 0)
    n = epoll_wait(t->epfd, t->ev, TCP_EVENTS, 0);
  for (int i = 0; i < n && !t->down; i++) {
    uint32_t e = t->ev[i].events;
    uint64_t d = t->ev[i].data.u64;
    if (FOLD__TCP_EV_KIND(d)) { /* the listener, a handshake, an attempt (tcp_lazy.c) */
      fold__tcp_lazy_event(t, d, e);
      continue;
    }
    fold__tcp_peer *p = &t->peers[FOLD__TCP_EV_ID(d)];
    if (e & (EPOLLIN | EPOLLHUP | EPOLLERR))
      fold__tcp_rx_drain(t, p);
    if ((e & EPOLLOUT) && !t->down)
      fold__tcp_tx_flush(t, p);
  }
  if (t->lazy_busy > 0 && !t->down)
    fold__tcp_lazy_tick(t);
  fold__tcp_flush_dirty(t);
  if (t->rate_due > 0 && !t->down)
    fold__tcp_link_check(t);
  /* no event: nothing arrived and no blocked send can go on */
  return fold__comm_failed(c) ? fold__comm_failed(c) : n > 0 ? 0 : FOLD__POLL_IDLE;
}

static int tcp_wait(fold__tp *tp, int64_t timeout_ns) {
  fold__tcp_tp *t = (fold__tcp_tp *)tp;
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
static int tcp_wait_fd(fold__tp *tp) { return ((fold__tcp_tp *)tp)->epfd; }

static int tcp_wait_arm(fold__tp *tp) {
  fold__tcp_tp *t = (fold__tcp_tp *)tp;
  return t->down || t->nev > 0;
}

static void tcp_wait_disarm(fold__tp *tp) { (void)tp; }

static int tcp_pull(fold__tp *tp, fold__unexp *u, fold_request *r) {
  fold__tcp_tp *t = (fold__tcp_tp *)tp;
  fold_comm *c = tp->comm;
  fold__tcp_rdv_in *ri = u->cookie;
  fold__list_unlink(&ri->link);
  int peer = ri->peer;
  uint64_t cookie = ri->cookie;
  size_t bytes = u->bytes;
  free(ri);
  free(u);
  if (r == NULL) /* the comm is being freed */
    return 0;
  if (t->down)
    return fold__comm_failed(c) ? fold__comm_failed(c) : FOLD_EPEER;
  fold__tcp_peer *p = &t->peers[peer];
  if (p->gone)
    return fold__comm_fail(c, FOLD_EPEER,
                           "fold_recv: rank %d: peer rank %d lost (%s) before sending its %zu-byte message (tag %d)",
                           c->rank, peer, fold__lost_why(c, peer), bytes, r->tag);
  int rc = fold__tcp_rdv_accept(t, p, r, bytes, cookie);
  fold__tcp_flush_dirty(t);
  return rc < 0 ? rc : fold__comm_failed(c);
}

/* Close the connection to p so that what this rank sent last still
 * arrives: closing a socket with unread bytes makes the kernel reset the
 * connection and drop the data it has not sent yet, so half-close first and
 * discard what is waiting to be read (bounded: destroy never hangs). */
static void close_gracefully(fold__tcp_tp *t, fold__tcp_peer *p) {
  (void)shutdown(p->fd, SHUT_WR);
  for (int i = 0; i < 64; i++) {
    ssize_t n = recv(p->fd, t->scratch, TCP_SCRATCH, MSG_DONTWAIT);
    if (n <= 0 && !(n < 0 && errno == EINTR))
      break;
  }
  close(p->fd);
  p->fd = -1;
}

static void tcp_shutdown(fold__tp *tp, int status) {
  fold__tcp_tp *t = (fold__tcp_tp *)tp;
  if (t->down)
    return;
  t->down = 1;
  fold__tcp_lazy_free(t); /* peers that dial us from now on are refused */
  for (int i = 0; i < tp->comm->size; i++) {
    fold__tcp_peer *p = &t->peers[i];
    if (p->fd >= 0 && t->scratch) /* peers see EOF and learn that this rank is gone, after its last frames */
      close_gracefully(t, p);
    else if (p->fd >= 0) {
      close(p->fd);
      p->fd = -1;
    }
    fold__req_drop_list(&p->txq, status);
    fold__req_drop_list(&p->cts_wait, status);
    fold__req_drop_list(&p->rdata_wait, status);
    if (p->rx_req) {
      fold__req_complete(p->rx_req, status);
      fold__req_unref(p->rx_req);
      p->rx_req = NULL;
    }
    free(p->rx_unexp);
    p->rx_unexp = NULL;
    for (fold__list *n; (n = fold__list_pop_front(&p->ctl)) != NULL;)
      free(FOLD__LIST_ENTRY(n, fold__tcp_ctl, link));
    p->rx_body = 0;
    p->part_len = 0;
    p->tx_cur = TX_CUR_NONE;
  }
  t->nflush = 0;
  t->nev = 0;
}

static void tcp_destroy(fold__tp *tp) {
  fold__tcp_tp *t = (fold__tcp_tp *)tp;
  for (int i = 0; t->peers && t->scratch && !t->down && i < tp->comm->size; i++)
    if (t->peers[i].fd >= 0)
      close_gracefully(t, &t->peers[i]);
  if (t->peers)
    tcp_shutdown(tp, FOLD_EABORTED);
  /* Records still here had no unexpected-queue entry left (the comm pulls
   * its queue with r = NULL before destroying transports). */
  for (fold__list *n; t->rdv_in.next && (n = fold__list_pop_front(&t->rdv_in)) != NULL;)
    free(FOLD__LIST_ENTRY(n, fold__tcp_rdv_in, link));
  if (t->epfd >= 0)
    close(t->epfd);
  free(t->peers);
  free(t->flush);
  free(t->scratch);
  free(t);
}

void fold__tcp_link_sample(fold__tcp_tp *t, fold__tcp_peer *p, uint64_t bytes) {
  if (p->rate_due) { /* an earlier one is still being delivered: time both */
    p->rate_bytes += (long)bytes;
    return;
  }
  long outq;
  if (p->fd < 0 || p->gone || fold__tcp_info_outq(p->fd, &outq) != 0 || outq < TCP_LINK_MIN) return;
  p->rate_due = 1;
  p->rate_t0 = fold__now(t->base.comm);
  p->rate_bytes = outq;
  t->rate_due++;
}

/* The link's rate is timed here, not read from the kernel's delivery rate
 * (its most recent sample of one flight): through a token bucket that
 * sample swings both ways, with the burst and with acknowledgements that a
 * loaded receiver batches (a 1 Gbit/s link with a 256 KB burst, tests/netns,
 * read 30 MB/s to 5.7 GB/s on a loaded machine). The time from a large
 * write to the first poll that finds everything then unacknowledged
 * acknowledged is the transfer's own, mostly: noise (a descheduled
 * receiver, other traffic, a late poll) slows it, but a write completed
 * late, after its first part had arrived unacknowledged (a loaded receiver
 * batches its acknowledgements), times the rest as 629 KB in 0.1 ms. So
 * tcp_link takes the median of the recent samples, as it did of the
 * kernel's. (The kernel's time of the last acknowledgement,
 * tcpi_last_ack_recv, counts jiffies: 4 ms steps made a 680 KB sample
 * read as 2 GB/s.) */
void fold__tcp_link_check(fold__tcp_tp *t) {
  fold_comm *c = t->base.comm;
  for (int i = 0; i < c->size && t->rate_due > 0; i++) {
    fold__tcp_peer *p = &t->peers[i];
    if (!p->rate_due) continue;
    long outq = -1;
    int ok = p->fd >= 0 && !p->gone && fold__tcp_info_outq(p->fd, &outq) == 0;
    if (ok && outq > 0) continue; /* still flowing */
    int64_t done = fold__now(c);
    if (ok && done > p->rate_t0) fold__meter_add(&p->rate, (double)(done - p->rate_t0) / (double)p->rate_bytes);
    p->rate_due = 0;
    t->rate_due--;
  }
}

/* The connection to tpeer: half the smallest RTT the kernel saw, and the
 * median of the last timed deliveries (fold__tcp_link_check). */
static int tcp_link(fold__tp *tp, int tpeer, fold__link *out) {
  fold__tcp_tp *t = (fold__tcp_tp *)tp;
  if (tpeer < 0 || tpeer >= tp->comm->size || t->down) return FOLD_EINVAL;
  fold__tcp_peer *p = &t->peers[tpeer];
  if (p->rate_due) fold__tcp_link_check(t);
  double rtt, rate;
  if (p->fd < 0 || p->gone || fold__tcp_info_read(p->fd, &rtt, &rate) != 0 || rtt <= 0) return FOLD_EINVAL;
  out->lat_ns = rtt / 2;
  out->ns_per_byte = fold__meter_median(&p->rate);
  return 0;
}

/* A receive from tpeer was posted: connect to it if not yet (lazy). */
static void tcp_want(fold__tp *tp, int tpeer) {
  fold__tcp_tp *t = (fold__tcp_tp *)tp;
  if (t->lazy && tpeer >= 0 && tpeer < tp->comm->size)
    fold__tcp_lazy_want(t, &t->peers[tpeer]);
}

int fold__tcp_conn_count(const fold__tp *tp) {
  const fold__tcp_tp *t = (const fold__tcp_tp *)tp;
  int n = 0;
  for (int i = 0; t->peers && i < tp->comm->size; i++)
    n += t->peers[i].made;
  return n;
}

static size_t tcp_eager_max(int ctx) { return (size_t)fold__tcp_eager_max((uint32_t)ctx); }

static const fold__tp_ops tcp_ops = {
    .name = "tcp",
    .kind = FOLD__TP_KIND_TCP,
    .eager_max = tcp_eager_max,
    .isend = fold__tcp_isend,
    .poll = tcp_poll,
    .wait = tcp_wait,
    .wait_fd = tcp_wait_fd,
    .wait_arm = tcp_wait_arm,
    .wait_disarm = tcp_wait_disarm,
    .pull = tcp_pull,
    .shutdown = tcp_shutdown,
    .flush = tcp_flush,
    .joined = NULL, /* eager: the listener is closed as soon as every peer connected; lazy: it stays */
    .destroy = tcp_destroy,
    .link = tcp_link,
    .want = tcp_want,
};
