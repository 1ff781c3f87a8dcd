/* fold_select.h — choosing each collective call's algorithm (forced, a
 * rules file, the built-in rules) and asking what was chosen: part of
 * fold.h (which includes it; include fold.h). docs/collectives.md and
 * docs/tuning.md have the algorithms and the measured rules. */
#ifndef FOLD_PUBLIC_SELECT_H
#define FOLD_PUBLIC_SELECT_H

#include "fold.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- algorithm selection ------------------------------------------------
 * Each collective call picks one algorithm, in this order of precedence:
 *  1. forced: fold_comm_set_algo, else the FOLD_ALGO variable;
 *  2. the rules file named by FOLD_RULES, read once when a communicator is
 *     created (fold_init, fold_comm_init, fold_comm_init_threads,
 *     fold_sim_create);
 *  3. the built-in rules (measured on the development machine,
 *     docs/tuning.md), always the fallback.
 * A rules file is text, one rule per line, '#' starts a comment:
 *     collective transport ranks bytes algorithm [commutative] [pof2] [multihost]
 * e.g. "allreduce shm 2-4 64K-1M rabenseifner commutative". transport is
 * inproc, shm, tcp, sim or '*': the communicator's transport, the slowest
 * its peers use (tcp over shm over inproc; fold_comm_transport). ranks and
 * bytes are inclusive ranges: '*', N, N-, -M or N-M; bytes are those of the
 * call's count argument (per block for the block collectives) with optional
 * K, M, G suffixes (powers of 1024). The flags restrict a rule to
 * commutative ops, to power-of-two rank counts, or (multihost) to
 * communicators whose ranks span more than one host with more than one
 * rank on some host (the layout is computed once per communicator). The first rule that
 * matches and whose algorithm can serve the call wins; a rule whose
 * algorithm cannot (a non-commutative op on an order-breaking algorithm,
 * an algorithm not usable on this communicator) is passed over, never an
 * error. fold-bench --tune writes such files (docs/fold-bench.md).
 * A rules file must be a regular file of at most 1 MiB; it is opened
 * without blocking (a FIFO or device is refused, never waited on).
 * A bad FOLD_RULES file (missing, unreadable, not a regular file, over
 * 1 MiB, a read error, a syntax error, an unknown collective, transport,
 * algorithm or flag, a bad range) is rejected as a whole: a warning names
 * FILE:LINE (or FILE) and what is wrong, the communicator is
 * still created and uses the built-in rules, and fold_comm_last_error(comm)
 * holds the same text until the next failure. Like FOLD_ALGO, every rank
 * must see the same file (ranks that select differently fail with
 * FOLD_EMISMATCH naming both algorithms). Full grammar: docs/collectives.md. */

/* The hierarchical algorithm "hier" (allreduce, broadcast, reduce,
 * barrier, allgather and reduce_scatter; docs/hierarchy.md) runs a call as
 * a host phase over the ranks
 * of each host (the host's child, as fold_comm_split_host makes it), a
 * network phase among the hosts' leaders (the lowest rank of each host)
 * and, where the result must spread, a host phase back. Any layout: hosts
 * of different sizes, a host of one rank, ranks numbered across hosts; on
 * one host it is the host phase alone. Forced (fold_comm_set_algo,
 * FOLD_ALGO, a call's opts->algo, or a FOLD_RULES line), or picked by the
 * built-in rules for a commutative allreduce of 256 KiB to 2 MiB over tcp
 * on 3 or more ranks spanning several hosts with more than one rank on
 * some host (never on one host or with a rank per host). The first
 * hier call makes the two internal children with one exchange of its own
 * (it does not block: it runs as part of that call, nonblocking calls
 * included); they are freed by fold_comm_destroy. It refuses
 * non-commutative ops and FOLD_SUM_EXACT (FOLD_EINVAL); FOLD_AVG is the
 * sum divided once by the rank count. Failures are those of every
 * algorithm: a rank that calls something else is FOLD_EMISMATCH on every
 * rank; a dead rank is FOLD_EPEER naming it (in comm's numbering) on every
 * survivor that waits on it, whichever phase it was in. */

/* The transport selection rules match for comm: "inproc", "shm", "tcp" or
 * "sim"; the slowest its peers use when they use several (the same on every
 * rank); "inproc" for a communicator without peers. NULL for NULL. */
FOLD_API const char *fold_comm_transport(const fold_comm *comm);

/* Choose algorithms for this rank's later collectives on comm:
 * "collective=algorithm[,collective=algorithm...]", e.g.
 * "allreduce=ring,broadcast=binomial"; "collective=auto" restores automatic
 * selection. The same grammar as the FOLD_ALGO environment variable, which
 * is read when a communicator is created (a bad FOLD_ALGO is warned about
 * and ignored). Local: every rank must set the same (ranks that differ fail
 * with FOLD_EMISMATCH at the first call whose algorithms differ, see
 * "collectives"). Algorithms per collective: docs/collectives.md. Returns
 * FOLD_EINVAL (nothing changed, fold_comm_last_error(comm) says why) for a
 * NULL comm or spec, an unknown collective or algorithm, an empty spec, or
 * an empty item ("allreduce=ring,", ",", "=ring", "allreduce="). */
FOLD_API int fold_comm_set_algo(fold_comm *comm, const char *spec);

/* The algorithm a collective call would run on comm now, without making
 * it: coll is the collective's name as in fold_comm_set_algo ("allreduce",
 * "barrier", ...); count, dtype and op are the call's arguments (op is
 * ignored by the collectives that do not reduce, all three by barrier).
 * The choice is the call's own (forced, FOLD_RULES, built-in rules, in the
 * order above), so tools can show what automatic selection picks
 * (fold-bench and fold-sim print it per row). Local: does not communicate,
 * does not check buffers or roots. Returns the algorithm's name (static
 * storage), or NULL with fold_comm_last_error(comm) saying why: a NULL comm
 * or coll, an unknown collective, an invalid dtype, sum_exact on a type
 * that is not float32/float64, or a forced algorithm that cannot serve the
 * call. */
FOLD_API const char *fold_comm_get_algo(fold_comm *comm, const char *coll, size_t count, fold_dtype dtype,
                                        fold_op op);

/* The straggler-tolerant ring (algorithm "ring_skip" of allreduce and
 * reduce_scatter, docs/straggler.md): how many distinct ranks this rank
 * routed around in its last completed collective on comm: stopped waiting
 * for after alpha*T + T_trans, or did the reductions of because that rank
 * found itself late and handed them on. 0 if that call rerouted nothing or
 * was not ring_skip. Writes up to max of them into ranks (ranks may be
 * NULL). Does not block, does not communicate. FOLD_EINVAL for a NULL comm
 * or max < 0. With FOLD_DEBUG=INFO every rerouting call logs one line.
 * FOLD_SKIP_ALPHA (> 1, default 4), FOLD_SKIP_T and FOLD_SKIP_TTRANS
 * (seconds) override the threshold's online estimates: T, the smallest
 * recent step that waited for its data, and T_trans, a block's transfer
 * time from the link's measured latency and bandwidth. */
FOLD_API int fold_comm_last_skips(const fold_comm *comm, int *ranks, int max);

#ifdef __cplusplus
}
#endif
#endif /* FOLD_PUBLIC_SELECT_H */
