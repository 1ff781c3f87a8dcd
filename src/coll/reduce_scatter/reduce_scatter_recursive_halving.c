/* reduce_scatter_recursive_halving.c — recursive-halving reduce-scatter, extra ranks folded in as in MPICH/LightGBM. */
#include "coll/coll.h"
#include "patterns/halving.h"
#include "patterns/patterns.h"

/* b = recvcount elements per block; n = pof2 + rem, L = log2(pof2).
 *
 * Fold: among ranks < 2*rem the even rank sends its whole vector to the
 * odd rank above it and sits out; the pof2 standing ranks take new ranks
 * (patterns.h), and new rank nr owns the virtual block nr: the real blocks
 * of the ranks it stands for (halving.h).
 *
 *   n = 6: real ranks  0  1 | 2  3 | 4 | 5      (0 -> 1, 2 -> 3 fold)
 *          new ranks      0 |    1 | 2 | 3
 *          blocks      [0 1]| [2 3]|[4]|[5]     virtual blocks 0..3
 *
 * Halving: the partial sums sit in a working layout of pof2 positions,
 * each holding one virtual block. At step j = 1..L a rank's window of
 * pof2 >> (j-1) positions splits in two; we send the half the partner
 * keeps and receive and add the half we keep. After L steps we hold one
 * position: our virtual block, i.e. real block r (and r-1 for a folded
 * pair, routed back to r-1 last). Two layouts (halving.h):
 *
 *   commutative op (LightGBM, MPICH): position = virtual block, partner at
 *     distance pof2/2 first (fold__halving_dec_lo). The step-1 source is
 *     sendbuf itself, so no copy.
 *   non-commutative op (MPICH's non-commutative variant): partner at
 *     distance 1 first (fold__halving_inc_lo), so every step adds two
 *     adjacent groups of new ranks, lower first: rank order is kept. That
 *     order ends new rank nr at position bitreverse(nr), so position q
 *     holds virtual block bitreverse(q): a round-0 copy permutes sendbuf
 *     into that layout.
 *
 *   pof2 = 4, non-commutative:  positions 0 1 2 3 hold virtual blocks 0 2 1 3
 *     step 1 (nr^1): nr 0,2 keep positions [0,2) = vblocks {0,2}
 *     step 2 (nr^2): nr 0 keeps position 0 = vblock 0, nr 2 position 1 = vblock 2
 *
 * Storage: the partial sums live in tmp's accumulator, indexed by layout
 * byte offset minus acc_base: the whole layout (base 0) when it was
 * permuted or a fold arrived, else just the half kept at step 1. The last
 * step writes block r straight to recvbuf. A receive area (the largest
 * receive: the step-1 half) follows the accumulator.
 *
 * Rounds:
 *   0          non-commutative: permute sendbuf into tmp (ranks that do
 *              not receive a fold); n = 1: copy sendbuf -> recvbuf
 *   1          fold: even r < 2*rem sends its vector to r+1, which adds it
 *              in front of its own
 *   2 .. L+1   halving step j = k-1
 *   L+2        unfold: odd r < 2*rem sends block r-1 to r-1
 * Cost (S = n*b): power of two: L alpha + (n-1)/n S beta + (n-1)/n S gamma.
 * Otherwise the heaviest window of step j holds B_j real blocks, w_j =
 * pof2 >> j positions plus the doubled ones among them: B_j = w_j +
 * min(w_j, rem) (commutative: the low virtual blocks are the doubled
 * ones), B_j = w_j + ceil(rem / 2^j) (non-commutative: a window is a
 * residue class of virtual blocks mod 2^j):
 *   (L + 2) alpha + (S + b + sum_j B_j b) beta + (S + sum_j B_j b) gamma,
 * the path of a fold receiver: exact when rem > pof2/2. When rem <= pof2/2
 * the standing ranks that received no fold run their first exchanges
 * during the fold, which hides an alpha and part of a step's bytes, so the
 * formula is an upper bound: fold-sim comes in below it by up to one
 * alpha of the L+2 when alpha dominates, and by 0-6% (gamma = 2.5 beta) to
 * 0-18% (gamma = 0) when beta does. allreduce_recursive_doubling's
 * formula is an upper bound in the same way.
 * noncommutative_ok = 1 (the non-commutative layout keeps rank order). */

/* v[0] pof2, v[1] rem, v[2] L, v[3] new rank (-1 when folded away),
 * v[4] 1 if we receive a fold, v[5] 1 for the rank-order layout;
 * u[0] acc_base, u[1] receive area offset in tmp. */

static int ordered(const fold__coll *co) { return co->v[5]; }

/* The virtual block at layout position q. */
static int vb_at(const fold__coll *co, int q) { return ordered(co) ? fold__bit_reverse(q, co->v[2]) : q; }

/* Start of layout position q, in real blocks; position pof2 starts at n. */
static size_t pos_start(const fold__coll *co, int q) {
  int rem = co->v[1];
  if (!ordered(co)) return (size_t)fold__rd_first_real(q, rem);
  size_t s = (size_t)q; /* one block per position, plus one per doubled virtual block before q */
  for (int i = 0; i < q; i++) s += vb_at(co, i) < rem;
  return s;
}

/* First position of the window new rank nr holds after j steps. */
static int window_lo(const fold__coll *co, int nr, int j) {
  return ordered(co) ? fold__halving_inc_lo(nr, co->v[0], j) : fold__halving_dec_lo(nr, co->v[0], j);
}

static int rh_init(fold__coll *co) {
  int n = co->size, r = co->rank;
  int pof2 = fold__pof2_floor(n), rem = n - pof2, nr = fold__rd_newrank(r, rem);
  size_t b = co->count * co->esize, S = (size_t)n * b;
  co->v[0] = pof2;
  co->v[1] = rem;
  co->v[2] = fold__ceil_log2(pof2);
  co->v[3] = nr;
  co->v[4] = nr >= 0 && r < 2 * rem;
  co->v[5] = !co->commutative;
  co->tmp_bytes = 0;
  if (n == 1) return FOLD_OK;
  if (nr < 0) { /* folded away: only the permuted copy to send */
    co->tmp_bytes = ordered(co) ? S : 0;
    return FOLD_OK;
  }
  int lo = window_lo(co, nr, 1);
  size_t kept_off = pos_start(co, lo) * b, kept_len = pos_start(co, lo + pof2 / 2) * b - kept_off;
  int whole = ordered(co) || co->v[4];
  co->u[0] = whole ? 0 : kept_off;
  co->u[1] = whole ? S : kept_len;
  co->tmp_bytes = co->u[1] + kept_len;
  return FOLD_OK;
}

/* out = (ours op theirs) in rank order; theirs is in tmp at theirs_off. */
static void add(fold__coll *co, int partner_lower, int out, size_t out_off, int ours, size_t ours_off,
                size_t theirs_off, size_t bytes) {
  size_t elems = bytes / co->esize;
  if (partner_lower)
    fold__co_reduce(co, out, out_off, FOLD__B_TMP, theirs_off, ours, ours_off, elems);
  else
    fold__co_reduce(co, out, out_off, ours, ours_off, FOLD__B_TMP, theirs_off, elems);
}

/* Each virtual block of sendbuf to its layout position in tmp: copied, or
 * added behind the fold already there (acc = fold op ours). */
static void permute(fold__coll *co, int add_in) {
  size_t b = co->count * co->esize;
  int rem = co->v[1];
  size_t to = 0; /* pos_start(q) * b, kept up as we go */
  for (int q = 0; q < co->v[0]; q++) {
    int vb = vb_at(co, q);
    size_t from = (size_t)fold__rd_first_real(vb, rem) * b, len = (size_t)fold__rd_first_real(vb + 1, rem) * b - from;
    if (add_in) fold__co_reduce(co, FOLD__B_TMP, to, FOLD__B_TMP, to, FOLD__B_SEND, from, len / co->esize);
    else fold__co_copy(co, FOLD__B_TMP, to, FOLD__B_SEND, from, len);
    to += len;
  }
}

static int rh_round(fold__coll *co, int k) {
  int n = co->size, r = co->rank, pof2 = co->v[0], rem = co->v[1], L = co->v[2], nr = co->v[3];
  int folded_in = co->v[4];
  size_t cnt = co->count, b = cnt * co->esize, S = (size_t)n * b, base = co->u[0], area = co->u[1];
  if (k == 0) { /* prepare */
    if (n == 1) {
      if (!co->in_place) fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_SEND, 0, b);
    } else if (ordered(co) && !folded_in) {
      permute(co, 0);
    }
    return 1;
  }
  if (n == 1) return 0;
  if (k == 1) { /* fold: acc = x(r-1) op x(r) */
    if (r < 2 * rem) {
      if (r % 2 == 0) {
        fold__co_send(co, r + 1, ordered(co) ? FOLD__B_TMP : FOLD__B_SEND, 0, S);
      } else {
        fold__co_recv(co, r - 1, FOLD__B_TMP, 0, S);
        if (ordered(co)) permute(co, 1);
        else fold__co_reduce(co, FOLD__B_TMP, 0, FOLD__B_TMP, 0, FOLD__B_SEND, 0, (size_t)n * cnt);
      }
    }
    return 1;
  }
  if (k <= L + 1) { /* halving step j: window of pof2 >> (j-1) positions -> w */
    if (nr < 0) return 1;
    int j = k - 1, w = pof2 >> j, m = ordered(co) ? 1 << (j - 1) : w;
    int partner = fold__rd_realrank(nr ^ m, rem);
    int keep = window_lo(co, nr, j), prev = window_lo(co, nr, j - 1), give = keep == prev ? keep + w : prev;
    size_t keep_off = pos_start(co, keep) * b, keep_len = pos_start(co, keep + w) * b - keep_off;
    size_t give_off = pos_start(co, give) * b, give_len = pos_start(co, give + w) * b - give_off;
    /* where the partial sums stand before this step */
    int src = (j == 1 && !ordered(co) && !folded_in) ? FOLD__B_SEND : FOLD__B_TMP;
    size_t src_base = src == FOLD__B_SEND ? 0 : base;
    fold__co_send(co, partner, src, give_off - src_base, give_len);
    fold__co_recv(co, partner, FOLD__B_TMP, area, keep_len);
    if (j < L) {
      add(co, partner < r, FOLD__B_TMP, keep_off - base, src, keep_off - src_base, area, keep_len);
    } else { /* our virtual block nr, real block by real block so that block r lands in recvbuf */
      int q0 = fold__rd_first_real(nr, rem), q1 = fold__rd_first_real(nr + 1, rem);
      for (int q = q0; q < q1; q++) {
        size_t off = keep_off + (size_t)(q - q0) * b;
        int out = q == r ? FOLD__B_RECV : FOLD__B_TMP;
        add(co, partner < r, out, q == r ? 0 : off - base, src, off - src_base, area + (off - keep_off), b);
      }
    }
    return 1;
  }
  if (k == L + 2) { /* unfold: block r-1 is the first of our virtual block */
    if (r < 2 * rem) {
      if (r % 2) fold__co_send(co, r - 1, FOLD__B_TMP, pos_start(co, window_lo(co, nr, L)) * b - base, b);
      else fold__co_recv(co, r + 1, FOLD__B_RECV, 0, b);
    }
    return 1;
  }
  return 0;
}

const fold__algo fold__reduce_scatter_recursive_halving = {"recursive_halving", rh_init, rh_round, 1};
