/* p2p_kill.c — a rank killed with SIGKILL: every rank that depends on it gets FOLD_EPEER in time. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "fold.h"

/* Usage: p2p_kill N transport
 * Forks N ranks meeting at a file store. Rank N-1 is the victim: it kills
 * itself with SIGKILL once everyone is connected. Ranks 0..N-3 wait for a
 * message from the victim; rank N-2 waits for a message from rank 0, so it
 * depends on the victim only through rank 0's failure. Each survivor must
 * return FOLD_EPEER within 5 s with a message that names the victim as the
 * lost rank and no other rank as lost (rank N-2 sees rank 0 close, but
 * rank 0 reported the victim first), and then destroy its communicator
 * without hanging. */

static int child(int rank, int n, const char *store, void *arg) {
  (void)arg;
  fold_comm *c;
  int rc = fold_comm_init(&c, rank, n, store);
  if (rc) {
    fprintf(stderr, "rank %d: init: %s\n", rank, fold_comm_last_error(NULL));
    return 10;
  }
  int victim = n - 1, v = 0;
  /* everyone connected: a round of messages to the victim proves it */
  if (rank == victim) {
    for (int p = 0; p < n - 1; p++) fold_recv(&v, 1, FOLD_INT32, p, 1, c);
    raise(SIGKILL);
  }
  fold_send(&v, 1, FOLD_INT32, victim, 1, c);
  int from = rank == n - 2 ? 0 : victim;
  if (n == 2) from = victim;
  double t0 = check_now_s();
  rc = fold_recv(&v, 1, FOLD_INT32, from, 2, c);
  double dt = check_now_s() - t0;
  const char *msg = fold_comm_last_error(c);
  int ok = rc == FOLD_EPEER && dt < 5.0 && check_names_only(msg, victim);
  printf("rank %d waiting on rank %d: %s after %.3f s: %s\n", rank, from, fold_strerror(rc), dt, msg);
  double t1 = check_now_s();
  fold_comm_destroy(c);
  if (check_now_s() - t1 > 2.0) {
    printf("rank %d: destroy took %.2f s\n", rank, check_now_s() - t1);
    ok = 0;
  }
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4;
  if (argc > 2) setenv("FOLD_TRANSPORT", argv[2], 1);
  setenv("FOLD_TIMEOUT", "20", 1);
  check_ranks k;
  if (check_ranks_fork(&k, n, "kill", child, NULL)) return 2;
  int failures = check_ranks_wait(&k, n - 1, 50);
  printf("p2p_kill %d %s: %s\n", n, argc > 2 ? argv[2] : "auto", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
