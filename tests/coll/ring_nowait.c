/* ring_nowait.c — over shm, ring allreduce posts a step's receive without waiting for the right neighbour to drain its send. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "coll/coll.h"
#include "fold.h"
#include "shm/shm_harness.h"

/* Three processes over shm, ring allreduce of 3 MiB (1 MiB blocks, more
 * than a shm ring holds). Rank 1 stays away until rank 0 says so (a file:
 * nothing through fold, whose ring from 0 to 1 is the one kept full).
 * Rank 0's first step sends block 0 to rank 1, which cannot complete, and
 * receives rank 2's block 2, which can. The step's send must not hold back
 * the next step: rank 0 must reach round 2 (the second reduce-scatter
 * step, its receive from rank 2 posted) while rank 1 is away. Before
 * fold__co_send_nowait it stayed in round 1 until rank 1 drained the
 * send, and rank 2's next block arrived unexpected. Then rank 1 comes and
 * every rank checks the sums. */

#define N 3
#define COUNT ((size_t)3 << 17) /* int64: 3 MiB */

static char flag[64];

static int check_sums(const int64_t *v, int me) {
  for (size_t i = 0; i < COUNT; i++) {
    int64_t want = 0;
    for (int r = 0; r < N; r++) want += (int64_t)(r + 1) * 1000003 + (int64_t)i;
    if (v[i] != want) {
      CHECK(0, "rank %d: element %zu is %lld, not %lld", me, i, (long long)v[i], (long long)want);
      return 1;
    }
  }
  return 0;
}

static int body(fold_comm *c, void *arg) {
  (void)arg;
  int me = fold_comm_rank(c);
  CHECK(fold_comm_set_algo(c, "allreduce=ring") == FOLD_OK, "rank %d: set_algo: %s", me, fold_comm_last_error(c));
  int64_t *in = malloc(COUNT * sizeof *in), *out = malloc(COUNT * sizeof *out);
  if (in == NULL || out == NULL) return 1;
  for (size_t i = 0; i < COUNT; i++) in[i] = (int64_t)(me + 1) * 1000003 + (int64_t)i;
  if (me == 1) { /* away until rank 0 has seen what it waits for (bounded) */
    double t0 = shm_now();
    struct stat st;
    while (stat(flag, &st) != 0 && shm_now() - t0 < 60) usleep(1000);
  }
  fold_request *req = NULL;
  int rc = fold_iallreduce(in, out, COUNT, FOLD_INT64, FOLD_SUM, c, &req);
  CHECK(rc == FOLD_OK, "rank %d: iallreduce: %s", me, fold_comm_last_error(c));
  if (rc != FOLD_OK) return 1;
  if (me == 0) {
    fold__coll *co = (fold__coll *)req->task;
    int done = 0;
    double t0 = shm_now();
    while (!done && co->round < 2 && shm_now() - t0 < 20) CHECK(fold_test(req, &done) == FOLD_OK, "rank 0: test");
    CHECK(!done && co->round >= 2,
          "rank 0 is at round %d with rank 1 away: its first step's send held back the next step's receive",
          co->round);
    FILE *f = fopen(flag, "w");
    if (f) fclose(f);
  }
  CHECK(fold_wait(req) == FOLD_OK, "rank %d: allreduce: %s", me, fold_comm_last_error(c));
  check_sums(out, me);
  if (me == 0) unlink(flag);
  free(in);
  free(out);
  return atomic_load(&check_failures);
}

int main(void) {
  setenv("FOLD_DEBUG", "NONE", 0);
  snprintf(flag, sizeof flag, "/tmp/fold_ring_nowait_%d", (int)getpid());
  unlink(flag);
  shm_run run = {N, "ring_nowait", body, NULL, -1, SHM_DIE_NEVER, -1, NULL};
  int bad = shm_run_ranks(&run);
  unlink(flag);
  return bad ? 1 : 0;
}
