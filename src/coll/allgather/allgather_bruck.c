/* allgather_bruck.c — Bruck allgather: ceil(log2 n) rounds for any n, blocks gathered rotated, then rotated into place. */
#include "coll/coll.h"
#include "patterns/exchange.h"
#include "patterns/patterns.h"

/* B = sendcount * esize bytes per block. The blocks gather in recvbuf in
 * rotated order: position i holds the block of rank (r+i) mod n, so what
 * rank r has is always one contiguous prefix. Rounds (L = ceil(log2 n)):
 *   0            own block -> position 0 (in place too: sendbuf is then
 *                recvbuf block r, and position 0 is not yet filled)
 *   1 .. L       round 1+j, d = 2^j: rank r holds positions [0, d); it
 *                sends positions [0, cnt) to r-d and receives the prefix
 *                [0, cnt) of r+d (the blocks of ranks r+d ..) into
 *                positions [d, d+cnt), cnt = min(d, n-d). The prefix
 *                doubles until the last round tops it up to n.
 *
 *     n = 5, rank 0:  start                         [0]
 *                     round 1, from rank 1: [1]      [0 1]
 *                     round 2, from rank 2: [2 3]    [0 1 2 3]
 *                     round 3, from rank 4: [4]      [0 1 2 3 4]
 *
 *   L+1          rotate positions right by r so that block p lands at p:
 *                position i -> (i+r) mod n, one cycle at a time through a
 *                one-block scratch (gcd(n, r) cycles, n + gcd(n, r) copies).
 * Scratch: one block (none on rank 0). The rotation moves S bytes locally.
 * Cost: ceil(log2 n) alpha + (n-1)/n S beta, S = n*B the gathered bytes. */

static int bruck_init(fold__coll *co) {
  co->tmp_bytes = co->rank ? co->count * co->esize : 0;
  co->v[0] = fold__ceil_log2(co->size);
  return FOLD_OK;
}

/* Emit position i -> (i+r) mod n for all i: new[j] = old[(j-r) mod n]. */
static void rotate_into_place(fold__coll *co, size_t B) {
  int n = co->size, r = co->rank, g = fold__gcd(n, r);
  if (r == 0 || B == 0) return;
  for (int c = 0; c < g; c++) {
    fold__co_copy(co, FOLD__B_TMP, 0, FOLD__B_RECV, (size_t)c * B, B);
    int j = c;
    for (;;) {
      int src = fold__mod(j - r, n);
      if (src == c) break;
      fold__co_copy(co, FOLD__B_RECV, (size_t)j * B, FOLD__B_RECV, (size_t)src * B, B);
      j = src;
    }
    fold__co_copy(co, FOLD__B_RECV, (size_t)j * B, FOLD__B_TMP, 0, B);
  }
}

static int bruck_round(fold__coll *co, int k) {
  int n = co->size, r = co->rank, L = co->v[0];
  size_t B = co->count * co->esize;
  if (k == 0) {
    fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_SEND, 0, B);
    return 1;
  }
  if (k <= L) {
    int d = 1 << (k - 1), cnt = d < n - d ? d : n - d;
    fold__co_send(co, fold__mod(r - d, n), FOLD__B_RECV, 0, (size_t)cnt * B);
    fold__co_recv(co, fold__mod(r + d, n), FOLD__B_RECV, (size_t)d * B, (size_t)cnt * B);
    return 1;
  }
  if (k == L + 1) {
    rotate_into_place(co, B);
    return 1;
  }
  return 0;
}

const fold__algo fold__allgather_bruck = {"bruck", bruck_init, bruck_round, 1};
