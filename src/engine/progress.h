/* progress.h — the progress engine: passes, waits, tasks, watchers, the wait set and the progress thread (engine/progress.c, progress_thread.c). */
#ifndef FOLD_ENGINE_PROGRESS_H
#define FOLD_ENGINE_PROGRESS_H

#include "core/internal.h"

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
  fold__list link;   /* the communicator's list (svc->watchers) */
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

/* Poll every transport once (no task steps), marking that we are inside.
 * When every transport found nothing to do for a couple of microseconds
 * running and the rank may share its CPU (c->own_cpu unset), gives the CPU
 * away (sched_yield; engine/progress.c, fold__idle_pause). */
void fold__poll_transports(fold_comm *c);
/* The poll pass just made was idle (idle != 0) or not: yield as
 * fold__poll_transports says. Never on virtual time. */
void fold__idle_pause(fold_comm *c, int idle);

#endif /* FOLD_ENGINE_PROGRESS_H */
