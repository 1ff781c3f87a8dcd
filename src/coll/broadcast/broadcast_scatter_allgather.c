/* broadcast_scatter_allgather.c — Van de Geijn broadcast: binomial scatter of n blocks from the root, then a ring allgather. */
#include "coll/coll.h"
#include "patterns/rooted.h"

/* The buffer is cut into n blocks (fold__block_*); block b belongs to
 * virtual rank b = (rank - root) mod n, so a binomial subtree [vr, vr+sub)
 * owns one contiguous byte range. Blocks may be empty (count < n): both
 * sides compute the same empty lengths and nothing is sent for them.
 * Rounds, L = ceil(log2 n):
 *   0 .. L-1     scatter: round j uses mask m = 2^(L-1-j) (patterns/rooted.h);
 *                a parent vr (vr % 2m == 0, vr + m < n) sends blocks
 *                [vr+m, min(vr+2m, n)), the child's whole subtree, and the
 *                child receives them in place. Afterwards vr holds block vr.
 *   L .. L+n-2   ring allgather step s = k-L (n-1 steps): send block
 *                (vr - s) to rank+1, receive block (vr - s - 1) from rank-1.
 *                Step s passes on what arrived in step s-1 (block vr itself
 *                at s = 0); after n-1 steps every block went around.
 *
 *   scatter (n = 4, root 0)        ring allgather
 *   0:[A B C D] -> 2 gets [C D]    each step every rank forwards the block
 *   0 -> 1 gets [B], 2 -> 3 [D]    it received last to its right neighbour
 *
 * Cost: (floor(log2 n) + n-1) alpha + 2 (n-1)/n S beta (the scatter's
 * back-to-back sends overlap their latencies, as in broadcast_binomial.c;
 * ceil(log2 n) + n-1 alphas in the classic model). */

static int sa_init(fold__coll *co) {
  co->v[0] = fold__ceil_log2(co->size);
  return FOLD_OK;
}

/* Bytes [off, off+len) of virtual blocks [a, b). */
static void blocks(const fold__coll *co, int a, int b, size_t *off, size_t *len) {
  size_t s = fold__block_start(co->count, co->size, a), e = fold__block_start(co->count, co->size, b);
  *off = s * co->esize;
  *len = (e - s) * co->esize;
}

static int sa_round(fold__coll *co, int k) {
  int n = co->size, L = co->v[0], root = co->root, vr = fold__vrank(co->rank, root, n);
  size_t off, len;
  if (k < L) { /* scatter */
    int m = fold__binomial_down_mask(k, L);
    if (fold__binomial_is_parent(vr, m, n)) {
      blocks(co, vr + m, vr + m + fold__binomial_child_subtree(vr, m, n), &off, &len);
      fold__co_send(co, fold__vrank_real(vr + m, root, n), FOLD__B_RECV, off, len);
    } else if (fold__binomial_is_child(vr, m)) {
      blocks(co, vr, vr + fold__binomial_subtree(vr, n), &off, &len);
      fold__co_recv(co, fold__vrank_real(vr - m, root, n), FOLD__B_RECV, off, len);
    }
    return 1;
  }
  if (k < L + n - 1) { /* ring allgather */
    int s = k - L, b;
    b = fold__mod(vr - s, n);
    blocks(co, b, b + 1, &off, &len);
    fold__co_send(co, fold__ring_right(co->rank, n), FOLD__B_RECV, off, len);
    b = fold__mod(vr - s - 1, n);
    blocks(co, b, b + 1, &off, &len);
    fold__co_recv(co, fold__ring_left(co->rank, n), FOLD__B_RECV, off, len);
    return 1;
  }
  return 0;
}

const fold__algo fold__broadcast_scatter_allgather = {"scatter_allgather", sa_init, sa_round, 0};
