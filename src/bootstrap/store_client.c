/* store_client.c — the tcp rendezvous store's blocking client: connect, authenticate, one request/reply per call. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/fdio.h"
#include "bootstrap/store.h"
#include "core/internal.h"

#define CLI_IO_GRACE_NS (5LL * 1000000000) /* a reply may lag the wait it answers by this much */
#define CLI_GET_SLICE_MS 60000u            /* re-ask at least this often during long waits */
#define CLI_HANDSHAKE_NS (5LL * 1000000000) /* one handshake attempt; then reconnect */
#define CLI_GREET_NS (1000000000LL)         /* a fold store greets at once: silence this long is suspect */
/* then wait up to this long for an answer to the probe: PyTorch's stores
 * answer (or hang up) at once, but a fold store's server thread starved by
 * an oversubscribed host (128 processes on 2 cores) took over 2 s to greet */
#define CLI_PROBE_NS (5LL * 1000000000)
#define WARN_EVERY_NS (5LL * 1000000000)    /* while the server cannot be reached: a warning this often */
#define TORCH_GETNUMKEYS 6                  /* PyTorch TCPStore's one-byte key-count query */

/* ======================================================================
 * client
 * ====================================================================== */

typedef struct tcp_store {
  fold__store base;
  int fd;
  char where[300]; /* "tcp://host:port" for messages */
} tcp_store;

static int cli_lost(tcp_store *t, int rc, const char *what) {
  if (rc == FOLD_ETIMEDOUT)
    return fold__error(NULL, FOLD_ETIMEDOUT, "store %s did not answer (%s)", t->where, what);
  return fold__error(NULL, rc == FOLD_ESYS ? FOLD_ESYS : FOLD_EPEER, "store %s: connection lost (%s)", t->where,
                     what);
}

static int cli_send(tcp_store *t, const void *p, size_t n, int64_t deadline) {
  int rc = fold__fd_send_all(t->fd, p, n, deadline);
  return rc < 0 ? cli_lost(t, rc, rc == FOLD_ETIMEDOUT ? "sending" : strerror(errno)) : 0;
}

static int cli_recv(tcp_store *t, void *p, size_t n, int64_t deadline) {
  int rc = fold__fd_recv_all(t->fd, p, n, deadline);
  return rc < 0 ? cli_lost(t, rc, rc == FOLD_ETIMEDOUT ? "waiting for a reply" : "closed or reset by the server") : 0;
}

/* One request/reply. The value of a VALUE reply goes to buf (at most cap
 * bytes, the rest is read and dropped), its length to *len. Returns the
 * reply type or a negative code. */
static int cli_call(tcp_store *t, int type, const char *key, const void *val, size_t vlen, void *buf,
                    size_t cap, size_t *len, int64_t io_deadline) {
  size_t klen = strlen(key);
  if (!fold__store_key_ok(key, klen) || vlen > FOLD__STORE_VAL_MAX)
    return fold__error(NULL, FOLD_EINVAL, "store: bad key \"%.40s\" or value of %zu bytes", key, vlen);
  if (t->fd < 0)
    return fold__error(NULL, FOLD_EPEER, "store %s: connection already lost", t->where);
  uint8_t hdr[FOLD__STORE_HDR];
  fold__store_put_header(hdr, type, klen, vlen);
  int rc = cli_send(t, hdr, sizeof hdr, io_deadline);
  if (rc == 0)
    rc = cli_send(t, (const uint8_t *)key, klen, io_deadline);
  if (rc == 0 && vlen)
    rc = cli_send(t, val, vlen, io_deadline);
  if (rc == 0)
    rc = cli_recv(t, hdr, sizeof hdr, io_deadline);
  if (rc < 0)
    goto lost;
  fold__store_frame f;
  if (fold__store_parse_frame(hdr, sizeof hdr, 1, &f) < 0) {
    rc = fold__error(NULL, FOLD_EAUTH, "store %s: malformed reply (%s)", t->where, f.why);
    goto lost;
  }
  size_t n = (size_t)hdr[4] | (size_t)hdr[5] << 8 | (size_t)hdr[6] << 16 | (size_t)hdr[7] << 24;
  uint8_t sink[512];
  size_t got = 0;
  while (got < n) { /* n <= 64 KiB: checked by the parser */
    size_t chunk;
    uint8_t *dst;
    if (got < cap) {
      chunk = (n < cap ? n : cap) - got;
      dst = (uint8_t *)buf + got;
    } else {
      chunk = n - got < sizeof sink ? n - got : sizeof sink;
      dst = sink;
    }
    if ((rc = cli_recv(t, dst, chunk, io_deadline)) < 0)
      goto lost;
    got += chunk;
  }
  if (len)
    *len = n;
  return hdr[0];
lost:
  /* The stream position is unknown now: never reuse the connection. */
  close(t->fd);
  t->fd = -1;
  return rc;
}

static int64_t io_deadline(int64_t deadline) {
  int64_t now = fold__clock_mono(NULL);
  return (deadline > now ? deadline : now) + CLI_IO_GRACE_NS;
}

static int tcp_set(fold__store *s, const char *key, const void *val, size_t len, int64_t deadline) {
  tcp_store *t = (tcp_store *)s;
  int rc = cli_call(t, FOLD__ST_SET, key, val, len, NULL, 0, NULL, io_deadline(deadline));
  if (rc == FOLD__ST_ERR)
    return fold__error(NULL, FOLD_ENOMEM, "store %s: refused to hold key %s (store full)", t->where, key);
  return rc < 0 ? rc : 0;
}

static int tcp_get(fold__store *s, const char *key, void *buf, size_t cap, size_t *len, int64_t deadline) {
  tcp_store *t = (tcp_store *)s;
  for (;;) {
    int64_t left = deadline - fold__clock_mono(NULL);
    uint32_t ms = left <= 0 ? 0 : (uint32_t)((left + 999999) / 1000000);
    if (ms > CLI_GET_SLICE_MS)
      ms = CLI_GET_SLICE_MS;
    uint8_t w[4] = {(uint8_t)ms, (uint8_t)(ms >> 8), (uint8_t)(ms >> 16), (uint8_t)(ms >> 24)};
    int rc = cli_call(t, FOLD__ST_GET, key, w, 4, buf, cap, len, fold__clock_mono(NULL) + (int64_t)ms * 1000000 + CLI_IO_GRACE_NS);
    if (rc == FOLD__ST_VALUE)
      return 0;
    if (rc < 0)
      return rc;
    if (rc != FOLD__ST_NOTFOUND)
      return fold__error(NULL, FOLD_EINTERNAL, "store %s: unexpected reply %d to GET", t->where, rc);
    if (s->watch[0] && strcmp(s->watch, key) != 0) {
      char who[16];
      size_t n = 0;
      uint8_t w0[4] = {0, 0, 0, 0};
      int wr = cli_call(t, FOLD__ST_GET, s->watch, w0, 4, who, sizeof who - 1, &n, io_deadline(0));
      if (wr < 0)
        return wr;
      if (wr == FOLD__ST_VALUE) {
        who[n < sizeof who ? n : sizeof who - 1] = '\0';
        return fold__error(NULL, FOLD_EPEER, "rank %s is gone: its store connection closed after it joined and "
                           "before the rendezvous completed (killed, or failed itself)", who);
      }
    }
    if (fold__clock_mono(NULL) >= deadline)
      return FOLD_ETIMEDOUT;
  }
}

static int tcp_add(fold__store *s, const char *key, int64_t delta, int64_t *total, int64_t deadline) {
  tcp_store *t = (tcp_store *)s;
  uint8_t d[8], v[8];
  for (int i = 0; i < 8; i++)
    d[i] = (uint8_t)((uint64_t)delta >> (8 * i));
  size_t len = 0;
  int rc = cli_call(t, FOLD__ST_ADD, key, d, 8, v, 8, &len, io_deadline(deadline));
  if (rc < 0)
    return rc;
  if (rc != FOLD__ST_VALUE || len != 8)
    return fold__error(NULL, FOLD_EINVAL, "store %s: key %s is not a counter", t->where, key);
  uint64_t x = 0;
  for (int i = 7; i >= 0; i--)
    x = x << 8 | v[i];
  if (total)
    *total = (int64_t)x;
  return 0;
}

static int tcp_del(fold__store *s, const char *key, int64_t deadline) {
  int rc = cli_call((tcp_store *)s, FOLD__ST_DEL, key, NULL, 0, NULL, 0, NULL, io_deadline(deadline));
  return rc < 0 ? rc : 0;
}

static void tcp_close(fold__store *s) {
  tcp_store *t = (tcp_store *)s;
  if (t->fd >= 0)
    close(t->fd);
  free(t);
}

static const fold__store_ops tcp_ops = {tcp_set, tcp_get, tcp_add, tcp_del, tcp_close};

/* Connect to one address with a deadline; fd or -errno. */
static int connect_one(const struct addrinfo *ai, int64_t deadline) {
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -errno;
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
    if (errno != EINPROGRESS) {
      int e = errno;
      close(fd);
      return -e;
    }
    int rc = fold__fd_wait(fd, POLLOUT, deadline);
    int err = 0;
    socklen_t sl = sizeof err;
    if (rc < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0 || err != 0) {
      close(fd);
      return rc == FOLD_ETIMEDOUT ? -ETIMEDOUT : -(err ? err : EIO);
    }
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

#define PEEK_MAX 24 /* bytes of a foreign greeting looked at (and quoted) */

/* Wait for the first bytes to arrive (peeked, not consumed) until deadline,
 * then up to 50 ms more for the rest of a short greeting; returns how many
 * (at most PEEK_MAX; 0 on EOF or reset), or -1 when nothing came in time. */
static int peek_first(int fd, uint8_t *buf, int64_t deadline) {
  ssize_t n = -1;
  for (;;) {
    if (fold__fd_wait(fd, POLLIN, deadline) < 0)
      return n > 0 ? (int)n : -1;
    ssize_t m = recv(fd, buf, PEEK_MAX, MSG_PEEK);
    if (m < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
      continue;
    if (m <= 0)
      return n > 0 ? (int)n : 0;
    if (n < 0) { /* first bytes: give the rest of a short message a moment */
      int64_t soon = fold__clock_mono(NULL) + 50000000;
      deadline = soon < deadline ? soon : deadline;
    }
    n = m;
    if (n == PEEK_MAX || fold__clock_mono(NULL) >= deadline)
      return (int)n;
    fold__sleep_ns(5000000);
  }
}

/* "it sent <printable form of the first bytes>" */
static void describe_bytes(const uint8_t *b, int n, char *out, size_t cap) {
  size_t k = (size_t)snprintf(out, cap, "it sent \"");
  for (int i = 0; i < n && k + 6 < cap; i++)
    k += (size_t)snprintf(out + k, cap - k, b[i] >= 0x20 && b[i] < 0x7f && b[i] != '"' ? "%c" : "\\x%02x", b[i]);
  snprintf(out + k, cap - k, "\" where a fold store sends FOLDAUTH");
}

/* Before the handshake: is a fold store answering? A fold store greets
 * first and at once ("FOLDAUTH"); other services either send something
 * else (HTTP, SSH banners) or wait for the client to speak, as PyTorch's
 * TCPStore does, which torch.distributed serves at MASTER_PORT: without
 * this check fold would wait for a greeting until FOLD_TIMEOUT. After
 * CLI_GREET_NS of silence one harmless read-only TCPStore request (the key
 * count) is sent: TCPStore 1.x answers it with 8 bytes, newer ones hang up
 * on an unvalidated client, a fold store ignores it as a bad proof but has
 * greeted by then (a slow fold store: the caller reconnects and does not
 * probe again).
 *
 * Silence alone proves nothing: a fold store whose server thread is
 * starved (foldrun's, 128 processes on 2 cores) was silent for over 6 s.
 * So silence is taken for a foreign server only where one is likely, at a
 * guessed address (MASTER_ADDR/MASTER_PORT, u->guessed); at an address
 * given as fold's (FOLD_STORE, foldrun, fold_comm_init's argument) the
 * client waits on for the greeting until the deadline, saying so once.
 * Returns 0 to go on with the handshake, FOLD_EPEER to reconnect
 * (*fold_seen set), or FOLD_EAUTH / FOLD_ETIMEDOUT with the message
 * recorded. */
static int check_greeting(const tcp_store *t, int fd, int *fold_seen, int guessed, int64_t deadline) {
  static const char magic[8] = {'F', 'O', 'L', 'D', 'A', 'U', 'T', 'H'};
  uint8_t b[PEEK_MAX];
  char why[200];
  int n = peek_first(fd, b, fold__clock_mono(NULL) + CLI_GREET_NS);
  if (n == 0)
    return 0; /* closed at once: the handshake reports it (and retries) */
  if (n > 0) {
    if (memcmp(b, magic, (size_t)(n < 8 ? n : 8)) == 0)
      return 0;
    describe_bytes(b, n, why, sizeof why);
  } else {
    uint8_t q = TORCH_GETNUMKEYS;
    if (send(fd, &q, 1, MSG_NOSIGNAL) != 1)
      return 0; /* let the handshake see what happened */
    n = peek_first(fd, b, fold__clock_mono(NULL) + CLI_PROBE_NS);
    if (n < 0 && !guessed) {
      if (fold__log_level_env() >= FOLD__LOG_WARN)
        fold__log(FOLD__LOG_WARN, -1,
                  "store %s has sent nothing for %g s since the connection; waiting on for its greeting (a fold "
                  "store whose server is starved on a loaded host greets late; a service that is not a fold store "
                  "never does)", t->where, (double)(CLI_GREET_NS + CLI_PROBE_NS) / 1e9);
      n = peek_first(fd, b, deadline);
      if (n < 0)
        return fold__error(NULL, FOLD_ETIMEDOUT, "store %s sent nothing within the deadline (FOLD_TIMEOUT) of "
                           "connecting, where a fold store greets at once: is it a fold store?", t->where);
    }
    if (n > 0 && memcmp(b, magic, (size_t)(n < 8 ? n : 8)) == 0) {
      *fold_seen = 1;
      return FOLD_EPEER;
    }
    if (n == 8 && b[7] == 0) /* a little-endian int64 count */
      snprintf(why, sizeof why, "it is PyTorch's TCPStore: it sent nothing on connecting and answered a "
                                "TCPStore key-count query; torch.distributed serves MASTER_PORT");
    else if (n == 0)
      snprintf(why, sizeof why, "it looks like PyTorch's TCPStore: it sent nothing on connecting and hung up on "
                                "a TCPStore query; torch.distributed serves MASTER_PORT");
    else if (n > 0)
      describe_bytes(b, n, why, sizeof why);
    else
      snprintf(why, sizeof why, "it sent nothing within %g s of connecting, where a fold store greets at once; "
                                "PyTorch's TCPStore at MASTER_PORT is silent like that",
               (double)(CLI_GREET_NS + CLI_PROBE_NS) / 1e9);
  }
  return fold__error(NULL, FOLD_EAUTH, "%s is not a fold store (%s); set FOLD_STORE=tcp://host:otherport "
                                       "to a port of fold's own", t->where, why);
}

int fold__store_tcp_open(const fold__store_url *u, const fold__auth_key *key, const char *claim,
                         int64_t deadline, fold__store **out) {
  *out = NULL;
  tcp_store *t = calloc(1, sizeof *t);
  if (t == NULL)
    return fold__error(NULL, FOLD_ENOMEM, "out of memory opening store");
  t->base.ops = &tcp_ops;
  t->base.kind = FOLD__STORE_TCP;
  t->fd = -1;
  snprintf(t->where, sizeof t->where, strchr(u->host, ':') ? "tcp://[%s]:%d" : "tcp://%s:%d", u->host, u->port);
  char portstr[16];
  snprintf(portstr, sizeof portstr, "%d", u->port);
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
  int64_t backoff = 10 * 1000000LL;
  int last_err = 0, rc = 0, hs_rc = 0, fold_seen = 0;
  int64_t warn_at = 0; /* the next "still cannot connect" */
  /* The server (rank 0 or foldrun) may not be up yet: retry until the
   * deadline. Resolution is retried too (a name may appear late in DNS).
   * A handshake that ends in EOF, reset or timeout is retried as well: the
   * server evicts the oldest pending handshake when strangers fill its
   * table, so one lost handshake says nothing about the next. Only
   * FOLD_EAUTH (the server's hello or proof is wrong) and local errors are
   * final. */
  for (;;) {
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(u->host, portstr, &hints, &res);
    if (gai != 0) {
      last_err = 0;
      rc = fold__error(NULL, FOLD_EINVAL, "store %s: cannot resolve host: %s", t->where, gai_strerror(gai));
    }
    for (struct addrinfo *ai = res; ai && t->fd < 0; ai = ai->ai_next) {
      int64_t now = fold__clock_mono(NULL);
      int fd = connect_one(ai, now + 2000000000LL < deadline ? now + 2000000000LL : deadline);
      if (fd < 0) {
        last_err = -fd;
        hs_rc = 0;
        continue;
      }
      /* One attempt gets a few seconds (a real server answers in one round
       * trip), at least 1 s even when the deadline has passed. */
      now = fold__clock_mono(NULL);
      int64_t hs_deadline = now + CLI_HANDSHAKE_NS < deadline ? now + CLI_HANDSHAKE_NS : deadline;
      if (hs_deadline < now + 1000000000LL)
        hs_deadline = now + 1000000000LL;
      rc = fold_seen ? 0 : check_greeting(t, fd, &fold_seen, u->guessed, deadline);
      if (rc == FOLD_EAUTH || rc == FOLD_ETIMEDOUT) { /* not a fold store, or silent to the deadline */
        close(fd);
        freeaddrinfo(res);
        free(t);
        return rc;
      }
      if (rc == 0)
        rc = fold__auth_client(fd, key, claim, hs_deadline);
      if (rc == 0) {
        t->fd = fd;
        break;
      }
      close(fd);
      if (rc == FOLD_EPEER || rc == FOLD_ETIMEDOUT) {
        hs_rc = rc;
        continue;
      }
      freeaddrinfo(res);
      char where[300];
      snprintf(where, sizeof where, "%s", t->where);
      free(t);
      if (rc == FOLD_EAUTH)
        return fold__error(NULL, FOLD_EAUTH,
                           "store %s: authentication as \"%s\" failed (FOLD_JOB_TOKEN differs, or the port "
                           "serves another job)", where, claim);
      return fold__error(NULL, rc, "store %s: handshake as \"%s\" failed: %s", where, claim, fold_strerror(rc));
    }
    if (res)
      freeaddrinfo(res);
    if (t->fd >= 0)
      break;
    if (fold__clock_mono(NULL) + backoff >= deadline) {
      char where[300];
      snprintf(where, sizeof where, "%s", t->where);
      free(t);
      if (hs_rc != 0)
        return fold__error(NULL, FOLD_ETIMEDOUT, "store %s: no handshake as \"%s\" completed in time (last: %s)",
                           where, claim, hs_rc == FOLD_EPEER ? "closed by the server" : "no answer");
      if (gai != 0)
        return rc;
      return fold__error(NULL, FOLD_ETIMEDOUT,
                         "store %s unreachable: %s (rank 0 or foldrun serves it: was every rank given the same "
                         "FOLD_STORE?)", where, last_err ? strerror(last_err) : "no address");
    }
    int64_t now = fold__clock_mono(NULL);
    if (warn_at == 0)
      warn_at = now + (deadline - now) / 3 < now + WARN_EVERY_NS ? now + (deadline - now) / 3 : now + WARN_EVERY_NS;
    if (now >= warn_at && fold__log_level_env() >= FOLD__LOG_WARN) {
      /* silent for FOLD_TIMEOUT otherwise: the usual cause is an address */
      fold__log(FOLD__LOG_WARN, -1,
                "store %s: \"%s\" still cannot connect (%s); the store is served by rank 0 (or foldrun): is it "
                "running, and was it given this same FOLD_STORE (or MASTER_ADDR/MASTER_PORT)?",
                t->where, claim, hs_rc ? "handshakes fail" : last_err ? strerror(last_err) : "no address");
      warn_at = now + WARN_EVERY_NS;
    }
    fold__sleep_ns(backoff);
    if (backoff < 200 * 1000000LL)
      backoff *= 2;
  }
  *out = &t->base;
  return 0;
}
