/* fold_opts.h — per-call options of the collectives (fold_coll_opts and the _opts twins): part of
 * fold.h (which includes it; include fold.h). */
#ifndef FOLD_PUBLIC_OPTS_H
#define FOLD_PUBLIC_OPTS_H

#include "fold.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- per-call options ----------------------------------------------------
 * fold_<collective>_opts and fold_i<collective>_opts take the arguments of
 * their plain twins and then a const fold_coll_opts * that overrides the
 * communicator's settings for that one call (Gloo's per-call options); the
 * communicator's settings stay the defaults and are not changed. opts NULL
 * is the plain call. Start from FOLD_COLL_OPTS_INIT and set what you need:
 *
 *     fold_coll_opts o = FOLD_COLL_OPTS_INIT;
 *     o.algo = "ring"; o.timeout = 2.0;
 *     rc = fold_allreduce_opts(x, x, n, FOLD_FLOAT32, FOLD_SUM, comm, &o);
 *
 * `size` is the struct's size as the program was built (the macro sets it):
 * later versions add fields at the end only, and a library accepts a
 * smaller struct of an older program (the missing fields at their
 * defaults) and a larger one of a newer program whose extra bytes are all
 * zero. algo and segment_bytes are part of the call's signature: every rank
 * must pass the same (a rank that differs fails the call with FOLD_EMISMATCH
 * naming both calls, as in "collectives"); timeout may differ per rank.
 * Errors (FOLD_EINVAL on this rank, nothing sent, the communicator stays
 * usable): size 0 or too small to hold `size`, nonzero bytes past the known
 * fields, an algorithm the collective does not have or that cannot serve
 * the call (as for a forced one), a negative or non-finite timeout, a
 * segment_bytes over 1 GiB. */
typedef struct fold_coll_opts {
  size_t size;          /* sizeof(fold_coll_opts) as built: set by FOLD_COLL_OPTS_INIT */
  const char *algo;     /* this call's algorithm (docs/collectives.md lists each collective's); NULL: the
                           communicator's choice (fold_comm_set_algo, FOLD_ALGO, FOLD_RULES, the built-in
                           rules); "auto": automatic selection even where the communicator forces one */
  double timeout;       /* seconds this rank's wait for the call may last; 0: the communicator's FOLD_TIMEOUT.
                           For the nonblocking twins it bounds fold_wait on the request. */
  size_t segment_bytes; /* pipeline segment of the segmenting algorithms (allreduce ring_segmented,
                           broadcast pipeline); 0: FOLD_SEGMENT_BYTES, else the algorithm's default.
                           Other algorithms ignore it (but it is still part of the signature). */
} fold_coll_opts;
#define FOLD_COLL_OPTS_INIT {sizeof(fold_coll_opts), NULL, 0.0, 0}

FOLD_API int fold_allreduce_opts(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op,
                                 fold_comm *comm, const fold_coll_opts *opts);
FOLD_API int fold_reduce_opts(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op,
                              int root, fold_comm *comm, const fold_coll_opts *opts);
FOLD_API int fold_broadcast_opts(void *buf, size_t count, fold_dtype dtype, int root, fold_comm *comm,
                                 const fold_coll_opts *opts);
FOLD_API int fold_reduce_scatter_opts(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype,
                                      fold_op op, fold_comm *comm, const fold_coll_opts *opts);
FOLD_API int fold_allgather_opts(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype,
                                 fold_comm *comm, const fold_coll_opts *opts);
FOLD_API int fold_gather_opts(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, int root,
                              fold_comm *comm, const fold_coll_opts *opts);
FOLD_API int fold_scatter_opts(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, int root,
                               fold_comm *comm, const fold_coll_opts *opts);
FOLD_API int fold_alltoall_opts(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_comm *comm,
                                const fold_coll_opts *opts);
FOLD_API int fold_barrier_opts(fold_comm *comm, const fold_coll_opts *opts);

FOLD_API int fold_iallreduce_opts(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op,
                                  fold_comm *comm, const fold_coll_opts *opts, fold_request **req);
FOLD_API int fold_ireduce_opts(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op,
                               int root, fold_comm *comm, const fold_coll_opts *opts, fold_request **req);
FOLD_API int fold_ibroadcast_opts(void *buf, size_t count, fold_dtype dtype, int root, fold_comm *comm,
                                  const fold_coll_opts *opts, fold_request **req);
FOLD_API int fold_ireduce_scatter_opts(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype,
                                       fold_op op, fold_comm *comm, const fold_coll_opts *opts, fold_request **req);
FOLD_API int fold_iallgather_opts(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype,
                                  fold_comm *comm, const fold_coll_opts *opts, fold_request **req);
FOLD_API int fold_igather_opts(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, int root,
                               fold_comm *comm, const fold_coll_opts *opts, fold_request **req);
FOLD_API int fold_iscatter_opts(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, int root,
                                fold_comm *comm, const fold_coll_opts *opts, fold_request **req);
FOLD_API int fold_ialltoall_opts(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype,
                                 fold_comm *comm, const fold_coll_opts *opts, fold_request **req);
FOLD_API int fold_ibarrier_opts(fold_comm *comm, const fold_coll_opts *opts, fold_request **req);

#ifdef __cplusplus
}
#endif
#endif /* FOLD_PUBLIC_OPTS_H */
