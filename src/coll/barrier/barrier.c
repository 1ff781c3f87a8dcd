/* barrier.c — fold_barrier and fold_ibarrier: the algorithm table and the entry points. */
#include "coll/coll.h"

extern const fold__algo fold__barrier_dissemination;

extern const fold__algo fold__barrier_shm; /* shared-memory collectives: src/coll/shm_coll.c */

/* Names as in FOLD_ALGO; order is the index used by fold_comm_set_algo. */
const fold__algo *const fold__barrier_algos[] = {&fold__barrier_dissemination, &fold__barrier_shm, NULL};

int fold_ibarrier(fold_comm *comm, fold_request **req) {
  fold__coll_args a = {FOLD__COLL_BARRIER, NULL, NULL, 0, FOLD_UINT8, FOLD_SUM, -1};
  if (req == NULL) return fold__error(comm, FOLD_EINVAL, "fold_ibarrier: req is NULL");
  return fold__coll_start_user(comm, "fold_ibarrier", &a, req);
}

int fold_barrier(fold_comm *comm) {
  fold__coll_args a = {FOLD__COLL_BARRIER, NULL, NULL, 0, FOLD_UINT8, FOLD_SUM, -1};
  return fold__coll_run(comm, "fold_barrier", &a);
}
