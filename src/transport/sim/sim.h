/* sim.h — the simulated network: the world shared by sim.c (transport
 * vtable, event processing) and sim_api.c (public fold_sim_* calls), plus
 * the hooks other parts of fold use on simulated communicators.
 *
 * Model (docs/simulator.md): one global virtual clock in double seconds;
 * every rank s has its own parameters rp[s] (fold_sim_set_rank_params), an
 * outgoing link free from out_free[s], an incoming link free from in_free[d],
 * and a CPU busy until busy[s] (fold__sim_charge, fold_sim_compute). A
 * message of b bytes posted by s at virtual time t to d starts at
 *   T0 = max(t, busy[s], out_free[s]),
 * completes the send at T0 + b*bt[s], reaches d's switch port at
 *   reach = T0 + max(lat[s], lat[d])
 * and arrives at max(max(reach, in_free[d]) + b*bt[d], reach + b*bt[s]).
 * With hosts (fold_sim_set_hosts) a message is timed by its class instead:
 * inside a host the host link's latency and byte time over out_free[s] and
 * in_free[d]; between hosts the network's over the hosts' NICs,
 * out_free[n + host(s)] and in_free[n + host(d)] (one message at a time per
 * NIC direction, so the host's ranks share it).
 * The payload is copied at post time. Events are ordered by (time, global
 * sequence number), so equal inputs give bit-identical times. */
#ifndef FOLD_SIM_H
#define FOLD_SIM_H

#include "core/internal.h"
#include "core/heap.h"
#include "transport/transport.h"

/* Event kinds in the heap. */
enum {
  FOLD__SIM_EV_SEND_DONE = 1, /* ptr = message: its send request completes */
  FOLD__SIM_EV_ARRIVE = 2,    /* ptr = message: delivered to the destination */
  FOLD__SIM_EV_WAKE = 3,      /* rank: run progress (timers, end of busy time) */
  FOLD__SIM_EV_REACH = 4,     /* ptr = message: its head reaches the receiver's switch port */
  FOLD__SIM_EV_CALL = 5,      /* ptr = fold__sim_call: a fold_sim_at callback */
  FOLD__SIM_EV_TIMER = 6      /* rank: an engine timer may be due (stale ones move no clock) */
};

/* One scheduled event, in sim->heap (a core/heap.h heap ordered by
 * fold__sim_ev_before). `kind`, `rank` and `ptr` are the simulator's. */
typedef struct fold__sim_ev {
  double t;      /* virtual time in seconds (finite, >= 0) */
  uint64_t seq;  /* global scheduling order: the tie-breaker */
  int kind;
  int rank;
  void *ptr;
} fold__sim_ev;

/* Strict order of events: earlier time first; at equal times the earlier
 * push. Since seq is unique, no two events compare equal, which is what
 * makes the pop order (and so the whole simulation) independent of the
 * heap's layout. */
int fold__sim_ev_before(const void *a, const void *b);

/* A callback scheduled with fold_sim_at; its CALL event owns it. */
typedef struct fold__sim_call {
  void (*fn)(void *arg);
  void *arg;
} fold__sim_call;

/* A message in flight. Both of its events point at it; SEND_DONE always
 * runs first (its time is never later and it was pushed first), ARRIVE
 * frees it. */
typedef struct fold__sim_msg {
  fold__list link;     /* sender's list (tp->sending) while sreq != NULL; then, freed, sim->spare */
  fold_request *sreq;  /* send request (one reference held), NULL once done */
  int src, dst, ctx, tag; /* src, dst: world ranks */
  int port;                /* in_free[port] is the incoming link it takes (dst, or n + dst's host) */
  uint32_t cid;            /* communicator id (docs/comm.md) */
  size_t bytes;
  double in_xfer;  /* b * byte_time of the receiver (its in-link's share) */
  double tail;     /* reach + b * byte_time of the sender: the last byte can
                      be in no earlier, however fast the receiver's link */
  unsigned char data[]; /* the payload, copied at post time */
} fold__sim_msg;

/* The transport instance of one rank. */
typedef struct fold__sim_tp {
  fold__tp base;
  struct fold_sim *sim;
  int rank;
  fold__list sending;     /* fold__sim_msg.link: messages whose send request is not yet complete */
} fold__sim_tp;

struct fold_sim {
  int n;
  fold_sim_params p;        /* the world's parameters (fold_sim_create) */
  fold_sim_params *rp;      /* rp[i]: rank i's own (fold_sim_set_rank_params) */
  double now;              /* virtual time of the event being / last run */
  fold__heap heap;          /* of fold__sim_ev: the events to run (fold__sim_sched) */
  uint64_t next_seq;        /* the seq the next event scheduled receives */
  fold_comm **comms;       /* comms[i] is rank i; NULL once destroyed */
  fold__sim_tp **tps;
  double *out_free, *in_free, *busy; /* out_free, in_free: n + nhosts entries (ranks, then NICs) */
  fold__list spare;        /* fold__sim_msg.link: records of SIM_SMALL payload bytes for reuse (sim.c) */
  uint8_t *no_lost;        /* n zeros: the lost array the ranks share until one loses a peer */
  int nhosts;              /* 0: no hosts (every rank its own, per-rank parameters) */
  int *host_of;            /* host_of[i]: rank i's host (NULL without hosts) */
  fold_sim_params host_link, net_link; /* the two message classes with hosts */
  struct fold__sim_layout *layout; /* made at the first hier split (sim_layout.c), then fixed */
  int running;             /* an event loop is on the stack (no reentry) */
  int alive;               /* comms not yet destroyed */
};

/* ---- sim.c ---------------------------------------------------------------- */
/* The transport instance for rank `rank` of sim (not yet attached). */
fold__sim_tp *fold__sim_tp_new(struct fold_sim *sim, int rank);
/* Pop and run the earliest event: advance the clock to it, deliver or
 * complete, then let the touched communicator progress. Returns 1 if an event
 * ran, 0 if the queue is empty. */
int fold__sim_step(struct fold_sim *sim);

/* Schedule an event at time t; it gets the next sequence number, so among
 * events with equal t it runs after every event scheduled before it.
 * O(log n). Returns 0, or FOLD_ENOMEM (nothing scheduled). */
static inline int fold__sim_sched(struct fold_sim *sim, double t, int kind, int rank, void *ptr) {
  fold__sim_ev ev = {.t = t, .seq = sim->next_seq, .kind = kind, .rank = rank, .ptr = ptr};
  int rc = fold__heap_push(&sim->heap, &ev);
  if (rc == FOLD_OK) sim->next_seq++;
  return rc;
}
/* Free message m (a record of sim.c: small ones go back to the spare list). */
void fold__sim_msg_free(struct fold_sim *sim, void *m);

/* ---- hooks for the rest of fold (sim_api.c) ----------------------------------- */
/* 1 if c is a simulated communicator. */
int fold__sim_is(const fold_comm *c);
/* Charge `seconds` of local work to c's rank (reductions: bytes * op_time):
 * its CPU is busy until max(now, busy) + seconds; postings it makes are
 * delayed until then, a blocking wait on it returns no earlier, and a wake-up
 * at that time lets the run's final time include the work. No-op on a
 * non-simulated communicator or for seconds <= 0. */
void fold__sim_charge(fold_comm *c, double seconds);
/* Seconds per byte reduced (op_time) of c's rank; 0 if c is not simulated. */
double fold__sim_op_time(const fold_comm *c);
/* c's world rank's host (fold_sim_set_hosts), or its world rank when the
 * simulator has no hosts (every rank its own host); -1 if c is not
 * simulated. fold_comm_split_host groups by it. */
int fold__sim_host(const fold_comm *c);
/* Virtual seconds one local reduction call of `bytes` bytes costs c's rank:
 * op_overhead + bytes * op_time (its own parameters); 0 if c is not
 * simulated. The collective executor sums this over a round's reductions and
 * charges the sum (fold__sim_charge). */
double fold__sim_reduce_cost(const fold_comm *c, size_t bytes);
/* Timers: make the simulator run fold__progress(c) at virtual time t_ns
 * (nanoseconds, as fold__now returns; a time in the past means now). At that
 * event fold__now(c) >= t_ns holds. Returns 0, FOLD_ENOMEM, or FOLD_EINVAL if
 * c is not simulated. */
int fold__sim_wake_at(fold_comm *c, int64_t t_ns);

/* ---- the world's host layout (sim_layout.c) ----------------------------------
 * The world's ranks by host, as hier's split groups them: hosts numbered in
 * the order of their lowest rank (without hosts every rank is its own).
 * One copy per simulator, read only, shared by every rank (tables of n
 * entries per rank would be n^2 in all). */
typedef struct fold__sim_layout {
  int n, nhosts;
  int *host_of;  /* rank -> its host's number */
  int *local;    /* rank -> its rank within its host (rank order) */
  int *start;    /* host h's ranks are members[start[h] .. start[h + 1]), in rank order */
  int *members;
  int maxh;      /* the most ranks on one host */
  int ppn;       /* every host's rank count when they are all equal, else 0 */
  int even;      /* host h holds ranks h maxh .. h maxh + maxh - 1 */
} fold__sim_layout;
/* c's simulator's layout, made at the first call (NULL when c is not
 * simulated or out of memory). Fixed from then on: fold_sim_set_hosts
 * refuses to run after it. */
const fold__sim_layout *fold__sim_layout_get(const fold_comm *c);
void fold__sim_layout_free(struct fold_sim *sim);

/* ---- making and freeing a simulator (sim_api.c); its communicators are
 * the communicator layer's (src/comm/comm_sim.c: fold_sim_create,
 * fold_sim_destroy), which attaches sim->tps[i] to rank i's ---------------- */
/* A simulator of n ranks with params (NULL: the defaults): its state and
 * its n transports (tps[i], not attached to a communicator yet); comms[i]
 * stay NULL until fold__sim_attach. Returns 0, FOLD_EINVAL for bad
 * parameters or FOLD_ENOMEM (message in fold_comm_last_error(NULL)). */
int fold__sim_new(int n, const fold_sim_params *params, struct fold_sim **out);
/* Make c (fresh from fold__comm_alloc) rank i of sim: comms[i], the virtual
 * clock, the simulator's drive and cost hooks, a host of its own. */
void fold__sim_attach(struct fold_sim *sim, int i, fold_comm *c);
/* Free sim once its communicators are freed (each took its transport
 * along): pending events, transports never attached, the arrays. */
void fold__sim_free(struct fold_sim *sim);

#endif /* FOLD_SIM_H */
