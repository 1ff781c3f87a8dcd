/* allreduce_rabenseifner.c — Rabenseifner: recursive-halving reduce-scatter, then recursive-doubling allgather. */
#include "coll/coll.h"
#include "patterns/halving.h"
#include "patterns/patterns.h"

/* n = pof2 + rem, L = log2(pof2). The fold of patterns.h leaves pof2
 * standing ranks with new ranks nr in rank order; the vector is cut into
 * pof2 blocks (fold__block_*), and a window of consecutive blocks is one
 * contiguous byte range.
 *
 * Reduce-scatter by recursive halving with the distance INCREASING
 * (halving.h): at step i the partner is nr ^ 2^i, and both hold partial
 * sums over aligned groups of 2^i consecutive new ranks, side by side, so
 * adding "lower group op upper group" keeps rank order:
 *
 *   pof2 = 4       step 0 (nr^1)         step 1 (nr^2)
 *   nr 0:   [0,4) keeps [0,2) = x0+x1    keeps [0,1) = x0+x1+x2+x3
 *   nr 2:   [0,4) keeps [0,2) = x2+x3    keeps [1,2)
 *   nr 1:   [0,4) keeps [2,4) = x0+x1    keeps [2,3)
 *   nr 3:   [0,4) keeps [2,4) = x2+x3    keeps [3,4)
 *
 * Allgather by recursive doubling, the same steps backwards: at step i
 * (distance pof2/2 >> i) each rank sends its window and receives the
 * sibling window beside it, straight into recvbuf.
 *
 * Rounds:
 *   0            copy sendbuf -> recvbuf where needed (see below)
 *   1            fold: even r < 2*rem sends its vector to r+1, which adds
 *                it in front of its own (r's part is the lower one)
 *   2 .. L+1     reduce-scatter step i = k-2: send the half the partner
 *                keeps, receive ours into tmp, recvbuf[half] = lower op upper
 *   L+2 .. 2L+1  allgather step i = k-L-2
 *   2L+2         unfold: odd r < 2*rem sends the result to r-1
 * Copies avoided: out of place, step 0 reads sendbuf directly and a fold
 * receiver takes the fold straight into recvbuf, so round 0 copies only
 * for n = 1. tmp: the step-0 half (the lower half is the larger), or the
 * whole vector for an in-place fold receiver.
 * Cost: (2L + 2[rem>0]) alpha + (2 (pof2-1)/pof2 + 2[rem>0]) S beta
 * + ((pof2-1)/pof2 + [rem>0]) S gamma. Rank order is kept:
 * noncommutative_ok = 1. */

/* v[0] pof2, v[1] rem, v[2] L, v[3] new rank (-1 when folded away). */

static int rab_init(fold__coll *co) {
  int n = co->size, r = co->rank, pof2 = fold__pof2_floor(n), rem = n - pof2;
  co->v[0] = pof2;
  co->v[1] = rem;
  co->v[2] = fold__ceil_log2(pof2);
  co->v[3] = fold__rd_newrank(r, rem);
  if (n == 1) co->tmp_bytes = 0;
  else if (r < 2 * rem && r % 2 && co->in_place) co->tmp_bytes = co->count * co->esize;
  else if (co->v[3] >= 0) co->tmp_bytes = fold__block_start(co->count, pof2, pof2 / 2) * co->esize;
  return FOLD_OK;
}

/* Byte range of the window of w blocks starting at block lo. */
static void window(const fold__coll *co, int lo, int w, size_t *off, size_t *len) {
  size_t a = fold__block_start(co->count, co->v[0], lo), z = fold__block_start(co->count, co->v[0], lo + w);
  *off = a * co->esize;
  *len = (z - a) * co->esize;
}

static int rab_round(fold__coll *co, int k) {
  int n = co->size, r = co->rank, pof2 = co->v[0], rem = co->v[1], L = co->v[2], nr = co->v[3];
  size_t bytes = co->count * co->esize, off, len, poff, plen;
  if (k == 0) {
    if (n == 1 && !co->in_place) fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_SEND, 0, bytes);
    return 1;
  }
  if (n == 1) return 0;
  if (k == 1) { /* fold */
    if (r < 2 * rem) {
      if (r % 2 == 0) {
        fold__co_send(co, r + 1, FOLD__B_SEND, 0, bytes);
      } else if (co->in_place) {
        fold__co_recv(co, r - 1, FOLD__B_TMP, 0, bytes);
        fold__co_reduce(co, FOLD__B_RECV, 0, FOLD__B_TMP, 0, FOLD__B_RECV, 0, co->count);
      } else {
        fold__co_recv(co, r - 1, FOLD__B_RECV, 0, bytes);
        fold__co_reduce(co, FOLD__B_RECV, 0, FOLD__B_RECV, 0, FOLD__B_SEND, 0, co->count);
      }
    }
    return 1;
  }
  if (k < 2 + L) { /* reduce-scatter step i: window halves from pof2 >> i to pof2 >> (i+1) blocks */
    if (nr < 0) return 1;
    int i = k - 2, m = 1 << i, w = pof2 >> (i + 1), partner = fold__rd_realrank(nr ^ m, rem);
    int keep = fold__halving_inc_lo(nr, pof2, i + 1), give = (nr & m) ? keep - w : keep + w;
    /* before step 0 our data is still in sendbuf unless a fold put it in recvbuf */
    int src = (i == 0 && r >= 2 * rem && !co->in_place) ? FOLD__B_SEND : FOLD__B_RECV;
    window(co, give, w, &poff, &plen);
    fold__co_send(co, partner, src, poff, plen);
    window(co, keep, w, &off, &len);
    fold__co_recv(co, partner, FOLD__B_TMP, 0, len);
    if (partner < r)
      fold__co_reduce(co, FOLD__B_RECV, off, FOLD__B_TMP, 0, src, off, len / co->esize);
    else
      fold__co_reduce(co, FOLD__B_RECV, off, src, off, FOLD__B_TMP, 0, len / co->esize);
    return 1;
  }
  if (k < 2 + 2 * L) { /* allgather step i: window doubles from pof2 >> (L-i) blocks */
    if (nr < 0) return 1;
    int i = k - 2 - L, m = pof2 >> (i + 1), w = pof2 >> (L - i), partner = fold__rd_realrank(nr ^ m, rem);
    int lo = fold__halving_inc_lo(nr, pof2, L - i), sib = (nr & m) ? lo - w : lo + w;
    window(co, lo, w, &off, &len);
    fold__co_send(co, partner, FOLD__B_RECV, off, len);
    window(co, sib, w, &poff, &plen);
    fold__co_recv(co, partner, FOLD__B_RECV, poff, plen);
    return 1;
  }
  if (k == 2 + 2 * L) { /* unfold */
    if (r < 2 * rem) {
      if (r % 2) fold__co_send(co, r - 1, FOLD__B_RECV, 0, bytes);
      else fold__co_recv(co, r + 1, FOLD__B_RECV, 0, bytes);
    }
    return 1;
  }
  return 0;
}

const fold__algo fold__allreduce_rabenseifner = {"rabenseifner", rab_init, rab_round, 1};
