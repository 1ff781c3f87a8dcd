/* dist_srv.h — the state of a distributed store's server, shared by its files (private to src/kv/). */
#ifndef FOLD_KV_DIST_SRV_H
#define FOLD_KV_DIST_SRV_H

#include "kv/kv.h"

/* A message from a worker: received into buf (eager ones at once). */
typedef struct kv_msg {
  fold__list link; /* the server's inbox, then its key's queued pushes */
  fold_request *r;
  char *buf;
  size_t bytes;
  int src, tag;
  uint64_t round; /* a push: the sender's push number for its key */
  /* buf for a message that fits (a header and up to 16 bytes of values:
   * a small key's push or pull), so that one takes one allocation; the
   * values start 8-aligned, as every dtype's elements need (its records
   * included), and the struct keeps its alignment of 8 */
  _Alignas(8) char small[sizeof(fold__kv_hdr) + 16];
} kv_msg;
_Static_assert(sizeof(fold__kv_hdr) % 8 == 0, "a message's values start 8-aligned after its header");

/* A pull waiting until its worker's pushes are applied (and, dist_ssp,
 * until the slowest worker is close enough). */
typedef struct kv_pull {
  fold__list link; /* its key's pulls */
  int src;
  int32_t reply;
  uint64_t need; /* pushes of src to this key before the pull */
  int64_t since; /* arrival (engine clock) */
  int stalled;   /* the worker was told who it waits for */
} kv_pull;

/* One key's shard held here. */
typedef struct skey {
  int64_t key;
  uint64_t total, off, n;
  fold_dtype dtype;
  size_t esize;
  void *val;              /* NULL until worker 0's INIT came */
  void *merged;           /* dist_sync: this round's sum so far */
  int nmerged;
  uint8_t *contrib;       /* per worker: pushed this round */
  uint64_t *pushes;       /* per worker: pushes arrived */
  uint64_t *applied;      /* per worker: pushes applied */
  uint64_t rounds;        /* dist_sync: rounds applied */
  fold__list queued;      /* kv_msg.link: pushes not applied yet, in arrival order */
  fold__list pulls;       /* kv_pull.link: in arrival order */
  /* A worker sends a key in pieces (dist_worker.c: each fits an eager
   * message), each with rounds of its own, so that a piece's pull is
   * answered while the key's later pieces still stream in. The key table
   * holds the first piece to arrive here; it lists them all, in INIT order. */
  struct skey **part;
  size_t npart, cappart;
} skey;

typedef struct kv_sent {
  fold_request *r;
  void *buf;
} kv_sent;

/* The order check (kv.h, FOLD__KV_INIT_ORDER): the first record of an
 * init number that came here. */
typedef struct kv_order {
  int64_t key;
  uint64_t count;
  fold_dtype dtype;
  int worker;
} kv_order;

struct fold__kv_server {
  fold__task task; /* takes the messages in order, watches the workers */
  fold_kv *kv;
  fold__kv_map keys;
  fold__kv_map order; /* init number -> kv_order */
  fold__list inbox;      /* kv_msg.link: arrived, in arrival order */
  kv_sent *sent;
  size_t nsent, capsent;
  uint8_t *bye;          /* the handler saw the worker's BYE (it may be queued behind others) */
  int nleft;
  /* barriers (server 0): who arrived, their reply tags and init digests */
  uint8_t *bar_in;
  int32_t *bar_reply;
  uint64_t *bar_digest, *bar_ninit;
  /* pulls waiting past a quarter of FOLD_TIMEOUT: their workers are told which
   * worker holds them up, so that a timeout names it, not this server */
  fold__timer stall;
  int64_t stall_ns;
  /* set by fold_kv_serve: messages are taken only from then on, so that an
   * updater set before it sees every push, even with a progress thread that
   * steps this task while the rank is still setting up */
  int serving;
  /* a lost peer + 1 (0: none): the server fails at its next step, see die() */
  int dying;
};

#define S_OF(kv) ((kv)->s)


/* ---- dist_server_key.c: replies, a key's rounds, its pieces ---- */
/* Send buf (which the server owns from here, freed once sent) to worker `to`
 * with `tag`; FOLD_OK or the error (buf freed). */
int fold__kvs_send_owned(fold_kv *kv, int to, int tag, void *buf, size_t bytes);
/* Free the buffers of replies that went out. */
void fold__kvs_reap_sent(struct fold__kv_server *s);
void fold__kvs_msg_free(kv_msg *m);
/* Apply what can be applied of key piece k, answer the pulls that can be answered. */
int fold__kvs_key_go(fold_kv *kv, skey *k);
/* Free piece k: its queued pushes, its pulls, its buffers and k itself. */
void fold__kvs_piece_free(skey *k);
/* The key table's value destructor: the key's first piece, which owns the others. */
void fold__kvs_key_free(void *p);
/* The piece of key starting at off, or NULL. */
skey *fold__kvs_piece_get(const struct fold__kv_server *s, int64_t key, uint64_t off);
/* Call fn on every piece of every key (until it fails). */
int fold__kvs_each_piece(fold_kv *kv, int (*fn)(fold_kv *, skey *));

#endif /* FOLD_KV_DIST_SRV_H */
