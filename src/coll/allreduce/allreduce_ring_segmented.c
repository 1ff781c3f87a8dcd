/* allreduce_ring_segmented.c — ring allreduce with blocks cut into segments, run as a pipelined wavefront. */
#include <stdlib.h>

#include "coll/coll.h"
#include "patterns/patterns.h"

/* The ring of allreduce_ring.c: the vector is cut into n blocks; steps
 * s = 0 .. n-2 reduce-scatter (send block r-s, receive block r-s-1 and add
 * it in), steps s = n-1 .. 2n-3 allgather (send block r+1-(s-n+1), receive
 * block r-(s-n+1) in place). Here each block is further cut into J
 * segments of seg elements (FOLD_SEGMENT_BYTES bytes, default 1 MiB; a
 * block's last segments may be short or empty), and segment j of step s
 * runs in round 1 + s + j:
 *
 *   round:     1    2    3    4    5    ...
 *   step 0    j0   j1   j2
 *   step 1         j0   j1   j2
 *   step 2              j0   j1   j2
 *
 * Segment j of step s needs only segment j of step s-1 (one round
 * earlier), so up to min(J, 2n-2) segments are in flight per round.
 * Within a round the active steps have distinct s and distinct j, so the
 * regions they send and receive never overlap. Each rank emits its active
 * steps in increasing s on both sides, so the messages to the right
 * neighbour match the neighbour's receives in order.
 * tmp: one segment slot per reduce-scatter step that can be active in a
 * round; the active ones have consecutive j, so slot j mod Q with
 * Q = min(J, n-1) is free.
 * Out of place there is no copy of sendbuf into recvbuf: step 0 sends the
 * rank's own block from sendbuf, and step s reduces into block r-s-1 the
 * received segment and that block's sendbuf bytes (the block is written
 * for the first time there); the one block never reduced into, r, arrives
 * in the first allgather step. A copy of the whole vector would cost as
 * much as a fifth of the call at large sizes.
 * Rounds: 0 (empty but at n = 1, kept so the rounds keep their numbers);
 * 1 .. 2n-2+J-1.
 * Cost: (2(n-1) + J - 1) alpha + 2 (n-1)/n S beta + (n-1)/n S gamma, where
 * J = ceil(S / (n * FOLD_SEGMENT_BYTES)) (the latency of the J-1 extra
 * rounds is the price of the pipeline; the bytes are those of the ring),
 * and J >= 2 once a block has 2 * FOLD__SEGMENT_MIN bytes: with two
 * segments in flight the executor reduces one while the other is on the
 * wire (coll.c, local ops overlapping transfers).
 * Block order depends on the rank, so non-commutative ops are refused. */

#define FOLD__SEGMENT_BYTES_DEFAULT ((size_t)1 << 20)
/* Halving a block into segments smaller than this costs more in per-message
 * latency than the overlap wins back. */
#define FOLD__SEGMENT_MIN ((size_t)64 << 10)

/* The call's segment_bytes (fold_coll_opts), else FOLD_SEGMENT_BYTES (read once per communicator), else 1 MiB. */
static size_t segment_bytes(const fold__coll *co) {
  return co->seg_bytes ? co->seg_bytes : FOLD__SEGMENT_BYTES_DEFAULT;
}

/* u[0] segment elements, v[0] J segments per block, v[1] Q tmp slots. */

static int seg_init(fold__coll *co) {
  int n = co->size;
  size_t seg = segment_bytes(co) / co->esize, maxblk = fold__block_len(co->count, n, 0);
  if (seg == 0) seg = 1;
  if (seg > maxblk) seg = maxblk ? maxblk : 1;
  if (seg == maxblk && maxblk * co->esize >= 2 * FOLD__SEGMENT_MIN) seg = (maxblk + 1) / 2;
  size_t J = (maxblk + seg - 1) / seg;
  if (J > (size_t)(1 << 28))
    return fold__error(co->comm, FOLD_EINVAL,
                       "allreduce ring_segmented: %zu segments per block are too many (raise segment_bytes or FOLD_SEGMENT_BYTES)", J);
  co->u[0] = seg;
  co->v[0] = (int)J;
  co->v[1] = (int)J < n - 1 ? (int)J : n - 1;
  co->tmp_bytes = (size_t)co->v[1] * seg * co->esize;
  return FOLD_OK;
}

/* Byte range of segment j of block b (taken mod n). */
static void segment(const fold__coll *co, int b, int j, size_t *off, size_t *len) {
  int i = fold__mod(b, co->size);
  size_t blen = fold__block_len(co->count, co->size, i), seg = co->u[0], a = (size_t)j * seg;
  size_t e = a + seg < blen ? a + seg : blen;
  *off = (fold__block_start(co->count, co->size, i) + (a < blen ? a : blen)) * co->esize;
  *len = (a < blen ? e - a : 0) * co->esize;
}

static int seg_round(fold__coll *co, int k) {
  int n = co->size, r = co->rank, right = fold__ring_right(r, n), left = fold__ring_left(r, n);
  int J = co->v[0], Q = co->v[1];
  size_t off, len;
  if (k == 0) { /* one rank: the result is its own vector */
    if (n == 1 && !co->in_place) fold__co_copy(co, FOLD__B_RECV, 0, FOLD__B_SEND, 0, co->count * co->esize);
    return 1;
  }
  int own = co->in_place ? FOLD__B_RECV : FOLD__B_SEND; /* where untouched blocks are */
  int steps = 2 * (n - 1);
  if (steps == 0 || J == 0 || k > steps + J - 1) return 0;
  /* active steps: s in [0, steps) with j = k-1-s in [0, J) */
  int s_lo = k - J > 0 ? k - J : 0, s_hi = k - 1 < steps - 1 ? k - 1 : steps - 1;
  for (int s = s_lo; s <= s_hi; s++) {
    int j = k - 1 - s;
    if (s < n - 1) { /* reduce-scatter */
      size_t slot = (size_t)(j % Q) * co->u[0] * co->esize;
      segment(co, r - s, j, &off, &len);
      fold__co_send(co, right, s == 0 ? own : FOLD__B_RECV, off, len);
      segment(co, r - s - 1, j, &off, &len);
      fold__co_recv(co, left, FOLD__B_TMP, slot, len);
      fold__co_reduce(co, FOLD__B_RECV, off, FOLD__B_TMP, slot, own, off, len / co->esize);
    } else { /* allgather */
      int t = s - (n - 1);
      segment(co, r + 1 - t, j, &off, &len);
      fold__co_send(co, right, FOLD__B_RECV, off, len);
      segment(co, r - t, j, &off, &len);
      fold__co_recv(co, left, FOLD__B_RECV, off, len);
    }
  }
  return 1;
}

const fold__algo fold__allreduce_ring_segmented = {"ring_segmented", seg_init, seg_round, 0};
