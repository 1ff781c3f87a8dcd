/* ring_skip_int.h — ring_skip's state and helpers, shared by ring_skip.c (a call's state machine), ring_skip_msg.c (its messages) and ring_skip_comm.c (per communicator: T, T_trans, the threshold). */
#ifndef FOLD_RING_SKIP_INT_H
#define FOLD_RING_SKIP_INT_H

#include <stdint.h>

#include "patterns/patterns.h"

#include "coll/ring_skip.h"

enum { HDR = 16, POOL_MAX = 16 };
/* The noise margin: MARGIN_K times the MARGIN_Q-th percentile of a class's window less its smallest;
 * CONFIRM: how many thresholds a left neighbour not late in the last call is waited for on a host with
 * noise (ring_skip_comm.c says why). */
enum { MARGIN_Q = 50, MARGIN_K = 2, CONFIRM = 4 };
/* LATE_CALLS: how many calls in a row must find us late (above the measure's noise level) before a lateness
 * under the threshold, but above what handing our reductions on costs, puts us in late mode (ring_skip_comm.c). */
enum { LATE_CALLS = 2 };
/* LATE_MEMORY: for how many measuring calls that found us on time a rank that was a confirmed straggler (a call in
 * late mode that measured it late) still hands on the rest of a call at its first late reduction (ring_skip.c). */
enum { LATE_MEMORY = 8 };

/* A partial's header. t_us: the sender's own estimate of T (see
 * t_sample); ttrans_us: what the sender measured of its link to us (a
 * block's transfer time, fold__link_ns; 0: nothing measured); cov: the
 * number of contributions in it, with F_LATE in its top bit: the sender
 * is late and passed this on unreduced. */
#define F_LATE 0x80000000u
enum { TWIN = 16 };
typedef struct msg_hdr {
  float t_us, ttrans_us;
  uint32_t block, cov;
} msg_hdr;
_Static_assert(sizeof(msg_hdr) == HDR, "header size");

typedef struct out_msg {
  fold_request *req;
  char *buf; /* a message buffer of ours, or NULL (sent from the caller's buffer) */
} out_msg;

typedef struct rs_comm rs_comm;
typedef struct rs_call rs_call;
struct rs_call {
  rs_comm *rc;
  fold__list link; /* the communicator's calls not finished (rs_comm.calls) */
  fold__coll *co;
  int n, r, left, right, allreduce;
  size_t maxb;         /* bytes of the largest block */
  char **hold;         /* per block: the message buffer holding received partials not passed on yet */
  int *cov;            /* contributions received per block */
  int64_t missing;     /* contributions still to come, over all blocks (sum of pos_of(j) - cov[j]) */
  int *acc_cov;        /* of which held in hold[j] */
  unsigned char *own_sent;
  int64_t *full_at;    /* when block j's partials were all here (for the lateness test) */
  int pos;             /* next position to work; n: reduce-scatter done */
  int ag_got;
  int64_t ready_ns;    /* when the current position became workable */
  fold__timer watchdog;
  int fired;
  int suspect;         /* the left neighbour was late in the last call, or at a step of this one (CONFIRM) */
  int saw_late;        /* the watchdog fired in this call (the next call's suspect) */
  int64_t threshold_ns; /* 0: no skipping (no T yet) */
  int64_t ttrans_ns;   /* the T_trans in it (for the INFO line) */
  int64_t margin_ns;   /* the noise margin in it (ring_skip_comm.c) */
  float out_ttrans_us; /* our link to the right as measured, for the headers we send */
  fold_request *rreq;
  char *rmsg;
  int rs_taken;        /* messages taken from the reduce-scatter stream (the first has no header) */
  int ag_ctx;          /* the allgather stream: the data context with the digest's lowest bit flipped */
  fold_request *agreq; /* the allgather block being received, straight into the result */
  int late;            /* we were late in the last call: hand every middle reduction on */
  int left_late;       /* the left neighbour handed its reductions on to us */
  double t_ns;         /* the T in the threshold */
  int64_t late_min_ns; /* how late we are, as this call measured it (-1: not measured; see note_late) */
  int64_t bar_ns;      /* what handing a reduction on costs at this block size (ring_skip_comm.c, late mode) */
  int64_t noise_ns;    /* the noise level of our measure of lateness (ring_skip_comm.c, late mode) */
  int64_t red_start;   /* the last reduction: when it started, and its time over the class's least (reduce_timed) */
  int64_t red_excess;
  out_msg *outs;
  int nouts, outcap;
  int skips;           /* positions at which the left neighbour was routed around */
  int self_skips;      /* positions at which we routed our own late work around ourselves */
  int sig_done;
  unsigned pool_gen;   /* the pool's generation when the call began (buf_put) */
};

/* One size class of the estimate of T (ring_skip_comm.c): block sizes of
 * the same bit length. */
enum { NCLASS = 48 };
typedef struct rs_class {
  double twin[TWIN]; /* the last TWIN samples */
  double t_ns;       /* their smallest (0: none yet) */
  double q_ns;       /* their median: t_ns plus the noise of a normal step (ring_skip_comm.c, the margin) */
  double bytes;      /* the block size of the last sample (the point the model fits) */
  int tn;            /* samples taken */
  double left_t_ns;  /* the left neighbour's own estimate for this class, from its last header (0: none) */
  double left_ttrans_ns; /* the left neighbour's measure of its link to us, from its last header (0: none) */
  double rwin[TWIN]; /* the last TWIN reductions' own times (wall, or the simulator's charge) */
  double r_ns;       /* their smallest: a normal reduction of this class */
  int rn;            /* reductions sampled */
} rs_class;

/* Per communicator (an extension slot, not a field of fold_comm). */
struct rs_comm {
  rs_class cls[NCLASS];
  int64_t late_ns;  /* how late the last call that measured it found us (a straggler is late at every size) */
  int late_calls;   /* calls in a row, of those that measured it, that found us late (above their noise_ns) */
  int late_memory;  /* LATE_MEMORY after a call in late mode found us late, less one per measuring call on time */
  int left_suspect; /* the left neighbour was late in the last call (ring_skip_comm.c, CONFIRM) */
  double alpha, t_env_ns, ttrans_env_ns; /* the environment's values (t_env 0: estimate; ttrans_env -1: measure) */
  int64_t floor_ns; /* the least threshold with T estimated: a time slice when ranks share CPUs, else 0 */
  int last_tag;     /* the last ring_skip call, and whom it routed around */
  int last_nskip, last_skip;
  /* Calls started and not finished well: a call that failed, or was given
   * up by a wait (FOLD_TIMEOUT) without a last step, stays here (its sends
   * may still be in a transport's hands) until the communicator goes. */
  fold__list calls; /* rs_call.link */
  fold_comm *comm;
  /* Message buffers and the accumulator, kept for the next call: a fresh
   * allocation of a large block is fresh pages, and faulting them in cost
   * as much as the transfer (measured on shm at 4 MiB). */
  char *pool[POOL_MAX];
  int npool;
  size_t pool_sz;
  unsigned pool_gen; /* how often pool_sz grew */
};

/* The key of the extension slot holding a communicator's rs_comm. */
extern const char fold__rs_key;
/* c's rs_comm, made (and the environment read) on first use; NULL when out of memory. */
rs_comm *fold__rs_comm_state(fold_comm *c);
/* A step of `ns` that waited for its partial, at a block size of `bytes` (ring_skip_comm.c says why the
 * estimate is the smallest recent one, per size class). */
void fold__rs_t_sample(rs_comm *rc, size_t bytes, double ns);
/* A reduction of `ns` at a block size of `bytes`; returns the class's least recent one (a normal reduction). */
double fold__rs_r_sample(rs_comm *rc, size_t bytes, double ns);
/* The size class of a block of `bytes`. */
rs_class *fold__rs_class(rs_comm *rc, size_t bytes);
/* The estimate of T at a block of `bytes`: its class's, else the model fitted over the classes (0: none);
 * *small: larger than every class measured (the model's bytes part is then T_trans). */
double fold__rs_t_of(const rs_comm *rc, size_t bytes, int *small);
/* s's threshold (alpha*T + T_trans, with its floor), T_trans and the figure for its headers, and whether
 * s starts late; from s->rc, s->maxb, s->right. */
void fold__rs_threshold(rs_call *s);
/* At a call's good end: whom it routed around (fold_comm_last_skips) and its INFO lines. */
void fold__rs_report(rs_call *s);
/* Free a call (ring_skip.c): its timer, posted receives and buffers. */
void fold__rs_call_free(fold_comm *c, rs_call *s);

/* FOLD_DEBUG=TRACE: a line per event of a call with the engine's time
 * (virtual in the simulator): the per-rank timelines of docs/straggler.md. */
#define RS_TRACE(s, fmt, ...)                                                                                    \
  FOLD__TRACE((s)->co->comm, "ring_skip #%d %.1f us: " fmt, (s)->co->tag, (double)fold__now((s)->co->comm) / 1e3, \
              __VA_ARGS__)


/* Block j's place in the vector, and positions in its chain (ring_skip.c says what they are). */
static inline size_t blk_start(const rs_call *s, int j) {
  const fold__coll *co = s->co;
  return s->allreduce ? fold__block_start(co->count, s->n, j) : (size_t)j * co->count;
}
static inline size_t blk_len(const rs_call *s, int j) {
  const fold__coll *co = s->co;
  return s->allreduce ? fold__block_len(co->count, s->n, j) : co->count;
}
static inline int pos_of(const rs_call *s, int j) { return fold__mod(s->r - j - 1, s->n); }
static inline int block_at(const rs_call *s, int p) { return fold__mod(s->r - p - 1, s->n); }

static inline const char *own(const rs_call *s, int j) {
  const fold__coll *co = s->co;
  const char *src = s->allreduce && co->in_place ? co->rbuf : co->sbuf;
  return src + blk_start(s, j) * co->esize;
}
static inline char *out_of(const rs_call *s, int j) {
  const fold__coll *co = s->co;
  return s->allreduce ? (char *)co->rbuf + blk_start(s, j) * co->esize : co->rbuf;
}

/* A counter, not a loop over the blocks: the step runs after every
 * message, and at n = 1,024 the loop was 84% of the simulator's time
 * (perf; it was first blamed on the engine's timer list). */
static inline int recv_expected(const rs_call *s) { return s->missing > 0; }

/* ring_skip_msg.c: the buffer pool (a buffer of HDR + the largest block; NULL when out of memory) */
char *fold__rs_buf_get(rs_call *s);
void fold__rs_buf_put(rs_call *s, char *b);
/* Send len bytes from data to the right on ctx; owned: our message buffer (it goes with the send) or NULL. */
int fold__rs_send(rs_call *s, int ctx, const void *data, size_t len, char *owned);
/* Send a partial of block j with cov contributions (and flags) from message buffer buf. */
int fold__rs_send_partial(rs_call *s, char *buf, int j, int cov, unsigned flags, size_t bytes);
/* Reap finished sends (their buffers back to the pool); <0: a send failed. */
int fold__rs_sends_step(rs_call *s);
/* FOLD_ENOMEM, naming our rank. */
int fold__rs_no_memory(rs_call *s);
/* Post the reduce-scatter receive from the left, if one is expected and none is posted. */
int fold__rs_post_recv(rs_call *s);
/* Take the arrived reduce-scatter message: held for our reduction, or passed on. */
int fold__rs_take(rs_call *s);
/* The allgather stream; *took: a block arrived (and went on). */
int fold__rs_ag_step(rs_call *s, int *took);

#endif
