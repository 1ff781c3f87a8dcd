/* exchange.h — pure rank math for the exchange collectives: recursive-doubling ranges, Bruck runs, rotations. */
#ifndef FOLD_PATTERNS_EXCHANGE_H
#define FOLD_PATTERNS_EXCHANGE_H

/* ---- recursive doubling over folded ranks ----------------------------------------------
 * With the fold of patterns.h (n = pof2 + rem; new rank nr < rem stands for
 * real ranks 2nr and 2nr+1, new rank nr >= rem for real rank nr + rem), the
 * new ranks [a, b) stand for the contiguous real ranks
 * [fold__rd_first_real(a), fold__rd_first_real(b)); first_real(pof2) = n.
 *
 *   n = 6, pof2 = 4, rem = 2:   real  0 1 | 2 3 | 4 | 5
 *                               new    0  |  1  | 2 | 3
 */
static inline int fold__rd_first_real(int newrank, int rem) {
  return newrank < rem ? 2 * newrank : newrank + rem;
}

/* ---- Bruck alltoall: indices with bit k set ------------------------------------------
 * The indices i in [0, n) with bit k set come in runs of 2^k:
 * [2^k, 2^(k+1)), [3*2^k, 4*2^k), ..., the last one cut at n. */
static inline int fold__bruck_bit_count(int n, int k) {
  int run = 1 << k, period = run << 1;
  int full = (n / period) * run, tail = n % period - run;
  return full + (tail > 0 ? tail : 0);
}

/* ---- rotations ----------------------------------------------------------------------- */
/* Greatest common divisor, gcd(a, 0) = a: a rotation of n items by s
 * consists of gcd(n, s) cycles. */
static inline int fold__gcd(int a, int b) {
  while (b) {
    int t = a % b;
    a = b;
    b = t;
  }
  return a;
}

#endif
