/* broadcast_shm.c — broadcast through the shared collective area, pipelined chunk by chunk.
 *
 * The root copies chunk i of buf into its slot; every other rank copies it
 * out of the root's slot. With two slots the root's copy-in of chunk i + 1
 * overlaps the others' copy-out of chunk i. Every rank reads S once. */
#include <string.h>

#include "coll/shm_coll.h"

static int bcast_init(fold__coll *co) {
  size_t m = fold__shm_elems(co, 1);
  return fold__shm_init(co, m, m ? (co->count + m - 1) / m : 0, 0);
}

static void bcast_fill(void *arg, const fold__area *a, size_t i, char *mine) {
  fold__coll *co = arg;
  (void)a;
  if (co->rank != co->root) return;
  size_t len, off = fold__shm_chunk(co, i, co->count, &len);
  if (len) memcpy(mine, (char *)co->rbuf + off * co->esize, len * co->esize);
}

static void bcast_drain(void *arg, const fold__area *a, size_t i, int s) {
  fold__coll *co = arg;
  if (co->rank == co->root) return;
  size_t len, off = fold__shm_chunk(co, i, co->count, &len);
  if (len) memcpy((char *)co->rbuf + off * co->esize, fold__shm_slot(a, co->root, s), len * co->esize);
}

static const fold__shm_kind bcast_kind = {bcast_fill, NULL, bcast_drain};
static int bcast_step(fold__coll *co) { return fold__shm_step(co, &bcast_kind); }

const fold__algo fold__broadcast_shm = {"shm", bcast_init, NULL, 1, fold__shm_usable, bcast_step, fold__shm_fits, fold__shm_describe};
