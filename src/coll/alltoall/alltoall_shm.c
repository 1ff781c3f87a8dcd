/* alltoall_shm.c — alltoall through the shared collective area.
 *
 * A slot holds n pieces of m elements: chunk i carries elements
 * [i*m, i*m + m) of each of the n blocks of a rank's sendbuf. Every rank
 * copies its n pieces in, then copies piece r of every rank p's slot to
 * block p of its recvbuf. Each byte is copied twice and read once by its
 * receiver; no rank waits for a particular partner. */
#include <string.h>

#include "coll/shm_coll.h"

static int a2a_init(fold__coll *co) {
  size_t m = fold__shm_elems(co, co->size);
  return fold__shm_init(co, m, m ? (co->count + m - 1) / m : 0, 0);
}

/* reduce_scatter_shm.c fills the same way */
void fold__shm_fill_blocks(void *arg, const fold__area *a, size_t i, char *mine) {
  fold__coll *co = arg;
  size_t es = co->esize, m = co->u[FOLD__SHM_U_ELEMS], len, off = fold__shm_chunk(co, i, co->count, &len);
  if (len == 0) return;
  for (int p = 0; p < a->size; p++)
    memcpy(mine + (size_t)p * m * es, (const char *)co->sbuf + ((size_t)p * co->count + off) * es, len * es);
}

static void a2a_drain(void *arg, const fold__area *a, size_t i, int s) {
  fold__coll *co = arg;
  size_t es = co->esize, m = co->u[FOLD__SHM_U_ELEMS], len, off = fold__shm_chunk(co, i, co->count, &len);
  if (len == 0) return;
  for (int p = 0; p < a->size; p++)
    memcpy((char *)co->rbuf + ((size_t)p * co->count + off) * es, fold__shm_slot(a, p, s) + (size_t)a->rank * m * es,
           len * es);
}

static const fold__shm_kind a2a_kind = {fold__shm_fill_blocks, NULL, a2a_drain};
static int a2a_step(fold__coll *co) { return fold__shm_step(co, &a2a_kind); }

const fold__algo fold__alltoall_shm = {"shm", a2a_init, NULL, 1, fold__shm_usable, a2a_step, fold__shm_fits};
