/* reduce_scatter_ring.c — ring reduce-scatter: each block's partial sum travels once around the ring to its owner. */
#include "coll/coll.h"
#include "patterns/patterns.h"

/* b = recvcount elements per block, block j is rank j's result. The
 * partial sum for block j starts at rank j+1 and moves right, each rank
 * adding its own contribution, until it reaches rank j (n-1 hops):
 *
 *   n = 4, block 0:   1 --x1--> 2 --x1+x2--> 3 --x1+x2+x3--> 0 (adds x0)
 *
 * Rounds (n >= 2):
 *   0 .. n-2   step s = k: send the partial of block (r-s-1) right (at
 *              s = 0 it is just our contribution, sent from sendbuf),
 *              receive the partial of block (r-s-2) from the left into a
 *              tmp slot and add our contribution. The last step (s = n-2)
 *              receives block r-n = r and writes the result to recvbuf.
 *   Two tmp slots alternate: a step sends the slot the previous step
 *   filled and receives into the other.
 * n = 1: round 0 copies sendbuf -> recvbuf (out of place only).
 * Cost (S = n*b bytes in sendbuf): (n-1) alpha + (n-1)/n S beta
 * + (n-1)/n S gamma. A partial starts at a rank-dependent place in the
 * ring, so non-commutative ops are refused. */

static int ring_init(fold__coll *co) {
  int n = co->size;
  size_t b = co->count * co->esize;
  co->tmp_bytes = (n >= 3 ? 2 : n - 1) * b;
  return FOLD_OK;
}

static int ring_round(fold__coll *co, int k) {
  int n = co->size, r = co->rank, right = fold__ring_right(r, n), left = fold__ring_left(r, n);
  size_t cnt = co->count, b = cnt * co->esize;
  if (n == 1) {
    if (k > 0) return 0;
    if (!co->in_place) fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_SEND, 0, b);
    return 1;
  }
  if (k > n - 2) return 0;
  int s = k;
  size_t in_slot = (size_t)(s % 2) * b, out_slot = (size_t)((s + 1) % 2) * b;
  /* send: the partial of block r-s-1 */
  if (s == 0)
    fold__co_send(co, right, FOLD__B_SEND, (size_t)fold__mod(r - 1, n) * b, b);
  else
    fold__co_send(co, right, FOLD__B_TMP, out_slot, b);
  /* receive: the partial of block r-s-2, then add our contribution */
  size_t mine = (size_t)fold__mod(r - s - 2, n) * b;
  fold__co_recv(co, left, FOLD__B_TMP, in_slot, b);
  if (s == n - 2) /* block r: the result (in place, recvbuf is sendbuf's block r) */
    fold__co_reduce(co, FOLD__B_RECV, 0, FOLD__B_TMP, in_slot, FOLD__B_SEND, mine, cnt);
  else
    fold__co_reduce(co, FOLD__B_TMP, in_slot, FOLD__B_TMP, in_slot, FOLD__B_SEND, mine, cnt);
  return 1;
}

const fold__algo fold__reduce_scatter_ring = {"ring", ring_init, ring_round, 0};
