/* entry.c — the public collective calls, blocking and nonblocking, plain and with per-call options: each fills fold__coll_args for coll.c to check and run. */
#include "coll/coll.h"

/* Each collective has four calls: fold_<c> and fold_<c>_opts (start and
 * wait), fold_i<c> and fold_i<c>_opts (start; the request is the user's).
 * The plain calls are the _opts ones with opts NULL. All fill the same
 * fold__coll_args: the collectives without an op pass FOLD_SUM and those
 * without a root -1, which the signature carries as they are. */

static int blocking(fold_comm *c, const char *name, fold__coll_args a, const fold_coll_opts *opts) {
  a.opts = opts;
  return fold__coll_run(c, name, &a);
}

static int nonblocking(fold_comm *c, const char *name, fold__coll_args a, const fold_coll_opts *opts,
                       fold_request **req) {
  if (req == NULL) return fold__error(c, FOLD_EINVAL, "%s: req is NULL", name);
  a.opts = opts;
  return fold__coll_start_user(c, name, &a, req);
}

#define ARGS(kind, sbuf, rbuf, count, dtype, op, root) ((fold__coll_args){kind, sbuf, rbuf, count, dtype, op, root, 0, NULL})

/* ---- broadcast ---- */
int fold_broadcast_opts(void *buf, size_t count, fold_dtype dtype, int root, fold_comm *comm, const fold_coll_opts *opts) {
  return blocking(comm, "fold_broadcast", ARGS(FOLD__COLL_BROADCAST, NULL, buf, count, dtype, FOLD_SUM, root), opts);
}
int fold_ibroadcast_opts(void *buf, size_t count, fold_dtype dtype, int root, fold_comm *comm, const fold_coll_opts *opts,
                         fold_request **req) {
  return nonblocking(comm, "fold_ibroadcast", ARGS(FOLD__COLL_BROADCAST, NULL, buf, count, dtype, FOLD_SUM, root), opts,
                     req);
}
int fold_broadcast(void *buf, size_t count, fold_dtype dtype, int root, fold_comm *comm) {
  return blocking(comm, "fold_broadcast", ARGS(FOLD__COLL_BROADCAST, NULL, buf, count, dtype, FOLD_SUM, root), NULL);
}
int fold_ibroadcast(void *buf, size_t count, fold_dtype dtype, int root, fold_comm *comm, fold_request **req) {
  return nonblocking(comm, "fold_ibroadcast", ARGS(FOLD__COLL_BROADCAST, NULL, buf, count, dtype, FOLD_SUM, root), NULL,
                     req);
}

/* ---- reduce ---- */
int fold_reduce_opts(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op, int root,
                     fold_comm *comm, const fold_coll_opts *opts) {
  return blocking(comm, "fold_reduce", ARGS(FOLD__COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root), opts);
}
int fold_ireduce_opts(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op, int root,
                      fold_comm *comm, const fold_coll_opts *opts, fold_request **req) {
  return nonblocking(comm, "fold_ireduce", ARGS(FOLD__COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root), opts, req);
}
int fold_reduce(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op, int root,
                fold_comm *comm) {
  return blocking(comm, "fold_reduce", ARGS(FOLD__COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root), NULL);
}
int fold_ireduce(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op, int root,
                 fold_comm *comm, fold_request **req) {
  return nonblocking(comm, "fold_ireduce", ARGS(FOLD__COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root), NULL, req);
}

/* ---- allreduce ---- */
int fold_allreduce_opts(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op,
                        fold_comm *comm, const fold_coll_opts *opts) {
  return blocking(comm, "fold_allreduce", ARGS(FOLD__COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, -1), opts);
}
int fold_iallreduce_opts(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op,
                         fold_comm *comm, const fold_coll_opts *opts, fold_request **req) {
  return nonblocking(comm, "fold_iallreduce", ARGS(FOLD__COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, -1), opts,
                     req);
}
int fold_allreduce(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op, fold_comm *comm) {
  return blocking(comm, "fold_allreduce", ARGS(FOLD__COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, -1), NULL);
}
int fold_iallreduce(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op, fold_comm *comm,
                    fold_request **req) {
  return nonblocking(comm, "fold_iallreduce", ARGS(FOLD__COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, -1), NULL,
                     req);
}

/* ---- reduce_scatter ---- */
int fold_reduce_scatter_opts(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, fold_op op,
                             fold_comm *comm, const fold_coll_opts *opts) {
  return blocking(comm, "fold_reduce_scatter",
                  ARGS(FOLD__COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, -1), opts);
}
int fold_ireduce_scatter_opts(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, fold_op op,
                              fold_comm *comm, const fold_coll_opts *opts, fold_request **req) {
  return nonblocking(comm, "fold_ireduce_scatter",
                     ARGS(FOLD__COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, -1), opts, req);
}
int fold_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, fold_op op,
                        fold_comm *comm) {
  return blocking(comm, "fold_reduce_scatter",
                  ARGS(FOLD__COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, -1), NULL);
}
int fold_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, fold_op op,
                         fold_comm *comm, fold_request **req) {
  return nonblocking(comm, "fold_ireduce_scatter",
                     ARGS(FOLD__COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, -1), NULL, req);
}

/* ---- allgather ---- */
int fold_allgather_opts(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, fold_comm *comm,
                        const fold_coll_opts *opts) {
  return blocking(comm, "fold_allgather", ARGS(FOLD__COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, FOLD_SUM, -1),
                  opts);
}
int fold_iallgather_opts(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, fold_comm *comm,
                         const fold_coll_opts *opts, fold_request **req) {
  return nonblocking(comm, "fold_iallgather",
                     ARGS(FOLD__COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, FOLD_SUM, -1), opts, req);
}
int fold_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, fold_comm *comm) {
  return blocking(comm, "fold_allgather", ARGS(FOLD__COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, FOLD_SUM, -1),
                  NULL);
}
int fold_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, fold_comm *comm,
                    fold_request **req) {
  return nonblocking(comm, "fold_iallgather",
                     ARGS(FOLD__COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, FOLD_SUM, -1), NULL, req);
}

/* ---- gather ---- */
int fold_gather_opts(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, int root, fold_comm *comm,
                     const fold_coll_opts *opts) {
  return blocking(comm, "fold_gather", ARGS(FOLD__COLL_GATHER, sendbuf, recvbuf, sendcount, dtype, FOLD_SUM, root),
                  opts);
}
int fold_igather_opts(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, int root,
                      fold_comm *comm, const fold_coll_opts *opts, fold_request **req) {
  return nonblocking(comm, "fold_igather", ARGS(FOLD__COLL_GATHER, sendbuf, recvbuf, sendcount, dtype, FOLD_SUM, root),
                     opts, req);
}
int fold_gather(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, int root, fold_comm *comm) {
  return blocking(comm, "fold_gather", ARGS(FOLD__COLL_GATHER, sendbuf, recvbuf, sendcount, dtype, FOLD_SUM, root),
                  NULL);
}
int fold_igather(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, int root, fold_comm *comm,
                 fold_request **req) {
  return nonblocking(comm, "fold_igather", ARGS(FOLD__COLL_GATHER, sendbuf, recvbuf, sendcount, dtype, FOLD_SUM, root),
                     NULL, req);
}

/* ---- scatter ---- */
int fold_scatter_opts(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, int root,
                      fold_comm *comm, const fold_coll_opts *opts) {
  return blocking(comm, "fold_scatter", ARGS(FOLD__COLL_SCATTER, sendbuf, recvbuf, recvcount, dtype, FOLD_SUM, root),
                  opts);
}
int fold_iscatter_opts(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, int root,
                       fold_comm *comm, const fold_coll_opts *opts, fold_request **req) {
  return nonblocking(comm, "fold_iscatter",
                     ARGS(FOLD__COLL_SCATTER, sendbuf, recvbuf, recvcount, dtype, FOLD_SUM, root), opts, req);
}
int fold_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, int root, fold_comm *comm) {
  return blocking(comm, "fold_scatter", ARGS(FOLD__COLL_SCATTER, sendbuf, recvbuf, recvcount, dtype, FOLD_SUM, root),
                  NULL);
}
int fold_iscatter(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, int root, fold_comm *comm,
                  fold_request **req) {
  return nonblocking(comm, "fold_iscatter",
                     ARGS(FOLD__COLL_SCATTER, sendbuf, recvbuf, recvcount, dtype, FOLD_SUM, root), NULL, req);
}

/* ---- alltoall ---- */
int fold_alltoall_opts(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_comm *comm,
                       const fold_coll_opts *opts) {
  return blocking(comm, "fold_alltoall", ARGS(FOLD__COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, FOLD_SUM, -1), opts);
}
int fold_ialltoall_opts(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_comm *comm,
                        const fold_coll_opts *opts, fold_request **req) {
  return nonblocking(comm, "fold_ialltoall", ARGS(FOLD__COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, FOLD_SUM, -1),
                     opts, req);
}
int fold_alltoall(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_comm *comm) {
  return blocking(comm, "fold_alltoall", ARGS(FOLD__COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, FOLD_SUM, -1), NULL);
}
int fold_ialltoall(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_comm *comm,
                   fold_request **req) {
  return nonblocking(comm, "fold_ialltoall", ARGS(FOLD__COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, FOLD_SUM, -1),
                     NULL, req);
}

/* ---- barrier ---- */
int fold_barrier_opts(fold_comm *comm, const fold_coll_opts *opts) {
  return blocking(comm, "fold_barrier", ARGS(FOLD__COLL_BARRIER, NULL, NULL, 0, FOLD_UINT8, FOLD_SUM, -1), opts);
}
int fold_ibarrier_opts(fold_comm *comm, const fold_coll_opts *opts, fold_request **req) {
  return nonblocking(comm, "fold_ibarrier", ARGS(FOLD__COLL_BARRIER, NULL, NULL, 0, FOLD_UINT8, FOLD_SUM, -1), opts, req);
}
int fold_barrier(fold_comm *comm) { return fold_barrier_opts(comm, NULL); }
int fold_ibarrier(fold_comm *comm, fold_request **req) { return fold_ibarrier_opts(comm, NULL, req); }
