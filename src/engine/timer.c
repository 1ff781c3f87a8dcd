/* timer.c — the engine's timers: a sorted intrusive list per communicator, fired by fold__progress. */
#include "engine/engine.h"

void fold__timer_init(fold__timer *t, fold__timer_fn fn, void *arg) {
  t->due = 0;
  t->fn = fn;
  t->arg = arg;
  fold__list_init(&t->link);
  t->seq = 0;
  t->armed = 0;
}

/* Unlink t from c's list (it is there when armed). */
static void unlink_timer(fold__timer *t) {
  fold__list_unlink(&t->link);
  t->armed = 0;
}

int fold__timer_arm(fold_comm *c, fold__timer *t, int64_t due_ns) {
  struct fold__svc *s = c->svc;
  if (t->armed) unlink_timer(t);
  t->due = due_ns;
  t->seq = ++s->timer_seq;
  /* after every timer of an equal or earlier deadline: equal deadlines
   * fire in arming order. A communicator holds few timers (a watchdog, a
   * period, a straggler's delay), so a list beats a heap here. */
  fold__list *at = &s->timers; /* the first later one, or the end */
  FOLD__LIST_FOR_EACH(fold__timer, x, &s->timers, link) {
    if (x->due > due_ns) {
      at = &x->link;
      break;
    }
  }
  fold__list_insert_before(at, &t->link);
  t->armed = 1;
  /* the simulator must reach the deadline even if nothing else happens */
  int rc = fold__engine_wake_at(c, due_ns);
  if (rc < 0) {
    unlink_timer(t);
    return rc;
  }
  return FOLD_OK;
}

int fold__timer_arm_in(fold_comm *c, fold__timer *t, int64_t delay_ns) {
  return fold__timer_arm(c, t, fold__now(c) + (delay_ns > 0 ? delay_ns : 0));
}

void fold__timer_cancel(fold_comm *c, fold__timer *t) {
  (void)c;
  if (t->armed) unlink_timer(t);
}

int64_t fold__timer_next(const fold_comm *c) {
  if (c->svc == NULL || fold__list_empty(&c->svc->timers)) return INT64_MAX;
  return FOLD__LIST_ENTRY(c->svc->timers.next, fold__timer, link)->due;
}

int fold__timers_run(fold_comm *c) {
  struct fold__svc *s = c->svc;
  if (s == NULL || fold__list_empty(&s->timers)) return 0;
  int64_t now = fold__now(c);
  /* Only timers armed before this pass fire in it: one that a callback
   * arms again for a time already due waits for the next progress. The
   * head is taken anew each turn, so a callback may cancel or arm any
   * timer, the next one to fire included. */
  uint64_t limit = s->timer_seq;
  int fired = 0;
  for (;;) {
    fold__timer *t = NULL; /* the first not armed in this pass, if due */
    FOLD__LIST_FOR_EACH(fold__timer, x, &s->timers, link) {
      if (x->due > now || x->seq <= limit) {
        t = x;
        break;
      }
    }
    if (t == NULL || t->due > now || fold__comm_failed(c)) break;
    unlink_timer(t);
    fired++;
    t->fn(c, t, t->arg);
  }
  return fired;
}
