/* coll.c — MPI collectives and their nonblocking twins on fold's collectives, MPI_IN_PLACE included.
 * Collectives that only move data move bytes (the types of both sides need only agree in size);
 * reductions map (datatype, op) to fold's (dtype.c). */
#include <stdlib.h>
#include <string.h>

#include "mpi_impl.h"

/* One call: its communicator, and what to do once fold's part is done. */
typedef struct {
  const char *call;
  MPI_Comm comm;
  fold_comm *fc;
  int n, rank;
  MPI_Request *req; /* NULL: blocking */
  fold_request *fr;
  void *scratch;     /* freed at completion */
  void *move_dst;    /* then move_len bytes move from move_src to move_dst */
  const void *move_src;
  size_t move_len;
} call_t;

static int begin(call_t *x, const char *call, MPI_Comm comm, MPI_Request *req) {
  memset(x, 0, sizeof *x);
  x->call = call;
  x->comm = comm;
  x->req = req;
  int err;
  if ((x->fc = fold__mpi_comm_fc(comm, call, &err)) == NULL)
    return err;
  x->n = fold_comm_size(x->fc);
  x->rank = fold_comm_rank(x->fc);
  return MPI_SUCCESS;
}

/* rc: fold's status of the start (nonblocking) or of the whole call (blocking). */
static int end(call_t *x, int rc) {
  if (rc != FOLD_OK) {
    free(x->scratch);
    return fold__mpi_fold_error(x->comm, x->fc, rc, x->call, 0);
  }
  if (x->req == NULL) {
    if (x->move_len)
      memmove(x->move_dst, x->move_src, x->move_len);
    free(x->scratch);
    return MPI_SUCCESS;
  }
  fold__mpi_req_init in = {.comm = x->comm, .fr = x->fr, .scratch = x->scratch, .move_dst = x->move_dst,
                           .move_src = x->move_src, .move_len = x->move_len, .call = x->call};
  return fold__mpi_req_add(&in, x->req);
}

static int check_root(call_t *x, int root) {
  if (root < 0 || root >= x->n)
    return fold__mpi_raise(x->comm, MPI_ERR_ROOT, x->call, "root %d is not a rank of this communicator of %d ranks",
                           root, x->n);
  return MPI_SUCCESS;
}

static int barrier(MPI_Comm comm, MPI_Request *req, const char *call) {
  call_t x;
  int err = begin(&x, call, comm, req);
  if (err)
    return err;
  return end(&x, req ? fold_ibarrier(x.fc, &x.fr) : fold_barrier(x.fc));
}
int MPI_Barrier(MPI_Comm comm) { return barrier(comm, NULL, "MPI_Barrier"); }
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request) {
  if (request == NULL)
    return fold__mpi_raise(comm, MPI_ERR_ARG, "MPI_Ibarrier", "request is NULL");
  return barrier(comm, request, "MPI_Ibarrier");
}

static int bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm, MPI_Request *req,
                 const char *call) {
  call_t x;
  size_t b;
  int err = begin(&x, call, comm, req);
  if (err || (err = fold__mpi_bytes(comm, call, t, count, &b)) || (err = check_root(&x, root)))
    return err;
  return end(&x, req ? fold_ibroadcast(buf, b, FOLD_UINT8, root, x.fc, &x.fr)
                     : fold_broadcast(buf, b, FOLD_UINT8, root, x.fc));
}
int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return bcast(buffer, count, datatype, root, comm, NULL, "MPI_Bcast");
}

static int reduce(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm,
                  MPI_Request *req, const char *call) {
  call_t x;
  fold_dtype fd;
  fold_op fo;
  size_t fc;
  int err = begin(&x, call, comm, req);
  if (err || (err = fold__mpi_reduction(comm, call, t, count, op, &fd, &fc, &fo)))
    return err;
  if (root >= 0 && (err = check_root(&x, root)))
    return err;
  if (sb == MPI_IN_PLACE) {
    if (root >= 0 && x.rank != root)
      return fold__mpi_raise(comm, MPI_ERR_BUFFER, call, "MPI_IN_PLACE is for the root (%d) only", root);
    sb = rb;
  }
  if (root < 0) /* allreduce */
    return end(&x, req ? fold_iallreduce(sb, rb, fc, fd, fo, x.fc, &x.fr) : fold_allreduce(sb, rb, fc, fd, fo, x.fc));
  if (x.rank != root)
    rb = NULL; /* MPI ignores it there; fold too, but a program may pass its sendbuf */
  return end(&x, req ? fold_ireduce(sb, rb, fc, fd, fo, root, x.fc, &x.fr)
                     : fold_reduce(sb, rb, fc, fd, fo, root, x.fc));
}
int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
               MPI_Comm comm) {
  if (root < 0)
    return fold__mpi_raise(comm, MPI_ERR_ROOT, "MPI_Reduce", "root %d is negative", root);
  return reduce(sendbuf, recvbuf, count, datatype, op, root, comm, NULL, "MPI_Reduce");
}
int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return reduce(sendbuf, recvbuf, count, datatype, op, -1, comm, NULL, "MPI_Allreduce");
}

/* Gather (root >= 0) and allgather (root < 0): every rank's block, sendcount x sendtype bytes, lands at
 * block r of the root's (every rank's) recvbuf. */
static int gather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                  MPI_Comm comm, MPI_Request *req, const char *call) {
  call_t x;
  size_t b, rbytes = 0;
  int err = begin(&x, call, comm, req);
  if (err)
    return err;
  if (root >= 0 && (err = check_root(&x, root)))
    return err;
  int receives = root < 0 || x.rank == root;
  if (receives && (err = fold__mpi_bytes(comm, call, rt, rc, &rbytes)))
    return err;
  if (sb == MPI_IN_PLACE) {
    if (!receives)
      return fold__mpi_raise(comm, MPI_ERR_BUFFER, call, "MPI_IN_PLACE is for the root (%d) only", root);
    b = rbytes;
    sb = (char *)rb + (size_t)x.rank * rbytes;
  } else {
    if ((err = fold__mpi_bytes(comm, call, st, sc, &b)))
      return err;
    if (receives && b != rbytes)
      return fold__mpi_raise(comm, MPI_ERR_TRUNCATE, call,
                             "this rank sends %zu bytes per block but receives %zu per block", b, rbytes);
  }
  if (root < 0)
    return end(&x, req ? fold_iallgather(sb, rb, b, FOLD_UINT8, x.fc, &x.fr)
                       : fold_allgather(sb, rb, b, FOLD_UINT8, x.fc));
  return end(&x, req ? fold_igather(sb, receives ? rb : NULL, b, FOLD_UINT8, root, x.fc, &x.fr)
                     : fold_gather(sb, receives ? rb : NULL, b, FOLD_UINT8, root, x.fc));
}
int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm) {
  if (root < 0)
    return fold__mpi_raise(comm, MPI_ERR_ROOT, "MPI_Gather", "root %d is negative", root);
  return gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, NULL, "MPI_Gather");
}
int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  return gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, -1, comm, NULL, "MPI_Allgather");
}

static int scatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                   MPI_Comm comm, MPI_Request *req, const char *call) {
  call_t x;
  size_t b, sbytes = 0;
  int err = begin(&x, call, comm, req);
  if (err || (err = check_root(&x, root)))
    return err;
  int sends = x.rank == root;
  if (sends && (err = fold__mpi_bytes(comm, call, st, sc, &sbytes)))
    return err;
  if (rb == MPI_IN_PLACE) {
    if (!sends)
      return fold__mpi_raise(comm, MPI_ERR_BUFFER, call, "MPI_IN_PLACE is for the root (%d) only", root);
    b = sbytes;
    rb = (char *)sb + (size_t)root * sbytes;
  } else {
    if ((err = fold__mpi_bytes(comm, call, rt, rc, &b)))
      return err;
    if (sends && b != sbytes)
      return fold__mpi_raise(comm, MPI_ERR_TRUNCATE, call,
                             "the root sends %zu bytes per block but receives %zu", sbytes, b);
  }
  return end(&x, req ? fold_iscatter(sends ? sb : NULL, rb, b, FOLD_UINT8, root, x.fc, &x.fr)
                     : fold_scatter(sends ? sb : NULL, rb, b, FOLD_UINT8, root, x.fc));
}
int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, NULL, "MPI_Scatter");
}

static int alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                    MPI_Request *req, const char *call) {
  call_t x;
  size_t b, rbytes;
  int err = begin(&x, call, comm, req);
  if (err || (err = fold__mpi_bytes(comm, call, rt, rc, &rbytes)))
    return err;
  if (sb == MPI_IN_PLACE) {
    /* fold's alltoall is not in place: send from a copy of recvbuf */
    b = rbytes;
    size_t all = b * (size_t)x.n;
    if (all && (x.scratch = malloc(all)) == NULL)
      return fold__mpi_raise(comm, MPI_ERR_NO_MEM, call, "no memory for a copy of %zu bytes", all);
    if (all)
      memcpy(x.scratch, rb, all);
    sb = x.scratch;
  } else {
    if ((err = fold__mpi_bytes(comm, call, st, sc, &b)))
      return err;
    if (b != rbytes)
      return fold__mpi_raise(comm, MPI_ERR_TRUNCATE, call, "this rank sends %zu bytes per block but receives %zu",
                             b, rbytes);
  }
  return end(&x, req ? fold_ialltoall(sb, rb, b, FOLD_UINT8, x.fc, &x.fr) : fold_alltoall(sb, rb, b, FOLD_UINT8, x.fc));
}
int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  return alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, NULL, "MPI_Alltoall");
}

static int reduce_scatter_block(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm,
                                MPI_Request *req, const char *call) {
  call_t x;
  fold_dtype fd;
  fold_op fo;
  size_t fc;
  int err = begin(&x, call, comm, req);
  if (err || (err = fold__mpi_reduction(comm, call, t, count, op, &fd, &fc, &fo)))
    return err;
  if (sb == MPI_IN_PLACE) {
    /* MPI: the input is recvbuf (n blocks), the result its first block; fold's in-place form leaves
     * block r at block r of the input, then it moves to the front */
    size_t blk = fc * fold_dtype_size(fd);
    sb = rb;
    rb = (char *)rb + (size_t)x.rank * blk;
    if (x.rank > 0 && blk > 0) {
      x.move_dst = (void *)sb;
      x.move_src = rb;
      x.move_len = blk;
    }
  }
  return end(&x, req ? fold_ireduce_scatter(sb, rb, fc, fd, fo, x.fc, &x.fr)
                     : fold_reduce_scatter(sb, rb, fc, fd, fo, x.fc));
}
int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm) {
  return reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, NULL, "MPI_Reduce_scatter_block");
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm) {
  const char *call = "MPI_Reduce_scatter";
  call_t x;
  int err = begin(&x, call, comm, NULL);
  if (err)
    return err;
  if (recvcounts == NULL)
    return fold__mpi_raise(comm, MPI_ERR_ARG, call, "recvcounts is NULL");
  int equal = 1;
  size_t total = 0, before = 0;
  for (int i = 0; i < x.n; i++) {
    if (recvcounts[i] < 0)
      return fold__mpi_raise(comm, MPI_ERR_COUNT, call, "recvcounts[%d] = %d is negative", i, recvcounts[i]);
    equal &= recvcounts[i] == recvcounts[0];
    if (i < x.rank)
      before += (size_t)recvcounts[i];
    total += (size_t)recvcounts[i];
  }
  if (equal)
    return reduce_scatter_block(sendbuf, recvbuf, recvcounts[0], datatype, op, comm, NULL, call);
  /* unequal blocks: the whole reduction into scratch, then this rank's block */
  fold_dtype fd;
  fold_op fo;
  size_t fc, fc1;
  if (total > (size_t)INT32_MAX)
    return fold__mpi_unsupported(comm, call, "a total count over INT_MAX");
  if ((err = fold__mpi_reduction(comm, call, datatype, (int)total, op, &fd, &fc, &fo)) ||
      (err = fold__mpi_reduction(comm, call, datatype, 1, op, &fd, &fc1, &fo)))
    return err;
  size_t esz = fc1 * fold_dtype_size(fd); /* bytes of one MPI element */
  if (fc && (x.scratch = malloc(fc * fold_dtype_size(fd))) == NULL)
    return fold__mpi_raise(comm, MPI_ERR_NO_MEM, call, "no memory for %zu bytes of scratch", fc * fold_dtype_size(fd));
  const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  x.move_dst = recvbuf;
  x.move_src = (char *)x.scratch + before * esz;
  x.move_len = (size_t)recvcounts[x.rank] * esz;
  return end(&x, fold_allreduce(in, x.scratch, fc, fd, fo, x.fc));
}

/* ---- the nonblocking twins ---------------------------------------------- */
#define NEED_REQ(call)                                                                                          \
  if (request == NULL)                                                                                          \
  return fold__mpi_raise(comm, MPI_ERR_ARG, call, "request is NULL")

int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request) {
  NEED_REQ("MPI_Ibcast");
  return bcast(buffer, count, datatype, root, comm, request, "MPI_Ibcast");
}
int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request *request) {
  NEED_REQ("MPI_Ireduce");
  if (root < 0)
    return fold__mpi_raise(comm, MPI_ERR_ROOT, "MPI_Ireduce", "root %d is negative", root);
  return reduce(sendbuf, recvbuf, count, datatype, op, root, comm, request, "MPI_Ireduce");
}
int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request *request) {
  NEED_REQ("MPI_Iallreduce");
  return reduce(sendbuf, recvbuf, count, datatype, op, -1, comm, request, "MPI_Iallreduce");
}
int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
  NEED_REQ("MPI_Igather");
  if (root < 0)
    return fold__mpi_raise(comm, MPI_ERR_ROOT, "MPI_Igather", "root %d is negative", root);
  return gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request, "MPI_Igather");
}
int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  NEED_REQ("MPI_Iallgather");
  return gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, -1, comm, request, "MPI_Iallgather");
}
int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
  NEED_REQ("MPI_Iscatter");
  return scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request, "MPI_Iscatter");
}
int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  NEED_REQ("MPI_Ialltoall");
  return alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request, "MPI_Ialltoall");
}
int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm, MPI_Request *request) {
  NEED_REQ("MPI_Ireduce_scatter_block");
  return reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, request, "MPI_Ireduce_scatter_block");
}
