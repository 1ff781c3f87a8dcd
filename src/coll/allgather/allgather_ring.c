/* allgather_ring.c — ring allgather: every block travels n-1 hops to the right, straight into recvbuf. */
#include "coll/coll.h"
#include "patterns/patterns.h"

/* B = sendcount * esize bytes per block, block p at offset p*B of recvbuf.
 * Rounds:
 *   0            copy sendbuf -> recvbuf block r (out of place only)
 *   1 .. n-1     step s = k-1: send block (r-s) to the right, receive block
 *                (r-s-1) from the left into its place. Step s forwards what
 *                arrived in step s-1 (block r-s came from rank r-s, s hops
 *                to the left), so after n-1 steps every block has reached
 *                every rank: rank r last receives block r-(n-1) = r+1.
 *
 *     step 0:  0 -> 1 -> 2 -> 3 -> 0     rank r sends its own block r
 *     step 1:  rank r sends block r-1 (received in step 0), ...
 *
 * No scratch. Cost: (n-1) alpha + (n-1)/n S beta, S = n*B the gathered bytes. */

static int ring_init(fold__coll *co) {
  co->tmp_bytes = 0;
  return FOLD_OK;
}

static int ring_round(fold__coll *co, int k) {
  int n = co->size, r = co->rank, right = fold__ring_right(r, n), left = fold__ring_left(r, n);
  size_t B = co->count * co->esize;
  if (k == 0) {
    if (!co->in_place) fold__co_copy(co, FOLD__B_RECV, (size_t)r * B, FOLD__B_SEND, 0, B);
    return 1;
  }
  if (k <= n - 1) {
    int s = k - 1;
    fold__co_send(co, right, FOLD__B_RECV, (size_t)fold__mod(r - s, n) * B, B);
    fold__co_recv(co, left, FOLD__B_RECV, (size_t)fold__mod(r - s - 1, n) * B, B);
    return 1;
  }
  return 0;
}

const fold__algo fold__allgather_ring = {"ring", ring_init, ring_round, 1};
