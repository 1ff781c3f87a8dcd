/* progress.c — the progress engine: poll transports, step tasks, wait with deadlines. */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "engine/engine.h"
#include "transport/transport.h"

/* How long a wait spins on progress before it sleeps, and the longest single
 * sleep. The spin keeps latency low when the peer answers soon: it covers a
 * loopback TCP round trip (20-40 us; with a 20 us spin such waits fell
 * into epoll and paid a wake-up on top); past the first 2 us it yields at
 * every turn, so an oversubscribed peer still gets the core. The sleep
 * stops the burn on long waits; the cap bounds how late an abort from
 * another thread or a lost peer is noticed. */
#define FOLD__SPIN_NS 100000
#define FOLD__SLEEP_CAP_NS 50000000
/* Past this much spinning, each spin also yields the core: when ranks
 * outnumber cores, the peer we wait for may be queued behind us. The same
 * holds for a stretch of idle poll passes (fold__idle_pause). */
#define FOLD__YIELD_AFTER_NS 2000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Every poll pass, the waits' and the application's own polling loops
 * (fold_test, fold_progress, fold_iprobe, fold_areduce_result, ...) alike,
 * gives the CPU away once the passes found nothing to do for a couple of
 * microseconds, unless the rank has a CPU of its own (c->own_cpu, set by
 * the shm transport when every peer is local and the ranks fit the CPUs).
 * When ranks outnumber cores, the peer we wait for may be queued behind
 * us: a loop that polls without yielding keeps the core for a whole time
 * slice, and a message to a rank queued behind it waits milliseconds
 * (tcp, 4 ranks on 2 cores: hops of 10-30 ms instead of ~10 us). The
 * clock is read only when a pass was idle and the rank may share its CPU;
 * a rank that is not oversubscribed pays one sched_yield (a system call
 * that returns at once) per idle pass after the first 2 us. */
void fold__idle_pause(fold_comm *c, int idle) {
  struct fold__svc *s = c->svc;
  s->idle_yielded = 0;
  if (!idle || c->own_cpu || fold__engine_virtual(c) || fold__comm_failed(c)) {
    s->idle_since = 0;
    return;
  }
  int64_t now = fold__now(c);
  if (s->idle_since == 0) {
    s->idle_since = now;
  } else if (now - s->idle_since >= FOLD__YIELD_AFTER_NS) {
    sched_yield();
    s->idle_yielded = 1;
    s->idle_yields++;
  }
}

int fold__engine_ncpu(void) {
  cpu_set_t cpus;
  int n = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (n == 1) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
  return n;
}

int fold__engine_shares_cpu(const fold_comm *c) {
  if (fold__engine_virtual(c)) return 0;
  int n = fold__engine_ncpu();
  return n > 0 && c->local_size > n;
}

void fold__task_start(fold_comm *c, fold__task *t) {
  /* Step once at once: the first sends go out now, not at the next wait
   * (which matters most in the simulator, where only waits drive ranks). */
  c->svc->starting = t;
  int rc = t->step(t);
  c->svc->starting = NULL;
  if (rc != 0 || fold__comm_failed(c)) {
    /* once the communicator failed, its cause is every operation's */
    int st = fold__comm_failed(c);
    fold__req_complete(t->req, st ? st : rc > 0 ? FOLD_OK : rc);
    return;
  }
  fold__list_push_front(&c->tasks, &t->link);
}

int fold__task_cancel(fold_comm *c, fold__task *t) {
  (void)c;
  if (!fold__list_linked(&t->link)) return 0;
  fold__list_unlink(&t->link);
  return 1;
}

int fold__task_step(fold_comm *c, fold__task *t) {
  int rc = t->step(t);
  int st = fold__comm_failed(c);
  if (rc == 0 && st == 0)
    return 0;
  /* as step_tasks, and as fail_pending would have done had t been listed */
  fold__req_complete(t->req, st ? st : rc > 0 ? FOLD_OK : rc);
  return 1;
}

void fold__task_resume(fold_comm *c, fold__task *t) { fold__list_push_front(&c->tasks, &t->link); }

void fold__watch_init(fold__watch *w, fold__watch_fn fn, void *arg) {
  memset(w, 0, sizeof *w);
  w->fn = fn;
  w->arg = arg;
}

void fold__watch_start(fold_comm *c, fold__watch *w) {
  if (w->on)
    return;
  w->on = 1;
  fold__list_push_front(&c->svc->watchers, &w->link);
}

void fold__watch_stop(fold_comm *c, fold__watch *w) {
  if (!w->on)
    return;
  w->on = 0;
  if (c->svc->watch_next == &w->link) /* the pass in progress skips it */
    c->svc->watch_next = w->link.next;
  fold__list_unlink(&w->link);
}

/* Run every watcher once (after the tasks stepped, in their send batch).
 * A callback may stop any watcher (itself included) and start new ones,
 * which run from the next pass on (they go to the head of the list). */
static void run_watchers(fold_comm *c) {
  fold__list *head = &c->svc->watchers;
  for (fold__list *n = head->next; n != head && !fold__comm_failed(c); n = c->svc->watch_next) {
    fold__watch *w = FOLD__LIST_ENTRY(n, fold__watch, link);
    c->svc->watch_next = n->next;
    w->fn(c, w, w->arg);
  }
  c->svc->watch_next = NULL;
}

void fold__tx_batch_begin(fold_comm *c) { c->tx_batch++; }

int fold__tx_batch_end(fold_comm *c) {
  if (--c->tx_batch > 0)
    return 0;
  int flushed = 0;
  for (int i = 0; i < c->ntps; i++)
    if (c->tps[i]->ops->flush && !fold__comm_failed(c))
      flushed |= c->tps[i]->ops->flush(c->tps[i]);
  return flushed;
}

/* Step every active task once; finished ones leave the list and complete
 * their request. */
static void step_tasks(fold_comm *c) {
  fold__list *n = c->tasks.next;
  while (n != &c->tasks) {
    fold__task *t = FOLD__LIST_ENTRY(n, fold__task, link);
    int rc = t->step(t);
    if (fold__comm_failed(c))
      return; /* the failure completed every task already */
    /* the next one read after the step, which may have cancelled it; a
     * step that took its own task off ends the pass (the rest run in the
     * next one) */
    n = fold__list_linked(&t->link) ? n->next : &c->tasks;
    if (rc == 0)
      continue;
    fold__list_unlink(&t->link);
    int st = fold__comm_failed(c);
    fold__req_complete(t->req, st ? st : rc > 0 ? FOLD_OK : rc);
  }
}

int fold__progress_one(fold_comm *c, int poll) {
  const fold_comm *asker = fold__abort_asker(c);
  if (asker && !fold__comm_failed(c)) {
    if (asker == c)
      fold__comm_fail(c, FOLD_EABORTED, "rank %d: aborted by fold_comm_abort", c->rank);
    else
      fold__comm_fail(c, FOLD_EABORTED,
                      "rank %d: aborted by fold_comm_abort on a communicator it was split or duplicated from (its rank %d "
                      "there)", c->rank, asker->rank);
  }
  int st = fold__comm_failed(c);
  if (st)
    return st;
  c->svc->pass_again = 0;
  if (poll)
    fold__poll_transports(c);
  fold__handlers_run(c); /* a peer's failure report included: it may set c->poison */
  if (c->poison && !fold__comm_failed(c) && fold__poison_due(c))
    fold__comm_act_on_poison(c);
  if (c->lost_fail_pending && !fold__comm_failed(c)) {
    int p = c->lost_fail_pending - 1;
    c->lost_fail_pending = 0;
    fold__fail_for_lost(c, p, "needs");
  }
  /* before the tasks: a task waiting for a timer goes on in this pass */
  if (!fold__list_empty(&c->svc->timers) && !fold__comm_failed(c))
    fold__timers_run(c);
  if ((!fold__list_empty(&c->tasks) || !fold__list_empty(&c->svc->watchers)) && !fold__comm_failed(c)) {
    /* the rounds that complete now start their sends together, and so
     * do the watchers' (they run after the tasks, in the same batch) */
    fold__tx_batch_begin(c);
    step_tasks(c);
    if (!fold__list_empty(&c->svc->watchers) && !fold__comm_failed(c))
      run_watchers(c);
    c->svc->pass_again |= fold__tx_batch_end(c); /* see wait_until */
  }
  return fold__comm_failed(c);
}

int fold__progress(fold_comm *c) {
  /* the comms of a family share transports: a wait on one must drive the
   * others' tasks too, or interleaved calls on two of them could deadlock */
  if (c->fam)
    return fold__fam_progress(c);
  return fold__progress_one(c, 1);
}

static void sleep_ns(int64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  nanosleep(&ts, NULL);
}

int fold__waitset_new(fold_comm *c, int extra_fd) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0)
    return -1;
  for (int i = 0; i <= c->ntps; i++) {
    int fd = i < c->ntps ? (c->tps[i]->ops->wait_fd ? c->tps[i]->ops->wait_fd(c->tps[i]) : -1) : extra_fd;
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if ((fd < 0 && i < c->ntps) || (fd >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)) {
      close(ep);
      return -1;
    }
  }
  return ep;
}

int fold__waitset_arm(fold_comm *c) {
  for (int i = 0; i < c->ntps; i++) {
    if (c->tps[i]->ops->wait_arm(c->tps[i]) == 0)
      continue;
    while (i-- > 0) /* news: take back the announcements made so far */
      c->tps[i]->ops->wait_disarm(c->tps[i]);
    return 1;
  }
  return 0;
}

void fold__waitset_disarm(fold_comm *c) {
  for (int i = 0; i < c->ntps; i++)
    c->tps[i]->ops->wait_disarm(c->tps[i]);
}

void fold__waitset_sleep(int ep, int64_t ns) {
  struct epoll_event ev[FOLD__TP_MAX + 1];
  int64_t ms = ns <= 0 ? 0 : (ns + 999999) / 1000000;
  (void)epoll_wait(ep, ev, FOLD__TP_MAX + 1, (int)(ms > 1000 ? 1000 : ms));
}

/* Sleep until a transport has news or `ns` passes. With several transports
 * none can sleep for all with its own wait(); their wait fds go into one
 * epoll (made at the first such sleep), so any of them wakes us at once.
 * Only if some transport has no fd does each get a short turn. */
static void sleep_in_transports(fold_comm *c, int64_t ns) {
  if (c->ntps == 1) {
    c->tps[0]->ops->wait(c->tps[0], ns);
    return;
  }
  if (c->ntps == 0) {
    sleep_ns(ns < 1000000 ? ns : 1000000);
    return;
  }
  if (c->wait_ep == 0) {
    int ep = fold__waitset_new(c, -1);
    c->wait_ep = ep < 0 ? -1 : ep + 1;
  }
  if (c->wait_ep > 0) {
    if (fold__waitset_arm(c) == 0) {
      fold__waitset_sleep(c->wait_ep - 1, ns);
      fold__waitset_disarm(c);
    }
    return;
  }
  int64_t slice = ns / c->ntps;
  if (slice > 1000000)
    slice = 1000000;
  for (int i = 0; i < c->ntps; i++)
    c->tps[i]->ops->wait(c->tps[i], slice);
}

/* r did not complete within FOLD_TIMEOUT: fail, naming the rank it waits
 * for and the step (a task says so through its describe()). The awaited
 * rank goes into the report every peer gets (fold__timeout_fail), so that
 * ranks failing next, when this one closes, name it too, and the ranks
 * that time out together name the rank the chain of their waits ends at:
 * neither the closing cascade of a stopped rank nor a rank that only waited
 * like this one is blamed. */
static int timed_out(fold_comm *c, fold_request *r, const char *op) {
  /* a report or a loss that arrived meanwhile names the cause better */
  int st = fold__progress(c);
  if (st) return st;
  if (fold__req_done(r)) return r->status;
  double s = (double)fold__req_timeout_ns(r) / 1e9;
  const char *limit = r->timeout_ns ? "the call's timeout" : "FOLD_TIMEOUT";
  char self[FOLD__ERRLEN], cause[200], wait[300];
  int who = -1;
  switch (r->kind) {
  case FOLD__REQ_RECV:
    who = r->peer; /* FOLD_ANY_SOURCE (-1): nobody to blame */
    {
      char from[32], tag[32];
      fold__recv_names(r->peer, r->tag, from, sizeof from, tag, sizeof tag);
      snprintf(self, sizeof self, "%s: rank %d: no message from %s (%s) within %.3g s (FOLD_TIMEOUT)", op, c->rank,
               from, tag, s);
    }
    break;
  case FOLD__REQ_SEND:
    who = r->peer;
    snprintf(self, sizeof self, "%s: rank %d: send to rank %d (tag %d) not taken within %.3g s (FOLD_TIMEOUT)", op,
             c->rank, r->peer, r->tag, s);
    break;
  default:
    wait[0] = '\0';
    if (r->task && r->task->describe) who = r->task->describe(r->task, wait, sizeof wait);
    snprintf(self, sizeof self, "%s: rank %d: not complete within %.3g s (%s)%s%s", op, c->rank, s, limit,
             wait[0] ? ": waiting for " : "", wait);
    break;
  }
  if (who < 0 || who == c->rank || who >= c->size) return fold__comm_fail(c, FOLD_ETIMEDOUT, "%s", self);
  /* a sub-communicator names the awaited rank in the world's numbering too */
  char world[48];
  fold__world_note(c, who, world, sizeof world);
  if (c->kid) {
    size_t len = strlen(self);
    snprintf(self + len, sizeof self - len, " [rank %d here is rank %d of the world]", who, fold__root_rank(c, who));
  }
  snprintf(cause, sizeof cause, "rank %d%s was silent for %.3g s (%s) while rank %d waited for it in %s", who, world,
           s, limit, c->rank, op);
  return fold__timeout_fail(c, who, cause, self);
}

/* Drive r until it completes, comm fails, FOLD_TIMEOUT passes since *start
 * (0: set to now at the first clock read) or `slice` ns pass: then
 * FOLD__WAIT_STOPPED with r untouched. The clock is read only after a first
 * progress pass: an operation that completes at once pays no clock read. */
static int wait_until(fold_comm *c, fold_request *r, const char *op, int64_t *start, int64_t slice) {
  if (fold__engine_virtual(c)) {
    int rc = fold__engine_drive(c, r);
    if (rc < 0 && !fold__req_done(r))
      fold__req_complete(r, rc);
    return rc < 0 ? rc : FOLD_OK;
  }
  int64_t spin_from = 0, deadline = 0, stop = 0;
  for (;;) {
    int st = fold__progress(c);
    if (fold__req_done(r))
      return FOLD_OK;
    if (st) {
      /* A failure completes what the engine and transports hold; anything
       * else still pending cannot progress any more. */
      fold__req_complete(r, st);
      return st;
    }
    int64_t now = fold__now(c);
    if (!spin_from) {
      spin_from = now;
      if (!*start) *start = now;
      deadline = *start + fold__req_timeout_ns(r);
      stop = slice > INT64_MAX - now ? INT64_MAX : now + slice;
    }
    if (now >= deadline) {
      st = timed_out(c, r, op);
      fold__req_complete(r, st);
      return st;
    }
    if (now >= stop)
      return FOLD__WAIT_STOPPED;
    if (now - spin_from < FOLD__SPIN_NS) {
      /* the poll pass above may have yielded already (fold__idle_pause) */
      if (now - spin_from > FOLD__YIELD_AFTER_NS && !c->own_cpu && !c->svc->idle_yielded)
        sched_yield();
      else
        cpu_relax();
      continue;
    }
    /* The pass ended by writing held sends, which completed after the
     * tasks stepped; a task may wait for nothing else (a round waits for
     * its sends), and no transport would end a sleep for it when every
     * peer waits for this rank: pass again first. (tcp, 4 ranks, ring and
     * then a barrier, one rank 2 ms late: 4 calls in 30 slept the 50 ms
     * cap before this.) Likewise after a receive that took an arrived
     * message at its post (engine/request.c). */
    if (c->svc->pass_again)
      continue;
    int64_t left = (stop < deadline ? stop : deadline) - now;
    int64_t timer = fold__timer_next(c) - now; /* never sleep past a timer's deadline */
    if (timer < left) left = timer > 0 ? timer : 0;
    if (left > 0) sleep_in_transports(c, left < FOLD__SLEEP_CAP_NS ? left : FOLD__SLEEP_CAP_NS);
  }
}

int fold__wait_req(fold_comm *c, fold_request *r, const char *op) {
  int64_t start = 0;
  return wait_until(c, r, op, &start, INT64_MAX);
}

/* FOLD_TIMEOUT counts from the first slice (r->wait_start): a loop of short
 * waits times out as one long wait would */
int fold__wait_req_for(fold_comm *c, fold_request *r, const char *op, int64_t ns) {
  return wait_until(c, r, op, &r->wait_start, ns);
}
