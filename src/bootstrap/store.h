/* store.h — the rendezvous key-value store (tcp and file), its server and its wire format.
 *
 * A store maps keys (1..256 printable ASCII bytes, no space) to values
 * (0..64 KiB). get() waits until the key exists, add() is an atomic counter
 * (the value is 8 bytes, int64 little-endian), barriers are built from both.
 *
 * Error convention: functions return 0 or a negative FOLD_E* code. Real
 * failures (connection lost, I/O error) also record a message with
 * fold__error(NULL, ...) (this thread's pre-communicator slot); a get() or
 * barrier that merely reaches its deadline returns FOLD_ETIMEDOUT WITHOUT a
 * message so that the caller can say what was missing.
 *
 * Wire format (tcp, after the auth handshake; integers little-endian):
 *   frame = u8 type | u8 flags (0) | u16 klen | u32 vlen | key[klen] | value[vlen]
 *   requests (client -> server), 1 <= klen <= 256:
 *     SET 1  value = the value (vlen <= 65536)          -> OK
 *     GET 2  value = u32 wait_ms                         -> VALUE, or NOTFOUND after wait_ms
 *     ADD 3  value = i64 delta                           -> VALUE (i64 new total), or ERR
 *     DEL 4  vlen = 0                                    -> OK
 *   replies (server -> client), klen = 0:
 *     OK 0x81 (vlen 0), VALUE 0x82 (vlen <= 65536), NOTFOUND 0x83 (vlen 0),
 *     ERR 0x84 (vlen 0: store full, or ADD on a value that is not 8 bytes)
 * Anything else is a protocol violation: the server closes the connection.
 */
#ifndef FOLD_STORE_H
#define FOLD_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "net/auth.h"

#define FOLD__STORE_KEY_MAX 256
#define FOLD__STORE_VAL_MAX 65536
#define FOLD__STORE_HDR 8
#define FOLD__STORE_FRAME_MAX (FOLD__STORE_HDR + FOLD__STORE_KEY_MAX + FOLD__STORE_VAL_MAX)

enum {
  FOLD__ST_SET = 1,
  FOLD__ST_GET = 2,
  FOLD__ST_ADD = 3,
  FOLD__ST_DEL = 4,
  FOLD__ST_OK = 0x81,
  FOLD__ST_VALUE = 0x82,
  FOLD__ST_NOTFOUND = 0x83,
  FOLD__ST_ERR = 0x84
};

/* One parsed frame; key and val point into the parsed bytes. */
typedef struct fold__store_frame {
  int type;
  const uint8_t *key;
  size_t klen;
  const uint8_t *val;
  size_t vlen;
  const char *why; /* on a malformed frame: what is wrong */
} fold__store_frame;

/* Parse one frame from p[0..n). from_server selects the reply grammar
 * (else requests). Returns the frame's total length (> 0) once it is
 * complete and valid, 0 if more bytes are needed (the header seen so far is
 * valid), or FOLD_EINVAL with f->why set when the bytes can never form a
 * valid frame (decided as early as possible: from the header alone when the
 * type or a length is wrong). Pure: no allocation, no I/O. */
int fold__store_parse_frame(const uint8_t *p, size_t n, int from_server, fold__store_frame *f);

/* Write a frame header into hdr[FOLD__STORE_HDR]. */
void fold__store_put_header(uint8_t *hdr, int type, size_t klen, size_t vlen);

/* 1 if key is a valid store key (length and characters). */
int fold__store_key_ok(const char *key, size_t klen);

/* ---- client ---------------------------------------------------------------- */
typedef struct fold__store fold__store;

typedef struct fold__store_ops {
  int (*set)(fold__store *s, const char *key, const void *val, size_t len, int64_t deadline_ns);
  /* Wait until key exists (deadline_ns <= now: look once). Copies at most
   * cap bytes into buf, *len = the value's full length. FOLD_ETIMEDOUT
   * (no message) if the key does not exist by the deadline. */
  int (*get)(fold__store *s, const char *key, void *buf, size_t cap, size_t *len, int64_t deadline_ns);
  /* Atomically add delta to the int64 at key (missing = 0); *total = new value. */
  int (*add)(fold__store *s, const char *key, int64_t delta, int64_t *total, int64_t deadline_ns);
  int (*del)(fold__store *s, const char *key, int64_t deadline_ns);
  void (*close)(fold__store *s);
} fold__store_ops;

struct fold__store {
  const fold__store_ops *ops;
  int kind; /* FOLD__STORE_TCP, FOLD__STORE_FILE or FOLD__STORE_CB */
  /* tcp: while get() waits, it also looks at this key (when not empty)
   * each time the server answers NOTFOUND; if the key exists, get() fails
   * with FOLD_EPEER naming the rank in its value. The rendezvous watches
   * "<round>/gone": the server sets it (and answers the round's parked
   * GETs at once) when a rank that joined the round closes its store
   * connection before it left the round: a rank killed mid-rendezvous. */
  char watch[FOLD__STORE_KEY_MAX + 1];
  /* Requests made through the calls below (set, get, add, del; a get that
   * waits is one), for the rendezvous's INFO line and its benchmark. */
  long nreq;
};
enum { FOLD__STORE_TCP = 1, FOLD__STORE_FILE = 2, FOLD__STORE_CB = 3 /* callbacks (store_cb.c) */ };

/* A parsed store URL. */
typedef struct fold__store_url {
  int kind;
  char host[256]; /* tcp: host name or address, IPv6 without brackets */
  int port;       /* tcp: 1..65535 */
  char path[4096]; /* file: absolute directory */
  int guessed;     /* tcp: the address is a guess (MASTER_ADDR/MASTER_PORT, where torch.distributed serves its
                      own store): a server silent for 6 s is taken for a foreign one (store_client.c) */
} fold__store_url;

/* Parse "tcp://host:port", "tcp://[v6]:port" or "file:///dir". Returns 0 or
 * FOLD_EINVAL (with a message). */
int fold__store_url_parse(const char *url, fold__store_url *u);

/* Open a client of the store at url, waiting (until deadline_ns,
 * CLOCK_MONOTONIC) for a tcp server to appear. Tcp clients authenticate
 * with key and claim (e.g. "store rank 3"); the server's reply proves it
 * holds the same key. guessed: the url was made from MASTER_ADDR and
 * MASTER_PORT, not given as fold's (fold__store_url.guessed). */
int fold__store_open(const char *url, const fold__auth_key *key, const char *claim, int64_t deadline_ns,
                     int guessed, fold__store **out);
int fold__store_tcp_open(const fold__store_url *u, const fold__auth_key *key, const char *claim,
                         int64_t deadline_ns, fold__store **out);
int fold__store_file_open(const fold__store_url *u, fold__store **out);
/* A store whose operations are the user's callbacks (fold_comm_init_store);
 * cb is copied, ctx is passed through. FOLD_EINVAL (with a message) for a
 * NULL set, get or add. Barriers use the add-based (tcp) protocol. */
struct fold_store_callbacks;
int fold__store_cb_open(const struct fold_store_callbacks *cb, void *ctx, fold__store **out);

static inline int fold__store_set(fold__store *s, const char *key, const void *val, size_t len, int64_t dl) {
  s->nreq++;
  return s->ops->set(s, key, val, len, dl);
}
static inline int fold__store_get(fold__store *s, const char *key, void *buf, size_t cap, size_t *len, int64_t dl) {
  s->nreq++;
  return s->ops->get(s, key, buf, cap, len, dl);
}
static inline int fold__store_add(fold__store *s, const char *key, int64_t delta, int64_t *total, int64_t dl) {
  s->nreq++;
  return s->ops->add(s, key, delta, total, dl);
}
static inline int fold__store_del(fold__store *s, const char *key, int64_t dl) {
  s->nreq++;
  return s->ops->del(s, key, dl);
}
static inline void fold__store_close(fold__store *s) {
  if (s)
    s->ops->close(s);
}

/* Barrier of `size` participants named `name` (a key prefix; use a fresh
 * name per barrier); `rank` in [0, size) is the caller. tcp: add 1 to
 * "<name>/n", the last arrival sets "<name>/go", everyone waits for it.
 * file: set "<name>/<rank>"; rank 0 waits for all of them and sets
 * "<name>/go", which the others wait for (no lock file, so a rendezvous
 * leaves nothing behind but its own keys). Either way O(size) requests. FOLD_ETIMEDOUT (no
 * message) at the deadline; *arrived (may be NULL) then says how many had
 * arrived. fold__store_barrier_keys_del removes the barrier's keys. */
int fold__store_barrier(fold__store *s, const char *name, int rank, int size, int64_t deadline_ns, int64_t *arrived);
void fold__store_barrier_keys_del(fold__store *s, const char *name, int size, int64_t deadline_ns);

/* ---- rendezvous waits that report progress (rdv_watch.c) ------------------ */
typedef struct fold__rdv_watch {
  fold__store *store;
  const char *pfx; /* the round's key prefix, "<size>.<round>/" */
  const char *url; /* for messages */
  int rank, size;
  int64_t timeout_ns, deadline_ns; /* FOLD_TIMEOUT, and when it runs out (CLOCK_MONOTONIC) */
  int64_t start_ns, next_ns, every_ns; /* set by fold__rdv_watch_start */
} fold__rdv_watch;

/* Start the clock of the warnings: every 5 s, or a third of a shorter
 * timeout. */
void fold__rdv_watch_start(fold__rdv_watch *w);
/* fold__store_get until w->deadline_ns, in slices: at the end of each, a
 * WARN (unless FOLD_DEBUG=NONE) that says how many ranks joined, which are
 * missing, and what to check (the world size, the store address); phase
 * says what this rank waits for. Returns as fold__store_get. */
int fold__rdv_get(fold__rdv_watch *w, const char *key, void *buf, size_t cap, size_t *len, const char *phase);
/* How many ranks have not published "<pfx><what>/<rank>" (looked at once,
 * without waiting); list gets the first max_named of them, comma
 * separated. A negative FOLD_E* if the store fails. */
int fold__rdv_missing(const fold__rdv_watch *w, const char *what, char *list, size_t cap, int max_named);

/* ---- tcp server --------------------------------------------------------------- */
typedef struct fold__store_srv fold__store_srv;

typedef struct fold__store_srv_cfg {
  const char *host;        /* address or name to bind; NULL = 127.0.0.1 */
  int port;                /* 0 = ephemeral */
  fold__auth_key key;      /* clients must prove it */
  int64_t auth_timeout_ns; /* per-connection handshake limit; 0 = 2 s */
  int log_rank;            /* rank for log lines, -1 for none (foldrun) */
} fold__store_srv_cfg;

/* Bind, listen and start the server thread. *port_out (may be NULL) gets
 * the bound port. Returns 0; FOLD_ESYS if binding fails, with *os_errno
 * (may be NULL) = the bind errno (EADDRINUSE: someone serves already);
 * FOLD_EINVAL if the host does not resolve. Records a message. */
int fold__store_srv_start(const fold__store_srv_cfg *cfg, fold__store_srv **out, int *port_out, int *os_errno);
/* Stop the thread, close every connection, free everything. NULL ignored.
 * Has the signature of an extension slot's teardown (the world keeps rank 0's
 * server in one: bootstrap/init.c). */
void fold__store_srv_stop(void *srv);

/* Wait until no client is connected or until deadline_ns (CLOCK_MONOTONIC). */
void fold__store_srv_linger(fold__store_srv *srv, int64_t deadline_ns);

/* Statistics for tests: connections rejected (auth or framing) so far. */
long fold__store_srv_rejected(fold__store_srv *srv);

#endif /* FOLD_STORE_H */
