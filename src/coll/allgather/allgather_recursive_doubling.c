/* allgather_recursive_doubling.c — log2(n) exchanges of doubling block ranges, folding extra ranks in first. */
#include "coll/coll.h"
#include "patterns/exchange.h"
#include "patterns/patterns.h"

/* B = sendcount * esize bytes per block, block p at offset p*B of recvbuf;
 * everything happens in recvbuf, no scratch. n = pof2 + rem (patterns.h):
 * among ranks < 2*rem each even rank hands its block to the odd rank above
 * and sits out; the pof2 standing ranks get new ranks 0..pof2-1, and new
 * ranks [a, b) stand for the contiguous real blocks
 * [first_real(a), first_real(b)) (patterns/exchange.h), so every exchange is
 * one contiguous message. Rounds:
 *   0            copy sendbuf -> recvbuf block r (out of place only)
 *   1            fold: even rank r < 2*rem sends block r to r+1
 *   2 .. L+1     L = log2(pof2) exchanges: round 2+j pairs new ranks
 *                nr and nr ^ 2^j. Before it, nr holds the blocks of its
 *                aligned group of 2^j new ranks [nr & ~(2^j-1), +2^j); it
 *                sends that range and receives the partner's group, and the
 *                two make the aligned group of 2^(j+1). After L rounds the
 *                group is all pof2 new ranks, i.e. all n blocks.
 *
 *     n = 4:  round 2: 0<->1 2<->3   [0][1] [2][3]
 *             round 3: 0<->2 1<->3   [0 1]  [2 3]   -> [0 1 2 3] everywhere
 *
 *   L+2          unfold: odd rank r < 2*rem sends all n blocks to r-1 (one
 *                message: a second one to skip r-1's own block would cost
 *                an alpha to save a B)
 * Cost, n a power of two: log2(n) alpha + (n-1)/n S beta, S = n*B.
 * Otherwise ranks start at different times (the fold) and send different
 * amounts, and the time is the longest chain of waits. A chain starts at a
 * new rank x (after x's fold if x < rem), at each exchange either stays
 * (waiting for its own send of its group) or crosses to the partner (alpha
 * more), and ends at a doubled rank y < rem, which then unfolds. Its exact
 * value in the simulator's model:
 *   max over x of  [x < rem] (alpha + B beta)
 *                  + (1 + max_{y < rem} popcount(x ^ y)) alpha
 *                  + (n + sum_{j<L} blocks of x's aligned group of 2^j) B beta.
 * Its two ends, single chains and so lower bounds; the larger of the two is
 * within 10% of the maximum (checked for n <= 1500, B from 1 byte to 1 MiB):
 *   latency-bound:   (L + 1 + [2 rem > pof2]) alpha + (2n - 1) B beta
 *   bandwidth-bound: (2 + h) alpha + (pof2 + c + n) B beta,
 *                    c = sum_{j<L} min(2^j, rem), h = floor(log2(rem+1)), h = 0 for rem = 1
 * The second is 2 S to 2.4 S beta. Bruck needs fewer (or as many) rounds
 * and S beta, so it is the better choice for any non-power-of-two n. */

static int rd_init(fold__coll *co) {
  co->tmp_bytes = 0;
  co->v[0] = fold__pof2_floor(co->size);
  co->v[1] = co->size - co->v[0];
  co->v[2] = fold__ceil_log2(co->v[0]);
  return FOLD_OK;
}

static int rd_round(fold__coll *co, int k) {
  int r = co->rank, rem = co->v[1], L = co->v[2];
  size_t B = co->count * co->esize;
  if (k == 0) {
    if (!co->in_place) fold__co_copy(co, FOLD__B_RECV, (size_t)r * B, FOLD__B_SEND, 0, B);
    return 1;
  }
  if (k == 1) { /* fold */
    if (r < 2 * rem) {
      if (r % 2 == 0) fold__co_send(co, r + 1, FOLD__B_RECV, (size_t)r * B, B);
      else fold__co_recv(co, r - 1, FOLD__B_RECV, (size_t)(r - 1) * B, B);
    }
    return 1;
  }
  if (k < 2 + L) { /* exchange aligned groups of 2^j new ranks */
    int nr = fold__rd_newrank(r, rem);
    if (nr < 0) return 1;
    int j = k - 2, mask = 1 << j, pnr = nr ^ mask;
    int mine = nr & ~(mask - 1), theirs = pnr & ~(mask - 1);
    int m0 = fold__rd_first_real(mine, rem), m1 = fold__rd_first_real(mine + mask, rem);
    int t0 = fold__rd_first_real(theirs, rem), t1 = fold__rd_first_real(theirs + mask, rem);
    int partner = fold__rd_realrank(pnr, rem);
    fold__co_send(co, partner, FOLD__B_RECV, (size_t)m0 * B, (size_t)(m1 - m0) * B);
    fold__co_recv(co, partner, FOLD__B_RECV, (size_t)t0 * B, (size_t)(t1 - t0) * B);
    return 1;
  }
  if (k == 2 + L) { /* unfold */
    if (r < 2 * rem) {
      if (r % 2) fold__co_send(co, r - 1, FOLD__B_RECV, 0, (size_t)co->size * B);
      else fold__co_recv(co, r + 1, FOLD__B_RECV, 0, (size_t)co->size * B);
    }
    return 1;
  }
  return 0;
}

const fold__algo fold__allgather_recursive_doubling = {"recursive_doubling", rd_init, rd_round, 1};
