/* alltoall_pairwise.c — pairwise alltoall: n-1 steps, at step s every rank sends to r+s and receives from r-s. */
#include "coll/coll.h"
#include "patterns/patterns.h"

/* B = count * esize bytes per block; block p of sendbuf goes to rank p and
 * lands at block r of its recvbuf. Rounds:
 *   0            own block: sendbuf block r -> recvbuf block r
 *   1 .. n-1     step s = k: send sendbuf block (r+s) to rank r+s, receive
 *                from rank r-s into recvbuf block r-s (mod n). The shifts
 *                s = 1..n-1 meet every other rank exactly once, and rank
 *                r-s sends to (r-s)+s = r at the same step, so each step is
 *                a permutation: every rank sends one block and receives one.
 *
 *     n = 4, step 1: 0->1 1->2 2->3 3->0    step 2: 0->2 1->3 2->0 3->1 ...
 *
 * No scratch. Cost: (n-1) alpha + (n-1)/n S beta, S = n*B the bytes each
 * rank sends (its whole sendbuf). */

static int pairwise_init(fold__coll *co) {
  co->tmp_bytes = 0;
  return FOLD_OK;
}

static int pairwise_round(fold__coll *co, int k) {
  int n = co->size, r = co->rank;
  size_t B = co->count * co->esize;
  if (k == 0) {
    fold__co_copy(co, FOLD__B_RECV, (size_t)r * B, FOLD__B_SEND, (size_t)r * B, B);
    return 1;
  }
  if (k <= n - 1) {
    int to = fold__mod(r + k, n), from = fold__mod(r - k, n);
    fold__co_send(co, to, FOLD__B_SEND, (size_t)to * B, B);
    fold__co_recv(co, from, FOLD__B_RECV, (size_t)from * B, B);
    return 1;
  }
  return 0;
}

const fold__algo fold__alltoall_pairwise = {"pairwise", pairwise_init, pairwise_round, 1};
