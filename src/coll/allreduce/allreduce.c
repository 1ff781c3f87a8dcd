/* allreduce.c — fold_allreduce and fold_iallreduce: the algorithm table and the entry points. */
#include "coll/coll.h"

extern const fold__algo fold__allreduce_reduce_bcast, fold__allreduce_recursive_doubling,
    fold__allreduce_rabenseifner, fold__allreduce_ring, fold__allreduce_ring_segmented, fold__allreduce_direct;

extern const fold__algo fold__allreduce_shm;
extern const fold__algo fold__allreduce_ring_skip; /* src/coll/ring_skip.c */ /* shared-memory collectives: src/coll/shm_coll.c */

/* Names as in FOLD_ALGO; order is the index used by fold_comm_set_algo. */
const fold__algo *const fold__allreduce_algos[] = {
  &fold__allreduce_reduce_bcast, &fold__allreduce_recursive_doubling, &fold__allreduce_rabenseifner,
  &fold__allreduce_ring,         &fold__allreduce_ring_segmented,     &fold__allreduce_direct,
  &fold__allreduce_shm,          &fold__allreduce_ring_skip,          NULL,
};

int fold_iallreduce(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op, fold_comm *comm,
                    fold_request **req) {
  fold__coll_args a = {FOLD__COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, -1};
  if (req == NULL) return fold__error(comm, FOLD_EINVAL, "fold_iallreduce: req is NULL");
  return fold__coll_start_user(comm, "fold_iallreduce", &a, req);
}

int fold_allreduce(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op, fold_comm *comm) {
  fold__coll_args a = {FOLD__COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, -1};
  return fold__coll_run(comm, "fold_allreduce", &a);
}
