/* fold_areduce.h — asynchronous tree reduction (full and partial): part of
 * fold.h (which includes it; include fold.h). Its own file so that the spec
 * of each capability stays a readable size. docs/areduce.md has the model. */
#ifndef FOLD_PUBLIC_AREDUCE_H
#define FOLD_PUBLIC_AREDUCE_H

#include "fold.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- asynchronous tree reduction ------------------------------------------
 * Reduction inputs ("fragments", each `count` elements of `dtype`) appear
 * on the ranks at unknown times and in unknown numbers per rank; each rank
 * says when it will contribute no more (fold_areduce_done). The result
 * arrives on one target rank: at once after the last fragment (FOLD_AREDUCE_FULL),
 * or as a stream of ever more complete partial results (FOLD_AREDUCE_PARTIAL).
 * The ranks form the deterministic k-ary tree of fold_areduce_tree; every
 * rank combines each fragment (its own, or a child's) into its local result
 * as it arrives.
 *  - Full mode: when a rank has its own done and every child's, it sends
 *    its local result (if it has one) and its done to its parent in one
 *    message; the target's result is then final.
 *  - Partial mode: as full mode, plus a timer of period t_wait seconds on
 *    the engine clock (virtual seconds in the simulator): when it fires and
 *    the rank has seen no done yet (neither its own nor a child's), the rank
 *    sends its local result (if any) to its parent and clears it. The final
 *    result still includes every fragment contributed before done: nothing
 *    is dropped (the LuNA thesis drops a rank's leftovers at done; fold
 *    does not).
 * The op must be commutative (built-ins and commutative user ops): fragments
 * are combined in arrival order. FOLD_AVG averages over fragments.
 * FOLD_SUM_EXACT (float32/float64) gives the same bits whatever the arrival
 * order and tree: fragments travel as its accumulators (fold.h gives the
 * sizes), converted on contribute and rounded when the target reads.
 * Several reductions may be live on one communicator at once; they
 * interleave with collectives and point-to-point. Progress happens in every
 * fold call on the communicator and in fold_progress: a rank that computes
 * for long without calling fold delays its subtree (not other subtrees) by
 * that long (docs/areduce.md: how often to call fold_progress).
 * A lost rank fails the communicator with FOLD_EPEER naming it at the
 * target and at every rank that waits on its subtree (fail-stop). */
typedef struct fold_areduce fold_areduce;
typedef enum fold_areduce_mode { FOLD_AREDUCE_FULL = 0, FOLD_AREDUCE_PARTIAL = 1 } fold_areduce_mode;

/* Create a reduction on comm. Collective: every rank calls it with the same
 * count, dtype, op, target, degree and mode (t_wait may differ), and it
 * blocks like a small allreduce (it checks that the ranks agree; bounded by
 * FOLD_TIMEOUT). count may be 0. The reduction's messages travel on an
 * engine context of its own, so they never match user messages.
 * Returns FOLD_EINVAL on every rank if any rank passed a bad argument (NULL
 * ar, count or dtype or op invalid, a non-commutative user op, target out
 * of range, degree < 1, t_wait <= 0 or not finite in partial mode, mode
 * not one of the two) and the message says which (the offending rank names
 * its argument, the others name the rank); a NULL or failed comm returns at
 * once (FOLD_EINVAL / its failure status). FOLD_EMISMATCH on every rank if
 * ranks disagree (the message names the argument and its lowest and
 * highest value); the communicator is not failed by either. FOLD_ENOMEM. */
FOLD_API int fold_areduce_create(fold_comm *comm, size_t count, fold_dtype dtype, fold_op op, int target,
                                 int degree, fold_areduce_mode mode, double t_wait, fold_areduce **ar);

/* Add one fragment (count elements; copied, combined into this rank's local
 * result now). Any number of times, until fold_areduce_done. Never blocks
 * (it makes one progress pass on the communicator). FOLD_EINVAL for a NULL
 * ar or fragment (count > 0), or after done; the communicator's failure
 * status if it failed. */
FOLD_API int fold_areduce_contribute(fold_areduce *ar, const void *fragment);

/* This rank contributes no more. Never blocks (one progress pass).
 * FOLD_EINVAL for NULL ar or a second done; the failure status if the
 * communicator failed. */
FOLD_API int fold_areduce_done(fold_areduce *ar);

/* Target only: copy the newest result, partial or final, into out (count
 * elements; left untouched while it includes no fragment), its number of
 * fragments into *nfragments and 1 into *final once every rank is done and
 * every fragment is in (else 0). Never blocks (one progress pass).
 * nfragments and final may be NULL. FOLD_EINVAL for a NULL ar, NULL out
 * (count > 0), or a rank that is not the target; the failure status (with
 * the last result still copied) if the communicator failed. */
FOLD_API int fold_areduce_result(fold_areduce *ar, void *out, uint64_t *nfragments, int *final);

/* Blocks. Target: until the final result, then copies it into out and its
 * fragment count into *nfragments (either may be NULL). Other ranks: until
 * this rank's subtree is done and its part has been handed to the parent
 * (its last message posted: fold_areduce_destroy waits for that send to
 * complete); out is untouched, *nfragments is how many fragments this rank
 * handed on in all (its own and its subtree's). Call fold_areduce_done
 * first (else FOLD_EINVAL: the wait could never end). Bounded by
 * FOLD_TIMEOUT; FOLD_EPEER naming the lost rank if a rank of this rank's
 * subtree (or its parent) was lost, the communicator's failure status. */
FOLD_API int fold_areduce_wait(fold_areduce *ar, void *out, uint64_t *nfragments);

/* Free the reduction (NULL: nothing). Any rank may destroy it at any time;
 * messages for it that arrive later are dropped. It waits (bounded by
 * FOLD_TIMEOUT) only for its own sends still in flight. fold_comm_destroy
 * frees the reductions left on the communicator: ar is invalid after it.
 * Returns FOLD_OK (or the failure status of a send that failed). */
FOLD_API int fold_areduce_destroy(fold_areduce *ar);

/* The tree, pure (no communication, no communicator): the ranks 0..n-1 in
 * order, the target as root; the root gets the `degree` smallest other
 * ranks as children; then each next level takes the next smallest ranks,
 * breadth first, handing one child to each node of the current level in
 * turn, then a second, up to `degree`. Writes rank's parent (-1 for the
 * target) into *parent, its children (ascending) into children (room for
 * min(degree, n - 1) entries; may be NULL to ask only how many) and their
 * number into *nchildren. FOLD_EINVAL (with a message in the thread's
 * pre-communicator slot, fold_comm_last_error(NULL)) for n < 1, target or
 * rank outside [0, n), degree < 1, or NULL parent or nchildren. */
FOLD_API int fold_areduce_tree(int n, int target, int degree, int rank, int *parent, int *children,
                               int *nchildren);

#ifdef __cplusplus
}
#endif
#endif /* FOLD_PUBLIC_AREDUCE_H */
