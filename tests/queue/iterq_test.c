/* iterq_test.c — the iterative queue under foldrun: supersteps, stop, bad input, failures on one rank, checkpoints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fold.h"
#include "fold_ml.h"

static fold_comm *comm;
static int rank, size;

/* ---- a counting queue: x[i] = iteration * (rank + 1) summed over ranks --------------------- */

typedef struct counter {
  int steps_seen, closes, close_iter, stop_at, fail_rank, fail_at, bad_check;
} counter;

static int produce(fold_iterq *q, void *ctx) {
  counter *k = ctx;
  k->steps_seen++;
  int it = fold_iterq_iteration(q);
  if (rank == k->fail_rank && it == k->fail_at)
    return fold_iterq_fail(q, FOLD_ESYS, "the disk of rank %d is on fire", rank);
  double x[5];
  for (int i = 0; i < 5; i++) x[i] = (double)it * (rank + 1) + i;
  return fold_iterq_put(q, "x", x, 5, FOLD_FLOAT64);
}

static int consume(fold_iterq *q, void *ctx) {
  counter *k = ctx;
  size_t n;
  fold_dtype dt;
  double *x = fold_iterq_get(q, "x", &n, &dt);
  int it = fold_iterq_iteration(q);
  double want0 = (double)it * size * (size + 1) / 2;
  if (x == NULL || n != 5 || dt != FOLD_FLOAT64 || x[0] != want0 || x[4] != want0 + 4.0 * size) k->bad_check++;
  /* the running total across supersteps lives in the session */
  double *t = fold_iterq_get(q, "total", NULL, NULL);
  if (t) *t += x ? x[0] : 0;
  return FOLD_OK;
}

static int stop_at(fold_iterq *q, void *ctx) {
  counter *k = ctx;
  if (rank != 0) k->bad_check++; /* runs on rank 0 only */
  return fold_iterq_iteration(q) >= k->stop_at;
}

static int closing(fold_iterq *q, void *ctx) {
  counter *k = ctx;
  k->closes++;
  k->close_iter = fold_iterq_iteration(q);
  return FOLD_OK;
}

static int build(fold_iterq **q, counter *k) {
  CHECK_OK(fold_iterq_create(comm, q), comm);
  CHECK_OK(fold_iterq_add_compute(*q, produce, k), comm);
  CHECK_OK(fold_iterq_add_allreduce(*q, "x", FOLD_SUM), comm);
  CHECK_OK(fold_iterq_add_compute(*q, consume, k), comm);
  CHECK_OK(fold_iterq_close_with(*q, closing, k), comm);
  return 0;
}

static void basic(void) {
  /* stop on rank 0 after superstep 4: every rank runs 4 and closes once at 4 */
  counter k = {.stop_at = 4, .fail_rank = -1};
  fold_iterq *q;
  build(&q, &k);
  CHECK_OK(fold_iterq_set_stop(q, stop_at, &k), comm);
  CHECK_OK(fold_iterq_run(q), comm);
  CHECK(k.steps_seen == 4 && k.closes == 1 && k.close_iter == 4 && k.bad_check == 0,
        "rank %d: steps %d closes %d at %d bad %d", rank, k.steps_seen, k.closes, k.close_iter, k.bad_check);
  CHECK(fold_iterq_iteration(q) == 4, "iteration %d", fold_iterq_iteration(q));
  CHECK_RC(fold_iterq_run(q), FOLD_EINVAL, comm); /* a queue runs once */
  CHECK_RC(fold_iterq_add_compute(q, produce, &k), FOLD_EINVAL, comm);
  fold_iterq_destroy(q);

  /* without a stop criterion max_iter bounds it; the stop may not run past max_iter either */
  counter k2 = {.stop_at = 100, .fail_rank = -1};
  build(&q, &k2);
  CHECK_OK(fold_iterq_set_stop(q, stop_at, &k2), comm);
  CHECK_OK(fold_iterq_set_max_iter(q, 3), comm);
  CHECK_OK(fold_iterq_run(q), comm);
  CHECK(k2.steps_seen == 3 && k2.close_iter == 3 && k2.bad_check == 0, "max_iter: steps %d", k2.steps_seen);
  fold_iterq_destroy(q);

  /* a broadcast step copies root 1's buffer everywhere; put overwrites in place */
  CHECK_OK(fold_iterq_create(comm, &q), comm);
  int32_t v[3] = {rank, rank * 10, 7};
  CHECK_OK(fold_iterq_put(q, "v", v, 3, FOLD_INT32), comm);
  int32_t *p = fold_iterq_get(q, "v", NULL, NULL);
  int32_t w[3] = {rank + 100, rank * 10 + 100, 8};
  CHECK_OK(fold_iterq_put(q, "v", w, 3, FOLD_INT32), comm);
  CHECK(fold_iterq_get(q, "v", NULL, NULL) == p && p[2] == 8, "put of the same shape must overwrite in place");
  CHECK_OK(fold_iterq_add_broadcast(q, "v", size > 1 ? 1 : 0), comm);
  CHECK_OK(fold_iterq_set_max_iter(q, 1), comm);
  CHECK_OK(fold_iterq_run(q), comm);
  int root = size > 1 ? 1 : 0;
  CHECK(p[0] == root + 100 && p[1] == root * 10 + 100, "broadcast: got %d %d", p[0], p[1]);
  fold_iterq_destroy(q);

  /* every queue is its own session: the same name in two queues is two buffers */
  fold_iterq *q2;
  CHECK_OK(fold_iterq_create(comm, &q), comm);
  CHECK_OK(fold_iterq_create(comm, &q2), comm);
  int32_t one = 1, two = 2;
  CHECK_OK(fold_iterq_put(q, "same", &one, 1, FOLD_INT32), comm);
  CHECK(fold_iterq_get(q2, "same", NULL, NULL) == NULL, "a name of one queue seen in another");
  CHECK_OK(fold_iterq_put(q2, "same", &two, 1, FOLD_INT32), comm);
  CHECK(*(int32_t *)fold_iterq_get(q, "same", NULL, NULL) == 1 && *(int32_t *)fold_iterq_get(q2, "same", NULL, NULL) == 2,
        "sessions share a buffer");
  fold_iterq_destroy(q);
  fold_iterq_destroy(q2);

  uint64_t s, n, sum = 0, prev_end = 0;
  for (int r = 0; r < 7; r++) {
    fold_partition(23, r, 7, &s, &n);
    CHECK(s == prev_end && (n == 3 || n == 4) && (r < 2) == (n == 4), "partition r %d: %llu+%llu", r,
          (unsigned long long)s, (unsigned long long)n);
    prev_end = s + n;
    sum += n;
  }
  CHECK(sum == 23, "partition total %llu", (unsigned long long)sum);
  fold_partition(5, 7, 7, &s, &n);
  CHECK(s == 0 && n == 0, "partition of a rank outside");
}

static int nop(fold_iterq *q, void *ctx) {
  (void)q;
  (void)ctx;
  return FOLD_OK;
}
static int stop_nop(fold_iterq *q, void *ctx) {
  (void)q;
  (void)ctx;
  return 1;
}

static void bad_input(void) {
  fold_iterq *q;
  CHECK_RC(fold_iterq_create(NULL, &q), FOLD_EINVAL, NULL);
  CHECK_RC(fold_iterq_create(comm, NULL), FOLD_EINVAL, comm);
  CHECK_OK(fold_iterq_create(comm, &q), comm);
  CHECK_RC(fold_iterq_set_max_iter(q, 0), FOLD_EINVAL, comm);
  CHECK(strstr(fold_comm_last_error(comm), "max_iter 0") != NULL, "message: %s", fold_comm_last_error(comm));
  CHECK_RC(fold_iterq_set_max_iter(NULL, 5), FOLD_EINVAL, comm);
  CHECK_RC(fold_iterq_add_compute(q, NULL, NULL), FOLD_EINVAL, comm);
  CHECK_RC(fold_iterq_set_stop(q, NULL, NULL), FOLD_EINVAL, comm);
  CHECK_RC(fold_iterq_close_with(q, NULL, NULL), FOLD_EINVAL, comm);
  CHECK_OK(fold_iterq_close_with(q, nop, NULL), comm);
  CHECK_RC(fold_iterq_close_with(q, nop, NULL), FOLD_EINVAL, comm);
  CHECK_RC(fold_iterq_add_allreduce(q, NULL, FOLD_SUM), FOLD_EINVAL, comm);
  CHECK_RC(fold_iterq_add_allreduce(q, "", FOLD_SUM), FOLD_EINVAL, comm);
  char longname[80];
  memset(longname, 'a', sizeof longname - 1);
  longname[79] = 0;
  CHECK_RC(fold_iterq_add_allreduce(q, longname, FOLD_SUM), FOLD_EINVAL, comm);
  CHECK_RC(fold_iterq_add_broadcast(q, "v", size), FOLD_EINVAL, comm);
  CHECK_RC(fold_iterq_add_broadcast(q, "v", -1), FOLD_EINVAL, comm);
  CHECK_RC(fold_iterq_put(q, "v", NULL, 3, (fold_dtype)999), FOLD_EINVAL, comm);
  CHECK_RC(fold_iterq_put(q, NULL, NULL, 3, FOLD_INT32), FOLD_EINVAL, comm);
  CHECK(fold_iterq_get(q, "nothing", NULL, NULL) == NULL, "get of a name never put");
  CHECK_RC(fold_iterq_set_checkpoint(q, "/tmp/x", 0), FOLD_EINVAL, comm);
  CHECK_RC(fold_iterq_set_checkpoint(q, NULL, 1), FOLD_EINVAL, comm);
  CHECK_RC(fold_iterq_run(q), FOLD_EINVAL, comm); /* no steps */
  CHECK(strstr(fold_comm_last_error(comm), "no steps") != NULL, "message: %s", fold_comm_last_error(comm));
  fold_iterq_destroy(q);
  CHECK(fold_iterq_iteration(NULL) == FOLD_EINVAL, "iteration(NULL)");
  CHECK_OK(fold_iterq_destroy(NULL), comm);

  /* an allreduce of a name no rank put: FOLD_EINVAL on every rank naming the buffer and rank 0 */
  CHECK_OK(fold_iterq_create(comm, &q), comm);
  CHECK_OK(fold_iterq_add_allreduce(q, "ghost", FOLD_SUM), comm);
  CHECK_RC(fold_iterq_run(q), FOLD_EINVAL, comm);
  const char *m = fold_comm_last_error(comm);
  CHECK(strstr(m, "'ghost'") && strstr(m, "never put on rank 0") && strstr(m, "superstep 1, step 1"), "message: %s", m);
  fold_iterq_destroy(q);

  /* ML argument errors on one rank only stop every rank with that rank's message */
  fold_kmeans_params kp;
  fold_kmeans_params_default(&kp);
  kp.k = 2;
  double pts[8] = {0, 0, 1, 1, 5, 5, 6, 6}, cen[4];
  if (rank == size - 1) pts[3] = 0.0 / 0.0;
  CHECK_RC(fold_kmeans(comm, pts, 4, 2, &kp, cen, NULL, NULL, NULL), FOLD_EINVAL, comm);
  char want[64];
  snprintf(want, sizeof want, "rank %d: row 1, column 1", size - 1);
  CHECK(strstr(fold_comm_last_error(comm), want) != NULL, "kmeans NaN: %s", fold_comm_last_error(comm));
  pts[3] = 1;
  kp.k = 9 * size;
  CHECK_RC(fold_kmeans(comm, pts, 4, 2, &kp, cen, NULL, NULL, NULL), FOLD_EINVAL, comm);
  kp.k = 0;
  CHECK_RC(fold_kmeans(comm, pts, 4, 2, &kp, cen, NULL, NULL, NULL), FOLD_EINVAL, comm);
  fold_logreg_params lp;
  fold_logreg_params_default(&lp);
  int32_t y[4] = {0, 1, 0, 1};
  if (rank == 0) y[2] = 3;
  double coef[2];
  CHECK_RC(fold_logreg(comm, pts, y, 4, 2, &lp, coef, NULL, NULL), FOLD_EINVAL, comm);
  CHECK(strstr(fold_comm_last_error(comm), "rank 0: label of row 2 is 3") != NULL, "logreg: %s",
        fold_comm_last_error(comm));
  y[2] = 0;
  lp.C = 0;
  CHECK_RC(fold_logreg(comm, pts, y, 4, 2, &lp, coef, NULL, NULL), FOLD_EINVAL, comm);
  /* and the communicator still works afterwards (argument errors do not fail it) */
  CHECK_OK(fold_barrier(comm), comm);
  (void)stop_nop;
}

/* A step that fails on the last rank in superstep 3: every rank returns its code and message. */
static void fail_step(void) {
  counter k = {.stop_at = 10, .fail_rank = size - 1, .fail_at = 3};
  fold_iterq *q;
  build(&q, &k);
  CHECK_OK(fold_iterq_set_stop(q, stop_at, &k), comm);
  CHECK_RC(fold_iterq_run(q), FOLD_ESYS, comm);
  char want[160];
  snprintf(want, sizeof want, "rank %d failed in superstep 3, step 1 (compute): the disk of rank %d is on fire", size - 1,
           size - 1);
  CHECK(strstr(fold_comm_last_error(comm), want) != NULL, "rank %d message: %s", rank, fold_comm_last_error(comm));
  CHECK(k.closes == 0, "the closing step must not run after a failure");
  fold_iterq_destroy(q);
  CHECK_OK(fold_barrier(comm), comm); /* a step's failure leaves the communicator usable */

  /* The last rank fails in superstep 1 before it ever put "x", which step 2 reduces: the others learn
   * its failure in that step's check (not a mismatch of its empty buffer), every rank returns its code
   * and text, and the communicator stays usable. */
  counter k1 = {.stop_at = 10, .fail_rank = size - 1, .fail_at = 1};
  build(&q, &k1);
  CHECK_RC(fold_iterq_run(q), FOLD_ESYS, comm);
  snprintf(want, sizeof want, "rank %d failed in superstep 1, step 1 (compute): the disk of rank %d is on fire", size - 1,
           size - 1);
  CHECK(strstr(fold_comm_last_error(comm), want) != NULL, "first superstep: rank %d message: %s", rank,
        fold_comm_last_error(comm));
  CHECK(k1.closes == 0 && (rank == size - 1 || k1.bad_check == 0), "rank %d: closes %d bad %d", rank, k1.closes,
        k1.bad_check);
  fold_iterq_destroy(q);
  CHECK_OK(fold_barrier(comm), comm);
}

/* A step that returns a positive number (a count, a boolean) has not succeeded: FOLD_EINVAL on every
 * rank naming the step, the superstep and the rank. The same for the closing step. */
static int positive(fold_iterq *q, void *ctx) {
  int *at = ctx;
  return rank == size - 1 && fold_iterq_iteration(q) == *at ? 1 : FOLD_OK;
}
static int closing_positive(fold_iterq *q, void *ctx) {
  (void)q;
  (void)ctx;
  return rank == 0 ? 2 : FOLD_OK;
}

static void positive_return(void) {
  fold_iterq *q;
  int at = 2;
  counter k = {.stop_at = 10, .fail_rank = -1};
  build(&q, &k);
  CHECK_OK(fold_iterq_add_compute(q, positive, &at), comm);
  CHECK_RC(fold_iterq_run(q), FOLD_EINVAL, comm);
  char want[160];
  snprintf(want, sizeof want, "rank %d failed in superstep 2, step 4 (compute): the step returned 1;", size - 1);
  CHECK(strstr(fold_comm_last_error(comm), want) != NULL, "rank %d message: %s", rank, fold_comm_last_error(comm));
  CHECK(k.closes == 0 && k.steps_seen == 2, "rank %d: closes %d, supersteps %d", rank, k.closes, k.steps_seen);
  fold_iterq_destroy(q);

  CHECK_OK(fold_iterq_create(comm, &q), comm);
  CHECK_OK(fold_iterq_add_compute(q, nop, NULL), comm);
  CHECK_OK(fold_iterq_set_max_iter(q, 2), comm);
  CHECK_OK(fold_iterq_close_with(q, closing_positive, NULL), comm);
  CHECK_RC(fold_iterq_run(q), FOLD_EINVAL, comm);
  CHECK(strstr(fold_comm_last_error(comm), "rank 0 failed in the closing step: the step returned 2;") != NULL,
        "closing: rank %d message: %s", rank, fold_comm_last_error(comm));
  fold_iterq_destroy(q);
  CHECK_OK(fold_barrier(comm), comm);
}

static int stop_fails(fold_iterq *q, void *ctx) {
  (void)ctx;
  return fold_iterq_iteration(q) == 2 ? fold_iterq_fail(q, FOLD_EINVAL, "criterion broke") : 0;
}

static void fail_stop(void) {
  counter k = {.fail_rank = -1};
  fold_iterq *q;
  build(&q, &k);
  CHECK_OK(fold_iterq_set_stop(q, stop_fails, NULL), comm);
  CHECK_RC(fold_iterq_run(q), FOLD_EINVAL, comm);
  CHECK(strstr(fold_comm_last_error(comm), "rank 0 failed in superstep 2, stop criterion: criterion broke") != NULL,
        "message: %s", fold_comm_last_error(comm));
  fold_iterq_destroy(q);
}

/* Shapes that differ between ranks in the first superstep: FOLD_EMISMATCH naming the buffer, two ranks
 * and their shapes, the same on every rank, the communicator still usable. A buffer missing on some
 * ranks: FOLD_EINVAL naming it and them, the same on every rank, the communicator still usable. */
static int put_shape(fold_iterq *q, void *ctx) {
  const char *how = ctx;
  size_t n = 4;
  fold_dtype dt = FOLD_FLOAT64;
  if (rank == 1 && strcmp(how, "count") == 0) n = 5;
  if (rank == 1 && strcmp(how, "dtype") == 0) dt = FOLD_INT64;
  if (rank == 1 && strcmp(how, "missing") == 0) return FOLD_OK;
  if ((rank == 1 || rank == size - 1) && strcmp(how, "missing2") == 0) return FOLD_OK;
  /* a count changed after the first superstep: the collective's own check catches it (the communicator fails) */
  if (rank == 1 && (!strcmp(how, "later") || !strcmp(how, "told")) && fold_iterq_iteration(q) == 2) n = 5;
  /* told: the last rank hears of that mismatch while it computes (its
   * progress calls here take in the peers' report), not in the collective */
  if (rank == size - 1 && strcmp(how, "told") == 0 && fold_iterq_iteration(q) == 2) {
    int found;
    fold_status st;
    for (int i = 0; i < 10000 && fold_iprobe(FOLD_ANY_SOURCE, FOLD_ANY_TAG, comm, &found, &st) == FOLD_OK; i++)
      usleep(1000); /* at most about 10 s */
  }
  return fold_iterq_put(q, "shape", NULL, n, dt);
}

static int mismatch_run(const char *how) {
  fold_iterq *q;
  CHECK_OK(fold_iterq_create(comm, &q), comm);
  CHECK_OK(fold_iterq_add_compute(q, put_shape, (void *)how), comm);
  CHECK_OK(fold_iterq_add_allreduce(q, "shape", FOLD_SUM), comm);
  CHECK_OK(fold_iterq_set_max_iter(q, 3), comm);
  int rc = fold_iterq_run(q);
  fold_iterq_destroy(q);
  if (rank == 0) printf("%s: rank 0 sees: %s\n", how, fold_comm_last_error(comm));
  return rc;
}

static void mismatch(const char *how) {
  int rc = mismatch_run(how);
  const char *m = fold_comm_last_error(comm);
  if (strcmp(how, "missing") == 0) {
    CHECK(rc == FOLD_EINVAL, "missing: rank %d got %d (%s)", rank, rc, m);
    CHECK(strstr(m, "step 2 (allreduce of buffer 'shape'): the buffer was never put on rank 1;") != NULL,
          "missing: rank %d message: %s", rank, m);
    rc = mismatch_run("missing2");
    m = fold_comm_last_error(comm);
    char want[120];
    snprintf(want, sizeof want, "the buffer was never put on rank 1 (nor on rank %d%s)", size - 1,
             size > 3 ? ", perhaps others" : "");
    CHECK(rc == FOLD_EINVAL && strstr(m, "buffer 'shape'") && strstr(m, want), "missing2: rank %d got %d (%s)", rank, rc, m);
  } else if (strcmp(how, "later") == 0 || strcmp(how, "told") == 0) {
    CHECK(rc == FOLD_EMISMATCH, "later: rank %d got %d (%s)", rank, rc, m);
    CHECK(strstr(m, "superstep 2, step 2 (allreduce of buffer 'shape')") && strstr(m, "rank 1"), "later: rank %d: %s",
          rank, m);
    return; /* the collective's mismatch failed the communicator */
  } else {
    CHECK(rc == FOLD_EMISMATCH, "%s: rank %d got %d (%s)", how, rank, rc, m);
    const char *want = strcmp(how, "count") == 0 ? "rank 0 put it with 4 elements of float64, rank 1 with 5 of float64"
                                                 : "rank 0 put it with 4 elements of float64, rank 1 with 4 of int64";
    CHECK(strstr(m, "superstep 1, step 2 (allreduce of buffer 'shape'): ") && strstr(m, want), "%s: rank %d message: %s",
          how, rank, m);
  }
  CHECK_OK(fold_barrier(comm), comm); /* the check failed the queue, not the communicator */
}

/* ---- checkpoints ------------------------------------------------------------------------ */

static int ck_step(fold_iterq *q, void *ctx) {
  counter *k = ctx;
  int it = fold_iterq_iteration(q);
  if (rank == k->fail_rank && it == k->fail_at) return fold_iterq_fail(q, FOLD_ESYS, "crash in superstep %d", it);
  double *acc = fold_iterq_get(q, "acc", NULL, NULL);
  acc[0] = acc[0] * 1.5 + it + rank; /* depends on every earlier superstep */
  k->steps_seen++;
  if (k->steps_seen == 1) k->close_iter = it; /* the first superstep this run did */
  return FOLD_OK;
}

static int ck_max_iter = 9; /* of every ck_run */

static int ck_run(const char *dir, int fail_rank, int fail_at, double seed, int extra_step, double *out, int *first) {
  counter k = {.fail_rank = fail_rank, .fail_at = fail_at};
  fold_iterq *q;
  CHECK_OK(fold_iterq_create(comm, &q), comm);
  double acc = seed;
  CHECK_OK(fold_iterq_put(q, "acc", &acc, 1, FOLD_FLOAT64), comm);
  CHECK_OK(fold_iterq_add_compute(q, ck_step, &k), comm);
  CHECK_OK(fold_iterq_add_allreduce(q, "acc", FOLD_SUM), comm);
  if (extra_step) CHECK_OK(fold_iterq_add_compute(q, nop, NULL), comm);
  CHECK_OK(fold_iterq_set_max_iter(q, ck_max_iter), comm);
  if (dir) CHECK_OK(fold_iterq_set_checkpoint(q, dir, 2), comm);
  int rc = fold_iterq_run(q);
  if (out) *out = *(double *)fold_iterq_get(q, "acc", NULL, NULL);
  if (first) *first = k.close_iter;
  if (rc == FOLD_OK) CHECK(fold_iterq_iteration(q) == ck_max_iter, "rank %d: ended at superstep %d, max_iter %d", rank,
                           fold_iterq_iteration(q), ck_max_iter);
  fold_iterq_destroy(q);
  return rc;
}

/* Every rank's file of superstep `from` renamed to `to` (each rank its own), between barriers. */
static void ck_rename(const char *dir, int from, int to) {
  char a[512], b[512];
  fold_barrier(comm);
  snprintf(a, sizeof a, "%s/rank-%d.%09d.ckpt", dir, rank, from);
  snprintf(b, sizeof b, "%s/rank-%d.%09d.ckpt", dir, rank, to);
  CHECK(rename(a, b) == 0, "rename %s %s", a, b);
  fold_barrier(comm);
}

static void ck_copy(const char *from, const char *to) {
  FILE *f = fopen(from, "rb"), *t = fopen(to, "wb");
  char buf[4096];
  size_t n;
  CHECK(f && t, "copy %s to %s", from, to);
  while (f && t && (n = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, n, t);
  if (f) fclose(f);
  if (t) fclose(t);
}

static void checkpoint(const char *dir) {
  double plain, resumed;
  int first;
  CHECK_OK(ck_run(NULL, -1, 0, 1.0, 0, &plain, NULL), comm);
  /* rank 1 fails in superstep 7: checkpoints of 2, 4, 6 were written, 6 and 4 kept */
  CHECK_RC(ck_run(dir, size > 1 ? 1 : 0, 7, 1.0, 0, NULL, NULL), FOLD_ESYS, comm);
  CHECK_OK(ck_run(dir, -1, 0, 1.0, 0, &resumed, &first), comm);
  CHECK(first == 7 && resumed == plain, "rank %d: resumed at %d (want 7), %.17g vs %.17g", rank, first, resumed, plain);
  char path[512];

  /* a torn newest file on one rank: everyone goes back to the one before */
  CHECK_RC(ck_run(dir, 0, 9, 1.0, 0, NULL, NULL), FOLD_ESYS, comm); /* resumes at 9, fails: files 6 and 8 */
  fold_barrier(comm);
  if (rank == size - 1) {
    snprintf(path, sizeof path, "%s/rank-%d.%09d.ckpt", dir, rank, 8);
    CHECK(truncate(path, 40) == 0, "truncate %s", path);
  }
  fold_barrier(comm);
  CHECK_OK(ck_run(dir, -1, 0, 1.0, 0, &resumed, &first), comm);
  CHECK(first == 7 && resumed == plain, "torn: rank %d resumed at %d (want 7), %.17g vs %.17g", rank, first, resumed,
        plain);

  /* another run's checkpoint is refused: other data, another step list */
  CHECK_RC(ck_run(dir, -1, 0, 2.0, 0, NULL, NULL), FOLD_EINVAL, comm);
  CHECK(strstr(fold_comm_last_error(comm), "other data on rank 0: buffer 'acc' differs") != NULL, "data: %s",
        fold_comm_last_error(comm));
  CHECK_RC(ck_run(dir, -1, 0, 1.0, 1, NULL, NULL), FOLD_EINVAL, comm);
  CHECK(strstr(fold_comm_last_error(comm), "another step list") != NULL, "steps: %s", fold_comm_last_error(comm));

  /* The files are 6 and 8 on every rank. A run with max_iter 5 cannot resume after superstep 8: refused,
   * naming the file (rank 0's, the lowest rank's text), and no file is removed. */
  ck_max_iter = 5;
  CHECK_RC(ck_run(dir, -1, 0, 1.0, 0, NULL, NULL), FOLD_EINVAL, comm);
  snprintf(path, sizeof path, "checkpoint %s/rank-0.000000008.ckpt holds superstep 8, past this run's max_iter 5", dir);
  CHECK(strstr(fold_comm_last_error(comm), path) != NULL, "past max_iter: rank %d: %s", rank, fold_comm_last_error(comm));
  /* max_iter 8: resumes after 8 and runs no superstep, equal to an uninterrupted 8 */
  double plain8;
  ck_max_iter = 8;
  CHECK_OK(ck_run(NULL, -1, 0, 1.0, 0, &plain8, NULL), comm);
  CHECK_OK(ck_run(dir, -1, 0, 1.0, 0, &resumed, &first), comm);
  CHECK(first == 0 && resumed == plain8, "max_iter 8: rank %d ran from %d (want none), %.17g vs %.17g", rank, first,
        resumed, plain8);
  ck_max_iter = 9;

  /* Every rank's newest file renamed 8 -> 10: the header's superstep is not the name's: refused. */
  ck_rename(dir, 8, 10);
  CHECK_RC(ck_run(dir, -1, 0, 1.0, 0, NULL, NULL), FOLD_EINVAL, comm);
  snprintf(path, sizeof path, "%s/rank-0.000000010.ckpt holds superstep 8 in its header, not 10 as its name says", dir);
  CHECK(strstr(fold_comm_last_error(comm), path) != NULL, "renamed: rank %d: %s", rank, fold_comm_last_error(comm));
  ck_rename(dir, 10, 8);

  /* Rank 0's file replaced by rank 1's: refused naming the ranks, not the rank counts. */
  char keep[512], other[512];
  snprintf(path, sizeof path, "%s/rank-0.000000008.ckpt", dir);
  snprintf(keep, sizeof keep, "%s/keep", dir);
  snprintf(other, sizeof other, "%s/rank-1.000000008.ckpt", dir);
  if (rank == 0 && size > 1) {
    ck_copy(path, keep);
    ck_copy(other, path);
  }
  fold_barrier(comm);
  if (size > 1) {
    CHECK_RC(ck_run(dir, -1, 0, 1.0, 0, NULL, NULL), FOLD_EINVAL, comm);
    CHECK(strstr(fold_comm_last_error(comm), "rank-0.000000008.ckpt was written by rank 1, not by rank 0") != NULL,
          "swapped: rank %d: %s", rank, fold_comm_last_error(comm));
  }
  fold_barrier(comm);
  if (rank == 0 && size > 1) CHECK(rename(keep, path) == 0, "rename %s back", keep);
  fold_barrier(comm);

  /* After the refusals the files are intact: the run resumes after 8 and ends as an uninterrupted one. */
  CHECK_OK(ck_run(dir, -1, 0, 1.0, 0, &resumed, &first), comm);
  CHECK(first == 9 && resumed == plain, "after refusals: rank %d resumed at %d (want 9), %.17g vs %.17g", rank, first,
        resumed, plain);
}

/* fold_kmeans and fold_logreg: a checkpoint of a run with other parameters is refused naming 'params';
 * one past max_iter is refused naming the file; with the same parameters it resumes to the same model. */
static void ml_checkpoint(const char *dir) {
  double pts[12] = {0, 0, 1, 1, 0.5, 0.2, 5, 5, 6, 6, 5.5, 5.2}, init[4] = {0, 0, 1, 1}, c1[4], c2[4];
  for (int i = 0; i < 12; i++) pts[i] += 0.1 * rank;
  char d[512];
  snprintf(d, sizeof d, "%s/km", dir);
  fold_kmeans_params kp;
  fold_kmeans_params_default(&kp);
  kp.k = 2;
  kp.init = init;
  kp.checkpoint_dir = d;
  int n1 = 0, n2 = 0;
  CHECK_OK(fold_kmeans(comm, pts, 6, 2, &kp, c1, NULL, NULL, &n1), comm);
  CHECK(n1 >= 2, "kmeans ran %d supersteps", n1);
  CHECK_OK(fold_kmeans(comm, pts, 6, 2, &kp, c2, NULL, NULL, &n2), comm); /* resumes after the last one */
  CHECK(n2 == n1 && memcmp(c1, c2, sizeof c1) == 0, "kmeans resumed: %d supersteps vs %d", n2, n1);
  kp.tol = 0.5;
  CHECK_RC(fold_kmeans(comm, pts, 6, 2, &kp, c2, NULL, NULL, &n2), FOLD_EINVAL, comm);
  CHECK(strstr(fold_comm_last_error(comm), "other data on rank 0: buffer 'params' differs"), "kmeans tol: %s",
        fold_comm_last_error(comm));
  kp.tol = 0;
  kp.init = NULL;
  kp.seed = 3;
  CHECK_RC(fold_kmeans(comm, pts, 6, 2, &kp, c2, NULL, NULL, &n2), FOLD_EINVAL, comm);
  CHECK(strstr(fold_comm_last_error(comm), "buffer 'params' differs"), "kmeans seed: %s", fold_comm_last_error(comm));
  kp.init = init;
  kp.max_iter = n1 - 1;
  CHECK_RC(fold_kmeans(comm, pts, 6, 2, &kp, c2, NULL, NULL, &n2), FOLD_EINVAL, comm);
  char want[600];
  snprintf(want, sizeof want, "%s/rank-0.%09d.ckpt holds superstep %d, past this run's max_iter %d", d, n1, n1, n1 - 1);
  CHECK(strstr(fold_comm_last_error(comm), want), "kmeans max_iter: %s", fold_comm_last_error(comm));

  int32_t y[6] = {0, 0, 0, 1, 1, 1};
  y[rank % 3] = 1; /* not separable: a finite optimum */
  snprintf(d, sizeof d, "%s/lr", dir);
  fold_logreg_params lp;
  fold_logreg_params_default(&lp);
  lp.checkpoint_dir = d;
  lp.checkpoint_every = 1;
  double w1[2], w2[2];
  CHECK_OK(fold_logreg(comm, pts, y, 6, 2, &lp, w1, NULL, &n1), comm);
  CHECK_OK(fold_logreg(comm, pts, y, 6, 2, &lp, w2, NULL, &n2), comm);
  CHECK(n2 == n1 && memcmp(w1, w2, sizeof w1) == 0, "logreg resumed: %d steps vs %d", n2, n1);
  lp.gtol = 1e-4;
  CHECK_RC(fold_logreg(comm, pts, y, 6, 2, &lp, w2, NULL, &n2), FOLD_EINVAL, comm);
  CHECK(strstr(fold_comm_last_error(comm), "buffer 'params' differs"), "logreg gtol: %s", fold_comm_last_error(comm));
  lp.gtol = 1e-8;
  lp.history = 3;
  CHECK_RC(fold_logreg(comm, pts, y, 6, 2, &lp, w2, NULL, &n2), FOLD_EINVAL, comm);
  CHECK(strstr(fold_comm_last_error(comm), "buffer 'params' differs"), "logreg history: %s", fold_comm_last_error(comm));
  lp.history = 10;
  lp.max_iter = 2;
  CHECK_RC(fold_logreg(comm, pts, y, 6, 2, &lp, w2, NULL, &n2), FOLD_EINVAL, comm);
  CHECK(strstr(fold_comm_last_error(comm), "past this run's max_iter 2"), "logreg max_iter: %s",
        fold_comm_last_error(comm));
  CHECK_OK(fold_barrier(comm), comm);
}

/* The same dir with fewer ranks than it was written by: refused, naming the counts. */
static void checkpoint_ranks(const char *dir) {
  CHECK_RC(ck_run(dir, -1, 0, 1.0, 0, NULL, NULL), FOLD_EINVAL, comm);
  char want[80];
  snprintf(want, sizeof want, "ranks, this run has %d", size);
  CHECK(strstr(fold_comm_last_error(comm), want) != NULL, "ranks: %s", fold_comm_last_error(comm));
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: iterq_test basic|bad|fail|stopfail|positive|mismatch-count|mismatch-dtype|mismatch-later|missing|ckpt DIR|ckpt-ranks DIR|ml-ckpt DIR\n");
    return 2;
  }
  if (fold_init(&comm) != FOLD_OK) {
    fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
    return 1;
  }
  rank = fold_comm_rank(comm);
  size = fold_comm_size(comm);
  const char *m = argv[1];
  if (strcmp(m, "basic") == 0) basic();
  else if (strcmp(m, "bad") == 0) bad_input();
  else if (strcmp(m, "fail") == 0) fail_step();
  else if (strcmp(m, "stopfail") == 0) fail_stop();
  else if (strncmp(m, "mismatch-", 9) == 0) mismatch(m + 9);
  else if (strcmp(m, "missing") == 0) mismatch("missing");
  else if (strcmp(m, "positive") == 0) positive_return();
  else if (strcmp(m, "ml-ckpt") == 0 && argc > 2) ml_checkpoint(argv[2]);
  else if (strcmp(m, "ckpt") == 0 && argc > 2) checkpoint(argv[2]);
  else if (strcmp(m, "ckpt-ranks") == 0 && argc > 2) checkpoint_ranks(argv[2]);
  else CHECK(0, "unknown mode %s", m);
  fold_comm_destroy(comm);
  char name[64];
  snprintf(name, sizeof name, "iterq_test %s rank %d", m, rank);
  return check_report(name);
}
