/* allreduce_recursive_doubling.c — log2(n) rounds of pairwise exchange, folding extra ranks in first. */
#include "coll/coll.h"
#include "patterns/patterns.h"

/* n = pof2 + rem (patterns.h). Rounds:
 *   0            copy sendbuf -> recvbuf (out of place only)
 *   1            fold: among ranks < 2*rem, even rank r sends its vector to
 *                r+1, which reduces it in (r's part is the lower one)
 *   2 .. L+1     L = log2(pof2) exchanges: round 2+j pairs new ranks at
 *                distance 2^j; both send the whole vector and reduce, the
 *                lower rank's data first, so rank order is kept and
 *                non-commutative ops are served
 *   L+2          unfold: odd rank r < 2*rem sends the result to r-1
 * Cost: (log2 pof2 + 2[rem>0]) (alpha + S beta + S gamma). */

static int rd_init(fold__coll *co) {
  co->tmp_bytes = co->count * co->esize;
  co->v[0] = fold__pof2_floor(co->size);
  co->v[1] = co->size - co->v[0];
  co->v[2] = fold__ceil_log2(co->v[0]);
  return FOLD_OK;
}

static int rd_round(fold__coll *co, int k) {
  int r = co->rank, pof2 = co->v[0], rem = co->v[1], L = co->v[2];
  size_t bytes = co->count * co->esize;
  if (k == 0) {
    if (!co->in_place) fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_SEND, 0, bytes);
    return 1;
  }
  if (k == 1) { /* fold */
    if (r < 2 * rem) {
      if (r % 2 == 0) {
        fold__co_send(co, r + 1, FOLD__B_RECV, 0, bytes);
      } else {
        fold__co_recv(co, r - 1, FOLD__B_TMP, 0, bytes);
        fold__co_reduce(co, FOLD__B_RECV, 0, FOLD__B_TMP, 0, FOLD__B_RECV, 0, co->count);
      }
    }
    return 1;
  }
  if (k < 2 + L) { /* exchange at distance 2^(k-2) among new ranks */
    int nr = fold__rd_newrank(r, rem);
    if (nr < 0) return 1;
    int partner = fold__rd_realrank(nr ^ (1 << (k - 2)), rem);
    (void)pof2;
    fold__co_send(co, partner, FOLD__B_RECV, 0, bytes);
    fold__co_recv(co, partner, FOLD__B_TMP, 0, bytes);
    if (partner < r)
      fold__co_reduce(co, FOLD__B_RECV, 0, FOLD__B_TMP, 0, FOLD__B_RECV, 0, co->count);
    else { /* ours is the lower part: tmp = recv op tmp, then take it */
      fold__co_reduce(co, FOLD__B_TMP, 0, FOLD__B_RECV, 0, FOLD__B_TMP, 0, co->count);
      fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_TMP, 0, bytes);
    }
    return 1;
  }
  if (k == 2 + L) { /* unfold */
    if (r < 2 * rem) {
      if (r % 2) fold__co_send(co, r - 1, FOLD__B_RECV, 0, bytes);
      else fold__co_recv(co, r + 1, FOLD__B_RECV, 0, bytes);
    }
    return 1;
  }
  return 0;
}

const fold__algo fold__allreduce_recursive_doubling = {"recursive_doubling", rd_init, rd_round, 1};
