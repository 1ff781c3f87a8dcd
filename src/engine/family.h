/* family.h — the family of communicators that share one set of transports: the world and its sub-communicators (engine/family.c routes, comm/comm_split.c creates). */
#ifndef FOLD_FAMILY_H
#define FOLD_FAMILY_H

#include "core/internal.h"

/* A family: the comm the transports were made for (the root: the world,
 * or a fold_comm_init_threads / fold_sim_create rank) and the children
 * split from it or from each other, in this process. The transports keep
 * delivering to the root (tp->comm); messages carry the cid of their comm
 * and the root passes a child's on (docs/comm.md). A family exists from the
 * first split or dup of one of its comms; it is freed with its last comm. */
struct fold__family {
  fold_comm *root;
  int root_gone;       /* fold_comm_destroy(root) ran; the root lives on for the transports */
  int down;            /* the transports were shut down (every comm failed) */
  uint32_t next_cid;   /* the lowest cid this process never used (cids are never reused) */
  uint64_t host;       /* this rank's host identity (split_host) */
  fold_comm **kids;    /* the live children: a short table, scanned per child message */
  int nkids, capkids;
  fold__unexp *early_head, *early_tail; /* arrivals for cids not created here yet */
  fold_request *done;  /* simulator: requests of split tasks, to drop later */
};

/* The live child with communicator id cid, or NULL. */
fold_comm *fold__fam_kid(const struct fold__family *f, uint32_t cid);
/* Release an unexpected record nobody will take (a rendezvous one through
 * its transport). */
void fold__unexp_drop(fold__unexp *u);

#endif /* FOLD_FAMILY_H */
