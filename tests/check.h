/* check.h — tiny assertion helpers shared by the test programs. */
#ifndef FOLD_TEST_CHECK_H
#define FOLD_TEST_CHECK_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

extern atomic_int check_failures;

/* For tests that allocate and free buffers of megabytes per case: keep
 * freed memory in the heap instead of unmapping it, so the next case does
 * not page-fault fresh pages in (coll_matrix: a quarter of its time in
 * perf; 3.4x less CPU with this). Changes nothing a test checks. */
void check_keep_heap(void);

/* Record a failure with its location; tests exit non-zero if any happened. */
#define CHECK(cond, ...)                                                        \
  do {                                                                          \
    if (!(cond)) {                                                              \
      atomic_fetch_add(&check_failures, 1);                                     \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);  \
      fprintf(stderr, __VA_ARGS__);                                             \
      fprintf(stderr, "\n");                                                    \
    }                                                                           \
  } while (0)

#define CHECK_RC(expr, want, comm)                                                              \
  do {                                                                                          \
    int rc_ = (expr);                                                                           \
    CHECK(rc_ == (want), "%s returned %d (%s), wanted %d; last error: %s", #expr, rc_,          \
          fold_strerror(rc_), (want), fold_comm_last_error(comm));                              \
  } while (0)

#define CHECK_OK(expr, comm) CHECK_RC(expr, FOLD_OK, comm)

/* ---- ranks as processes, one of them killed (p2p_kill, comm_kill,
 * tcp_lazy's kill case, areduce_kill) ---------------------------------------- */

/* The monotonic clock in seconds. */
double check_now_s(void);

/* 1 if msg names rank `victim` as lost ("peer rank K") and no other rank. */
int check_names_only(const char *msg, int victim);

/* n forked ranks meeting at a file store in a fresh folder under /tmp. */
#define CHECK_MAX_RANKS 64
typedef struct check_ranks {
  int n;
  pid_t pids[CHECK_MAX_RANKS];
  char dir[64];    /* the store's folder, removed by check_ranks_wait */
  char store[96];  /* "file://<dir>", for fold_comm_init */
} check_ranks;

/* Make the store's folder (/tmp/fold-<tag>-XXXXXX) and fork n ranks (n <=
 * CHECK_MAX_RANKS); rank r runs body(r, n, store, arg) and exits with what
 * it returns (stdout flushed). 0, or -1 (nothing forked) if the folder
 * could not be made or n is out of range. */
int check_ranks_fork(check_ranks *k, int n, const char *tag, int (*body)(int rank, int n, const char *store, void *arg),
                     void *arg);

/* Wait for every rank, each for at most limit_s seconds (one still running
 * then is SIGKILLed and counted as failed: never a hang). Rank `victim`
 * (-1: none) must have died by SIGKILL, every other rank must have exited
 * with 0; each that did not is printed, naming the rank. Removes the
 * store's folder. Returns the number of failures. */
int check_ranks_wait(check_ranks *k, int victim, double limit_s);

static inline int check_report(const char *name) {
  int f = atomic_load(&check_failures);
  if (f)
    fprintf(stderr, "%s: %d check(s) failed\n", name, f);
  else
    printf("%s: all checks passed\n", name);
  return f ? 1 : 0;
}

#endif
