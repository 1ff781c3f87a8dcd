/* tcp_lazy.c — tcp connections made on first use: non-blocking connects and handshakes in the poll, both-sides tie-break, dead peers named. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/auth.h"
#include "transport/tcp/tcp_tp.h"

/* How it works (docs/bootstrap.md, "Connections on first use"):
 *
 * Every rank keeps its data listener open for the transport's life, in the
 * transport's epoll. A connection to peer p is dialed when this rank first
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
 * winner died), it dials again and learns. */

#define TCP_MAX_HANDSHAKES 64          /* accepted connections proving themselves at once */
#define TCP_HANDSHAKE_NS 2000000000LL  /* an accepted connection's proof: a real peer needs a round trip */
#define TCP_EVICT_AGE_NS 200000000LL   /* a pending proof younger than this is not dropped for a newcomer */
#define TCP_ATTEMPT_NS 250000000LL     /* a connect()'s first bound, doubled per one that ran out */
#define TCP_ATTEMPT_MAX_NS 4000000000LL
#define TCP_PAUSE_NS 1000000LL         /* retry pause, doubled up to TCP_PAUSE_MAX_NS */
#define TCP_PAUSE_MAX_NS 100000000LL
#define TCP_WAITIN_NS 1000000000LL     /* refused (the peer's attempt wins): wait this long for it */

enum { EV_LISTEN = 1, EV_IN = 2, EV_DIAL = 3 };
enum { D_CONNECT = 1, D_AUTH, D_DECIDE, D_PAUSE, D_WAITIN };

typedef struct fold__tcp_dial {
  int fd, stage;
  int64_t until;   /* D_CONNECT: connect bound; D_PAUSE, D_WAITIN: when to dial again */
  int64_t attempt, pause;
  fold__auth_cli a;
} fold__tcp_dial;

typedef struct tcp_in {
  int fd; /* -1: free slot */
  int64_t since;
  char from[64];
  fold__auth_srv a;
} tcp_in;

typedef struct fold__tcp_lazy {
  int lfd;
  fold__auth_key key;
  struct sockaddr_storage *addr; /* [size] */
  socklen_t *alen;
  uint8_t *use;
  tcp_in in[TCP_MAX_HANDSHAKES];
  int nin, ndial;
  char claim[FOLD__AUTH_CLAIM_MAX + 1];
} fold__tcp_lazy;

static uint64_t ev_data(int kind, int id) { return (uint64_t)kind << 32 | (uint32_t)id; }

static void ev_set(fold__tcp_tp *t, int fd, int op, uint32_t events, uint64_t data) {
  struct epoll_event ev = {.events = events, .data.u64 = data};
  (void)epoll_ctl(t->epfd, op, fd, &ev);
}

static void busy_update(fold__tcp_tp *t) { t->lazy_busy = t->lazy->nin + t->lazy->ndial; }

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
  if (p->txq_head || p->ctl_head)
    fold__tcp_mark_dirty(t, p);
}

/* p's listener refused us: p's process ended or left the communicator. */
static void dial_dead(fold__tcp_tp *t, fold__tcp_peer *p, int err) {
  fold_comm *c = t->base.comm;
  dial_free(t, p);
  p->gone = 1;
  char buf[64], why[160];
  snprintf(why, sizeof why, "connecting to it: %s: its process ended or left the communicator",
           strerror_r(err, buf, sizeof buf));
  fold__peer_lost(c, p->rank, p->txq_head != NULL, why);
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
  if (t->lazy == NULL || t->down || p->fd >= 0 || p->gone || p->dial || !t->lazy->use[p->rank])
    return;
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
      conn_up(t, p, fd, "dialed");
    } else if (n == 1 && b == 'N') {
      /* p's own attempt wins: it is on its way (else we dial again) */
      dial_retry(t, d, D_WAITIN, TCP_WAITIN_NS);
    } else {
      dial_retry(t, d, D_PAUSE, d->pause);
    }
  }
}

static void in_drop(fold__tcp_tp *t, int i) {
  tcp_in *h = &t->lazy->in[i];
  (void)epoll_ctl(t->epfd, EPOLL_CTL_DEL, h->fd, NULL);
  close(h->fd);
  h->fd = -1;
  t->lazy->nin--;
  busy_update(t);
}

/* Accepted connection i proved itself as `claim`: take it, or refuse it
 * ('N', or a plain close for what is not a peer of ours). */
static void in_decide(fold__tcp_tp *t, int i) {
  fold_comm *c = t->base.comm;
  tcp_in *h = &t->lazy->in[i];
  int q = -1;
  const char *bad = NULL;
  if ((q = fold__tcp_parse_claim(h->a.claim, c->size)) < 0 || q == c->rank)
    bad = "claim is not a peer rank of this communicator";
  else if (!t->lazy->use[q])
    bad = "that rank does not use tcp with this rank";
  else if (t->peers[q].gone)
    bad = "that rank was lost already";
  if (bad) {
    FOLD__WARN(c, "tcp: rank %d: refused a data connection from %s claiming \"%s\": %s", c->rank, h->from,
               h->a.claim, bad);
    in_drop(t, i);
    return;
  }
  fold__tcp_peer *p = &t->peers[q];
  fold__tcp_dial *d = p->dial;
  /* the higher rank's attempt wins a simultaneous connect */
  int refuse = p->fd >= 0 || (d && d->stage != D_WAITIN && c->rank > q);
  char yes = refuse ? 'N' : 'Y';
  ssize_t n = send(h->fd, &yes, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (refuse || n != 1) {
    FOLD__TRACE(c, "tcp: rank %d: %s rank %d's connection", c->rank, refuse ? "refused (ours wins)" : "lost",
                q);
    in_drop(t, i);
    return;
  }
  int fd = h->fd;
  (void)epoll_ctl(t->epfd, EPOLL_CTL_DEL, fd, NULL);
  h->fd = -1;
  t->lazy->nin--;
  busy_update(t);
  conn_up(t, p, fd, "accepted");
}

static void in_step(fold__tcp_tp *t, int i, int64_t now) {
  fold_comm *c = t->base.comm;
  tcp_in *h = &t->lazy->in[i];
  int rc = fold__auth_srv_step(&h->a, h->fd, &t->lazy->key, now);
  if (rc == 0) {
    ev_set(t, h->fd, EPOLL_CTL_MOD, (uint32_t)(fold__auth_srv_events(&h->a) == POLLOUT ? EPOLLOUT : EPOLLIN),
           ev_data(EV_IN, i));
    return;
  }
  if (rc < 0) { /* a peer that closed mid-handshake (it failed, or gave up on us) is no stranger */
    if (rc == FOLD_EPEER)
      FOLD__TRACE(c, "tcp: rank %d: a data connection from %s closed before its proof", c->rank, h->from);
    else
      FOLD__WARN(c, "tcp: rank %d: refused a data connection from %s (%s)", c->rank, h->from, fold_strerror(rc));
    in_drop(t, i);
    return;
  }
  in_decide(t, i);
}

/* Accept every waiting connection and start its proof (as at init: at most
 * TCP_MAX_HANDSHAKES at once; when full, the oldest goes once it had its
 * chance, else the newcomer). */
static void accept_all(fold__tcp_tp *t) {
  fold_comm *c = t->base.comm;
  fold__tcp_lazy *z = t->lazy;
  for (int k = 0; k < 4 * TCP_MAX_HANDSHAKES; k++) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int fd = accept4(z->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      return;
    int64_t now = fold__now(c);
    if (z->nin == TCP_MAX_HANDSHAKES) {
      int old = 0;
      for (int i = 1; i < TCP_MAX_HANDSHAKES; i++)
        if (z->in[i].since < z->in[old].since)
          old = i;
      if (now - z->in[old].since < TCP_EVICT_AGE_NS) {
        close(fd);
        continue;
      }
      FOLD__WARN(c, "tcp: rank %d: too many unproven data connections; dropping the oldest, from %s", c->rank,
                 z->in[old].from);
      in_drop(t, old);
    }
    int i = 0;
    while (z->in[i].fd >= 0)
      i++;
    tcp_in *h = &z->in[i];
    if (fold__auth_srv_start(&h->a, now + TCP_HANDSHAKE_NS) < 0) {
      close(fd);
      continue;
    }
    h->fd = fd;
    h->since = now;
    if (fold__tcp_addr_format((struct sockaddr *)&ss, h->from, sizeof h->from) < 0)
      snprintf(h->from, sizeof h->from, "?");
    z->nin++;
    busy_update(t);
    ev_set(t, fd, EPOLL_CTL_ADD, EPOLLOUT, ev_data(EV_IN, i));
    in_step(t, i, now);
  }
}

void fold__tcp_lazy_event(fold__tcp_tp *t, uint64_t data, uint32_t events) {
  (void)events;
  fold__tcp_lazy *z = t->lazy;
  uint32_t id = FOLD__TCP_EV_ID(data);
  if (z == NULL || t->down)
    return;
  switch (FOLD__TCP_EV_KIND(data)) {
  case EV_LISTEN:
    accept_all(t);
    break;
  case EV_IN:
    if (id < TCP_MAX_HANDSHAKES && z->in[id].fd >= 0)
      in_step(t, (int)id, fold__now(t->base.comm));
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
  for (int i = 0; i < TCP_MAX_HANDSHAKES && z->nin > 0; i++)
    if (z->in[i].fd >= 0 && now > z->in[i].a.deadline_ns)
      in_step(t, i, now); /* fails it: past its deadline */
  for (int q = 0; q < c->size && z->ndial > 0 && !t->down; q++) {
    fold__tcp_dial *d = t->peers[q].dial;
    if (d == NULL || now < d->until)
      continue;
    if (d->stage == D_CONNECT) { /* no answer to our SYN: a fresh one now */
      d->attempt = d->attempt * 2 > TCP_ATTEMPT_MAX_NS ? TCP_ATTEMPT_MAX_NS : d->attempt * 2;
      dial_close(t, d);
      dial_start(t, &t->peers[q]);
    } else if (d->stage == D_PAUSE || d->stage == D_WAITIN) {
      d->pause = d->pause * 2 > TCP_PAUSE_MAX_NS ? TCP_PAUSE_MAX_NS : d->pause * 2;
      dial_start(t, &t->peers[q]);
    }
  }
}

void fold__tcp_lazy_free(fold__tcp_tp *t) {
  fold__tcp_lazy *z = t->lazy;
  if (z == NULL)
    return;
  for (int q = 0; t->peers && q < t->base.comm->size; q++)
    dial_free(t, &t->peers[q]);
  for (int i = 0; i < TCP_MAX_HANDSHAKES; i++)
    if (z->in[i].fd >= 0)
      in_drop(t, i);
  if (z->lfd >= 0)
    close(z->lfd); /* peers that dial us now are refused: they learn we are gone */
  free(z->addr);
  free(z->alen);
  free(z->use);
  free(z);
  t->lazy = NULL;
  t->lazy_busy = 0;
}

int fold__tcp_lazy_create(fold_comm *c, int lfd, const fold__card *cards, const uint8_t *use,
                          const fold__auth_key *key, fold__tp **out) {
  *out = NULL;
  int size = c->size;
  fold__tcp_lazy *z = calloc(1, sizeof *z);
  if (z) {
    z->lfd = -1;
    z->addr = calloc((size_t)size, sizeof *z->addr);
    z->alen = calloc((size_t)size, sizeof *z->alen);
    z->use = calloc((size_t)size, 1);
  }
  if (z == NULL || !z->addr || !z->alen || !z->use) {
    if (z) {
      free(z->addr);
      free(z->alen);
      free(z->use);
      free(z);
    }
    close(lfd);
    return fold__error(c, FOLD_ENOMEM, "out of memory");
  }
  for (int i = 0; i < TCP_MAX_HANDSHAKES; i++)
    z->in[i].fd = -1;
  z->lfd = lfd;
  z->key = *key;
  snprintf(z->claim, sizeof z->claim, "data rank %d", c->rank);
  int rc = 0;
  for (int p = 0; p < size && rc == 0; p++) {
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
    close(lfd);
    free(z->addr);
    free(z->alen);
    free(z->use);
    free(z);
    return rc;
  }
  fold__tcp_tp *t = (fold__tcp_tp *)tp;
  t->lazy = z;
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = ev_data(EV_LISTEN, 0)};
  if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, lfd, &ev) < 0) {
    rc = fold__error(c, FOLD_ESYS, "tcp: epoll_ctl on the listener: %s", strerror(errno));
    tp->ops->destroy(tp);
    return rc;
  }
  *out = tp;
  return 0;
}
