/* patterns.h — pure rank math shared by the algorithms: blocks, rings, binomial trees, recursive doubling, Bruck. */
#ifndef FOLD_PATTERNS_H
#define FOLD_PATTERNS_H

#include <stddef.h>

/* ---- blocks -------------------------------------------------------------------
 * Cut `count` elements into `parts` contiguous blocks, the first count % parts
 * one element longer (Alink's piece ownership, MPICH's cnts/displs). */
static inline size_t fold__block_len(size_t count, int parts, int i) {
  return count / (size_t)parts + ((size_t)i < count % (size_t)parts ? 1 : 0);
}
static inline size_t fold__block_start(size_t count, int parts, int i) {
  size_t q = count / (size_t)parts, r = count % (size_t)parts;
  return (size_t)i * q + ((size_t)i < r ? (size_t)i : r);
}

/* ---- ring ------------------------------------------------------------------------ */
static inline int fold__ring_right(int rank, int n) { return (rank + 1) % n; }
static inline int fold__ring_left(int rank, int n) { return (rank + n - 1) % n; }
static inline int fold__mod(int a, int n) { return ((a % n) + n) % n; }

/* ---- powers of two ----------------------------------------------------------------- */
/* Largest power of two <= n (n >= 1). */
static inline int fold__pof2_floor(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}
/* ceil(log2(n)) for n >= 1. */
static inline int fold__ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) k++;
  return k;
}

/* ---- binomial tree ---------------------------------------------------------------------
 * Over virtual ranks vr = (rank - root) mod n, root = 0:
 *
 *        0
 *      / | \
 *     1  2  4        vr's parent clears vr's lowest set bit;
 *        |  | \      vr's children are vr + m for the powers of two m below
 *        3  5  6     vr's lowest set bit (every m < n for the root), with
 *              |     vr + m < n. Child vr + m heads the subtree [vr+m, vr+2m).
 *              7
 */
static inline int fold__binomial_parent(int vr) { return vr == 0 ? -1 : (vr & (vr - 1)); }
/* The limit for vr's children masks: its lowest set bit, or the top for vr 0. */
static inline int fold__binomial_mask_limit(int vr, int n) {
  if (vr == 0) {
    int m = 1;
    while (m < n) m <<= 1;
    return m;
  }
  return vr & -vr;
}
/* Number of virtual ranks in the subtree headed by vr (vr itself included). */
static inline int fold__binomial_subtree(int vr, int n) {
  int lim = fold__binomial_mask_limit(vr, n);
  return (vr + lim < n ? vr + lim : n) - vr;
}

/* ---- recursive doubling with a non-power-of-two fold ----------------------------------
 * n = pof2 + rem. Among ranks < 2*rem, each even rank hands its data to the
 * odd rank above it and sits out ("folded"); the odd one stands for both.
 * The pof2 standing ranks get new ranks 0..pof2-1 in rank order, so a
 * standing rank's contribution covers a contiguous range of real ranks. */
static inline int fold__rd_newrank(int rank, int rem) {
  if (rank < 2 * rem) return (rank % 2) ? rank / 2 : -1;
  return rank - rem;
}
static inline int fold__rd_realrank(int newrank, int rem) {
  return newrank < rem ? newrank * 2 + 1 : newrank + rem;
}
/* The new ranks [a, b) stand for the contiguous real ranks (and own their
 * blocks) [fold__rd_first_real(a), fold__rd_first_real(b));
 * fold__rd_first_real(pof2) = n.
 *
 *   n = 6, pof2 = 4, rem = 2:   real  0 1 | 2 3 | 4 | 5
 *                               new    0  |  1  | 2 | 3
 */
static inline int fold__rd_first_real(int newrank, int rem) { return newrank < rem ? 2 * newrank : newrank + rem; }

#endif
