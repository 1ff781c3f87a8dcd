/* allgather_hier.c — allgather in three phases: gather each host's blocks to its leader, exchange whole host blocks among the leaders, broadcast in each host (docs/hierarchy.md).
 *
 *   host phase     gather on the host child to its rank 0 (the leader):
 *                  the host's blocks, in the host's rank order
 *   network phase  the leaders' allgather of host blocks of maxh blocks
 *                  each (maxh: the most ranks on one host; a smaller
 *                  host's block is padded), in place
 *   host phase     (the leader) each rank's block put at its rank's
 *                  position in recvbuf; broadcast of recvbuf on the host
 *                  child from the leader
 *
 * fold has no allgatherv: the padded allgather is its stand-in, so an
 * uneven layout (3+1+2+2) moves maxh blocks per host between leaders.
 * When every host holds maxh consecutive ranks (2 x 2, a rank per host)
 * the host blocks in rank order are recvbuf itself: the leader gathers
 * straight into recvbuf and the leaders' allgather runs in place there,
 * with no scratch and no copies. Otherwise (round-robin placement, uneven
 * hosts) the host blocks go through scratch and the leader scatters them
 * to their ranks' positions. A host of one rank skips its host phases;
 * one host runs the host child's allgather alone. */
#include <string.h>

#include "coll/hier.h"

/* Where the leaders' vector lives on a leader: recvbuf (even layouts) or
 * scratch; NULL when out of memory. */
static char *net_vec(fold__coll *co, const fold__hier_kids *kids, const fold__hier_layout *L) {
  if (L->even) return co->rbuf;
  return fold__hier_scratch(co, (size_t)kids->nhosts * (size_t)L->maxh * co->count * co->esize);
}

static int ag_plan(fold__coll *co, const fold__hier_kids *kids, int i, fold__hier_phase *p) {
  fold_comm *host = kids->host;
  if (co->count == 0) return 0;
  if (kids->nhosts == 1) { /* the host phase alone: the host child's ranks are the parent's, in order */
    if (i > 0) return 0;
    *p = (fold__hier_phase){host, {FOLD__COLL_ALLGATHER, co->sbuf, co->rbuf, co->count, co->dtype, FOLD_SUM, -1, 0, NULL},
                            "host allgather"};
    return 1;
  }
  if (i > 2) return 0;
  const fold__hier_layout *L = fold__hier_layout_get(co);
  int leader = kids->net != NULL, h = kids->host_of[co->rank];
  size_t blk = co->count * co->esize, hb = (size_t)L->maxh * blk;
  char *vec = NULL;
  if (leader && (vec = net_vec(co, kids, L)) == NULL) return FOLD_ENOMEM;
  char *mine = vec ? vec + (size_t)h * hb : NULL; /* this host's block in the leaders' vector */
  switch (i) {
  case 0:
    if (host->size > 1)
      *p = (fold__hier_phase){host, {FOLD__COLL_GATHER, co->sbuf, mine, co->count, co->dtype, FOLD_SUM, 0, 0, NULL},
                              "host gather"};
    else if (mine != co->sbuf)
      memcpy(mine, co->sbuf, blk);
    return 1;
  case 1:
    if (leader)
      *p = (fold__hier_phase){kids->net, {FOLD__COLL_ALLGATHER, mine, vec, (size_t)L->maxh * co->count, co->dtype,
                              FOLD_SUM, -1, 0, NULL}, "network allgather"};
    return 1;
  default:
    if (leader && !L->even) /* each rank's block to its rank's position */
      fold__hier_blocks_to_rank(co, kids, vec, co->rbuf);
    if (host->size > 1)
      *p = (fold__hier_phase){host, {FOLD__COLL_BROADCAST, NULL, co->rbuf, (size_t)co->size * co->count, co->dtype,
                              FOLD_SUM, 0, 0, NULL}, "host broadcast"};
    return 1;
  }
}

static int ag_step(fold__coll *co) { return fold__hier_step(co, ag_plan); }

const fold__algo fold__allgather_hier = {"hier", fold__hier_init, NULL, 1, fold__hier_usable, ag_step, NULL,
                                         fold__hier_describe};
