/* fold_iterq.h — the iterative communication queue: part of fold.h (which
 * includes it; include fold.h). Its own file so that the spec of each
 * capability stays a readable size. */
#ifndef FOLD_PUBLIC_ITERQ_H
#define FOLD_PUBLIC_ITERQ_H

#include "fold.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- iterative communication queue -------------------------------------
 * Alink's IterativeComQueue for C programs: an ML algorithm is a list of
 * steps run once per superstep on every rank: compute steps (user
 * functions) that share named buffers through the queue's session, and
 * communication steps that reduce or broadcast a named buffer in place.
 * After the last step of each superstep the stop criterion runs on rank 0
 * and its answer reaches every rank in the same superstep (one small
 * allreduce per superstep, which also carries every rank's status); the
 * loop ends when it says stop or after max_iter supersteps, then the
 * closing step runs once. Everything is collective: every rank builds the
 * same step list in the same order and calls fold_iterq_run.
 * A queue uses its communicator's collectives while it runs (blocking,
 * bounded by FOLD_TIMEOUT like any collective); do not start other
 * collectives on that communicator from inside a step except in the same
 * order on every rank. docs/iterq.md has the model and the figures. */
typedef struct fold_iterq fold_iterq;

/* A step: returns FOLD_OK, or an error (a negative FOLD_E* code, ideally
 * with a message set by fold_iterq_fail) that stops the queue on every
 * rank. A positive return is not success: it fails the step with
 * FOLD_EINVAL ("rank 2 failed in superstep 3, step 1 (compute): the step
 * returned 1; ..."), so that a count or a boolean returned by mistake is
 * not taken for FOLD_OK. ctx is the pointer given with the step. */
typedef int (*fold_iterq_fn)(fold_iterq *q, void *ctx);

/* Create an empty queue on comm, with its own session of names (two
 * queues never share buffers). Collective in the sense that every rank
 * must create it, but it does not communicate and does not block.
 * Returns FOLD_EINVAL for a NULL comm or q, FOLD_ENOMEM. */
FOLD_API int fold_iterq_create(fold_comm *comm, fold_iterq **q);

/* The session context (Alink's ComContext): named buffers of this rank.
 * put copies count elements of dtype under name (any name up to 63 bytes);
 * if the name exists with the same count and dtype, it overwrites the
 * buffer in place (pointers from fold_iterq_get stay valid), otherwise it
 * replaces it (earlier pointers become invalid). data may be NULL: the
 * buffer is then zero-filled. Local, does not block. Returns FOLD_EINVAL
 * (with a message on the queue's communicator) for a NULL q or name, an
 * empty name or one over 63 bytes, or an invalid dtype; FOLD_ENOMEM. */
FOLD_API int fold_iterq_put(fold_iterq *q, const char *name, const void *data, size_t count, fold_dtype dtype);
/* The buffer named name on this rank, or NULL if it was never put (or q or
 * name is NULL). count and dtype (each may be NULL) receive its shape. The
 * buffer may be written: it is the session's. */
FOLD_API void *fold_iterq_get(fold_iterq *q, const char *name, size_t *count, fold_dtype *dtype);

/* Alink's DefaultDistributedInfo: rank's block of `total` items is
 * [*start, *start + *count): contiguous blocks in rank order whose sizes
 * differ by at most one (the first total % size ranks get one more).
 * Pure; size < 1 or rank outside [0, size) give *start = *count = 0. */
FOLD_API void fold_partition(uint64_t total, int rank, int size, uint64_t *start, uint64_t *count);

/* Append a compute step: fn(q, ctx) runs on every rank, in step order.
 * Returns FOLD_EINVAL for a NULL q or fn, or once the queue has run. */
FOLD_API int fold_iterq_add_compute(fold_iterq *q, fold_iterq_fn fn, void *ctx);
/* Append an allreduce step: the buffer `name` is replaced by the reduction
 * of every rank's buffer of that name (op as for fold_allreduce). The
 * `direct` algorithm is used (Alink's: pieces of FOLD_PIECE_SIZE
 * elements, 4096 by default, owned by fold_partition's blocks) unless
 * the allreduce algorithm is forced by fold_comm_set_algo or FOLD_ALGO.
 * Before a communication step's first collective (in practice in the
 * first superstep; until this check has passed once in the run) the ranks
 * check the buffer together with one small allreduce, so that every rank
 * returns the same error and the communicator stays usable:
 * - a name not put on some rank fails the queue with FOLD_EINVAL naming
 *   the buffer and that rank (the lowest, and the highest if several:
 *   "... step 2 (allreduce of buffer 'w'): the buffer was never put on
 *   rank 1; every rank must put it before the step runs");
 * - a buffer put with different counts or dtypes on different ranks fails
 *   it with FOLD_EMISMATCH naming the buffer, two ranks that differ and
 *   their shapes;
 * - a rank that failed earlier in that superstep: every rank stops the
 *   superstep there and returns that rank's error.
 * A buffer cannot disappear once every rank has it; a count or dtype
 * changed on some rank after the check passed is caught by the
 * collective's own check instead: FOLD_EMISMATCH naming the ranks, and
 * the communicator fails (as for any mismatched collective).
 * Returns FOLD_EINVAL for a NULL q or name, a name too long, or once the
 * queue has run. */
FOLD_API int fold_iterq_add_allreduce(fold_iterq *q, const char *name, fold_op op);
/* Append a broadcast step: root's buffer `name` is copied into the buffer
 * of that name on every rank (which must exist with the same count and
 * dtype, checked as for allreduce steps). Returns FOLD_EINVAL for a NULL q or
 * name, a root outside [0, size), or once the queue has run. */
FOLD_API int fold_iterq_add_broadcast(fold_iterq *q, const char *name, int root);
/* The stop criterion: after the last step of each superstep, stop(q, ctx)
 * runs on rank 0 only; non-zero means stop. Its answer reaches every rank
 * in the same superstep. A negative return is an error that stops the
 * queue like a failing step. Without one the queue runs max_iter
 * supersteps. Returns FOLD_EINVAL for a NULL q or stop, or once it ran. */
FOLD_API int fold_iterq_set_stop(fold_iterq *q, int (*stop)(fold_iterq *q, void *ctx), void *ctx);
/* At most max_iter supersteps (default 100), whatever the stop criterion
 * says, counting those before a checkpoint resumed from (one past
 * max_iter is refused: fold_iterq_set_checkpoint). The same on every
 * rank. Returns FOLD_EINVAL for a NULL q or max_iter < 1. */
FOLD_API int fold_iterq_set_max_iter(fold_iterq *q, int max_iter);
/* The closing step: fn(q, ctx) runs once on every rank after the last
 * superstep (typically: emit the model). It may call collectives on the
 * queue's communicator (the same on every rank). Its return is a step's
 * (a positive one is FOLD_EINVAL). Returns FOLD_EINVAL for a NULL q or
 * fn, or a second call. */
FOLD_API int fold_iterq_close_with(fold_iterq *q, fold_iterq_fn fn, void *ctx);

/* Save every rank's session buffers and the superstep number into dir
 * every `every` supersteps (after the stop exchange of supersteps every,
 * 2*every, ...): one file per rank, written to a temporary name, fsynced
 * and renamed, so that a crash mid-write leaves the previous checkpoint
 * intact; each rank keeps its last two, and rank 0 writes a manifest
 * naming the run (rank count, step list). dir is created if missing.
 * When fold_iterq_run starts and dir holds checkpoints, the ranks agree
 * (one allreduce) on the last superstep for which every rank has a
 * complete, intact file and resume from it: the session is restored and
 * the loop goes on with the next superstep, so that the final result
 * equals an uninterrupted run's bit for bit (given deterministic steps).
 * A checkpoint's identity is the rank count, the step list, and the
 * buffers put before fold_iterq_run (name, count, dtype and contents, a
 * 64-bit digest of each per rank): anything else a step or the stop
 * criterion depends on (a tolerance, a seed, a learning rate) must be put
 * in a buffer before the run to be part of it (fold_kmeans and
 * fold_logreg put their parameters in 'params'). Refused, with
 * fold_iterq_run returning FOLD_EINVAL on every rank, the message naming
 * the rank, the file and what differs, and no file removed or used:
 * - a file from a run with another rank count, another step list, or
 *   another buffer put before the run ("... is from a run with other data
 *   on rank 0: buffer 'params' differs ...");
 * - a rank's file written by another rank ("was written by rank 1, not by
 *   rank 0"), or whose header holds another superstep than its name
 *   (a renamed file);
 * - a file written by another version of fold (another format);
 * - an agreed checkpoint past this run's max_iter ("checkpoint
 *   D/rank-0.000000027.ckpt holds superstep 27, past this run's max_iter
 *   5"): resuming it would run more supersteps than max_iter allows, so it
 *   is refused rather than used; raise max_iter or use another dir. A
 *   checkpoint of superstep max_iter itself resumes to the closing step.
 * max_iter itself is no part of the identity: a checkpoint within it
 * resumes to the same result as an uninterrupted run of this max_iter.
 * Must be called before fold_iterq_run, the same on every rank. Returns
 * FOLD_EINVAL for a NULL q or dir, every < 1, or once the queue has run. */
FOLD_API int fold_iterq_set_checkpoint(fold_iterq *q, const char *dir, int every);

/* Run the queue: supersteps 1, 2, ... until the stop criterion says stop
 * or max_iter, then the closing step. Blocks (every collective bounded by
 * FOLD_TIMEOUT). A queue runs once. Returns FOLD_OK on every rank, or the
 * same error on every rank: a step that fails on rank r (or a stop
 * criterion that fails on rank 0) makes every rank return r's code, with
 * fold_comm_last_error naming r, the superstep, the step and r's own
 * message ("fold_iterq_run: rank 2 failed in superstep 3, step 1
 * (compute): ..."); the other ranks finish the superstep's communication
 * steps (a failed rank takes part with its buffers as they are; a step's
 * first check, fold_iterq_add_allreduce, ends the superstep on every rank
 * instead), so nothing hangs and the communicator stays usable. When
 * several ranks fail in one superstep, the lowest rank's error wins. A
 * lost peer or a timeout fails as for any collective (FOLD_EPEER,
 * FOLD_ETIMEDOUT), the superstep and step prepended to the message.
 * Checkpoints of another run or past max_iter: FOLD_EINVAL
 * (fold_iterq_set_checkpoint). FOLD_EINVAL for a NULL q, a queue without
 * steps, or a second run. */
FOLD_API int fold_iterq_run(fold_iterq *q);
/* The current superstep, from 1 (0 before the first; inside the closing
 * step, the last superstep run). FOLD_EINVAL for NULL. */
FOLD_API int fold_iterq_iteration(const fold_iterq *q);
/* The queue's communicator (for steps that need rank and size), or NULL. */
FOLD_API fold_comm *fold_iterq_comm(const fold_iterq *q);
/* Record a step's error: sets the message the other ranks will see and
 * returns status, so a step can `return fold_iterq_fail(q, FOLD_EINVAL,
 * "row %zu has %d fields", i, n);`. */
FOLD_API int fold_iterq_fail(fold_iterq *q, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Free the queue and its session. NULL is accepted. Returns FOLD_OK. */
FOLD_API int fold_iterq_destroy(fold_iterq *q);

#ifdef __cplusplus
}
#endif
#endif /* FOLD_PUBLIC_ITERQ_H */
