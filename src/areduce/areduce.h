/* areduce.h — asynchronous tree reduction: internals shared by its files. */
#ifndef FOLD_AREDUCE_H
#define FOLD_AREDUCE_H

#include "core/internal.h"
#include "engine/engine.h"

/* fold_areduce_tree without the argument checks (they were made). */
int fold__areduce_tree(int n, int target, int degree, int rank, int *parent, int *children, int *nchildren);

/* A send in flight (its buffer lives until it completes) or a posted
 * receive of a rendezvous message (processed when it completes). */
typedef struct fold__ar_pend {
  fold_request *r;
  void *buf;
  int recv;
} fold__ar_pend;

/* Per communicator (an extension slot): the live reductions, for the
 * handler to find a message's reduction by its tag. */
typedef struct fold__ar_reg {
  fold_comm *c;
  uint32_t next_id;
  fold__list live;     /* fold_areduce.link */
  /* a check started by a rank that passed a bad argument, on the
   * simulator (it completes after create returned): its buffers */
  int64_t sink_mine[14], sink_sig[14];
} fold__ar_reg;

struct fold_areduce {
  fold__task task; /* first: the engine steps it while the reduction runs */
  fold_comm *c;
  fold__ar_reg *reg;
  fold__list link;    /* reg->live */
  uint32_t id;
  size_t count, bytes; /* bytes: of the local result (FOLD_SUM_EXACT: accumulators, op/exact.c) */
  void *exact_tmp;     /* FOLD_SUM_EXACT: a fragment converted to accumulators before it combines */
  fold_dtype dtype;
  fold_op op;
  int target, degree, mode;
  int64_t t_wait_ns;
  int parent, nchildren;
  int *children;
  uint8_t *child_done;
  void *local;     /* the local result, nfrag fragments in it */
  uint64_t nfrag;
  uint64_t handed; /* fragments sent to the parent so far */
  int ndone;       /* dones seen: this rank's and its children's */
  int my_done, sent_final, final;
  int npend_recv;
  fold__ar_pend *pend;
  int npend, cap_pend;
  fold__timer timer;
  fold__timer kick;     /* the simulator: step the task after a call from a callback */
  fold_request *check;  /* the create-time agreement allreduce, while unchecked (simulator) */
  int64_t sig[14];      /* its result */
  int64_t mine[14];
  int status;           /* sticky failure of this reduction (a mismatch found late) */
};

/* The communicator's registry of reductions (made with its slot and the
 * handler of FOLD__EXT_AREDUCE at the first call), or NULL: out of memory.
 * areduce.c. */
fold__ar_reg *fold__ar_reg_get(fold_comm *c);
/* Give ar its task's step/describe/release and its timers (areduce.c). */
void fold__ar_hook(fold_areduce *ar);
/* Free what ar holds (its pending requests are complete, or the
 * communicator is going). areduce.c. */
void fold__ar_free(fold_areduce *ar);
/* The create-time agreement check's verdict from its result sig:
 * FOLD_EINVAL if a rank passed a bad argument (bad_here: this one, whose
 * message is set already), FOLD_EMISMATCH naming the field the ranks
 * disagree on, else FOLD_OK. areduce_create.c. */
int fold__ar_check_verdict(fold_comm *c, const int64_t *sig, int bad_here);

#endif
