/* kv.h — the key-value store's private header: the store, its key table, placement and protocol (docs/kvstore.md). */
#ifndef FOLD_KV_KV_H
#define FOLD_KV_KV_H

#include <stdint.h>
#include <stdio.h>

#include "engine/engine.h"
#include "kv/optim.h"
#include "kv/sum.h"

enum { FOLD__KV_LOCAL = 0, FOLD__KV_SYNC = 1, FOLD__KV_ASYNC = 2, FOLD__KV_SSP = 3 };

/* ---- the key table (key.c): open addressing, int64 -> pointer ---------- */
typedef struct fold__kv_map {
  int64_t *keys;
  void **vals;
  size_t cap, n; /* cap a power of two (0: empty); vals[i] == NULL: free slot */
} fold__kv_map;
void *fold__kv_map_get(const fold__kv_map *m, int64_t key);
int fold__kv_map_put(fold__kv_map *m, int64_t key, void *val); /* 0 or FOLD_ENOMEM */
/* The positions 0..n-1 ordered by (key, position): each key's positions
 * are then one run, in call order (devices summed left to right). Free it;
 * NULL if out of memory. */
int *fold__kv_group(int n, const int64_t *keys);
/* Call fn on every value (in no order), then free the table. */
void fold__kv_map_free(fold__kv_map *m, void (*fn)(void *val));

/* ---- placement (place.c): greedy by bytes, big arrays split ------------ */
/* Where a key lives: on server `server`, or (server < 0) split evenly over
 * all nservers, shard i on server i holding fold__kv_shard(count, ns, i). */
typedef struct fold__kv_place {
  int nservers;
  size_t bound;   /* FOLD_KV_BIGARRAY_BOUND, elements */
  uint64_t *bytes; /* per server, so far */
} fold__kv_place;
int fold__kv_place_init(fold__kv_place *p, int nservers, size_t bound);
void fold__kv_place_free(fold__kv_place *p);
/* Place a key of count elements of esize bytes: returns its server, or -1
 * for split (every server gets its shard's bytes). Deterministic: the same
 * sequence of calls gives the same answers on every rank. */
int fold__kv_place_key(fold__kv_place *p, size_t count, size_t esize);
/* Shard i of count elements over n servers: [*off, *off + *n). */
void fold__kv_shard(size_t count, int n, int i, size_t *off, size_t *len);
/* Largest server's bytes over the mean (1.0 when balanced; 0 if empty). */
double fold__kv_place_imbalance(const fold__kv_place *p);

/* ---- the protocol (dist_worker.c, dist_server.c) ----------------------- *
 * Every message travels on the store's own communicator (a dup of the
 * user's), context FOLD__EXT_KV; requests carry their type as the tag and
 * start with a header; replies go to a receive the worker posted first,
 * tagged with a number of its own (>= FOLD__KV_REPLY_TAG0). */
enum {
  FOLD__KV_MSG_INIT = 1,    /* hdr + (worker 0 only) the shard's value + (string keys) the name */
  FOLD__KV_MSG_PUSH = 2,    /* hdr + the shard's summed values */
  FOLD__KV_MSG_PULL = 3,    /* hdr; the reply: the shard's value */
  FOLD__KV_MSG_OPT = 4,     /* hdr + the optimizer spec (NUL-terminated) */
  FOLD__KV_MSG_BARRIER = 5, /* hdr (total = init digest, n = init count); reply: hdr */
  FOLD__KV_MSG_BYE = 6,     /* this worker destroyed its store (to every server) */
  FOLD__KV_MSG_DEAD = 7,    /* server to workers: rank hdr.key died without a BYE; if it failed on another
                               rank first, that one is hdr.total - 1 (0: none), its status -hdr.n and
                               the cause's text follows the header */
  FOLD__KV_MSG_SDONE = 8,   /* server to servers: served every worker, leaving (no loss) */
  FOLD__KV_MSG_STALL = 9,   /* server to a worker: your pull of key hdr.total waits for worker hdr.key
                               (for hdr.n ms so far) */
  FOLD__KV_REPLY_TAG0 = 64
};
#define FOLD__KV_INIT_VALUE 1u /* the shard's value follows the header */
#define FOLD__KV_INIT_NAME 2u  /* then the key's string name, NUL-terminated */
/* The order check: every worker sends the record of its init number idx
 * (key, count in total, dtype) to server nworkers + idx % nservers, on the
 * INIT of the key's first piece there or, if none goes there, alone (n 0,
 * no value). That server sees every worker's idx-th init, whatever the
 * placement, and fails the store with FOLD_EMISMATCH naming both workers
 * and keys when they differ: before any push can wait for an INIT that
 * will never come (workers initialising keys in different orders place
 * them on different servers). */
#define FOLD__KV_INIT_ORDER 4u
typedef struct fold__kv_hdr {
  int64_t key;
  uint64_t total; /* the key's count (BARRIER: the init digest) */
  uint64_t off;   /* first element of the shard */
  uint64_t n;     /* elements in the shard (BARRIER: the number of inits) */
  uint32_t dtype;
  uint32_t flags; /* INIT: FOLD__KV_INIT_*; BARRIER reply: 1 = mismatch */
  int32_t reply;  /* PULL, BARRIER: the tag of the reply */
  uint32_t idx;   /* INIT with FOLD__KV_INIT_ORDER: the sender's init number (from 0, wrapping) */
} fold__kv_hdr;

/* ---- the store ----------------------------------------------------------- */
/* A string key's name, for messages (key.c). */
typedef struct fold__kv_name {
  int64_t key;
  char name[256];
} fold__kv_name;

/* One key as a worker or the local store knows it. */
typedef struct fold__kv_ent {
  int64_t key;
  size_t count, esize;
  fold_dtype dtype;
  int server;  /* dist: its server, or -1 split over all */
  void *val;   /* local: the stored value */
  int queued;  /* dist: its messages in the worker's outbox */
  int qprio;   /* dist: the effective priority of the last of them */
} fold__kv_ent;

struct fold__kv_worker;
struct fold__kv_server;

struct fold_kv {
  int type;                /* FOLD__KV_* */
  int role;                /* FOLD_KV_WORKER / FOLD_KV_SERVER */
  fold_comm *user;         /* the caller's communicator (NULL: local without one) */
  fold_comm *c;            /* dist: the store's own (a dup of user) */
  int nservers, nworkers;  /* dist: servers are ranks nworkers .. size-1 */
  size_t bound;            /* FOLD_KV_BIGARRAY_BOUND */
  int threads;             /* FOLD_KV_REDUCE_THREADS */
  int staleness;           /* FOLD_KV_STALENESS */
  size_t piece_bytes;      /* dist: the most value bytes one message carries (kv.c, agree) */
  fold__kv_pool *pool;
  fold__kv_map ents;       /* local, worker: key -> fold__kv_ent */
  fold__kv_map names;      /* key -> fold__kv_name (fold_kv_key) */
  fold_kv_updater updater;
  void *updater_ctx;
  fold__kv_optim *optim;
  void *scratch;           /* local: one sum buffer, reused */
  size_t scratch_cap;
  uint8_t *left;            /* servers: workers whose BYE came, servers whose SDONE came: gone on purpose */
  uint8_t *dead;            /* dist: ranks known lost without leaving (fold_kv_dead_nodes) */
  struct fold__kv_worker *w;
  struct fold__kv_server *s;
};
static inline int fold__kv_left(const fold_kv *kv, int p) { return kv->left != NULL && kv->left[p]; }

/* The rank to count as lost when peer p is lost: the rank p's failure
 * report blamed, if p failed on another rank (a timeout, a loss) and then
 * exited; else p. fold_kv_dead_nodes lists the dead, not the ranks that
 * only failed because of them. */
int fold__kv_blamed(const fold_kv *kv, int p);
/* "key 12" or "key 'fc1.weight' (-4711...)": how messages name a key. */
const char *fold__kv_keyname(const fold_kv *kv, int64_t key, char *buf, size_t cap);
/* Record an argument error on the store's user communicator (or NULL). */
int fold__kv_err(const fold_kv *kv, int status, const char *fmt, ...) FOLD__PRINTF(3, 4);
/* Apply a merged value to a stored one: updater, optimizer, or copy. */
void fold__kv_apply(fold_kv *kv, int64_t key, uint64_t off, const void *merged, void *stored, size_t count,
                    fold_dtype dtype); /* off: where the part (a server's piece) starts in the key */
/* The store's failure status, its message copied to the user's communicator. */
int fold__kv_failed(fold_kv *kv);

/* local.c */
int fold__kv_local_init(fold_kv *kv, fold__kv_ent *e, const void *value);
int fold__kv_local_push(fold_kv *kv, int n, const int64_t *keys, const void *const *values);
int fold__kv_local_pull(fold_kv *kv, int n, const int64_t *keys, void *const *outs);

/* dist_worker.c */
int fold__kv_worker_open(fold_kv *kv);
void fold__kv_worker_close(fold_kv *kv); /* frees; no communication */
int fold__kv_worker_init(fold_kv *kv, fold__kv_ent *e, const void *value);
int fold__kv_worker_push(fold_kv *kv, int n, const int64_t *keys, const void *const *values, int priority);
int fold__kv_worker_pull(fold_kv *kv, int n, const int64_t *keys, void *const *outs, int priority);
int fold__kv_worker_pushpull(fold_kv *kv, int n, const int64_t *keys, const void *const *values, void *const *outs,
                             int priority);
int fold__kv_worker_wait(fold_kv *kv, const char *op);
int fold__kv_worker_barrier(fold_kv *kv);
int fold__kv_worker_send_opt(fold_kv *kv, const char *spec);
int fold__kv_worker_leave(fold_kv *kv); /* wait, then tell servers and workers */
double fold__kv_worker_imbalance(const fold_kv *kv);
/* After a timeout: name the worker a server said the wait was for. */
void fold__kv_worker_stall_note(fold_kv *kv, const char *op);

/* dist_server.c */
int fold__kv_server_open(fold_kv *kv);
void fold__kv_server_close(fold_kv *kv);
int fold__kv_server_serve(fold_kv *kv);

/* The context of the store's messages. */
static inline int fold__kv_ctx(void) { return fold__ctx_ext(FOLD__EXT_KV); }

#endif /* FOLD_KV_KV_H */
