/* gather_linear.c — linear gather: every rank sends its block straight to the root, one round. */
#include "coll/coll.h"

/* One round. A non-root sends its b = count * esize bytes to the root; the
 * root posts one receive per other rank, block r landing at offset r * b of
 * recvbuf, and copies its own block there (out of place). Receives are
 * posted in rank order; each pair exchanges one message, so any order works.
 * Cost: alpha + (n-1) b beta on a network whose latencies overlap, as in
 * fold's simulator (the root's incoming link carries n-1 blocks back to
 * back); (n-1)(alpha + b beta) where the root pays alpha per message. */

static int gather_linear_init(fold__coll *co) { return FOLD_OK; }

static int gather_linear_round(fold__coll *co, int k) {
  int n = co->size, root = co->root;
  size_t b = co->count * co->esize;
  if (k > 0) return 0;
  if (co->rank != root) {
    fold__co_send(co, root, FOLD__B_SEND, 0, b);
    return 1;
  }
  for (int r = 0; r < n; r++)
    if (r != root) fold__co_recv(co, r, FOLD__B_RECV, (size_t)r * b, b);
  if (!co->in_place) fold__co_copy(co, FOLD__B_RECV, (size_t)root * b, FOLD__B_SEND, 0, b);
  return 1;
}

const fold__algo fold__gather_linear = {"linear", gather_linear_init, gather_linear_round, 0};
