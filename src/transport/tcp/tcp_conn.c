/* tcp_conn.c — TCP connection setup: the data listener, authenticated connects and accepts, strangers refused. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/auth.h"
#include "transport/tcp/tcp.h"
#include "transport/tcp/tcp_admit.h"

#define TCP_SLICE_MS 100               /* longest sleep between checks of the deadline and stop flag */
#define TCP_BACKOFF_MAX_NS 100000000LL /* connect retry pause cap (the peer is not listening yet) */
/* One connect attempt's first bound, doubled per attempt that ran out, up
 * to the cap. A listener whose accept queue is full (a flood of strangers)
 * drops our SYN, and the kernel sends it again only after 1, 2, 4, 8 s: a
 * rendezvous under tcp_flood's flood once took 15.6 s waiting on that
 * schedule (1.2-2.2 s otherwise). A fresh socket sends a fresh SYN now. */
#define TCP_ATTEMPT_NS 250000000LL
#define TCP_ATTEMPT_MAX_NS 4000000000LL
#define TCP_SOCKBUF (4 << 20)          /* socket buffers: a few round trips of a fast link */

/* Phase-1 state: the listener, until phase 2 closes it. */
typedef struct tcp_boot {
  int lfd;
} tcp_boot;

/* The connector thread's job: connect and prove ourselves to every lower
 * rank, while the calling thread serves the higher ranks' connections. Two
 * threads, because fold__auth_client blocks: without them a rank waiting in
 * its own client proof could not answer the ranks above it, and the setup
 * would run as a chain of round trips through all ranks. */
typedef struct tcp_out {
  fold_comm *c;                  /* read-only here: rank and log level */
  const fold__auth_key *key;
  int64_t deadline;              /* CLOCK_MONOTONIC ns */
  int n;
  int *ranks;                    /* the lower ranks to connect to */
  struct sockaddr_storage *addr; /* [comm size] */
  socklen_t *alen;               /* [comm size] */
  int *fds;                      /* results, [comm size]; this thread writes only ranks[] entries */
  char (*why)[80];               /* last failure per rank, for the timeout message */
  const fold__card *card;        /* [comm size]: the peers' cards, for messages */
  atomic_int stop;
  int efd;                       /* eventfd: written once the thread is done */
  int err;                       /* fatal error (not a timeout), with msg */
  char msg[320];
} tcp_out;

static int ms_until(int64_t deadline, int64_t now) {
  int64_t ms = (deadline - now + 999999) / 1000000;
  if (ms < 0)
    ms = 0;
  return ms > TCP_SLICE_MS ? TCP_SLICE_MS : (int)ms;
}

int fold__tcp_sockbuf_size(void) {
  /* Setting SO_RCVBUF switches kernel autotuning off, so ask only when the
   * kernel grants the full size; a clamped small buffer would be slower. */
  static atomic_int cached = -1;
  int v = atomic_load_explicit(&cached, memory_order_relaxed);
  if (v >= 0)
    return v;
  v = TCP_SOCKBUF;
  const char *files[2] = {"/proc/sys/net/core/rmem_max", "/proc/sys/net/core/wmem_max"};
  for (int i = 0; i < 2; i++) {
    FILE *f = fopen(files[i], "r");
    long max = 0;
    if (f == NULL || fscanf(f, "%ld", &max) != 1 || max < TCP_SOCKBUF)
      v = 0;
    if (f)
      fclose(f);
  }
  atomic_store_explicit(&cached, v, memory_order_relaxed);
  return v;
}

int fold__tcp_sock_tune(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
    return FOLD_ESYS;
  int one = 1, buf = fold__tcp_sockbuf_size();
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (buf > 0) {
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  }
  return 0;
}

int fold__tcp_prepare(fold_comm *c, const char *store_host, fold__card *card, void **state) {
  *state = NULL;
  card->tcp[0] = '\0';
  struct sockaddr_storage ss;
  char ifname[IF_NAMESIZE + 1];
  int rc = fold__netif_choose(c, store_host, &ss, ifname);
  if (rc < 0)
    return rc;
  socklen_t sl;
  if (ss.ss_family == AF_INET) {
    ((struct sockaddr_in *)&ss)->sin_port = 0;
    sl = sizeof(struct sockaddr_in);
  } else {
    ((struct sockaddr_in6 *)&ss)->sin6_port = 0;
    sl = sizeof(struct sockaddr_in6);
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return fold__error(c, FOLD_ESYS, "socket: %s", strerror(errno));
  /* Buffer sizes set on the listener are inherited by accepted sockets
   * early enough to count for the TCP window scale. */
  fold__tcp_sock_tune(fd);
  const char *step = "bind";
  if (bind(fd, (struct sockaddr *)&ss, sl) == 0 && (step = "listen", listen(fd, SOMAXCONN) == 0) &&
      (step = "getsockname", getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)) {
    step = "format";
    if (fold__tcp_addr_format((struct sockaddr *)&ss, card->tcp, sizeof card->tcp) > 0) {
      tcp_boot *b = malloc(sizeof *b);
      if (b == NULL) {
        close(fd);
        card->tcp[0] = '\0';
        return fold__error(c, FOLD_ENOMEM, "out of memory");
      }
      b->lfd = fd;
      *state = b;
      FOLD__INFO(c, "tcp: data listener on %s (interface %s)", card->tcp, ifname);
      return 0;
    }
  }
  int err = errno;
  close(fd);
  card->tcp[0] = '\0';
  return fold__error(c, FOLD_ESYS, "tcp listener on interface %s: %s: %s", ifname, step, strerror(err));
}

void fold__tcp_abandon(void *state) {
  tcp_boot *b = state;
  if (b == NULL)
    return;
  if (b->lfd >= 0)
    close(b->lfd);
  free(b);
}

/* One non-blocking connect to o->addr[p], bounded by the deadline and by
 * `limit` ns. Returns the connected fd, or -1 with *err set. */
static int connect_once(tcp_out *o, int p, int64_t limit, int *err) {
  int fd = socket(o->addr[p].ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  fold__tcp_sock_tune(fd); /* before connect: buffer sizes shape the handshake */
  if (connect(fd, (struct sockaddr *)&o->addr[p], o->alen[p]) == 0)
    return fd;
  if (errno != EINPROGRESS) {
    *err = errno;
    close(fd);
    return -1;
  }
  int64_t until = fold__clock_mono(NULL) + limit;
  if (until > o->deadline)
    until = o->deadline;
  for (;;) {
    int64_t now = fold__clock_mono(NULL);
    if (now >= until || atomic_load(&o->stop)) {
      *err = ETIMEDOUT;
      close(fd);
      return -1;
    }
    struct pollfd pf = {.fd = fd, .events = POLLOUT};
    int n = poll(&pf, 1, ms_until(until, now));
    if (n < 0 && errno != EINTR) {
      *err = errno;
      close(fd);
      return -1;
    }
    if (n > 0)
      break;
  }
  int soerr = 0;
  socklen_t sl = sizeof soerr;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
    soerr = errno;
  if (soerr) {
    *err = soerr;
    close(fd);
    return -1;
  }
  return fd;
}

/* Prove ourselves on connected fd: 0, or FOLD_EAUTH, FOLD_EPEER (the
 * server dropped us: retry), FOLD_ETIMEDOUT (deadline or stop), FOLD_ESYS.
 * No bound of its own: until the server greets us, the connection waits
 * in its accept queue, and a flood of strangers ahead of us drains at the
 * server's pace (about 2 s on a loaded host). Giving up after a bound and
 * connecting again would put us at the back of that queue each time
 * (tcp_flood's rendezvous once took 16.8 s, and 19.6 s under ASan, with
 * bounds of 2, 4, 8 s), so the connection keeps its place until the
 * deadline; once greeted, the server's own 2 s handshake limit bounds the
 * rest (it closes us: FOLD_EPEER). */
static int handshake(tcp_out *o, int fd, const char *claim) {
  fold__auth_cli a;
  int rc = fold__auth_cli_start(&a, claim);
  while (rc == 0) {
    rc = fold__auth_cli_step(&a, fd, o->key);
    if (rc != 0)
      break;
    int64_t now = fold__clock_mono(NULL);
    if (now >= o->deadline || atomic_load(&o->stop))
      return FOLD_ETIMEDOUT;
    struct pollfd pf = {.fd = fd, .events = (short)fold__auth_cli_events(&a)};
    if (poll(&pf, 1, ms_until(o->deadline, now)) < 0 && errno != EINTR)
      return FOLD_ESYS;
  }
  return rc == 1 ? 0 : rc;
}

static void *out_main(void *arg) {
  tcp_out *o = arg;
  char claim[FOLD__AUTH_CLAIM_MAX + 1];
  snprintf(claim, sizeof claim, "data rank %d", o->c->rank);
  for (int i = 0; i < o->n && !o->err; i++) {
    int p = o->ranks[i];
    int64_t pause = 1000000, attempt = TCP_ATTEMPT_NS;
    /* Retry until the deadline: the peer may not be listening yet
     * (ECONNREFUSED), or a handshake may have been cut short. */
    for (;;) {
      int64_t now = fold__clock_mono(NULL);
      if (now >= o->deadline || atomic_load(&o->stop))
        goto done;
      int err = 0;
      int fd = connect_once(o, p, attempt, &err);
      if (fd < 0 && err == ETIMEDOUT)
        attempt = attempt * 2 > TCP_ATTEMPT_MAX_NS ? TCP_ATTEMPT_MAX_NS : attempt * 2;
      if (fd >= 0) {
        int rc = handshake(o, fd, claim);
        if (rc == 0) {
          o->fds[p] = fd;
          FOLD__TRACE(o->c, "tcp: connected to rank %d", p);
          break;
        }
        close(fd);
        if (rc == FOLD_EAUTH) {
          o->err = FOLD_EAUTH;
          snprintf(o->msg, sizeof o->msg,
                   "peer rank %d at %s failed the authentication of the data connection (different "
                   "FOLD_JOB_TOKEN, or not a rank of this job at that address)",
                   p, o->card[p].tcp);
          goto done;
        }
        snprintf(o->why[p], sizeof o->why[p], "authentication: %s", fold_strerror(rc));
      } else {
        char buf[64];
        snprintf(o->why[p], sizeof o->why[p], "%s", strerror_r(err, buf, sizeof buf));
      }
      FOLD__TRACE(o->c, "tcp: connect to rank %d: %s; retrying", p, o->why[p]);
      int64_t left = o->deadline - fold__clock_mono(NULL);
      fold__sleep_ns(pause < left ? pause : left);
      pause = pause * 2 > TCP_BACKOFF_MAX_NS ? TCP_BACKOFF_MAX_NS : pause * 2;
    }
  }
done:;
  uint64_t one = 1;
  ssize_t w = write(o->efd, &one, sizeof one);
  (void)w;
  return NULL;
}

/* "data rank <r>" with r a plain decimal in [0, size); else -1. */
int fold__tcp_parse_claim(const char *s, int size) {
  static const char pre[] = "data rank ";
  if (strncmp(s, pre, sizeof pre - 1) != 0)
    return -1;
  s += sizeof pre - 1;
  if (*s == '\0' || (s[0] == '0' && s[1] != '\0'))
    return -1;
  long v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return -1;
    v = v * 10 + (*s - '0');
    if (v >= size)
      return -1;
  }
  return (int)v;
}

/* Advance the proof in place i; returns 1 if it left the table (proven or
 * refused). */
static int hs_step(fold_comm *c, fold__tcp_admit *t, int i, const fold__auth_key *key, const uint8_t *use, int *fds,
                   int *got_in) {
  fold__tcp_unproven *h = &t->in[i];
  int rc = fold__auth_srv_step(&h->a, h->fd, key, fold__clock_mono(NULL));
  if (rc == 0)
    return 0;
  if (rc < 0) {
    FOLD__WARN(c, "tcp: rank %d: refused a data connection from %s (%s)", c->rank, h->from, fold_strerror(rc));
    fold__tcp_admit_drop(t, i);
    return 1;
  }
  int p = fold__tcp_parse_claim(h->a.claim, c->size);
  const char *bad = NULL;
  if (p < 0)
    bad = "claim is not a rank of this communicator";
  else if (p <= c->rank)
    bad = "lower ranks are connected to, they do not connect";
  else if (!use[p])
    bad = "that rank does not use tcp with this rank";
  else if (fds[p] >= 0)
    bad = "that rank is connected already";
  if (bad) {
    FOLD__WARN(c, "tcp: rank %d: refused a data connection from %s claiming \"%s\": %s", c->rank, h->from,
               h->a.claim, bad);
    fold__tcp_admit_drop(t, i);
    return 1;
  }
  fds[p] = h->fd;
  (*got_in)++;
  FOLD__TRACE(c, "tcp: rank %d connected from %s", p, h->from);
  fold__tcp_admit_take(t, i);
  return 1;
}

/* Accept the waiting connections, a burst at most, each proof started at
 * once (HELLO), by the table's policy (tcp_admit.h). */
static void accept_all(fold_comm *c, int lfd, fold__tcp_admit *t, int64_t deadline, const fold__auth_key *key,
                       const uint8_t *use, int *fds, int *got_in) {
  for (int k = 0; k < fold__tcp_admit_burst(t); k++) {
    int i = fold__tcp_admit_accept(c, t, lfd, deadline);
    if (i == -1)
      return;
    if (i >= 0)
      hs_step(c, t, i, key, use, fds, got_in);
  }
}

/* The FOLD_ETIMEDOUT message naming the ranks not connected. */
static int timeout_error(fold_comm *c, const uint8_t *use, const int *fds, const tcp_out *o,
                         const fold__card *cards) {
  char list[400] = "";
  size_t off = 0;
  int shown = 0, missing = 0;
  for (int p = 0; p < c->size; p++) {
    if (p == c->rank || !use[p] || fds[p] >= 0)
      continue;
    missing++;
    if (shown == 6 || off >= sizeof list)
      continue;
    int w;
    if (p < c->rank)
      w = snprintf(list + off, sizeof list - off, "%srank %d (at %s: %s)", shown ? ", " : "", p, cards[p].tcp,
                   o && o->why[p][0] ? o->why[p] : "no answer");
    else
      w = snprintf(list + off, sizeof list - off, "%srank %d (never connected to us)", shown ? ", " : "", p);
    if (w > 0)
      off += (size_t)w;
    shown++;
  }
  return fold__error(c, FOLD_ETIMEDOUT, "tcp connections not made within the deadline; %d not connected: %s%s",
                     missing, list, missing > shown ? ", ..." : "");
}

int fold__tcp_connect(fold_comm *c, void *state, const fold__card *cards, const uint8_t *use,
                      const struct fold__auth_key *key, int64_t deadline, fold__tp **out) {
  *out = NULL;
  tcp_boot *b = state;
  if (fold__param_u64(FOLD__P_TCP_CONNECT) == 0 && b && b->lfd >= 0) { /* lazy: index 0 (tcp_lazy.c) */
    int lfd = b->lfd;
    b->lfd = -1;
    fold__tcp_abandon(b);
    return fold__tcp_lazy_create(c, lfd, cards, use, key, out);
  }
  int size = c->size, rc = 0, n_in = 0, got_in = 0, started = 0;
  fold__tcp_admit t = {0};
  pthread_t th;
  tcp_out o;
  memset(&o, 0, sizeof o);
  o.efd = -1;
  int *fds = malloc((size_t)size * sizeof *fds);
  o.ranks = malloc((size_t)size * sizeof *o.ranks);
  o.addr = calloc((size_t)size, sizeof *o.addr);
  o.alen = calloc((size_t)size, sizeof *o.alen);
  o.why = calloc((size_t)size, sizeof *o.why);
  if (!fds || !o.ranks || !o.addr || !o.alen || !o.why || fold__tcp_admit_init(c, &t) < 0) {
    rc = fold__error(c, FOLD_ENOMEM, "out of memory");
    goto out;
  }
  for (int p = 0; p < size; p++)
    fds[p] = -1;
  /* The higher rank connects to the lower one: exactly one connection per
   * pair, and no simultaneous-open races. */
  for (int p = 0; p < size; p++) {
    if (p == c->rank || !use[p])
      continue;
    if (p > c->rank) {
      n_in++;
      continue;
    }
    if (fold__tcp_addr_parse(cards[p].tcp, &o.addr[p], &o.alen[p]) < 0) {
      rc = fold__error(c, FOLD_EINVAL, "peer rank %d published a bad tcp address \"%s\"", p, cards[p].tcp);
      goto out;
    }
    o.ranks[o.n++] = p;
  }
  if (n_in == 0 && b && b->lfd >= 0) {
    close(b->lfd);
    b->lfd = -1;
  }
  if (n_in > 0 && (b == NULL || b->lfd < 0)) {
    rc = fold__error(c, FOLD_EINTERNAL, "tcp connect without a listener");
    goto out;
  }
  o.c = c;
  o.card = cards;
  o.key = key;
  o.deadline = deadline;
  o.fds = fds;
  atomic_init(&o.stop, 0);
  if (o.n > 0) {
    o.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (o.efd < 0 || pthread_create(&th, NULL, out_main, &o) != 0) {
      rc = fold__error(c, FOLD_ESYS, "cannot start the tcp connector thread");
      goto out;
    }
    started = 1;
  }
  int out_done = o.n == 0;
  while (got_in < n_in || !out_done) {
    int64_t now = fold__clock_mono(NULL);
    if (now >= deadline)
      break;
    struct pollfd *pf = t.pf;
    int np = 0, ilisten = -1, iev = -1;
    if (!out_done) {
      iev = np;
      pf[np++] = (struct pollfd){.fd = o.efd, .events = POLLIN};
    }
    if (b && b->lfd >= 0) {
      ilisten = np;
      pf[np++] = (struct pollfd){.fd = b->lfd, .events = POLLIN};
    }
    int ihs = np;
    np = fold__tcp_admit_pollset(&t, np);
    int n = poll(pf, (nfds_t)np, ms_until(deadline, now));
    if (n < 0 && errno != EINTR) {
      rc = fold__error(c, FOLD_ESYS, "poll: %s", strerror(errno));
      goto out;
    }
    if (iev >= 0 && (pf[iev].revents & POLLIN)) {
      /* The connector is done: join it before reading what it wrote. */
      out_done = 1;
      pthread_join(th, NULL);
      started = 0;
      if (o.err) {
        rc = fold__error(c, o.err, "%s", o.msg);
        goto out;
      }
    }
    /* Step the handshakes that are ready or past their deadline. Going
     * down keeps pf[] valid: a removal moves only the last entry, which was
     * stepped already, into the freed slot. */
    now = fold__clock_mono(NULL);
    for (int i = t.n - 1; i >= 0; i--)
      if (pf[ihs + i].revents || now >= t.in[i].a.deadline_ns)
        hs_step(c, &t, i, key, use, fds, &got_in);
    if (ilisten >= 0 && (pf[ilisten].revents & POLLIN))
      accept_all(c, b->lfd, &t, deadline, key, use, fds, &got_in);
    if (got_in == n_in && b && b->lfd >= 0) {
      /* Everyone we expect is here: stop listening, and drop whatever
       * unproven connections are left (strangers). */
      close(b->lfd);
      b->lfd = -1;
      while (t.n > 0) {
        FOLD__WARN(c, "tcp: rank %d: closing an unproven data connection from %s", c->rank, t.in[0].from);
        fold__tcp_admit_drop(&t, 0);
      }
    }
  }
  if (started) {
    atomic_store(&o.stop, 1);
    pthread_join(th, NULL);
    started = 0;
    if (o.err) {
      rc = fold__error(c, o.err, "%s", o.msg);
      goto out;
    }
  }
  for (int p = 0; p < size; p++)
    if (p != c->rank && use[p] && fds[p] < 0) {
      rc = timeout_error(c, use, fds, &o, cards);
      goto out;
    }
  rc = fold__tcp_tp_create(c, fds, out); /* takes the fds */
out:
  if (started) {
    atomic_store(&o.stop, 1);
    pthread_join(th, NULL);
  }
  fold__tcp_admit_free(&t);
  if (fds && rc < 0)
    for (int p = 0; p < size; p++)
      if (fds[p] >= 0)
        close(fds[p]);
  if (o.efd >= 0)
    close(o.efd);
  fold__tcp_abandon(b);
  free(fds);
  free(o.ranks);
  free(o.addr);
  free(o.alen);
  free(o.why);
  return rc;
}
