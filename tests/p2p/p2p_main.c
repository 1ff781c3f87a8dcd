/* p2p_main.c — the point-to-point matrix as a real multi-process job (any launcher). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fold.h"
#include "p2p/p2p_suite.h"

/* Usage: p2p_main [--big MiB] [--huge MiB]
 *   Rank/size/store come from the environment (foldrun, mpirun, mpiexec,
 *   torchrun variables, srun). --huge sends one message of that many MiB
 *   from rank 0 to rank 1 instead of running the matrix. */
int main(int argc, char **argv) {
  size_t big = 64, huge = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--big") == 0) big = strtoull(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--huge") == 0) huge = strtoull(argv[i + 1], NULL, 10);
  }
  fold_comm *c = NULL;
  int rc = fold_init(&c);
  if (rc != FOLD_OK) {
    fprintf(stderr, "fold_init failed: %s: %s\n", fold_strerror(rc), fold_comm_last_error(NULL));
    return 2;
  }
  int rank = fold_comm_rank(c), size = fold_comm_size(c);
  if (huge)
    p2p_suite_huge(c, huge << 20);
  else
    p2p_suite_run(c, big);
  /* Leave together, so that nobody's last receive races a peer's exit. */
  int token = 0;
  if (size > 1) {
    if (rank == 0) {
      for (int p = 1; p < size; p++) CHECK_OK(fold_recv(&token, 1, FOLD_INT32, p, 999, c), c);
      for (int p = 1; p < size; p++) CHECK_OK(fold_send(&token, 1, FOLD_INT32, p, 999, c), c);
    } else {
      CHECK_OK(fold_send(&token, 1, FOLD_INT32, 0, 999, c), c);
      CHECK_OK(fold_recv(&token, 1, FOLD_INT32, 0, 999, c), c);
    }
  }
  CHECK_OK(fold_comm_destroy(c), NULL);
  char name[64];
  snprintf(name, sizeof name, "p2p_main rank %d/%d", rank, size);
  return check_report(name);
}
