/* p2p_kill.c — a rank killed with SIGKILL: every rank that depends on it gets FOLD_EPEER in time. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* 1 if every "peer rank K" in msg has K == victim and there is one. */
static int names_only(const char *msg, int victim) {
  int seen = 0;
  for (const char *p = strstr(msg, "peer rank "); p; p = strstr(p + 1, "peer rank ")) {
    if (atoi(p + 10) != victim) return 0;
    seen = 1;
  }
  return seen;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int child(int rank, int n, const char *store) {
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
  double t0 = now_s();
  rc = fold_recv(&v, 1, FOLD_INT32, from, 2, c);
  double dt = now_s() - t0;
  const char *msg = fold_comm_last_error(c);
  int ok = rc == FOLD_EPEER && dt < 5.0 && names_only(msg, victim);
  printf("rank %d waiting on rank %d: %s after %.3f s: %s\n", rank, from, fold_strerror(rc), dt, msg);
  double t1 = now_s();
  fold_comm_destroy(c);
  if (now_s() - t1 > 2.0) {
    printf("rank %d: destroy took %.2f s\n", rank, now_s() - t1);
    ok = 0;
  }
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4;
  if (argc > 2) setenv("FOLD_TRANSPORT", argv[2], 1);
  setenv("FOLD_TIMEOUT", "20", 1);
  char dir[] = "/tmp/fold-kill-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char store[128];
  snprintf(store, sizeof store, "file://%s", dir);
  pid_t pids[64];
  for (int r = 0; r < n; r++) {
    fflush(stdout);
    pids[r] = fork();
    if (pids[r] == 0) {
      int rc = child(r, n, store);
      fflush(stdout); /* _exit does not flush stdio */
      _exit(rc);
    }
  }
  int failures = 0;
  for (int r = 0; r < n; r++) {
    int st;
    waitpid(pids[r], &st, 0);
    if (r == n - 1) {
      if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)) {
        printf("victim did not die by SIGKILL (status %d)\n", st);
        failures++;
      }
    } else if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
      printf("rank %d failed (status %d)\n", r, st);
      failures++;
    }
  }
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) failures++;
  printf("p2p_kill %d %s: %s\n", n, argc > 2 ? argv[2] : "auto", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
