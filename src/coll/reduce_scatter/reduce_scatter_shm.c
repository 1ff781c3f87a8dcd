/* reduce_scatter_shm.c — reduce_scatter through the shared collective area.
 *
 * A slot holds n pieces of m elements: chunk i carries elements
 * [i*m, i*m + m) of each of the n blocks of a rank's sendbuf (as in
 * alltoall_shm.c). Rank r then combines piece r of every slot, in rank
 * order 0..n-1 (so non-commutative ops are served), straight into its
 * recvbuf: one flag exchange, each rank reads S/n... n times, i.e. its
 * whole share once from every rank. In place, recvbuf is the rank's own
 * block of sendbuf, which was copied to the slot before it is written. */
#include "coll/shm_coll.h"

void fold__shm_fill_blocks(void *arg, const fold__area *a, size_t i, char *mine);

static int rs_init(fold__coll *co) {
  size_t m = fold__shm_elems(co, co->size);
  return fold__shm_init(co, m, m ? (co->count + m - 1) / m : 0, 0);
}

static void rs_drain(void *arg, const fold__area *a, size_t i, int s) {
  fold__coll *co = arg;
  size_t es = co->esize, m = co->u[FOLD__SHM_U_ELEMS], len, off = fold__shm_chunk(co, i, co->count, &len);
  if (len == 0) return;
  char *out = (char *)co->rbuf + off * es;
  size_t piece = (size_t)a->rank * m * es;
  fold__op_reduce3(co->optab, co->op, co->dtype, out, fold__shm_slot(a, 0, s) + piece, fold__shm_slot(a, 1, s) + piece, len);
  for (int p = 2; p < a->size; p++)
    fold__op_reduce3(co->optab, co->op, co->dtype, out, out, fold__shm_slot(a, p, s) + piece, len);
  fold__op_finish(co->op, co->dtype, out, len, a->size);
}

static const fold__shm_kind rs_kind = {fold__shm_fill_blocks, NULL, rs_drain};
static int rs_step(fold__coll *co) { return fold__shm_step(co, &rs_kind); }

const fold__algo fold__reduce_scatter_shm = {"shm", rs_init, NULL, 1, fold__shm_usable, rs_step, fold__shm_fits, fold__shm_describe};
