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
  fold__list early;    /* fold__unexp.link: arrivals for cids not created here yet */
  fold__list done;     /* fold_request.link, simulator: requests of split tasks, to drop later */
};

/* The live child with communicator id cid, or NULL. */
fold_comm *fold__fam_kid(const struct fold__family *f, uint32_t cid);
/* c, a child, is being destroyed: the children split or duplicated from it
 * take its parent (so an abort of an ancestor still reaches them). */
void fold__fam_reparent(struct fold__family *f, const fold_comm *c);
/* Release an unexpected record nobody will take (a rendezvous one through
 * its transport). */
void fold__unexp_drop(fold__unexp *u);

/* ---- sub-communicators (engine/family.c routes, comm/comm_split.c creates) --------------------------------
 * Transports deliver to their root comm (tp->comm) with the cid of the
 * message; these route a cid other than 0 to the child that has it. */
/* The transports' matching entry point: fold__match_posted on the comm with
 * id cid in root's family (src in the root's numbering), NULL if none is
 * posted or there is no such comm (yet). cid 0 is root itself: no lookup. */
/* Route an unexpected message that reached a family's root: one for a
 * child (u->cid != 0) goes to the child (src translated), to the family's
 * early list if the child is not created here yet, or is dropped if it was
 * destroyed; one for a destroyed root is dropped. Returns 1 if it took u,
 * 0 if u is the root's own. */
int fold__fam_deliver(fold_comm *root, struct fold__unexp *u);
/* Peer p (root numbering) was lost: every child that contains it learns it
 * (fold__peer_lost in its numbering). Returns 1 if the root itself was
 * destroyed (nothing more to do), else 0. */
int fold__fam_peer_lost(fold_comm *root, int p, int pending, const char *why);
/* Poll the family's transports once, every member marked as in a poll.
 * Returns 1 if every transport found nothing to do (FOLD__POLL_IDLE). */
int fold__fam_poll(fold_comm *c);
/* fold__progress for a comm of a family: poll once, then every member's
 * failure checks and task steps. */
int fold__fam_progress(fold_comm *c);
/* May a failure of c shut the transports down? Only when no other comm of
 * its family is still healthy. Returns the comm that owns them, or NULL. */
fold_comm *fold__fam_shutdown_owner(fold_comm *c);
/* Has a healthy child of root's family a posted receive or a task? (the
 * simulator's deadlock report) */
int fold__fam_busy(const fold_comm *root);
/* The first live member of root's family (root itself unless destroyed,
 * then its children) for which pred holds, or NULL; root alone when it has
 * no family. For the progress thread, which serves a whole family. */
fold_comm *fold__fam_find(fold_comm *root, int (*pred)(const fold_comm *c));
/* " (rank R of the world)" for a child's rank p, "" on a root: appended to
 * messages that name ranks. */
const char *fold__world_note(const fold_comm *c, int p, char *buf, size_t cap);

#endif /* FOLD_FAMILY_H */
