/* gather_shm.c — gather through the shared collective area: allgather_shm.c's chunks, only the root copies out. */
#include "coll/shm_coll.h"

extern const fold__shm_kind fold__shm_gather_kind;
int fold__shm_gather_init(fold__coll *co);

static int gather_step(fold__coll *co) { return fold__shm_step(co, &fold__shm_gather_kind); }

const fold__algo fold__gather_shm = {"shm", fold__shm_gather_init, NULL, 1, fold__shm_usable, gather_step, fold__shm_fits, fold__shm_describe};
