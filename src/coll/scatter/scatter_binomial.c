/* scatter_binomial.c — binomial-tree scatter: the root hands each subtree its contiguous run of blocks, which is split on the way down. */
#include "coll/coll.h"
#include "coll/tree_rounds.h"

/* The mirror image of gather_binomial.c. Tree over virtual ranks
 * vr = (rank - root) mod n (patterns/rooted.h); the subtree of vr is
 * [vr, vr + sub), one contiguous run of blocks in virtual order. Each block
 * is b = count * esize bytes.
 * Rounds, L = ceil(log2 n):
 *   0            root's local ops: own block to recvbuf (out of place), and
 *                the one child run that wraps past real block n-1 (if any)
 *                copied into tmp in virtual order, so it leaves as one message.
 *   1 .. L       round k, j = k-1, mask m = 2^(L-1-j) (biggest subtree first):
 *     vr % 2m == 0, vr + m < n: send the run [vr+m, min(vr+2m, n)) to vr + m;
 *     vr % 2m == m:             receive the own run [vr, vr+sub) from vr - m.
 *   A vr forwards runs from the round after it received its own.
 * Buffers: a non-root with children receives its run in tmp (sub blocks)
 * and copies the front block to recvbuf; a leaf receives into recvbuf. The
 * root sends runs straight from sendbuf except the wrapping one (from tmp).
 *
 *   n = 5, root 0:  round 1: 0 -> 4 [4]       round 2: 0 -> 2 [2,4)
 *                   round 3: 0 -> 1 [1], 2 -> 3 [3]
 *
 * Cost: floor(log2 n) alpha + (n-1) b beta (the root's runs add up to n-1
 * blocks, sent back to back; each level forwards no more than it got;
 * latencies overlap as on fold's simulator, ceil(log2 n) alpha in the
 * classic model). */

static int scatter_binomial_init(fold__coll *co) {
  return fold__binomial_blocks_init(co);
}

static int scatter_binomial_round(fold__coll *co, int k) {
  int n = co->size, L = co->v[0], root = co->root, vr = fold__vrank(co->rank, root, n);
  size_t b = co->count * co->esize;
  if (k > L) return 0;
  if (k == 0) {
    if (vr != 0) return 1;
    if (!co->in_place) fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_SEND, (size_t)root * b, b);
    for (int m = 1; m < n; m <<= 1) {
      int len = fold__binomial_child_subtree(0, m, n), child = fold__vrank_real(m, root, n);
      int first = fold__vrange_first_part(m, m + len, root, n);
      if (first < len) { /* blocks [child, n) then [0, len - first) */
        fold__co_copy(co, FOLD__B_TMP, 0, FOLD__B_SEND, (size_t)child * b, (size_t)first * b);
        fold__co_copy(co, FOLD__B_TMP, (size_t)first * b, FOLD__B_SEND, 0, (size_t)(len - first) * b);
      }
    }
    return 1;
  }
  int m = fold__binomial_down_mask(k - 1, L);
  if (fold__binomial_is_parent(vr, m, n)) {
    int len = fold__binomial_child_subtree(vr, m, n), child = fold__vrank_real(vr + m, root, n);
    if (vr != 0) {
      fold__co_send(co, child, FOLD__B_TMP, (size_t)m * b, (size_t)len * b);
    } else if (fold__vrange_first_part(m, m + len, root, n) == len) {
      fold__co_send(co, child, FOLD__B_SEND, (size_t)child * b, (size_t)len * b);
    } else {
      fold__co_send(co, child, FOLD__B_TMP, 0, (size_t)len * b);
    }
  } else if (fold__binomial_is_child(vr, m)) {
    int sub = fold__binomial_subtree(vr, n), parent = fold__vrank_real(vr - m, root, n);
    if (sub > 1) {
      fold__co_recv(co, parent, FOLD__B_TMP, 0, (size_t)sub * b);
      fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_TMP, 0, b);
    } else {
      fold__co_recv(co, parent, FOLD__B_RECV, 0, b);
    }
  }
  return 1;
}

const fold__algo fold__scatter_binomial = {"binomial", scatter_binomial_init, scatter_binomial_round, 0};
