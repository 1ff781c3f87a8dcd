/* coll_case.h — the collective test cases shared by the thread matrix and the process runs. */
#ifndef FOLD_COLL_CASE_H
#define FOLD_COLL_CASE_H
#include <stdint.h>
#include "fold.h"

enum { BROADCAST, REDUCE, ALLREDUCE, REDUCE_SCATTER, ALLGATHER, GATHER, SCATTER, ALLTOALL, BARRIER, NCOLL };
extern const char *coll_names[NCOLL];
extern const char *algos[NCOLL][10]; /* "auto" first, NULL-terminated */
extern int opt_quick, opt_verbose;
/* tcase.algo of the `shm` algorithm, which is not in algos[]: ranks as
 * threads cannot run it (coll_procs runs it over shm, and expects
 * FOLD_EINVAL over tcp when opt_expect_refusal is set). */
#define ALGO_SHM 100
extern int opt_expect_refusal;
const char *algo_name(int coll, int algo);

typedef struct {
  int coll, algo;
  size_t count;
  fold_dtype dt;
  int op;          /* builtin, REF_OP_AFFINE, or -1 for random float sums */
  int in_place, root, nonblocking;
  uint64_t stream;
} tcase;

typedef struct {
  tcase *cases;
  int ncases;
} plan_t;

void plan_add(plan_t *p, tcase t);
/* The cases of one (collective, algorithm) at n ranks; identical on every rank. */
void make_plan(plan_t *p, int coll, int algo, int n);
/* Run one case on this rank (every rank calls it); returns failed checks. */
int run_case(fold_comm *c, const tcase *t, fold_op affine);
#endif
