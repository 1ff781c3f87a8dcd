/* coll_matrix.c — every collective x algorithm x rank count x count x dtype x op x in-place x root, over threads. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coll/coll_case.h"
#include "coll/coll_ref.h"
#include "fold.h"

/* Usage: coll_matrix [--coll NAME] [--algo NAME] [--n N[,N...]] [--quick] [--verbose]
 * Runs each selected collective with each of its algorithms (and "auto")
 * for each rank count, ranks being threads over inproc. Integer and exact
 * float data are compared bit for bit with the serial reference (coll_ref.c);
 * random float sums within the bound of coll_ref.c; sendbuf must stay
 * untouched, nothing may be written past any buffer, and buffers a rank
 * does not own (recvbuf at non-roots) must stay untouched. A forced
 * algorithm that cannot keep rank order must refuse the non-commutative op
 * with FOLD_EINVAL. --quick samples fewer rank counts and combinations (for
 * sanitizer builds). */

typedef struct {
  fold_comm *c;
  plan_t *plan;
} thread_arg;

static void *rank_main(void *p) {
  thread_arg *a = p;
  fold_op affine;
  CHECK_OK(fold_op_create(&affine, ref_affine_fn, NULL, 0, a->c), a->c);
  int fails = 0;
  for (int i = 0; i < a->plan->ncases && fails < 5; i++) fails += run_case(a->c, &a->plan->cases[i], affine) > 0;
  return NULL;
}

int main(int argc, char **argv) {
  check_keep_heap();
  const char *only_coll = NULL, *only_algo = NULL;
  int ns[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17}, nn = 12;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--coll") && i + 1 < argc) only_coll = argv[++i];
    else if (!strcmp(argv[i], "--algo") && i + 1 < argc) only_algo = argv[++i];
    else if (!strcmp(argv[i], "--quick")) opt_quick = 1;
    else if (!strcmp(argv[i], "--verbose")) opt_verbose = 1;
    else if (!strcmp(argv[i], "--n") && i + 1 < argc) {
      nn = 0;
      for (char *s = strtok(argv[++i], ","); s && nn < 32; s = strtok(NULL, ",")) {
        ns[nn] = atoi(s);
        if (ns[nn] < 1 || ns[nn] > 64) {
          fprintf(stderr, "coll_matrix: --n takes rank counts from 1 to 64, not %s\n", s);
          return 2;
        }
        nn++;
      }
    }
  }
  if (opt_quick && nn == 12) { int q[] = {1, 2, 3, 5, 8, 17}; nn = 6; memcpy(ns, q, sizeof q); }
  int total = 0;
  for (int coll = 0; coll < NCOLL; coll++) {
    if (only_coll && strcmp(only_coll, coll_names[coll])) continue;
    for (int algo = 0; algos[coll][algo]; algo++) {
      if (only_algo && strcmp(only_algo, algos[coll][algo])) continue;
      for (int ni = 0; ni < nn; ni++) {
        int n = ns[ni];
        plan_t plan = {0};
        make_plan(&plan, coll, algo, n);
        fold_comm *comms[64];
        CHECK_OK(fold_comm_init_threads(n, comms), NULL);
        pthread_t th[64];
        thread_arg args[64];
        int before = atomic_load(&check_failures);
        for (int r = 0; r < n; r++) {
          args[r] = (thread_arg){comms[r], &plan};
          pthread_create(&th[r], NULL, rank_main, &args[r]);
        }
        for (int r = 0; r < n; r++) pthread_join(th[r], NULL);
        for (int r = 0; r < n; r++) fold_comm_destroy(comms[r]);
        printf("%-14s %-18s n=%-2d %4d cases %s\n", coll_names[coll], algos[coll][algo], n, plan.ncases,
               atomic_load(&check_failures) > before ? "FAILED" : "ok");
        fflush(stdout);
        total += plan.ncases;
        free(plan.cases);
      }
    }
  }
  printf("%d cases\n", total);
  return check_report("coll_matrix");
}
