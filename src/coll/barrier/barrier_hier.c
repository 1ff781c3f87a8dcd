/* barrier_hier.c — barrier in three phases: the host's ranks, the hosts' leaders, the host's ranks again (docs/hierarchy.md).
 *
 * No rank leaves before every rank arrived: a rank leaves its second host
 * barrier only after its leader entered it, which is after the leaders'
 * barrier, which every leader entered after its whole host arrived. One
 * host: the host child's barrier alone. */
#include "coll/hier.h"

static int bar_plan(fold__coll *co, const fold__hier_kids *kids, int i, fold__hier_phase *p) {
  fold_comm *host = kids->host;
  (void)co;
  int phases = kids->nhosts == 1 ? 1 : 3;
  if (i >= phases) return 0;
  fold__coll_args a = {FOLD__COLL_BARRIER, NULL, NULL, 0, FOLD_UINT8, FOLD_SUM, -1, 0, NULL};
  if (i == 1) {
    if (kids->net) *p = (fold__hier_phase){kids->net, a, "network barrier"};
  } else if (host->size > 1) {
    *p = (fold__hier_phase){host, a, i == 0 ? "host barrier" : "host barrier (release)"};
  }
  return 1;
}

static int bar_step(fold__coll *co) { return fold__hier_step(co, bar_plan); }

const fold__algo fold__barrier_hier = {"hier", fold__hier_init, NULL, 1, fold__hier_usable, bar_step, NULL,
                                       fold__hier_describe};
