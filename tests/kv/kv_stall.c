/* kv_stall.c — a dist_sync worker stopped by SIGSTOP: every surviving rank's error names the stopped worker, none blames a survivor, fold_kv_dead_nodes lists no survivor. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fold.h"

/* Usage: kv_stall TRANSPORT [WORKERS]
 * Forks WORKERS (default 2, at most 6) + 2 ranks meeting at a file store:
 * the workers, then servers (FOLD_KV_SERVERS=2), FOLD_TIMEOUT=2. Worker 1
 * stops itself (SIGSTOP) before its 4th round; worker 0's wait for that
 * round times out. Workers 2.. sleep 4 s before that wait: they learn of
 * the failure from the servers' notices (DEAD), not from a timeout. Each
 * surviving rank writes its status, its fold_kv_dead_nodes list and its
 * error text to a file; the parent checks them, then kills the stopped
 * worker. The whole run is bounded (60 s) and leaves no process behind. */

#define NMAX 8
static int N = 4;
#define VICTIM 1
#define STEPS 8
#define BOUND_S 60.0

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void report(const char *dir, int rank, int rc, fold_kv *kv, const char *msg) {
  char path[256];
  snprintf(path, sizeof path, "%s/r%d", dir, rank);
  FILE *f = fopen(path, "w");
  if (f == NULL) return;
  int dead[NMAX] = {0}, nd = kv ? fold_kv_dead_nodes(kv, dead, NMAX) : 0;
  fprintf(f, "%d %d", rc, nd);
  for (int i = 0; i < nd && i < NMAX; i++) fprintf(f, " %d", dead[i]);
  fprintf(f, "\n%s\n", msg);
  fclose(f);
}

static void child(const char *dir, const char *store, int rank) {
  fold_comm *w;
  if (fold_comm_init(&w, rank, N, store)) {
    fprintf(stderr, "rank %d: init: %s\n", rank, fold_comm_last_error(NULL));
    _exit(10);
  }
  fold_kv *kv;
  if (fold_kv_create(w, "dist_sync", &kv) != FOLD_OK) {
    fprintf(stderr, "rank %d: create: %s\n", rank, fold_comm_last_error(w));
    _exit(11);
  }
  int rc;
  if (fold_kv_role(kv) == FOLD_KV_SERVER) {
    rc = fold_kv_serve(kv);
  } else {
    /* two keys: one on each server (placement by bytes) */
    int64_t keys[2] = {10, 11};
    double v[2][5] = {{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}}, o[2][5];
    const void *vp[2] = {v[0], v[1]};
    void *op[2] = {o[0], o[1]};
    for (int k = 0; k < 2; k++) fold_kv_init(kv, keys[k], v[k], 5, FOLD_FLOAT64);
    rc = FOLD_OK;
    for (int s = 0; s < STEPS && rc == FOLD_OK; s++) {
      if (rank == VICTIM && s == 3) raise(SIGSTOP); /* the parent kills it */
      rc = fold_kv_pushpull(kv, 2, keys, vp, op, 0);
      if (rank > VICTIM && s == 3) sleep(4);
      if (rc == FOLD_OK) rc = fold_kv_wait(kv);
    }
  }
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", fold_comm_last_error(w));
  printf("rank %d: %s: %s\n", rank, fold_strerror(rc), msg);
  report(dir, rank, rc, kv, msg);
  fold_kv_destroy(kv);
  fold_comm_destroy(w);
  fflush(stdout);
  _exit(0);
}

/* Cut every "rank R:" (who speaks), "while rank R waited" and "reported
 * by [server] rank R" out of s: those mention ranks without blaming them. */
static void strip_mentions(char *s) {
  static const char *const pre[] = {"while rank ", "reported by rank ", "reported by server rank ", "rank "};
  for (int i = 0; i < 4; i++)
    for (char *p = s; (p = strstr(p, pre[i])) != NULL;) {
      char *q = p + strlen(pre[i]);
      if (*q < '0' || *q > '9') {
        p = q;
        continue;
      }
      while (*q >= '0' && *q <= '9') q++;
      if (i == 3 && *q != ':') { /* a plain "rank R": kept */
        p = q;
        continue;
      }
      memmove(p, q, strlen(q) + 1);
    }
}

/* Does s name rank r ("rank r" or "worker r", not followed by a digit)? */
static int names_rank(const char *s, int r) {
  static const char *const pre[] = {"rank ", "worker "};
  for (int i = 0; i < 2; i++) {
    char want[32];
    snprintf(want, sizeof want, "%s%d", pre[i], r);
    for (const char *p = s; (p = strstr(p, want)) != NULL; p++)
      if (p[strlen(want)] < '0' || p[strlen(want)] > '9') return 1;
  }
  return 0;
}

static void check_rank(const char *dir, int r) {
  char path[256], line[64], msg[1100] = "";
  snprintf(path, sizeof path, "%s/r%d", dir, r);
  FILE *f = fopen(path, "r");
  CHECK(f != NULL, "rank %d wrote no report", r);
  if (f == NULL) return;
  int rc = 0, nd = 0, dead[NMAX] = {0};
  if (fgets(line, sizeof line, f)) {
    char *p = line, *e;
    rc = (int)strtol(p, &e, 10);
    nd = (int)strtol(e, &p, 10);
    for (int i = 0; i < nd && i < NMAX; i++) dead[i] = (int)strtol(p, &p, 10);
  }
  if (!fgets(msg, sizeof msg, f)) msg[0] = '\0';
  fclose(f);
  msg[strcspn(msg, "\n")] = '\0';
  CHECK(rc != FOLD_OK, "rank %d: no error while worker %d was stopped", r, VICTIM);
  char blame[1100];
  snprintf(blame, sizeof blame, "%s", msg);
  strip_mentions(blame);
  CHECK(names_rank(blame, VICTIM), "rank %d's error does not name the stopped rank %d: %s", r, VICTIM, msg);
  for (int s = 0; s < N; s++)
    if (s != VICTIM) CHECK(!names_rank(blame, s), "rank %d's error blames rank %d, which is alive: %s", r, s, msg);
  CHECK(nd >= 1, "rank %d: fold_kv_dead_nodes lists no rank", r);
  for (int i = 0; i < nd && i < NMAX; i++)
    CHECK(dead[i] == VICTIM, "rank %d: fold_kv_dead_nodes lists rank %d, which did not die", r, dead[i]);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  N = (argc > 2 ? atoi(argv[2]) : 2) + 2;
  if (N < 4 || N > NMAX) return 2;
  setenv("FOLD_TRANSPORT", argv[1], 1);
  setenv("FOLD_TIMEOUT", "2", 1);
  setenv("FOLD_KV_SERVERS", "2", 1);
  char dir[] = "/tmp/fold-kvstall-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char store[128];
  snprintf(store, sizeof store, "file://%s", dir);
  pid_t pids[NMAX];
  for (int r = 0; r < N; r++) {
    fflush(stdout);
    if ((pids[r] = fork()) == 0) child(dir, store, r);
  }
  /* the survivors end by themselves (bounded); then the stopped one goes */
  double t0 = now_s();
  int left = N - 1, status[NMAX] = {0}, done[NMAX] = {0};
  while (left > 0 && now_s() - t0 < BOUND_S) {
    for (int r = 0; r < N; r++)
      if (r != VICTIM && !done[r] && waitpid(pids[r], &status[r], WNOHANG) == pids[r]) {
        done[r] = 1;
        left--;
      }
    usleep(20000);
  }
  double took = now_s() - t0;
  for (int r = 0; r < N; r++)
    if (!done[r]) {
      kill(pids[r], SIGKILL);
      kill(pids[r], SIGCONT);
      waitpid(pids[r], &status[r], 0);
    }
  CHECK(left == 0, "%d surviving ranks still ran after %.0f s", left, BOUND_S);
  printf("the survivors ended %.2f s after the start\n", took);
  for (int r = 0; r < N; r++) {
    if (r == VICTIM) continue;
    CHECK(done[r] && WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0, "rank %d: exit status %d", r, status[r]);
    check_rank(dir, r);
  }
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0, "could not remove %s", dir);
  char name[64];
  snprintf(name, sizeof name, "kv_stall %s %d workers", argv[1], N - 2);
  return check_report(name);
}
