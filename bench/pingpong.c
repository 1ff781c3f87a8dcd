/* pingpong.c — ping-pong latency/bandwidth benchmark between ranks 0 and 1:
 * the measuring harness, shared verbatim with the MPI build, plus the fold
 * backend.
 *
 * Why one harness for two programs: the comparison with Open MPI is only
 * honest if both sides run exactly the same method (sizes, iteration counts,
 * buffers, clock, statistics). pingpong_mpi.c defines the MPI backend and
 * then #includes this file with PINGPONG_BACKEND_DEFINED set, so the fold
 * backend below is skipped and everything after it is shared.
 *
 * A backend provides six static functions:
 *   pp_init(&argc, &argv, &rank, &size)   join the job; 0 or -1
 *   pp_send(buf, bytes, peer)             blocking send (one fixed tag); 0 or -1
 *   pp_recv(buf, bytes, peer)             blocking receive; 0 or -1
 *   pp_finalize()                         leave the job (after success)
 *   pp_abort()                            leave after a failure, so that the
 *                                         peer does not wait on us forever
 *   pp_name()                             "fold" / "ompi" / ... for the output
 * and on failure prints its own message to stderr.
 *
 * Method (docs/pingpong.md):
 *   for each size: warm-up round trips, then `reps` repeats of `n` round trips
 *   timed on rank 0 with CLOCK_MONOTONIC; one-way latency of a repeat is
 *   elapsed / n / 2; reported: median and minimum over repeats; bandwidth is
 *   size / median one-way time (1 GB = 1e9 bytes). Rank 1 echoes every
 *   message from the same buffer it received into. Both buffers are
 *   allocated once at the largest size, page-aligned and touched before
 *   any timing. The round trips per size follow a cost model given by the
 *   arguments (never measured times), so every implementation run with the
 *   same arguments runs the same counts.
 *
 * Output: TSV on stdout (lines starting with '#' are comments):
 *   impl size_bytes iters reps lat_us_median lat_us_min bw_GBps
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PP_TAG 7

#ifndef PINGPONG_BACKEND_DEFINED
/* ---- fold backend ------------------------------------------------------ */
#include "fold.h"

static fold_comm *pp_comm;
/* PINGPONG_ANY=1: receive with FOLD_ANY_SOURCE and FOLD_ANY_TAG, to compare
 * a wildcard receive's latency with a specific one (docs/pingpong.md). */
static int pp_any;

static int pp_fail(const char *op, int rc) {
  fprintf(stderr, "pingpong: %s: %s (%s)\n", op, fold_strerror(rc),
          fold_comm_last_error(pp_comm));
  return -1;
}

static int pp_init(int *argc, char ***argv, int *rank, int *size) {
  (void)argc; /* fold_init reads the environment, not the command line */
  (void)argv;
  const char *any = getenv("PINGPONG_ANY");
  pp_any = any != NULL && strcmp(any, "1") == 0;
  int rc = fold_init(&pp_comm);
  if (rc != FOLD_OK) return pp_fail("fold_init", rc);
  *rank = fold_comm_rank(pp_comm);
  *size = fold_comm_size(pp_comm);
  return 0;
}

static int pp_send(const void *buf, size_t bytes, int peer) {
  int rc = fold_send(buf, bytes, FOLD_UINT8, peer, PP_TAG, pp_comm);
  return rc == FOLD_OK ? 0 : pp_fail("fold_send", rc);
}

static int pp_recv(void *buf, size_t bytes, int peer) {
  int rc = pp_any ? fold_recv(buf, bytes, FOLD_UINT8, FOLD_ANY_SOURCE, FOLD_ANY_TAG, pp_comm)
                  : fold_recv(buf, bytes, FOLD_UINT8, peer, PP_TAG, pp_comm);
  return rc == FOLD_OK ? 0 : pp_fail("fold_recv", rc);
}

static void pp_finalize(void) {
  fold_comm_destroy(pp_comm);
  pp_comm = NULL;
}

/* Destroying the communicator is enough: the peer sees FOLD_EPEER. */
static void pp_abort(void) {
  fold_comm_abort(pp_comm);
  pp_finalize();
}

static const char *pp_name(void) { return pp_any ? "fold-any" : "fold"; }
#endif /* PINGPONG_BACKEND_DEFINED */

/* ---- shared harness ---------------------------------------------------- */

/* 0 B, then 8 B * 8^k up to 4 KiB, then 32 KiB * 8^k ... then 64 MiB. */
static const size_t pp_sizes[] = {
  0, 8, 64, 512, 4096, 32768, 262144, 1u << 20, 4u << 20, 16u << 20, 64u << 20,
};
#define PP_NSIZES (sizeof pp_sizes / sizeof pp_sizes[0])

typedef struct pp_opts {
  double target_s;  /* model time budget per size, seconds */
  double alpha_s;   /* model one-way latency, seconds */
  double beta_Bps;  /* model bandwidth, bytes per second */
  int reps;         /* repeats per size; the median is reported */
  size_t max_bytes; /* skip sizes above this */
} pp_opts;

static double pp_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Total timed round trips for one size: target_s divided by the model round
 * trip 2 * (alpha + bytes / beta), clamped to [2*reps, 10^7] and rounded down
 * to a multiple of reps. The model is given on the command line (-a, -b), not
 * measured: the counts then depend on the size and the arguments only, so
 * two implementations run with the same arguments run the same counts.
 * pingpong.sh gives each transport class (shm, tcp) a model close to what
 * it delivers, so that each size takes a few tenths of a second. */
static long pp_total_iters(size_t bytes, const pp_opts *o) {
  double rt = 2.0 * (o->alpha_s + (double)bytes / o->beta_Bps);
  double n = o->target_s / rt;
  long t = n > 1e7 ? 10000000L : (long)n;
  if (t < 2L * o->reps) t = 2L * o->reps;
  return t - t % o->reps;
}

/* Untimed warm-up round trips before a size: a tenth of the timed ones, at
 * least 2 (first use of each protocol path: eager, rendezvous, pipelining). */
static long pp_warm_iters(long total) { return total / 10 < 2 ? 2 : total / 10; }

static int pp_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* n round trips seen from rank 0 (send, then receive the echo). */
static int pp_ping(char *sbuf, char *rbuf, size_t bytes, long n) {
  for (long i = 0; i < n; i++) {
    if (pp_send(sbuf, bytes, 1) != 0 || pp_recv(rbuf, bytes, 1) != 0) return -1;
  }
  return 0;
}

/* n round trips seen from rank 1: receive, send the same buffer back. */
static int pp_pong(char *buf, size_t bytes, long n) {
  for (long i = 0; i < n; i++) {
    if (pp_recv(buf, bytes, 0) != 0 || pp_send(buf, bytes, 0) != 0) return -1;
  }
  return 0;
}

/* One size on rank 0: warm-up, timed repeats, echo check, one TSV line. */
static int pp_measure(char *sbuf, char *rbuf, size_t bytes, const pp_opts *o) {
  long total = pp_total_iters(bytes, o), n = total / o->reps, warm = pp_warm_iters(total);
  double lat[64];

  memset(rbuf, 0, bytes); /* so that the echo check below means something */
  if (pp_ping(sbuf, rbuf, bytes, warm) != 0) return -1;
  for (int r = 0; r < o->reps; r++) {
    double t0 = pp_now();
    if (pp_ping(sbuf, rbuf, bytes, n) != 0) return -1;
    lat[r] = (pp_now() - t0) / (double)n / 2.0;
  }
  if (memcmp(sbuf, rbuf, bytes) != 0) {
    fprintf(stderr, "pingpong: %s: echo of %zu bytes differs from what was sent\n", pp_name(),
            bytes);
    return -1;
  }

  qsort(lat, (size_t)o->reps, sizeof lat[0], pp_cmp_double);
  double med = o->reps % 2 ? lat[o->reps / 2]
                           : 0.5 * (lat[o->reps / 2 - 1] + lat[o->reps / 2]);
  printf("%s\t%zu\t%ld\t%d\t%.3f\t%.3f\t%.6f\n", pp_name(), bytes, total, o->reps, med * 1e6,
         lat[0] * 1e6, (double)bytes / med / 1e9);
  fflush(stdout);
  return 0;
}

static void pp_usage(void) {
  fprintf(stderr,
          "usage: pingpong [-t seconds] [-a us] [-b GBps] [-r repeats] [-m max_bytes]\n"
          "  -t  time budget per size under the model (default 0.3)\n"
          "  -a  model one-way latency in us (default 10)\n"
          "  -b  model bandwidth in GB/s (default 4)\n"
          "  -r  repeats per size, median reported (1..64, default 5)\n"
          "  -m  largest size to run (default 67108864)\n");
}

static int pp_parse(int argc, char **argv, pp_opts *o) {
  o->target_s = 0.3;
  o->alpha_s = 10e-6;
  o->beta_Bps = 4e9;
  o->reps = 5;
  o->max_bytes = 64u << 20;
  for (int i = 1; i < argc; i += 2) { /* every option takes a value */
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end = NULL;
    if (v == NULL || a[0] != '-' || a[1] == '\0' || a[2] != '\0') return -1;
    errno = 0;
    if (a[1] == 't') o->target_s = strtod(v, &end);
    else if (a[1] == 'a') o->alpha_s = strtod(v, &end) * 1e-6;
    else if (a[1] == 'b') o->beta_Bps = strtod(v, &end) * 1e9;
    else if (a[1] == 'r') o->reps = (int)strtol(v, &end, 10);
    else if (a[1] == 'm') o->max_bytes = (size_t)strtoull(v, &end, 10);
    else return -1;
    if (errno != 0 || end == v || *end != '\0') return -1;
  }
  if (!(o->target_s > 0) || !(o->alpha_s > 0) || !(o->beta_Bps > 0) || o->reps < 1 || o->reps > 64)
    return -1;
  return 0;
}

int main(int argc, char **argv) {
  int rank = -1, size = 0, rc = 0;
  pp_opts o;
  if (pp_init(&argc, &argv, &rank, &size) != 0) return 1;
  if (pp_parse(argc, argv, &o) != 0) {
    if (rank == 0) pp_usage();
    pp_finalize();
    return 2;
  }
  if (size < 2) {
    if (rank == 0) fprintf(stderr, "pingpong: needs 2 ranks, got %d\n", size);
    pp_finalize();
    return 2;
  }

  /* Allocate the largest buffer once and touch every page, so that no size
   * pays page faults or allocation inside the timed loop. */
  size_t cap = 0;
  for (size_t i = 0; i < PP_NSIZES; i++)
    if (pp_sizes[i] <= o.max_bytes && pp_sizes[i] > cap) cap = pp_sizes[i];
  char *sbuf = NULL, *rbuf = NULL;
  if (rank <= 1) {
    size_t alloc = cap < 4096 ? 4096 : (cap + 4095) / 4096 * 4096;
    sbuf = aligned_alloc(4096, alloc);
    rbuf = aligned_alloc(4096, alloc);
    if (sbuf == NULL || rbuf == NULL) {
      fprintf(stderr, "pingpong: rank %d: cannot allocate 2 x %zu bytes\n", rank, alloc);
      free(sbuf);
      free(rbuf);
      pp_abort();
      return 1;
    }
    for (size_t i = 0; i < alloc; i++) sbuf[i] = (char)(i * 131u + 17u);
    memset(rbuf, 0, alloc);
  }

  if (rank == 0) {
    printf("# pingpong %s: ranks 0<->1 of %d, reps %d, %.3f s/size for a model of %.3f us + "
           "%.3f GB/s\n",
           pp_name(), size, o.reps, o.target_s, o.alpha_s * 1e6, o.beta_Bps / 1e9);
    printf("# impl\tsize_bytes\titers\treps\tlat_us_median\tlat_us_min\tbw_GBps\n");
    fflush(stdout);
  }
  for (size_t i = 0; i < PP_NSIZES && rc == 0; i++) {
    size_t bytes = pp_sizes[i];
    if (bytes > o.max_bytes) continue;
    long total = pp_total_iters(bytes, &o);
    if (rank == 0) rc = pp_measure(sbuf, rbuf, bytes, &o);
    else if (rank == 1) rc = pp_pong(rbuf, bytes, pp_warm_iters(total) + total);
  }

  free(sbuf);
  free(rbuf);
  if (rc != 0) {
    pp_abort();
    return 1;
  }
  pp_finalize();
  return 0;
}
