/* shm_harness.h — fork N processes wired together by the shm transport alone
 * (no store, no launcher): the test drives fold__shm_prepare/connect itself. */
#ifndef FOLD_TEST_SHM_HARNESS_H
#define FOLD_TEST_SHM_HARNESS_H

#include "fold.h"

/* The body each rank runs once connected; returns the number of failed
 * checks (0 = pass). The communicator is destroyed afterwards. */
typedef int (*shm_rank_fn)(fold_comm *c, void *arg);

/* Stages at which a rank may kill itself with SIGKILL (fault injection). */
enum { SHM_DIE_NEVER = 0, SHM_DIE_BEFORE_CONNECT = 1 };

typedef struct shm_run {
  int n;               /* ranks */
  const char *name;    /* scenario name: part of the job id */
  shm_rank_fn fn;
  void *arg;
  int die_rank;        /* rank that kills itself at die_stage, or -1 */
  int die_stage;
  int expect_killed;   /* rank expected to end by SIGKILL (-1: none) */
  /* optional: called on every rank after connect, before joined() (the
   * segment names still exist then) */
  void (*pre_join)(fold_comm *c, const char *job, void *arg);
} shm_run;

/* Fork the ranks, exchange cards through pipes, connect, barrier, call
 * joined(), run fn, destroy. Waits for every child (bounded), checks exit
 * statuses and that nothing named after the job is left in /dev/shm.
 * Returns 0 on success, else the number of problems. */
int shm_run_ranks(const shm_run *run);

/* Barrier over the communicator itself (0-byte messages through rank 0). */
int shm_barrier(fold_comm *c);

/* Wait, without touching fold (so without driving its progress), until the
 * process of `rank` has exited; bounded by timeout_s. 0 once it has, -1 on
 * timeout or error. For ordering a peer's death before this rank's next
 * fold call by synchronisation rather than by timing. */
int shm_wait_exit(int rank, double timeout_s);

/* Monotonic seconds. */
double shm_now(void);

#endif
