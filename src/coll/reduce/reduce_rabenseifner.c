/* reduce_rabenseifner.c — Rabenseifner reduce: recursive-halving reduce-scatter, then a binomial gather of the blocks to the root. */
#include "coll/coll.h"
#include "patterns/rooted.h"

/* n = pof2 + rem, L = log2(pof2); the vector is cut into pof2 blocks
 * (fold__block_*). The fold keeps the root standing (patterns/rooted.h), so
 * the root is always one of the pof2 new ranks nr and no final hop is needed.
 * Rounds:
 *   0            fold: in each pair (2i, 2i+1), i < rem, the member that
 *                does not stand sends its whole vector to the one that does,
 *                which combines x(2i) op x(2i+1).
 *   1 .. L       reduce-scatter, step s = k-1, mask 2^s: nr and nr ^ 2^s
 *                split the block range they share (fold__halving_range);
 *                each sends the half it gives up and combines the half it
 *                keeps. Pairing at distance 1, 2, 4, ... means nr's data
 *                always covers an aligned, contiguous group of new ranks,
 *                which the partner's group extends below or above; the
 *                lower group is passed as `a`, so rank order is kept.
 *                After L steps nr holds block bitreverse(nr), fully reduced.
 *   L+1 .. 2L    gather to t = the root's new rank, undoing the steps in
 *                reverse, s = 2L - k (L-1 down to 0): among the ranks whose
 *                bits above s agree with t, the one whose bit s differs from
 *                t's sends everything it holds (the range after step s) to
 *                its partner and is done. The root receives 1, 2, 4, ...
 *                blocks: its full result, in recvbuf.
 *
 *   n = 4: halving                       gather to 0
 *   s=0  0<->1: 0 keeps [0,2) 1 [2,4)    s=1  2 -> 0 block 1, 3 -> 1 block 3
 *        2<->3: 2 keeps [0,2) 3 [2,4)    s=0  1 -> 0 blocks [2,4)
 *   s=1  0<->2: 0 keeps [0] 2 [1]
 *        1<->3: 1 keeps [2] 3 [3]
 *
 *   n = 1: round 0 copies sendbuf to recvbuf (out of place).
 * Buffers: acc is recvbuf at the root and tmp elsewhere; off the root, acc
 * only spans the elements this rank ever holds (the whole vector if it
 * received a fold, else the half kept at step 0). Parts that arrive while
 * the own data already sits in acc go to a separate area R after acc (the
 * largest such part: S/2 at most, or S for an in-place root that receives a
 * fold); otherwise a part lands in acc directly and is combined with
 * sendbuf. Ranks folded out need no tmp.
 * Cost with p = pof2: (2 log2 p + [rem>0]) alpha
 *   + (2 (p-1)/p + [rem>0]) S beta + ((p-1)/p + [rem>0]) S gamma. */

typedef struct rsg {
  int pof2, rem, L, nr, t; /* nr = -1: folded out */
  int fold_peer;           /* the other member of this rank's fold pair, or -1 */
  int in_acc0;             /* own data already in acc at the start (in-place root) */
  int acc_buf;
  size_t acc_lo;           /* first element acc holds; element e is at (e - acc_lo) * esize */
  size_t r_off;            /* byte offset of R in tmp */
} rsg;

/* Elements [e0, e1) of block range [lo, lo+w). */
static void range_elems(const fold__coll *co, int pof2, int lo, int w, size_t *e0, size_t *e1) {
  *e0 = fold__block_start(co->count, pof2, lo);
  *e1 = fold__block_start(co->count, pof2, lo + w);
}

static void rsg_setup(const fold__coll *co, rsg *g) {
  int n = co->size, r = co->rank, lo, w;
  g->pof2 = fold__pof2_floor(n);
  g->rem = n - g->pof2;
  g->L = fold__ceil_log2(g->pof2);
  g->nr = fold__rfold_newrank(r, g->rem, co->root);
  g->t = fold__rfold_newrank(co->root, g->rem, co->root);
  g->fold_peer = r < 2 * g->rem ? (r ^ 1) : -1;
  g->in_acc0 = r == co->root && co->in_place;
  g->acc_buf = r == co->root ? FOLD__B_RECV : FOLD__B_TMP;
  g->acc_lo = 0;
  size_t e0, e1;
  if (r != co->root && g->fold_peer < 0 && g->L > 0) { /* acc spans the half kept at step 0 */
    fold__halving_range(g->nr, 0, g->pof2, &lo, &w);
    range_elems(co, g->pof2, lo, w, &e0, &e1);
    g->acc_lo = e0;
    g->r_off = (e1 - e0) * co->esize;
  } else {
    g->r_off = r == co->root ? 0 : co->count * co->esize;
  }
}

static size_t acc_off(const fold__coll *co, const rsg *g, size_t elem) { return (elem - g->acc_lo) * co->esize; }

/* Own data is in acc before halving step s (s = -1: before the fold). */
static int in_acc(const rsg *g, int s) { return g->in_acc0 || (s >= 0 && g->fold_peer >= 0) || s > 0; }

static int rsg_init(fold__coll *co) {
  rsg g;
  rsg_setup(co, &g);
  size_t r_bytes = 0, e0, e1;
  if (g.nr >= 0) {
    if (g.fold_peer >= 0 && in_acc(&g, -1)) r_bytes = co->count * co->esize;
    for (int s = 0; s < g.L; s++) {
      int lo, w;
      if (!in_acc(&g, s)) continue;
      fold__halving_range(g.nr, s, g.pof2, &lo, &w);
      range_elems(co, g.pof2, lo, w, &e0, &e1);
      if ((e1 - e0) * co->esize > r_bytes) r_bytes = (e1 - e0) * co->esize;
    }
    co->tmp_bytes = g.r_off + r_bytes;
  }
  return FOLD_OK;
}

/* out = lower op upper, where `mine_low` says whether this rank's part is the lower one. */
static void combine(fold__coll *co, int mine_low, int out_buf, size_t out_off, int mine_buf, size_t mine_off,
                    int in_buf, size_t in_off, size_t count) {
  if (mine_low) fold__co_reduce(co, out_buf, out_off, mine_buf, mine_off, in_buf, in_off, count);
  else fold__co_reduce(co, out_buf, out_off, in_buf, in_off, mine_buf, mine_off, count);
}

static int rsg_round(fold__coll *co, int k) {
  int r = co->rank, lo, w;
  size_t bytes = co->count * co->esize, e0, e1;
  rsg g;
  if (co->size == 1) {
    if (k > 0) return 0;
    if (!co->in_place) fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_SEND, 0, bytes);
    return 1;
  }
  rsg_setup(co, &g);
  if (k > 2 * g.L) return 0;
  if (k == 0) { /* fold */
    if (g.fold_peer < 0) return 1;
    if (g.nr < 0) {
      fold__co_send(co, g.fold_peer, FOLD__B_SEND, 0, bytes);
    } else if (in_acc(&g, -1)) { /* in-place root: the peer's vector goes to R */
      fold__co_recv(co, g.fold_peer, FOLD__B_TMP, g.r_off, bytes);
      combine(co, r < g.fold_peer, g.acc_buf, 0, g.acc_buf, 0, FOLD__B_TMP, g.r_off, co->count);
    } else {
      fold__co_recv(co, g.fold_peer, g.acc_buf, 0, bytes);
      combine(co, r < g.fold_peer, g.acc_buf, 0, FOLD__B_SEND, 0, g.acc_buf, 0, co->count);
    }
    return 1;
  }
  if (g.nr < 0) return 0; /* folded out: done after the fold */
  if (k <= g.L) { /* reduce-scatter step s */
    int s = k - 1, pnr = g.nr ^ (1 << s), peer = fold__rfold_realrank(pnr, g.rem, co->root);
    int src = in_acc(&g, s) ? g.acc_buf : FOLD__B_SEND;
    size_t src_lo = in_acc(&g, s) ? g.acc_lo : 0;
    fold__halving_range(pnr, s, g.pof2, &lo, &w); /* the half given up */
    range_elems(co, g.pof2, lo, w, &e0, &e1);
    fold__co_send(co, peer, src, (e0 - src_lo) * co->esize, (e1 - e0) * co->esize);
    fold__halving_range(g.nr, s, g.pof2, &lo, &w); /* the half kept */
    range_elems(co, g.pof2, lo, w, &e0, &e1);
    size_t keep = acc_off(co, &g, e0);
    if (in_acc(&g, s)) {
      fold__co_recv(co, peer, FOLD__B_TMP, g.r_off, (e1 - e0) * co->esize);
      combine(co, g.nr < pnr, g.acc_buf, keep, g.acc_buf, keep, FOLD__B_TMP, g.r_off, e1 - e0);
    } else {
      fold__co_recv(co, peer, g.acc_buf, keep, (e1 - e0) * co->esize);
      combine(co, g.nr < pnr, g.acc_buf, keep, FOLD__B_SEND, e0 * co->esize, g.acc_buf, keep, e1 - e0);
    }
    return 1;
  }
  { /* gather step s */
    int s = 2 * g.L - k, m = 1 << s, pnr = g.nr ^ m;
    if (((g.nr ^ g.t) >> (s + 1)) != 0) return 0; /* sent already: done */
    int peer = fold__rfold_realrank(pnr, g.rem, co->root);
    if ((g.nr & m) == (g.t & m)) {
      fold__halving_range(pnr, s, g.pof2, &lo, &w);
      range_elems(co, g.pof2, lo, w, &e0, &e1);
      fold__co_recv(co, peer, g.acc_buf, acc_off(co, &g, e0), (e1 - e0) * co->esize);
    } else {
      fold__halving_range(g.nr, s, g.pof2, &lo, &w);
      range_elems(co, g.pof2, lo, w, &e0, &e1);
      fold__co_send(co, peer, g.acc_buf, acc_off(co, &g, e0), (e1 - e0) * co->esize);
    }
    return 1;
  }
}

const fold__algo fold__reduce_rabenseifner = {"rabenseifner", rsg_init, rsg_round, 1};
