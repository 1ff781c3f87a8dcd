/* gather.c — fold_gather and fold_igather: the algorithm table and the entry points. */
#include "coll/coll.h"

extern const fold__algo fold__gather_binomial, fold__gather_linear;

extern const fold__algo fold__gather_shm; /* shared-memory collectives: src/coll/shm_coll.c */

/* Names as in FOLD_ALGO; order is the index used by fold_comm_set_algo. */
const fold__algo *const fold__gather_algos[] = {&fold__gather_binomial, &fold__gather_linear, &fold__gather_shm, NULL};

int fold_igather(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, int root, fold_comm *comm, fold_request **req) {
  fold__coll_args a = {FOLD__COLL_GATHER, sendbuf, recvbuf, sendcount, dtype, FOLD_SUM, root};
  if (req == NULL) return fold__error(comm, FOLD_EINVAL, "fold_igather: req is NULL");
  return fold__coll_start_user(comm, "fold_igather", &a, req);
}

int fold_gather(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, int root, fold_comm *comm) {
  fold__coll_args a = {FOLD__COLL_GATHER, sendbuf, recvbuf, sendcount, dtype, FOLD_SUM, root};
  return fold__coll_run(comm, "fold_gather", &a);
}
