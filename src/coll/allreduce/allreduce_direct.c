/* allreduce_direct.c — Alink's direct allreduce: owners reduce their pieces in rank order and send them to all. */
#include <stdlib.h>

#include "coll/coll.h"
#include "patterns/patterns.h"

/* The vector is cut into P = ceil(count / piece) pieces of piece elements
 * (FOLD_PIECE_SIZE, default 4096; the last piece may be short). Rank t
 * owns the contiguous run of fold__block_len(P, n, t) pieces starting at
 * piece fold__block_start(P, n, t) (Alink: floor(P/n) + (t < P mod n)
 * pieces from t*floor(P/n) + min(t, P mod n)); its element range is that
 * run, cut at count.
 *
 *   P = 7, n = 3:   pieces  0 1 2 | 3 4 | 5 6
 *                   owner     0   |  1  |  2
 *
 * The pieces one rank sends to one owner are consecutive, so they travel
 * as one message (Alink sends them one by one: the same bytes, fewer
 * message latencies), and an owner's reduced run goes back the same way.
 * Both stages are staggered like a pairwise exchange: rank r posts its
 * messages to r+1, r+2, ... and its receives from r-1, r-2, ..., so that
 * at any moment each rank's incoming link carries one message instead of
 * every rank sending to owner 0 first (incast).
 * Rounds:
 *   0   stage 1: send the pieces of every other owner t to t; receive
 *       every other rank's copy of our pieces into tmp slot i (ranks
 *       i != t in order). Stage 2 (local ops): reduce in rank order,
 *         lower = x0 op ... op x(t-1)  in slot 0 (from x0)
 *         recvbuf[own] = lower op x(t), then recvbuf[own] op= x(i), i > t
 *       (x(t) is read before recvbuf[own] is written, so in place works).
 *   1   stage 3: send our reduced run to every other rank; receive every
 *       other owner's run into recvbuf at its place.
 * tmp: (n-1) * own run. Cost, with M the largest owned run in bytes
 * (M = S/n when P is a multiple of n):
 *   2 alpha + 2 (n-1) M beta + (n-1) M gamma
 * (the n-1 messages of a stage share the rank's link, their latencies
 * overlap). fold-sim books a receiver's in-link in posting order, and all
 * ranks post their n-1 messages at once, so there arrivals serialise
 * further than on a real switch: measured 21-31% above the formula for
 * n = 3..17 when beta dominates. Rank order is kept: noncommutative_ok = 1. */

#define FOLD__PIECE_SIZE_DEFAULT 4096

/* FOLD_PIECE_SIZE (read once per communicator): elements per piece. */
static size_t piece_size(const fold_comm *c) {
  size_t p = fold__coll_state_of(c)->piece_size;
  return p ? p : FOLD__PIECE_SIZE_DEFAULT;
}

/* Element range [*start, *start + *len) owned by rank t. */
static void owned(const fold__coll *co, int t, size_t *start, size_t *len) {
  size_t piece = co->u[0], P = co->u[1];
  size_t a = fold__block_start(P, co->size, t) * piece, z = fold__block_start(P, co->size, t + 1) * piece;
  if (a > co->count) a = co->count;
  if (z > co->count) z = co->count;
  *start = a;
  *len = z - a;
}

/* u[0] piece elements, u[1] P pieces. */

static int direct_init(fold__coll *co) {
  size_t piece = piece_size(co->comm), a, len;
  if (piece > co->count) piece = co->count ? co->count : 1; /* one piece; keeps the products below in range */
  co->u[0] = piece;
  co->u[1] = co->count / piece + (co->count % piece ? 1 : 0);
  owned(co, co->rank, &a, &len);
  co->tmp_bytes = (size_t)(co->size - 1) * len * co->esize;
  return FOLD_OK;
}

static int direct_round(fold__coll *co, int k) {
  int n = co->size, me = co->rank;
  size_t es = co->esize, a, len, oa, olen;
  owned(co, me, &oa, &olen);
  size_t ob = olen * es, own = oa * es; /* our run in bytes */
  if (k == 0) {
    if (n == 1) {
      if (!co->in_place) fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_SEND, 0, co->count * es);
      return 1;
    }
    /* stage 1: pieces to their owners, staggered (see above) */
    for (int s = 1; s < n; s++) {
      int t = (me + s) % n, i = fold__mod(me - s, n);
      owned(co, t, &a, &len);
      fold__co_send(co, t, FOLD__B_SEND, a * es, len * es);
      fold__co_recv(co, i, FOLD__B_TMP, (size_t)(i < me ? i : i - 1) * ob, ob);
    }
    /* stage 2: reduce in rank order; slot(i) = (i < me ? i : i-1) * ob */
    if (me > 0) {
      for (int i = 1; i < me; i++)
        fold__co_reduce(co, FOLD__B_TMP, 0, FOLD__B_TMP, 0, FOLD__B_TMP, (size_t)i * ob, olen);
      fold__co_reduce(co, FOLD__B_RECV, own, FOLD__B_TMP, 0, FOLD__B_SEND, own, olen);
    } else {
      fold__co_reduce(co, FOLD__B_RECV, own, FOLD__B_SEND, own, FOLD__B_TMP, 0, olen);
    }
    for (int i = me > 0 ? me + 1 : 2; i < n; i++)
      fold__co_reduce(co, FOLD__B_RECV, own, FOLD__B_RECV, own, FOLD__B_TMP, (size_t)(i - 1) * ob, olen);
    return 1;
  }
  if (k == 1 && n > 1) { /* stage 3: reduced runs to everyone */
    for (int s = 1; s < n; s++) {
      int t = (me + s) % n, i = fold__mod(me - s, n);
      fold__co_send(co, t, FOLD__B_RECV, own, ob);
      owned(co, i, &a, &len);
      fold__co_recv(co, i, FOLD__B_RECV, a * es, len * es);
    }
    return 1;
  }
  return 0;
}

const fold__algo fold__allreduce_direct = {"direct", direct_init, direct_round, 1};
