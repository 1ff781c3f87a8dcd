/* comm_sim.c — sub-communicators of simulated communicators: split, nested split, split_host, wildcards, timing at 1,024 ranks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fold.h"

static double wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int color_of(int i) { return i % 7 == 6 ? FOLD_UNDEFINED : i % 3; }

static void run_case(int n, int report) {
  fold_sim *sim;
  fold_comm **w = calloc((size_t)n, sizeof *w), **k = calloc((size_t)n, sizeof *k), **kk = calloc((size_t)n, sizeof *kk);
  int64_t *val = calloc((size_t)n, sizeof *val), *res = calloc((size_t)n, sizeof *res);
  fold_request **q = calloc((size_t)n, sizeof *q);
  CHECK_OK(fold_sim_create(n, NULL, &sim, w), NULL);
  /* the split: every rank calls it, then the simulator runs the exchange */
  double t0 = fold_sim_time(sim), w0 = wall();
  for (int i = 0; i < n; i++) CHECK_OK(fold_comm_split(w[i], color_of(i), -i, &k[i]), w[i]);
  /* not complete before the simulator ran: refused, not wrong */
  if (k[0] && n > 1) CHECK_RC(fold_barrier(k[0]), FOLD_EINVAL, k[0]);
  CHECK_OK(fold_sim_run(sim), NULL);
  double t1 = fold_sim_time(sim), w1 = wall();
  if (report)
    printf("split of %d simulated ranks: %.3g s of virtual time, %.3g s of wall time\n", n, t1 - t0, w1 - w0);
  int count[3] = {0, 0, 0};
  for (int i = 0; i < n; i++)
    if (color_of(i) != FOLD_UNDEFINED) count[color_of(i)]++;
  for (int i = 0; i < n; i++) {
    if (color_of(i) == FOLD_UNDEFINED) {
      CHECK(k[i] == NULL, "n %d: rank %d undefined but got a communicator", n, i);
      continue;
    }
    /* keys -i: the highest world rank of a color is rank 0 */
    int above = 0;
    for (int j = i + 1; j < n; j++) above += color_of(j) == color_of(i);
    CHECK(k[i] && fold_comm_size(k[i]) == count[color_of(i)] && fold_comm_rank(k[i]) == above,
          "n %d: rank %d is %d of %d, want %d of %d", n, i, k[i] ? fold_comm_rank(k[i]) : -1,
          k[i] ? fold_comm_size(k[i]) : -1, above, count[color_of(i)]);
    CHECK(fold_comm_local_size(k[i]) == 1, "simulated ranks are their own hosts");
  }
  /* an allreduce on every child at once (children of three sizes) */
  for (int i = 0; i < n; i++) {
    val[i] = i;
    res[i] = -1;
    q[i] = NULL;
    if (k[i]) CHECK_OK(fold_iallreduce(&val[i], &res[i], 1, FOLD_INT64, FOLD_SUM, k[i], &q[i]), k[i]);
  }
  CHECK_OK(fold_sim_run(sim), NULL);
  for (int i = 0; i < n; i++) {
    if (!q[i]) continue;
    CHECK_OK(fold_wait(q[i]), k[i]);
    q[i] = NULL;
    int64_t want = 0;
    for (int j = 0; j < n; j++)
      if (color_of(j) == color_of(i)) want += j;
    CHECK(res[i] == want, "n %d: rank %d allreduce %lld, want %lld", n, i, (long long)res[i], (long long)want);
  }
  /* wildcard receives on a child: its rank 0 takes one message from each */
  int c0 = -1;
  for (int i = 0; i < n && c0 < 0; i++)
    if (k[i] && fold_comm_rank(k[i]) == 0 && color_of(i) == 0) c0 = i;
  if (c0 >= 0 && count[0] > 1) {
    int32_t got[64], one[64];
    fold_request *rq[64];
    int m = count[0] - 1 < 64 ? count[0] - 1 : 64;
    for (int j = 0; j < m; j++) CHECK_OK(fold_irecv(&got[j], 1, FOLD_INT32, FOLD_ANY_SOURCE, FOLD_ANY_TAG, k[c0], &rq[j]), k[c0]);
    int sent = 0;
    for (int i = 0; i < n && sent < m; i++) {
      if (!k[i] || color_of(i) != 0 || i == c0) continue;
      one[sent] = fold_comm_rank(k[i]);
      fold_request *s;
      CHECK_OK(fold_isend(&one[sent], 1, FOLD_INT32, 0, 9, k[i], &s), k[i]);
      q[i] = s;
      sent++;
    }
    CHECK_OK(fold_sim_run(sim), NULL);
    for (int j = 0; j < m; j++) {
      fold_status st;
      CHECK_OK(fold_wait_status(rq[j], &st), k[c0]);
      CHECK(st.tag == 9 && st.source == got[j] && got[j] > 0, "n %d: wildcard got %d from %d", n, got[j], st.source);
    }
    for (int i = 0; i < n; i++)
      if (k[i] && color_of(i) == 0 && i != c0 && q[i]) {
        fold_wait(q[i]);
        q[i] = NULL;
      }
  }
  /* a receive on a child that nothing answers is a deadlock fold_sim_run
   * reports; answering it later completes it */
  int c1 = -1;
  for (int i = 0; i < n && c1 < 0; i++)
    if (k[i] && color_of(i) == 0 && fold_comm_rank(k[i]) == 1) c1 = i;
  if (c0 >= 0 && c1 >= 0) {
    int32_t x = -1, y = 42;
    fold_request *rr, *sr;
    CHECK_OK(fold_irecv(&x, 1, FOLD_INT32, 1, 77, k[c0], &rr), k[c0]);
    CHECK_RC(fold_sim_run(sim), FOLD_ETIMEDOUT, NULL);
    CHECK_OK(fold_isend(&y, 1, FOLD_INT32, 0, 77, k[c1], &sr), k[c1]);
    CHECK_OK(fold_sim_run(sim), NULL);
    CHECK_OK(fold_wait(rr), k[c0]);
    CHECK_OK(fold_wait(sr), k[c1]);
    CHECK(x == 42, "n %d: late answer %d", n, x);
  }
  /* nested split and split_host */
  for (int i = 0; i < n; i++)
    if (k[i]) CHECK_OK(fold_comm_split(k[i], fold_comm_rank(k[i]) % 2, 0, &kk[i]), k[i]);
  CHECK_OK(fold_sim_run(sim), NULL);
  for (int i = 0; i < n; i++) {
    if (!kk[i]) continue;
    int s = fold_comm_size(k[i]), r = fold_comm_rank(k[i]);
    CHECK(fold_comm_size(kk[i]) == (s + 1 - r % 2) / 2 && fold_comm_rank(kk[i]) == r / 2, "n %d: nested %d of %d", n,
          fold_comm_rank(kk[i]), fold_comm_size(kk[i]));
    val[i] = 1;
    CHECK_OK(fold_iallreduce(&val[i], &res[i], 1, FOLD_INT64, FOLD_SUM, kk[i], &q[i]), kk[i]);
  }
  CHECK_OK(fold_sim_run(sim), NULL);
  for (int i = 0; i < n; i++)
    if (kk[i]) {
      CHECK_OK(fold_wait(q[i]), kk[i]);
      q[i] = NULL;
      CHECK(res[i] == fold_comm_size(kk[i]), "n %d: nested allreduce %lld", n, (long long)res[i]);
    }
  fold_comm *h = NULL;
  if (n <= 32) {
    fold_comm **hs = calloc((size_t)n, sizeof *hs);
    for (int i = 0; i < n; i++) CHECK_OK(fold_comm_split_host(w[i], &hs[i]), w[i]);
    CHECK_OK(fold_sim_run(sim), NULL);
    for (int i = 0; i < n; i++) {
      CHECK(hs[i] && fold_comm_size(hs[i]) == 1, "split_host on the simulator: one rank per host");
      fold_comm_destroy(hs[i]);
    }
    free(hs);
  }
  (void)h;
  /* destroy: the worlds first on even ranks; the rest goes with fold_sim_destroy */
  for (int i = 0; i < n; i++) {
    if (i % 2 == 0) {
      CHECK_OK(fold_comm_destroy(w[i]), NULL);
      CHECK_OK(fold_comm_destroy(kk[i]), NULL);
    } else {
      CHECK_OK(fold_comm_destroy(k[i]), NULL);
    }
  }
  CHECK_OK(fold_sim_destroy(sim), NULL);
  free(w);
  free(k);
  free(kk);
  free(val);
  free(res);
  free(q);
}

/* A bad color on one simulated rank: FOLD_EINVAL there at once, and the
 * others' new communicators fail with the message naming it. */
static void bad_color(void) {
  fold_sim *sim;
  fold_comm *w[3], *k[3] = {NULL, NULL, NULL};
  CHECK_OK(fold_sim_create(3, NULL, &sim, w), NULL);
  CHECK_OK(fold_comm_split(w[0], 0, 0, &k[0]), w[0]);
  CHECK_RC(fold_comm_split(w[1], -7, 0, &k[1]), FOLD_EINVAL, w[1]);
  CHECK(k[1] == NULL, "bad color gave a communicator");
  CHECK_OK(fold_comm_split(w[2], 0, 0, &k[2]), w[2]);
  CHECK_OK(fold_sim_run(sim), NULL);
  for (int i = 0; i < 3; i += 2) {
    CHECK_RC(fold_barrier(k[i]), FOLD_EINVAL, k[i]);
    CHECK(strstr(fold_comm_last_error(k[i]), "rank 1: color -7") != NULL, "message: %s", fold_comm_last_error(k[i]));
    fold_comm_destroy(k[i]);
  }
  /* the world is fine, and the next split works */
  for (int i = 0; i < 3; i++) CHECK_OK(fold_comm_split(w[i], 0, 0, &k[i]), w[i]);
  CHECK_OK(fold_sim_run(sim), NULL);
  for (int i = 0; i < 3; i++) CHECK(k[i] && fold_comm_size(k[i]) == 3, "split after a bad one");
  CHECK_OK(fold_sim_destroy(sim), NULL); /* frees the children too */
}

int main(void) {
  bad_color();
  static const int sizes[] = {1, 2, 5, 8, 17, 1024};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) run_case(sizes[i], sizes[i] >= 8);
  return check_report("comm_sim");
}
