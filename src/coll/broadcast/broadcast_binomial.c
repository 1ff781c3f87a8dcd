/* broadcast_binomial.c — binomial-tree broadcast: every rank that has the data passes it on, ceil(log2 n) rounds. */
#include "coll/coll.h"
#include "coll/tree_rounds.h"

/* Tree over virtual ranks vr = (rank - root) mod n (patterns/rooted.h).
 * Rounds j = 0 .. L-1, L = ceil(log2 n): round j uses mask m = 2^(L-1-j);
 * every vr with vr % 2m == 0 (it has had the data since mask 2m, or is the
 * root) sends the whole buffer to vr + m if vr + m < n. After round j the
 * ranks vr < 2^(j+1) hold the data, so L rounds reach all n; n = 1 has
 * no round.
 * Cost: floor(log2 n) alpha + ceil(log2 n) S beta: a rank's back-to-back
 * sends overlap their latencies (as on fold's simulator), so only the hops
 * of the longest path, floor(log2 n), pay alpha in sequence; the classic
 * model, where each send waits out its latency, gives ceil(log2 n)(alpha + S beta). */

static int binomial_init(fold__coll *co) {
  co->v[0] = fold__ceil_log2(co->size);
  return FOLD_OK;
}

static int binomial_round(fold__coll *co, int k) {
  int L = co->v[0];
  if (k >= L) return 0;
  fold__tree_bcast_round(co, k, L, co->root, FOLD__B_RECV, 0, co->count * co->esize);
  return 1;
}

const fold__algo fold__broadcast_binomial = {"binomial", binomial_init, binomial_round, 0};
