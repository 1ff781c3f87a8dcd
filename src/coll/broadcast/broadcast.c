/* broadcast.c — fold_broadcast and fold_ibroadcast: the algorithm table and the entry points. */
#include "coll/coll.h"

extern const fold__algo fold__broadcast_binomial, fold__broadcast_scatter_allgather, fold__broadcast_pipeline;

extern const fold__algo fold__broadcast_shm; /* shared-memory collectives: src/coll/shm_coll.c */

/* Names as in FOLD_ALGO; order is the index used by fold_comm_set_algo. */
const fold__algo *const fold__broadcast_algos[] = {&fold__broadcast_binomial, &fold__broadcast_scatter_allgather, &fold__broadcast_pipeline, &fold__broadcast_shm, NULL};

int fold_ibroadcast(void *buf, size_t count, fold_dtype dtype, int root, fold_comm *comm, fold_request **req) {
  fold__coll_args a = {FOLD__COLL_BROADCAST, NULL, buf, count, dtype, FOLD_SUM, root};
  if (req == NULL) return fold__error(comm, FOLD_EINVAL, "fold_ibroadcast: req is NULL");
  return fold__coll_start_user(comm, "fold_ibroadcast", &a, req);
}

int fold_broadcast(void *buf, size_t count, fold_dtype dtype, int root, fold_comm *comm) {
  fold__coll_args a = {FOLD__COLL_BROADCAST, NULL, buf, count, dtype, FOLD_SUM, root};
  return fold__coll_run(comm, "fold_broadcast", &a);
}
