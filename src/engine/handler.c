/* handler.c — handlers for unsolicited messages on extension contexts, run from the top level of fold__progress. */
#include <stdlib.h>

#include "engine/engine.h"

struct fold__handler {
  fold__list link; /* svc->handlers */
  int ctx;
  fold__handler_fn fn;
  void *arg;
};

/* A dropped rendezvous message: drained into buf, freed once complete. */
struct fold__sink {
  fold__list link; /* svc->sinks */
  fold_request *r;
  void *buf;
};

static struct fold__handler *find(const fold_comm *c, int ctx) {
  FOLD__LIST_FOR_EACH(struct fold__handler, h, &c->svc->handlers, link)
    if (h->ctx == ctx) return h;
  return NULL;
}

int fold__handler_set(fold_comm *c, int ctx, fold__handler_fn fn, void *arg) {
  if (!fold__ctx_is_ext(ctx))
    return fold__error(c, FOLD_EINVAL, "rank %d: context %d is not an extension context (fold__ctx_ext)", c->rank, ctx);
  struct fold__handler *h = find(c, ctx);
  if (fn == NULL) {
    if (h) {
      fold__list_unlink(&h->link);
      free(h);
    }
    return FOLD_OK;
  }
  if (h == NULL) {
    h = calloc(1, sizeof *h);
    if (h == NULL) return fold__error(c, FOLD_ENOMEM, "rank %d: out of memory for a message handler", c->rank);
    h->ctx = ctx;
    fold__list_push_back(&c->svc->handlers, &h->link);
  }
  h->fn = fn;
  h->arg = arg;
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
  FOLD__LIST_FOR_EACH_SAFE(struct fold__sink, k, &c->svc->sinks, link) {
    if (!all && !fold__req_done(k->r)) continue;
    fold__list_unlink(&k->link);
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
    if (fold__list_linked(&u->link)) { /* on c->unexp: no other list holds an eager one here */
      fold__list_unlink(&u->link);
      fold__unexp_free(u);
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
  fold__list_push_front(&c->svc->sinks, &k->link);
}

void fold__handlers_run(fold_comm *c) {
  struct fold__svc *s = c->svc;
  if (s->in_handlers || c->in_poll || (!s->handlers_pending && fold__list_empty(&s->sinks))) return;
  s->in_handlers = 1;
  s->handlers_pending = 0;
  reap_sinks(c, 0);
  /* Oldest first. The queue holds no handled message but those not yet
   * handed over (each is consumed or dropped right after its handler), so
   * a handler's receive for (src, ctx, tag) takes this very message. A
   * scan per message: the unexpected queue is short when it matters. */
  while (!fold__comm_failed(c)) {
    fold__unexp *u = NULL;
    struct fold__handler *h = NULL;
    FOLD__LIST_FOR_EACH(fold__unexp, q, &c->unexp, link) {
      if (fold__ctx_is_ext(q->ctx) && (h = find(c, q->ctx)) != NULL) {
        u = q;
        break;
      }
    }
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
  for (fold__list *n; (n = fold__list_pop_front(&c->svc->handlers)) != NULL;)
    free(FOLD__LIST_ENTRY(n, struct fold__handler, link));
}
