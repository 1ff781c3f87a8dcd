/* timer.h — the engine's timers: caller-owned, on the communicator's list, fired by fold__progress (engine/timer.c). */
#ifndef FOLD_ENGINE_TIMER_H
#define FOLD_ENGINE_TIMER_H

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
  fold__list link;     /* the communicator's sorted list (svc->timers), while armed */
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

#endif /* FOLD_ENGINE_TIMER_H */
