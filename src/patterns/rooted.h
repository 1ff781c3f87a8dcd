/* rooted.h — pure rank math for rooted collectives: virtual ranks, binomial rounds, block ranges, a root-keeping fold. */
#ifndef FOLD_PATTERNS_ROOTED_H
#define FOLD_PATTERNS_ROOTED_H

#include "patterns/patterns.h"

/* ---- virtual ranks ----------------------------------------------------------------
 * Rooted trees are built over vr = (rank - root) mod n, so that the root is
 * vr 0 and every subtree covers a contiguous range of virtual ranks. */
static inline int fold__vrank(int rank, int root, int n) { return fold__mod(rank - root, n); }
static inline int fold__vrank_real(int vr, int root, int n) { return (vr + root) % n; }

/* ---- binomial rounds ----------------------------------------------------------------
 * The tree of patterns.h run in L = ceil(log2 n) rounds:
 *   broadcast-like (data flows down)  round j uses mask 1 << (L-1-j): the
 *       biggest subtree is served first, and a vr that got its data at mask
 *       2m serves its own children at masks m, m/2, ... in the next rounds;
 *   reduce-like (data flows up)       round j uses mask 1 << j: a vr hears
 *       from its children at masks 1, 2, ... and reports to its parent at
 *       the mask of its lowest set bit, once its subtree is complete.
 * In the round of mask m:
 *   vr is a parent   iff vr % 2m == 0 and vr + m < n  (its child is vr + m)
 *   vr is a child    iff vr % 2m == m                 (its parent is vr - m) */
static inline int fold__binomial_down_mask(int j, int L) { return 1 << (L - 1 - j); }
static inline int fold__binomial_up_mask(int j) { return 1 << j; }
static inline int fold__binomial_is_parent(int vr, int m, int n) { return vr % (2 * m) == 0 && vr + m < n; }
static inline int fold__binomial_is_child(int vr, int m) { return vr % (2 * m) == m; }
/* Size of the subtree headed by vr's child at mask m: [vr+m, min(vr+2m, n)). */
static inline int fold__binomial_child_subtree(int vr, int m, int n) { return (vr + 2 * m < n ? vr + 2 * m : n) - (vr + m); }
/* Number of children of vr: the masks 1, 2, 4, ... below vr's limit with vr + m < n. */
static inline int fold__binomial_nchildren(int vr, int n) {
  int lim = fold__binomial_mask_limit(vr, n), c = 0;
  for (int m = 1; m < lim && vr + m < n; m <<= 1) c++;
  return c;
}

/* ---- rotated block ranges ---------------------------------------------------------
 * Virtual blocks [a, b) of an n-block array stored in real rank order start
 * at real block (root + a) mod n; the range wraps past block n-1 when
 * (root + a) mod n + (b - a) > n. Returns how many of its blocks come before
 * the wrap (b - a if it does not wrap). */
static inline int fold__vrange_first_part(int a, int b, int root, int n) {
  int s = fold__vrank_real(a, root, n);
  return s + (b - a) > n ? n - s : b - a;
}

/* ---- recursive halving over block ranges --------------------------------------------
 * pof2 ranks, pof2 blocks. Step s (mask 2^s, s = 0, 1, ...) pairs nr with
 * nr ^ 2^s: each halves the block range it holds and keeps the lower half if
 * bit s of nr is 0, the upper one if it is 1. So after step s, nr holds the
 * range below; s = -1 gives the whole range [0, pof2). After the last step
 * nr holds the single block bitreverse(nr). */
static inline void fold__halving_range(int nr, int s, int pof2, int *lo, int *w) {
  int l = 0, ww = pof2;
  for (int j = 0; j <= s; j++) {
    ww /= 2;
    if ((nr >> j) & 1) l += ww;
  }
  *lo = l;
  *w = ww;
}

/* ---- a fold that keeps the root standing ------------------------------------------------
 * As patterns.h's fold (n = pof2 + rem; pairs (2i, 2i+1) for i < rem hand
 * their data to one member, which stands for both as new rank i; rank
 * r >= 2*rem is new rank r - rem), except that in the root's pair the root
 * itself stands. New ranks still cover contiguous, increasing real ranges. */
static inline int fold__rfold_stands(int rank, int rem, int root) {
  if (rank >= 2 * rem) return 1;
  int low = rank & ~1;
  int stander = (root == low || root == low + 1) ? root : low + 1;
  return rank == stander;
}
static inline int fold__rfold_newrank(int rank, int rem, int root) {
  if (rank >= 2 * rem) return rank - rem;
  return fold__rfold_stands(rank, rem, root) ? rank / 2 : -1;
}
static inline int fold__rfold_realrank(int nr, int rem, int root) {
  if (nr >= rem) return nr + rem;
  return (root == 2 * nr) ? 2 * nr : 2 * nr + 1;
}

#endif
