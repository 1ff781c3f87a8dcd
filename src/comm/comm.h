/* comm.h — the communicator layer: making, attaching transports to and freeing communicators, and destroying members of a family. */
#ifndef FOLD_COMM_H
#define FOLD_COMM_H

#include "engine/engine.h"
#include "op/op.h"

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

/* ---- user ops (comm.c) -----------------------------------------------------------------
 * A communicator's user ops (fold_op_create) are this layer's: a table
 * (fold__op_table, op/op.h) in the well-known slot FOLD__SLOT_OPS, attached
 * empty when the communicator is made, freed by the slot's teardown. */
static inline fold__op_table *fold__op_table_of(const fold_comm *c) {
  return (fold__op_table *)fold__slot_get(c, FOLD__SLOT_OPS);
}
/* Attach an empty table to c. FOLD_ENOMEM. */
int fold__op_table_attach(fold_comm *c);
/* Give k the user ops of c that it lacks (a child learns its parent's:
 * split, dup, hier's children), so that an op means the same on both.
 * FOLD_OK, or FOLD_ENOMEM with k's table unchanged. */
int fold__op_table_sync(fold_comm *k, const fold_comm *c);

/* fold_comm_destroy on a simulated communicator (comm_local.c): frees the
 * rank and detaches it from its simulator; peers that need it later see it
 * as lost (FOLD_EPEER). fold_sim_destroy frees the others. Returns 0. */
int fold__sim_comm_destroy(fold_comm *c);

/* fold_comm_destroy of a comm of a family (children, or a root with live
 * children): see docs/comm.md. */
int fold__fam_destroy(fold_comm *c);
/* A root is freed with its family (fold_sim_destroy): its children too. */
void fold__fam_free(fold_comm *root);

/* ---- making children: shared by comm_split.c and comm_hier_split.c ----
 * What every rank of the parent contributes to a split (24 bytes, no padding). */
typedef struct fold__split_rec {
  int32_t color, key;
  uint32_t next_cid;
  uint32_t flags;      /* SPLIT_NULL_OUT, SPLIT_BAD_COLOR (comm_split.c) */
  uint64_t host;
} fold__split_rec;
_Static_assert(sizeof(fold__split_rec) == 24, "fold__split_rec has no padding");
/* A member of a child: its sort key and its rank in the parent. */
typedef struct fold__member { int32_t key; int rank; } fold__member;
/* c's family (made on first use, with this rank's host id); NULL when out of memory. */
struct fold__family *fold__family_of(fold_comm *c);
/* A new child before its members are known: configured like its parent c,
 * failed with FOLD_EINVAL (op names the call) until it is filled. */
fold_comm *fold__kid_shell(fold_comm *c, const char *op);
/* Where a child's members are: id[i] member i's host id (in the child's
 * order), or id NULL and the child's layout as the caller knows it. */
typedef struct fold__kid_hosts {
  const uint64_t *id;
  int nhosts, max_ppn, local_rank, local_size;
} fold__kid_hosts;
/* Fill shell k as the child of c with the members mem[0..n) (parent ranks,
 * in the child's order), this rank being mem[me], on the hosts h says: k
 * joins the family under cid. Its tables are of its own size (none when
 * its members are evenly spaced root ranks). 0 or FOLD_ENOMEM. */
int fold__kid_fill(fold_comm *c, fold_comm *k, uint32_t cid, const fold__member *mem, int n, int me,
                   const fold__kid_hosts *h);
/* The same with the hosts from recs, the exchange's records (indexed by parent rank). */
int fold__kid_fill_recs(fold_comm *c, fold_comm *k, uint32_t cid, const fold__member *mem, int n, int me,
                        const fold__split_rec *recs);
/* Free a child (filled or a shell) that is not, or no longer, in the family's table. */
void fold__kid_free(fold_comm *k);

/* ---- the children of the hierarchical collectives (comm_hier_split.c, used by coll/hier.c) ----
 * One exchange over c (an allgather with a signature of its own, on a
 * simulated world an allreduce of the next cid with the hosts from the
 * simulator; started inside a collective call and stepped by it, never
 * blocking) makes c's
 * host child (its host's ranks, as fold_comm_split_host), on the
 * hosts' leaders (the lowest rank of each host) the leaders' child, in
 * rank order, and where hosts are of one size the lane child. */
typedef struct fold__hier_kids {
  fold_comm *host;  /* this rank's host */
  fold_comm *net;   /* the leaders, NULL on the other ranks */
  const int *host_of; /* per rank of c: its host's index, i.e. its leader's rank in net */
  int nhosts;
  /* on the simulator (shared by its ranks, read only): per rank of c its
   * rank within its host, the most ranks on one host, and whether host h
   * holds ranks h maxh ...; local NULL elsewhere (hier.c works them out) */
  const int *local;
  int maxh, even;
  /* When every host holds ppn > 1 ranks on several hosts: the ranks of this
   * rank's local rank on every host, in host order (its rank there is its
   * host's index); else NULL and ppn 0. */
  fold_comm *lane;
  int ppn;
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
