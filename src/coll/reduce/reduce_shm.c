/* reduce_shm.c — reduce through the shared collective area: allreduce_shm.c's chunk work, with only the root copying out.
 *
 * Small calls: the root reduces all n slots in rank order into recvbuf.
 * Larger ones: every rank reduces its sub-block into its own slot, then the
 * root gathers the sub-blocks; the reduction work is spread over all ranks
 * and the root reads each byte once. */
#include "coll/shm_coll.h"

extern const fold__shm_kind fold__shm_reduce_kind;
int fold__shm_reduce_init(fold__coll *co);

static int reduce_step(fold__coll *co) { return fold__shm_step(co, &fold__shm_reduce_kind); }

const fold__algo fold__reduce_shm = {"shm", fold__shm_reduce_init, NULL, 1, fold__shm_usable, reduce_step, fold__shm_fits, fold__shm_describe};
