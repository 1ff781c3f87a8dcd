/* handler.c — handlers for unsolicited messages on extension contexts, run from the top level of fold__progress. */
#include <stdlib.h>

#include "core/queue.h"
#include "engine/engine.h"

struct fold__handler {
  struct fold__handler *next;
  int ctx;
  fold__handler_fn fn;
  void *arg;
};

/* A dropped rendezvous message: drained into buf, freed once complete. */
struct fold__sink {
  struct fold__sink *next;
  fold_request *r;
  void *buf;
};

static struct fold__handler *find(const fold_comm *c, int ctx) {
  for (struct fold__handler *h = c->svc->handlers; h; h = h->next)
    if (h->ctx == ctx) return h;
  return NULL;
}

int fold__handler_set(fold_comm *c, int ctx, fold__handler_fn fn, void *arg) {
  if (!fold__ctx_is_ext(ctx))
    return fold__error(c, FOLD_EINVAL, "rank %d: context %d is not an extension context (fold__ctx_ext)", c->rank, ctx);
  struct fold__handler **pp = &c->svc->handlers;
  while (*pp && (*pp)->ctx != ctx) pp = &(*pp)->next;
  if (fn == NULL) {
    struct fold__handler *h = *pp;
    if (h) {
      *pp = h->next;
      free(h);
    }
    return FOLD_OK;
  }
  if (*pp == NULL) {
    struct fold__handler *h = calloc(1, sizeof *h);
    if (h == NULL) return fold__error(c, FOLD_ENOMEM, "rank %d: out of memory for a message handler", c->rank);
    h->ctx = ctx;
    *pp = h;
  }
  (*pp)->fn = fn;
  (*pp)->arg = arg;
  c->svc->handlers_pending = 1; /* messages queued before now go to it too */
  return FOLD_OK;
}

int fold__handler_claims(fold_comm *c, const fold__unexp *u) {
  if (!fold__ctx_is_ext(u->ctx) || find(c, u->ctx) == NULL) return 0;
  c->svc->handlers_pending = 1;
  return 1;
}

/* Free the drains that are complete (all of them when `all`: the
 * transports are gone). */
static void reap_sinks(fold_comm *c, int all) {
  for (struct fold__sink **pp = &c->svc->sinks; *pp;) {
    struct fold__sink *k = *pp;
    if (!all && !fold__req_done(k->r)) {
      pp = &k->next;
      continue;
    }
    *pp = k->next;
    fold__req_unref(k->r);
    free(k->buf);
    free(k);
  }
}

/* Take u (still queued, the oldest of its source, context and tag) off the
 * unexpected queue and discard it: an eager payload is freed; a rendezvous
 * one is received into scratch, so that its sender completes normally. */
static void drop(fold_comm *c, fold__unexp *u) {
  if (u->tp == NULL) {
    fold__unexp *prev = NULL;
    for (fold__unexp *q = c->unexp_head; q; prev = q, q = q->next) {
      if (q != u) continue;
      FOLD__QUEUE_UNLINK(c->unexp_head, c->unexp_tail, prev, q);
      free(q);
      return;
    }
    return;
  }
  struct fold__sink *k = calloc(1, sizeof *k);
  void *buf = malloc(u->bytes);
  if (k == NULL || buf == NULL) {
    free(k);
    free(buf);
    fold__comm_fail(c, FOLD_ENOMEM, "rank %d: out of memory draining a %zu-byte message from rank %d that no handler took",
                    c->rank, u->bytes, u->src);
    return;
  }
  k->buf = buf;
  if (fold__irecv_bytes(c, buf, u->bytes, u->src, u->ctx, u->tag, &k->r) != FOLD_OK) {
    free(buf);
    free(k);
    return;
  }
  k->next = c->svc->sinks;
  c->svc->sinks = k;
}

void fold__handlers_run(fold_comm *c) {
  struct fold__svc *s = c->svc;
  if (s->in_handlers || c->in_poll || (!s->handlers_pending && s->sinks == NULL)) return;
  s->in_handlers = 1;
  s->handlers_pending = 0;
  reap_sinks(c, 0);
  /* Oldest first. The queue holds no handled message but those not yet
   * handed over (each is consumed or dropped right after its handler), so
   * a handler's receive for (src, ctx, tag) takes this very message. A
   * scan per message: the unexpected queue is short when it matters. */
  while (!fold__comm_failed(c)) {
    fold__unexp *u;
    struct fold__handler *h = NULL;
    for (u = c->unexp_head; u; u = u->next)
      if (fold__ctx_is_ext(u->ctx) && (h = find(c, u->ctx)) != NULL) break;
    if (u == NULL) break;
    s->cur = u; /* fold__recv_post clears it when a receive takes u */
    h->fn(c, h->arg, u->src, u->tag, u->tp ? NULL : u->data, u->bytes);
    if (s->cur == u && !fold__comm_failed(c)) drop(c, u);
    s->cur = NULL;
  }
  s->in_handlers = 0;
}

void fold__handlers_free(fold_comm *c) {
  reap_sinks(c, 1);
  while (c->svc->handlers) {
    struct fold__handler *h = c->svc->handlers;
    c->svc->handlers = h->next;
    free(h);
  }
}
