/* allgather.c — fold_allgather and fold_iallgather: the algorithm table and the entry points. */
#include "coll/coll.h"

extern const fold__algo fold__allgather_recursive_doubling, fold__allgather_bruck, fold__allgather_ring;

extern const fold__algo fold__allgather_shm; /* shared-memory collectives: src/coll/shm_coll.c */

/* Names as in FOLD_ALGO; order is the index used by fold_comm_set_algo. */
const fold__algo *const fold__allgather_algos[] = {&fold__allgather_recursive_doubling, &fold__allgather_bruck, &fold__allgather_ring, &fold__allgather_shm, NULL};

int fold_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, fold_comm *comm, fold_request **req) {
  fold__coll_args a = {FOLD__COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, FOLD_SUM, -1};
  if (req == NULL) return fold__error(comm, FOLD_EINVAL, "fold_iallgather: req is NULL");
  return fold__coll_start_user(comm, "fold_iallgather", &a, req);
}

int fold_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, fold_comm *comm) {
  fold__coll_args a = {FOLD__COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, FOLD_SUM, -1};
  return fold__coll_run(comm, "fold_allgather", &a);
}
