/* scatter.c — fold_scatter and fold_iscatter: the algorithm table and the entry points. */
#include "coll/coll.h"

extern const fold__algo fold__scatter_binomial, fold__scatter_linear;

extern const fold__algo fold__scatter_shm; /* shared-memory collectives: src/coll/shm_coll.c */

/* Names as in FOLD_ALGO; order is the index used by fold_comm_set_algo. */
const fold__algo *const fold__scatter_algos[] = {&fold__scatter_binomial, &fold__scatter_linear, &fold__scatter_shm, NULL};

int fold_iscatter(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, int root, fold_comm *comm, fold_request **req) {
  fold__coll_args a = {FOLD__COLL_SCATTER, sendbuf, recvbuf, recvcount, dtype, FOLD_SUM, root};
  if (req == NULL) return fold__error(comm, FOLD_EINVAL, "fold_iscatter: req is NULL");
  return fold__coll_start_user(comm, "fold_iscatter", &a, req);
}

int fold_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, int root, fold_comm *comm) {
  fold__coll_args a = {FOLD__COLL_SCATTER, sendbuf, recvbuf, recvcount, dtype, FOLD_SUM, root};
  return fold__coll_run(comm, "fold_scatter", &a);
}
