/* inproc.c — the in-process transport: ranks are threads that share one world. */
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "core/internal.h"
#include "transport/transport.h"

/* Messages up to this size are copied at send time (the send completes at
 * once); larger ones are rendezvous: the receiver copies straight from the
 * sender's buffer, one copy in all, and completes the sender's request. */
#define INPROC_EAGER 65536

/* Messages of up to INPROC_POOLED payload bytes come from the sending rank's
 * pool, and the rank that takes one (another thread) gives it back there:
 * no malloc in one thread and free in another, which contended for glibc's
 * arena lock (a KV push and its ack, 2 threads: 0.2 futex calls per push).
 * A rank keeps up to INPROC_POOL_KEEP of them ready; more go back to malloc. */
#define INPROC_POOLED 256
#define INPROC_POOL_KEEP 1024

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POOL_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define POOL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POOL_POISON(p, n) ((void)(p), (void)(n))
#define POOL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Rendezvous claim word (fold_request.rdv): who may touch the sender's buffer. */
enum { RDV_OFFERED = 0, RDV_COPYING = 1, RDV_TAKEN = 2, RDV_REVOKED = 3 };
/* slot.gone */
enum { ALIVE = 0, LEFT = 1, FAILED = 2 };

struct inproc_slot;

typedef struct inproc_msg {
  fold__unexp u;      /* first: the engine releases eager records through u.release */
  fold_request *sreq; /* rendezvous: the sender's request (one reference), else NULL */
  /* Pooled (u.release set): the slot whose pool it goes back to, and the
   * link in that pool; the rest of the record is poisoned there under ASan. */
  struct inproc_slot *home;
  struct inproc_msg *next_free;
} inproc_msg;

typedef struct inproc_slot {
  pthread_mutex_t lock;
  fold__list in;                  /* inbox of fold__unexp, in the order the messages were sent */
  atomic_uint bell;               /* futex word, bumped whenever this rank has news */
  atomic_int sleepers;
  atomic_int gone;
  /* One sleep over several fds (engine/progress.c): 1 + an eventfd made by
   * the owner on first use (0: none yet), and how many of the owner's
   * threads sleep on it (ring writes it while any do). */
  atomic_int efd1;
  atomic_int fd_sleepers;
  /* Pooled messages given back by whoever took them (a stack any thread
   * pushes on; the owner takes it whole, so a popped record never comes
   * back under a pusher's feet). Its own cache line: the takers write it. */
  alignas(64) _Atomic(struct inproc_msg *) given_back;
} inproc_slot;

typedef struct inproc_world {
  int n;
  atomic_int live;       /* communicators not yet destroyed; the last frees the world */
  atomic_int gone_count; /* bumped whenever a slot's gone flag changes */
  inproc_slot slot[];
} inproc_world;

typedef struct inproc_tp {
  fold__tp base;
  inproc_world *w;
  int rank;
  int gone_seen;          /* gone_count at the last scan */
  unsigned bell_seen;     /* our slot's bell when the last poll took the inbox */
  int shut;
  fold__list rdv;         /* our rendezvous sends not yet taken (one reference each) */
  inproc_msg *pool;       /* pooled messages ready to send (next_free), npool of them */
  int npool;
} inproc_tp;

static const fold__tp_ops inproc_ops;
static int inproc_poll(fold__tp *tp);

/* ---- helpers ---------------------------------------------------------------- */

/* A pooled message goes home (any thread; u.release of pooled records). */
static void pool_give_back(fold__unexp *u) {
  inproc_msg *m = (inproc_msg *)u;
  _Atomic(inproc_msg *) *top = &m->home->given_back;
  POOL_POISON(m, offsetof(inproc_msg, home));
  POOL_POISON(m + 1, INPROC_POOLED);
  inproc_msg *old = atomic_load(top);
  do
    m->next_free = old;
  while (!atomic_compare_exchange_weak(top, &old, m));
}

/* Free a message this transport made (pooled or not). */
static void msg_free(inproc_msg *m) {
  fold__unexp_free(&m->u);
}

/* A message with room for `payload` bytes, zeroed up to its payload. */
static inproc_msg *msg_get(inproc_tp *t, size_t payload) {
  inproc_msg *m;
  if (payload > INPROC_POOLED) {
    m = malloc(sizeof *m + payload);
    if (m) memset(m, 0, sizeof *m);
    return m;
  }
  if (t->pool == NULL) { /* take what the other ranks gave back, keep up to INPROC_POOL_KEEP */
    inproc_msg *back = atomic_exchange(&t->w->slot[t->rank].given_back, NULL);
    while (back) {
      inproc_msg *next = back->next_free;
      if (t->npool < INPROC_POOL_KEEP) {
        back->next_free = t->pool;
        t->pool = back;
        t->npool++;
      } else {
        POOL_UNPOISON(back, sizeof *back + INPROC_POOLED);
        free(back);
      }
      back = next;
    }
  }
  if ((m = t->pool) != NULL) {
    t->pool = m->next_free;
    t->npool--;
    POOL_UNPOISON(m, sizeof *m + INPROC_POOLED);
  } else if ((m = malloc(sizeof *m + INPROC_POOLED)) == NULL) {
    return NULL;
  }
  memset(m, 0, sizeof *m);
  m->home = &t->w->slot[t->rank];
  m->u.release = pool_give_back;
  return m;
}

/* Free a chain of pooled messages (next_free) for good. */
static void pool_free_chain(inproc_msg *m) {
  while (m) {
    inproc_msg *next = m->next_free;
    POOL_UNPOISON(m, sizeof *m + INPROC_POOLED);
    free(m);
    m = next;
  }
}

static void ring(inproc_slot *s) {
  atomic_fetch_add(&s->bell, 1);
  if (atomic_load(&s->sleepers) > 0)
    syscall(SYS_futex, &s->bell, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
  if (atomic_load(&s->fd_sleepers) > 0) {
    uint64_t one = 1;
    ssize_t n = write(atomic_load(&s->efd1) - 1, &one, sizeof one);
    (void)n; /* EAGAIN: the counter is full of wake-ups already */
  }
}

/* Close the slots' eventfds when the world goes. */
static void close_efds(inproc_world *w) {
  for (int i = 0; i < w->n; i++)
    if (atomic_load(&w->slot[i].efd1) > 0)
      close(atomic_load(&w->slot[i].efd1) - 1);
}

static void ring_all(inproc_world *w) {
  atomic_fetch_add(&w->gone_count, 1);
  for (int i = 0; i < w->n; i++)
    ring(&w->slot[i]);
}

/* Take back a rendezvous offer from the receiving side (the receiver left or
 * failed): the sender's request fails with `status`. */
static void refuse_rdv(inproc_world *w, inproc_msg *m, int status) {
  fold_request *s = m->sreq;
  int exp = RDV_OFFERED;
  if (atomic_compare_exchange_strong(&s->rdv, &exp, RDV_REVOKED)) {
    fold__req_complete(s, status);
    ring(&w->slot[m->u.src]);
  }
  fold__req_unref(s);
}

/* Empty this rank's inbox for good: it left or failed. */
static void drain_inbox_for_good(inproc_tp *t, int how) {
  inproc_slot *me = &t->w->slot[t->rank];
  pthread_mutex_lock(&me->lock);
  atomic_store(&me->gone, how);
  fold__list in;
  fold__list_init(&in);
  fold__list_splice_back(&in, &me->in);
  pthread_mutex_unlock(&me->lock);
  FOLD__LIST_FOR_EACH_SAFE(fold__unexp, u, &in, link) {
    inproc_msg *m = (inproc_msg *)u;
    if (m->sreq)
      refuse_rdv(t->w, m, FOLD_EPEER);
    msg_free(m);
  }
}

/* Withdraw our own untaken rendezvous offers; wait out a copy in progress
 * (a bounded memcpy by the receiver) so that the buffer is ours again. */
static void revoke_own_rdv(inproc_tp *t, int status) {
  FOLD__LIST_FOR_EACH_SAFE(fold_request, s, &t->rdv, link) {
    fold__list_unlink(&s->link);
    int exp = RDV_OFFERED;
    if (atomic_compare_exchange_strong(&s->rdv, &exp, RDV_REVOKED))
      fold__req_complete(s, status);
    else
      while (atomic_load(&s->rdv) == RDV_COPYING)
        sched_yield();
    fold__req_unref(s);
  }
}

/* Move message m into receive r; for rendezvous, copy from the sender. */
static void deliver(inproc_tp *t, inproc_msg *m, fold_request *r) {
  fold_request *s = m->sreq;
  if (s == NULL) {
    fold__recv_fill(r, m->u.data, m->u.bytes);
    msg_free(m);
    return;
  }
  int exp = RDV_OFFERED;
  if (!atomic_compare_exchange_strong(&s->rdv, &exp, RDV_COPYING)) {
    /* The sender failed and took its offer back. */
    fold__error(t->base.comm, FOLD_EPEER, "fold_recv: rank %d: peer rank %d failed before its message was taken",
                t->rank, m->u.src);
    fold__req_complete(r, FOLD_EPEER);
  } else {
    int st = FOLD_OK;
    if (s->bytes > r->bytes) {
      st = fold__recv_too_small(r, s->bytes);
    } else {
      memcpy(r->buf, s->buf, s->bytes);
      r->got = s->bytes;
      fold__req_complete(r, FOLD_OK);
    }
    atomic_store(&s->rdv, RDV_TAKEN);
    fold__req_complete(s, st);
    ring(&t->w->slot[m->u.src]);
  }
  fold__req_unref(s);
  msg_free(m);
}

/* Drop taken offers from our list. */
static void prune_rdv(inproc_tp *t) {
  FOLD__LIST_FOR_EACH_SAFE(fold_request, s, &t->rdv, link) {
    if (!fold__req_done(s)) continue;
    fold__list_unlink(&s->link);
    fold__req_unref(s);
  }
}

/* ---- create --------------------------------------------------------------------- */

int fold__inproc_create(int n, fold__tp **tps) {
  /* aligned: each slot's given_back has a cache line of its own */
  size_t wbytes = sizeof(inproc_world) + (size_t)n * sizeof(inproc_slot);
  inproc_world *w = aligned_alloc(alignof(inproc_slot), wbytes);
  if (w)
    memset(w, 0, wbytes);
  if (w == NULL)
    return fold__error(NULL, FOLD_ENOMEM, "fold_comm_init_threads: out of memory for %d ranks", n);
  w->n = n;
  atomic_init(&w->live, n);
  /* The inbox locks are held for a few stores; a rank that finds one held
   * spins a little before it sleeps (adaptive), instead of a futex wait and
   * a wake per contended lock: a poll and a sender meet on it at every
   * message (8 B allreduce, 2 threads on 2 cores: 2.5 futex calls and
   * 4.0 us per call with plain mutexes, against 3.1 us before the lists
   * change moved when they meet). */
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
  for (int i = 0; i < n; i++) {
    pthread_mutex_init(&w->slot[i].lock, &ma);
    fold__list_init(&w->slot[i].in);
  }
  pthread_mutexattr_destroy(&ma);
  for (int i = 0; i < n; i++) {
    inproc_tp *t = calloc(1, sizeof *t);
    if (t == NULL) {
      for (int j = 0; j < i; j++)
        free(tps[j]);
      for (int k = 0; k < n; k++)
        pthread_mutex_destroy(&w->slot[k].lock);
      free(w);
      return fold__error(NULL, FOLD_ENOMEM, "fold_comm_init_threads: out of memory for rank %d of %d", i, n);
    }
    t->base.ops = &inproc_ops;
    fold__list_init(&t->rdv);
    t->w = w;
    t->rank = i;
    tps[i] = &t->base;
  }
  return FOLD_OK;
}

/* ---- isend ---------------------------------------------------------------------- */

static int inproc_isend(fold__tp *tp, fold_request *r) {
  inproc_tp *t = (inproc_tp *)tp;
  fold_comm *c = tp->comm;
  int eager = r->bytes <= INPROC_EAGER;
  inproc_msg *m = msg_get(t, eager ? r->bytes : 0);
  if (m == NULL)
    return fold__error(c, FOLD_ENOMEM, "fold_send: rank %d: out of memory sending %zu bytes to rank %d", c->rank,
                       r->bytes, r->peer);
  m->u.src = t->rank;
  m->u.cid = r->cid;
  m->u.ctx = r->ctx;
  m->u.tag = r->tag;
  m->u.bytes = r->bytes;
  if (eager) {
    m->u.data = m + 1;
    if (r->bytes)
      memcpy(m->u.data, r->buf, r->bytes);
  } else {
    fold__req_ref(r); /* the message's reference */
    m->sreq = r;
  }
  inproc_slot *d = &t->w->slot[r->tpeer];
  pthread_mutex_lock(&d->lock);
  int gone = atomic_load(&d->gone);
  if (!gone) {
    fold__list_push_back(&d->in, &m->u.link);
  }
  pthread_mutex_unlock(&d->lock);
  if (gone) {
    if (m->sreq)
      fold__req_unref(r);
    msg_free(m);
    /* Whatever the peer sent before it went (a report of why it failed, in
     * particular) comes first. */
    inproc_poll(tp);
    fold__peer_lost(c, r->tpeer, 1, gone == LEFT ? "destroyed its communicator" : "failed");
    return fold__comm_failed(c) ? fold__comm_failed(c) : FOLD_EPEER;
  }
  if (eager) {
    fold__req_complete(r, FOLD_OK);
  } else {
    fold__req_ref(r); /* the offer list's reference */
    fold__list_push_back(&t->rdv, &r->link);
  }
  ring(d);
  return FOLD_OK;
}

/* ---- poll ----------------------------------------------------------------------- */

static int inproc_poll(fold__tp *tp) {
  inproc_tp *t = (inproc_tp *)tp;
  fold_comm *c = tp->comm;
  inproc_world *w = t->w;
  inproc_slot *me = &w->slot[t->rank];
  /* Read the gone flags before draining: whatever a peer sent before it
   * left is then surely in the inbox we drain next. */
  int gone_now = atomic_load(&w->gone_count);
  uint8_t *newly = NULL;
  if (gone_now != t->gone_seen) {
    newly = calloc((size_t)w->n, 1);
    for (int p = 0; newly && p < w->n; p++)
      newly[p] = (uint8_t)atomic_load(&w->slot[p].gone);
  }
  /* Every message put in the inbox rings the bell after it: while the
   * bell has not moved since the inbox was last taken, there is nothing new,
   * and the lock, which a sender needs too, is left alone (perf showed the
   * spinning ranks' polls contending with the senders for it). A message
   * whose bell has not rung yet is taken by the poll after it rings. */
  fold__list in;
  fold__list_init(&in);
  unsigned bell = atomic_load(&me->bell);
  if (bell != t->bell_seen) {
    t->bell_seen = bell;
    pthread_mutex_lock(&me->lock);
    fold__list_splice_back(&in, &me->in);
    pthread_mutex_unlock(&me->lock);
  }
  FOLD__LIST_FOR_EACH_SAFE(fold__unexp, u, &in, link) {
    inproc_msg *m = (inproc_msg *)u;
    fold__list_unlink(&u->link);
    fold_request *r = fold__match_cid(c, u->cid, u->src, u->ctx, u->tag);
    if (r) {
      deliver(t, m, r);
    } else {
      u->tp = m->sreq ? tp : NULL;
      u->cookie = m;
      fold__deliver_unexp(c, u);
    }
  }
  prune_rdv(t);
  if (newly) {
    t->gone_seen = gone_now;
    for (int p = 0; p < w->n && !fold__comm_failed(c); p++)
      if (p != t->rank && newly[p] && !c->lost[p])
        fold__peer_lost(c, p, 0, newly[p] == LEFT ? "destroyed its communicator" : "failed");
    free(newly);
  }
  return fold__comm_failed(c);
}

/* ---- wait ----------------------------------------------------------------------- */

static int inproc_wait(fold__tp *tp, int64_t timeout_ns) {
  inproc_tp *t = (inproc_tp *)tp;
  inproc_slot *me = &t->w->slot[t->rank];
  unsigned seq = atomic_load(&me->bell);
  pthread_mutex_lock(&me->lock);
  int have = !fold__list_empty(&me->in);
  pthread_mutex_unlock(&me->lock);
  FOLD__LIST_FOR_EACH(fold_request, s, &t->rdv, link) {
    if (have) break;
    have = fold__req_done(s);
  }
  if (have || atomic_load(&t->w->gone_count) != t->gone_seen || timeout_ns <= 0)
    return FOLD_OK;
  struct timespec ts = {(time_t)(timeout_ns / 1000000000), (long)(timeout_ns % 1000000000)};
  atomic_fetch_add(&me->sleepers, 1);
  syscall(SYS_futex, &me->bell, FUTEX_WAIT_PRIVATE, seq, &ts, NULL, 0);
  atomic_fetch_sub(&me->sleepers, 1);
  return FOLD_OK;
}

/* The slot's eventfd, made on first use by the owner (see inproc_slot). */
static int inproc_wait_fd(fold__tp *tp) {
  inproc_tp *t = (inproc_tp *)tp;
  inproc_slot *me = &t->w->slot[t->rank];
  if (atomic_load(&me->efd1) == 0) {
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0)
      return -1;
    atomic_store(&me->efd1, fd + 1);
  }
  return atomic_load(&me->efd1) - 1;
}

/* As inproc_wait: count ourselves in first, then look for news (a sender
 * enqueues, then reads fd_sleepers; one of us sees the other). */
static int inproc_wait_arm(fold__tp *tp) {
  inproc_tp *t = (inproc_tp *)tp;
  inproc_slot *me = &t->w->slot[t->rank];
  atomic_fetch_add(&me->fd_sleepers, 1);
  pthread_mutex_lock(&me->lock);
  int have = !fold__list_empty(&me->in);
  pthread_mutex_unlock(&me->lock);
  FOLD__LIST_FOR_EACH(fold_request, s, &t->rdv, link) {
    if (have) break;
    have = fold__req_done(s);
  }
  if (have || atomic_load(&t->w->gone_count) != t->gone_seen) {
    atomic_fetch_sub(&me->fd_sleepers, 1);
    return 1;
  }
  return 0;
}

static void inproc_wait_disarm(fold__tp *tp) {
  inproc_tp *t = (inproc_tp *)tp;
  inproc_slot *me = &t->w->slot[t->rank];
  atomic_fetch_sub(&me->fd_sleepers, 1);
  uint64_t v;
  ssize_t n = read(atomic_load(&me->efd1) - 1, &v, sizeof v);
  (void)n; /* nothing to read is fine: the eventfd is nonblocking */
}

/* ---- pull ----------------------------------------------------------------------- */

static int inproc_pull(fold__tp *tp, fold__unexp *u, fold_request *r) {
  inproc_tp *t = (inproc_tp *)tp;
  inproc_msg *m = (inproc_msg *)u;
  if (r == NULL) {
    refuse_rdv(t->w, m, FOLD_EPEER);
    msg_free(m);
    return FOLD_OK;
  }
  deliver(t, m, r);
  return FOLD_OK;
}

/* ---- shutdown ------------------------------------------------------------------- */

/* fold__unexp_take_tp's drop: an offer of ours the engine had queued. */
static void refuse_queued(fold__unexp *u, void *w) {
  refuse_rdv(w, (inproc_msg *)u, FOLD_EPEER);
  msg_free((inproc_msg *)u);
}

static void inproc_shutdown(fold__tp *tp, int status) {
  inproc_tp *t = (inproc_tp *)tp;
  if (t->shut)
    return;
  t->shut = 1;
  drain_inbox_for_good(t, FAILED);
  /* Offers already moved to the unexpected queue will not be taken either. */
  fold__unexp_take_tp(tp->comm, tp, refuse_queued, t->w);
  revoke_own_rdv(t, status);
  ring_all(t->w);
}

/* ---- joined ----------------------------------------------------------------------- */
/* (inproc needs no step after bootstrap: inproc_ops.joined is NULL) */

/* ---- destroy ------------------------------------------------------------------------ */

static void inproc_destroy(fold__tp *tp) {
  inproc_tp *t = (inproc_tp *)tp;
  inproc_world *w = t->w;
  if (!t->shut) {
    t->shut = 1;
    drain_inbox_for_good(t, LEFT);
    revoke_own_rdv(t, FOLD_EPEER);
    ring_all(w);
  }
  pool_free_chain(t->pool);
  free(t);
  /* Records in other ranks' hands still come back to our slot's stack:
   * they are freed with the world, which lives while any rank does. */
  if (atomic_fetch_sub(&w->live, 1) == 1) {
    close_efds(w);
    for (int i = 0; i < w->n; i++) {
      pthread_mutex_destroy(&w->slot[i].lock);
      pool_free_chain(atomic_load(&w->slot[i].given_back));
    }
    free(w);
  }
}

static size_t inproc_eager_max(int ctx) {
  (void)ctx;
  return INPROC_EAGER;
}

static const fold__tp_ops inproc_ops = {
  .name = "inproc",
  .kind = FOLD__TP_KIND_INPROC,
  .eager_max = inproc_eager_max,
  .isend = inproc_isend,
  .poll = inproc_poll,
  .wait = inproc_wait,
  .wait_fd = inproc_wait_fd,
  .wait_arm = inproc_wait_arm,
  .wait_disarm = inproc_wait_disarm,
  .pull = inproc_pull,
  .shutdown = inproc_shutdown,
  .joined = NULL,
  .destroy = inproc_destroy,
};
