/* iterq.h — the iterative queue's state, shared by the superstep loop (iterq.c) and checkpoints (iterq_ckpt.c). */
#ifndef FOLD_ITERQ_H
#define FOLD_ITERQ_H

#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"

#define FOLD__IQ_NAME 64 /* a buffer name and its NUL */
/* The text a failing rank sends to the others: its whole message, cut to
 * what fits in one small broadcast. */
#define FOLD__IQ_MSG 400

/* One named buffer of the session (Alink's ComContext object). */
typedef struct fold__iq_buf {
  char name[FOLD__IQ_NAME];
  fold_dtype dtype;
  size_t count, esize;
  void *data;
} fold__iq_buf;

enum { FOLD__IQ_COMPUTE, FOLD__IQ_ALLREDUCE, FOLD__IQ_BROADCAST };

typedef struct fold__iq_step {
  int kind;
  fold_iterq_fn fn; /* compute */
  void *ctx;
  char name[FOLD__IQ_NAME]; /* communication: the buffer */
  fold_op op;               /* allreduce */
  int root;                 /* broadcast */
  int checked; /* communication: every rank had the buffer, in one shape, in an earlier superstep of this run */
} fold__iq_step;

/* A buffer put before the run: its name and digest (checkpoint identity). */
typedef struct fold__iq_dig {
  char name[FOLD__IQ_NAME];
  uint64_t digest;
} fold__iq_dig;

struct fold_iterq {
  fold_comm *comm;
  int rank, size;
  fold__iq_buf *bufs;
  int nbufs, capbufs;
  fold__iq_step *steps;
  int nsteps, capsteps;
  int (*stop)(fold_iterq *q, void *ctx);
  void *stop_ctx;
  fold_iterq_fn close;
  void *close_ctx;
  int max_iter;
  int iter; /* current superstep, from 1 */
  int ran;
  char msg[FOLD__IQ_MSG]; /* the last fold_iterq_fail text of this rank */
  /* checkpoints (NULL dir: none) */
  char *dir;
  int every;
  int kept[2];            /* supersteps of this rank's two newest files (0: none) */
  uint64_t data_digest;   /* of the buffers put before the run */
  fold__iq_dig *init;     /* and of each of them (ninit), to name the one that differs */
  int ninit;
  uint64_t steps_digest;  /* of the step list */
};

/* FNV-1a, 64 bits, continuing from h (start with FOLD__FNV_INIT). */
#define FOLD__FNV_INIT 0xcbf29ce484222325ull
uint64_t fold__iq_fnv(uint64_t h, const void *p, size_t n);

/* snprintf for messages that quote other messages: cutting them is meant. */
void fold__iq_text(char *out, size_t cap, const char *fmt, ...) FOLD__PRINTF(3, 4);

fold__iq_buf *fold__iq_find(fold_iterq *q, const char *name);

/* Every rank's failure status and two more values combined by one small
 * allreduce: *code is this rank's status in (0 or a FOLD_E* code, with
 * `msg` its text) and the lowest failing rank's out (its message is then
 * broadcast and recorded on the communicator by every rank); *vmin the
 * minimum over ranks of *vmin; *v0 rank 0's *v0. Returns FOLD_OK or the
 * agreed failure code (or the collective's own failure). */
int fold__iq_agree(fold_iterq *q, int *code, const char *msg, int32_t *vmin, int32_t *v0);

/* Checkpoints (iterq_ckpt.c). Digests of the step list and of the buffers
 * put so far, taken when the run starts. FOLD_OK or FOLD_ENOMEM (text in q->msg). */
int fold__iq_digests(fold_iterq *q);
/* Before the first superstep: agree with every rank on the checkpoint to
 * resume from. *start is the superstep it holds (0: none, a fresh run)
 * and *stopped whether rank 0's stop criterion had said stop there.
 * A checkpoint of another run, or past q->max_iter, is refused: the same
 * FOLD_EINVAL on every rank, nothing restored and no file removed. */
int fold__iq_resume(fold_iterq *q, int *start, int *stopped);
/* Save this rank's session after superstep q->iter; stop is rank 0's
 * decision (saved so that a resume does not run past it). Local: returns
 * FOLD_OK or an error with its text in q->msg (the next agreement tells
 * every rank). */
int fold__iq_save(fold_iterq *q, int stop);

#endif
