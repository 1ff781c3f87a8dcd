/* hier.h — the hierarchical collectives' shared machinery (hier.c) and the per-collective phase plans. */
#ifndef FOLD_HIER_H
#define FOLD_HIER_H

#include "coll/coll.h"
#include "comm/comm.h"

/* One phase of a call on this rank: a collective on child k (the host's,
 * the leaders' or the lanes'), or nothing (k NULL) when this rank sits the
 * phase out. what names it in messages ("host reduce", "network
 * allreduce"). ahead: the plan may be asked for the next phase while this
 * one runs (a pipeline); a phase planned while others run starts, in plan
 * order, when the phase of index `after` is over (-1: none to wait for)
 * and fewer than four phases are under way. Zero for both (the default):
 * one phase at a time. */
typedef struct fold__hier_phase {
  fold_comm *k;
  fold__coll_args a;
  const char *what;
  int ahead;
  int after;
} fold__hier_phase;

/* A collective's plan: phase i of the call on this rank, given the
 * children (every rank of a host and every leader must plan the same
 * child calls in the same order). 1 with *p filled, 0 past the last
 * phase, <0 on failure (the communicator's error set). It is called once
 * per phase, after the previous phase's child call finished (unless that
 * phase was planned `ahead`: then at once, while it runs), and may do
 * local work before the phase it plans (a copy, a permutation) on memory
 * that no phase under way touches. It returns 0 only when every phase is
 * over: a pipelined plan's last phase is not `ahead`. */
typedef int (*fold__hier_plan)(fold__coll *co, const fold__hier_kids *kids, int i, fold__hier_phase *p);

/* The algorithm interface (registry.h) shared by every hier collective:
 * init (checks, the call's state, the signature's first round, and at the
 * communicator's first hier call the exchange that makes the children),
 * usable (not on hier's own children), describe; step runs the plan. */
int fold__hier_init(fold__coll *co);
const char *fold__hier_usable(const fold_comm *c);
int fold__hier_step(fold__coll *co, fold__hier_plan plan);
int fold__hier_describe(fold__coll *co, char *buf, size_t cap);

/* The op the phases reduce with: FOLD_AVG sums (the mean is taken once,
 * at the end, over every rank). */
static inline fold_op fold__hier_op(const fold__coll *co) { return co->op == FOLD_AVG ? FOLD_SUM : co->op; }
/* This rank's rank in its host (the host child's numbering) and the
 * rank of `r` (of the parent) in its own host. */
int fold__hier_local_of(const fold__coll *co, const fold__hier_kids *kids, int r);

/* FOLD_HIER_LEADERS as read at the communicator's first hier call: 0 the
 * plan chooses by size, 1 one leader per host, 2 every rank of a host
 * leads a slice (where hosts are of one size; else one leader). */
int fold__hier_leaders(const fold__coll *co);
/* FOLD_HIER_CHUNKS as read there: 0 the plan chooses by size, 1 no
 * pipeline, k > 1 k chunks (fewer where a chunk would be too small). */
int fold__hier_chunks(const fold__coll *co);

/* The hosts' shapes (the same on every rank), for plans that lay blocks
 * out per host: maxh, the most ranks on one host; local[r], rank r's rank
 * in its host; even, every host holds maxh consecutive ranks (host h the
 * ranks h*maxh ...), so that the hosts' blocks in rank order are already
 * grouped by host. */
typedef struct fold__hier_layout {
  int maxh;
  int even;
  const int *local;
} fold__hier_layout;
const fold__hier_layout *fold__hier_layout_get(const fold__coll *co);
/* The blocks of count elements of the call, one per rank, between rank
 * order (rank r's at block r) and host order (host h's maxh blocks at
 * block h maxh, rank r at local[r] within its host's): to_host zeroes the
 * padding of hosts smaller than maxh. */
void fold__hier_blocks_to_host(const fold__coll *co, const fold__hier_kids *kids, const void *byrank, void *byhost);
void fold__hier_blocks_to_rank(const fold__coll *co, const fold__hier_kids *kids, const void *byhost, void *byrank);
/* Scratch of at least `bytes` for a plan, kept by the communicator across
 * calls (one call plans at a time: a call's phases start only when the
 * previous call's have finished); NULL (error set) when out of memory. */
void *fold__hier_scratch(fold__coll *co, size_t bytes);

#endif
