/* allreduce_shm.c — allreduce (and reduce) through the shared collective area of ranks on one host.
 *
 * Per chunk (the collective area's chunk loop, transport.h, runs it),
 * every rank copies its contribution into its own slot, then:
 *  - small calls (at most SMALL_BYTES): every rank reduces all n slots,
 *    in rank order 0..n-1, straight into its recvbuf. One flag exchange:
 *    the lowest latency, and every rank computes the same bits.
 *  - larger calls ("reduce-scatter, then allgather" in shared memory):
 *    rank r reduces sub-block r of the chunk across all n slots and writes
 *    it into its own slot (mid phase), then every rank copies every
 *    sub-block out of its owner's slot. Each rank reads S and reduces S/n:
 *    the reduction work is split n ways and the slots stay cache-hot, so
 *    the cost is about one pass over sendbuf and one over recvbuf.
 * Rank order is kept for non-commutative ops: a sub-block is combined as
 * ((s0 op s1) op s2) ... into recvbuf (the owner's own slot is one of the
 * inputs, so it cannot be the accumulator) and then copied to the slot.
 * Commutative ops accumulate in the owner's slot directly. (A
 * non-commutative reduce always takes the small path: non-roots have no
 * recvbuf.) FOLD_AVG divides
 * each chunk once its sum is complete. reduce_shm.c reuses all of this:
 * there only the root copies out.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/shm_coll.h"

/* At or below this many bytes a call takes the one-exchange path: the
 * extra reads (n slots per rank instead of one) cost less than a second
 * flag exchange, measured on a 2-core machine at n = 2 and 4.
 * FOLD_SHM_SMALL_BYTES overrides it (measurement knob). */
#define SMALL_BYTES (16u << 10)

static size_t small_bytes(void) {
  static _Atomic long cached = -1;
  long v = atomic_load_explicit(&cached, memory_order_relaxed);
  if (v < 0) {
    fold__pval p; /* a malformed value is warned about and the default used */
    v = fold__param_read(FOLD__P_SHM_SMALL_BYTES, &p) > 0 ? (long)p.u : (long)SMALL_BYTES;
    atomic_store_explicit(&cached, v, memory_order_relaxed);
  }
  return (size_t)v;
}

static int ar_init(fold__coll *co) {
  size_t m = fold__shm_elems(co, 1);
  size_t nch = m ? (co->count + m - 1) / m : 0;
  /* A non-commutative reduce keeps to the one-exchange path: its non-roots
   * have no recvbuf to accumulate a sub-block in rank order. */
  int big = co->count * co->esize > small_bytes();
  if (co->kind == FOLD__COLL_REDUCE && !co->commutative) big = 0;
  return fold__shm_init(co, m, nch, big);
}

/* Does this rank produce output? (reduce: the root only) */
static int outputs(const fold__coll *co) { return co->kind == FOLD__COLL_ALLREDUCE || co->rank == co->root; }

static void ar_fill(void *arg, const fold__area *a, size_t i, char *mine) {
  fold__coll *co = arg;
  (void)a;
  size_t len, off = fold__shm_chunk(co, i, co->count, &len);
  if (len) memcpy(mine, (const char *)co->sbuf + off * co->esize, len * co->esize);
}

/* Large calls: reduce my sub-block of chunk i across every slot, in rank order. */
static void ar_mid(void *arg, const fold__area *a, size_t i, int s) {
  fold__coll *co = arg;
  size_t es = co->esize, len, off = fold__shm_chunk(co, i, co->count, &len), sh;
  int n = a->size, me = a->rank;
  size_t lo = fold__shm_share(len, n, me, &sh);
  if (sh == 0) return;
  char *mine = fold__shm_slot(a, me, s) + lo * es;
  if (co->commutative) {
    for (int p = 0; p < n; p++)
      if (p != me) fold__op_reduce3(co->optab, co->op, co->dtype, mine, fold__shm_slot(a, p, s) + lo * es, mine, sh);
    return;
  }
  /* rank order: accumulate in recvbuf (reduce without a recvbuf on this
   * rank never gets here: see ar_init) */
  char *acc = (char *)co->rbuf + (off + lo) * es;
  fold__op_reduce3(co->optab, co->op, co->dtype, acc, fold__shm_slot(a, 0, s) + lo * es, fold__shm_slot(a, 1, s) + lo * es, sh);
  for (int p = 2; p < n; p++) fold__op_reduce3(co->optab, co->op, co->dtype, acc, acc, fold__shm_slot(a, p, s) + lo * es, sh);
  memcpy(mine, acc, sh * es);
}

static void ar_drain(void *arg, const fold__area *a, size_t i, int s) {
  fold__coll *co = arg;
  if (!outputs(co)) return;
  size_t es = co->esize, len, off = fold__shm_chunk(co, i, co->count, &len);
  int n = a->size;
  if (len == 0) return;
  char *out = (char *)co->rbuf + off * es;
  if (co->area.use_mid) {
    int keep_own = !co->commutative; /* my sub-block is in recvbuf already */
    for (int p = 0; p < n; p++) {
      size_t sh, lo = fold__shm_share(len, n, p, &sh);
      if (sh && !(keep_own && p == a->rank)) memcpy(out + lo * es, fold__shm_slot(a, p, s) + lo * es, sh * es);
    }
  } else {
    fold__op_reduce3(co->optab, co->op, co->dtype, out, fold__shm_slot(a, 0, s), fold__shm_slot(a, 1, s), len);
    for (int p = 2; p < n; p++) fold__op_reduce3(co->optab, co->op, co->dtype, out, out, fold__shm_slot(a, p, s), len);
  }
  fold__op_finish(co->op, co->dtype, out, len, n);
}

const fold__shm_kind fold__shm_reduce_kind = {ar_fill, ar_mid, ar_drain};

int fold__shm_reduce_init(fold__coll *co) { return ar_init(co); }

static int ar_step(fold__coll *co) { return fold__shm_step(co, &fold__shm_reduce_kind); }

const fold__algo fold__allreduce_shm = {"shm", ar_init, NULL, 1, fold__shm_usable, ar_step, fold__shm_fits, fold__shm_describe};
