/* reduce_hier.c — reduce in two phases per rank: to each host's leader, then among the leaders to the root's host, whose leader's part ends at the root (docs/hierarchy.md).
 *
 *   other hosts    reduce on the host child to the leader (into scratch),
 *                  then (the leader) the leaders' reduce to the root's
 *                  host, contributing the host's partial
 *   root's host    (the leader) the leaders' reduce first, contributing
 *                  its own sendbuf, into scratch; then reduce on the host
 *                  child to the root, the leader contributing that result
 *
 * Every contribution enters once: the root's host's leader's own through
 * the leaders' reduce, the other ranks of that host through its host
 * reduce. The op must be commutative; FOLD_AVG sums and divides at the
 * root. One host: the host child's reduce alone. */
#include "coll/hier.h"

static int red_init(fold__coll *co) {
  co->tmp_bytes = co->count * co->esize; /* a leader's partial */
  return fold__hier_init(co);
}

static int red_plan(fold__coll *co, const fold__hier_kids *kids, int i, fold__hier_phase *p) {
  fold_comm *host = kids->host;
  fold_op op = fold__hier_op(co);
  void *tmp = co->bufs[FOLD__B_TMP];
  int is_root = co->rank == co->root;
  if (co->count == 0 || i > 1) return 0;
  int lroot = fold__hier_local_of(co, kids, co->root);
  if (kids->nhosts == 1) {
    if (i == 0)
      *p = (fold__hier_phase){host, {FOLD__COLL_REDUCE, co->sbuf, is_root ? co->rbuf : NULL, co->count, co->dtype, op,
                              lroot, 0, NULL}, "host reduce"};
    return 1;
  }
  int rh = kids->host_of[co->root], mine = kids->host_of[co->rank], leader = kids->net != NULL;
  if (rh == mine) {
    if (i == 0 && leader) { /* the network's result, this leader's own data in it */
      void *out = host->size == 1 ? co->rbuf : tmp; /* a host of one: the leader is the root */
      *p = (fold__hier_phase){kids->net, {FOLD__COLL_REDUCE, co->sbuf, out, co->count, co->dtype, op, rh, 0, NULL},
                              "network reduce"};
    } else if (i == 1 && host->size > 1) {
      const void *in = leader ? tmp : co->sbuf;
      *p = (fold__hier_phase){host, {FOLD__COLL_REDUCE, in, is_root ? co->rbuf : NULL, co->count, co->dtype, op, lroot,
                              0, NULL}, "host reduce"};
    }
    return 1;
  }
  if (i == 0 && host->size > 1) {
    *p = (fold__hier_phase){host, {FOLD__COLL_REDUCE, co->sbuf, leader ? tmp : NULL, co->count, co->dtype, op, 0, 0,
                            NULL}, "host reduce"};
  } else if (i == 1 && leader) {
    const void *in = host->size > 1 ? tmp : co->sbuf;
    *p = (fold__hier_phase){kids->net, {FOLD__COLL_REDUCE, in, NULL, co->count, co->dtype, op, rh, 0, NULL},
                            "network reduce"};
  }
  return 1;
}

static int red_step(fold__coll *co) { return fold__hier_step(co, red_plan); }

const fold__algo fold__reduce_hier = {"hier", red_init, NULL, 0, fold__hier_usable, red_step, NULL,
                                      fold__hier_describe};
