/* barrier_dissemination.c — dissemination barrier: ceil(log2 n) rounds of one-byte messages at doubling distances. */
#include "coll/coll.h"
#include "patterns/patterns.h"

/* Round k, k = 0 .. ceil(log2 n)-1: send one byte to r+2^k, receive one
 * from r-2^k (mod n). By induction, after round k rank r has heard
 * (directly or through a chain) from ranks r-1 .. r-(2^(k+1)-1): the round-k
 * message from r-2^k carries everything r-2^k had heard. Once
 * 2^(k+1)-1 >= n-1 that is every rank, so nobody leaves before all entered.
 *
 *     n = 5:   round 0: r <- r-1   round 1: r <- r-2   round 2: r <- r-4
 *              heard:    {r-1}      {r-1..r-3}          {r-1..r-7} = all
 *
 * The distances 2^k < n are distinct mod n, so a pair never shares a
 * direction twice. The byte sent is tmp[0] (content irrelevant), received
 * into tmp[1]. Cost: ceil(log2 n) (alpha + beta). */

static int dissemination_init(fold__coll *co) {
  co->tmp_bytes = co->size > 1 ? 2 : 0;
  co->v[0] = fold__ceil_log2(co->size);
  return FOLD_OK;
}

static int dissemination_round(fold__coll *co, int k) {
  int n = co->size, r = co->rank;
  if (k >= co->v[0]) return 0;
  fold__co_send(co, fold__mod(r + (1 << k), n), FOLD__B_TMP, 0, 1);
  fold__co_recv(co, fold__mod(r - (1 << k), n), FOLD__B_TMP, 1, 1);
  return 1;
}

const fold__algo fold__barrier_dissemination = {"dissemination", dissemination_init, dissemination_round, 1};
