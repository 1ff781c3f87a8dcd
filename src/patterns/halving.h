/* halving.h — pure rank math for recursive halving: windows held after each step, virtual blocks of the fold. */
#ifndef FOLD_PATTERNS_HALVING_H
#define FOLD_PATTERNS_HALVING_H

/* ---- windows of recursive halving ----------------------------------------------------------
 * pof2 = 2^L new ranks start with all pof2 blocks; each step halves the
 * window of blocks a rank holds, keeping the half its partner does not.
 * After j steps a rank holds a window of pof2 >> j consecutive blocks.
 *
 * Distance decreasing (partner at pof2/2, pof2/4, ..., 1; MPICH's
 * reduce_scatter, LightGBM): bit L-j of nr picks the half at step j, so the
 * window is nr rounded down to a multiple of its width, and after L steps
 * new rank nr holds block nr.
 *
 *   pof2 = 4:  step 1 (partner nr^2)   0,1 keep [0,2)   2,3 keep [2,4)
 *              step 2 (partner nr^1)   nr keeps [nr, nr+1)
 */
static inline int fold__halving_dec_lo(int nr, int pof2, int j) {
  int w = pof2 >> j;
  return nr & ~(w - 1);
}

/* Distance increasing (partner at 1, 2, ..., pof2/2; MPICH's Rabenseifner
 * allreduce): bit i of nr picks the half at step i+1, so the window start
 * is nr's low j bits reversed, and after L steps nr holds block
 * bitreverse(nr). Each step combines two adjacent aligned groups of new
 * ranks, which keeps rank order.
 *
 *   pof2 = 4:  step 1 (partner nr^1)   0,2 keep [0,2)   1,3 keep [2,4)
 *              step 2 (partner nr^2)   0 [0,1)  2 [1,2)  1 [2,3)  3 [3,4)
 */
static inline int fold__halving_inc_lo(int nr, int pof2, int j) {
  int lo = 0, w = pof2;
  for (int i = 0; i < j; i++) {
    w >>= 1;
    if ((nr >> i) & 1) lo += w;
  }
  return lo;
}

/* The L-bit reversal of i: position i of a bit-reversed layout holds item
 * fold__bit_reverse(i, L) (the reversal is its own inverse). */
static inline int fold__bit_reverse(int i, int L) {
  int x = 0;
  for (int b = 0; b < L; b++) x |= ((i >> b) & 1) << (L - 1 - b);
  return x;
}


#endif
