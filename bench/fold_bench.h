/* fold_bench.h — what the two halves of fold-bench share: the collective table and one prepared call. */
#ifndef FOLD_BENCH_H
#define FOLD_BENCH_H

#include <stddef.h>

#include "fold.h"

/* The collectives, in the order `-c all` runs them. */
typedef enum fb_coll {
  FB_ALLREDUCE = 0,
  FB_BROADCAST,
  FB_REDUCE,
  FB_REDUCE_SCATTER,
  FB_ALLGATHER,
  FB_GATHER,
  FB_SCATTER,
  FB_ALLTOALL,
  FB_BARRIER,
  FB_NCOLL
} fb_coll;

#define FB_MAX_ALGOS 10

typedef struct fb_coll_info {
  const char *name;                 /* as in fold_comm_set_algo specs */
  int reduces;                      /* takes an op */
  int rooted;                       /* takes a root */
  int in_place;                     /* has a distinct in-place form worth timing */
  const char *algos[FB_MAX_ALGOS];  /* docs/collectives.md, NULL-terminated */
} fb_coll_info;

extern const fb_coll_info fb_colls[FB_NCOLL];

/* One call as the benchmark makes it: the shape follows the nccl-tests size
 * convention (see fb_shape), the buffers are the two allocated once at the
 * largest size. */
typedef struct fb_call {
  fb_coll coll;
  fold_dtype dtype;
  fold_op op;
  int root;
  int in_place;
  int rank, n;
  size_t count;  /* the count argument of the fold call */
  size_t bytes;  /* the row's size in bytes (nccl-tests convention) */
  char *sbuf;    /* send buffer (out of place) */
  char *rbuf;    /* receive buffer; holds everything in place */
  const char *algo; /* forced for the measured calls only (fb_force); NULL: automatic */
} fb_call;

/* Shape a call of `size` bytes on n ranks for elements of es bytes: sets
 * k->count (the call's count argument, rounded down to whole elements) and
 * k->bytes (the size actually moved in the row's convention). Returns 0 when
 * the size gives no element (the row is skipped), except for barrier, which
 * always gives one row of 0 bytes. Every layout, in place or not, fits in
 * two buffers of `size` bytes each. */
int fb_shape(fb_call *k, size_t size);

/* busbw / algbw for coll on n ranks (nccl-tests' factors; 0 for barrier). */
double fb_bus_factor(fb_coll coll, int n);

/* Make the call with the layout of k (in place or not). Blocking; returns
 * the fold status. */
int fb_run(const fb_call *k, fold_comm *comm);

/* Force k->algo on k's collective (on = 1) or return it to automatic
 * selection (on = 0). Only the measured calls run forced: the barriers and
 * agreeing allreduces around them stay automatic, so an algorithm this
 * communicator cannot run (e.g. allreduce=shm over tcp) refuses the
 * measured call alone. Exits with a message if fold rejects the spec. */
void fb_force(const fb_call *k, fold_comm *comm, int on);

/* Monotonic time in seconds. */
double fb_now(void);

/* Print "fold-bench: rank R: WHAT failed: ..." with the communicator's last
 * error and exit(1). */
_Noreturn void fb_die(fold_comm *comm, const char *what, int rc);

/* The timed loop both the tables and --tune use: warm + iters calls of k,
 * each after a barrier, forced (fb_force) and timed alone; this rank's
 * times of the last iters go to t. Then tmax[i] = the slowest rank's time
 * of iteration i, sorted ascending (the same on every rank). Returns the
 * median of tmax. A failing call exits through fb_die. With fb_user_loop
 * set (--user-loop), each iteration ends with an 8 B MAX allreduce of its
 * time instead (barrier, call, allreduce of the time: a user's timing loop),
 * and no allreduce follows the loop. */
extern int fb_user_loop;
double fb_time_calls(const fb_call *k, fold_comm *comm, int warm, int iters, double *t, double *tmax);

/* --check: write this rank's exact inputs where the call reads them and a
 * poison pattern where it writes. */
void fb_fill(const fb_call *k);

/* --check: the number of this rank's result elements that differ from the
 * reference computed locally (0 where this rank receives nothing). */
long fb_check(const fb_call *k);

/* 1 when op is defined on dtype for the built-in kernels (bitwise ops are
 * integer-only). */
int fb_op_valid(fold_op op, fold_dtype dtype);

/* Name of a built-in op ("sum"). */
const char *fb_op_name(fold_op op);

#if defined(__GNUC__)
#define FB_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define FB_PRINTF(a, b)
#endif

/* What --tune needs of the command line (docs/fold-bench.md, "Tuning"). */
typedef struct fb_tune_args {
  const char *path;      /* the rules file to create or update */
  int coll;              /* fb_coll, or -1: every collective with more than one algorithm */
  size_t minb, maxb, factor;
  fold_dtype dtype;
  fold_op op;
  int iters, warmup, root;
} fb_tune_args;

/* --tune: time every algorithm of the chosen collectives over the sweep on
 * comm, print the table and the chosen rules (rank 0), and merge them into
 * a->path (rank 0, atomically). sbuf and rbuf hold a->maxb bytes each.
 * Collective over comm; returns the exit status, the same on every rank. */
int fb_tune(const fb_tune_args *a, fold_comm *comm, char *sbuf, char *rbuf);

#endif /* FOLD_BENCH_H */
