/* dist_wrk.h — the state of a distributed store's worker, shared by its files (private to src/kv/). */
#ifndef FOLD_KV_DIST_WRK_H
#define FOLD_KV_DIST_WRK_H

#include "core/heap.h"
#include "kv/kv.h"

/* A request in flight and the buffer to free with it (NULL: the user's). */
typedef struct kv_pend {
  fold_request *r;
  void *buf;
  size_t bytes; /* a send's: counted in flight until it completes */
} kv_pend;
/* Requests in flight in the order they were made: at[head..n). */
typedef struct kv_fifo {
  kv_pend *at;
  size_t head, n, cap;
} kv_fifo;
/* A message not sent yet (the outbox: a heap, highest priority first). */
typedef struct kv_out {
  char *msg;
  size_t bytes;
  int to, type;
  int prio;          /* effective: never above an earlier queued message of the same key */
  uint64_t seq;      /* queueing order: ties, and a key's messages, keep it */
  fold__kv_ent *ent; /* its key (NULL: no key) */
} kv_out;
/* The outbox: messages in the order fold__kvw_out_before says. Those
 * queued in that order already (priorities that never rise: the same for
 * all, or falling as MXNet's -index) wait in a fifo, O(1) each way; the
 * others in a heap; a pop takes the earlier of the two fronts. A heap
 * alone cost a small-key push+pull ~650 instructions more than the
 * hand-written sifts before it (a call per comparison, a memcpy per level). */
typedef struct kv_outbox {
  kv_out *run; /* the fifo: run[head..n) */
  size_t head, n, cap;
  fold__heap heap;
} kv_outbox;
/* Bytes in flight before the outbox holds messages back (16 MiB: 61% of
 * the 1 Gbit/s link bound against 52-58% with 1-8 MiB, docs/kvstore.md): enough to keep
 * the links busy, small enough that a high-priority message issued later
 * (the first layers' weights, needed first in the next forward pass) does
 * not queue behind a whole model. */
#define KV_WINDOW ((size_t)16 << 20)
/* A pull's extra outputs of one key: copied from its first after the wait. */
typedef struct kv_copy {
  void *dst;
  const void *src;
  size_t bytes;
} kv_copy;

struct fold__kv_worker {
  fold__watch watchdog; /* a worker or a server lost without a BYE fails the store */
  fold_kv *kv;
  fold__kv_place place;
  kv_fifo sends;      /* sends in flight: they complete in order per server */
  kv_fifo recvs;      /* pulls' replies awaited: they come in order per server */
  size_t reap_at;     /* requests in flight at which fold__kvw_reap_some sweeps (twice what the last sweep kept) */
  uint64_t reaps;     /* times a fifo moved (a sweep, a compaction): indices into one are stale */
  kv_copy *copies;
  size_t ncopy, capcopy;
  int32_t next_tag;   /* replies' tags: FOLD__KV_REPLY_TAG0 .. INT32_MAX, wrapping */
  uint64_t digest;    /* the inits so far (keys, counts, dtypes, in order): barriers compare it */
  uint64_t ninit;
  uint64_t barriers;
  kv_outbox out;      /* messages not sent yet (fold__kvw_out_*) */
  uint64_t seq;
  size_t inflight;
  int leaving;        /* BYE sent: the servers may go, that is no loss */
  int stall_worker;   /* a server's STALL: the worker a pull waits for (-1: none) */
  int64_t stall_key;
  uint64_t stall_ms;   /* ms into the pull's wait */
  int stall_server;   /* the server that sent it */
  int fail_on;        /* a lost peer + 1 (0: none): the watchdog fails the store naming it */
  int timed_out;      /* a wait of ours timed out (not a peer's report of its timeout) */
};

/* ---- dist_worker_out.c: reply tags, requests in flight, the outbox ---- */
/* The next reply tag (FOLD__KV_REPLY_TAG0 .. INT32_MAX, wrapping). */
int32_t fold__kvw_reply_tag(struct fold__kv_worker *w);
/* Keep request r (and buf, freed with it; bytes: a send's, counted in
 * flight until it completes). FOLD_OK, or out of memory: r and buf released, the communicator failed. */
int fold__kvw_pend_add(fold_kv *kv, fold_request *r, void *buf, size_t bytes);
/* Drop the requests that completed: a sweep of both fifos. */
void fold__kvw_reap(struct fold__kv_worker *w);
/* Drop the completed requests at the front of each fifo, and sweep them
 * whole only when the bytes in flight reach the window (the count must
 * then be exact) or the requests in flight doubled since the last sweep.
 * Every push, pull and progress pass calls this: a sweep per call cost
 * O(requests in flight), 3,700 instructions per small-key push+pull with
 * 2,000 keys in flight. Sweeping only on doubling is O(1) amortized but
 * frees in bursts, which made glibc's malloc 4x slower (thousands of small
 * chunks consolidated at the next large request); the fronts keep the
 * frees as prompt as a sweep did. Sends and replies have a fifo each, as
 * a push completes long before the pull queued behind it. */
void fold__kvw_reap_some(struct fold__kv_worker *w);
/* The first request not done in f from index *i on (*i moves past the
 * done ones; it restarts at the head when stale), or NULL if none. */
fold_request *fold__kvw_first_pending(struct fold__kv_worker *w, kv_fifo *f, size_t *i, uint64_t *reaps);
/* Release every request left (a failed store's), buffers too. */
void fold__kvw_pend_free(struct fold__kv_worker *w);
/* A request's message: the header, then room for `bytes` of payload. */
char *fold__kvw_msg_new(fold_kv *kv, const fold__kv_hdr *hdr, size_t bytes);
/* Send msg (from fold__kvw_msg_new, freed once sent) to rank `to` now. */
int fold__kvw_msg_send(fold_kv *kv, int to, int type, char *msg, size_t bytes);
/* Send queued messages, highest priority first, while the bytes in flight
 * are under the window (one message at least, however big). */
int fold__kvw_pump(fold_kv *kv);
int fold__kvw_out_before(const void *a, const void *b); /* the outbox's order (core/heap.h) */
void fold__kvw_out_init(kv_outbox *o);
/* Messages queued, not sent. */
static inline size_t fold__kvw_out_size(const kv_outbox *o) { return o->n - o->head + fold__heap_size(&o->heap); }
/* Free every message still queued, and the outbox's storage. */
void fold__kvw_out_free(kv_outbox *o);
/* Queue *m (seq: larger than any queued before): on the fifo when it comes
 * after the fifo's last (its priority not above the last's), else on the
 * heap. 0 or FOLD_ENOMEM (nothing queued). */
int fold__kvw_out_push(kv_outbox *o, const kv_out *m);
/* The first message in fold__kvw_out_before's order, out to *m: 1, or 0
 * when the outbox is empty. */
int fold__kvw_out_pop(kv_outbox *o, kv_out *m);
/* Queue msg for rank `to` with priority prio; a message of a key never
 * overtakes an earlier one of the same key (per-key order: a pull after a
 * push sees it), so its priority is capped by theirs. */
int fold__kvw_msg_queue(fold_kv *kv, int to, int type, char *msg, size_t bytes, int prio, fold__kv_ent *e);

#endif /* FOLD_KV_DIST_WRK_H */
