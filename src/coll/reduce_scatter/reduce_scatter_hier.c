/* reduce_scatter_hier.c — reduce_scatter in three phases: reduce the whole vector to each host's leader, reduce_scatter host blocks among the leaders, scatter in each host (docs/hierarchy.md).
 *
 *   host phase     reduce of the whole vector (n blocks) on the host child
 *                  to its rank 0 (the leader), into scratch: the host's
 *                  partial
 *   network phase  (the leader) the partial's blocks laid out by host,
 *                  maxh blocks per host (maxh: the most ranks on one
 *                  host; a smaller host's block padded with zeros), each
 *                  host's in its ranks' order; the leaders' reduce_scatter
 *                  of those host blocks, in place: each leader ends with
 *                  its host's blocks, fully reduced
 *   host phase     scatter on the host child from the leader: block l to
 *                  the host's rank l
 *
 * fold has no reduce_scatterv: the padded reduce_scatter is its stand-in,
 * so an uneven layout reduces maxh blocks per host among the leaders.
 * When every host holds maxh consecutive ranks (2 x 2, a rank per host)
 * the partial is already laid out by host and no block is moved. Every
 * contribution enters once (a rank's in its host's reduce, a host's
 * partial in the leaders' reduce_scatter); the op must be commutative;
 * FOLD_AVG sums and divides each rank's block at the end. A host of one
 * rank gives its sendbuf to the leaders' phase; one host runs the host
 * child's reduce_scatter alone. */
#include <string.h>

#include "coll/hier.h"

/* A leader's buffers: part, the host's partial in rank order (n blocks);
 * vec, the leaders' vector (nhosts * maxh blocks); out, this host's block
 * of vec after the leaders' phase. */
typedef struct {
  const char *part;
  char *vec, *out;
} rs_bufs;

static int rs_bufs_get(fold__coll *co, const fold__hier_kids *kids, const fold__hier_layout *L, rs_bufs *b) {
  size_t blk = co->count * co->esize, hb = (size_t)L->maxh * blk;
  size_t part_bytes = kids->host->size > 1 ? (size_t)co->size * blk : 0;
  size_t vec_bytes = L->even ? 0 : (size_t)kids->nhosts * hb;
  char *s = part_bytes + vec_bytes ? fold__hier_scratch(co, part_bytes + vec_bytes) : NULL;
  if (part_bytes + vec_bytes && s == NULL) return FOLD_ENOMEM;
  b->part = part_bytes ? s : co->sbuf;
  int h = kids->host_of[co->rank];
  if (!L->even) {
    b->vec = s + part_bytes;
    b->out = b->vec + (size_t)h * hb;
  } else if (part_bytes) { /* in place in the partial */
    b->vec = s;
    b->out = s + (size_t)h * hb;
  } else { /* a rank per host: from sendbuf straight into recvbuf */
    b->vec = NULL;
    b->out = co->rbuf;
  }
  return FOLD_OK;
}

static int rs_plan(fold__coll *co, const fold__hier_kids *kids, int i, fold__hier_phase *p) {
  fold_comm *host = kids->host;
  fold_op op = fold__hier_op(co);
  if (co->count == 0) return 0;
  if (kids->nhosts == 1) { /* the host phase alone: the host child's ranks are the parent's, in order */
    if (i > 0) return 0;
    *p = (fold__hier_phase){host, {FOLD__COLL_REDUCE_SCATTER, co->sbuf, co->rbuf, co->count, co->dtype, op, -1, 0, NULL},
                            "host reduce_scatter"};
    return 1;
  }
  if (i > 2) return 0;
  const fold__hier_layout *L = fold__hier_layout_get(co);
  int leader = kids->net != NULL;
  size_t blk = co->count * co->esize;
  rs_bufs b = {NULL, NULL, NULL};
  int rc;
  if (leader && (rc = rs_bufs_get(co, kids, L, &b)) < 0) return rc;
  switch (i) {
  case 0:
    if (host->size > 1)
      *p = (fold__hier_phase){host, {FOLD__COLL_REDUCE, co->sbuf, leader ? (void *)b.part : NULL,
                              (size_t)co->size * co->count, co->dtype, op, 0, 0, NULL}, "host reduce"};
    return 1;
  case 1:
    if (!leader) return 1;
    if (!L->even) /* the partial's blocks by host, padding zeroed */
      fold__hier_blocks_to_host(co, kids, b.part, b.vec);
    *p = (fold__hier_phase){kids->net, {FOLD__COLL_REDUCE_SCATTER, b.vec ? b.vec : b.part, b.out,
                            (size_t)L->maxh * co->count, co->dtype, op, -1, 0, NULL}, "network reduce_scatter"};
    return 1;
  default:
    if (host->size > 1)
      *p = (fold__hier_phase){host, {FOLD__COLL_SCATTER, leader ? b.out : NULL, co->rbuf, co->count, co->dtype,
                              FOLD_SUM, 0, 0, NULL}, "host scatter"};
    else if (b.out != co->rbuf)
      memcpy(co->rbuf, b.out, blk);
    return 1;
  }
}

static int rs_step(fold__coll *co) { return fold__hier_step(co, rs_plan); }

const fold__algo fold__reduce_scatter_hier = {"hier", fold__hier_init, NULL, 0, fold__hier_usable, rs_step, NULL,
                                              fold__hier_describe};
