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

/* ==== the engine's core: requests, matching, progress, fail-stop, the
 * family's routing and the progress thread (moved here from core/internal.h,
 * which keeps the shared types and core's own calls) ==================== */

/* ---- requests and matching (engine/request.c) -------------------------------------- */
fold_request *fold__req_new(fold_comm *c, int kind); /* refs = 1 */
/* The request goes to the user: track it until fold__req_user_done. */
void fold__req_user_give(fold_request *r);
/* The user's reference is being dropped (fold_wait/fold_test finished). */
void fold__req_user_done(fold_request *r);
/* Take a posted receive off the posted queue (0 if it was not there). */
int fold__unpost(fold_comm *c, fold_request *r);
void fold__req_ref(fold_request *r);
void fold__req_unref(fold_request *r);
/* Complete r with status (release store; idempotent: the first call wins).
 * Transports call this from any thread. */
void fold__req_complete(fold_request *r, int status);
/* Complete every request of a list linked through ->next with status and
 * drop the reference its holder kept (a transport shutting down). */
void fold__req_drop_list(fold_request *r, int status);
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
static inline const fold_request *fold__posted_first(const fold_comm *c) { return c->posted_head; }
static inline int fold__comm_waits(const fold_comm *c) { return c->posted_head != NULL || c->tasks != NULL; }
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

/* Internal point-to-point helpers for tasks: byte counts, any context. */
int fold__isend_bytes(fold_comm *c, const void *buf, size_t bytes, int peer, int ctx, int tag, fold_request **req);
int fold__irecv_bytes(fold_comm *c, void *buf, size_t bytes, int peer, int ctx, int tag, fold_request **req);

/* ---- progress engine (engine/progress.c) --------------------------------------------- */
/* Poll every transport once, hand unsolicited messages to their handlers,
 * fire the due timers and step the active tasks (engine/engine.h). Never
 * blocks. Returns the communicator's failure status (0 if healthy). */
int fold__progress(fold_comm *c);
/* fold__progress of c alone: abort, failure reports, lost peers and task
 * steps, after polling the transports if poll != 0 (a family polls once
 * for all its comms, then calls this with poll = 0 for each). */
int fold__progress_one(fold_comm *c, int poll);
/* Bracket code that starts several sends at once (a collective's start, the
 * task steps of one progress pass): in between, a transport may gather the
 * sends to a peer into one write; the outermost end writes them out. Sends
 * outside a bracket leave at once, as before. Nests. The outermost end
 * returns 1 if a transport wrote held sends (they may have completed
 * then), else 0. */
void fold__tx_batch_begin(fold_comm *c);
int fold__tx_batch_end(fold_comm *c);
/* Drive progress until r completes, comm fails or FOLD_TIMEOUT passes without
 * r completing (then comm fails with FOLD_ETIMEDOUT naming `op`). Spins
 * briefly, then sleeps in the transports' wait. Does not free r. */
int fold__wait_req(fold_comm *c, fold_request *r, const char *op);
/* fold__wait_req for at most ns nanoseconds of this clock (fold_wait_for):
 * FOLD__WAIT_STOPPED (> 0) when they pass first, r still pending. FOLD_TIMEOUT
 * counts from r's first such wait (r->wait_start). A simulated communicator
 * runs until r completes, as fold__wait_req. Does not free r. */
#define FOLD__WAIT_STOPPED 1
int fold__wait_req_for(fold_comm *c, fold_request *r, const char *op, int64_t ns);
/* Register a running task: its request completes when step() returns != 0. */
void fold__task_start(fold_comm *c, fold__task *t);
/* Take t off c's active tasks without completing its request: its owner
 * ends it (a service closing, a wait that gave up) or steps it itself
 * (fold__task_step). Returns 1 if t was listed, 0 if not (it had
 * finished, or a failure had completed it). Owner thread. */
int fold__task_cancel(fold_comm *c, fold__task *t);
/* Step t, which its owner took off the list (fold__task_cancel), once, as
 * the engine would: returns 0 while it runs; else completes its request
 * (with c's failure status once c failed) and returns 1. */
int fold__task_step(fold_comm *c, fold__task *t);
/* Put t, taken off by fold__task_cancel and not finished, back on c's
 * active tasks (stepped from the next progress pass on). */
void fold__task_resume(fold_comm *c, fold__task *t);

/* ---- watchers (engine/progress.c) ------------------------------------------
 * A long-lived service of a layer (a store's watchdog) that must look at
 * the communicator once per progress pass, without a request anyone waits
 * for: fold__progress runs each started watcher once per pass, after the
 * tasks stepped and inside the same send batch (so a watcher's sends leave
 * with the tasks'), as libuv runs its check handles. Caller-owned memory:
 * start and stop never allocate or fail. A failed communicator runs none.
 * A callback may start and stop watchers (itself included); one started
 * during a pass runs from the next. A communicator with a watcher keeps
 * the progress thread busy (it drives the pass); the simulator does not
 * count watchers as pending work. */
typedef struct fold__watch fold__watch;
typedef void (*fold__watch_fn)(fold_comm *c, fold__watch *w, void *arg);
struct fold__watch {
  fold__watch_fn fn;
  void *arg;
  fold__watch *next; /* the communicator's list */
  int on;
};
/* Prepare w (once, before the first start). */
void fold__watch_init(fold__watch *w, fold__watch_fn fn, void *arg);
/* Run w at every progress pass from the next on (started already: nothing). */
void fold__watch_start(fold_comm *c, fold__watch *w);
/* Run w no more; safe on a stopped watcher and from any callback. */
void fold__watch_stop(fold_comm *c, fold__watch *w);
/* One sleep over every transport of c (and extra_fd): a new epoll fd
 * watching each transport's wait_fd and extra_fd (unless -1), or -1 when
 * some transport has no wait_fd (or epoll fails). */
int fold__waitset_new(fold_comm *c, int extra_fd);
/* Before sleeping on such an epoll fd (after a progress pass): arm every
 * transport. Returns 1 when one has news (then nothing stays armed: do
 * not sleep), else 0, and then fold__waitset_disarm must follow the sleep. */
int fold__waitset_arm(fold_comm *c);
void fold__waitset_disarm(fold_comm *c);
/* Sleep in epoll fd ep at most ns (rounded up to whole milliseconds). */
void fold__waitset_sleep(int ep, int64_t ns);

/* ---- progress thread (engine/progress_thread.c) ------------------------------------------
 * FOLD_PROGRESS_THREAD=1: a helper thread per communicator drives its
 * progress while no public call runs on it. Every public call that touches
 * the communicator's engine state brackets itself with fold__enter /
 * fold__leave (a lock the helper takes only between its short progress
 * passes). Without the helper both are one predictable branch. */
/* Start the helper if FOLD_PROGRESS_THREAD asks for it (not on simulated
 * communicators). Called once the communicator is complete. Returns 0 or
 * a negative code (the communicator is then still usable, without one). */
int fold__pthread_start(fold_comm *c);
/* Stop and join the helper (fold_comm_destroy, before freeing). */
void fold__pthread_stop(fold_comm *c);
/* (fold__enter / fold__leave, which every layer's public calls use, are in
 * core/internal.h) */

/* ---- fail-stop (engine/fail.c) --------------------------------------------------------- */
/* Fail comm (fail-stop): record the message, mark it failed, shut the
 * transports' I/O down and complete every pending request with status.
 * Idempotent: the first failure wins. Returns the failure status. */
int fold__comm_fail(fold_comm *comm, int status, const char *fmt, ...) FOLD__PRINTF(3, 4);
/* A transport saw peer p go away (EOF, reset, process exit, destroyed),
 * after delivering everything p had sent. Operations that need p — a posted
 * receive from p, a send to p (the transport reports that by passing
 * pending != 0), or any later one — fail the communicator with FOLD_EPEER
 * naming p; operations with other peers go on, so a peer that finished and
 * left early does not break the rest. Owner thread only. */
void fold__peer_lost(fold_comm *c, int p, int pending, const char *why);
/* Peer src reported that it failed because of rank culprit (lost, or
 * silent past FOLD_TIMEOUT) with status and text (naming culprit): kept
 * for the message when src goes, so that the cascade of closing ranks
 * does not blame src. The first report per peer counts. */
void fold__note_report(fold_comm *c, int src, int status, int culprit, const char *text);
/* The rank peer p's failure report blamed (fold__note_report), with its
 * status and text (kept by c), or -1 if p reported none: a capability
 * that lists lost ranks names that culprit, not p, which only failed on it. */
int fold__report_culprit(const fold_comm *c, int p, int *status, const char **cause);
/* A peer's report says it failed with its collectives from call number
 * coll_told_from on (and every later one) pending: a collective of this
 * rank numbered seq must not complete, since it failed elsewhere. One
 * test of an int on the fast path; called by the collective executor at
 * every step (the engine runs the reports' handler after each poll and
 * before the tasks step, so a report that arrived behind a call's data
 * is seen before the call completes). */
static inline int fold__coll_told(const fold_comm *c, uint32_t seq);
/* Fail comm for collective t (numbered seq), which failed on the peer that
 * reported it (fold__coll_told): naming that peer and its cause; for a
 * timeout, the rank the chain of waiting ranks ends at (see
 * fold__timeout_fail). Returns the status. */
int fold__coll_told_fail(fold_comm *c, fold__task *t, uint32_t seq);
/* This rank timed out (or its collective failed on a peer's timeout)
 * waiting for rank who: tell every peer "this rank waits for who", keep
 * collecting their reports for a short, bounded time (until every rank
 * but the one the chain of waits ends at has reported, that rank is lost,
 * or at most 1 s; reports read while telling are handled before the
 * chain is first judged, so a reporter that closed meanwhile is not
 * taken for its end), then fail with FOLD_ETIMEDOUT and self_msg naming the
 * rank the chain ends at: the silent one, not a rank that only waited
 * like us. cause: the text peers keep (names who). */
int fold__timeout_fail(fold_comm *c, int who, const char *cause, const char *self_msg);
/* Why peer p was lost ("gone" if it is not known). */
const char *fold__lost_why(const fold_comm *c, int p);
void fold__lost_notes_free(fold_comm *c);
/* Fail with the status and text a peer reported (c->poison). */
void fold__comm_act_on_poison(fold_comm *c);
/* Fail comm like fold__comm_fail, but first tell every peer (a message on
 * FOLD__CTX_SYS carrying `msg`, flushed for a bounded time) so that they
 * fail with the same status and text instead of waiting: used when this
 * rank discovers that the ranks disagree. Returns status. */
int fold__comm_fail_and_tell(fold_comm *c, int status, const char *msg);
/* An operation needs lost peer p: fail comm, giving a peer's report of why
 * it failed if one came (after collecting what the transports hold); if p
 * itself reported another rank as the cause before it went, that rank and
 * cause; else FOLD_EPEER "<what> peer rank p". Tells every peer the cause
 * before failing. Never inside a transport's poll.
 * p outside [0, size) means a receive from FOLD_ANY_SOURCE that no rank is
 * left to answer: the message then names every lost rank. */
int fold__fail_for_lost(fold_comm *c, int p, const char *what);
/* Poll every transport once (no task steps), marking that we are inside.
 * When every transport found nothing to do for a couple of microseconds
 * running and the rank may share its CPU (c->own_cpu unset), gives the CPU
 * away (sched_yield; engine/progress.c, fold__idle_pause). */
void fold__poll_transports(fold_comm *c);
/* The poll pass just made was idle (idle != 0) or not: yield as
 * fold__poll_transports says. Never on virtual time. */
void fold__idle_pause(fold_comm *c, int idle);

/* ---- sub-communicators (engine/family.c routes, comm/comm_split.c creates) --------------------------------
 * Transports deliver to their root comm (tp->comm) with the cid of the
 * message; these route a cid other than 0 to the child that has it. */
/* The transports' matching entry point: fold__match_posted on the comm with
 * id cid in root's family (src in the root's numbering), NULL if none is
 * posted or there is no such comm (yet). cid 0 is root itself: no lookup. */
/* Route an unexpected message that reached a family's root: one for a
 * child (u->cid != 0) goes to the child (src translated), to the family's
 * early list if the child is not created here yet, or is dropped if it was
 * destroyed; one for a destroyed root is dropped. Returns 1 if it took u,
 * 0 if u is the root's own. */
int fold__fam_deliver(fold_comm *root, struct fold__unexp *u);
/* Peer p (root numbering) was lost: every child that contains it learns it
 * (fold__peer_lost in its numbering). Returns 1 if the root itself was
 * destroyed (nothing more to do), else 0. */
int fold__fam_peer_lost(fold_comm *root, int p, int pending, const char *why);
/* Poll the family's transports once, every member marked as in a poll.
 * Returns 1 if every transport found nothing to do (FOLD__POLL_IDLE). */
int fold__fam_poll(fold_comm *c);
/* fold__progress for a comm of a family: poll once, then every member's
 * failure checks and task steps. */
int fold__fam_progress(fold_comm *c);
/* May a failure of c shut the transports down? Only when no other comm of
 * its family is still healthy. Returns the comm that owns them, or NULL. */
fold_comm *fold__fam_shutdown_owner(fold_comm *c);
/* Has a healthy child of root's family a posted receive or a task? (the
 * simulator's deadlock report) */
int fold__fam_busy(const fold_comm *root);
/* The first live member of root's family (root itself unless destroyed,
 * then its children) for which pred holds, or NULL; root alone when it has
 * no family. For the progress thread, which serves a whole family. */
fold_comm *fold__fam_find(fold_comm *root, int (*pred)(const fold_comm *c));
/* " (rank R of the world)" for a child's rank p, "" on a root: appended to
 * messages that name ranks. */
const char *fold__world_note(const fold_comm *c, int p, char *buf, size_t cap);

/* ==== engine services ================================================== */

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

/* The CPUs this process may run on (its affinity mask; a process pinned
 * to a single CPU counts the host's online CPUs: launchers pin only when
 * the ranks fit the CPUs, each rank to its own). engine/progress.c. */
int fold__engine_ncpu(void);
/* 1 if c's ranks on this host outnumber those CPUs (real transports only):
 * then ranks take turns on the cores, and a wait for a peer may last a
 * time slice of the OS scheduler (milliseconds) with nobody slow. */
int fold__engine_shares_cpu(const fold_comm *c);

/* ---- link measurements (engine/time.c) ----------------------------------------------
 * How long a message of `bytes` takes to reach `peer` (a rank of c), from
 * what the transport that reaches it measured of that link as a sender:
 * its one-way latency plus bytes times its time per byte (transport.h,
 * the vtable's link). The simulator gives its model; tcp the kernel's
 * minimum RTT / 2 and the median recent timed delivery of a large send (from
 * its write to the acknowledgement of everything then unacknowledged;
 * latency only before the first is delivered); shm
 * the best recent rate at which messages of 64 KiB and more went into the
 * peer's ring, with latency counted as 0 (under a microsecond). -1 when
 * nothing is measured yet (no large message sent to peer, tcp's kernel
 * without a rate) or never (inproc, peer = self). Owner thread. Used by
 * ring_skip for T_trans. */
int64_t fold__link_ns(fold_comm *c, int peer, size_t bytes);
/* A transport's record of one link's time per byte over its last
 * FOLD__METER samples. A timed transfer is slowed by noise (a descheduled
 * receiver, other traffic), never sped up, so the best recent one is the
 * link's own rate (fold__meter_min); a rate the kernel reports can also be
 * too fast (a token bucket's burst), so for those the median. The window
 * follows a link that changed for good. */
#define FOLD__METER 8
typedef struct fold__meter {
  float v[FOLD__METER];
  uint32_t n;
} fold__meter;
/* Record a sample (v > 0, else ignored). */
void fold__meter_add(fold__meter *m, double v);
/* The smallest recent sample, or 0 if none. */
double fold__meter_min(const fold__meter *m);
/* The median of the recent samples (the lower middle one of an even
 * count), or 0 if none: for samples that noise moves both ways. */
double fold__meter_median(const fold__meter *m);

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
  /* idle polls (fold__idle_pause): when the current stretch of idle poll
   * passes began (0: the last pass did something), whether the last pass
   * yielded (a wait's spin then does not yield again), how many yields */
  int64_t idle_since;
  int idle_yielded;
  uint64_t idle_yields;
  /* the last progress pass ended with a flush that wrote held sends: they
   * completed after the tasks stepped, so a wait must not sleep before the
   * next pass lets the tasks see them */
  int flushed;
  /* the task whose first step fold__task_start runs (not yet listed in
   * c->tasks): a failure report counts it among the pending calls */
  fold__task *starting;
  fold__watch *watchers;   /* started, newest first */
  fold__watch *watch_next; /* the next one the running pass calls */
  /* 1 + a peer whose failure report fails this rank's collectives from
   * call number coll_told_from on (0: none; engine/fail.c) */
  int coll_told;
  uint32_t coll_told_from;
};
/* fold__recv_post took u off the unexpected queue: if a handler is being
 * called for it, the handler consumed it. */
static inline int fold__engine_virtual(const fold_comm *c) { return c->svc->hooks != NULL; }
static inline int fold__coll_told(const fold_comm *c, uint32_t seq) {
  return c->svc->coll_told && (int32_t)(seq - c->svc->coll_told_from) >= 0;
}
static inline void fold__handler_note_taken(fold_comm *c, const fold__unexp *u) {
  if (c->svc->cur == u) c->svc->cur = NULL;
}
/* Allocate c->svc and attach the engine layers every communicator has (the
 * failure reports' handler, FOLD_INJECT_DELAY).
 * FOLD_ENOMEM. */
int fold__svc_init(fold_comm *c);
/* The same for a sub-communicator k of parent (comm/comm_split.c): the
 * clock hooks and the failure reports' handler (the communicator layer
 * then gives it the parent's selection, fold__select_inherit).
 * FOLD_INJECT_DELAY is read once k knows its rank (fold__inject_delay_init). */
int fold__svc_init_child(fold_comm *k, const fold_comm *parent);
/* Free c->svc, after the transports are gone (drain buffers may be written
 * until then). */
void fold__svc_free(fold_comm *c);
/* The layers fold__svc_init attaches, and pieces of fold__svc_init/free. */
int fold__report_init(fold_comm *c);    /* engine/fail.c: the handler of FOLD__CTX_SYS */
void fold__inject_delay_init(fold_comm *c);
void fold__handlers_free(fold_comm *c);

#endif /* FOLD_ENGINE_H */
