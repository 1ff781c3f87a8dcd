/* coll.h — one collective call in flight: the round executor and its emitters (coll.c), the start (coll_start.c), the mismatch check (coll_sig.c); the algorithm interface: coll/registry.h. */
#ifndef FOLD_COLL_H
#define FOLD_COLL_H

#include "coll/registry.h"
#include "core/internal.h"
#include "engine/engine.h"
#include "op/op.h"
#include "transport/transport.h"

/* Buffers an op refers to. */
enum { FOLD__B_SEND = 0, FOLD__B_RECV = 1, FOLD__B_TMP = 2, FOLD__B_COUNT = 3 };

/* One step of a round. Offsets and lengths are bytes except `count`. */
enum { FOLD__OP_SEND = 1, FOLD__OP_RECV, FOLD__OP_REDUCE, FOLD__OP_COPY };
typedef struct fold__cop {
  uint8_t kind;
  uint8_t out_buf, a_buf, b_buf; /* reduce: out = a op b (a = lower ranks); copy: out <- a; send: a; recv: out */
  uint8_t nowait;                /* send: the round does not wait for it (fold__co_send_nowait) */
  int peer;
  size_t out_off, a_off, b_off;
  size_t len;                    /* bytes for send/recv/copy, elements for reduce */
} fold__cop;

/* What every rank checks against its left neighbour's call (and the shm
 * collectives against every rank's). It has no padding, so signatures
 * compare and hash as bytes. */
typedef struct fold__sig {
  uint64_t count;
  int32_t root;   /* -1 for collectives without a root */
  uint32_t esize; /* bytes per element of dtype */
  uint32_t dtype; /* 32 bits: record types are values up to 2^30 + 256 */
  uint16_t op;    /* 0 for collectives without an op */
  uint8_t coll;
  uint8_t algo;   /* index in the collective's algorithm table */
  uint32_t seg;   /* the call's segment_bytes (fold_coll_opts, FOLD_SEGMENT_BYTES); 0: the algorithm's default */
  uint32_t zero;  /* reserved, 0 */
} fold__sig;
_Static_assert(sizeof(fold__sig) == 32, "fold__sig has no padding (compared and hashed as bytes)");

struct fold__coll {
  fold__task task;
  fold_comm *comm;
  const fold__algo *algo;
  fold__coll_kind kind;
  int rank, size;
  const void *sbuf;
  void *rbuf;
  size_t count;      /* the call's count argument */
  fold_dtype dtype;
  size_t esize;
  fold_op op;
  int commutative;   /* op may combine in any order (fold__call) */
  const fold__op_table *optab; /* the communicator's user ops (comm/comm.h), for fold__op_reduce3 */
  int root;
  int in_place;
  int tag;           /* sequence number of this call */
  void *bufs[FOLD__B_COUNT];
  size_t tmp_bytes;  /* set by init */
  void *exact_acc;   /* FOLD_SUM_EXACT: the accumulators the call runs on (op/exact.c), freed at release */
  void *exact_out;   /* FOLD_SUM_EXACT: the caller's recvbuf, written by the final rounding */
  void *tmp_mem;     /* the scratch behind bufs[FOLD__B_TMP], tmp_cap bytes, kept across calls */
  size_t tmp_cap;
  size_t seg_bytes;  /* pipeline segment (fold_coll_opts, else FOLD_SEGMENT_BYTES); 0: the algorithm's default */
  size_t u[8];       /* algorithm's per-call numbers */
  int v[8];
  /* executor state */
  int round;
  fold__cop *ops;
  int nops, cap;
  fold_request **reqs; /* [i]: the transfer of ops[i] */
  int nreqs, reqcap;
  int nlocal;          /* ops[0..nlocal) need no more running (early local ops) */
  int failed;
  /* mismatch check: our signature, and the one from rank-1; data messages
   * travel on data_ctx, which carries a digest of sig (coll_sig.c) */
  fold__sig sig, left_sig;
  int data_ctx;
  /* the last FOLD__DIG_CACHE signatures digested and their data contexts,
   * kept across calls: a loop of a few different calls (a barrier, the
   * call, a MAX allreduce of the time) digests each once */
#define FOLD__DIG_CACHE 4
  fold__sig dig_sig[FOLD__DIG_CACHE];
  int dig_ctx[FOLD__DIG_CACHE]; /* 0: empty */
  unsigned dig_next;            /* the entry a miss replaces */
  fold_request *sig_send, *sig_recv;
  int sig_checked;
  /* signature rounds: 1 (rank-1 only) when every rank's result needs every
   * rank's data; else ceil(log2 n), round k from rank-2^k (coll_sig.c) */
  int sig_rounds, sig_round, sig_round_ok;
  int stepped, done_early; /* coll_step: a call done at its first step completes at the next */
  int local_due;     /* the round's transfers are done; its local ops wait to run */
  /* FOLD_INJECT_DELAY: 0 no delay pending, 1 waiting for straggle_timer,
   * 2 served (fold__coll_straggle) */
  int straggle;
  fold__timer straggle_timer;
  /* sends the rounds did not wait for (fold__co_send_nowait), still under
   * way: the request and the memory it reads */
#define FOLD__NOWAIT_MAX 4
  struct {
    fold_request *req;
    const char *p;
    size_t len;
  } nowait[FOLD__NOWAIT_MAX];
  int nnowait;
  /* the shm algorithms' call on the collective area (src/coll/shm_coll.c) */
  fold__area_call area;
};

/* The collectives' state on a communicator, in the well-known slot
 * FOLD__SLOT_COLL (engine/svc.h), attached when the communicator is made
 * (fold__coll_state_init, comm/comm.c; a child: fold__coll_state_inherit,
 * comm/comm_split.c) and freed by the slot's teardown: the knobs read once
 * at creation and the finished call kept for the next (coll_start.c). */
typedef struct fold__coll_state {
  fold__coll *cached;   /* a finished call's state, its arrays and scratch reused by the next call (or NULL) */
  int no_sig_check;     /* FOLD_NO_MISMATCH_CHECK=1: no signature exchange (a measurement knob, coll_start.c) */
  size_t segment_bytes; /* FOLD_SEGMENT_BYTES: pipeline broadcast, ring_segmented allreduce; 0: their default */
  size_t piece_size;    /* FOLD_PIECE_SIZE: elements per piece of the direct allreduce; 0: its default */
} fold__coll_state;
/* c's state; never NULL (a communicator without one reads the defaults). */
extern const fold__coll_state fold__coll_state_none;
static inline const fold__coll_state *fold__coll_state_of(const fold_comm *c) {
  const fold__coll_state *st = (const fold__coll_state *)fold__slot_get(c, FOLD__SLOT_COLL);
  return st ? st : &fold__coll_state_none;
}
/* Attach c's state with the knobs read from the FOLD_* table; k's with
 * what a child takes from its parent (the mismatch check's knob; the
 * segment and piece sizes stay the algorithms' defaults). FOLD_ENOMEM. */
int fold__coll_state_init(fold_comm *c);
int fold__coll_state_inherit(fold_comm *k, const fold_comm *parent);

/* Emitters for round functions. Zero-length sends and receives are
 * dropped (both sides compute the same lengths). */
void fold__co_send(fold__coll *co, int peer, int buf, size_t off, size_t bytes);
void fold__co_recv(fold__coll *co, int peer, int buf, size_t off, size_t bytes);
/* A send its round does not wait for: the round completes when its other
 * transfers do, and the send completes in the background. A later round
 * that writes memory the send still reads waits for it before it starts,
 * and the call ends only when every such send has. For a ring step's send:
 * the next step's receive is posted as soon as this step's arrives, not
 * when the right neighbour has drained ours (else the left neighbour's
 * next message lands unexpected: a buffer allocated, faulted in and
 * copied again). Only over shm (coll.c, nowait_pays): tcp and the
 * simulator wait for it as for fold__co_send, and so does a round with
 * FOLD__NOWAIT_MAX such sends already under way. */
void fold__co_send_nowait(fold__coll *co, int peer, int buf, size_t off, size_t bytes);
void fold__co_reduce(fold__coll *co, int out_buf, size_t out_off, int a_buf, size_t a_off, int b_buf, size_t b_off,
                     size_t count);
void fold__co_copy(fold__coll *co, int dst_buf, size_t dst_off, int src_buf, size_t src_off, size_t bytes);

/* Arguments of a call, validated by the public entry points. */
typedef struct fold__coll_args {
  fold__coll_kind kind;
  const void *sbuf;
  void *rbuf;
  size_t count;
  fold_dtype dtype;
  fold_op op;
  int root;
  /* 0, or for the library's own exchanges (fold_comm_split's allgather,
   * hier's split: an allgather, on a simulated world an allreduce): a
   * value for the signature's op field, in place of a reduction's op, so
   * that a user's call never matches them */
  uint16_t sig_op;
  /* the caller's per-call options (include/fold.h), or NULL */
  const fold_coll_opts *opts;
} fold__coll_args;
#define FOLD__SIG_OP_SPLIT 0xFFFFu
#define FOLD__SIG_OP_DUP 0xFFFEu
#define FOLD__SIG_OP_SPLIT_HOST 0xFFFDu
#define FOLD__SIG_OP_HIER 0xFFFCu /* the split that makes hier's children (comm/comm_hier_split.c) */

/* Read a->opts (fold__call_opts: coll/registry.h; NULL: the communicator's settings): FOLD_OK, or FOLD_EINVAL
 * with a message naming this rank and the bad field. */
int fold__call_opts_read(fold_comm *c, const char *opname, const fold__coll_args *a, fold__call_opts *out);

/* Work out the facts of a call (fold__call, coll/registry.h) from its
 * arguments, once: the dtype's size, the op's validity for it, its
 * commutativity and FOLD_SUM_EXACT's accumulator size, the buffers, the
 * root, the in-place form, the per-call options. FOLD_OK, or FOLD_EINVAL
 * with a message naming this rank and what is wrong. The algorithm is left
 * for selection (fold__select_call). */
int fold__call_init(fold_comm *c, const char *opname, const fold__coll_args *a, fold__call *call);
/* Validate, choose the algorithm, start the call. On success *req is the
 * request to wait on; on failure *req is NULL and the error is returned. */
int fold__coll_start(fold_comm *c, const char *opname, const fold__coll_args *a, fold_request **req);
/* The mismatch check (coll_sig.c): co's data context (a digest of co->sig;
 * a loop repeating one call digests once); how many signature rounds co
 * runs (1, or ceil(log2 n) for rooted calls and calls without data); and
 * the check, stepped with the call: 0 while a round is under way, 1 when
 * every round matched, FOLD_EMISMATCH (every rank told) when one did not. */
int fold__coll_data_ctx(fold__coll *co);
int fold__coll_sig_rounds(const fold__coll *co);
int fold__coll_sig_check(fold__coll *co);
/* Post a call's first signature round: rank left's signature received,
 * co's sent to rank right (and the call noted in the shm collective area,
 * if the communicator has one). FOLD_OK or the transfer's error. */
int fold__coll_sig_post(fold__coll *co, int left, int right);
/* A receive of the call's data came with the wrong size (r): the ranks
 * called differently. Fails the communicator and tells every rank;
 * returns FOLD_EMISMATCH. */
int fold__coll_size_mismatch(fold__coll *co, const fold_request *r);
/* The executor (coll.c): the task step and describe() of every call
 * (fold__task), set by the start (coll_start.c). */
int fold__coll_task_step(fold__task *t);
int fold__coll_task_describe(fold__task *t, char *buf, size_t cap);
/* fold__coll_start for the nonblocking public calls: the request is the user's. */
int fold__coll_start_user(fold_comm *c, const char *opname, const fold__coll_args *a, fold_request **req);
/* The finished call's state the communicator keeps for the next call
 * (NULL if none): for white-box tests. */
fold__coll *fold__coll_cached(fold_comm *c);
/* FOLD_INJECT_DELAY (engine/engine.h): call before a step of local work
 * (reduces != 0: the step reduces). 1: wait (a timer is armed, the task
 * must return "waiting"); 0: go on. Once the delay is served it returns 0
 * once and starts afresh at the next step. Without a delay: always 0. */
int fold__coll_straggle(fold__coll *co, int reduces);
/* Start and wait: the blocking form. */
int fold__coll_run(fold_comm *c, const char *opname, const fold__coll_args *a);

/* "allreduce(count=8, dtype=float32, op=sum, algo=ring)": a call, for
 * mismatch messages. Safe on a signature read from a peer (bad fields
 * print as numbers). */
void fold__coll_describe(const fold__sig *s, char *buf, size_t cap);
/* Do two calls' signatures agree (count, root, esize, op, collective,
 * dtype, algorithm)? */
int fold__coll_sig_equal(const fold__sig *a, const fold__sig *b);

#endif
