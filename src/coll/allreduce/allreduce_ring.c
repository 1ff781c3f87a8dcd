/* allreduce_ring.c — ring allreduce: reduce-scatter around the ring, then allgather around it. */
#include "coll/coll.h"
#include "patterns/patterns.h"

/* The vector is cut into n blocks (fold__block_*). Rounds:
 *   0            copy sendbuf -> recvbuf (out of place only)
 *   1 .. n-1     reduce-scatter step s = k-1: send block (r-s), receive
 *                block (r-s-1) into tmp, recvbuf[block] = tmp op recvbuf[block].
 *                After n-1 steps rank r holds block (r+1) fully reduced.
 *   n .. 2n-2    allgather step s = k-n: send block (r+1-s), receive block
 *                (r-s) straight into recvbuf.
 * Cost: 2(n-1) alpha + 2 (n-1)/n S beta + (n-1)/n S gamma. Block order
 * depends on the rank, so non-commutative ops are refused. */

static int ring_init(fold__coll *co) {
  co->tmp_bytes = fold__block_len(co->count, co->size, 0) * co->esize;
  return FOLD_OK;
}

static void block(const fold__coll *co, int b, size_t *off, size_t *len) {
  int i = fold__mod(b, co->size);
  *off = fold__block_start(co->count, co->size, i) * co->esize;
  *len = fold__block_len(co->count, co->size, i);
}

static int ring_round(fold__coll *co, int k) {
  int n = co->size, r = co->rank, right = fold__ring_right(r, n), left = fold__ring_left(r, n);
  size_t off, len;
  if (k == 0) {
    if (!co->in_place) fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_SEND, 0, co->count * co->esize);
    return 1;
  }
  if (k <= n - 1) { /* reduce-scatter */
    int s = k - 1;
    block(co, r - s, &off, &len);
    fold__co_send_nowait(co, right, FOLD__B_RECV, off, len * co->esize);
    block(co, r - s - 1, &off, &len);
    fold__co_recv(co, left, FOLD__B_TMP, 0, len * co->esize);
    fold__co_reduce(co, FOLD__B_RECV, off, FOLD__B_TMP, 0, FOLD__B_RECV, off, len);
    return 1;
  }
  if (k <= 2 * n - 2) { /* allgather */
    int s = k - n;
    block(co, r + 1 - s, &off, &len);
    fold__co_send_nowait(co, right, FOLD__B_RECV, off, len * co->esize);
    block(co, r - s, &off, &len);
    fold__co_recv(co, left, FOLD__B_RECV, off, len * co->esize);
    return 1;
  }
  return 0;
}

const fold__algo fold__allreduce_ring = {"ring", ring_init, ring_round, 0};
