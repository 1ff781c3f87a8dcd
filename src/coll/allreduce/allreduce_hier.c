/* allreduce_hier.c — allreduce in three phases, with one leader per host (reduce, leaders' allreduce, broadcast) or every rank leading a slice (reduce_scatter, lanes' allreduce, allgather) (docs/hierarchy.md).
 *
 * One leader:
 *   host phase     reduce on the host child to its rank 0 (the leader),
 *                  into the leader's recvbuf
 *   network phase  the leaders' allreduce, in place on recvbuf
 *   host phase     broadcast on the host child from the leader
 *
 * Every rank a leader (hosts of one size P > 1 on several hosts; the
 * vector cut in P slices of b = ceil(count / P) elements, slice l owned by
 * the host's rank l):
 *   host phase     reduce_scatter on the host child: rank l gets slice l
 *                  of its host's partial
 *   network phase  the lane child's allreduce of slice l (the ranks of
 *                  local rank l on every host): the P lanes of a host run
 *                  at once, each on 1/P of the bytes
 *   host phase     allgather of the slices on the host child, in place
 * When P does not divide count the vector is padded to P b elements in
 * scratch (zeros past count, whose results are dropped) and copied to
 * recvbuf at the end; else it runs in recvbuf, no copy.
 *
 * Which one: FOLD_HIER_LEADERS (one, all), else by size: every rank leads
 * from FOLD__HIER_MULTI_BYTES on (below). A host of one rank skips its
 * host phases (a copy if not in place); one host (threads, a single
 * machine) runs the host child's allreduce alone. Every contribution
 * enters once: in its host's reduce (or reduce_scatter), whose result
 * enters the network phase once. The op must be commutative (hosts need
 * not hold consecutive ranks); FOLD_AVG sums and divides at the end. */
#include <string.h>

#include "coll/hier.h"

/* From this many bytes on (and with at least one element per slice),
 * every rank of a host leads its slice (when hosts are of one size).
 * Derived from the closed forms (docs/hierarchy.md, bench/hier_sim.sh):
 * at 64 x 8 every rank leading is ahead of one leader from 64 B on (at
 * 8 B, 2 elements in 8 slices, it is 0.05% behind: the lanes move padding)
 * and the gap is under 1.3% up to 1 KiB, 2.5% at 2 KiB, 1.9x at 4 KiB;
 * below 1 KiB the model's gain is smaller than what it does not count:
 * P times as many messages through each NIC. */
#define FOLD__HIER_MULTI_BYTES ((size_t)1024)

static int ar_multi(const fold__coll *co, const fold__hier_kids *kids) {
  if (kids->lane == NULL) return 0;
  int forced = fold__hier_leaders(co);
  if (forced) return forced == 2;
  return co->count * co->esize >= FOLD__HIER_MULTI_BYTES && co->count >= (size_t)kids->ppn;
}

/* Every rank leads slice l (its host rank) of b = ceil(count / P) elements. */
static int ar_plan_multi(fold__coll *co, const fold__hier_kids *kids, int i, fold__hier_phase *p) {
  fold_op op = fold__hier_op(co);
  size_t P = (size_t)kids->ppn, l = (size_t)kids->host->rank, es = co->esize;
  size_t b = (co->count + P - 1) / P, pad = P * b - co->count;
  char *v = co->rbuf; /* the P b elements the phases run in */
  if (pad && (v = fold__hier_scratch(co, P * b * es)) == NULL) return FOLD_ENOMEM;
  char *mine = v + l * b * es;
  switch (i) {
  case 0: {
    const void *src = co->sbuf; /* recvbuf when in place */
    if (pad) { /* in place in the padded vector */
      memcpy(v, src, co->count * es);
      memset(v + co->count * es, 0, pad * es);
      src = v;
    }
    *p = (fold__hier_phase){kids->host, {FOLD__COLL_REDUCE_SCATTER, src, mine, b, co->dtype, op, -1, 0, NULL},
                            "host reduce_scatter"};
    return 1;
  }
  case 1:
    *p = (fold__hier_phase){kids->lane, {FOLD__COLL_ALLREDUCE, mine, mine, b, co->dtype, op, -1, 0, NULL},
                            "lane allreduce"};
    return 1;
  case 2:
    *p = (fold__hier_phase){kids->host, {FOLD__COLL_ALLGATHER, mine, v, b, co->dtype, FOLD_SUM, -1, 0, NULL},
                            "host allgather"};
    return 1;
  default:
    if (pad) memcpy(co->rbuf, v, co->count * es);
    return 0;
  }
}

static int ar_plan(fold__coll *co, const fold__hier_kids *kids, int i, fold__hier_phase *p) {
  fold_comm *host = kids->host;
  fold_op op = fold__hier_op(co);
  if (co->count == 0) return 0;
  if (ar_multi(co, kids)) return ar_plan_multi(co, kids, i, p);
  if (kids->nhosts == 1) { /* the host phase alone */
    if (i > 0) return 0;
    *p = (fold__hier_phase){host, {FOLD__COLL_ALLREDUCE, co->sbuf, co->rbuf, co->count, co->dtype, op, -1, 0, NULL},
                            "host allreduce"};
    return 1;
  }
  int leader = kids->net != NULL;
  switch (i) {
  case 0:
    if (host->size > 1)
      *p = (fold__hier_phase){host, {FOLD__COLL_REDUCE, co->sbuf, leader ? co->rbuf : NULL, co->count, co->dtype, op, 0, 0, NULL},
                              "host reduce"};
    else if (!co->in_place)
      memcpy(co->rbuf, co->sbuf, co->count * co->esize);
    return 1;
  case 1:
    if (leader)
      *p = (fold__hier_phase){kids->net, {FOLD__COLL_ALLREDUCE, co->rbuf, co->rbuf, co->count, co->dtype, op, -1, 0, NULL},
                              "network allreduce"};
    return 1;
  case 2:
    if (host->size > 1)
      *p = (fold__hier_phase){host, {FOLD__COLL_BROADCAST, NULL, co->rbuf, co->count, co->dtype, FOLD_SUM, 0, 0, NULL},
                              "host broadcast"};
    return 1;
  default: return 0;
  }
}

static int ar_step(fold__coll *co) { return fold__hier_step(co, ar_plan); }

const fold__algo fold__allreduce_hier = {"hier", fold__hier_init, NULL, 0, fold__hier_usable, ar_step, NULL,
                                         fold__hier_describe};
