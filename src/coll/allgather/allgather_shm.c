/* allgather_shm.c — allgather through the shared collective area.
 *
 * Chunk i is elements [i*m, i*m + m) of every rank's block (m = one slot):
 * each rank copies its part in, then copies every rank's part out to its
 * block of recvbuf (its own too, unless in place). */
#include <string.h>

#include "coll/shm_coll.h"

static int ag_init(fold__coll *co) {
  size_t m = fold__shm_elems(co, 1);
  return fold__shm_init(co, m, m ? (co->count + m - 1) / m : 0, 0);
}

static void ag_fill(void *arg, const fold__area *a, size_t i, char *mine) {
  fold__coll *co = arg;
  (void)a;
  size_t len, off = fold__shm_chunk(co, i, co->count, &len);
  if (len) memcpy(mine, (const char *)co->sbuf + off * co->esize, len * co->esize);
}

/* gather_shm.c reuses this with only the root copying out */
static void ag_drain(void *arg, const fold__area *a, size_t i, int s) {
  fold__coll *co = arg;
  if (co->kind == FOLD__COLL_GATHER && co->rank != co->root) return;
  size_t es = co->esize, len, off = fold__shm_chunk(co, i, co->count, &len);
  if (len == 0) return;
  for (int p = 0; p < a->size; p++) {
    if (p == a->rank && co->in_place) continue;
    memcpy((char *)co->rbuf + ((size_t)p * co->count + off) * es, fold__shm_slot(a, p, s), len * es);
  }
}

const fold__shm_kind fold__shm_gather_kind = {ag_fill, NULL, ag_drain};
int fold__shm_gather_init(fold__coll *co) { return ag_init(co); }
static int ag_step(fold__coll *co) { return fold__shm_step(co, &fold__shm_gather_kind); }

const fold__algo fold__allgather_shm = {"shm", ag_init, NULL, 1, fold__shm_usable, ag_step, fold__shm_fits, fold__shm_describe};
