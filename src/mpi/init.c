/* init.c — the MPI environment: MPI_Init/Init_thread/Finalize/Abort, the clock, names and versions. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_impl.h"

int fold__mpi_state;
int fold__mpi_world_rank;

static int init(const char *call) {
  if (fold__mpi_state != 0) {
    fprintf(stderr, "fold MPI: %s: called %s\n", call,
            fold__mpi_state == 1 ? "twice (MPI is initialized already)" : "after MPI_Finalize");
    fflush(NULL);
    _exit(1);
  }
  fold_comm *world = NULL, *self = NULL;
  int rc = fold_init(&world);
  if (rc != FOLD_OK) {
    /* no communicator yet, so no handler: MPI_ERRORS_ARE_FATAL is the default */
    fprintf(stderr, "fold MPI: %s: %s [%s]\n", call, fold_comm_last_error(NULL), fold_strerror(rc));
    fflush(NULL);
    _exit(1);
  }
  int n = fold_comm_size(world);
  fold__mpi_world_rank = fold_comm_rank(world);
  int *wr = malloc(sizeof(int) * (size_t)n), *sr = malloc(sizeof(int));
  rc = wr && sr ? fold_comm_init_threads(1, &self) : FOLD_ENOMEM;
  if (rc != FOLD_OK) {
    fprintf(stderr, "fold MPI: %s: rank %d: cannot make MPI_COMM_SELF: %s\n", call, fold__mpi_world_rank,
            fold_strerror(rc));
    fflush(NULL);
    _exit(1);
  }
  for (int i = 0; i < n; i++)
    wr[i] = i;
  *sr = fold__mpi_world_rank;
  MPI_Comm h;
  fold__mpi_comm_add(world, wr, MPI_ERRORS_ARE_FATAL, &h); /* handle 1: MPI_COMM_WORLD */
  fold__mpi_comm_add(self, sr, MPI_ERRORS_ARE_FATAL, &h);  /* handle 2: MPI_COMM_SELF */
  fold__mpi_state = 1;
  return MPI_SUCCESS;
}

int MPI_Init(int *argc, char ***argv) { return init("MPI_Init"); }

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  int rc = init("MPI_Init_thread");
  if (provided)
    *provided = required < MPI_THREAD_SERIALIZED ? required : MPI_THREAD_SERIALIZED;
  return rc;
}

int MPI_Query_thread(int *provided) {
  if (provided)
    *provided = MPI_THREAD_SERIALIZED;
  return MPI_SUCCESS;
}

int MPI_Is_thread_main(int *flag) {
  if (flag)
    *flag = 1; /* no thread is told apart: any thread may call, one at a time */
  return MPI_SUCCESS;
}

int MPI_Finalize(void) {
  if (fold__mpi_state != 1)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI_Finalize", "MPI is not initialized");
  fold__mpi_req_drain();
  /* a barrier first, so that no rank leaves (and is seen as lost) while a peer still needs it */
  fold__mpi_comm *w = fold__mpi_comm_get(MPI_COMM_WORLD);
  int rc = fold_barrier(w->fc);
  int err = fold__mpi_fold_error(MPI_COMM_WORLD, w->fc, rc, "MPI_Finalize", 0);
  fold__mpi_comm_free_all();
  fold__mpi_state = 2;
  return err;
}

int MPI_Initialized(int *flag) {
  if (flag)
    *flag = fold__mpi_state != 0;
  return MPI_SUCCESS;
}

int MPI_Finalized(int *flag) {
  if (flag)
    *flag = fold__mpi_state == 2;
  return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm comm, int errorcode) {
  fprintf(stderr, "fold MPI: MPI_Abort: rank %d: called with error code %d on communicator %d: ending the job\n",
          fold__mpi_world_rank, errorcode, comm);
  fflush(NULL);
  /* foldrun stops the other ranks when one fails; its status is that of the first failure */
  _exit(errorcode & 0xff ? errorcode & 0xff : 1);
}

double MPI_Wtime(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double MPI_Wtick(void) {
  struct timespec ts;
  if (clock_getres(CLOCK_MONOTONIC, &ts) != 0)
    return 1e-9;
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int MPI_Get_processor_name(char *name, int *resultlen) {
  if (name == NULL || resultlen == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Get_processor_name", "a NULL argument");
  if (gethostname(name, MPI_MAX_PROCESSOR_NAME) != 0)
    snprintf(name, MPI_MAX_PROCESSOR_NAME, "localhost");
  name[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
  *resultlen = (int)strlen(name);
  return MPI_SUCCESS;
}

int MPI_Get_version(int *version, int *subversion) {
  if (version)
    *version = MPI_VERSION;
  if (subversion)
    *subversion = MPI_SUBVERSION;
  return MPI_SUCCESS;
}

int MPI_Get_library_version(char *version, int *resultlen) {
  if (version == NULL || resultlen == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Get_library_version", "a NULL argument");
  snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
           "fold %s MPI layer (a subset of MPI %d.%d over fold's collectives; docs/mpi.md)", fold_version(),
           MPI_VERSION, MPI_SUBVERSION);
  *resultlen = (int)strlen(version);
  return MPI_SUCCESS;
}

int MPI_Pcontrol(const int level, ...) { return MPI_SUCCESS; }

double fold__mpi_timeout_s(void) {
  char buf[64];
  if (fold_config_get("FOLD_TIMEOUT", buf, sizeof buf) > 0) {
    double t = strtod(buf, NULL);
    if (t > 0)
      return t;
  }
  return 300;
}
