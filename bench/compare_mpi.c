/* compare_mpi.c — bench/compare's MPI peer: times one collective over a size plan with fold-bench's method, via the MPI C API.
 *
 * Built by bench/compare with each implementation's wrapper (never by CMake,
 * so that the main build does not need MPI):
 *   mpicc.openmpi -O3 -DNDEBUG -std=c11 -o compare_mpi.openmpi bench/compare_mpi.c
 *   mpicc.mpich   -O3 -DNDEBUG -std=c11 -o compare_mpi.mpich   bench/compare_mpi.c
 *
 * Usage: compare_mpi -c COLL -p PLAN [-l LABEL]
 *   COLL  allreduce | broadcast | reduce_scatter | allgather | alltoall
 *   PLAN  SIZE:ITERS:WARMUP[,SIZE:ITERS:WARMUP...], sizes in bytes
 * float32, sum, root 0; sizes follow fold-bench (docs/fold-bench.md, "Sizes").
 *
 * Method, the same as fold-bench's so that the numbers compare: per size,
 * WARMUP untimed calls, then ITERS calls each preceded by MPI_Barrier and timed
 * alone on every rank; one MPI_Allreduce(MAX) over the per-iteration times
 * gives each iteration's slowest rank; rank 0 prints the median and the p99
 * of those maxima. Output (rank 0, stdout), one line per size:
 *   # compare lib=LABEL coll=COLL ranks=N dtype=float32 op=sum
 *   SIZE COUNT ITERS TIME_US P99_US
 * A size whose per-rank block holds no element is skipped, as fold-bench does. */
#define _POSIX_C_SOURCE 200809L /* before any system header: clock_gettime */
#include <mpi.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum coll { ALLREDUCE, BROADCAST, REDUCE_SCATTER, ALLGATHER, ALLTOALL, NCOLL };
static const char *const coll_names[NCOLL] = {"allreduce", "broadcast", "reduce_scatter", "allgather", "alltoall"};

typedef struct step {
  size_t size;
  int iters, warmup;
} step;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Parses PLAN into a malloc'd array; returns the step count, or -1. */
static int parse_plan(const char *s, step **out) {
  int cap = 1;
  for (const char *p = s; *p; p++) cap += *p == ',';
  step *v = calloc((size_t)cap, sizeof *v);
  if (v == NULL) return -1;
  int k = 0;
  while (*s) {
    char *end;
    unsigned long long size = strtoull(s, &end, 10);
    long it = 0, w = -1;
    if (end != s && *end == ':') it = strtol(end + 1, &end, 10);
    if (*end == ':') w = strtol(end + 1, &end, 10);
    if (size == 0 || it < 1 || w < 0 || (*end != ',' && *end != '\0')) {
      free(v);
      return -1;
    }
    v[k++] = (step){(size_t)size, (int)it, (int)w};
    s = *end ? end + 1 : end;
  }
  *out = v;
  return k;
}

/* Elements per call argument (the buffer for allreduce/broadcast, the
 * per-rank block otherwise) and the bytes that size stands for. */
static size_t shape(enum coll c, size_t size, int n, size_t *bytes) {
  size_t es = sizeof(float), count;
  if (c == ALLREDUCE || c == BROADCAST) {
    count = size / es;
    *bytes = count * es;
  } else {
    count = size / (size_t)n / es;
    *bytes = count * (size_t)n * es;
  }
  return count;
}

static int call(enum coll c, float *s, float *r, int count) {
  switch (c) {
  case ALLREDUCE: return MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  case BROADCAST: return MPI_Bcast(r, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
  case REDUCE_SCATTER: return MPI_Reduce_scatter_block(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  case ALLGATHER: return MPI_Allgather(s, count, MPI_FLOAT, r, count, MPI_FLOAT, MPI_COMM_WORLD);
  case ALLTOALL: return MPI_Alltoall(s, count, MPI_FLOAT, r, count, MPI_FLOAT, MPI_COMM_WORLD);
  default: return MPI_ERR_OTHER;
  }
}

static void die(int rank, const char *what, int rc) {
  char msg[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  fprintf(stderr, "compare_mpi[%d]: %s: %s\n", rank, what, msg);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
  const char *coll_arg = NULL, *plan_arg = NULL, *label = "mpi";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-c") == 0) coll_arg = argv[i + 1];
    else if (strcmp(argv[i], "-p") == 0) plan_arg = argv[i + 1];
    else if (strcmp(argv[i], "-l") == 0) label = argv[i + 1];
  }
  int c = 0;
  while (c < NCOLL && coll_arg && strcmp(coll_arg, coll_names[c]) != 0) c++;
  step *plan = NULL;
  int nsteps = plan_arg ? parse_plan(plan_arg, &plan) : -1;
  if (argc % 2 == 0 || coll_arg == NULL || c == NCOLL || nsteps < 1) {
    fprintf(stderr, "usage: compare_mpi -c allreduce|broadcast|reduce_scatter|allgather|alltoall "
                    "-p SIZE:ITERS:WARMUP[,...] [-l LABEL]\n");
    return 2;
  }

  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* codes come back, so they are printed */
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);

  /* Buffers sized once for the largest step and touched before any timing,
   * as fold-bench does: no page faults inside a timed call. */
  size_t maxbytes = 0, maxiters = 0, bytes;
  for (int i = 0; i < nsteps; i++) {
    shape((enum coll)c, plan[i].size, n, &bytes);
    if (bytes > maxbytes) maxbytes = bytes;
    if ((size_t)plan[i].iters > maxiters) maxiters = (size_t)plan[i].iters;
  }
  /* allgather receives n blocks, alltoall sends and receives n: size bytes
   * in all; reduce_scatter receives one block. Both buffers hold maxbytes. */
  float *s = malloc(maxbytes + 64), *r = malloc(maxbytes + 64);
  double *t = malloc(maxiters * sizeof *t), *tmax = malloc(maxiters * sizeof *tmax);
  if (!s || !r || !t || !tmax) {
    fprintf(stderr, "compare_mpi[%d]: out of memory (%zu bytes)\n", rank, maxbytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (size_t i = 0; i < maxbytes / sizeof(float); i++) s[i] = (float)(i % 7), r[i] = 0;

  if (rank == 0) {
    printf("# compare lib=%s coll=%s ranks=%d dtype=float32 op=sum\n", label, coll_names[c], n);
    printf("# size count iters time_us p99_us\n");
    fflush(stdout);
  }
  for (int i = 0; i < nsteps; i++) {
    size_t count = shape((enum coll)c, plan[i].size, n, &bytes);
    if (count == 0) continue;
    int rc;
    for (int w = 0; w < plan[i].warmup; w++)
      if ((rc = call((enum coll)c, s, r, (int)count)) != MPI_SUCCESS) die(rank, coll_names[c], rc);
    for (int it = 0; it < plan[i].iters; it++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now();
      rc = call((enum coll)c, s, r, (int)count);
      t[it] = now() - t0;
      if (rc != MPI_SUCCESS) die(rank, coll_names[c], rc);
    }
    if ((rc = MPI_Allreduce(t, tmax, plan[i].iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD)) != MPI_SUCCESS)
      die(rank, "MPI_Allreduce(times)", rc);
    if (rank == 0) {
      int k = plan[i].iters;
      qsort(tmax, (size_t)k, sizeof *tmax, cmp_double);
      double med = k % 2 ? tmax[k / 2] : (tmax[k / 2 - 1] + tmax[k / 2]) / 2;
      int p99 = (int)ceil(0.99 * k) - 1;
      /* the count column is the whole buffer in elements, fold-bench's convention */
      printf("%zu %zu %d %.3f %.3f\n", bytes, bytes / sizeof(float), k, med * 1e6, tmax[p99 < 0 ? 0 : p99] * 1e6);
      fflush(stdout);
    }
  }
  free(s), free(r), free(t), free(tmax), free(plan);
  MPI_Finalize();
  return 0;
}
