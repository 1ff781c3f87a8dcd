/* allreduce_hier.c — allreduce in three phases: reduce to each host's leader, allreduce among the leaders, broadcast in each host (docs/hierarchy.md).
 *
 *   host phase     reduce on the host child to its rank 0 (the leader),
 *                  into the leader's recvbuf
 *   network phase  the leaders' allreduce, in place on recvbuf
 *   host phase     broadcast on the host child from the leader
 *
 * A host of one rank skips its host phases (a copy if not in place); one
 * host (threads, a single machine) runs the host child's allreduce alone.
 * Every contribution enters once: in its host's reduce, whose result
 * enters the leaders' allreduce once. The op must be commutative (hosts
 * need not hold consecutive ranks); FOLD_AVG sums and divides at the end. */
#include <string.h>

#include "coll/hier.h"

static int ar_plan(fold__coll *co, const fold__hier_kids *kids, int i, fold__hier_phase *p) {
  fold_comm *host = kids->host;
  fold_op op = fold__hier_op(co);
  if (co->count == 0) return 0;
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
