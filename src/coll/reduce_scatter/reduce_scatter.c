/* reduce_scatter.c — fold_reduce_scatter and fold_ireduce_scatter: the algorithm table and the entry points. */
#include "coll/coll.h"

extern const fold__algo fold__reduce_scatter_recursive_halving, fold__reduce_scatter_ring, fold__reduce_scatter_pairwise;

extern const fold__algo fold__reduce_scatter_shm;
extern const fold__algo fold__reduce_scatter_ring_skip; /* src/coll/ring_skip.c */ /* shared-memory collectives: src/coll/shm_coll.c */

/* Names as in FOLD_ALGO; order is the index used by fold_comm_set_algo. */
const fold__algo *const fold__reduce_scatter_algos[] = {&fold__reduce_scatter_recursive_halving, &fold__reduce_scatter_ring, &fold__reduce_scatter_pairwise, &fold__reduce_scatter_shm, &fold__reduce_scatter_ring_skip, NULL};

int fold_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, fold_op op, fold_comm *comm, fold_request **req) {
  fold__coll_args a = {FOLD__COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, -1};
  if (req == NULL) return fold__error(comm, FOLD_EINVAL, "fold_ireduce_scatter: req is NULL");
  return fold__coll_start_user(comm, "fold_ireduce_scatter", &a, req);
}

int fold_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, fold_op op, fold_comm *comm) {
  fold__coll_args a = {FOLD__COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, -1};
  return fold__coll_run(comm, "fold_reduce_scatter", &a);
}
