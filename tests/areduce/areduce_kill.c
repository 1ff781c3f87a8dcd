/* areduce_kill.c — a rank of a running fold_areduce killed with SIGKILL: every rank that waits on it learns within seconds. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "check.h"
#include "fold.h"

/* Usage: areduce_kill N transport victim
 * Forks N ranks meeting at a file store; they run one full-mode reduction
 * (target 0, degree 2) and contribute a fragment every 5 ms, as a program
 * that computes between contributions would. Once every rank contributed,
 * the harness kills `victim` with SIGKILL (kill -9); the target is in
 * fold_areduce_wait by then. The ranks that depend
 * on it, its ancestors (their result waits for its subtree) and its
 * children (their part can only go through it), must see the loss in the
 * contribute loop, as FOLD_EPEER naming the victim, within BOUND_S of the
 * kill: the loss is noticed in their progress passes, not at their own
 * done or wait. The rest then call done and wait, which must return (any
 * status: their part may have to go through a rank that failed) without
 * hanging, and a failure must name the victim. BOUND_S is generous
 * against a loaded machine (a pass every 5 ms; the wrong answer took
 * until the ranks' done, seconds later) and far below FOLD_TIMEOUT. */
#define BOUND_S 3.0
#define LOOP_S 15.0
#define MAXN 16

typedef struct shared {
  volatile int started[MAXN]; /* the rank contributed once */
  volatile int noticed[MAXN]; /* a dependent saw the loss */
  volatile double t_kill;
} shared;

static void sleep_ms(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {}
}

/* Whether rank r depends on the victim: its child, or an ancestor. */
static int depends(int n, int r, int victim) {
  int parent, ch[MAXN], nch;
  fold_areduce_tree(n, 0, 2, victim, &parent, ch, &nch);
  for (int i = 0; i < nch; i++)
    if (ch[i] == r) return 1;
  for (int a = victim; a != 0;) {
    fold_areduce_tree(n, 0, 2, a, &parent, NULL, &nch);
    if (parent == r) return 1;
    a = parent;
  }
  return 0;
}

static int names_victim(const char *msg, int victim) {
  char want[32];
  snprintf(want, sizeof want, "peer rank %d", victim);
  const char *p = strstr(msg, want);
  return p && (p[strlen(want)] < '0' || p[strlen(want)] > '9');
}

typedef struct kill_case {
  shared *sh;
  int victim;
} kill_case;

static int child(int r, int n, const char *store, void *arg) {
  shared *sh = ((kill_case *)arg)->sh;
  int victim = ((kill_case *)arg)->victim;
  fold_comm *c;
  if (fold_comm_init(&c, r, n, store) != FOLD_OK) {
    fprintf(stderr, "rank %d: init: %s\n", r, fold_comm_last_error(NULL));
    return 10;
  }
  fold_areduce *ar;
  if (fold_areduce_create(c, 1, FOLD_INT64, FOLD_SUM, 0, 2, FOLD_AREDUCE_FULL, 0, &ar) != FOLD_OK) {
    fprintf(stderr, "rank %d: create: %s\n", r, fold_comm_last_error(c));
    return 11;
  }
  int dep = depends(n, r, victim), ok = 1, rc = FOLD_OK;
  int64_t one = 1;
  double t0 = check_now_s(), t_err = 0;
  /* the target contributes once and waits for the result (in
   * fold_areduce_wait when the kill comes); the others keep contributing */
  if (r == 0) {
    rc = fold_areduce_contribute(ar, &one);
    sh->started[r] = 1;
    if (rc == FOLD_OK) rc = fold_areduce_done(ar);
    if (rc == FOLD_OK) rc = fold_areduce_wait(ar, NULL, NULL);
    t_err = check_now_s();
  }
  for (; r != 0;) {
    rc = fold_areduce_contribute(ar, &one);
    if (rc != FOLD_OK) {
      t_err = check_now_s();
      break;
    }
    sh->started[r] = 1;
    if (check_now_s() - t0 > LOOP_S) break;
    /* the others go on until every dependent noticed (or the bound passed) */
    if (!dep && sh->t_kill > 0) {
      int all = 1;
      for (int p = 0; p < n; p++)
        if (p != victim && depends(n, p, victim) && !sh->noticed[p]) all = 0;
      if (all || check_now_s() - sh->t_kill > BOUND_S + 1) break;
    }
    sleep_ms(5);
  }
  const char *msg = fold_comm_last_error(c);
  if (dep) {
    double dt = t_err > 0 && sh->t_kill > 0 ? t_err - sh->t_kill : -1;
    printf("rank %d (depends on rank %d): %s %.3f s after the kill: %s\n", r, victim, fold_strerror(rc), dt, msg);
    ok = rc == FOLD_EPEER && dt >= 0 && dt < BOUND_S && names_victim(msg, victim);
    sh->noticed[r] = 1;
  } else if (r != 0) {
    if (rc == FOLD_OK) rc = fold_areduce_done(ar);
    if (rc == FOLD_OK) rc = fold_areduce_wait(ar, NULL, NULL);
    msg = fold_comm_last_error(c);
    printf("rank %d: %s: %s\n", r, fold_strerror(rc), rc ? msg : "");
    ok = rc == FOLD_OK || (rc == FOLD_EPEER && names_victim(msg, victim));
  }
  fold_areduce_destroy(ar);
  fold_comm_destroy(c);
  fflush(stdout);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 7, victim = argc > 3 ? atoi(argv[3]) : 1;
  if (argc > 2) setenv("FOLD_TRANSPORT", argv[2], 1);
  if (n < 3 || n > MAXN || victim < 1 || victim >= n) {
    fprintf(stderr, "usage: areduce_kill N(3..%d) shm|tcp victim(1..N-1)\n", MAXN);
    return 2;
  }
  setenv("FOLD_TIMEOUT", "20", 1);
  shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return 2;
  kill_case kc = {sh, victim};
  check_ranks k;
  if (check_ranks_fork(&k, n, "arkill", child, &kc)) return 2;
  int bad = 0;
  double t0 = check_now_s();
  for (int all = 0; !all && check_now_s() - t0 < 60;) {
    all = 1;
    for (int r = 0; r < n; r++) all &= sh->started[r];
    sleep_ms(all ? 100 : 10); /* a few fragments more */
  }
  sh->t_kill = check_now_s();
  kill(k.pids[victim], SIGKILL);
  /* every rank ends: the loop and the waits are bounded (FOLD_TIMEOUT 20 s) */
  bad |= check_ranks_wait(&k, victim, 60) != 0;
  printf("areduce_kill n=%d victim=%d: %s\n", n, victim, bad ? "FAILED" : "ok");
  return bad;
}
