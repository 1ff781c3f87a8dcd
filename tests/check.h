/* check.h — tiny assertion helpers shared by the test programs. */
#ifndef FOLD_TEST_CHECK_H
#define FOLD_TEST_CHECK_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

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



static inline int check_report(const char *name) {
  int f = atomic_load(&check_failures);
  if (f)
    fprintf(stderr, "%s: %d check(s) failed\n", name, f);
  else
    printf("%s: all checks passed\n", name);
  return f ? 1 : 0;
}

#endif
