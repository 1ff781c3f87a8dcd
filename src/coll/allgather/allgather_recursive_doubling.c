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
 * Otherwise the round-j exchange that matters is the one of the group with
 * the most doubled-up ranks, 2^j + min(2^j, rem) blocks, and the unfold
 * moves all of S:
 *   (L+2) alpha + (pof2 + c + n) B beta,  c = sum_{j<L} min(2^j, rem),
 * which comes to 2 S to 2.4 S beta: ring or bruck suit large non-power-of-two calls. */

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
