/* scatter_shm.c — scatter through the shared collective area.
 *
 * A slot holds n pieces of m elements: chunk i carries elements
 * [i*m, i*m + m) of every rank's block. The root copies them in; rank p
 * copies piece p out of the root's slot (the root too, unless in place). */
#include <string.h>

#include "coll/shm_coll.h"

static int scatter_init(fold__coll *co) {
  size_t m = fold__shm_elems(co, co->size);
  return fold__shm_init(co, m, m ? (co->count + m - 1) / m : 0, 0);
}

static void scatter_fill(void *arg, const fold__area *a, size_t i, char *mine) {
  fold__coll *co = arg;
  if (co->rank != co->root) return;
  size_t es = co->esize, m = co->u[FOLD__SHM_U_ELEMS], len, off = fold__shm_chunk(co, i, co->count, &len);
  if (len == 0) return;
  for (int p = 0; p < a->size; p++)
    memcpy(mine + (size_t)p * m * es, (const char *)co->sbuf + ((size_t)p * co->count + off) * es, len * es);
}

static void scatter_drain(void *arg, const fold__area *a, size_t i, int s) {
  fold__coll *co = arg;
  if (co->rank == co->root && co->in_place) return;
  size_t es = co->esize, m = co->u[FOLD__SHM_U_ELEMS], len, off = fold__shm_chunk(co, i, co->count, &len);
  if (len) memcpy((char *)co->rbuf + off * es, fold__shm_slot(a, co->root, s) + (size_t)a->rank * m * es, len * es);
}

static const fold__shm_kind scatter_kind = {scatter_fill, NULL, scatter_drain};
static int scatter_step(fold__coll *co) { return fold__shm_step(co, &scatter_kind); }

const fold__algo fold__scatter_shm = {"shm", scatter_init, NULL, 1, fold__shm_usable, scatter_step, fold__shm_fits, fold__shm_describe};
