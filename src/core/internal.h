/* internal.h — the types the core, the engine and the transports share. */
#ifndef FOLD_INTERNAL_H
#define FOLD_INTERNAL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "core/list.h"

#if defined(__GNUC__)
#define FOLD__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define FOLD__PRINTF(a, b)
#endif

/* ---- message contexts ---------------------------------------------------
 * A message is matched on (source rank, context, tag). Contexts keep the
 * user's tags apart from the library's own traffic. */
enum {
  FOLD__CTX_P2P = 0,  /* fold_send / fold_recv */
  FOLD__CTX_COLL = 1, /* collectives: tag = collective sequence number */
  FOLD__CTX_SYS = 2,  /* library control traffic (e.g. a mismatch report) */
  FOLD__CTX_SIG = 3,  /* collective signatures for mismatch detection */
  FOLD__CTX_COUNT = 4
};
/* A collective's data messages carry, above the two low bits of
 * FOLD__CTX_COLL, a 29-bit digest of the call's signature (coll/coll.c), so
 * that they match only receives of a call with an equal signature: ranks
 * that disagree never combine each other's data. Other contexts are bare. */
#define FOLD__CTX_DIGEST_BITS 29
static inline int fold__ctx_coll_data(uint32_t digest) {
  return FOLD__CTX_COLL | (int)((digest & ((1u << FOLD__CTX_DIGEST_BITS) - 1)) << 2);
}
/* Extension contexts: FOLD__CTX_SYS with a number k above the two low
 * bits, k in [0, FOLD__CTX_EXT_COUNT) (k = 0 is FOLD__CTX_SYS itself). A
 * layer that needs its own messages takes one and sets a handler for it
 * (engine/engine.h: fold__handler_set); transports carry them unchanged. */
#define FOLD__CTX_EXT_COUNT 64
static inline int fold__ctx_ext(int k) { return FOLD__CTX_SYS | (k << 2); }
static inline int fold__ctx_is_ext(int64_t ctx) {
  return ctx >= 0 && (ctx & 3) == FOLD__CTX_SYS && (ctx >> 2) < FOLD__CTX_EXT_COUNT;
}
/* Is ctx, read from the wire, a context some rank can send? */
static inline int fold__ctx_valid(int64_t ctx) {
  return ctx >= 0 && (ctx < FOLD__CTX_COUNT || fold__ctx_is_ext(ctx) ||
                      ((ctx & 3) == FOLD__CTX_COLL && ctx < ((int64_t)1 << (FOLD__CTX_DIGEST_BITS + 2))));
}

/* ---- requests ------------------------------------------------------------ */
enum { FOLD__REQ_SEND = 1, FOLD__REQ_RECV = 2, FOLD__REQ_TASK = 3 };

typedef struct fold__task fold__task;
typedef struct fold__tp fold__tp;

/* One send, receive or task. Reference counted: the creator holds one
 * reference (dropped by fold_wait/fold_test for user requests), and a
 * transport that keeps a pointer to the request past isend() holds another
 * (fold__req_ref / fold__req_unref). A request is complete once `done` reads
 * 1 (acquire); `status` and `got` are valid from then on. */
struct fold_request {
  int kind;
  atomic_int done;
  atomic_int refs;
  int status;
  fold_comm *comm;     /* owner: only the owner's thread waits on it */
  int peer;            /* destination (send) or source (recv) */
  int ctx;
  int tag;
  void *buf;           /* send: data; recv: destination */
  size_t bytes;        /* send: length; recv: capacity */
  size_t got;          /* recv: bytes received */
  size_t esize;        /* element size of the user's dtype (fold_status.count); 0: bytes */
  fold__list link;     /* on whichever single list holds the request (posted, a transport's queue) */
  /* transport scratch, free for the transport that owns the request */
  size_t tp_off;
  void *tp_data;
  atomic_int rdv;      /* rendezvous claim word for transports that need one */
  fold__task *task;    /* FOLD__REQ_TASK */
  /* requests handed to the user (fold_isend/irecv/i<collective>) are on
   * the communicator's user list until fold_wait/fold_test frees them, so
   * that fold_comm_destroy can drop the user's reference of the rest */
  fold__list user_link;
  int user;
  /* sends: set by fold__send_post for the transport: the communicator id
   * the message travels with (0: a family's root, docs/comm.md) and the
   * peer in the family root's numbering (= peer on a root) */
  uint32_t cid;
  int tpeer;
  int64_t wait_start;  /* fold_wait_for: when its first wait began (0: none yet) */
  int64_t timeout_ns;  /* this request's FOLD_TIMEOUT (fold_coll_opts.timeout); 0: the communicator's */
};


/* An arrived message that matched no posted receive. Transports allocate it
 * (fold__unexp_new) with room for an eager payload or, for rendezvous, with
 * tp/cookie set so that fold__recv_post can ask the transport to pull the
 * data once the receive is posted. */
typedef struct fold__unexp {
  fold__list link;     /* on the comm's unexpected list, or a transport's or family's */
  int src, ctx, tag;   /* src: in the numbering of the comm it is queued on */
  uint32_t cid;        /* communicator id it arrived with (fold__unexp_new: 0) */
  size_t bytes;        /* message length */
  void *data;          /* eager payload (bytes long), or NULL for rendezvous */
  fold__tp *tp;        /* rendezvous: transport to pull from */
  void *cookie;        /* rendezvous: the transport's handle */
  /* eager: how the record goes once its payload is taken (fold__unexp_free);
   * NULL (fold__unexp_new's): free(). inproc returns records to its pool. */
  void (*release)(struct fold__unexp *u);
} fold__unexp;

/* ---- tasks (nonblocking collectives and protocols) -----------------------
 * A task is a resumable state machine. The engine calls step() whenever the
 * task's communicator makes progress; step never blocks: it posts
 * sends/receives, checks their completion and returns 1 when done, 0 when
 * waiting, or a negative FOLD_E* code. */
struct fold__task {
  int (*step)(fold__task *t);
  void (*release)(fold__task *t); /* frees the task; called when req's last reference goes */
  /* Optional (NULL: none): for a timeout's message, write into buf what the
   * task still waits for ("rank 2 (round 3 of 6 of ring: receive of 4096
   * bytes)") and return the first rank it waits on, or -1 if none. */
  int (*describe)(fold__task *t, char *buf, size_t cap);
  fold__list link;                /* engine's active list (c->tasks) */
  fold_request *req;              /* the request the user waits on */
  int is_coll;                    /* a collective: coll_seq is its call number (failure reports carry it) */
  uint32_t coll_seq;
};

/* ---- the communicator ----------------------------------------------------- */
#define FOLD__TP_MAX 4
#define FOLD__ERRLEN 512

typedef int64_t (*fold__clock_fn)(void *ctx);

struct fold_comm {
  int rank, size;
  /* node-local view: this rank's index among the ranks of the comm on its
   * host (same host identity as the shm transport's choice), and how many */
  int local_rank, local_size;
  /* transports: tps[] are the instances this rank uses (at most one per
   * kind); peer_tp[p] is the one that reaches rank p (self included);
   * NULL: tps[0] reaches every peer (fold__peer_tp). */
  fold__tp *tps[FOLD__TP_MAX];
  int ntps;
  fold__tp **peer_tp;
  /* matching: posted receives and unexpected messages, in arrival order */
  fold__list posted;   /* of fold_request.link */
  fold__list unexp;    /* of fold__unexp.link */
  /* active tasks, newest first (fold__task.link) */
  fold__list tasks;
  /* requests the user holds (see fold_request.user) */
  fold__list user_reqs; /* of fold_request.user_link */
  /* fail-stop state: once failed, every operation returns fail_status */
  atomic_int failed;
  int fail_status;
  atomic_int abort_req;  /* set by fold_comm_abort (any thread); acted on by the owner */
  char last_error[FOLD__ERRLEN];
  /* peers known to be gone (left or died): lost[p] != 0; the first reason
   * per peer is kept for messages. See fold__peer_lost. */
  uint8_t *lost;
  int lost_shared;      /* lost is an all-zero array others share (the simulator's:
                         * n arrays of n bytes would be 4 GiB at 65,536 ranks):
                         * fold__lost_own before the first write, never freed here */
  struct fold__lost_note *lost_notes; /* why each lost peer went, newest first */
  /* configuration */
  int64_t timeout_ns;   /* FOLD_TIMEOUT */
  int log_level;        /* FOLD_DEBUG */
  /* time: every piece of code asks the engine (fold__now), never the OS */
  fold__clock_fn clock;
  void *clock_ctx;
  char *poison;              /* a peer's failure report waiting to be acted on */
  int telling;               /* fold__comm_fail_and_tell is flushing its reports */
  int in_poll;               /* > 0 while a transport's poll runs: no failing in there */
  int lost_fail_pending;     /* 1 + a needed peer lost during a poll: fail after the poll
                              * (1 + size: a receive from any source lost its last sender) */
  int own_cpu;               /* every peer is a local process and each rank may have a CPU of its own
                              * (set by the shm transport): waits spin without yielding */
  int tx_batch;              /* > 0: transports may hold sends until fold__tx_batch_end (progress.c) */
  /* engine services: timers, clock hooks, extension slots, message
   * handlers (engine/engine.h); layers keep their state in slots, not here */
  struct fold__svc *svc;
  /* sub-communicators (comm/comm_split.c, docs/comm.md): cid is the id
   * messages of this comm carry (0: the family root, the comm the
   * transports were made for); fam is the family of comms sharing those
   * transports (NULL until the first split or dup); a child maps its ranks
   * to the root's and back (fold__root_rank, fold__kid_rank): when its
   * members are evenly spaced root ranks (a host, the leaders or a lane of
   * a regular layout, a dup) by to_base + i * to_step alone, else by
   * to_root[size] and by_root[size] (its ranks in root rank order, for a
   * binary search): tables of the child's size, never the root's. kid is 0
   * and the tables NULL on a root. */
  uint32_t cid;
  struct fold__family *fam;
  int kid;
  int to_base, to_step;
  int *to_root, *by_root;
  int wait_ep;               /* waits over several transports: 1 + the epoll fd they sleep in,
                              * 0 before the first, -1 if some transport has no wait_fd (progress.c) */
  struct fold__pthread *pthread; /* FOLD_PROGRESS_THREAD's helper, or NULL (progress_thread.c) */
  /* (last: read only by selection's multihost rules, off the hot fields)
   * the communicator's host layout, the same on every rank (selection's
   * "multihost" rules): how many hosts its ranks are on and the most ranks
   * one host holds; set once where the communicator is made (threads: one
   * host, or FOLD_TEST_HOST_MAP's; fold_init: the cards; the simulator:
   * fold_sim_set_hosts; children: the split's host ids) */
  int nhosts, max_ppn;
};

/* The transport that reaches rank p of c: peer_tp[p], or when peer_tp is
 * NULL (a world whose peers all go through its one transport: the
 * simulator's, where n tables of n pointers would not fit at scale)
 * tps[0] for every peer but c's own rank. */
static inline fold__tp *fold__peer_tp(const fold_comm *c, int p) {
  return c->peer_tp ? c->peer_tp[p] : p == c->rank ? NULL : c->tps[0];
}

/* Give c a lost array of its own before writing it (copy on write of a
 * shared one). Returns 0 or FOLD_ENOMEM (lost unchanged). */
static inline int fold__lost_own(fold_comm *c) {
  if (!c->lost_shared) return 0;
  uint8_t *own = (uint8_t *)malloc((size_t)c->size);
  if (own == NULL) return FOLD_ENOMEM;
  memcpy(own, c->lost, (size_t)c->size);
  c->lost = own;
  c->lost_shared = 0;
  return 0;
}

/* Rank p of c in the numbering of its family's root (the world). */
static inline int fold__root_rank(const fold_comm *c, int p) {
  return !c->kid ? p : c->to_root ? c->to_root[p] : c->to_base + p * c->to_step;
}

/* The rank of child k whose rank in the root is rr, or -1 when rr is not a
 * member (O(1) for evenly spaced members, else a binary search). */
static inline int fold__kid_rank(const fold_comm *k, int rr) {
  if (!k->kid) return rr;
  if (k->to_root == NULL) {
    int d = rr - k->to_base;
    if (d < 0 || d % k->to_step != 0 || d / k->to_step >= k->size) return -1;
    return d / k->to_step;
  }
  int lo = 0, hi = k->size - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2, r = k->to_root[k->by_root[mid]];
    if (r == rr) return k->by_root[mid];
    if (r < rr) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/* How long a wait for r may last: its own timeout, else the communicator's. */
static inline int64_t fold__req_timeout_ns(const fold_request *r) {
  return r->timeout_ns ? r->timeout_ns : r->comm->timeout_ns;
}

/* ---- logging ----------------------------------------------------------------- */
enum { FOLD__LOG_NONE = 0, FOLD__LOG_WARN = 1, FOLD__LOG_INFO = 2, FOLD__LOG_TRACE = 3 };
/* FOLD_DEBUG as a level; an unknown value is WARN and is warned about once
 * per process, with the valid values. */
int fold__log_level_env(void);
/* Write one line to stderr: "fold[rank R] LEVEL: text" (rank < 0: "fold LEVEL: text"). */
void fold__log(int level, int rank, const char *fmt, ...) FOLD__PRINTF(3, 4);

/* One call site's repeat counter (log.c). A site prints at most
 * FOLD__LOG_BURST lines per FOLD__LOG_WINDOW_S seconds; what it holds back
 * is counted and summarised in one line ("N more like this ...") when the
 * site next logs after the window, or at fold__log_flush. A site that kept
 * holding back stays quiet but for one summary per window. Zero-initialised
 * (a static per call site: no allocation per line); thread-safe. */
#define FOLD__LOG_BURST 5
#define FOLD__LOG_WINDOW_S 10
typedef struct fold__log_site {
  struct fold__log_site *next; /* every site that held a line back, for fold__log_flush */
  int64_t window_start;        /* ns, fold__clock_mono; 0: never logged */
  int shown, held, listed, level, rank;
  char last[200];              /* the last line held back */
} fold__log_site;
void fold__log_at(fold__log_site *site, int level, int rank, const char *fmt, ...) FOLD__PRINTF(4, 5);
/* Print the pending summary of every site that held lines back (called
 * when a communicator or store server goes, so no count is lost). */
void fold__log_flush(void);
/* Warn once per process about a bad value of environment variable name
 * (again only if the value changes); the text follows "NAME=VALUE ". */
void fold__warn_env(const char *name, const char *value, const char *fmt, ...) FOLD__PRINTF(3, 4);

#define FOLD__WARN(c, ...) do { static fold__log_site site_; if ((c) == NULL || (c)->log_level >= FOLD__LOG_WARN) fold__log_at(&site_, FOLD__LOG_WARN, (c) ? (c)->rank : -1, __VA_ARGS__); } while (0)
#define FOLD__INFO(c, ...) do { static fold__log_site site_; if ((c) != NULL && (c)->log_level >= FOLD__LOG_INFO) fold__log_at(&site_, FOLD__LOG_INFO, (c)->rank, __VA_ARGS__); } while (0)
/* TRACE asks for everything: not limited. */
#define FOLD__TRACE(c, ...) do { if ((c) != NULL && (c)->log_level >= FOLD__LOG_TRACE) fold__log(FOLD__LOG_TRACE, (c)->rank, __VA_ARGS__); } while (0)

/* ---- datatypes (dtype.c) ----------------------------------------------------- */
/* Record type values are this plus the record's size (fold_dtype_create):
 * above FOLD_DTYPE_COUNT with room for more built-in types. */
#define FOLD__DTYPE_RECORD_BASE 256u
/* 1 for a record type made by fold_dtype_create. */
int fold__dtype_is_record(fold_dtype dtype);
/* 1 for the (value, index) pair types of FOLD_MINLOC / FOLD_MAXLOC. */
int fold__dtype_is_pair(fold_dtype dtype);

/* ---- errors ------------------------------------------------------------------- */
/* Record "msg" as comm's last error and return status. comm may be NULL: the
 * message then goes to the thread's pre-communicator slot. */
int fold__error(fold_comm *comm, int status, const char *fmt, ...) FOLD__PRINTF(3, 4);
int fold__verror(fold_comm *comm, int status, const char *fmt, va_list ap);
/* The message slot of calls without a communicator (this thread's). */
const char *fold__pre_comm_error(void);
/* As fold__error, without the INFO line: for a failure the caller expects
 * and handles (e.g. a port already served). */
int fold__error_quiet(fold_comm *comm, int status, const char *fmt, ...) FOLD__PRINTF(3, 4);
/* The status every operation returns once comm failed (0 if not failed). */
static inline int fold__comm_failed(const fold_comm *c) {
  return atomic_load_explicit(&((fold_comm *)c)->failed, memory_order_acquire) ? c->fail_status : 0;
}

#include "core/params.h"

/* ---- configuration (env.c) ---------------------------------------------------- */
/* The kinds of transport (FOLD_TRANSPORT names them). */
enum {
  FOLD__TP_KIND_AUTO = 0,
  FOLD__TP_KIND_INPROC = 1,
  FOLD__TP_KIND_SHM = 2,
  FOLD__TP_KIND_TCP = 3,
  FOLD__TP_KIND_SIM = 4
};
/* Every FOLD_* variable is read through core/params.h (the one table and
 * parser); these two are the values several layers use. */
int64_t fold__env_timeout_ns(void);          /* FOLD_TIMEOUT, default 300 s */
/* FOLD_TRANSPORT: returns 0 auto, or one of FOLD__TP_KIND_*; -1 if invalid */
int fold__env_transport(void);

/* ---- time ------------------------------------------------------------------------- */
int64_t fold__clock_mono(void *ctx); /* CLOCK_MONOTONIC in ns (core/clock.c) */
void fold__sleep_ns(int64_t ns);     /* real sleep, resumed after signals: bootstrap only */
static inline int64_t fold__now(const fold_comm *c) { return c->clock(c->clock_ctx); }

/* ---- the one-thread-at-a-time lock (engine/progress_thread.c) ------------------------------
 * Every public call of any layer that touches a communicator's state
 * brackets itself with fold__enter / fold__leave: with FOLD_PROGRESS_THREAD
 * a helper thread drives progress between calls and takes the same lock
 * (one per family of communicators); without it both are one predictable
 * branch. */
void fold__pthread_enter(fold_comm *c);
void fold__pthread_leave(fold_comm *c);
static inline void fold__enter(const fold_comm *c) {
  if (c != NULL && c->pthread != NULL)
    fold__pthread_enter((fold_comm *)c);
}
static inline void fold__leave(const fold_comm *c) {
  if (c != NULL && c->pthread != NULL)
    fold__pthread_leave((fold_comm *)c);
}

/* ---- argument checks shared by the public calls ---------------------------------------- */
int fold__check_comm(const fold_comm *c);
int fold__check_buf(fold_comm *c, const char *op, const void *buf, size_t count, fold_dtype dtype, size_t *bytes);
int fold__check_peer(fold_comm *c, const char *op, int peer);

#endif /* FOLD_INTERNAL_H */
