/* coll_late.c — a collective that timed out on some ranks fails on every rank, and every rank names the silent one. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fold.h"
#include "shm/shm_harness.h"
#include "tcp/tcp_harness.h"

/* Usage: coll_late shm|tcp allreduce|broadcast
 * Four ranks (processes over shm, threads over tcp), FOLD_TIMEOUT 2 s.
 * Rank 2 stays away from fold until the other three are done; they call
 * the collective, time out, and each must name rank 2 (the silent one),
 * not a rank that only waited like itself. Then rank 2 makes the same call:
 * its peers' data for it is all there (over shm, in its rings), but the
 * call failed on them, so it must fail here too, never return FOLD_OK. */

#define N 4
#define LATE 2

static int is_bcast;
static atomic_int done_ranks; /* tcp (threads): how many punctual ranks are done */

static int call(fold_comm *c, int64_t *v) {
  return is_bcast ? fold_broadcast(v, 1, FOLD_INT64, 0, c) : fold_allreduce(v, v, 1, FOLD_INT64, FOLD_SUM, c);
}

/* names_late: the message says rank LATE is the one waited for in vain */
static int names_late(const char *msg) {
  return strstr(msg, "waiting for rank 2 (") || strstr(msg, "waits for rank 2 (") ||
         strstr(msg, "rank 2, which was silent");
}

static void punctual(fold_comm *c, int me) {
  int64_t v = me + 1;
  double t0 = shm_now();
  int rc = call(c, &v);
  const char *msg = fold_comm_last_error(c);
  CHECK(rc == FOLD_ETIMEDOUT, "rank %d: %s returned %s (%s)", me, is_bcast ? "broadcast" : "allreduce",
        fold_strerror(rc), msg);
  CHECK(names_late(msg), "rank %d does not name rank %d as the silent one: %s", me, LATE, msg);
  CHECK(shm_now() - t0 < 15, "rank %d: failed after %.1f s", me, shm_now() - t0);
  if (getenv("LATE_VERBOSE")) printf("rank %d: %s\n", me, msg);
}

static void late(fold_comm *c) {
  int64_t v = LATE + 1;
  int rc = call(c, &v);
  const char *msg = fold_comm_last_error(c);
  CHECK(rc != FOLD_OK, "the late rank returned FOLD_OK (value %lld) from a call that failed on every other rank",
        (long long)v);
  CHECK(rc == FOLD_ETIMEDOUT || rc == FOLD_EPEER, "the late rank got %s (%s)", fold_strerror(rc), msg);
  if (getenv("LATE_VERBOSE")) printf("rank %d (late): %s\n", LATE, msg);
}

static int shm_body(fold_comm *c, void *arg) {
  int me = fold_comm_rank(c);
  if (me != LATE) {
    punctual(c, me);
  } else {
    for (int r = 0; r < N; r++) /* until the others are gone (their calls failed first) */
      if (r != LATE) CHECK(shm_wait_exit(r, 60) == 0, "rank %d did not exit", r);
    late(c);
  }
  (void)arg;
  return atomic_load(&check_failures);
}

static void tcp_body(fold_comm *c, int me, void *arg) {
  if (me != LATE) {
    punctual(c, me);
    atomic_fetch_add(&done_ranks, 1);
  } else {
    double t0 = tcp_now();
    while (atomic_load(&done_ranks) < N - 1 && tcp_now() - t0 < 60) usleep(10000);
    late(c);
  }
  (void)arg;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s shm|tcp allreduce|broadcast\n", argv[0]);
    return 2;
  }
  setenv("FOLD_TIMEOUT", "2", 1);
  setenv("FOLD_DEBUG", "NONE", 0);
  is_bcast = !strcmp(argv[2], "broadcast");
  if (!strcmp(argv[1], "shm")) {
    shm_run run = {N, is_bcast ? "late_bcast" : "late_allreduce", shm_body, NULL, -1, SHM_DIE_NEVER, -1, NULL};
    return shm_run_ranks(&run) ? 1 : 0;
  }
  tcp_world w;
  if (tcp_world_create(&w, N, "127.0.0.1")) {
    fprintf(stderr, "tcp world not created\n");
    return 1;
  }
  tcp_world_run(&w, tcp_body, NULL);
  tcp_world_destroy(&w);
  return check_report("coll_late");
}
