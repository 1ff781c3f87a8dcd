/* coll_v.c — the v-collectives (Gatherv, Scatterv, Allgatherv, Alltoallv) and their nonblocking twins as
 * point-to-point messages on a private duplicate of the communicator: every transfer posted at once, then
 * waited for (the I-forms hand them to one compound request). fold has no v-collectives; this is correct at
 * any size, not tuned (n - 1 messages per rank, n^2 for the all-forms). */
#include <stdlib.h>
#include <string.h>

#include "mpi_impl.h"

/* One call: the private communicator, its tag, and the transfers in flight. */
typedef struct {
  const char *call;
  MPI_Comm comm;
  fold__mpi_comm *c;
  fold_comm *pc;
  int n, rank, tag;
  fold_request **reqs;
  unsigned char *is_recv_req; /* per transfer: a receive */
  int nreq;
  MPI_Request *req; /* the I-forms: the compound request to return */
  int rc;     /* the first failure's fold code */
  int is_recv; /* the failure was a receive's (MPI_ERR_TRUNCATE for FOLD_EMISMATCH) */
  void *scratch;
} vcall;

static int begin(vcall *x, const char *call, MPI_Comm comm, MPI_Request *req) {
  memset(x, 0, sizeof *x);
  x->call = call;
  x->comm = comm;
  x->req = req;
  int err;
  if (fold__mpi_comm_fc(comm, call, &err) == NULL)
    return err;
  x->c = fold__mpi_comm_get(comm);
  x->n = x->c->size;
  x->rank = fold_comm_rank(x->c->fc);
  if (x->c->priv == NULL) {
    /* a collective over comm, in the order of comm's collectives: every rank makes it at the same call */
    int rc = fold_comm_dup(x->c->fc, &x->c->priv);
    if (rc != FOLD_OK)
      return fold__mpi_fold_error(comm, x->c->fc, rc, call, 0);
  }
  x->pc = x->c->priv;
  x->tag = (int)(x->c->vseq++ & 0x3fffffff);
  x->reqs = malloc(sizeof(fold_request *) * 2 * (size_t)x->n);
  x->is_recv_req = malloc(2 * (size_t)x->n);
  if (x->reqs == NULL || x->is_recv_req == NULL) {
    free(x->reqs);
    free(x->is_recv_req);
    x->reqs = NULL;
    return fold__mpi_raise(comm, MPI_ERR_NO_MEM, call, "no memory for %d requests", 2 * x->n);
  }
  return MPI_SUCCESS;
}

static void post(vcall *x, int recv, void *buf, size_t bytes, int peer) {
  if (x->rc != FOLD_OK)
    return;
  fold_request *r = NULL;
  int rc = recv ? fold_irecv(buf, bytes, FOLD_UINT8, peer, x->tag, x->pc, &r)
                : fold_isend(buf, bytes, FOLD_UINT8, peer, x->tag, x->pc, &r);
  if (rc != FOLD_OK) {
    x->rc = rc;
    x->is_recv = recv;
  } else {
    x->is_recv_req[x->nreq] = (unsigned char)recv;
    x->reqs[x->nreq++] = r;
  }
}

/* Wait for every transfer (each wait bounded by FOLD_TIMEOUT), free everything, return the MPI status; or,
 * for an I-form whose transfers all started, hand them to a compound request. */
static int finish(vcall *x) {
  if (x->req != NULL && x->rc == FOLD_OK) {
    fold__mpi_req_init in = {.comm = x->comm, .many = x->reqs, .many_recv = x->is_recv_req, .nmany = x->nreq,
                             .scratch = x->scratch, .call = x->call};
    if (x->nreq == 0) {
      /* nothing to move (one rank): complete at once */
      free(x->reqs);
      free(x->is_recv_req);
      in.many = NULL;
      in.many_recv = NULL;
    }
    return fold__mpi_req_add(&in, x->req);
  }
  for (int i = 0; i < x->nreq; i++) {
    fold_status st;
    int rc = fold_wait_status(x->reqs[i], &st);
    if (rc != FOLD_OK && x->rc == FOLD_OK) {
      x->rc = rc;
      x->is_recv = st.source != fold_comm_rank(x->pc);
    }
  }
  free(x->reqs);
  free(x->is_recv_req);
  free(x->scratch);
  return fold__mpi_fold_error(x->comm, x->pc, x->rc, x->call, x->is_recv);
}

/* counts[i] x type as bytes for every rank i, checked; *sizes gets the element size */
static int check_counts(vcall *x, const int counts[], const int displs[], MPI_Datatype t, size_t *esize) {
  if (counts == NULL || displs == NULL)
    return fold__mpi_raise(x->comm, MPI_ERR_ARG, x->call, "counts or displacements are NULL");
  if ((*esize = fold__mpi_type_size(t)) == 0)
    return fold__mpi_raise(x->comm, MPI_ERR_TYPE, x->call, "datatype %d is not a valid datatype", t);
  for (int i = 0; i < x->n; i++)
    if (counts[i] < 0)
      return fold__mpi_raise(x->comm, MPI_ERR_COUNT, x->call, "counts[%d] = %d is negative", i, counts[i]);
  return MPI_SUCCESS;
}

static int check_root(vcall *x, int root) {
  if (root < 0 || root >= x->n)
    return fold__mpi_raise(x->comm, MPI_ERR_ROOT, x->call, "root %d is not a rank of this communicator of %d ranks",
                           root, x->n);
  return MPI_SUCCESS;
}

static int fail_early(vcall *x, int err) {
  free(x->reqs);
  free(x->is_recv_req);
  free(x->scratch);
  return err;
}

static int gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *req,
                   const char *call) {
  vcall x;
  size_t sb = 0, es = 0;
  int err = begin(&x, call, comm, req);
  if (err || (err = check_root(&x, root)))
    return x.reqs ? fail_early(&x, err) : err;
  if (x.rank == root && (err = check_counts(&x, recvcounts, displs, recvtype, &es)))
    return fail_early(&x, err);
  if (sendbuf != MPI_IN_PLACE && (err = fold__mpi_bytes(comm, x.call, sendtype, sendcount, &sb)))
    return fail_early(&x, err);
  if (x.rank != root) {
    if (sendbuf == MPI_IN_PLACE)
      return fail_early(&x, fold__mpi_raise(comm, MPI_ERR_BUFFER, x.call, "MPI_IN_PLACE is for the root only"));
    post(&x, 0, (void *)sendbuf, sb, root);
    return finish(&x);
  }
  for (int q = 0; q < x.n; q++)
    if (q != root)
      post(&x, 1, (char *)recvbuf + (size_t)displs[q] * es, (size_t)recvcounts[q] * es, q);
  if (sendbuf != MPI_IN_PLACE) {
    if (sb > (size_t)recvcounts[root] * es)
      x.rc = FOLD_EMISMATCH, x.is_recv = 1;
    else if (sb)
      memmove((char *)recvbuf + (size_t)displs[root] * es, sendbuf, sb);
  }
  return finish(&x);
}

static int scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                    void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *req,
                    const char *call) {
  vcall x;
  size_t rb = 0, es = 0;
  int err = begin(&x, call, comm, req);
  if (err || (err = check_root(&x, root)))
    return x.reqs ? fail_early(&x, err) : err;
  if (x.rank == root && (err = check_counts(&x, sendcounts, displs, sendtype, &es)))
    return fail_early(&x, err);
  if (recvbuf != MPI_IN_PLACE && (err = fold__mpi_bytes(comm, x.call, recvtype, recvcount, &rb)))
    return fail_early(&x, err);
  if (x.rank != root) {
    if (recvbuf == MPI_IN_PLACE)
      return fail_early(&x, fold__mpi_raise(comm, MPI_ERR_BUFFER, x.call, "MPI_IN_PLACE is for the root only"));
    post(&x, 1, recvbuf, rb, root);
    return finish(&x);
  }
  for (int q = 0; q < x.n; q++)
    if (q != root)
      post(&x, 0, (char *)sendbuf + (size_t)displs[q] * es, (size_t)sendcounts[q] * es, q);
  if (recvbuf != MPI_IN_PLACE) {
    size_t own = (size_t)sendcounts[root] * es;
    if (own > rb)
      x.rc = FOLD_EMISMATCH, x.is_recv = 1;
    else if (own)
      memmove(recvbuf, (const char *)sendbuf + (size_t)displs[root] * es, own);
  }
  return finish(&x);
}

static int allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                      MPI_Request *req, const char *call) {
  vcall x;
  size_t sb = 0, es = 0;
  int err = begin(&x, call, comm, req);
  if (err)
    return err;
  if ((err = check_counts(&x, recvcounts, displs, recvtype, &es)))
    return fail_early(&x, err);
  char *mine = (char *)recvbuf + (size_t)displs[x.rank] * es;
  if (sendbuf == MPI_IN_PLACE) {
    sendbuf = mine;
    sb = (size_t)recvcounts[x.rank] * es;
  } else if ((err = fold__mpi_bytes(comm, x.call, sendtype, sendcount, &sb))) {
    return fail_early(&x, err);
  }
  for (int q = 0; q < x.n; q++)
    if (q != x.rank)
      post(&x, 1, (char *)recvbuf + (size_t)displs[q] * es, (size_t)recvcounts[q] * es, q);
  for (int q = 0; q < x.n; q++)
    if (q != x.rank)
      post(&x, 0, (void *)sendbuf, sb, q);
  if (sendbuf != mine) {
    if (sb > (size_t)recvcounts[x.rank] * es)
      x.rc = x.rc ? x.rc : FOLD_EMISMATCH, x.is_recv = 1;
    else if (sb)
      memmove(mine, sendbuf, sb);
  }
  return finish(&x);
}

static int alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                     void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                     MPI_Comm comm, MPI_Request *req, const char *call) {
  vcall x;
  size_t ses = 0, res = 0;
  int err = begin(&x, call, comm, req);
  if (err)
    return err;
  if ((err = check_counts(&x, recvcounts, rdispls, recvtype, &res)))
    return fail_early(&x, err);
  if (sendbuf == MPI_IN_PLACE) {
    /* send from a copy of recvbuf, with the receive layout */
    size_t end = 0;
    for (int q = 0; q < x.n; q++) {
      size_t e = ((size_t)rdispls[q] + (size_t)recvcounts[q]) * res;
      end = e > end ? e : end;
    }
    if (end && (x.scratch = malloc(end)) == NULL)
      return fail_early(&x, fold__mpi_raise(comm, MPI_ERR_NO_MEM, x.call, "no memory for %zu bytes", end));
    if (end)
      memcpy(x.scratch, recvbuf, end);
    sendbuf = x.scratch;
    sendcounts = recvcounts;
    sdispls = rdispls;
    ses = res;
  } else if ((err = check_counts(&x, sendcounts, sdispls, sendtype, &ses))) {
    return fail_early(&x, err);
  }
  for (int q = 0; q < x.n; q++)
    if (q != x.rank)
      post(&x, 1, (char *)recvbuf + (size_t)rdispls[q] * res, (size_t)recvcounts[q] * res, q);
  for (int q = 0; q < x.n; q++)
    if (q != x.rank)
      post(&x, 0, (char *)sendbuf + (size_t)sdispls[q] * ses, (size_t)sendcounts[q] * ses, q);
  size_t own = (size_t)sendcounts[x.rank] * ses;
  if (own > (size_t)recvcounts[x.rank] * res)
    x.rc = x.rc ? x.rc : FOLD_EMISMATCH, x.is_recv = 1;
  else if (own)
    memmove((char *)recvbuf + (size_t)rdispls[x.rank] * res, (const char *)sendbuf + (size_t)sdispls[x.rank] * ses,
            own);
  return finish(&x);
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, NULL,
                 "MPI_Gatherv");
}
int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, NULL,
                  "MPI_Scatterv");
}
int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  return allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, NULL,
                    "MPI_Allgatherv");
}
int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                  MPI_Comm comm) {
  return alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, NULL,
                   "MPI_Alltoallv");
}

/* The I-forms: the same transfers, completed by MPI_Wait/MPI_Test on the request (the private duplicate is
 * made, at the communicator's first v-collective, before the call returns). */
#define NEED_REQ(call)                                                                                          \
  if (request == NULL)                                                                                          \
  return fold__mpi_raise(comm, MPI_ERR_ARG, call, "request is NULL")

int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                 const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
  NEED_REQ("MPI_Igatherv");
  return gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, request,
                 "MPI_Igatherv");
}
int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                  MPI_Request *request) {
  NEED_REQ("MPI_Iscatterv");
  return scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, request,
                  "MPI_Iscatterv");
}
int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                    MPI_Request *request) {
  NEED_REQ("MPI_Iallgatherv");
  return allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request,
                    "MPI_Iallgatherv");
}
int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request *request) {
  NEED_REQ("MPI_Ialltoallv");
  return alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, request,
                   "MPI_Ialltoallv");
}
