/* tree_rounds.h — binomial-tree pieces shared by the broadcast, reduce, gather, scatter and reduce_bcast algorithms. */
#ifndef FOLD_COLL_TREE_ROUNDS_H
#define FOLD_COLL_TREE_ROUNDS_H

#include "coll/coll.h"
#include "patterns/rooted.h"

/* init of binomial gather and scatter, which move contiguous runs of blocks
 * up or down the same tree: co->v[0] = L = ceil(log2 n); an inner rank
 * needs its subtree's blocks as scratch; the root only the one child run
 * that wraps past block n-1, if any (it lands in two pieces). */
static inline int fold__binomial_blocks_init(fold__coll *co) {
  int n = co->size, vr = fold__vrank(co->rank, co->root, n);
  size_t b = co->count * co->esize;
  co->v[0] = fold__ceil_log2(n);
  if (vr != 0) {
    int sub = fold__binomial_subtree(vr, n);
    co->tmp_bytes = sub > 1 ? (size_t)sub * b : 0;
  } else { /* the one wrapping run, if any */
    for (int m = 1; m < n; m <<= 1) {
      int len = fold__binomial_child_subtree(0, m, n);
      if (fold__vrange_first_part(m, m + len, co->root, n) < len) co->tmp_bytes = (size_t)len * b;
    }
  }
  return FOLD_OK;
}

/* Round j (0 <= j < L = ceil(log2 n)) of a binomial broadcast of `bytes`
 * at (buf, off) from `root` (rooted.h, data flowing down):
 *
 *   mask 4:  0 ---------------> 4
 *   mask 2:  0 -------> 2       4 -------> 6
 *   mask 1:  0 -> 1     2 -> 3  4 -> 5     6 -> 7
 */
static inline void fold__tree_bcast_round(fold__coll *co, int j, int L, int root, int buf, size_t off, size_t bytes) {
  int n = co->size, vr = fold__vrank(co->rank, root, n), m = fold__binomial_down_mask(j, L);
  if (fold__binomial_is_parent(vr, m, n)) fold__co_send(co, fold__vrank_real(vr + m, root, n), buf, off, bytes);
  else if (fold__binomial_is_child(vr, m)) fold__co_recv(co, fold__vrank_real(vr - m, root, n), buf, off, bytes);
}

/* Where one rank of a binomial reduce keeps its data (buffer, byte offset). */
typedef struct fold__tree_reduce_bufs {
  int mine_buf, acc_buf, first_buf, next_buf;
  size_t mine_off, acc_off, first_off, next_off;
} fold__tree_reduce_bufs;
/*   mine   this rank's contribution (read only)
 *   acc    where the subtree's combination is built (ranks with children)
 *   first  where the first child's part (mask 1, round 0) is received; it may
 *          be acc itself, since acc is first written by that round's reduce
 *   next   where later children's parts are received (must not overlap acc) */

/* Round j (0 <= j < L) of a binomial reduce of `count` elements toward
 * `root` (rooted.h, data flowing up):
 *
 *   mask 1:  0 <- 1     2 <- 3  4 <- 5     6 <- 7
 *   mask 2:  0 <------- 2       4 <------- 6
 *   mask 4:  0 <--------------- 4
 *
 * A parent vr holds the combination of virtual ranks [vr, vr+m) and its
 * child at mask m brings [vr+m, vr+2m), so acc = acc op child keeps the
 * order of virtual ranks (rank order when root is 0). The first child
 * (always at mask 1: a vr with any child has vr + 1 < n) is combined with
 * mine, later ones with acc. A vr reports acc (mine if it is a leaf) at the
 * mask of its lowest set bit, after all its children (smaller masks). */
static inline void fold__tree_reduce_round(fold__coll *co, int j, int root, const fold__tree_reduce_bufs *b) {
  int n = co->size, vr = fold__vrank(co->rank, root, n), m = fold__binomial_up_mask(j);
  size_t bytes = co->count * co->esize;
  if (fold__binomial_is_child(vr, m)) {
    int leaf = fold__binomial_nchildren(vr, n) == 0;
    fold__co_send(co, fold__vrank_real(vr - m, root, n), leaf ? b->mine_buf : b->acc_buf,
                  leaf ? b->mine_off : b->acc_off, bytes);
  } else if (fold__binomial_is_parent(vr, m, n)) {
    int in_buf = j == 0 ? b->first_buf : b->next_buf;
    size_t in_off = j == 0 ? b->first_off : b->next_off;
    fold__co_recv(co, fold__vrank_real(vr + m, root, n), in_buf, in_off, bytes);
    if (j == 0) fold__co_reduce(co, b->acc_buf, b->acc_off, b->mine_buf, b->mine_off, in_buf, in_off, co->count);
    else fold__co_reduce(co, b->acc_buf, b->acc_off, b->acc_buf, b->acc_off, in_buf, in_off, co->count);
  }
}

#endif
