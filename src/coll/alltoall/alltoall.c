/* alltoall.c — fold_alltoall and fold_ialltoall: the algorithm table and the entry points. */
#include "coll/coll.h"

extern const fold__algo fold__alltoall_pairwise, fold__alltoall_bruck;

extern const fold__algo fold__alltoall_shm; /* shared-memory collectives: src/coll/shm_coll.c */

/* Names as in FOLD_ALGO; order is the index used by fold_comm_set_algo. */
const fold__algo *const fold__alltoall_algos[] = {&fold__alltoall_pairwise, &fold__alltoall_bruck, &fold__alltoall_shm, NULL};

int fold_ialltoall(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_comm *comm, fold_request **req) {
  fold__coll_args a = {FOLD__COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, FOLD_SUM, -1};
  if (req == NULL) return fold__error(comm, FOLD_EINVAL, "fold_ialltoall: req is NULL");
  return fold__coll_start_user(comm, "fold_ialltoall", &a, req);
}

int fold_alltoall(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_comm *comm) {
  fold__coll_args a = {FOLD__COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, FOLD_SUM, -1};
  return fold__coll_run(comm, "fold_alltoall", &a);
}
