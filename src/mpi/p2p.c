/* p2p.c — MPI point-to-point on fold's: sends, receives, Sendrecv, probes. Messages travel as bytes. */
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "mpi_impl.h"

/* The checks every send and receive make; *fc and *bytes on success. */
static int check(const char *call, const void *buf, int count, MPI_Datatype t, int peer, int tag, MPI_Comm comm,
                 int recv, fold_comm **fc, size_t *bytes) {
  int err;
  if ((*fc = fold__mpi_comm_fc(comm, call, &err)) == NULL)
    return err;
  if ((err = fold__mpi_bytes(comm, call, t, count, bytes)))
    return err;
  int n = fold_comm_size(*fc);
  if (!(peer == MPI_PROC_NULL || (peer >= 0 && peer < n) || (recv && peer == MPI_ANY_SOURCE)))
    return fold__mpi_raise(comm, MPI_ERR_RANK, call, "rank %d is not a rank of this communicator of %d ranks%s",
                           peer, n, recv ? " (nor MPI_ANY_SOURCE or MPI_PROC_NULL)" : " (nor MPI_PROC_NULL)");
  if (!(tag >= 0 || (recv && tag == MPI_ANY_TAG)))
    return fold__mpi_raise(comm, MPI_ERR_TAG, call, "tag %d is negative%s", tag,
                           recv ? " (and not MPI_ANY_TAG)" : "");
  if (buf == NULL && *bytes > 0)
    return fold__mpi_raise(comm, MPI_ERR_BUFFER, call, "buffer is NULL with %d elements", count);
  return MPI_SUCCESS;
}

static int send(const char *call, const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm) {
  fold_comm *fc;
  size_t bytes;
  int err = check(call, buf, count, t, dest, tag, comm, 0, &fc, &bytes);
  if (err || dest == MPI_PROC_NULL)
    return err;
  return fold__mpi_fold_error(comm, fc, fold_send(buf, bytes, FOLD_UINT8, dest, tag, fc), call, 0);
}

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return send("MPI_Send", buf, count, datatype, dest, tag, comm);
}
/* fold's send completes once the buffer may be reused, as MPI_Send may; Ssend's "the receive has started"
 * holds for large messages only, which only matters for programs that rely on it to synchronise. */
int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return send("MPI_Ssend", buf, count, datatype, dest, tag, comm);
}
int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return send("MPI_Rsend", buf, count, datatype, dest, tag, comm);
}
int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return send("MPI_Bsend", buf, count, datatype, dest, tag, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status) {
  fold_comm *fc;
  size_t bytes;
  int err = check("MPI_Recv", buf, count, datatype, source, tag, comm, 1, &fc, &bytes);
  if (err)
    return err;
  fold__mpi_status_empty(status);
  if (source == MPI_PROC_NULL) {
    if (status != MPI_STATUS_IGNORE)
      status->MPI_SOURCE = MPI_PROC_NULL;
    return MPI_SUCCESS;
  }
  fold_status st;
  int rc = fold_recv_status(buf, bytes, FOLD_UINT8, source, tag, fc, &st);
  err = fold__mpi_fold_error(comm, fc, rc, "MPI_Recv", 1);
  if (status != MPI_STATUS_IGNORE) {
    status->MPI_SOURCE = st.source;
    status->MPI_TAG = st.tag;
    status->MPI_ERROR = err;
    status->fold_bytes_ = (long long)st.count;
  }
  return err;
}

static int isend(const char *call, const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
                 MPI_Request *request) {
  fold_comm *fc;
  size_t bytes;
  if (request == NULL)
    return fold__mpi_raise(comm, MPI_ERR_ARG, call, "request is NULL");
  int err = check(call, buf, count, t, dest, tag, comm, 0, &fc, &bytes);
  if (err)
    return err;
  fold__mpi_req_init in = {.comm = comm, .call = call, .proc_null = dest == MPI_PROC_NULL};
  if (!in.proc_null) {
    int rc = fold_isend(buf, bytes, FOLD_UINT8, dest, tag, fc, &in.fr);
    if (rc != FOLD_OK)
      return fold__mpi_fold_error(comm, fc, rc, call, 0);
  }
  return fold__mpi_req_add(&in, request);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request *request) {
  return isend("MPI_Isend", buf, count, datatype, dest, tag, comm, request);
}
int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request) {
  return isend("MPI_Issend", buf, count, datatype, dest, tag, comm, request);
}
int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request) {
  return isend("MPI_Irsend", buf, count, datatype, dest, tag, comm, request);
}
int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request) {
  return isend("MPI_Ibsend", buf, count, datatype, dest, tag, comm, request);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request) {
  fold_comm *fc;
  size_t bytes;
  if (request == NULL)
    return fold__mpi_raise(comm, MPI_ERR_ARG, "MPI_Irecv", "request is NULL");
  int err = check("MPI_Irecv", buf, count, datatype, source, tag, comm, 1, &fc, &bytes);
  if (err)
    return err;
  fold__mpi_req_init in = {.comm = comm, .call = "MPI_Irecv", .is_recv = 1, .proc_null = source == MPI_PROC_NULL};
  if (!in.proc_null) {
    int rc = fold_irecv(buf, bytes, FOLD_UINT8, source, tag, fc, &in.fr);
    if (rc != FOLD_OK)
      return fold__mpi_fold_error(comm, fc, rc, "MPI_Irecv", 1);
  }
  return fold__mpi_req_add(&in, request);
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status) {
  MPI_Request r;
  int err = MPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &r);
  if (err)
    return err;
  /* the receive is posted first, so that two ranks that Sendrecv with each other never wait on each other */
  int serr = send("MPI_Sendrecv", sendbuf, sendcount, sendtype, dest, sendtag, comm);
  err = MPI_Wait(&r, status);
  return serr ? serr : err;
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status) {
  fold_comm *fc;
  size_t bytes;
  int err = check("MPI_Iprobe", NULL, 0, MPI_BYTE, source, tag, comm, 1, &fc, &bytes);
  if (err)
    return err;
  if (flag == NULL)
    return fold__mpi_raise(comm, MPI_ERR_ARG, "MPI_Iprobe", "flag is NULL");
  fold__mpi_status_empty(status);
  if (source == MPI_PROC_NULL) {
    *flag = 1;
    if (status != MPI_STATUS_IGNORE)
      status->MPI_SOURCE = MPI_PROC_NULL;
    return MPI_SUCCESS;
  }
  fold_status st;
  int rc = fold_iprobe(source, tag, fc, flag, &st);
  if (rc != FOLD_OK)
    return fold__mpi_fold_error(comm, fc, rc, "MPI_Iprobe", 0);
  if (*flag && status != MPI_STATUS_IGNORE) {
    status->MPI_SOURCE = st.source;
    status->MPI_TAG = st.tag;
    status->fold_bytes_ = (long long)st.count; /* a probe's count is in bytes */
  }
  return MPI_SUCCESS;
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
  double deadline = MPI_Wtime() + fold__mpi_timeout_s();
  for (int pass = 0;; pass++) {
    int flag = 0, err = MPI_Iprobe(source, tag, comm, &flag, status);
    if (err || flag)
      return err;
    if (MPI_Wtime() > deadline)
      return fold__mpi_raise(comm, MPI_ERR_OTHER, "MPI_Probe",
                             "no message from source %d with tag %d within FOLD_TIMEOUT (%g s)", source, tag,
                             fold__mpi_timeout_s());
    if (pass < 100) {
      sched_yield();
    } else {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
}
