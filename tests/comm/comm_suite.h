/* comm_suite.h — sub-communicator checks that run on any world (threads, processes). */
#ifndef FOLD_TEST_COMM_SUITE_H
#define FOLD_TEST_COMM_SUITE_H

#include "fold.h"

/* One random split of w (colors and keys from seed, the same on every
 * rank), checked: members and order, collectives of every kind on the
 * child, a ring with wildcard receives, a nested split, a dup, destroy in
 * a random order. Siblings of different sizes run at the same time. */
void comm_suite_matrix(fold_comm *w, unsigned seed);
/* Nonblocking collectives on the world and two children, started and
 * waited in different orders on different ranks: no deadlock. */
void comm_suite_interleave(fold_comm *w);
/* A child's messages never match the world's or a sibling's, even with
 * wildcard receives posted first. */
void comm_suite_isolation(fold_comm *w);
/* Bad arguments on one rank: FOLD_EINVAL on every rank naming it; the world
 * still works afterwards. */
void comm_suite_badargs(fold_comm *w);
/* A mismatch on a child fails the child only: the world goes on. */
void comm_suite_child_mismatch(fold_comm *w);
/* fold_comm_split_host: the ranks of this host, as local_rank/local_size say. */
void comm_suite_host(fold_comm *w);
/* fold_comm_abort reaches everything split or duplicated from the aborted
 * communicator, at any depth, also after a middle generation is destroyed,
 * and nothing else: its parent and siblings go on. */
void comm_suite_abort_family(fold_comm *w);
/* Everything above, in order (seeds 1..cases). */
void comm_suite_all(fold_comm *w, int cases);

#endif
