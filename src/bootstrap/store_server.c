/* store_server.c — the tcp rendezvous store's server: one epoll thread that authenticates and serves its clients. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "bootstrap/store_srv.h"

/* Tags for the two fds that are not connections. */
static char tag_listen, tag_wake;

static void set_mask(fold__store_srv *s, conn *c, uint32_t mask) {
  if (mask == c->mask)
    return;
  struct epoll_event ev = {.events = mask, .data.ptr = c};
  epoll_ctl(s->efd, EPOLL_CTL_MOD, c->fd, &ev);
  c->mask = mask;
}

/* Close c now; free it at the end of the loop turn, because events for it
 * may still sit in the batch epoll_wait returned (fd < 0 marks it dead). */
static void conn_close(fold__store_srv *s, conn *c) {
  epoll_ctl(s->efd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  c->fd = -1;
  if (c->state == C_AUTH) {
    s->npending--;
    fold__list_unlink(&c->pq);
  } else
    atomic_store(&s->clients, --s->nready);
  if (c->round[0] && !atomic_load(&s->stop))
    fold__srv_round_gone(s, c);
  /* loops over s->conns that may close the conn they are at read the
   * next one first (FOLD__LIST_FOR_EACH_SAFE), and close no other */
  fold__list_unlink(&c->link);
  fold__list_push_back(&s->dead, &c->link);
}

static void free_dead(fold__store_srv *s) {
  for (fold__list *n; (n = fold__list_pop_front(&s->dead)) != NULL;) {
    conn *c = FOLD__LIST_ENTRY(n, conn, link);
    free(c->in);
    free(c->out);
    free(c);
  }
}

static void conn_reject(fold__store_srv *s, conn *c, const char *why) {
  atomic_fetch_add(&s->rejected, 1);
  SWARN(s, "store: closing connection from %s%s%s: %s", c->peer, c->auth.claim[0] ? " claiming " : "",
        c->auth.claim, why);
  conn_close(s, c);
}

/* Send queued output; 0 ok (maybe partial), -1 connection gone. */
static int flush_out(conn *c) {
  while (c->out_off < c->out_len) {
    ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      c->out_off += (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return 0;
    return -1;
  }
  c->out_off = c->out_len = 0;
  return 0;
}

/* Parse and apply buffered requests while the client is not parked and its
 * output is not backed up; then set the epoll interest. 0 or -1 (closed). */
static int conn_run(fold__store_srv *s, conn *c) {
  c->runnable = 0;
  for (;;) {
    size_t off = 0;
    const char *why = NULL;
    while (c->state == C_READY && c->out_len - c->out_off < SRV_OUT_HIGH) {
      fold__store_frame f;
      int n = fold__store_parse_frame(c->in + off, c->in_len - off, 0, &f);
      if (n == 0)
        break;
      if (n < 0) {
        why = f.why;
        break;
      }
      if (fold__srv_apply(s, c, &f) < 0) {
        why = "out of memory";
        break;
      }
      off += (size_t)n;
    }
    if (off > 0) {
      memmove(c->in, c->in + off, c->in_len - off);
      c->in_len -= off;
    }
    if (why) {
      conn_reject(s, c, why);
      return -1;
    }
    if (flush_out(c) < 0) {
      conn_close(s, c);
      return -1;
    }
    /* Stopped only by the output mark, and the output just drained? */
    fold__store_frame f;
    if (!(c->state == C_READY && c->out_len - c->out_off < SRV_OUT_HIGH &&
          fold__store_parse_frame(c->in, c->in_len, 0, &f) > 0))
      break;
  }
  uint32_t mask = 0;
  if (c->state == C_READY && c->out_len - c->out_off < SRV_OUT_HIGH && c->in_len < FOLD__STORE_FRAME_MAX)
    mask |= EPOLLIN;
  if (c->out_off < c->out_len)
    mask |= EPOLLOUT;
  /* a parked client reads nothing until its answer: watch for it going
   * away meanwhile (a rank killed in the rendezvous, see round_gone) */
  if (c->state == C_PARKED)
    mask |= EPOLLRDHUP;
  set_mask(s, c, mask);
  return 0;
}

static void conn_readable(fold__store_srv *s, conn *c) {
  while (c->in_len < FOLD__STORE_FRAME_MAX) {
    ssize_t r = recv(c->fd, c->in + c->in_len, FOLD__STORE_FRAME_MAX - c->in_len, MSG_DONTWAIT);
    if (r > 0) {
      c->in_len += (size_t)r;
      continue;
    }
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      break;
    SINFO(s, "store: client %s (%s) left", c->peer, c->auth.claim);
    conn_close(s, c);
    return;
  }
  conn_run(s, c);
}

static void conn_auth_step(fold__store_srv *s, conn *c, int64_t now) {
  int rc = fold__auth_srv_step(&c->auth, c->fd, &s->cfg.key, now);
  if (rc == 0) {
    set_mask(s, c, (uint32_t)fold__auth_srv_events(&c->auth));
    return;
  }
  if (rc < 0) {
    conn_reject(s, c, rc == FOLD_ETIMEDOUT ? "handshake timed out"
                      : rc == FOLD_EPEER   ? "closed during the handshake"
                      : rc == FOLD_EAUTH   ? "authentication failed (wrong job token, or not a fold client)"
                                           : "handshake I/O error");
    return;
  }
  if (strncmp(c->auth.claim, "store ", 6) != 0) {
    conn_reject(s, c, "claim is not a store client");
    return;
  }
  if (s->nready >= SRV_MAX_CONNS) {
    conn_reject(s, c, "too many store clients");
    return;
  }
  c->in = malloc(FOLD__STORE_FRAME_MAX);
  if (c->in == NULL) {
    conn_reject(s, c, "out of memory");
    return;
  }
  s->npending--;
  fold__list_unlink(&c->pq);
  atomic_store(&s->clients, ++s->nready);
  c->state = C_READY;
  SINFO(s, "store: %s authenticated from %s", c->auth.claim, c->peer);
  conn_readable(s, c); /* the client may have sent a request already */
}

static void srv_accept(fold__store_srv *s) {
  for (;;) {
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    int fd = accept4(s->lfd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        SWARN(s, "store: accept failed: %s", strerror(errno));
      return;
    }
    char addr[64] = "?";
    int port = 0;
    if (sa.ss_family == AF_INET) {
      struct sockaddr_in *a = (struct sockaddr_in *)&sa;
      inet_ntop(AF_INET, &a->sin_addr, addr, sizeof addr);
      port = ntohs(a->sin_port);
    } else if (sa.ss_family == AF_INET6) {
      struct sockaddr_in6 *a = (struct sockaddr_in6 *)&sa;
      inet_ntop(AF_INET6, &a->sin6_addr, addr, sizeof addr);
      port = ntohs(a->sin6_port);
    }
    int64_t now = fold__clock_mono(NULL);
    /* Table full: evict the oldest pending handshake rather than refuse the
     * newcomer, so that strangers cannot lock real clients out; a real
     * client that is evicted retries. The oldest first gets one last step,
     * in case its proof has already arrived. */
    while (s->npending >= SRV_MAX_PENDING && !fold__list_empty(&s->pending)) {
      conn *old = FOLD__LIST_FIRST(&s->pending, conn, pq);
      conn_auth_step(s, old, now);
      if (old->fd >= 0 && old->state == C_AUTH)
        conn_reject(s, old, "evicted: too many unauthenticated connections");
    }
    conn *c = calloc(1, sizeof *c);
    if (c == NULL || fold__auth_srv_start(&c->auth, now + s->cfg.auth_timeout_ns) < 0) {
      free(c);
      close(fd);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->fd = fd;
    c->state = C_AUTH;
    snprintf(c->peer, sizeof c->peer, "%s:%d", addr, port);
    c->mask = (uint32_t)fold__auth_srv_events(&c->auth);
    struct epoll_event ev = {.events = c->mask, .data.ptr = c};
    if (epoll_ctl(s->efd, EPOLL_CTL_ADD, fd, &ev) < 0) {
      free(c);
      close(fd);
      continue;
    }
    fold__list_push_front(&s->conns, &c->link);
    fold__list_push_back(&s->pending, &c->pq);
    s->npending++;
    conn_auth_step(s, c, now);
  }
}

/* Handshake deadlines and parked GETs that ran out; returns ms to the next. */
static int srv_timers(fold__store_srv *s) {
  int64_t now = fold__clock_mono(NULL), next = now + 1000000000;
  FOLD__LIST_FOR_EACH_SAFE(conn, c, &s->conns, link) {
    if (c->state == C_AUTH) {
      if (now > c->auth.deadline_ns)
        conn_auth_step(s, c, now);
      else if (c->auth.deadline_ns < next)
        next = c->auth.deadline_ns;
    } else if (c->state == C_PARKED) {
      if (now >= c->park_deadline) {
        c->state = C_READY;
        if (fold__srv_reply(c, FOLD__ST_NOTFOUND, NULL, 0) < 0) {
          conn_close(s, c);
          continue;
        }
        conn_run(s, c);
      } else if (c->park_deadline < next) {
        next = c->park_deadline;
      }
    }
  }
  int64_t ms = (next - now + 999999) / 1000000;
  return ms < 1 ? 1 : (int)ms;
}

static void *srv_main(void *arg) {
  fold__store_srv *s = arg;
  struct epoll_event evs[64];
  while (!atomic_load(&s->stop)) {
    int timeout = srv_timers(s);
    int n = epoll_wait(s->efd, evs, 64, timeout);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      SWARN(s, "store: epoll_wait failed: %s; server stops", strerror(errno));
      break;
    }
    int64_t now = fold__clock_mono(NULL);
    for (int i = 0; i < n; i++) {
      void *p = evs[i].data.ptr;
      if (p == &tag_wake)
        continue;
      if (p == &tag_listen) {
        srv_accept(s);
        continue;
      }
      conn *c = p;
      if (c->fd < 0)
        continue; /* closed earlier in this batch */
      if (c->state == C_AUTH) {
        conn_auth_step(s, c, now);
        continue;
      }
      if (((evs[i].events & (EPOLLERR | EPOLLHUP)) && !(evs[i].events & EPOLLIN)) ||
          ((evs[i].events & EPOLLRDHUP) && c->state == C_PARKED)) {
        conn_close(s, c);
        continue;
      }
      if (evs[i].events & EPOLLOUT) {
        if (flush_out(c) < 0) {
          conn_close(s, c);
          continue;
        }
        if (conn_run(s, c) < 0)
          continue;
      }
      if (evs[i].events & EPOLLIN)
        conn_readable(s, c);
    }
    /* Clients woken by a SET/ADD have a reply queued and maybe more
     * requests buffered. conn_run closes at most c itself (the loop has
     * read the next one already). */
    for (int again = 1; again;) {
      again = 0;
      FOLD__LIST_FOR_EACH_SAFE(conn, c, &s->conns, link) {
        if (c->runnable) {
          again = 1;
          conn_run(s, c);
        }
      }
    }
    free_dead(s);
  }
  return NULL;
}

int fold__store_srv_start(const fold__store_srv_cfg *cfg, fold__store_srv **out, int *port_out, int *os_errno) {
  *out = NULL;
  if (os_errno)
    *os_errno = 0;
  const char *host = cfg->host ? cfg->host : "127.0.0.1";
  char portstr[16];
  snprintf(portstr, sizeof portstr, "%d", cfg->port);
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
  struct addrinfo *res = NULL;
  int gai = getaddrinfo(host, portstr, &hints, &res);
  if (gai != 0)
    return fold__error(NULL, FOLD_EINVAL, "store server: cannot resolve \"%s\": %s", host, gai_strerror(gai));
  int lfd = -1, err = 0;
  for (struct addrinfo *ai = res; ai && lfd < 0; ai = ai->ai_next) {
    lfd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (lfd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(lfd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(lfd, 1024) < 0) {
      err = errno;
      close(lfd);
      lfd = -1;
    }
  }
  freeaddrinfo(res);
  if (lfd < 0) {
    if (os_errno) { /* the caller judges the errno (a port in use is often expected): no log line here */
      *os_errno = err;
      return fold__error_quiet(NULL, FOLD_ESYS, "store server: cannot listen on %s:%d: %s", host, cfg->port,
                               strerror(err));
    }
    return fold__error(NULL, FOLD_ESYS, "store server: cannot listen on %s:%d: %s", host, cfg->port, strerror(err));
  }
  fold__store_srv *s = calloc(1, sizeof *s);
  if (s == NULL) {
    close(lfd);
    return fold__error(NULL, FOLD_ENOMEM, "store server: out of memory");
  }
  fold__list_init(&s->conns);
  fold__list_init(&s->dead);
  fold__list_init(&s->pending);
  s->lfd = lfd;
  s->cfg = *cfg;
  s->cfg.host = NULL; /* not kept: the caller's string */
  if (s->cfg.auth_timeout_ns <= 0)
    s->cfg.auth_timeout_ns = SRV_AUTH_TIMEOUT_NS;
  s->log_level = fold__log_level_env();
  s->efd = epoll_create1(EPOLL_CLOEXEC);
  s->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &tag_listen};
  struct epoll_event wev = {.events = EPOLLIN, .data.ptr = &tag_wake};
  if (s->efd < 0 || s->wake < 0 || epoll_ctl(s->efd, EPOLL_CTL_ADD, lfd, &lev) < 0 ||
      epoll_ctl(s->efd, EPOLL_CTL_ADD, s->wake, &wev) < 0) {
    err = errno;
    goto fail;
  }
  struct sockaddr_storage sa;
  socklen_t sl = sizeof sa;
  int port = cfg->port;
  if (getsockname(lfd, (struct sockaddr *)&sa, &sl) == 0)
    port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                          : ((struct sockaddr_in *)&sa)->sin_port);
  if ((err = pthread_create(&s->thread, NULL, srv_main, s)) != 0)
    goto fail;
  if (port_out)
    *port_out = port;
  *out = s;
  return 0;
fail:
  if (s->efd >= 0)
    close(s->efd);
  if (s->wake >= 0)
    close(s->wake);
  close(lfd);
  free(s);
  return fold__error(NULL, FOLD_ESYS, "store server: setup failed: %s", strerror(err));
}

void fold__store_srv_stop(void *arg) {
  fold__store_srv *s = arg;
  if (s == NULL)
    return;
  /* A peer may still be finishing its last store call (e.g. the final
   * barrier) when rank 0 destroys its comm: give connected clients a bounded
   * time to leave before closing on them. */
  if (!s->lingered)
    fold__store_srv_linger(s, fold__clock_mono(NULL) + SRV_STOP_LINGER_NS);
  atomic_store(&s->stop, 1);
  uint64_t one = 1;
  if (write(s->wake, &one, sizeof one) < 0) {
    /* the eventfd cannot be full after one write; the 1 s timer still ends the loop */
  }
  pthread_join(s->thread, NULL);
  SINFO(s, "store: served %lld requests", s->requests);
  while (!fold__list_empty(&s->conns))
    conn_close(s, FOLD__LIST_FIRST(&s->conns, conn, link));
  free_dead(s);
  for (int b = 0; b < SRV_BUCKETS; b++)
    for (entry *e = s->buckets[b], *n; e; e = n) {
      n = e->next;
      free(e->val);
      free(e);
    }
  close(s->lfd);
  close(s->efd);
  close(s->wake);
  free(s);
  fold__log_flush();
}

void fold__store_srv_linger(fold__store_srv *s, int64_t deadline) {
  if (s == NULL)
    return;
  s->lingered = 1;
  while (atomic_load(&s->clients) > 0 && fold__clock_mono(NULL) < deadline)
    fold__sleep_ns(5 * 1000000LL);
}

long fold__store_srv_rejected(fold__store_srv *s) { return atomic_load(&s->rejected); }
