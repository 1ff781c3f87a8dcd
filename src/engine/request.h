/* request.h — requests, matching of receives against messages, and the engine's point-to-point entry (engine/request.c, engine/p2p.c). */
#ifndef FOLD_ENGINE_REQUEST_H
#define FOLD_ENGINE_REQUEST_H

#include <stdlib.h>

#include "core/internal.h"

/* ---- requests and matching (engine/request.c) -------------------------------------- */
fold_request *fold__req_new(fold_comm *c, int kind); /* refs = 1 */
/* The request goes to the user: track it until fold__req_user_done. */
void fold__req_user_give(fold_request *r);
/* The user's reference is being dropped (fold_wait/fold_test finished). */
void fold__req_user_done(fold_request *r);
/* Make c's queues (posted, unexp, tasks, user_reqs) empty lists: once, when
 * c is allocated. */
void fold__comm_queues_init(fold_comm *c);
/* Drop what a comm holds for its user and its queues, not its transports:
 * unmatched messages, the posted queue, active tasks, the user's requests
 * (comm.c's fold__comm_free, and a family's members when they go). */
void fold__comm_drop_queues(fold_comm *c);
/* Take a posted receive off the posted queue (0 if it was not there). */
int fold__unpost(fold_comm *c, fold_request *r);
void fold__req_ref(fold_request *r);
void fold__req_unref(fold_request *r);
/* Complete r with status (release store; idempotent: the first call wins).
 * Transports call this from any thread. */
void fold__req_complete(fold_request *r, int status);
/* Complete every request of the list `head` (linked through ->link) with
 * status, unlinking each, and drop the reference its holder kept (a
 * transport shutting down). */
void fold__req_drop_list(fold__list *head, int status);
static inline int fold__req_done(const fold_request *r) {
  /* 2 means "being completed": the status is not written yet */
  return atomic_load_explicit(&((fold_request *)r)->done, memory_order_acquire) == 1;
}

/* Does a receive posted for (peer, tag) on ctx take a message (src, tag)?
 * FOLD_ANY_SOURCE / FOLD_ANY_TAG match anything, on user point-to-point
 * only: the library's own contexts always name both. */
static inline int fold__recv_wants(int peer, int want_tag, int ctx, int src, int tag) {
  if (ctx != FOLD__CTX_P2P)
    return peer == src && want_tag == tag;
  return (peer == src || peer == FOLD_ANY_SOURCE) && (want_tag == tag || want_tag == FOLD_ANY_TAG);
}
/* Is every rank but this one lost? A receive from FOLD_ANY_SOURCE can then
 * never be matched (see fold__fail_for_lost). False for a single rank. */
int fold__all_others_lost(const fold_comm *c);
/* How messages name a receive's source and tag: "rank 3" or "any source",
 * "tag 5" or "any tag" (never -1), written into the two buffers. */
void fold__recv_names(int peer, int tag, char *from, size_t from_cap, char *tagbuf, size_t tag_cap);
/* Remove and return the oldest posted receive matching (src, ctx, tag), or
 * NULL. A wildcard receive that matches gets the message's source and tag
 * in its peer and tag (so transports and the status see the real ones). The queue holds no reference: the pointer stays valid while the
 * waiter holds its reference, i.e. until the request completes or the
 * communicator fails; a transport that keeps it across calls takes its own
 * reference. Owner thread only. */
fold_request *fold__match_posted(fold_comm *c, int src, int ctx, int tag);
/* fold__match_posted on the child with id cid of root's family (engine/family.c). */
fold_request *fold__fam_match(fold_comm *root, uint32_t cid, int src, int ctx, int tag);
static inline fold_request *fold__match_cid(fold_comm *root, uint32_t cid, int src, int ctx, int tag) {
  /* the world's messages take the direct path: no lookup */
  return cid == 0 ? fold__match_posted(root, src, ctx, tag) : fold__fam_match(root, cid, src, ctx, tag);
}
/* Allocate an unexpected-message record with `eager_bytes` of payload room
 * (data points at it; 0 for rendezvous: data = NULL). */
fold__unexp *fold__unexp_new(int src, int ctx, int tag, size_t bytes, size_t eager_bytes);
/* Free an eager record whose payload was taken or dropped: its release, or free(). */
static inline void fold__unexp_free(fold__unexp *u) {
  if (u->release) u->release(u);
  else free(u);
}
/* Hand a fully arrived unexpected message to the engine: it goes to the
 * oldest matching posted receive if one appeared meanwhile (payload copied,
 * record freed), else to the unexpected queue. Owner thread only. */
void fold__deliver_unexp(fold_comm *c, fold__unexp *u);
/* Take off c's unexpected queue every message transport tp left there
 * (rendezvous offers not received yet), oldest first, and hand each to
 * drop, which owns it then (it answers the sender and frees the record):
 * for a transport that shuts down, whose offers will not be taken. The
 * queue is the engine's; transports change it only through these calls.
 * Owner thread only. */
void fold__unexp_take_tp(fold_comm *c, const fold__tp *tp, void (*drop)(fold__unexp *u, void *arg), void *arg);
/* What c waits for, for a deadlock's message (the simulator's): its oldest
 * posted receive (NULL: none), and whether it has a posted receive or an
 * active task at all (its family's other members: fold__fam_busy). */
static inline const fold_request *fold__posted_first(const fold_comm *c) {
  return fold__list_empty(&c->posted) ? NULL : FOLD__LIST_ENTRY(c->posted.next, fold_request, link);
}
static inline int fold__comm_waits(const fold_comm *c) {
  return !fold__list_empty(&c->posted) || !fold__list_empty(&c->tasks);
}
/* Copy `bytes` of payload into receive r and complete it: FOLD_EMISMATCH
 * (nothing copied) if bytes exceeds r's capacity. */
void fold__recv_fill(fold_request *r, const void *data, size_t bytes);
/* Post receive r: match it against unexpected messages (eager: copy now;
 * rendezvous: ask the transport to pull), else queue it. Owner thread only. */
int fold__recv_post(fold_comm *c, fold_request *r);
/* Start send r through the transport that reaches r->peer. */
int fold__send_post(fold_comm *c, fold_request *r);
/* The message used when a receive is too small. */
int fold__recv_too_small(fold_request *r, size_t bytes);

/* The largest payload a message of c on context ctx may have and still go
 * eagerly through every transport of c (the smallest of their eager_max,
 * transport.h); 0: any size does. */
size_t fold__eager_max(const fold_comm *c, int ctx);

/* Internal point-to-point helpers for tasks: byte counts, any context. */
int fold__isend_bytes(fold_comm *c, const void *buf, size_t bytes, int peer, int ctx, int tag, fold_request **req);
int fold__irecv_bytes(fold_comm *c, void *buf, size_t bytes, int peer, int ctx, int tag, fold_request **req);

#endif /* FOLD_ENGINE_REQUEST_H */
