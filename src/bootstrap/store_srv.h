/* store_srv.h — the tcp store server's state, shared by store_server.c (connections, epoll thread) and store_srv_data.c (keys and requests). */
#ifndef FOLD_STORE_SRV_H
#define FOLD_STORE_SRV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "bootstrap/store.h"
#include "core/internal.h"

/* A real client answers the hello in one round trip; a short limit bounds
 * how long a silent stranger holds a handshake slot. */
#define SRV_AUTH_TIMEOUT_NS (2LL * 1000000000)
#define SRV_MAX_PENDING 256         /* connections still in the handshake; the oldest is evicted beyond */
#define SRV_STOP_LINGER_NS (2LL * 1000000000) /* stop waits this long for clients to leave */
#define SRV_MAX_CONNS 8192          /* authenticated connections */
#define SRV_OUT_HIGH (256 * 1024)   /* stop parsing a client's requests above this much queued output */
#define SRV_STORE_MAX (256LL << 20) /* total bytes of keys + values held */
#define SRV_BUCKETS 4096

typedef struct entry {
  struct entry *next;
  size_t klen, vlen;
  uint8_t *val;
  char key[]; /* klen bytes + NUL */
} entry;

enum { C_AUTH = 0, C_READY = 1, C_PARKED = 2 };

typedef struct conn {
  fold__list link; /* s->conns; once closed, s->dead */
  fold__list pq;   /* s->pending: the pending queue, in accept order (C_AUTH only) */
  int fd;
  int state;
  uint32_t mask; /* events registered with epoll */
  fold__auth_srv auth;
  uint8_t *in; /* FOLD__STORE_FRAME_MAX bytes, allocated once authenticated */
  size_t in_len;
  uint8_t *out;
  size_t out_len, out_off, out_cap;
  char park_key[FOLD__STORE_KEY_MAX + 1]; /* the key a parked GET waits for */
  int64_t park_deadline;
  int runnable; /* has buffered requests to look at again */
  /* the rendezvous round this client joined ("<size>.<round>/", from its
   * SET of "<round>/join/<rank>"), until it ADDs to "<round>/left" */
  char round[32];
  int round_rank;
  char peer[80];
} conn;

struct fold__store_srv {
  pthread_t thread;
  int lfd, efd, wake;
  fold__store_srv_cfg cfg;
  int log_level;
  fold__list conns; /* conn.link, newest first */
  fold__list dead;  /* conn.link: closed during this loop turn; freed at its end */
  int npending, nready;
  fold__list pending; /* conn.pq: pending handshakes, oldest first */
  entry *buckets[SRV_BUCKETS];
  long long stored_bytes;
  long long requests; /* requests applied, said at INFO when the server stops */
  atomic_long rejected;
  atomic_int clients; /* authenticated connections, for linger() */
  atomic_int stop;
  int lingered; /* fold__store_srv_linger already waited for the clients */
};

/* Limited per call site (a flood of strangers is one summary line, not one
 * line each: core/log.c). */
#define SWARN(s, ...) do { static fold__log_site site_; if ((s)->log_level >= FOLD__LOG_WARN) fold__log_at(&site_, FOLD__LOG_WARN, (s)->cfg.log_rank, __VA_ARGS__); } while (0)
#define SINFO(s, ...) do { static fold__log_site site_; if ((s)->log_level >= FOLD__LOG_INFO) fold__log_at(&site_, FOLD__LOG_INFO, (s)->cfg.log_rank, __VA_ARGS__); } while (0)

/* Queue a reply to c; 0, or -1 when out of memory (the caller closes c). */
int fold__srv_reply(conn *c, int type, const void *val, size_t vlen);
/* Apply one request of c (SET, GET that may park c, ADD, DEL); 0 or -1 (close c). */
int fold__srv_apply(fold__store_srv *s, conn *c, const fold__store_frame *f);
/* c joined a rendezvous round and closes before leaving it: see store_srv_data.c. */
void fold__srv_round_gone(fold__store_srv *s, const conn *gone);

#endif /* FOLD_STORE_SRV_H */
