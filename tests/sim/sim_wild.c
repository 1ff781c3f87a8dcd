/* sim_wild.c — wildcard receives, probe and fold_progress on the simulated network. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fold.h"

/* Dyadic parameters: arrival order is exact. */
#define LAT (1.0 / 1024)
#define BT (1.0 / (1 << 20))
enum { N = 5, KB = 1024 };

static fold_sim *make(fold_comm **c) {
  fold_sim_params p = {.latency = LAT, .byte_time = BT, .op_time = 0};
  fold_sim *sim;
  CHECK_OK(fold_sim_create(N, &p, &sim, c), NULL);
  return sim;
}

/* Ranks 1..4 send (N - p) KiB to rank 0 at time 0: their heads reach rank
 * 0's port together and are served in sending order, so they arrive from
 * 1, 2, 3, 4. Rank 0 posted (4, ANY_TAG), ANY, ANY, ANY: each arrival goes
 * to the oldest receive that wants it, so the wildcards take 1, 2, 3 in
 * turn and the specific one, posted first, waits for rank 4's. */
static void arrival_order(void) {
  fold_comm *c[N];
  fold_sim *sim = make(c);
  static uint8_t sb[N][N * KB], rb[4][N * KB];
  fold_request *r[4], *s[N];
  for (int k = 0; k < 4; k++) {
    CHECK_OK(fold_irecv(rb[k], N * KB, FOLD_UINT8, k == 0 ? 4 : FOLD_ANY_SOURCE, FOLD_ANY_TAG, c[0], &r[k]), c[0]);
  }
  for (int p = 1; p < N; p++) {
    memset(sb[p], p, sizeof sb[p]);
    CHECK_OK(fold_isend(sb[p], (size_t)(N - p) * KB, FOLD_UINT8, 0, 40 + p, c[p], &s[p]), c[p]);
  }
  CHECK_OK(fold_sim_run(sim), NULL);
  const int want[4] = {4, 1, 2, 3};
  for (int k = 0; k < 4; k++) {
    fold_status st = {-7, -7, 0};
    int done = 0;
    CHECK_OK(fold_test_status(r[k], &done, &st), c[0]);
    CHECK(done && st.source == want[k] && st.tag == 40 + want[k] && st.count == (size_t)(N - want[k]) * KB,
          "receive %d: done %d, status (%d, %d, %zu), wanted source %d", k, done, st.source, st.tag, st.count,
          want[k]);
    CHECK(rb[k][0] == want[k], "receive %d holds rank %d's data", k, rb[k][0]);
  }
  for (int p = 1; p < N; p++) CHECK_OK(fold_wait(s[p]), c[p]);
  fold_sim_destroy(sim);
}

/* A probe on a simulated rank runs the simulator an event at a time. */
static void probe(void) {
  fold_comm *c[N];
  fold_sim *sim = make(c);
  int32_t out[3] = {7, 8, 9}, in[3] = {0};
  fold_request *s;
  int found = 0, calls = 0;
  fold_status st = {-7, -7, 0};
  CHECK_OK(fold_iprobe(FOLD_ANY_SOURCE, FOLD_ANY_TAG, c[0], &found, &st), c[0]);
  CHECK(!found, "probe found a message before any was sent");
  CHECK_RC(fold_iprobe(N, 0, c[0], &found, &st), FOLD_EINVAL, c[0]);
  CHECK_OK(fold_isend(out, 3, FOLD_INT32, 0, 9, c[2], &s), c[2]);
  while (!found && calls++ < 1000) CHECK_OK(fold_iprobe(FOLD_ANY_SOURCE, FOLD_ANY_TAG, c[0], &found, &st), c[0]);
  CHECK(found && st.source == 2 && st.tag == 9 && st.count == 12, "probe: found %d (%d, %d, %zu)", found,
        st.source, st.tag, st.count);
  CHECK_OK(fold_iprobe(2, 9, c[0], &found, NULL), c[0]);
  CHECK(found, "the probe consumed the message");
  CHECK_OK(fold_recv_status(in, 3, FOLD_INT32, FOLD_ANY_SOURCE, 9, c[0], &st), c[0]);
  CHECK(in[2] == 9 && st.count == 3 && st.source == 2, "received %d, count %zu from %d", in[2], st.count, st.source);
  CHECK_OK(fold_wait(s), c[2]);
  fold_sim_destroy(sim);
}

/* fold_progress alone completes a wildcard isend/irecv and an iallreduce. */
static void progress_only(void) {
  fold_comm *c[N];
  fold_sim *sim = make(c);
  static uint8_t sb[256 * KB], rb[256 * KB];
  int32_t in[N][16], out[N][16];
  fold_request *rr, *sr, *ar[N];
  memset(sb, 0x5A, sizeof sb);
  CHECK_OK(fold_irecv(rb, sizeof rb, FOLD_UINT8, FOLD_ANY_SOURCE, FOLD_ANY_TAG, c[0], &rr), c[0]);
  CHECK_OK(fold_isend(sb, sizeof sb, FOLD_UINT8, 0, 3, c[1], &sr), c[1]);
  for (int p = 0; p < N; p++) {
    for (int i = 0; i < 16; i++) in[p][i] = p * i, out[p][i] = -1;
    CHECK_OK(fold_iallreduce(in[p], out[p], 16, FOLD_INT32, FOLD_SUM, c[p], &ar[p]), c[p]);
  }
  int ok = 0;
  for (int calls = 0; !ok && calls < 100000; calls++) {
    CHECK_OK(fold_progress(c[calls % N]), c[calls % N]);
    ok = rb[0] == 0x5A && rb[sizeof rb - 1] == 0x5A;
    for (int p = 0; p < N && ok; p++)
      for (int i = 0; i < 16 && ok; i++) ok = out[p][i] == 10 * i;
  }
  CHECK(ok, "fold_progress did not complete the transfers");
  fold_status st;
  CHECK_OK(fold_wait_status(rr, &st), c[0]);
  CHECK(st.source == 1 && st.tag == 3 && st.count == sizeof rb, "status (%d, %d, %zu)", st.source, st.tag, st.count);
  CHECK_OK(fold_wait(sr), c[1]);
  for (int p = 0; p < N; p++) CHECK_OK(fold_wait(ar[p]), c[p]);
  fold_sim_destroy(sim);
}

/* A wildcard receive nothing answers: fold_sim_run's deadlock report says
 * "any source" / "any tag", not rank -1; a send completes it afterwards. */
static void deadlock_names_wildcards(void) {
  fold_comm *c[N];
  fold_sim *sim = make(c);
  int in = 0, out = 7;
  fold_request *r, *s;
  CHECK_OK(fold_irecv(&in, 1, FOLD_INT32, FOLD_ANY_SOURCE, FOLD_ANY_TAG, c[2], &r), c[2]);
  CHECK(fold_sim_run(sim) == FOLD_ETIMEDOUT, "fold_sim_run did not report the stuck wildcard receive");
  const char *msg = fold_comm_last_error(NULL);
  CHECK(strstr(msg, "rank 2 (receive from any source, any tag") != NULL, "deadlock report: %s", msg);
  CHECK(strstr(msg, "-1") == NULL, "deadlock report names -1: %s", msg);
  CHECK_OK(fold_isend(&out, 1, FOLD_INT32, 2, 4, c[3], &s), c[3]);
  CHECK_OK(fold_sim_run(sim), NULL);
  CHECK_OK(fold_wait(r), c[2]);
  CHECK_OK(fold_wait(s), c[3]);
  CHECK(in == 7, "received %d", in);
  fold_sim_destroy(sim);
}

int main(void) {
  arrival_order();
  deadlock_names_wildcards();
  probe();
  progress_only();
  return check_report("sim_wild");
}
