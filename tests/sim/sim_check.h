/* sim_check.h — the assertion macros the simulator tests share. */
#ifndef FOLD_SIM_CHECK_H
#define FOLD_SIM_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Abort the test with the failing expression and its location. */
#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

/* Like CHECK for a fold status, printing the code's name and a message. */
#define CHECK_RC(expr, want, comm)                                                           \
  do {                                                                                       \
    int rc_ = (expr);                                                                        \
    if (rc_ != (want)) {                                                                     \
      fprintf(stderr, "%s:%d: %s returned %d (%s), want %d; last error: %s\n", __FILE__,     \
              __LINE__, #expr, rc_, fold_strerror(rc_), (want), fold_comm_last_error(comm)); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

/* Check a double for exact equality (dyadic parameters make simulated times
 * exact), printing both on failure. */
#define CHECK_T(got, want)                                                                         \
  do {                                                                                             \
    double g_ = (got), w_ = (want);                                                                \
    if (g_ != w_) {                                                                                \
      fprintf(stderr, "%s:%d: %s = %.17g, want %.17g\n", __FILE__, __LINE__, #got, g_, w_);        \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* A named test case; a program runs them all, or the one named by argv[1]. */
typedef struct sim_check_case {
  const char *name;
  void (*fn)(void);
} sim_check_case;

/* Run cases[0..n) (all, or the one argv[1] names), printing "prog name: ok"
 * after each. Returns 0, or 2 for an unknown case name. */
static inline int sim_check_run(const char *prog, const sim_check_case *cases, size_t n, int argc, char **argv) {
  int ran = 0;
  for (size_t i = 0; i < n; i++)
    if (argc < 2 || strcmp(argv[1], cases[i].name) == 0) {
      cases[i].fn();
      printf("%s %s: ok\n", prog, cases[i].name);
      ran++;
    }
  if (ran == 0) {
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
  }
  return 0;
}

#endif /* FOLD_SIM_CHECK_H */
