/* comm_kill.c — a rank killed while a child communicator runs collectives: FOLD_EPEER naming it in both numberings, on every communicator that contains it, and nowhere else. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fold.h"

/* Usage: comm_kill transport [early]
 * Forks 6 ranks meeting at a file store; they split by rank parity:
 * A = {0, 2, 4}, B = {1, 3, 5}. World rank 3 (rank 1 of B) kills itself
 * with SIGKILL in the middle of B's allreduce loop. Then:
 *  - ranks 1 and 5 get FOLD_EPEER on B within 5 s, the message naming
 *    "peer rank 1 (rank 3 of the world)" (over shm, from the chunk loop of
 *    the shm allreduce, which automatic selection picks on B);
 *  - ranks of A finish their loop on A (it does not contain rank 3);
 *  - every survivor gets FOLD_EPEER on a world allreduce within 5 s,
 *    naming rank 3;
 *  - destroying everything (children first or the world first) is quick.
 * "early": rank 3 dies before B's first call, so over shm before it made
 * its collective area of B: B's first shm allreduce, waiting for that area,
 * fails the same way. */

#define FAIL(...) do { printf(__VA_ARGS__); printf("\n"); ok = 0; } while (0)

static int kill_at = 50; /* the victim's iteration of B's loop ("early": 0, before B's first call) */

static int child(int rank, int n, const char *store, void *arg) {
  (void)arg;
  fold_comm *w, *k = NULL;
  if (fold_comm_init(&w, rank, n, store)) {
    fprintf(stderr, "rank %d: init: %s\n", rank, fold_comm_last_error(NULL));
    return 10;
  }
  int ok = 1;
  if (fold_comm_split(w, rank % 2, rank, &k) != FOLD_OK) {
    printf("rank %d: split: %s\n", rank, fold_comm_last_error(w));
    return 11;
  }
  fold_barrier(w);
  const char *an = fold_comm_get_algo(k, "allreduce", 1, FOLD_INT64, FOLD_SUM);
  char algo_b[32];
  snprintf(algo_b, sizeof algo_b, "%s", an ? an : "(none)");
  int64_t v = rank, s = 0;
  int rc = FOLD_OK;
  double t0 = 0;
  for (int i = 0; i < 400 && rc == FOLD_OK; i++) {
    if (rank == 3 && i == kill_at) raise(SIGKILL);
    t0 = check_now_s();
    rc = fold_allreduce(&v, &s, 1, FOLD_INT64, FOLD_SUM, k);
  }
  double dt = check_now_s() - t0;
  if (rank % 2 == 1) {
    const char *msg = fold_comm_last_error(k);
    printf("rank %d on B: %s after %.3f s: %s\n", rank, fold_strerror(rc), dt, msg);
    if (rc != FOLD_EPEER || dt > 5.0) FAIL("rank %d: B did not fail with FOLD_EPEER in time", rank);
    if (!strstr(msg, "peer rank 1 (rank 3 of the world)")) FAIL("rank %d: B's message does not name rank 1 (rank 3 of the world)", rank);
    /* over shm the child runs the shm collectives (its own collective
     * area): the loss is seen in their chunk loop, by this rank or by a
     * peer whose report of the failed collective came first (the report
     * names where it failed) */
    const char *tp = getenv("FOLD_TRANSPORT");
    if (tp && !strcmp(tp, "shm")) {
      if (strcmp(algo_b, "shm") != 0) FAIL("rank %d: B's allreduce would run %s, not shm", rank, algo_b);
      if (!strstr(msg, kill_at ? "(shm, chunk" : "(shm, its collective area") && !strstr(msg, "failed on rank"))
        FAIL("rank %d: B's allreduce did not fail in the shm chunk loop, here or reported: %s", rank, msg);
    }
  } else if (rc != FOLD_OK || s != 0 + 2 + 4) {
    FAIL("rank %d: A failed: %s (%s)", rank, fold_strerror(rc), fold_comm_last_error(k));
  }
  /* the world contains rank 3 too */
  t0 = check_now_s();
  rc = fold_allreduce(&v, &s, 1, FOLD_INT64, FOLD_SUM, w);
  dt = check_now_s() - t0;
  const char *wm = fold_comm_last_error(w);
  printf("rank %d on the world: %s after %.3f s: %s\n", rank, fold_strerror(rc), dt, wm);
  if (rc != FOLD_EPEER || dt > 5.0) FAIL("rank %d: the world did not fail with FOLD_EPEER in time", rank);
  if (!strstr(wm, "rank 3")) FAIL("rank %d: the world's message does not name rank 3", rank);
  t0 = check_now_s();
  if (rank % 4 == 1) {
    fold_comm_destroy(w);
    fold_comm_destroy(k);
  } else {
    fold_comm_destroy(k);
    fold_comm_destroy(w);
  }
  if (check_now_s() - t0 > 2.0) FAIL("rank %d: destroy took %.2f s", rank, check_now_s() - t0);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  const int n = 6;
  if (argc > 1) setenv("FOLD_TRANSPORT", argv[1], 1);
  if (argc > 2 && !strcmp(argv[2], "early")) kill_at = 0;
  setenv("FOLD_TIMEOUT", "20", 1);
  check_ranks k;
  if (check_ranks_fork(&k, n, "commkill", child, NULL)) return 2;
  int failures = check_ranks_wait(&k, 3, 50);
  printf("comm_kill %s: %s\n", argc > 1 ? argv[1] : "auto", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
