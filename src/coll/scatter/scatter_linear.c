/* scatter_linear.c — linear scatter: the root sends every rank its block directly, one round. */
#include "coll/coll.h"

/* One round. The root sends block r (offset r * b of sendbuf, b = count *
 * esize bytes) to each rank r != root, starting with root+1 and going round,
 * so the ranks next to the root are served first; it copies its own block to
 * recvbuf (out of place). A non-root receives its block into recvbuf.
 * Cost: alpha + (n-1) b beta on a network whose latencies overlap, as in
 * fold's simulator (the root's outgoing link carries n-1 blocks back to
 * back); (n-1)(alpha + b beta) where the root pays alpha per message. */

static int scatter_linear_init(fold__coll *co) { return FOLD_OK; }

static int scatter_linear_round(fold__coll *co, int k) {
  int n = co->size, root = co->root;
  size_t b = co->count * co->esize;
  if (k > 0) return 0;
  if (co->rank != root) {
    fold__co_recv(co, root, FOLD__B_RECV, 0, b);
    return 1;
  }
  for (int i = 1; i < n; i++) {
    int r = (root + i) % n;
    fold__co_send(co, r, FOLD__B_SEND, (size_t)r * b, b);
  }
  if (!co->in_place) fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_SEND, (size_t)root * b, b);
  return 1;
}

const fold__algo fold__scatter_linear = {"linear", scatter_linear_init, scatter_linear_round, 0};
