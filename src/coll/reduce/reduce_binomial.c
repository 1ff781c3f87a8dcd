/* reduce_binomial.c — binomial-tree reduce: children's parts are combined on the way up, ceil(log2 n) rounds. */
#include "coll/coll.h"
#include "coll/tree_rounds.h"

/* Two trees (patterns/rooted.h, coll/tree_rounds.h):
 *  - commutative op: the tree over vr = (rank - root) mod n, root at vr 0;
 *  - non-commutative op: the tree over real ranks rooted at rank 0. Every
 *    subtree is then a contiguous rank range [r, r+sub) and a parent combines
 *    acc([r, r+m)) op child([r+m, r+2m)), lower ranks first, so rank 0 ends
 *    with x0 op x1 op ... op x(n-1); if root != 0 it sends that to root in
 *    one extra round.
 * Rounds, L = ceil(log2 n):
 *   0 .. L-1     round j, mask m = 2^j: a vr with vr % 2m == m sends its
 *                subtree's combination to vr - m; a vr with vr % 2m == 0 and
 *                vr + m < n receives its child's and reduces it in.
 *   L            (non-commutative, root != 0 only) rank 0 -> root.
 *   n = 1: round 0 copies sendbuf to recvbuf (out of place).
 * Buffers: the root combines straight into recvbuf (children arrive in
 * tmp, S bytes); another rank with children combines in tmp (S bytes with
 * one child, whose part lands in acc itself; 2S with more); leaves send
 * sendbuf and need no tmp. recvbuf is never touched off the root.
 * Cost: floor(log2 n) alpha + ceil(log2 n) (S beta + S gamma), plus
 * alpha + S beta for the extra round (non-commutative op, root != 0). The
 * root's incoming link takes ceil(log2 n) parts in sequence; latencies of
 * parts sent back to back overlap (as on fold's simulator), so alpha is paid
 * once per level of the deepest path only; ceil(log2 n)(alpha + S beta +
 * S gamma) in the classic model. */

static int reduce_binomial_init(fold__coll *co) {
  int n = co->size, comm = co->commutative;
  int tree_root = comm ? co->root : 0;
  int vr = fold__vrank(co->rank, tree_root, n), kids = fold__binomial_nchildren(vr, n);
  size_t bytes = co->count * co->esize;
  co->v[0] = tree_root;
  co->v[1] = fold__ceil_log2(n);
  co->v[2] = tree_root != co->root; /* extra round */
  co->tmp_bytes = kids == 0 ? 0 : co->rank == co->root ? bytes : kids == 1 ? bytes : 2 * bytes;
  return FOLD_OK;
}

static fold__tree_reduce_bufs reduce_bufs(const fold__coll *co) {
  size_t bytes = co->count * co->esize;
  fold__tree_reduce_bufs b = {FOLD__B_SEND, FOLD__B_TMP, FOLD__B_TMP, FOLD__B_TMP, 0, 0, 0, bytes};
  if (co->rank == co->root) { /* acc is recvbuf (in place: sendbuf too), children land in tmp */
    b.acc_buf = FOLD__B_RECV;
    b.next_off = 0;
  }
  return b;
}

static int reduce_binomial_round(fold__coll *co, int k) {
  int n = co->size, tree_root = co->v[0], L = co->v[1], extra = co->v[2];
  size_t bytes = co->count * co->esize;
  if (n == 1) {
    if (k > 0) return 0;
    if (!co->in_place) fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_SEND, 0, bytes);
    return 1;
  }
  if (k < L) {
    fold__tree_reduce_bufs b = reduce_bufs(co);
    fold__tree_reduce_round(co, k, tree_root, &b);
    return 1;
  }
  if (k == L && extra) { /* rank 0 (tree root, not the root: acc in tmp) -> root */
    if (co->rank == tree_root) fold__co_send(co, co->root, FOLD__B_TMP, 0, bytes);
    else if (co->rank == co->root) fold__co_recv(co, tree_root, FOLD__B_RECV, 0, bytes);
    return 1;
  }
  return 0;
}

const fold__algo fold__reduce_binomial = {"binomial", reduce_binomial_init, reduce_binomial_round, 1};
