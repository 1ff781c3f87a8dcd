/* tcp_lazy.c — tcp connections made on first use: non-blocking connects and their handshakes in the poll, both-sides tie-break, dead peers named, accepted connections taken over from the acceptor thread. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sys/eventfd.h>

#include "transport/tcp/tcp_lazy.h"

/* How it works (docs/bootstrap.md, "Connections on first use"):
 *
 * Every rank keeps its data listener open for the transport's life, served
 * by the acceptor thread (tcp_accept.c), which answers a peer's connection
 * whatever this rank's own thread is doing. A connection to peer p is dialed when this rank first
 * queues a send to p or posts a receive from p (the engine's `want`), so a
 * rank waiting on a dead sender learns it: the dead rank's listener is
 * closed, connect() is refused, and p is lost (FOLD_EPEER naming p).
 *
 * The dialer proves itself ("data rank R", the same HMAC handshake as at
 * init); then the acceptor sends one decision byte, 'Y' (this is the
 * connection) or 'N' (refused: the other one is). No data frame moves
 * before the decision, so nothing is lost or duplicated, and a pair's frames
 * use one connection, in order. Both sides may dial at once: the acceptor
 * of a connection from p refuses it if it has its own attempt to p in
 * progress and its rank is the higher one (the higher rank's attempt
 * wins), else it accepts (dropping its own attempt). Both ends apply the
 * same rule, so exactly one connection survives. A refused dialer waits
 * for the winner's connection; if none comes within TCP_WAITIN_NS (the
 * winner died), it dials again and learns. The pair's state the rule reads
 * (z->st) is kept under z->mu, since the acceptor thread decides: this
 * thread marks its attempts (DIALING, WAITIN) and its won dials (UP); the
 * acceptor marks what it accepts (UP) and hands the socket over, which
 * this thread takes at its next call (adopt). */

#define TCP_ATTEMPT_NS 250000000LL     /* a connect()'s first bound, doubled per one that ran out */
#define TCP_ATTEMPT_MAX_NS 4000000000LL
#define TCP_PAUSE_NS 1000000LL         /* retry pause, doubled up to TCP_PAUSE_MAX_NS */
#define TCP_PAUSE_MAX_NS 100000000LL
#define TCP_WAITIN_NS 1000000000LL     /* refused (the peer's attempt wins): wait this long for it */

enum { EV_READY = 1, EV_DIAL = 3 };
enum { D_CONNECT = 1, D_AUTH, D_DECIDE, D_PAUSE, D_WAITIN };

typedef struct fold__tcp_dial {
  int fd, stage;
  int64_t until;   /* D_CONNECT: connect bound; D_PAUSE, D_WAITIN: when to dial again */
  int64_t attempt, pause;
  fold__auth_cli a;
} fold__tcp_dial;

static uint64_t ev_data(int kind, int id) { return (uint64_t)kind << 32 | (uint32_t)id; }

static void ev_set(fold__tcp_tp *t, int fd, int op, uint32_t events, uint64_t data) {
  struct epoll_event ev = {.events = events, .data.u64 = data};
  (void)epoll_ctl(t->epfd, op, fd, &ev);
}

static void busy_update(fold__tcp_tp *t) { t->lazy_busy = t->lazy->ndial; }

static void st_set(fold__tcp_lazy *z, int q, int from, int to) {
  pthread_mutex_lock(&z->mu);
  if (from < 0 || z->st[q] == from)
    z->st[q] = (uint8_t)to;
  pthread_mutex_unlock(&z->mu);
}

static void dial_close(fold__tcp_tp *t, fold__tcp_dial *d) {
  if (d->fd >= 0) {
    (void)epoll_ctl(t->epfd, EPOLL_CTL_DEL, d->fd, NULL);
    close(d->fd);
    d->fd = -1;
  }
}

static void dial_free(fold__tcp_tp *t, fold__tcp_peer *p) {
  if (p->dial == NULL)
    return;
  dial_close(t, p->dial);
  free(p->dial);
  p->dial = NULL;
  t->lazy->ndial--;
  busy_update(t);
}

/* fd is p's connection now: frames queued for p go out. */
static void conn_up(fold__tcp_tp *t, fold__tcp_peer *p, int fd, const char *how) {
  fold_comm *c = t->base.comm;
  dial_free(t, p);
  if (fold__tcp_sock_tune(fd) < 0) {
    close(fd);
    fold__comm_fail(c, FOLD_ESYS, "tcp: rank %d: cannot set up the connection to rank %d: %s", c->rank, p->rank,
                    strerror(errno));
    return;
  }
  p->fd = fd;
  p->made = 1;
  p->pollout = 0;
  ev_set(t, fd, EPOLL_CTL_ADD, EPOLLIN, ev_data(0, p->rank));
  FOLD__TRACE(c, "tcp: rank %d: connection to rank %d up (%s)", c->rank, p->rank, how);
  if (!fold__list_empty(&p->txq) || !fold__list_empty(&p->ctl))
    fold__tcp_mark_dirty(t, p);
}

/* Take the connections the acceptor thread decided for (tcp_accept.c).
 * One lock per peer looked at, and none when nothing was handed over. */
static void adopt(fold__tcp_tp *t) {
  fold__tcp_lazy *z = t->lazy;
  uint64_t v;
  ssize_t rd = read(z->ready_fd, &v, sizeof v); /* re-armed by the next hand-over */
  (void)rd;
  for (int q = 0; q < t->base.comm->size && !t->down; q++) {
    pthread_mutex_lock(&z->mu);
    int more = z->nhanded > 0, fd = more ? z->handed[q] : -1;
    if (fd >= 0) {
      z->handed[q] = -1;
      z->nhanded--;
    }
    pthread_mutex_unlock(&z->mu);
    if (!more)
      return;
    if (fd >= 0 && (t->peers[q].fd >= 0 || t->peers[q].gone))
      close(fd); /* not expected: the pair's state allows one connection */
    else if (fd >= 0)
      conn_up(t, &t->peers[q], fd, "accepted");
  }
}

/* p's listener refused us: p's process ended or left the communicator. */
static void dial_dead(fold__tcp_tp *t, fold__tcp_peer *p, int err) {
  fold_comm *c = t->base.comm;
  fold__tcp_lazy *z = t->lazy;
  dial_free(t, p);
  pthread_mutex_lock(&z->mu);
  int up = z->st[p->rank] == FOLD__LZ_UP; /* p's own connection came first: its loss shows there */
  if (!up)
    z->st[p->rank] = FOLD__LZ_GONE;
  pthread_mutex_unlock(&z->mu);
  if (up) {
    adopt(t);
    return;
  }
  p->gone = 1;
  char buf[64], why[160];
  snprintf(why, sizeof why, "connecting to it: %s: its process ended or left the communicator",
           strerror_r(err, buf, sizeof buf));
  fold__peer_lost(c, p->rank, !fold__list_empty(&p->txq), why);
}

static void dial_retry(fold__tcp_tp *t, fold__tcp_dial *d, int stage, int64_t wait) {
  dial_close(t, d);
  d->stage = stage;
  d->until = fold__now(t->base.comm) + wait;
}

/* Start (or restart) the attempt to p: a fresh socket, connect(). */
static void dial_start(fold__tcp_tp *t, fold__tcp_peer *p) {
  fold__tcp_lazy *z = t->lazy;
  fold__tcp_dial *d = p->dial;
  int fd = socket(z->addr[p->rank].ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    dial_retry(t, d, D_PAUSE, d->pause);
    return;
  }
  fold__tcp_sock_tune(fd); /* before connect: buffer sizes shape the handshake */
  d->fd = fd;
  d->stage = D_CONNECT;
  d->until = fold__now(t->base.comm) + d->attempt;
  if (connect(fd, (struct sockaddr *)&z->addr[p->rank], z->alen[p->rank]) < 0 && errno != EINPROGRESS) {
    int err = errno;
    if (err == ECONNREFUSED) {
      dial_dead(t, p, err);
      return;
    }
    dial_retry(t, d, D_PAUSE, d->pause);
    return;
  }
  ev_set(t, fd, EPOLL_CTL_ADD, EPOLLOUT, ev_data(EV_DIAL, p->rank));
}

void fold__tcp_lazy_want(fold__tcp_tp *t, fold__tcp_peer *p) {
  fold__tcp_lazy *z = t->lazy;
  if (z == NULL || t->down || p->fd >= 0 || p->gone || p->dial || !z->use[p->rank])
    return;
  /* The peer may have connected to us: the acceptor has decided, this
   * thread has not taken it yet. Else our attempt begins. */
  pthread_mutex_lock(&z->mu);
  int up = z->st[p->rank] == FOLD__LZ_UP;
  if (!up)
    z->st[p->rank] = FOLD__LZ_DIALING;
  pthread_mutex_unlock(&z->mu);
  if (up) {
    adopt(t);
    return;
  }
  fold__tcp_dial *d = calloc(1, sizeof *d);
  if (d == NULL) {
    fold_comm *c = t->base.comm;
    fold__comm_fail(c, FOLD_ENOMEM, "tcp: rank %d: out of memory connecting to rank %d", c->rank, p->rank);
    return;
  }
  d->fd = -1;
  d->attempt = TCP_ATTEMPT_NS;
  d->pause = TCP_PAUSE_NS;
  p->dial = d;
  t->lazy->ndial++;
  busy_update(t);
  dial_start(t, p);
}

/* Advance p's attempt (an event on its socket, or a tick). */
static void dial_step(fold__tcp_tp *t, fold__tcp_peer *p) {
  fold_comm *c = t->base.comm;
  fold__tcp_dial *d = p->dial;
  if (d->stage == D_CONNECT) {
    struct pollfd pf = {.fd = d->fd, .events = POLLOUT};
    if (poll(&pf, 1, 0) <= 0)
      return; /* still connecting */
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (getsockopt(d->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
      soerr = errno;
    if (soerr == ECONNREFUSED) {
      dial_dead(t, p, soerr);
      return;
    }
    if (soerr) {
      dial_retry(t, d, D_PAUSE, d->pause);
      return;
    }
    fold__auth_cli_start(&d->a, t->lazy->claim);
    d->stage = D_AUTH;
  }
  if (d->stage == D_AUTH) {
    /* No bound of its own: until the peer greets us we wait in its accept
     * queue, and reconnecting would put us at the back of it (tcp_conn.c,
     * handshake). A peer that is gone resets us: retried, then refused. */
    int rc = fold__auth_cli_step(&d->a, d->fd, &t->lazy->key);
    if (rc == 0) {
      ev_set(t, d->fd, EPOLL_CTL_MOD, (uint32_t)(fold__auth_cli_events(&d->a) == POLLOUT ? EPOLLOUT : EPOLLIN),
             ev_data(EV_DIAL, p->rank));
      return;
    }
    if (rc == FOLD_EAUTH) {
      fold__comm_fail(c, FOLD_EAUTH,
                      "tcp: rank %d: peer rank %d failed the authentication of the data connection (different "
                      "FOLD_JOB_TOKEN, or not a rank of this job at that address)",
                      c->rank, p->rank);
      return;
    }
    if (rc < 0) {
      FOLD__TRACE(c, "tcp: rank %d: handshake with rank %d: %s; retrying", c->rank, p->rank, fold_strerror(rc));
      dial_retry(t, d, D_PAUSE, d->pause);
      return;
    }
    d->stage = D_DECIDE;
    ev_set(t, d->fd, EPOLL_CTL_MOD, EPOLLIN, ev_data(EV_DIAL, p->rank));
  }
  if (d->stage == D_DECIDE) {
    char b;
    ssize_t n = recv(d->fd, &b, 1, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
      return;
    if (n == 1 && b == 'Y') {
      int fd = d->fd;
      (void)epoll_ctl(t->epfd, EPOLL_CTL_DEL, fd, NULL);
      d->fd = -1;
      st_set(t->lazy, p->rank, -1, FOLD__LZ_UP);
      conn_up(t, p, fd, "dialed");
    } else if (n == 1 && b == 'N') {
      /* p's own attempt wins: it is on its way (else we dial again) */
      st_set(t->lazy, p->rank, FOLD__LZ_DIALING, FOLD__LZ_WAITIN);
      dial_retry(t, d, D_WAITIN, TCP_WAITIN_NS);
    } else {
      dial_retry(t, d, D_PAUSE, d->pause);
    }
  }
}

void fold__tcp_lazy_event(fold__tcp_tp *t, uint64_t data, uint32_t events) {
  (void)events;
  fold__tcp_lazy *z = t->lazy;
  uint32_t id = FOLD__TCP_EV_ID(data);
  if (z == NULL || t->down)
    return;
  switch (FOLD__TCP_EV_KIND(data)) {
  case EV_READY:
    adopt(t);
    break;
  case EV_DIAL:
    if (id < (uint32_t)t->base.comm->size && t->peers[id].dial && t->peers[id].dial->fd >= 0)
      dial_step(t, &t->peers[id]);
    break;
  default:
    break;
  }
}

void fold__tcp_lazy_tick(fold__tcp_tp *t) {
  fold__tcp_lazy *z = t->lazy;
  fold_comm *c = t->base.comm;
  if (z == NULL || t->down)
    return;
  int64_t now = fold__now(c);
  for (int q = 0; q < c->size && z->ndial > 0 && !t->down; q++) {
    fold__tcp_dial *d = t->peers[q].dial;
    if (d == NULL || now < d->until)
      continue;
    if (d->stage == D_CONNECT) { /* no answer to our SYN: a fresh one now */
      d->attempt = d->attempt * 2 > TCP_ATTEMPT_MAX_NS ? TCP_ATTEMPT_MAX_NS : d->attempt * 2;
      dial_close(t, d);
      dial_start(t, &t->peers[q]);
    } else if (d->stage == D_PAUSE || d->stage == D_WAITIN) {
      if (d->stage == D_WAITIN) {
        pthread_mutex_lock(&z->mu);
        int up = z->st[q] == FOLD__LZ_UP; /* the winner's connection came */
        if (!up)
          z->st[q] = FOLD__LZ_DIALING;
        pthread_mutex_unlock(&z->mu);
        if (up) {
          adopt(t);
          continue;
        }
      }
      d->pause = d->pause * 2 > TCP_PAUSE_MAX_NS ? TCP_PAUSE_MAX_NS : d->pause * 2;
      dial_start(t, &t->peers[q]);
    }
  }
}

static void lazy_release(fold__tcp_lazy *z, int size) {
  if (z->lfd >= 0)
    close(z->lfd); /* peers that dial us now are refused: they learn we are gone */
  for (int q = 0; z->handed && q < size; q++)
    if (z->handed[q] >= 0)
      close(z->handed[q]);
  if (z->stop_fd >= 0)
    close(z->stop_fd);
  if (z->ready_fd >= 0)
    close(z->ready_fd);
  pthread_mutex_destroy(&z->mu);
  free(z->addr);
  free(z->alen);
  free(z->use);
  free(z->st);
  free(z->handed);
  free(z);
}

void fold__tcp_lazy_free(fold__tcp_tp *t) {
  fold__tcp_lazy *z = t->lazy;
  if (z == NULL)
    return;
  fold__tcp_accept_stop(z);
  for (int q = 0; t->peers && q < t->base.comm->size; q++)
    dial_free(t, &t->peers[q]);
  lazy_release(z, t->base.comm->size);
  t->lazy = NULL;
  t->lazy_busy = 0;
}

int fold__tcp_lazy_create(fold_comm *c, int lfd, const fold__card *cards, const uint8_t *use,
                          const fold__auth_key *key, fold__tp **out) {
  *out = NULL;
  int size = c->size;
  fold__tcp_lazy *z = calloc(1, sizeof *z);
  if (z == NULL) {
    close(lfd);
    return fold__error(c, FOLD_ENOMEM, "out of memory");
  }
  pthread_mutex_init(&z->mu, NULL);
  z->c = c;
  z->lfd = lfd;
  z->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  z->ready_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  z->key = *key;
  snprintf(z->claim, sizeof z->claim, "data rank %d", c->rank);
  z->addr = calloc((size_t)size, sizeof *z->addr);
  z->alen = calloc((size_t)size, sizeof *z->alen);
  z->use = calloc((size_t)size, 1);
  z->st = calloc((size_t)size, 1);
  z->handed = malloc((size_t)size * sizeof *z->handed);
  int rc = 0;
  if (!z->addr || !z->alen || !z->use || !z->st || !z->handed)
    rc = fold__error(c, FOLD_ENOMEM, "out of memory");
  else if (z->stop_fd < 0 || z->ready_fd < 0)
    rc = fold__error(c, FOLD_ESYS, "tcp: eventfd: %s", strerror(errno));
  for (int p = 0; rc == 0 && p < size; p++) {
    z->handed[p] = -1;
    z->use[p] = p != c->rank && use[p];
    if (z->use[p] && fold__tcp_addr_parse(cards[p].tcp, &z->addr[p], &z->alen[p]) < 0)
      rc = fold__error(c, FOLD_EINVAL, "peer rank %d published a bad tcp address \"%s\"", p, cards[p].tcp);
  }
  int *fds = rc == 0 ? malloc((size_t)size * sizeof *fds) : NULL;
  if (rc == 0 && fds == NULL)
    rc = fold__error(c, FOLD_ENOMEM, "out of memory");
  for (int p = 0; fds && p < size; p++)
    fds[p] = -1;
  fold__tp *tp = NULL;
  if (rc == 0)
    rc = fold__tcp_tp_create(c, fds, &tp);
  free(fds);
  if (rc < 0) {
    lazy_release(z, size);
    return rc;
  }
  fold__tcp_tp *t = (fold__tcp_tp *)tp;
  t->lazy = z;
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = ev_data(EV_READY, 0)};
  if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, z->ready_fd, &ev) < 0)
    rc = fold__error(c, FOLD_ESYS, "tcp: epoll_ctl: %s", strerror(errno));
  else
    rc = fold__tcp_accept_start(z);
  if (rc < 0) {
    tp->ops->destroy(tp);
    return rc;
  }
  *out = tp;
  return 0;
}
