/* p2p_suite.h — the point-to-point test matrix, runnable on any communicator. */
#ifndef FOLD_P2P_SUITE_H
#define FOLD_P2P_SUITE_H
#include "fold.h"

/* Run the matrix on comm (every rank calls it). big_mib: largest message in
 * MiB (64 in the full run). Returns the number of failed checks on this rank. */
int p2p_suite_run(fold_comm *comm, size_t big_mib);

/* Wildcard receives, statuses, fold_iprobe and fold_progress (p2p_wild.c);
 * big: bytes of the rendezvous-size messages. Returns failed checks. */
int p2p_wild_run(fold_comm *comm, size_t big);

/* Send one message of `bytes` (> 2 GiB) from rank 0 to rank 1 and verify it. */
int p2p_suite_huge(fold_comm *comm, size_t bytes);
#endif
