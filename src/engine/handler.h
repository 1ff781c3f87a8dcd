/* handler.h — extension contexts and the handlers of unsolicited messages on them (engine/handler.c). */
#ifndef FOLD_ENGINE_HANDLER_H
#define FOLD_ENGINE_HANDLER_H

#include "core/internal.h"

/* ---- handlers for unsolicited messages (engine/handler.c) --------------------------- */
/* The extension contexts in use, one per capability, listed here so that
 * no two pick the same k (numbered after the issue that brought each). */
enum {
  FOLD__EXT_REPORTS = 0,  /* FOLD__CTX_SYS: peers' failure reports (engine/fail.c) */
  FOLD__EXT_AREDUCE = 11, /* asynchronous reductions (areduce/areduce.c) */
  FOLD__EXT_KV = 12       /* reserved: the parameter-server store */
};
/* Extension contexts (fold__ctx_ext(k), k in [1, FOLD__CTX_EXT_COUNT); k = 0
 * is FOLD__CTX_SYS, the failure reports of engine/fail.c) need no transport
 * support: every transport carries any valid context. A layer claims one
 * with a handler; when a message arrives on it and no posted receive takes
 * it, the engine calls the handler from the top level of fold__progress
 * (never inside a transport's poll), once per message, in arrival order:
 *   fn(c, arg, src, tag, data, bytes)
 * data is the payload when it arrived whole (eager; valid during the call
 * only), NULL when the sender waits for a receive (rendezvous: on tcp
 * beyond 64 KiB). The handler consumes the message by posting a receive
 * that matches it (fold__irecv_bytes(c, buf, cap, src, ctx, tag, &r): it
 * takes this message, eager ones complete at once) or by returning without
 * one, which drops it (a rendezvous message is then drained into scratch;
 * its sender's send completes normally). A handler may send, post
 * receives, start operations and arm timers; it must not wait. */
typedef void (*fold__handler_fn)(fold_comm *c, void *arg, int src, int tag, const void *data, size_t bytes);
/* Set (fn != NULL) or clear (fn == NULL) the handler of context ctx.
 * Messages already queued on ctx go to the new handler at the next
 * progress. FOLD_EINVAL (with a message) if ctx is not an extension
 * context, FOLD_ENOMEM. */
int fold__handler_set(fold_comm *c, int ctx, fold__handler_fn fn, void *arg);
/* Called by fold__deliver_unexp: 1 if u's context has a handler (u then
 * waits on the unexpected queue for fold__handlers_run). */
int fold__handler_claims(fold_comm *c, const fold__unexp *u);
/* Hand queued messages of handled contexts to their handlers (fold__progress
 * and fold__fail_for_lost call this after polling). Not reentrant: a call
 * from inside a handler does nothing. */
void fold__handlers_run(fold_comm *c);

#endif /* FOLD_ENGINE_HANDLER_H */
