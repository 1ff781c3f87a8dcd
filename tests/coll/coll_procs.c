/* coll_procs.c — the collective matrix (sampled) with ranks as real processes, under any launcher. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coll/coll_case.h"
#include "coll/coll_ref.h"
#include "fold.h"

/* Usage: coll_procs [--coll NAME] [--algo NAME]
 * Rank/size/store from the environment (foldrun, mpirun, namespaces). Runs
 * every algorithm of every collective (or one) with the --quick sample of
 * coll_matrix's cases at this job's rank count, then the `shm` algorithm:
 * it must work when FOLD_TRANSPORT=shm, and be refused (FOLD_EINVAL) when
 * FOLD_TRANSPORT=tcp; without FOLD_TRANSPORT it is not run. */
int main(int argc, char **argv) {
  check_keep_heap();
  const char *only = NULL, *only_algo = NULL;
  for (int i = 1; i + 1 < argc; i++) {
    if (!strcmp(argv[i], "--coll")) only = argv[++i];
    else if (!strcmp(argv[i], "--algo")) only_algo = argv[++i];
  }
  const char *tp = getenv("FOLD_TRANSPORT");
  int shm_mode = tp && !strcmp(tp, "shm") ? 1 : tp && !strcmp(tp, "tcp") ? 2 : 0; /* 0: not run */
  fold_comm *c;
  int rc = fold_init(&c);
  if (rc) {
    fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
    return 2;
  }
  int n = fold_comm_size(c), me = fold_comm_rank(c), total = 0;
  fold_op affine;
  CHECK_OK(fold_op_create(&affine, ref_affine_fn, NULL, 0, c), c);
  opt_quick = 1;
  for (int coll = 0; coll < NCOLL; coll++) {
    if (only && strcmp(only, coll_names[coll])) continue;
    int list[10], nl = 0;
    for (int a = 0; algos[coll][a]; a++) list[nl++] = a;
    if (shm_mode) list[nl++] = ALGO_SHM; /* after the table: shm */
    for (int li = 0; li < nl; li++) {
      int a = list[li];
      if (only_algo && strcmp(only_algo, algo_name(coll, a))) continue;
      opt_expect_refusal = a == ALGO_SHM && shm_mode == 2;
      plan_t plan = {0};
      make_plan(&plan, coll, a, n);
      int before = atomic_load(&check_failures);
      for (int i = 0; i < plan.ncases && atomic_load(&check_failures) - before < 5; i++) run_case(c, &plan.cases[i], affine);
      if (me == 0)
        printf("%-14s %-18s n=%d %4d cases %s%s\n", coll_names[coll], algo_name(coll, a), n, plan.ncases,
               atomic_load(&check_failures) > before ? "FAILED" : "ok", opt_expect_refusal ? " (refused, as it must be)" : "");
      total += plan.ncases;
      free(plan.cases);
      if (fold_comm_last_error(c)[0] && atomic_load(&check_failures) > before) break;
    }
  }
  opt_expect_refusal = 0;
  CHECK_OK(fold_comm_set_algo(c, "barrier=auto"), c);
  CHECK_OK(fold_barrier(c), c);
  CHECK_OK(fold_comm_destroy(c), NULL);
  char name[64];
  snprintf(name, sizeof name, "coll_procs rank %d/%d (%d cases)", me, n, total);
  return check_report(name);
}
