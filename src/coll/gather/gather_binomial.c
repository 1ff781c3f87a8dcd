/* gather_binomial.c — binomial-tree gather: each subtree's contiguous run of blocks travels up in one message. */
#include "coll/coll.h"
#include "coll/tree_rounds.h"

/* Tree over virtual ranks vr = (rank - root) mod n (patterns/rooted.h); the
 * subtree of vr is [vr, vr + sub), so in virtual order its blocks are one
 * contiguous run. Each block is b = count * esize bytes.
 * Rounds, L = ceil(log2 n) (one round, round 0, if n = 1):
 *   round j, mask m = 2^j:
 *     vr % 2m == 0, vr + m < n: receive the child's run [vr+m, min(vr+2m, n));
 *     vr % 2m == m:             send the own run [vr, vr+sub) to vr - m.
 *   A vr with children has heard from all of them (masks below its lowest
 *   set bit) before it sends.
 * Buffers: a non-root with children collects its run in virtual order in
 * tmp (sub blocks; its own block copied to the front in round 0's local
 * ops); a leaf sends sendbuf. The root receives straight into recvbuf at
 * the real positions: runs [m, min(2m, n)) map to real blocks root+m, ...
 * mod n, which is one contiguous range unless it wraps past block n-1; at
 * most one child's run wraps (the children's runs partition [1, n)), and
 * only that one goes through tmp and is copied to recvbuf in two pieces.
 *
 *   n = 6, root 4 (vr: real)   vr 0:4  1:5  2:0  3:1  4:2  5:3
 *   root's runs: [1]=5, [2,4)=0..1, [4,6)=2..3   none wraps
 *   root 5:      [1]=0, [2,4)=1..2, [4,6)=3..4   none wraps
 *   root 3:      [1]=4, [2,4)=5,0 (wraps: tmp), [4,6)=1..2
 *
 * Cost: floor(log2 n) alpha + (n-1) b beta (the runs arriving at the root
 * add up to n-1 blocks; each level's message is as large as all below it;
 * latencies of back-to-back messages overlap as on fold's simulator, so
 * alpha is paid per level of the deepest path; ceil(log2 n) alpha in the
 * classic model). */

static int gather_binomial_init(fold__coll *co) {
  return fold__binomial_blocks_init(co);
}

static int gather_binomial_round(fold__coll *co, int k) {
  int n = co->size, L = co->v[0], root = co->root, vr = fold__vrank(co->rank, root, n);
  size_t b = co->count * co->esize;
  if (k >= (L > 0 ? L : 1)) return 0;
  int m = fold__binomial_up_mask(k);
  if (k == 0) { /* own block: to its real place at the root, to the front of the run elsewhere */
    if (vr == 0 && !co->in_place) fold__co_copy(co, FOLD__B_RECV, (size_t)root * b, FOLD__B_SEND, 0, b);
    if (vr != 0 && co->tmp_bytes) fold__co_copy(co, FOLD__B_TMP, 0, FOLD__B_SEND, 0, b);
  }
  if (n == 1) return 1;
  if (fold__binomial_is_child(vr, m)) {
    int sub = fold__binomial_subtree(vr, n);
    int src = sub > 1 ? FOLD__B_TMP : FOLD__B_SEND;
    fold__co_send(co, fold__vrank_real(vr - m, root, n), src, 0, (size_t)sub * b);
  } else if (fold__binomial_is_parent(vr, m, n)) {
    int len = fold__binomial_child_subtree(vr, m, n), child = fold__vrank_real(vr + m, root, n);
    if (vr != 0) {
      fold__co_recv(co, child, FOLD__B_TMP, (size_t)m * b, (size_t)len * b);
    } else {
      int first = fold__vrange_first_part(m, m + len, root, n);
      if (first == len) {
        fold__co_recv(co, child, FOLD__B_RECV, (size_t)child * b, (size_t)len * b);
      } else { /* wraps: blocks [child, n) then [0, len - first) */
        fold__co_recv(co, child, FOLD__B_TMP, 0, (size_t)len * b);
        fold__co_copy(co, FOLD__B_RECV, (size_t)child * b, FOLD__B_TMP, 0, (size_t)first * b);
        fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_TMP, (size_t)first * b, (size_t)(len - first) * b);
      }
    }
  }
  return 1;
}

const fold__algo fold__gather_binomial = {"binomial", gather_binomial_init, gather_binomial_round, 0};
