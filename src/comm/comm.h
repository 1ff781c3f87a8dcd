/* comm.h — the communicator layer: making, attaching transports to and freeing communicators, and destroying members of a family. */
#ifndef FOLD_COMM_H
#define FOLD_COMM_H

#include "engine/engine.h"

/* ---- comm lifecycle (comm.c) ------------------------------------------------------ */
/* Allocate a comm with defaults (real clock, env timeout/log level), no
 * transports yet. */
int fold__comm_alloc(int rank, int size, fold_comm **out);
/* The same without a peer table (peer_tp NULL): its first transport will
 * reach every peer (fold__peer_tp); and with zero_lost (size bytes, all 0,
 * outliving the comm; NULL: its own) as its lost array until it writes one
 * (fold__lost_own). The simulator's worlds: n tables of n entries each are
 * O(n^2) memory. */
int fold__comm_alloc_one_tp(int rank, int size, uint8_t *zero_lost, fold_comm **out);
/* Set c->nhosts and c->max_ppn from the host ids of its n ranks (any
 * numbering: equal ids are one host), in O(n log n) on a copy. Every rank
 * passes the same ids, so every rank gets the same layout. Out of memory
 * leaves the layout as it was (one host: selection stays flat). */
void fold__comm_set_layout(fold_comm *c, const uint64_t *host, int n);
/* Attach a transport instance; used by bootstrap code. */
int fold__comm_add_tp(fold_comm *c, fold__tp *tp);
/* Free a comm and its transports (used by fold_comm_destroy and on init
 * failure). */
void fold__comm_free(fold_comm *c);
/* Drop what a comm holds for its user and its queues, not its transports:
 * unmatched messages, the posted queue, active tasks, the user's requests
 * (fold__comm_free, and a family's members when they go). */
void fold__comm_drop_queues(fold_comm *c);

/* fold_comm_destroy on a simulated communicator (comm_local.c): frees the
 * rank and detaches it from its simulator; peers that need it later see it
 * as lost (FOLD_EPEER). fold_sim_destroy frees the others. Returns 0. */
int fold__sim_comm_destroy(fold_comm *c);

/* fold_comm_destroy of a comm of a family (children, or a root with live
 * children): see docs/comm.md. */
int fold__fam_destroy(fold_comm *c);
/* A root is freed with its family (fold_sim_destroy): its children too. */
void fold__fam_free(fold_comm *root);

/* ---- the children of the hierarchical collectives (comm_split.c, used by coll/hier.c) ----
 * One exchange over c (an allgather with a signature of its own, started
 * inside a collective call and stepped by it, never blocking) makes c's
 * host child (its host's ranks, as fold_comm_split_host) and, on the
 * hosts' leaders (the lowest rank of each host), the leaders' child, in
 * rank order. */
typedef struct fold__hier_kids {
  fold_comm *host;  /* this rank's host */
  fold_comm *net;   /* the leaders, NULL on the other ranks */
  int *host_of;     /* per rank of c: its host's index, i.e. its leader's rank in net */
  int nhosts;
} fold__hier_kids;
typedef struct fold__hier_split fold__hier_split;
/* Start the exchange (takes the next collective number of c). */
int fold__hier_split_start(fold_comm *c, fold__hier_split **out);
/* Step it: 0 while under way, 1 with *kids set (the same every time after),
 * <0 when it failed (c's error). The children belong to the caller, who
 * destroys them (fold_comm_destroy) before fold__hier_split_free. */
int fold__hier_split_step(fold__hier_split *s, fold__hier_kids **kids);
/* Free the exchange's state (shells not filled yet included; not the children). */
void fold__hier_split_free(fold__hier_split *s);

#endif /* FOLD_COMM_H */
