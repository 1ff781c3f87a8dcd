/* registry.h — the one list of collectives and their algorithms; kinds, names, declarations and tables come from it. */
#ifndef FOLD_REGISTRY_H
#define FOLD_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "fold.h"

/* ---- the lists ------------------------------------------------------------------
 * X-macro lists (libuv's style): a user defines X and expands the list, so
 * the enum, the names, the extern declarations and the tables below cannot
 * drift apart. Positions are wire and file format: fold__sig carries the
 * collective's and the algorithm's index, fold_comm_set_algo stores the
 * algorithm's index in coll_algo[], and FOLD_ALGO and rules files carry the
 * names. So entries are only ever appended, never reordered or renamed.
 *
 * Every collective, X(KIND, name), in the FOLD_ALGO grammar's order. Each
 * has a list FOLD__ALGOS_<name> below. */
#define FOLD__COLLS(X)              \
  X(BROADCAST, broadcast)           \
  X(REDUCE, reduce)                 \
  X(ALLREDUCE, allreduce)           \
  X(REDUCE_SCATTER, reduce_scatter) \
  X(ALLGATHER, allgather)           \
  X(GATHER, gather)                 \
  X(SCATTER, scatter)               \
  X(ALLTOALL, alltoall)             \
  X(BARRIER, barrier)

/* A collective's algorithms, X(collective, algorithm), in index order. The
 * descriptor is fold__<collective>_<algorithm>, defined in
 * src/coll/<collective>/<collective>_<algorithm>.c with .name "<algorithm>"
 * (tests/coll/registry_unit.c checks both). Adding an algorithm is one line
 * here plus its file. */
#define FOLD__ALGOS_broadcast(X) \
  X(broadcast, binomial)         \
  X(broadcast, scatter_allgather) \
  X(broadcast, pipeline)         \
  X(broadcast, shm)               \
  X(broadcast, hier)
#define FOLD__ALGOS_reduce(X) \
  X(reduce, binomial)         \
  X(reduce, rabenseifner)     \
  X(reduce, shm)              \
  X(reduce, hier)
#define FOLD__ALGOS_allreduce(X)     \
  X(allreduce, reduce_bcast)         \
  X(allreduce, recursive_doubling)   \
  X(allreduce, rabenseifner)         \
  X(allreduce, ring)                 \
  X(allreduce, ring_segmented)       \
  X(allreduce, direct)               \
  X(allreduce, shm)                  \
  X(allreduce, ring_skip)            \
  X(allreduce, hier)
#define FOLD__ALGOS_reduce_scatter(X)       \
  X(reduce_scatter, recursive_halving)      \
  X(reduce_scatter, ring)                   \
  X(reduce_scatter, pairwise)               \
  X(reduce_scatter, shm)                    \
  X(reduce_scatter, ring_skip)              \
  X(reduce_scatter, hier)
#define FOLD__ALGOS_allgather(X)   \
  X(allgather, recursive_doubling) \
  X(allgather, bruck)              \
  X(allgather, ring)               \
  X(allgather, shm)                \
  X(allgather, hier)
#define FOLD__ALGOS_gather(X) \
  X(gather, binomial)         \
  X(gather, linear)           \
  X(gather, shm)
#define FOLD__ALGOS_scatter(X) \
  X(scatter, binomial)         \
  X(scatter, linear)           \
  X(scatter, shm)
#define FOLD__ALGOS_alltoall(X) \
  X(alltoall, pairwise)         \
  X(alltoall, bruck)            \
  X(alltoall, shm)
#define FOLD__ALGOS_barrier(X) \
  X(barrier, dissemination)    \
  X(barrier, shm)              \
  X(barrier, hier)

/* ---- what the lists generate ---------------------------------------------------- */

/* The collectives: FOLD__COLL_BROADCAST, ... and their number. */
typedef enum {
#define FOLD__COLL_ENUM_(KIND, name) FOLD__COLL_##KIND,
  FOLD__COLLS(FOLD__COLL_ENUM_)
#undef FOLD__COLL_ENUM_
  FOLD__COLL_COUNT
} fold__coll_kind;

/* Per collective, each algorithm's index (FOLD__ALGO_allreduce_ring, ...)
 * and their number (FOLD__ALGO_COUNT_allreduce). */
#define FOLD__ALGO_ENUM_(coll, algo) FOLD__ALGO_##coll##_##algo,
#define FOLD__ALGO_ENUMS_(KIND, name) enum { FOLD__ALGOS_##name(FOLD__ALGO_ENUM_) FOLD__ALGO_COUNT_##name };
FOLD__COLLS(FOLD__ALGO_ENUMS_)
#undef FOLD__ALGO_ENUMS_
#undef FOLD__ALGO_ENUM_

/* fold__sig stores both indexes in a byte, and coll_algo[] (struct
 * fold_comm) the algorithm's in a signed char with -1 for automatic. */
_Static_assert(FOLD__COLL_COUNT <= 255, "a collective's index fits fold__sig.coll");
#define FOLD__ALGO_FITS_(KIND, name)                                                                              \
  _Static_assert(FOLD__ALGO_COUNT_##name >= 1 && FOLD__ALGO_COUNT_##name <= 127,                                  \
                 #name ": every algorithm index fits fold__sig.algo and coll_algo[]");
FOLD__COLLS(FOLD__ALGO_FITS_)
#undef FOLD__ALGO_FITS_

/* ---- the algorithm interface ------------------------------------------------------ */

typedef struct fold__coll fold__coll; /* one call in flight: coll/coll.h */

/* An algorithm: a pure description of its rounds.
 *  init(co):  check that it can serve the call (e.g. refuse a
 *             non-commutative op: FOLD_EINVAL with a message), set
 *             co->tmp_bytes and any per-call numbers in co->u/co->v.
 *  round(co, k): emit round k's ops with fold__co_send/recv/reduce/copy;
 *             return 1 if round k exists (it may be empty), 0 when k is past
 *             the last round. Rounds run one after another: every send and
 *             receive of a round is started, and when all are complete the
 *             round's local ops run in order. */
typedef struct fold__algo {
  const char *name;
  int (*init)(fold__coll *co);
  int (*round)(fold__coll *co, int k);
  int noncommutative_ok; /* keeps rank order for non-commutative ops */
  /* Optional, NULL for round algorithms. An algorithm with its own state
   * machine instead of rounds (the shm collectives, src/transport/shm/shm_area.c):
   * usable(c) is NULL when it can run on c, else why not (selection skips
   * it; forcing it is FOLD_EINVAL); step(co) replaces the round executor
   * (1 done, 0 waiting, <0 error) and checks call signatures itself. */
  const char *(*usable)(const fold_comm *c);
  int (*step)(fold__coll *co);
  /* Optional: NULL when one element of esize bytes fits the algorithm's
   * unit of work (a shm slot), else why not. Elements are never split, so
   * an algorithm that cannot hold one is skipped (forcing it is FOLD_EINVAL). */
  const char *(*fits)(const fold_comm *c, fold__coll_kind kind, size_t esize);
  /* Optional, with step: what the call still waits for, for a timeout's
   * message (see fold__task.describe); returns the first awaited rank or -1. */
  int (*describe)(fold__coll *co, char *buf, size_t cap);
} fold__algo;

/* ---- one call's facts -------------------------------------------------------------
 * Everything about a collective call that does not change while it runs,
 * worked out once by the start (fold__call_init, coll/coll_start.c) from
 * the arguments, the dtype, the op and the per-call options, and passed
 * down: selection reads it and records its choice in it
 * (fold__select_call, select/select.h), the executor's call state
 * (fold__coll, coll/coll.h) is filled from it. Nothing on the way looks a
 * fact up again. */

/* fold__select_call's force: the communicator's choice (FOLD_ALGO or
 * fold_comm_set_algo; select/select.h). */
#define FOLD__SELECT_COMM (-2)

/* What a call's fold_coll_opts ask for (coll/coll_opts.c), checked. */
typedef struct fold__call_opts {
  int force;          /* FOLD__SELECT_COMM, -1 (automatic selection) or an algorithm index */
  int64_t timeout_ns; /* 0: the communicator's FOLD_TIMEOUT */
  size_t seg_bytes;   /* the communicator's FOLD_SEGMENT_BYTES unless the call sets one; 0: the algorithm's default */
} fold__call_opts;

typedef struct fold__user_op fold__user_op; /* op/op.h */

typedef struct fold__call {
  fold__coll_kind kind;
  fold_dtype dtype;    /* FOLD_UINT8 for a barrier */
  fold_op op;          /* FOLD_SUM where the call reduces nothing */
  size_t count;        /* the call's count argument (0 for a barrier) */
  size_t esize;        /* bytes per element of dtype */
  size_t wsize;        /* bytes per element the algorithms work on: esize, or FOLD_SUM_EXACT's accumulator */
  size_t in_n;         /* elements of this rank's input (count, or count * size for reduce_scatter) */
  size_t bytes;        /* count * wsize: the size selection goes by */
  int root;            /* -1 for collectives without a root */
  int rooted, reduces; /* the kind has a root; it combines with op */
  int commutative;     /* op may combine in any order (1 where the call reduces nothing) */
  int exact;           /* FOLD_SUM_EXACT: the call runs on accumulators, rounded once at the end */
  int in_place;        /* the caller's in-place form (fold.h) */
  const fold__user_op *user; /* op's entry when it is a user op (fold_op_create), else NULL */
  fold__call_opts opt; /* the per-call options */
  /* selection's choice (fold__select_call): the algorithm and its index in
   * the collective's table (the signature carries the index) */
  const fold__algo *algo;
  int algo_idx;
} fold__call;

/* Every algorithm's descriptor: extern const fold__algo fold__allreduce_ring; ... */
#define FOLD__ALGO_EXTERN_(coll, algo) extern const fold__algo fold__##coll##_##algo;
#define FOLD__ALGO_EXTERNS_(KIND, name) FOLD__ALGOS_##name(FOLD__ALGO_EXTERN_)
FOLD__COLLS(FOLD__ALGO_EXTERNS_)
#undef FOLD__ALGO_EXTERNS_
#undef FOLD__ALGO_EXTERN_

/* A collective's name and algorithms (registry.c), indexed by fold__coll_kind. */
typedef struct fold__algo_table {
  const char *coll_name;
  const fold__algo *const *algos; /* NULL-terminated, in index order */
  int count;                      /* algorithms before the NULL */
} fold__algo_table;
extern const fold__algo_table fold__algo_tables[FOLD__COLL_COUNT];

/* ---- lookups (registry.c) ---------------------------------------------------------- */

/* The collective's name, or "?" for an index out of range (a signature
 * read from a peer may carry anything). */
const char *fold__coll_name(fold__coll_kind k);
/* The collective named by s[0, len), or -1 (rules files and FOLD_ALGO). */
int fold__coll_index(const char *s, size_t len);
/* The collective names, space-separated in the FOLD_ALGO grammar's order,
 * for "known: ..." in messages (truncated to len). */
void fold__coll_names(char *buf, size_t len);
/* Look an algorithm up by name; -1 if the collective has none of that name. */
int fold__algo_index(fold__coll_kind kind, const char *name, size_t len);
/* The index of algo in the table of collective k (-1 if it is not there). */
int fold__coll_algo_index(fold__coll_kind k, const fold__algo *algo);
/* The collective's algorithm names, space-separated, for "known: ..." in
 * messages (truncated to len). */
void fold__algo_names(fold__coll_kind kind, char *buf, size_t len);

#endif
