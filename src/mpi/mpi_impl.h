/* mpi_impl.h — the state shared by the files of libfoldmpi: handle tables, errors, requests; over fold.h only. */
#ifndef FOLD_MPI_IMPL_H
#define FOLD_MPI_IMPL_H

#include <stddef.h>

#include <fold.h>

#include "mpi.h"

/* ---- errors (errors.c) ---------------------------------------------------
 * Every failing call returns fold__mpi_raise(...): the message
 * "<call>: rank R: <text>" is kept for MPI_Error_string under the returned
 * code (its class plus 128 * slot), and the communicator's error handler
 * runs: MPI_ERRORS_ARE_FATAL prints it and ends the process. */
int fold__mpi_raise(MPI_Comm comm, int cls, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A fold call's status rc (FOLD_OK passes through) as an MPI error on comm:
 * the class from fold's code (truncate: FOLD_EMISMATCH of a receive is
 * MPI_ERR_TRUNCATE), the text fold_comm_last_error(fc). */
int fold__mpi_fold_error(MPI_Comm comm, fold_comm *fc, int rc, const char *call, int truncate);
/* MPI_ERR_UNSUPPORTED_OPERATION naming call (the stubs, unsupported cases). */
int fold__mpi_unsupported(MPI_Comm comm, const char *call, const char *what);

/* ---- communicators (comm.c) ---------------------------------------------- */
typedef struct fold__mpi_comm {
  fold_comm *fc;   /* NULL: the slot is free */
  int errh;        /* MPI_ERRORS_ARE_FATAL or MPI_ERRORS_RETURN */
  int size;
  int *world;      /* world rank of each member (Comm_compare) */
  fold_comm *priv; /* a dup of fc for the v-collectives' messages (coll_v.c), made at the first one */
  unsigned vseq;   /* the v-collectives called on it so far: their tag */
} fold__mpi_comm;

extern int fold__mpi_state; /* 0 before MPI_Init, 1 initialized, 2 finalized */
extern int fold__mpi_world_rank;
/* FOLD_TIMEOUT in seconds as fold reads it (default 300): the layer's own polling loops (MPI_Probe,
 * MPI_Waitany, MPI_Waitsome) wait no longer, as fold's waits. */
double fold__mpi_timeout_s(void);

/* The slot of a live communicator handle, or NULL. */
fold__mpi_comm *fold__mpi_comm_get(MPI_Comm comm);
/* The fold communicator of comm, or NULL after raising MPI_ERR_COMM (or the
 * not-initialized error) into *err for call. */
fold_comm *fold__mpi_comm_fc(MPI_Comm comm, const char *call, int *err);
/* Register fc (members: world ranks, taken over) as a new handle. */
int fold__mpi_comm_add(fold_comm *fc, int *world, int errh, MPI_Comm *out);
/* Destroy every communicator (MPI_Finalize). */
void fold__mpi_comm_free_all(void);

/* ---- datatypes and ops (dtype.c) ------------------------------------------ */
/* Size in bytes of one element of t, or 0 for an invalid or freed handle. */
size_t fold__mpi_type_size(MPI_Datatype t);
const char *fold__mpi_type_name(MPI_Datatype t);
/* count elements of t as fold bytes, raising the right class on comm for a
 * bad type (MPI_ERR_TYPE) or count (MPI_ERR_COUNT). */
int fold__mpi_bytes(MPI_Comm comm, const char *call, MPI_Datatype t, int count, size_t *bytes);
/* The fold (dtype, count, op) of a reduction of count elements of t with op,
 * or an MPI error raised on comm: MPI_ERR_TYPE / MPI_ERR_OP / MPI_ERR_COUNT
 * for what MPI forbids, MPI_ERR_UNSUPPORTED_OPERATION for what fold cannot
 * reduce (MPI_SHORT, MPI_LAND, ...). */
int fold__mpi_reduction(MPI_Comm comm, const char *call, MPI_Datatype t, int count, MPI_Op op, fold_dtype *fd,
                        size_t *fcount, fold_op *fo);

/* ---- requests (request.c) ------------------------------------------------- */
/* A started operation: fr is fold's request (NULL: complete already, e.g.
 * MPI_PROC_NULL). After completion, if move_len > 0 move_len bytes are moved
 * from move_src to move_dst, and scratch is freed. */
typedef struct fold__mpi_req_init {
  MPI_Comm comm;
  fold_request *fr;
  /* or several (a nonblocking v-collective's transfers; the array is the
   * request's, freed with it): done when all are; the first failure counts,
   * a receive's (many_recv[i]) as a receive's */
  fold_request **many;
  unsigned char *many_recv;
  int nmany;
  int is_recv;       /* a receive: status from fold; MPI_ERR_TRUNCATE on EMISMATCH */
  int proc_null;     /* completed at once with an empty status */
  void *scratch;
  void *move_dst;
  const void *move_src;
  size_t move_len;
  const char *call;  /* the starting call, named by errors */
} fold__mpi_req_init;
/* A new request handle for the started operation (raises MPI_ERR_NO_MEM on
 * failure, after waiting for it). */
int fold__mpi_req_add(const fold__mpi_req_init *init, MPI_Request *out);
/* Wait for every request freed by MPI_Request_free (MPI_Finalize). */
void fold__mpi_req_drain(void);
/* The empty status (MPI_PROC_NULL, MPI_REQUEST_NULL). */
void fold__mpi_status_empty(MPI_Status *st);

#endif /* FOLD_MPI_IMPL_H */
