/* broadcast_hier.c — broadcast in two phases per rank: within the root's host, among the hosts' leaders, within the other hosts (docs/hierarchy.md).
 *
 *   root's host    broadcast on the host child from the root, then (its
 *                  leader) the leaders' broadcast from this host's index
 *   other hosts    (the leader) the leaders' broadcast, then broadcast on
 *                  the host child from the leader
 *
 * One host: the host child's broadcast alone. */
#include "coll/hier.h"

static int bc_plan(fold__coll *co, const fold__hier_kids *kids, int i, fold__hier_phase *p) {
  fold_comm *host = kids->host;
  if (co->count == 0 || i > 1) return 0;
  int rh = kids->host_of[co->root], mine = kids->host_of[co->rank];
  int net_first = rh != mine; /* the data comes from another host */
  int host_phase = net_first ? 1 : 0;
  if (i == host_phase) {
    int root = rh == mine ? fold__hier_local_of(co, kids, co->root) : 0;
    if (host->size > 1)
      *p = (fold__hier_phase){host, {FOLD__COLL_BROADCAST, NULL, co->rbuf, co->count, co->dtype, FOLD_SUM, root, 0, NULL},
                              "host broadcast"};
  } else if (kids->net && kids->nhosts > 1) {
    *p = (fold__hier_phase){kids->net, {FOLD__COLL_BROADCAST, NULL, co->rbuf, co->count, co->dtype, FOLD_SUM, rh, 0, NULL},
                            "network broadcast"};
  }
  return 1;
}

static int bc_step(fold__coll *co) { return fold__hier_step(co, bc_plan); }

const fold__algo fold__broadcast_hier = {"hier", fold__hier_init, NULL, 1, fold__hier_usable, bc_step, NULL,
                                         fold__hier_describe};
