/* reduce_scatter_pairwise.c — pairwise-exchange reduce-scatter: n-1 steps, each sending one block to its owner. */
#include "coll/coll.h"
#include "patterns/patterns.h"

/* b = recvcount elements per block. At step s = 1 .. n-1 rank r sends its
 * contribution to block r+s to rank r+s and receives rank (r-s)'s
 * contribution to block r (the pair r -> r+s meets at the same step on
 * both sides, one message each way).
 *
 * Rank order. The sources arrive as r-1, r-2, ..., 0, then n-1, ..., r+1:
 * two descending runs. Prepending each arrival to an accumulator keeps
 * rank order with two accumulators:
 *   L = x0 op ... op xr      in recvbuf: starts as xr, L = x(r-s) op L
 *   U = x(r+1) op ... x(n-1) in tmp:     starts as x(n-1), U = xj op U
 * and the result is L op U. For a commutative op everything is folded
 * into recvbuf and U is not needed.
 *
 *   r = 2, n = 5:  s = 1 2 | 3 4        arrivals x1 x0 | x4 x3
 *                  L = x0 op (x1 op x2)   U = x3 op x4   result L op U
 *
 * Rounds:
 *   0          copy our block sendbuf[r] -> recvbuf (out of place only)
 *   1 .. n-1   step s = k: send sendbuf[r+s] to r+s, receive from r-s into
 *              tmp slot R (or, for the first upper arrival, straight into
 *              U) and fold it in; the last step also forms L op U.
 * tmp: one block (commutative), two blocks (R, U) otherwise.
 * Cost (S = n*b bytes in sendbuf): (n-1) alpha + (n-1)/n S beta
 * + (n-1)/n S gamma. Rank order is kept: noncommutative_ok = 1. */

static int pw_init(fold__coll *co) {
  int n = co->size;
  size_t b = co->count * co->esize;
  co->v[0] = !co->commutative; /* keep U apart */
  co->tmp_bytes = n == 1 ? 0 : (co->v[0] ? 2 : 1) * b;
  return FOLD_OK;
}

static int pw_round(fold__coll *co, int k) {
  int n = co->size, r = co->rank, ordered = co->v[0];
  size_t cnt = co->count, b = cnt * co->esize;
  const size_t R = 0, U = b; /* tmp slots */
  if (k == 0) {
    if (!co->in_place) fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_SEND, (size_t)r * b, b);
    return 1;
  }
  if (k > n - 1) return 0;
  int s = k, to = (r + s) % n, from = fold__mod(r - s, n);
  fold__co_send(co, to, FOLD__B_SEND, (size_t)to * b, b);
  if (from < r || !ordered) { /* lower run (or any order): L = x(from) op L */
    fold__co_recv(co, from, FOLD__B_TMP, R, b);
    fold__co_reduce(co, FOLD__B_RECV, 0, FOLD__B_TMP, R, FOLD__B_RECV, 0, cnt);
  } else if (from == n - 1) { /* first of the upper run */
    fold__co_recv(co, from, FOLD__B_TMP, U, b);
  } else { /* U = x(from) op U */
    fold__co_recv(co, from, FOLD__B_TMP, R, b);
    fold__co_reduce(co, FOLD__B_TMP, U, FOLD__B_TMP, R, FOLD__B_TMP, U, cnt);
  }
  if (s == n - 1 && ordered && r < n - 1) /* result = L op U */
    fold__co_reduce(co, FOLD__B_RECV, 0, FOLD__B_RECV, 0, FOLD__B_TMP, U, cnt);
  return 1;
}

const fold__algo fold__reduce_scatter_pairwise = {"pairwise", pw_init, pw_round, 1};
