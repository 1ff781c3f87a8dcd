/* engine_watch.c — the engine's task and watcher services: watchers run once per pass after the tasks, stop and
 * start from callbacks, none on a failed communicator, the progress thread drives them; fold__task_cancel / step /
 * resume take a task off the engine's list, step it by hand and hand it back. Usage: engine_watch <case>. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"
#include "fold.h"
#include "sim/sim_check.h"

/* ---- watchers ------------------------------------------------------------------------------------------------- */

static int clock_tick; /* orders the calls of one pass: tasks and watchers take the next number */

typedef struct rec_watch {
  fold__watch w;
  int calls;
  int last_tick;             /* clock_tick at the last call */
  fold__watch *stop_other;   /* stop this one at the first call (NULL: none) */
  fold__watch *start_other;  /* start this one at the first call (NULL: none) */
  int stop_self_after;       /* stop itself after this many calls (0: never) */
} rec_watch;

static void rec_fn(fold_comm *c, fold__watch *w, void *arg) {
  rec_watch *r = arg;
  CHECK(w == &r->w);
  r->calls++;
  r->last_tick = ++clock_tick;
  if (r->calls == 1 && r->stop_other) fold__watch_stop(c, r->stop_other);
  if (r->calls == 1 && r->start_other) fold__watch_start(c, r->start_other);
  if (r->stop_self_after && r->calls == r->stop_self_after) fold__watch_stop(c, w);
}

static void rec_init(rec_watch *r) {
  memset(r, 0, sizeof *r);
  fold__watch_init(&r->w, rec_fn, r);
}

/* A task that takes `steps` steps, noting when it last stepped. */
typedef struct count_task {
  fold__task t;
  int steps, left;
  int last_tick;
} count_task;

static int count_step(fold__task *t) {
  count_task *k = (count_task *)t;
  k->steps++;
  k->last_tick = ++clock_tick;
  return --k->left <= 0 ? 1 : 0;
}

static void count_release(fold__task *t) { (void)t; }

static fold_request *count_start(fold_comm *c, count_task *k, int steps) {
  memset(k, 0, sizeof *k);
  k->left = steps;
  k->t.step = count_step;
  k->t.release = count_release;
  k->t.req = fold__req_new(c, FOLD__REQ_TASK);
  CHECK(k->t.req != NULL);
  k->t.req->task = &k->t;
  fold__req_ref(k->t.req); /* the test's own reference: it reads the status after the engine is done */
  fold__task_start(c, &k->t);
  return k->t.req;
}

/* Each started watcher runs once per pass, after the tasks stepped; one stopped by an earlier callback of the same
 * pass does not run; one started from a callback runs from the next pass; one that stops itself runs no more;
 * stopping or starting twice is harmless. */
static void case_order(void) {
  fold_comm *c;
  CHECK_RC(fold_comm_init_threads(1, &c), FOLD_OK, NULL);
  rec_watch a, b, d, e;
  rec_init(&a);
  rec_init(&b);
  rec_init(&d);
  rec_init(&e);
  fold__watch_start(c, &b.w);
  fold__watch_start(c, &a.w); /* newest first: a runs before b */
  fold__watch_start(c, &a.w); /* twice: harmless */
  fold__watch_start(c, &e.w);
  e.stop_self_after = 2;
  a.stop_other = &b.w;
  a.start_other = &d.w;
  count_task k;
  fold_request *r = count_start(c, &k, 1000); /* first step at the start */
  CHECK(k.steps == 1);
  CHECK(a.calls == 0 && b.calls == 0 && e.calls == 0); /* starting runs nothing */
  CHECK_RC(fold_progress(c), FOLD_OK, c);
  CHECK(k.steps == 2);
  CHECK(a.calls == 1 && e.calls == 1);
  CHECK(b.calls == 0); /* stopped by a in the same pass, before its turn */
  CHECK(d.calls == 0); /* started by a: from the next pass */
  CHECK(a.last_tick > k.last_tick && e.last_tick > k.last_tick); /* after the tasks */
  for (int i = 0; i < 4; i++) CHECK_RC(fold_progress(c), FOLD_OK, c);
  CHECK(k.steps == 6);
  CHECK(a.calls == 5 && b.calls == 0 && d.calls == 4 && e.calls == 2);
  fold__watch_stop(c, &b.w); /* stopped already: harmless */
  fold__watch_stop(c, &a.w);
  CHECK_RC(fold_progress(c), FOLD_OK, c);
  CHECK(a.calls == 5 && d.calls == 5 && k.steps == 7);
  /* the watchers run without any task too */
  CHECK(fold__task_cancel(c, &k.t) == 1);
  CHECK_RC(fold_progress(c), FOLD_OK, c);
  CHECK(d.calls == 6 && k.steps == 7);
  /* a failed communicator runs none */
  CHECK_RC(fold_comm_abort(c), FOLD_OK, c);
  CHECK_RC(fold_progress(c), FOLD_EABORTED, c);
  CHECK_RC(fold_progress(c), FOLD_EABORTED, c);
  CHECK(d.calls == 6);
  fold__watch_stop(c, &d.w);
  CHECK(!fold__req_done(r)); /* cancelled before the failure: the engine no longer knew it */
  fold__req_complete(r, FOLD_EABORTED);
  fold__req_unref(r); /* the test's reference */
  fold__req_unref(r); /* the creator's */
  fold_comm_destroy(c);
}

/* fold__task_cancel takes a task off the engine's list (its request not completed), fold__task_step steps it by
 * hand (completing it as the engine would), fold__task_resume hands it back; a finished task is listed no more. */
static void case_task(void) {
  fold_comm *c;
  CHECK_RC(fold_comm_init_threads(1, &c), FOLD_OK, NULL);
  count_task k;
  fold_request *r = count_start(c, &k, 5);
  CHECK(k.steps == 1);
  CHECK_RC(fold_progress(c), FOLD_OK, c);
  CHECK(k.steps == 2);
  CHECK(fold__task_cancel(c, &k.t) == 1);
  CHECK(fold__task_cancel(c, &k.t) == 0); /* not listed any more */
  CHECK_RC(fold_progress(c), FOLD_OK, c);
  CHECK(k.steps == 2); /* the engine does not step it */
  CHECK(fold__task_step(c, &k.t) == 0);
  CHECK(k.steps == 3 && !fold__req_done(r));
  fold__task_resume(c, &k.t);
  CHECK_RC(fold_progress(c), FOLD_OK, c);
  CHECK(k.steps == 4 && !fold__req_done(r));
  CHECK(fold__task_cancel(c, &k.t) == 1);
  CHECK(fold__task_step(c, &k.t) == 1); /* its last step: complete */
  CHECK(k.steps == 5 && fold__req_done(r) && r->status == FOLD_OK);
  fold__req_unref(r);
  fold__req_unref(r);

  /* a task that finishes under the engine leaves its list */
  fold_request *r2 = count_start(c, &k, 2);
  CHECK_RC(fold_progress(c), FOLD_OK, c);
  CHECK(fold__req_done(r2) && r2->status == FOLD_OK);
  CHECK(fold__task_cancel(c, &k.t) == 0);
  fold__req_unref(r2);
  fold__req_unref(r2);

  /* stepping a task by hand on a failed communicator completes it with the failure */
  fold_request *r3 = count_start(c, &k, 100);
  CHECK(fold__task_cancel(c, &k.t) == 1);
  CHECK_RC(fold_comm_abort(c), FOLD_OK, c);
  CHECK_RC(fold_progress(c), FOLD_EABORTED, c);
  CHECK(!fold__req_done(r3)); /* off the list: the failure did not reach it */
  CHECK(fold__task_step(c, &k.t) == 1);
  CHECK(fold__req_done(r3) && r3->status == FOLD_EABORTED);
  fold__req_unref(r3);
  fold__req_unref(r3);
  fold_comm_destroy(c);
}

/* FOLD_PROGRESS_THREAD=1 (set by the test's environment): the helper drives a communicator whose only work is a
 * watcher, while no call runs on it. */
static atomic_int pt_calls;
static void pt_fn(fold_comm *c, fold__watch *w, void *arg) {
  (void)c, (void)w, (void)arg;
  atomic_fetch_add(&pt_calls, 1);
}

static void case_pthread(void) {
  fold_comm *c;
  CHECK_RC(fold_comm_init_threads(1, &c), FOLD_OK, NULL);
  fold__watch w;
  fold__watch_init(&w, pt_fn, NULL);
  fold__enter(c);
  fold__watch_start(c, &w);
  fold__leave(c); /* a call that leaves work pending wakes the helper */
  struct timespec ts = {0, 2000000};
  for (int i = 0; i < 5000 && atomic_load(&pt_calls) < 3; i++) nanosleep(&ts, NULL); /* at most 10 s */
  CHECK(atomic_load(&pt_calls) >= 3);
  fold__enter(c);
  fold__watch_stop(c, &w);
  fold__leave(c);
  fold_comm_destroy(c);
}

int main(int argc, char **argv) {
  static const sim_check_case cases[] = {
      {"order", case_order},
      {"task", case_task},
      {"pthread", case_pthread},
  };
  return sim_check_run("engine_watch", cases, sizeof cases / sizeof cases[0], argc, argv);
}
