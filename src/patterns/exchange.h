/* exchange.h — pure rank math for the exchange collectives: recursive-doubling ranges, Bruck runs, rotations. */
#ifndef FOLD_PATTERNS_EXCHANGE_H
#define FOLD_PATTERNS_EXCHANGE_H

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
