/* request.c — request lifetime, and matching of receives with arrived messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "engine/engine.h"
#include "transport/transport.h"

fold_request *fold__req_new(fold_comm *c, int kind) {
  /* malloc and memset, not calloc: glibc's calloc skips the per-thread cache
   * (tcache) and takes the arena's path every time, about 300 instructions
   * more per call (callgrind, an 8 B allreduce); a request is made per call. */
  fold_request *r = malloc(sizeof *r);
  if (r == NULL)
    return NULL;
  memset(r, 0, sizeof *r);
  r->kind = kind;
  r->comm = c;
  r->peer = -1;
  atomic_init(&r->refs, 1);
  atomic_init(&r->done, 0);
  atomic_init(&r->rdv, 0);
  fold__list_init(&r->link);
  fold__list_init(&r->user_link);
  return r;
}

void fold__req_user_give(fold_request *r) {
  fold_comm *c = r->comm;
  r->user = 1;
  fold__list_push_front(&c->user_reqs, &r->user_link);
}

void fold__req_user_done(fold_request *r) {
  if (!r->user) return;
  fold__list_unlink(&r->user_link);
  r->user = 0;
}

void fold__comm_queues_init(fold_comm *c) {
  fold__list_init(&c->posted);
  fold__list_init(&c->unexp);
  fold__list_init(&c->tasks);
  fold__list_init(&c->user_reqs);
}

void fold__comm_drop_queues(fold_comm *c) {
  /* Unmatched messages: eager ones are plain memory; rendezvous ones belong
   * to their transport, which must release them before it is destroyed. */
  FOLD__LIST_FOR_EACH_SAFE(fold__unexp, u, &c->unexp, link) {
    fold__list_unlink(&u->link);
    fold__unexp_drop(u);
  }
  /* The queues hold no references; the user's requests still pending can
   * never be waited on after destroy, so their reference goes here (a
   * collective's own receives belong to its task and go with it). */
  FOLD__LIST_FOR_EACH_SAFE(fold_request, r, &c->posted, link) fold__list_unlink(&r->link);
  FOLD__LIST_FOR_EACH_SAFE(fold__task, t, &c->tasks, link) fold__list_unlink(&t->link);
  FOLD__LIST_FOR_EACH_SAFE(fold_request, r, &c->user_reqs, user_link) {
    fold__req_user_done(r);
    fold__req_unref(r);
  }
}

/* A search, not a plain unlink: a matched receive may be on a transport's
 * list through the same link (tcp's receives waiting for rendezvous data),
 * which is not ours to take it off. Rare (a cancelled receive). */
int fold__unpost(fold_comm *c, fold_request *r) {
  FOLD__LIST_FOR_EACH(fold_request, q, &c->posted, link) {
    if (q != r) continue;
    fold__list_unlink(&q->link);
    return 1;
  }
  return 0;
}

void fold__req_ref(fold_request *r) { atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed); }

void fold__req_unref(fold_request *r) {
  if (r == NULL)
    return;
  if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1)
    return;
  if (r->task && r->task->release)
    r->task->release(r->task);
  free(r);
}

void fold__req_drop_list(fold__list *head, int status) {
  FOLD__LIST_FOR_EACH_SAFE(fold_request, r, head, link) {
    fold__list_unlink(&r->link);
    fold__req_complete(r, status);
    fold__req_unref(r);
  }
}

/* done: 0 pending, 2 being completed (status being written), 1 complete.
 * The 0 -> 2 claim makes completion idempotent across threads. */
void fold__req_complete(fold_request *r, int status) {
  int expected = 0;
  if (!atomic_compare_exchange_strong_explicit(&r->done, &expected, 2, memory_order_acq_rel,
                                               memory_order_relaxed))
    return;
  r->status = status;
  atomic_store_explicit(&r->done, 1, memory_order_release);
}

void fold__recv_names(int peer, int tag, char *from, size_t from_cap, char *tagbuf, size_t tag_cap) {
  if (peer == FOLD_ANY_SOURCE) snprintf(from, from_cap, "any source");
  else snprintf(from, from_cap, "rank %d", peer);
  if (tag == FOLD_ANY_TAG) snprintf(tagbuf, tag_cap, "any tag");
  else snprintf(tagbuf, tag_cap, "tag %d", tag);
}

int fold__all_others_lost(const fold_comm *c) {
  if (c->size < 2)
    return 0;
  for (int p = 0; p < c->size; p++)
    if (p != c->rank && !c->lost[p])
      return 0;
  return 1;
}

/* The oldest posted receive that wants the message gets it (MPI's rule), a
 * wildcard one included: it learns the source and tag it got here. */
fold_request *fold__match_posted(fold_comm *c, int src, int ctx, int tag) {
  FOLD__LIST_FOR_EACH(fold_request, r, &c->posted, link) {
    if (r->ctx != ctx || !fold__recv_wants(r->peer, r->tag, ctx, src, tag))
      continue;
    r->peer = src;
    r->tag = tag;
    fold__list_unlink(&r->link);
    return r;
  }
  return NULL;
}

fold__unexp *fold__unexp_new(int src, int ctx, int tag, size_t bytes, size_t eager_bytes) {
  if (eager_bytes > SIZE_MAX - sizeof(fold__unexp))
    return NULL;
  fold__unexp *u = malloc(sizeof *u + eager_bytes);
  if (u == NULL)
    return NULL;
  memset(u, 0, sizeof *u);
  fold__list_init(&u->link);
  u->src = src;
  u->ctx = ctx;
  u->tag = tag;
  u->bytes = bytes;
  u->data = eager_bytes ? (void *)(u + 1) : NULL;
  return u;
}

int fold__recv_too_small(fold_request *r, size_t bytes) {
  fold_comm *c = r->comm;
  fold__error(c, FOLD_EMISMATCH,
              "fold_recv: rank %d: message of %zu bytes from rank %d (tag %d) is larger than the "
              "receive buffer of %zu bytes",
              c->rank, bytes, r->peer, r->tag, r->bytes);
  fold__req_complete(r, FOLD_EMISMATCH);
  return FOLD_EMISMATCH;
}

void fold__recv_fill(fold_request *r, const void *data, size_t bytes) {
  if (bytes > r->bytes) {
    fold__recv_too_small(r, bytes);
    return;
  }
  if (bytes)
    memcpy(r->buf, data, bytes);
  r->got = bytes;
  fold__req_complete(r, FOLD_OK);
}

/* Hand u to receive r: eager payloads are copied here, rendezvous ones are
 * pulled by their transport. Frees u (eager) or passes it on (rendezvous). */
static void unexp_to_recv(fold__unexp *u, fold_request *r) {
  if (u->tp) {
    int rc = u->tp->ops->pull(u->tp, u, r);
    if (rc < 0)
      fold__req_complete(r, rc);
    return;
  }
  fold__recv_fill(r, u->data, u->bytes);
  fold__unexp_free(u);
}

void fold__deliver_unexp(fold_comm *c, fold__unexp *u) {
  /* a child's message reaches the root its transports belong to; the root
   * passes it on (engine/family.c); never on the world's path */
  if (c->fam && !c->kid && fold__fam_deliver(c, u))
    return;
  fold_request *r = fold__match_posted(c, u->src, u->ctx, u->tag);
  if (r) {
    unexp_to_recv(u, r);
    return;
  }
  fold__list_push_back(&c->unexp, &u->link);
  /* An extension context's handler (a peer's failure report on
   * FOLD__CTX_SYS among them) gets it from the next fold__progress, not
   * here: we may be inside a transport's poll. */
  fold__handler_claims(c, u);
}

void fold__unexp_take_tp(fold_comm *c, const fold__tp *tp, void (*drop)(fold__unexp *u, void *arg), void *arg) {
  FOLD__LIST_FOR_EACH_SAFE(fold__unexp, u, &c->unexp, link) {
    if (u->tp != tp) continue;
    fold__list_unlink(&u->link);
    drop(u, arg);
  }
}

int fold__recv_post(fold_comm *c, fold_request *r) {
  int st = fold__comm_failed(c);
  if (st) {
    fold__req_complete(r, st);
    return st;
  }
  /* the queue is in arrival order: a wildcard takes the earliest match */
  FOLD__LIST_FOR_EACH(fold__unexp, u, &c->unexp, link) {
    if (u->ctx != r->ctx || !fold__recv_wants(r->peer, r->tag, r->ctx, u->src, u->tag))
      continue;
    r->peer = u->src;
    r->tag = u->tag;
    fold__list_unlink(&u->link);
    fold__handler_note_taken(c, u);
    unexp_to_recv(u, r);
    /* complete now, and the task that posted it may have gone on waiting:
     * the wait passes again before it sleeps (svc->pass_again; ring_skip in
     * place on shm slept until the next call's traffic woke it, 10 ms) */
    c->svc->pass_again = 1;
    return FOLD_OK;
  }
  fold__list_push_back(&c->posted, &r->link);
  if (r->peer == FOLD_ANY_SOURCE ? fold__all_others_lost(c) : c->lost[r->peer])
    return fold__fail_for_lost(c, r->peer, "receive from");
  if (r->peer != FOLD_ANY_SOURCE && r->peer != c->rank) { /* a transport that connects on first use: now */
    fold__tp *tp = fold__peer_tp(c, r->peer);
    if (tp && tp->ops->want)
      tp->ops->want(tp, fold__root_rank(c, r->peer));
  }
  return FOLD_OK;
}

/* A message to oneself never touches a transport: it is matched here. */
static int send_to_self(fold_comm *c, fold_request *r) {
  fold_request *rr = fold__match_posted(c, c->rank, r->ctx, r->tag);
  if (rr) {
    fold__recv_fill(rr, r->buf, r->bytes);
  } else {
    fold__unexp *u = fold__unexp_new(c->rank, r->ctx, r->tag, r->bytes, r->bytes);
    if (u == NULL)
      return fold__error(c, FOLD_ENOMEM, "fold_send: rank %d: out of memory buffering %zu bytes to self",
                         c->rank, r->bytes);
    if (r->bytes)
      memcpy(u->data, r->buf, r->bytes);
    fold__deliver_unexp(c, u);
  }
  fold__req_complete(r, FOLD_OK);
  return FOLD_OK;
}

int fold__send_post(fold_comm *c, fold_request *r) {
  int st = fold__comm_failed(c);
  if (st) {
    fold__req_complete(r, st);
    return st;
  }
  if (r->peer == c->rank)
    return send_to_self(c, r);
  if (c->lost[r->peer]) {
    st = fold__fail_for_lost(c, r->peer, "send to");
    fold__req_complete(r, st);
    return st;
  }
  fold__tp *tp = fold__peer_tp(c, r->peer);
  r->cid = c->cid;
  r->tpeer = fold__root_rank(c, r->peer);
  if (tp == NULL) {
    fold__req_complete(r, FOLD_EINTERNAL);
    return fold__error(c, FOLD_EINTERNAL, "rank %d: no transport reaches rank %d", c->rank, r->peer);
  }
  int rc = tp->ops->isend(tp, r);
  if (rc < 0) {
    fold__req_complete(r, rc);
    return rc;
  }
  return FOLD_OK;
}
