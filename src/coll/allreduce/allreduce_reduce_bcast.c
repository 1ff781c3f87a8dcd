/* allreduce_reduce_bcast.c — allreduce as a binomial reduce to rank 0 followed by a binomial broadcast from rank 0. */
#include "coll/coll.h"
#include "coll/tree_rounds.h"

/* Both trees are over real ranks rooted at 0 (patterns/rooted.h,
 * coll/tree_rounds.h): every subtree is a contiguous rank range and a
 * parent combines acc([r, r+m)) op child([r+m, r+2m)), lower ranks first,
 * so rank order is kept and non-commutative ops are served.
 * Rounds, L = ceil(log2 n):
 *   0 .. L-1     reduce, round j, mask 2^j: r % 2^(j+1) == 2^j sends its
 *                subtree's combination to r - 2^j; a parent receives its
 *                child's into tmp and combines it into recvbuf.
 *   L .. 2L-1    broadcast, round L+j, mask 2^(L-1-j): rank 0's result
 *                travels down the same tree into every recvbuf.
 *   n = 1: round 0 copies sendbuf to recvbuf (out of place).
 * Every rank has a recvbuf, so it is the accumulator everywhere: tmp holds
 * one incoming part (S bytes) on ranks with children, nothing on leaves
 * (they send sendbuf). In place works as is: the first combine reads mine
 * from sendbuf == recvbuf and writes the same place.
 * Cost: 2 floor(log2 n) alpha + 2 ceil(log2 n) S beta + ceil(log2 n) S gamma
 * (latencies of back-to-back sends overlap as on fold's simulator; the
 * classic model gives 2 ceil(log2 n)(alpha + S beta) + ceil(log2 n) S gamma). */

static int rb_init(fold__coll *co) {
  co->v[0] = fold__ceil_log2(co->size);
  co->tmp_bytes = fold__binomial_nchildren(co->rank, co->size) ? co->count * co->esize : 0;
  return FOLD_OK;
}

static int rb_round(fold__coll *co, int k) {
  int L = co->v[0];
  size_t bytes = co->count * co->esize;
  if (co->size == 1) {
    if (k > 0) return 0;
    if (!co->in_place) fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_SEND, 0, bytes);
    return 1;
  }
  if (k < L) { /* reduce to rank 0 */
    fold__tree_reduce_bufs b = {FOLD__B_SEND, FOLD__B_RECV, FOLD__B_TMP, FOLD__B_TMP, 0, 0, 0, 0};
    fold__tree_reduce_round(co, k, 0, &b);
    return 1;
  }
  if (k < 2 * L) { /* broadcast from rank 0 */
    fold__tree_bcast_round(co, k - L, L, 0, FOLD__B_RECV, 0, bytes);
    return 1;
  }
  return 0;
}

const fold__algo fold__allreduce_reduce_bcast = {"reduce_bcast", rb_init, rb_round, 1};
