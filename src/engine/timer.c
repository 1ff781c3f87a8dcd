/* timer.c — the engine's timers: a sorted intrusive list per communicator, fired by fold__progress. */
#include "engine/engine.h"

void fold__timer_init(fold__timer *t, fold__timer_fn fn, void *arg) {
  t->due = 0;
  t->fn = fn;
  t->arg = arg;
  t->next = NULL;
  t->seq = 0;
  t->armed = 0;
}

/* Unlink t from c's list (it is there when armed). */
static void unlink_timer(struct fold__svc *s, fold__timer *t) {
  for (fold__timer **pp = &s->timers; *pp; pp = &(*pp)->next)
    if (*pp == t) {
      *pp = t->next;
      break;
    }
  t->next = NULL;
  t->armed = 0;
}

int fold__timer_arm(fold_comm *c, fold__timer *t, int64_t due_ns) {
  struct fold__svc *s = c->svc;
  if (t->armed) unlink_timer(s, t);
  t->due = due_ns;
  t->seq = ++s->timer_seq;
  /* after every timer of an equal or earlier deadline: equal deadlines
   * fire in arming order. A communicator holds few timers (a watchdog, a
   * period, a straggler's delay), so a list beats a heap here. */
  fold__timer **pp = &s->timers;
  while (*pp && (*pp)->due <= due_ns) pp = &(*pp)->next;
  t->next = *pp;
  *pp = t;
  t->armed = 1;
  /* the simulator must reach the deadline even if nothing else happens */
  int rc = fold__engine_wake_at(c, due_ns);
  if (rc < 0) {
    unlink_timer(s, t);
    return rc;
  }
  return FOLD_OK;
}

int fold__timer_arm_in(fold_comm *c, fold__timer *t, int64_t delay_ns) {
  return fold__timer_arm(c, t, fold__now(c) + (delay_ns > 0 ? delay_ns : 0));
}

void fold__timer_cancel(fold_comm *c, fold__timer *t) {
  if (t->armed) unlink_timer(c->svc, t);
}

int64_t fold__timer_next(const fold_comm *c) {
  const fold__timer *t = c->svc ? c->svc->timers : NULL;
  return t ? t->due : INT64_MAX;
}

int fold__timers_run(fold_comm *c) {
  struct fold__svc *s = c->svc;
  if (s == NULL || s->timers == NULL) return 0;
  int64_t now = fold__now(c);
  /* Only timers armed before this pass fire in it: one that a callback
   * arms again for a time already due waits for the next progress. The
   * head is taken anew each turn, so a callback may cancel or arm any
   * timer, the next one to fire included. */
  uint64_t limit = s->timer_seq;
  int fired = 0;
  for (;;) {
    fold__timer **pp = &s->timers;
    while (*pp && (*pp)->due <= now && (*pp)->seq > limit) pp = &(*pp)->next;
    fold__timer *t = *pp;
    if (t == NULL || t->due > now || fold__comm_failed(c)) break;
    *pp = t->next;
    t->next = NULL;
    t->armed = 0;
    fired++;
    t->fn(c, t, t->arg);
  }
  return fired;
}
