/* broadcast_pipeline.c — segmented chain broadcast root -> root+1 -> ... -> root+n-1, several segments in flight. */
#include <stdlib.h>

#include "coll/coll.h"
#include "patterns/rooted.h"

/* The buffer is cut into nseg segments of seg bytes (the last may be
 * shorter): seg is FOLD_SEGMENT_BYTES if set (a test knob to force many
 * segments), else 256 KiB, rounded down to whole elements. Link i is the
 * hop from virtual rank i to i+1 (vr = (rank - root) mod n), i = 0 .. n-2.
 * Round t moves segment t - i on every link i with 0 <= t - i < nseg: a
 * wavefront, so vr sends segment t - vr (received in round t-1) and
 * receives segment t - vr + 1 in the same round.
 *
 *   round:    0    1    2    3    4         (n = 4, nseg = 3)
 *   link 0:   s0   s1   s2
 *   link 1:        s0   s1   s2
 *   link 2:             s0   s1   s2
 *
 * The last segment leaves link n-2 in round (nseg-1) + (n-2), so there are
 * nseg + n - 2 rounds (none if n = 1 or the buffer is empty).
 * Cost: (n-1) alpha + (nseg + n - 2) seg beta: the root streams its
 * segments back to back and each hop adds one alpha and one segment time
 * (as on fold's simulator; (nseg + n - 2)(alpha + seg beta) if every round
 * waits out its latency). For large S about S beta + (n-2) seg beta, against
 * ceil(log2 n) S beta for the binomial tree. */

enum { PIPELINE_DEFAULT_SEGMENT = 256 * 1024 };

static int pipeline_init(fold__coll *co) {
  /* the call's segment_bytes (or FOLD_SEGMENT_BYTES) overrides the default */
  size_t bytes = co->count * co->esize, seg = co->seg_bytes ? co->seg_bytes : PIPELINE_DEFAULT_SEGMENT;
  seg = seg / co->esize * co->esize;
  if (seg == 0) seg = co->esize;
  /* keep the round number an int: at most 2^30 segments */
  while (bytes / seg > ((size_t)1 << 30)) seg *= 2;
  size_t nseg = bytes / seg + (bytes % seg != 0);
  co->u[0] = seg;
  co->u[1] = nseg;
  co->v[0] = (co->size > 1 && nseg > 0) ? (int)nseg + co->size - 2 : 0;
  return FOLD_OK;
}

/* Bytes [off, off+len) of segment i, or len 0 if there is no segment i. */
static void segment(const fold__coll *co, long i, size_t *off, size_t *len) {
  size_t seg = co->u[0], nseg = co->u[1], bytes = co->count * co->esize;
  *off = 0;
  *len = 0;
  if (i < 0 || (size_t)i >= nseg) return;
  *off = (size_t)i * seg;
  *len = bytes - *off < seg ? bytes - *off : seg;
}

static int pipeline_round(fold__coll *co, int t) {
  int n = co->size, vr = fold__vrank(co->rank, co->root, n);
  size_t off, len;
  if (t >= co->v[0]) return 0;
  if (vr < n - 1) { /* link vr: segment t - vr */
    segment(co, (long)t - vr, &off, &len);
    fold__co_send(co, fold__ring_right(co->rank, n), FOLD__B_RECV, off, len);
  }
  if (vr > 0) { /* link vr-1: segment t - vr + 1 */
    segment(co, (long)t - vr + 1, &off, &len);
    fold__co_recv(co, fold__ring_left(co->rank, n), FOLD__B_RECV, off, len);
  }
  return 1;
}

const fold__algo fold__broadcast_pipeline = {"pipeline", pipeline_init, pipeline_round, 0};
