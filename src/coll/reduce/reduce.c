/* reduce.c — fold_reduce and fold_ireduce: the algorithm table and the entry points. */
#include "coll/coll.h"

extern const fold__algo fold__reduce_binomial, fold__reduce_rabenseifner;

extern const fold__algo fold__reduce_shm; /* shared-memory collectives: src/coll/shm_coll.c */

/* Names as in FOLD_ALGO; order is the index used by fold_comm_set_algo. */
const fold__algo *const fold__reduce_algos[] = {&fold__reduce_binomial, &fold__reduce_rabenseifner, &fold__reduce_shm, NULL};

int fold_ireduce(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op, int root, fold_comm *comm, fold_request **req) {
  fold__coll_args a = {FOLD__COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root};
  if (req == NULL) return fold__error(comm, FOLD_EINVAL, "fold_ireduce: req is NULL");
  return fold__coll_start_user(comm, "fold_ireduce", &a, req);
}

int fold_reduce(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op, int root, fold_comm *comm) {
  fold__coll_args a = {FOLD__COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root};
  return fold__coll_run(comm, "fold_reduce", &a);
}
