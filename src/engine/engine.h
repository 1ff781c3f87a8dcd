/* engine.h — the engine's services for the layers above it: timers, the
 * clock and cost interface, communicator extension slots with teardown
 * hooks, and handlers for unsolicited messages (docs/design.md §7).
 *
 * Everything here runs on the communicator's owner thread, from the top
 * level of fold__progress (never inside a transport's poll), on the engine
 * clock (fold__now): real time on real transports, virtual time in the
 * simulator. The same code therefore runs unchanged on both. */
#ifndef FOLD_ENGINE_H
#define FOLD_ENGINE_H

#include "core/internal.h"

/* ---- timers (engine/timer.c) ----------------------------------------------
 * A timer is caller-owned memory (no allocation: arm and cancel never fail)
 * on the communicator's list, sorted by deadline; timers of equal deadline
 * fire in the order they were armed. fold__progress fires every timer due
 * at its start (its deadline <= fold__now), before it steps the tasks, so a
 * task waiting for a timer sees its effect in the same pass. A wait
 * (fold__wait_req) never sleeps past the next deadline; in the simulator an
 * armed timer is an event, so virtual time advances to it (and a cancelled
 * timer leaves no trace in the virtual time).
 *
 * A callback may start operations, arm timers (itself included: a periodic
 * timer re-arms itself) and cancel any timer. A timer armed from a callback
 * for a time already due fires at the next fold__progress, not in the same
 * pass, so a callback that re-arms itself for "now" cannot spin forever.
 * A failed communicator fires no timers. */
typedef struct fold__timer fold__timer;
typedef void (*fold__timer_fn)(fold_comm *c, fold__timer *t, void *arg);
struct fold__timer {
  int64_t due;         /* deadline on the engine clock (ns), while armed */
  fold__timer_fn fn;
  void *arg;
  fold__timer *next;   /* the communicator's sorted list */
  uint64_t seq;        /* arming order: which timers a firing pass may fire */
  int armed;
};

/* Prepare t (once, before the first arm): fn(c, t, arg) runs when it fires. */
void fold__timer_init(fold__timer *t, fold__timer_fn fn, void *arg);
/* Arm t to fire at engine time due_ns (a time in the past: at the next
 * progress). Re-arming an armed timer moves it. Returns 0, or c's failure
 * status (the timer is then not armed) if the simulator cannot schedule it. */
int fold__timer_arm(fold_comm *c, fold__timer *t, int64_t due_ns);
/* fold__timer_arm(c, t, fold__now(c) + delay_ns). */
int fold__timer_arm_in(fold_comm *c, fold__timer *t, int64_t delay_ns);
/* Disarm t if it is armed; safe from any timer callback (its own included)
 * and on a timer that is not armed. */
void fold__timer_cancel(fold_comm *c, fold__timer *t);
static inline int fold__timer_armed(const fold__timer *t) { return t->armed; }
/* The earliest deadline of c's armed timers, INT64_MAX if none. */
int64_t fold__timer_next(const fold_comm *c);
/* Fire the due timers (fold__progress calls this). Returns how many fired. */
int fold__timers_run(fold_comm *c);

/* ---- the clock and cost interface (engine/time.c) ------------------------------
 * Local work is charged to the engine, not to a transport: on real
 * transports the time passed because the work was really done, so charging
 * does nothing; in the simulator the rank is busy that long in virtual time
 * (its later sends start no earlier, a blocking call returns no earlier).
 * A communicator whose clock is not real time (the simulator) installs
 * hooks with fold__engine_hooks_set; without hooks the clock is real. */
typedef struct fold__clock_hooks {
  void (*charge)(fold_comm *c, double seconds);
  double (*reduce_cost)(const fold_comm *c, size_t bytes); /* virtual seconds of one reduction call */
  int (*wake_at)(fold_comm *c, int64_t t_ns); /* make the clock reach t_ns and run fold__progress(c) there */
} fold__clock_hooks;
void fold__engine_hooks_set(fold_comm *c, const fold__clock_hooks *hooks);
/* 1 if c's clock is not real time (hooks installed: the simulator), where
 * costs are modelled, not measured. */
static inline int fold__engine_virtual(const fold_comm *c);
/* c's rank works `seconds` (seconds <= 0: nothing). */
void fold__engine_charge(fold_comm *c, double seconds);
/* What one local reduction call over `bytes` costs in the clock's time: 0 on
 * real transports (the work takes the time it takes), op_overhead + bytes *
 * op_time of the rank in the simulator. The collective executor sums this
 * over a round's reductions and charges the sum. */
double fold__engine_reduce_cost(const fold_comm *c, size_t bytes);
/* Ask the clock to reach t_ns (used by the timers; real time: nothing to
 * do, waits are clamped instead). Returns 0 or a negative FOLD_E* code. */
int fold__engine_wake_at(fold_comm *c, int64_t t_ns);

/* FOLD_INJECT_DELAY=RANK:SECONDS[,RANK:SECONDS...]: a test and benchmark
 * knob that makes the named ranks stragglers. It is parsed once per
 * communicator, when it is created; a malformed value is warned about once
 * per process and ignored, a valid one logged once per process at WARN.
 * Returns this rank's delay before each local reduction step of a
 * collective, in ns (0: none). The collective executor waits for it on an
 * engine timer (the task returns "waiting" meanwhile), so the delay is
 * real time on real transports and virtual time in the simulator. */
int64_t fold__engine_inject_delay(const fold_comm *c);

/* ---- extension slots (engine/ext.c) ------------------------------------------------
 * Long-lived state of a layer (the collective cache, selection rules, an
 * asynchronous reduction, a store, a queue) hangs off a communicator
 * through a slot named by a key (the address of a static in the layer), not
 * through a field of struct fold_comm. When the communicator is destroyed,
 * the teardown hooks run in the reverse order of attachment, after the
 * user's pending requests are dropped and before the transports go (a hook
 * must not communicate). Few slots per communicator: a list. */
/* Attach ptr under key with teardown (may be NULL: nothing to free).
 * FOLD_EINVAL if key is NULL or already attached, FOLD_ENOMEM. */
int fold__ext_attach(fold_comm *c, const void *key, void *ptr, void (*teardown)(void *ptr));
/* The pointer attached under key, or NULL. */
void *fold__ext_get(const fold_comm *c, const void *key);
/* Remove key's slot without running its teardown; returns its pointer (or
 * NULL if key is not attached). */
void *fold__ext_detach(fold_comm *c, const void *key);
/* Run every teardown hook, newest first, and empty the slots (comm.c, when
 * the communicator is freed). */
void fold__ext_teardown(fold_comm *c);

/* ---- handlers for unsolicited messages (engine/handler.c) ---------------------------
 * Extension contexts (fold__ctx_ext(k), k in [1, FOLD__CTX_EXT_COUNT); k = 0
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

/* ---- the engine's per-communicator state (engine/ext.c) ---------------------------- */
struct fold__ext_slot;
struct fold__handler;
struct fold__sink;
struct fold__svc {
  fold__timer *timers;            /* armed, sorted by (due, seq) */
  uint64_t timer_seq;             /* last arming number handed out */
  const fold__clock_hooks *hooks; /* NULL: real time */
  int64_t inject_delay_ns;        /* FOLD_INJECT_DELAY for this rank */
  struct fold__ext_slot *slots;   /* newest first */
  struct fold__handler *handlers; /* few: a list */
  struct fold__sink *sinks;       /* dropped rendezvous messages being drained */
  const fold__unexp *cur;         /* the message a handler is being called for */
  int handlers_pending;           /* a handled message may be queued */
  int in_handlers;                /* fold__handlers_run is on the stack */
};
/* fold__recv_post took u off the unexpected queue: if a handler is being
 * called for it, the handler consumed it. */
static inline int fold__engine_virtual(const fold_comm *c) { return c->svc->hooks != NULL; }
static inline void fold__handler_note_taken(fold_comm *c, const fold__unexp *u) {
  if (c->svc->cur == u) c->svc->cur = NULL;
}
/* Allocate c->svc and attach the layers every communicator has (the
 * failure reports' handler, algorithm selection, FOLD_INJECT_DELAY).
 * FOLD_ENOMEM. */
int fold__svc_init(fold_comm *c);
/* The same for a sub-communicator k of parent (comm/comm_split.c): the
 * clock hooks, the failure reports' handler, and the parent's selection
 * (forced algorithms, a copy of its rules) instead of the environment's.
 * FOLD_INJECT_DELAY is read once k knows its rank (fold__inject_delay_init). */
int fold__svc_init_child(fold_comm *k, const fold_comm *parent);
/* Free c->svc, after the transports are gone (drain buffers may be written
 * until then). */
void fold__svc_free(fold_comm *c);
/* The layers fold__svc_init attaches, and pieces of fold__svc_init/free. */
int fold__report_init(fold_comm *c);    /* engine/fail.c: the handler of FOLD__CTX_SYS */
int fold__select_init(fold_comm *c);    /* select/select.c: FOLD_ALGO, FOLD_RULES */
int fold__select_inherit(fold_comm *k, const fold_comm *parent); /* select/select.c: a child's */
void fold__inject_delay_init(fold_comm *c);
void fold__handlers_free(fold_comm *c);

#endif /* FOLD_ENGINE_H */
