/* check.c — the failure counter of check.h, and the forked-ranks helpers of the kill tests. */
#include "check.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

atomic_int check_failures = 0;

void check_keep_heap(void) {
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

double check_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int check_names_only(const char *msg, int victim) {
  int seen = 0;
  for (const char *p = strstr(msg, "peer rank "); p; p = strstr(p + 1, "peer rank ")) {
    if (atoi(p + 10) != victim) return 0;
    seen = 1;
  }
  return seen;
}

int check_ranks_fork(check_ranks *k, int n, const char *tag, int (*body)(int rank, int n, const char *store, void *arg),
                     void *arg) {
  k->n = 0;
  if (n < 1 || n > CHECK_MAX_RANKS) return -1;
  snprintf(k->dir, sizeof k->dir, "/tmp/fold-%.20s-XXXXXX", tag);
  if (!mkdtemp(k->dir)) return -1;
  snprintf(k->store, sizeof k->store, "file://%s", k->dir);
  for (int r = 0; r < n; r++) {
    fflush(stdout);
    k->pids[r] = fork();
    if (k->pids[r] == 0) {
      int rc = body(r, n, k->store, arg);
      fflush(stdout); /* _exit does not flush stdio */
      _exit(rc);
    }
    if (k->pids[r] > 0) k->n = r + 1;
    else {
      printf("fork of rank %d: %s\n", r, strerror(errno));
      break;
    }
  }
  return 0;
}

int check_ranks_wait(check_ranks *k, int victim, double limit_s) {
  int failures = 0;
  for (int r = 0; r < k->n; r++) {
    int st = 0;
    pid_t w;
    double t0 = check_now_s();
    while ((w = waitpid(k->pids[r], &st, WNOHANG)) == 0 && check_now_s() - t0 < limit_s) {
      struct timespec ts = {0, 10 * 1000000L};
      nanosleep(&ts, NULL);
    }
    if (w == 0) {
      printf("rank %d still runs after %.0f s: killed\n", r, limit_s);
      kill(k->pids[r], SIGKILL);
      waitpid(k->pids[r], &st, 0);
      failures++;
    } else if (w < 0) {
      printf("rank %d: waitpid: %s\n", r, strerror(errno));
      failures++;
    } else if (r == victim) {
      if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)) {
        printf("victim rank %d did not die by SIGKILL (status 0x%x)\n", r, st);
        failures++;
      }
    } else if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
      printf("rank %d failed (status 0x%x)\n", r, st);
      failures++;
    }
  }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", k->dir);
  if (system(cmd) != 0) failures++;
  return failures;
}
