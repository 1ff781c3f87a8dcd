/* progress_thread.c — FOLD_PROGRESS_THREAD: a helper thread per communicator that drives its progress while no public call runs on it.
 *
 * Why: without it, nonblocking operations move only inside fold_* calls,
 * so an fold_iallreduce started before a long computation has done almost
 * nothing when fold_wait comes (torch's async_op, Horovod and Gloo users
 * expect the transfer behind their compute).
 *
 * The one-thread-at-a-time rule of the API stays as it is for the user;
 * inside, a recursive mutex per communicator is held by every public call
 * that touches engine state (fold__enter/fold__leave, for its whole
 * duration, waits included) and by the helper only for one progress pass
 * at a time. The helper:
 *  - parks on a condition variable while nothing is pending (no task, no
 *    incomplete request the user holds) or the communicator failed; a
 *    public call that leaves something pending signals it;
 *  - otherwise runs a progress pass, then arms every transport's wait fd
 *    (engine/progress.c, fold__waitset_arm: the same no-lost-wake-up rule as
 *    a wait) and sleeps in one epoll over them, without the lock, for at
 *    most HELPER_SLEEP_NS (the cap covers a wake-up taken by the user's
 *    own wait meanwhile, and a transport's periodic liveness check);
 *  - lets a public call in after every pass: a call announces itself in
 *    `want` before it blocks on the lock, and the helper, seeing it, steps
 *    aside until the call holds the lock, so a call waits at most one pass.
 * Timeouts stay the waits' business (fold__wait_req): the helper only moves
 * traffic; a failure it meets (a lost peer) fails the communicator as a
 * call would, and the next call returns it. Simulated communicators have
 * no helper (their ranks all live in the simulator's thread).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "engine/engine.h"
#include "transport/transport.h"

/* The longest sleep of the helper between passes with work pending. */
#define HELPER_SLEEP_NS 2000000
/* Without wait fds (a transport lacks them): poll this often instead. */
#define HELPER_POLL_NS 50000

struct fold__pthread {
  pthread_mutex_t mu; /* recursive: public calls nest (fold_iprobe calls fold_progress) */
  pthread_cond_t cv;  /* the helper parks here while nothing is pending */
  pthread_t thread;
  atomic_int want;    /* public calls waiting for mu: the helper steps aside */
  int parked;         /* the helper waits on cv (under mu) */
  int stop;           /* fold__pthread_stop asked the helper to end (under mu) */
  int ep;             /* the helper's epoll: every transport's wait fd and kick, or -1 */
  int kick;           /* eventfd that ends the helper's sleep when it must stop */
  fold_comm *c;
  /* for the INFO line at stop: how long a call may have waited for a pass */
  int64_t passes, pass_max_ns, pass_sum_ns, sleeps;
};

/* Is there anything the helper could move? Tasks (nonblocking collectives),
 * watchers (a store's services) and incomplete requests the user holds
 * (isend, irecv); a blocking call holds the lock for itself. Under mu. */
static int pending_one(const fold_comm *c) {
  if (fold__comm_failed(c))
    return 0; /* nothing moves on a failed communicator */
  if (!fold__list_empty(&c->tasks) || !fold__list_empty(&c->svc->watchers))
    return 1;
  FOLD__LIST_FOR_EACH(const fold_request, r, &c->user_reqs, user_link)
    if (!fold__req_done(r))
      return 1;
  return 0;
}

/* The helper serves a family (a world and its sub-communicators, which
 * share its transports and lock): anything pending on any member. */
static fold_comm *pending(fold_comm *c) { return fold__fam_find(c, pending_one); }

static void sleep_ns(int64_t ns) {
  struct timespec ts = {0, (long)ns};
  nanosleep(&ts, NULL);
}

/* A public call waits for mu: unlock and let it take mu first. */
static void step_aside(struct fold__pthread *pt) {
  pthread_mutex_unlock(&pt->mu);
  while (atomic_load_explicit(&pt->want, memory_order_acquire) > 0)
    sched_yield();
  pthread_mutex_lock(&pt->mu);
}

static void *helper_main(void *arg) {
  struct fold__pthread *pt = arg;
  fold_comm *c = pt->c;
  pthread_mutex_lock(&pt->mu);
  while (!pt->stop) {
    fold_comm *m = pending(c); /* a member with work (the family's progress steps them all) */
    if (m == NULL) {
      pt->parked = 1;
      pthread_cond_wait(&pt->cv, &pt->mu);
      pt->parked = 0;
      continue;
    }
    int64_t t0 = fold__clock_mono(NULL);
    fold__progress(m);
    int64_t dt = fold__clock_mono(NULL) - t0;
    pt->passes++;
    pt->pass_sum_ns += dt;
    if (dt > pt->pass_max_ns)
      pt->pass_max_ns = dt;
    if (atomic_load_explicit(&pt->want, memory_order_acquire) > 0) {
      step_aside(pt);
      continue;
    }
    if (pt->stop || !pending(c) || m->svc->pass_again) /* its tasks have work the next pass lets them see (wait_until) */
      continue;
    if (pt->ep < 0) {
      pthread_mutex_unlock(&pt->mu);
      sleep_ns(HELPER_POLL_NS);
      pthread_mutex_lock(&pt->mu);
      continue;
    }
    if (fold__waitset_arm(c)) { /* news already: another pass, after letting a call in */
      pthread_mutex_unlock(&pt->mu);
      sched_yield();
      pthread_mutex_lock(&pt->mu);
      continue;
    }
    pt->sleeps++;
    pthread_mutex_unlock(&pt->mu);
    fold__waitset_sleep(pt->ep, HELPER_SLEEP_NS);
    /* Disarm before waiting for the lock: a call may hold it for long
     * (a blocking wait), and while we count as a sleeper every shm peer
     * sends us a datagram per doorbell. Disarming touches only atomics and
     * fds (transport.h). */
    fold__waitset_disarm(c);
    pthread_mutex_lock(&pt->mu);
  }
  pthread_mutex_unlock(&pt->mu);
  return NULL;
}

/* FOLD_PROGRESS_THREAD: 1 on, unset/empty/0 off; anything else is warned
 * about (core/params.c) and off. */
static int env_on(void) { return fold__param_u64(FOLD__P_PROGRESS_THREAD) == 1; }

static void pt_free(struct fold__pthread *pt) {
  if (pt->ep >= 0)
    close(pt->ep);
  if (pt->kick >= 0)
    close(pt->kick);
  pthread_cond_destroy(&pt->cv);
  pthread_mutex_destroy(&pt->mu);
  free(pt);
}

int fold__pthread_start(fold_comm *c) {
  if (c == NULL || fold__engine_virtual(c) || c->pthread || !env_on())
    return FOLD_OK;
  struct fold__pthread *pt = calloc(1, sizeof *pt);
  if (pt == NULL)
    return fold__error(c, FOLD_ENOMEM, "rank %d: out of memory for the progress thread", c->rank);
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&pt->mu, &ma);
  pthread_mutexattr_destroy(&ma);
  pthread_cond_init(&pt->cv, NULL);
  atomic_init(&pt->want, 0);
  pt->c = c;
  pt->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  pt->ep = pt->kick < 0 ? -1 : fold__waitset_new(c, pt->kick);
  if (pt->ep < 0)
    FOLD__INFO(c, "rank %d: progress thread: a transport has no wait fd, polling every %d us", c->rank,
               HELPER_POLL_NS / 1000);
  int rc = pthread_create(&pt->thread, NULL, helper_main, pt);
  if (rc != 0) {
    pt_free(pt);
    FOLD__WARN(c, "rank %d: FOLD_PROGRESS_THREAD=1 but pthread_create failed (%s): no progress thread", c->rank,
               strerror(rc));
    return fold__error(c, FOLD_ESYS, "rank %d: progress thread: pthread_create: %s", c->rank, strerror(rc));
  }
  c->pthread = pt;
  FOLD__INFO(c, "rank %d: progress thread started", c->rank);
  return FOLD_OK;
}

void fold__pthread_stop(fold_comm *c) {
  struct fold__pthread *pt = c ? c->pthread : NULL;
  if (pt == NULL)
    return;
  fold__pthread_enter(c); /* as a call: the helper steps aside */
  pt->stop = 1;
  pthread_cond_signal(&pt->cv);
  pthread_mutex_unlock(&pt->mu);
  if (pt->kick >= 0) { /* end a sleep in epoll at once */
    uint64_t one = 1;
    ssize_t n = write(pt->kick, &one, sizeof one);
    (void)n;
  }
  pthread_join(pt->thread, NULL);
  c->pthread = NULL;
  FOLD__INFO(c, "rank %d: progress thread: %lld passes (mean %.1f us, longest %.1f us), %lld sleeps", c->rank,
             (long long)pt->passes, pt->passes ? (double)pt->pass_sum_ns / (double)pt->passes / 1e3 : 0.0,
             (double)pt->pass_max_ns / 1e3, (long long)pt->sleeps);
  pt_free(pt);
}

void fold__pthread_enter(fold_comm *c) {
  struct fold__pthread *pt = c->pthread;
  atomic_fetch_add_explicit(&pt->want, 1, memory_order_acq_rel);
  pthread_mutex_lock(&pt->mu);
  atomic_fetch_sub_explicit(&pt->want, 1, memory_order_acq_rel);
}

void fold__pthread_leave(fold_comm *c) {
  struct fold__pthread *pt = c->pthread;
  if (pt->parked && pending(pt->c))
    pthread_cond_signal(&pt->cv);
  pthread_mutex_unlock(&pt->mu);
}
