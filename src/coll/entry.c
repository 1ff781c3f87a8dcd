/* entry.c — the public collective calls, blocking and nonblocking: each fills fold__coll_args for coll.c to check and run. */
#include "coll/coll.h"

/* Each pair, fold_<c> (start and wait) and fold_i<c> (start; the request is
 * the user's), fills the same fold__coll_args: the collectives without an
 * op pass FOLD_SUM and those without a root -1, which the signature
 * carries as they are. */

int fold_ibroadcast(void *buf, size_t count, fold_dtype dtype, int root, fold_comm *comm, fold_request **req) {
  fold__coll_args a = {FOLD__COLL_BROADCAST, NULL, buf, count, dtype, FOLD_SUM, root};
  if (req == NULL) return fold__error(comm, FOLD_EINVAL, "fold_ibroadcast: req is NULL");
  return fold__coll_start_user(comm, "fold_ibroadcast", &a, req);
}

int fold_broadcast(void *buf, size_t count, fold_dtype dtype, int root, fold_comm *comm) {
  fold__coll_args a = {FOLD__COLL_BROADCAST, NULL, buf, count, dtype, FOLD_SUM, root};
  return fold__coll_run(comm, "fold_broadcast", &a);
}

int fold_ireduce(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op, int root, fold_comm *comm, fold_request **req) {
  fold__coll_args a = {FOLD__COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root};
  if (req == NULL) return fold__error(comm, FOLD_EINVAL, "fold_ireduce: req is NULL");
  return fold__coll_start_user(comm, "fold_ireduce", &a, req);
}

int fold_reduce(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op, int root, fold_comm *comm) {
  fold__coll_args a = {FOLD__COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root};
  return fold__coll_run(comm, "fold_reduce", &a);
}

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

int fold_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, fold_op op, fold_comm *comm, fold_request **req) {
  fold__coll_args a = {FOLD__COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, -1};
  if (req == NULL) return fold__error(comm, FOLD_EINVAL, "fold_ireduce_scatter: req is NULL");
  return fold__coll_start_user(comm, "fold_ireduce_scatter", &a, req);
}

int fold_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, fold_op op, fold_comm *comm) {
  fold__coll_args a = {FOLD__COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, -1};
  return fold__coll_run(comm, "fold_reduce_scatter", &a);
}

int fold_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, fold_comm *comm, fold_request **req) {
  fold__coll_args a = {FOLD__COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, FOLD_SUM, -1};
  if (req == NULL) return fold__error(comm, FOLD_EINVAL, "fold_iallgather: req is NULL");
  return fold__coll_start_user(comm, "fold_iallgather", &a, req);
}

int fold_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, fold_comm *comm) {
  fold__coll_args a = {FOLD__COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, FOLD_SUM, -1};
  return fold__coll_run(comm, "fold_allgather", &a);
}

int fold_igather(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, int root, fold_comm *comm, fold_request **req) {
  fold__coll_args a = {FOLD__COLL_GATHER, sendbuf, recvbuf, sendcount, dtype, FOLD_SUM, root};
  if (req == NULL) return fold__error(comm, FOLD_EINVAL, "fold_igather: req is NULL");
  return fold__coll_start_user(comm, "fold_igather", &a, req);
}

int fold_gather(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, int root, fold_comm *comm) {
  fold__coll_args a = {FOLD__COLL_GATHER, sendbuf, recvbuf, sendcount, dtype, FOLD_SUM, root};
  return fold__coll_run(comm, "fold_gather", &a);
}

int fold_iscatter(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, int root, fold_comm *comm, fold_request **req) {
  fold__coll_args a = {FOLD__COLL_SCATTER, sendbuf, recvbuf, recvcount, dtype, FOLD_SUM, root};
  if (req == NULL) return fold__error(comm, FOLD_EINVAL, "fold_iscatter: req is NULL");
  return fold__coll_start_user(comm, "fold_iscatter", &a, req);
}

int fold_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, int root, fold_comm *comm) {
  fold__coll_args a = {FOLD__COLL_SCATTER, sendbuf, recvbuf, recvcount, dtype, FOLD_SUM, root};
  return fold__coll_run(comm, "fold_scatter", &a);
}

int fold_ialltoall(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_comm *comm, fold_request **req) {
  fold__coll_args a = {FOLD__COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, FOLD_SUM, -1};
  if (req == NULL) return fold__error(comm, FOLD_EINVAL, "fold_ialltoall: req is NULL");
  return fold__coll_start_user(comm, "fold_ialltoall", &a, req);
}

int fold_alltoall(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_comm *comm) {
  fold__coll_args a = {FOLD__COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, FOLD_SUM, -1};
  return fold__coll_run(comm, "fold_alltoall", &a);
}

int fold_ibarrier(fold_comm *comm, fold_request **req) {
  fold__coll_args a = {FOLD__COLL_BARRIER, NULL, NULL, 0, FOLD_UINT8, FOLD_SUM, -1};
  if (req == NULL) return fold__error(comm, FOLD_EINVAL, "fold_ibarrier: req is NULL");
  return fold__coll_start_user(comm, "fold_ibarrier", &a, req);
}

int fold_barrier(fold_comm *comm) {
  fold__coll_args a = {FOLD__COLL_BARRIER, NULL, NULL, 0, FOLD_UINT8, FOLD_SUM, -1};
  return fold__coll_run(comm, "fold_barrier", &a);
}
