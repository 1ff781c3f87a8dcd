/* pingpong_mpi.c — the MPI backend of the ping-pong benchmark; the harness
 * (sizes, counts, timing, output) is pingpong.c, included below, so MPI and
 * fold are measured by the very same code.
 *
 * Built by bench/pingpong.sh with an MPI compiler wrapper, never by CMake
 * (the main build does not need MPI):
 *   mpicc.openmpi -O2 -std=c11 -I bench -o pingpong_mpi bench/pingpong_mpi.c
 * PINGPONG_MPI_NAME sets the implementation label printed in the output
 * (default "mpi"; the script passes "ompi").
 */
#define _POSIX_C_SOURCE 200809L /* before any system header: clock_gettime */
#include <mpi.h>
#include <stdio.h>

#ifndef PINGPONG_MPI_NAME
#define PINGPONG_MPI_NAME "mpi"
#endif

enum { PP_MPI_TAG = 7 }; /* any tag: the harness sends one stream */

static int pp_mpi_check(const char *op, int rc) {
  if (rc == MPI_SUCCESS) return 0;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  fprintf(stderr, "pingpong: %s: %s\n", op, msg);
  return -1;
}

static int pp_init(int *argc, char ***argv, int *rank, int *size) {
  if (pp_mpi_check("MPI_Init", MPI_Init(argc, argv)) != 0) return -1;
  /* Errors come back as codes, so that they are printed, not fatal. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  return 0;
}

static int pp_send(const void *buf, size_t bytes, int peer) {
  return pp_mpi_check("MPI_Send",
                      MPI_Send(buf, (int)bytes, MPI_BYTE, peer, PP_MPI_TAG, MPI_COMM_WORLD));
}

static int pp_recv(void *buf, size_t bytes, int peer) {
  return pp_mpi_check("MPI_Recv", MPI_Recv(buf, (int)bytes, MPI_BYTE, peer, PP_MPI_TAG,
                                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

static void pp_finalize(void) { MPI_Finalize(); }

/* MPI_Finalize would wait for the peer; MPI_Abort ends the whole job. */
static void pp_abort(void) { MPI_Abort(MPI_COMM_WORLD, 1); }

static const char *pp_name(void) { return PINGPONG_MPI_NAME; }

#define PINGPONG_BACKEND_DEFINED 1
#include "pingpong.c"
