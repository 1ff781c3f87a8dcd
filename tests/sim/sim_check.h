/* sim_check.h — the assertion macros the simulator tests share. */
#ifndef FOLD_SIM_CHECK_H
#define FOLD_SIM_CHECK_H

#include <stdio.h>
#include <stdlib.h>

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

#endif /* FOLD_SIM_CHECK_H */
