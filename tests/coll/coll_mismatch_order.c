/* coll_mismatch_order.c — a peer's report of a mismatch fails the collectives from the mismatched one on, not an earlier one still completing. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fold.h"

/* Three ranks as threads (inproc), allreduce forced to `direct` (each
 * rank's contribution leaves at the call's start, so ranks 0 and 1 can
 * finish a call that rank 2 has only started):
 *   all      start iallreduce #0 (4 int64, correct on every rank);
 *   0, 1     wait for #0, then call allreduce #1 with 4 and 5 elements:
 *            FOLD_EMISMATCH on both, and a report of it to rank 2, which
 *            is not calling fold meanwhile;
 *   2        then waits for #0: FOLD_OK with the right sums (the report
 *            names #1, and #0's data was all here), and calls #1 with 4
 *            elements: FOLD_EMISMATCH with the report's text (rank 1's
 *            count of 5 named).
 * Before the report carried its collective's number into the receiver's
 * decision (engine/fail.c, fold__poison_due), rank 2's #0 failed with the
 * report: an iterative queue then named the superstep before the one
 * that mismatched (iterq_mismatch-later, 1 run in 20-40). */

enum { N = 3, CNT = 4 };
static pthread_barrier_t both_failed;

static int64_t val(int r, int i) { return 10 * (int64_t)r + i + 1; }

static void *rank_main(void *p) {
  fold_comm *c = p;
  int r = fold_comm_rank(c);
  CHECK_OK(fold_comm_set_algo(c, "allreduce=direct"), c);
  int64_t in[CNT + 1], out[CNT + 1];
  for (int i = 0; i <= CNT; i++) in[i] = val(r, i);
  fold_request *q;
  CHECK_OK(fold_iallreduce(in, out, CNT, FOLD_INT64, FOLD_SUM, c, &q), c);
  if (r < 2) {
    CHECK_OK(fold_wait(q), c);
    int rc = fold_allreduce(in, out, r == 1 ? CNT + 1 : CNT, FOLD_INT64, FOLD_SUM, c);
    CHECK(rc == FOLD_EMISMATCH, "rank %d: call #1 returned %d (%s)", r, rc, fold_comm_last_error(c));
    pthread_barrier_wait(&both_failed);
    return NULL;
  }
  pthread_barrier_wait(&both_failed); /* the report is in rank 2's queue, unread */
  int rc = fold_wait(q);
  CHECK(rc == FOLD_OK, "rank 2: call #0 returned %d (%s)", rc, fold_comm_last_error(c));
  for (int i = 0; rc == FOLD_OK && i < CNT; i++)
    CHECK(out[i] == val(0, i) + val(1, i) + val(2, i), "rank 2: call #0 element %d is %lld", i, (long long)out[i]);
  rc = fold_allreduce(in, out, CNT, FOLD_INT64, FOLD_SUM, c);
  const char *m = fold_comm_last_error(c);
  CHECK(rc == FOLD_EMISMATCH, "rank 2: call #1 returned %d (%s)", rc, m);
  CHECK(strstr(m, "collective #1") && strstr(m, "count=5"), "rank 2: call #1's message: %s", m);
  return NULL;
}

int main(void) {
  setenv("FOLD_TIMEOUT", "20", 1);
  setenv("FOLD_DEBUG", "NONE", 0);
  for (int rep = 0; rep < 20; rep++) {
    fold_comm *comms[N];
    CHECK_OK(fold_comm_init_threads(N, comms), NULL);
    pthread_barrier_init(&both_failed, NULL, N);
    pthread_t th[N];
    for (int r = 0; r < N; r++) pthread_create(&th[r], NULL, rank_main, comms[r]);
    for (int r = 0; r < N; r++) pthread_join(th[r], NULL);
    pthread_barrier_destroy(&both_failed);
    for (int r = 0; r < N; r++) fold_comm_destroy(comms[r]);
  }
  return check_report("coll_mismatch_order");
}
