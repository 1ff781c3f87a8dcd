/* exact.c — FOLD_SUM_EXACT: fixed-point superaccumulators that sum floats exactly and round once. */
#include <math.h>
#include <string.h>

#include "op/op.h"

/* Every finite float64 is an integer multiple of 2^-1074 below 2^1024 (float32:
 * of 2^-149 below 2^128), so a sum of them is an integer times 2^-BIAS and
 * fits a fixed-point integer of 2098 (277) bits plus headroom for the number
 * of terms. The accumulator holds that integer exactly, so adding is
 * associative and commutative: the result does not depend on the order, the
 * tree or the rank count, and one rounding at the end gives the correctly
 * rounded sum.
 *
 * Layout, an array of int64_t:
 *   [0]        flags: NaN seen, +inf seen, -inf seen, a term other than -0.0 seen
 *   [1..L]     signed words w[k] of weight 2^(32(k-1)): the value is the sum
 *              of w[k] * 2^(32(k-1) - BIAS). Normalised (words 1..L-1 in
 *              [0, 2^32), the top one signed) only inside the rounding.
 * Digits are 32 bits in 64-bit words so that adding two accumulators is a
 * word-by-word add with no carries (fold__exact_add) and a load writes a
 * term's three digits (negated if negative) with none either; the rounding
 * normalises (carries into [0, 2^32)) first. Integer adds commute and
 * associate, so even the bytes in flight do not depend on the order. The top
 * word leaves 31 bits of headroom above the largest finite input; a sum may
 * have at most 2^31 terms. */
enum {
  F_NAN = 1,
  F_PINF = 2,
  F_NINF = 4,
  F_NONNEGZERO = 8,
  L64 = 67, /* digits 1..66 cover bits 0..2111 >= 1074 + 1024 */
  L32 = 10, /* digits 1..9 cover bits 0..287 >= 149 + 128 */
};

static int limbs(fold_dtype dt) { return dt == FOLD_FLOAT64 ? L64 : L32; }

size_t fold__exact_acc_size(fold_dtype dt) {
  if (dt != FOLD_FLOAT64 && dt != FOLD_FLOAT32) return 0;
  return (size_t)(limbs(dt) + 1) * sizeof(int64_t);
}

/* Carry every digit into [0, 2^32); the top word takes what is left. */
static void normalize(int64_t *w, int L) {
  int64_t carry = 0;
  for (int i = 1; i < L; i++) {
    int64_t v = w[i] + carry;
    w[i] = v & 0xffffffffLL;
    carry = v >> 32; /* arithmetic shift (GCC and Clang define it): floor(v / 2^32) */
  }
  w[L] += carry;
}

/* One term into a zeroed accumulator: the integer m placed at bit p, as
 * three digits below 2^32 (negated for a negative term; digits may be
 * negative until the rounding normalises). */
static void load_one(int64_t *w, int L, int neg, uint64_t m, int p) {
  int k = 1 + p / 32, s = p % 32;
  uint64_t lo = m << s, hi = s ? m >> (64 - s) : 0;
  int64_t d[3] = {(int64_t)(lo & 0xffffffffu), (int64_t)(lo >> 32), (int64_t)hi};
  for (int j = 0; j < 3 && k + j <= L; j++) w[k + j] = neg ? -d[j] : d[j];
}

void fold__exact_load(fold_dtype dt, void *acc, const void *x, size_t count) {
  int L = limbs(dt);
  size_t words = (size_t)L + 1;
  int64_t w[L64 + 1];
  for (size_t i = 0; i < count; i++) {
    memset(w, 0, words * sizeof *w);
    uint64_t m;
    int e, neg, fin;
    if (dt == FOLD_FLOAT64) {
      uint64_t b;
      memcpy(&b, (const char *)x + i * 8, 8);
      neg = (int)(b >> 63);
      e = (int)((b >> 52) & 0x7ff);
      m = b & ((UINT64_C(1) << 52) - 1);
      fin = e != 0x7ff;
      if (fin && e) m |= UINT64_C(1) << 52;
    } else {
      uint32_t b;
      memcpy(&b, (const char *)x + i * 4, 4);
      neg = (int)(b >> 31);
      e = (int)((b >> 23) & 0xff);
      m = b & ((UINT32_C(1) << 23) - 1);
      fin = e != 0xff;
      if (fin && e) m |= UINT32_C(1) << 23;
    }
    if (!fin)
      w[0] = m ? F_NAN : neg ? F_NINF : F_PINF;
    else if (m)
      load_one(w, L, neg, m, e ? e - 1 : 0); /* value m * 2^(p - BIAS) */
    if (!(fin && m == 0 && neg)) w[0] |= F_NONNEGZERO;
    memcpy((char *)acc + i * words * sizeof *w, w, words * sizeof *w);
  }
}

/* out may alias a or b: each word is read before it is written. No carry
 * pass here: digits are of magnitude below 2^32 after a load and the add is word by word,
 * so a sum of k loaded terms has digits of magnitude below k * 2^32, far from 2^63 for
 * any k below 2^31 (a collective adds one term per rank); the rounding
 * normalises once. This keeps the add a plain, vectorisable loop. */
void fold__exact_add(fold_dtype dt, void *out, const void *a, const void *b, size_t count) {
  int L = limbs(dt);
  size_t words = (size_t)L + 1;
  const unsigned char *pa = a, *pb = b;
  unsigned char *po = out;
  for (size_t i = 0; i < count; i++) {
    int64_t x[L64 + 1], y[L64 + 1];
    memcpy(x, pa + i * words * 8, words * 8);
    memcpy(y, pb + i * words * 8, words * 8);
    for (size_t k = 1; k < words; k++) x[k] += y[k];
    x[0] |= y[0];
    memcpy(po + i * words * 8, x, words * 8);
  }
}

/* The magnitude of an accumulator as 32-bit digits d[0..L] (L+1 of them: the
 * top word splits in two), least significant first; returns the sign. */
static int magnitude(const int64_t *w, int L, uint32_t *d) {
  int64_t t[L64 + 1];
  memcpy(t, w, (size_t)(L + 1) * sizeof *t);
  normalize(t, L);
  int neg = t[L] < 0;
  if (neg) {
    for (int k = 1; k <= L; k++) t[k] = -t[k];
    normalize(t, L);
  }
  for (int k = 1; k < L; k++) d[k - 1] = (uint32_t)t[k];
  d[L - 1] = (uint32_t)((uint64_t)t[L] & 0xffffffffu);
  d[L] = (uint32_t)((uint64_t)t[L] >> 32);
  return neg;
}

/* n <= 64 bits of the digits d[0..nd) from bit lo up. */
static uint64_t bits_from(const uint32_t *d, int nd, int lo, int n) {
  int w = lo / 32, sft = lo % 32;
  uint64_t d0 = w < nd ? d[w] : 0, d1 = w + 1 < nd ? d[w + 1] : 0, d2 = w + 2 < nd ? d[w + 2] : 0;
  uint64_t v = (d0 | d1 << 32) >> sft;
  if (sft) v |= d2 << (64 - sft);
  return n < 64 ? v & ((UINT64_C(1) << n) - 1) : v;
}

/* Round to nearest, ties to even, in precision P bits; returns the value as
 * q * 2^(*sh - BIAS) with q < 2^P, or q = 0 for a zero. */
static uint64_t round_digits(const uint32_t *d, int nd, int P, int *sh) {
  int top = nd - 1;
  while (top >= 0 && d[top] == 0) top--;
  *sh = 0;
  if (top < 0) return 0;
  int H = top * 32 + 31 - __builtin_clz(d[top]);
  if (H < P) return bits_from(d, nd, 0, H + 1); /* exact: a subnormal or the smallest binade */
  int s = H - P + 1; /* q: bits [s, H]; the half bit s - 1; sticky: anything below it */
  uint64_t qh = bits_from(d, nd, s - 1, P + 1), q = qh >> 1;
  int half = (int)(qh & 1), sticky = 0, b = s - 1;
  for (int i = 0; i < b / 32 && !sticky; i++) sticky = d[i] != 0;
  if (!sticky && b % 32) sticky = (d[b / 32] & ((UINT32_C(1) << (b % 32)) - 1)) != 0;
  if (half && (sticky || (q & 1))) q++;
  if (q >> P) {
    q >>= 1;
    s++;
  }
  *sh = s;
  return q;
}

void fold__exact_round(fold_dtype dt, void *x, const void *acc, size_t count) {
  int L = limbs(dt);
  size_t words = (size_t)L + 1;
  int64_t w[L64 + 1];
  uint32_t d[L64 + 1];
  for (size_t i = 0; i < count; i++) {
    memcpy(w, (const char *)acc + i * words * sizeof *w, words * sizeof *w);
    int64_t f = w[0];
    int neg = magnitude(w, L, d), sh;
    uint64_t q = round_digits(d, L + 1, dt == FOLD_FLOAT64 ? 53 : 24, &sh);
    /* IEEE: NaN in, or +inf and -inf together, give NaN; one infinity wins
     * over any finite sum; an exact zero is +0 unless every term was -0. */
    int nan = (f & F_NAN) || ((f & F_PINF) && (f & F_NINF));
    if (dt == FOLD_FLOAT64) {
      double v = nan ? NAN : (f & F_PINF) ? INFINITY : (f & F_NINF) ? -INFINITY
                 : q == 0 ? ((f & F_NONNEGZERO) ? 0.0 : -0.0)
                 : ldexp((double)q, sh - 1074) * (neg ? -1.0 : 1.0);
      memcpy((char *)x + i * 8, &v, 8);
    } else {
      float v = nan ? NAN : (f & F_PINF) ? INFINITY : (f & F_NINF) ? -INFINITY
                : q == 0 ? ((f & F_NONNEGZERO) ? 0.0f : -0.0f)
                : ldexpf((float)q, sh - 149) * (neg ? -1.0f : 1.0f);
      memcpy((char *)x + i * 4, &v, 4);
    }
  }
}
