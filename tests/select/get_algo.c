/* get_algo.c — fold_comm_get_algo names the algorithm the call runs: forced, FOLD_RULES (sum_exact's wider elements), built-in, bad input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fold.h"


#define N 4

/* Every rank allreduces count floats; rank 0 forces `algo`, the others
 * choose automatically. Returns the worst status: FOLD_OK when rank 0's
 * forced algorithm is the one the others picked, FOLD_EMISMATCH otherwise. */
static int allreduce_with_rank0_forced(fold_sim *sim, fold_comm **c, size_t count, const char *algo) {
  char spec[96];
  snprintf(spec, sizeof spec, "allreduce=%s", algo);
  CHECK_OK(fold_comm_set_algo(c[0], spec), c[0]);
  float *buf = calloc(count * N + 1, sizeof *buf);
  fold_request *req[N] = {0};
  int worst = FOLD_OK;
  for (int r = 0; r < N; r++) CHECK_OK(fold_iallreduce(buf + r * count, buf + r * count, count, FOLD_FLOAT32, FOLD_SUM, c[r], &req[r]), c[r]);
  fold_sim_run(sim);
  for (int r = 0; r < N; r++) {
    int rc = req[r] ? fold_wait(req[r]) : FOLD_OK;
    if (rc != FOLD_OK) worst = rc;
  }
  CHECK_OK(fold_comm_set_algo(c[0], "allreduce=auto"), c[0]);
  free(buf);
  return worst;
}

int main(void) {
  /* A rules file read when the communicators are made: 1 KiB of the call's
   * count (in the algorithm's element size) picks recursive_doubling, more
   * picks ring. */
  char path[] = "/tmp/fold_get_algoXXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0, "mkstemp");
  const char *rules = "allreduce * * 0-1K recursive_doubling\nallreduce * * 1K- ring\n";
  CHECK(write(fd, rules, strlen(rules)) == (ssize_t)strlen(rules), "write rules");
  close(fd);
  setenv("FOLD_RULES", path, 1);
  fold_sim *sim = NULL;
  fold_comm *c[N];
  CHECK_OK(fold_sim_create(N, NULL, &sim, c), NULL);
  unsetenv("FOLD_RULES");
  unlink(path);

  /* the rules, by the call's bytes: 256 floats are 1 KiB, 257 are more */
  const char *a = fold_comm_get_algo(c[0], "allreduce", 256, FOLD_FLOAT32, FOLD_SUM);
  CHECK(a && strcmp(a, "recursive_doubling") == 0, "256 floats: %s", a ? a : fold_comm_last_error(c[0]));
  a = fold_comm_get_algo(c[0], "allreduce", 257, FOLD_FLOAT32, FOLD_SUM);
  CHECK(a && strcmp(a, "ring") == 0, "257 floats: %s", a ? a : fold_comm_last_error(c[0]));
  /* sum_exact runs on wider accumulators: 256 floats are more than 1 KiB */
  a = fold_comm_get_algo(c[0], "allreduce", 256, FOLD_FLOAT32, FOLD_SUM_EXACT);
  CHECK(a && strcmp(a, "ring") == 0, "256 floats, sum_exact: %s", a ? a : fold_comm_last_error(c[0]));
  a = fold_comm_get_algo(c[0], "allreduce", 1, FOLD_FLOAT32, FOLD_SUM_EXACT);
  CHECK(a && strcmp(a, "recursive_doubling") == 0, "1 float, sum_exact: %s", a ? a : fold_comm_last_error(c[0]));

  /* forced wins over the rules, for that collective only */
  CHECK_OK(fold_comm_set_algo(c[0], "allreduce=direct"), c[0]);
  a = fold_comm_get_algo(c[0], "allreduce", 256, FOLD_FLOAT32, FOLD_SUM);
  CHECK(a && strcmp(a, "direct") == 0, "forced direct: %s", a ? a : "NULL");
  a = fold_comm_get_algo(c[0], "barrier", 0, FOLD_FLOAT32, FOLD_SUM);
  CHECK(a != NULL && strcmp(a, "direct") != 0, "barrier: %s", a ? a : fold_comm_last_error(c[0]));
  CHECK_OK(fold_comm_set_algo(c[0], "allreduce=auto"), c[0]);

  /* the name is what the call runs: rank 0 forcing it agrees with the
   * others' automatic choice (a different algorithm would be a mismatch) */
  size_t counts[] = {1, 256, 257, 1 << 16};
  for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
    a = fold_comm_get_algo(c[1], "allreduce", counts[i], FOLD_FLOAT32, FOLD_SUM);
    CHECK(a != NULL, "count %zu: %s", counts[i], fold_comm_last_error(c[1]));
    if (a != NULL) CHECK_OK(allreduce_with_rank0_forced(sim, c, counts[i], a), c[0]);
  }
  fold_sim_destroy(sim);
  /* the control: forcing another algorithm than the others' choice is
   * caught (the mismatch fails the world, hence a world of its own) */
  CHECK_OK(fold_sim_create(N, NULL, &sim, c), NULL);
  a = fold_comm_get_algo(c[1], "allreduce", 300, FOLD_FLOAT32, FOLD_SUM);
  const char *other = a && strcmp(a, "ring") == 0 ? "recursive_doubling" : "ring";
  CHECK(allreduce_with_rank0_forced(sim, c, 300, other) == FOLD_EMISMATCH, "%s against %s ran", other, a ? a : "NULL");
  fold_sim_destroy(sim);

  /* built-in rules on a fresh world: a name of the collective's table */
  CHECK_OK(fold_sim_create(N, NULL, &sim, c), NULL);
  const char *colls[] = {"broadcast", "reduce", "allreduce", "reduce_scatter", "allgather", "gather", "scatter",
                         "alltoall", "barrier"};
  for (size_t i = 0; i < sizeof colls / sizeof *colls; i++) {
    a = fold_comm_get_algo(c[2], colls[i], 1 << 18, FOLD_FLOAT32, FOLD_SUM);
    CHECK(a != NULL && *a, "%s: %s", colls[i], a ? a : fold_comm_last_error(c[2]));
    if (a == NULL) continue;
    char spec[96];
    snprintf(spec, sizeof spec, "%s=%s", colls[i], a);
    CHECK_OK(fold_comm_set_algo(c[3], spec), c[3]); /* a name the collective knows */
  }

  /* bad input: NULL and a message naming the rank */
  CHECK(fold_comm_get_algo(NULL, "allreduce", 1, FOLD_FLOAT32, FOLD_SUM) == NULL, "NULL comm");
  CHECK(fold_comm_get_algo(c[1], NULL, 1, FOLD_FLOAT32, FOLD_SUM) == NULL, "NULL coll");
  CHECK(fold_comm_get_algo(c[1], "allsum", 1, FOLD_FLOAT32, FOLD_SUM) == NULL, "unknown collective");
  CHECK(strstr(fold_comm_last_error(c[1]), "rank 1") && strstr(fold_comm_last_error(c[1]), "allsum"), "message: %s",
        fold_comm_last_error(c[1]));
  CHECK(fold_comm_get_algo(c[1], "allreduce", 1, (fold_dtype)9999, FOLD_SUM) == NULL, "bad dtype");
  CHECK(fold_comm_get_algo(c[1], "allreduce", 1, FOLD_INT32, FOLD_SUM_EXACT) == NULL, "sum_exact on int32");
  /* a forced algorithm that cannot run here: shm on a simulated world */
  CHECK_OK(fold_comm_set_algo(c[1], "allreduce=shm"), c[1]);
  CHECK(fold_comm_get_algo(c[1], "allreduce", 1, FOLD_FLOAT32, FOLD_SUM) == NULL, "shm on the simulator");
  CHECK(strstr(fold_comm_last_error(c[1]), "shm") != NULL, "message: %s", fold_comm_last_error(c[1]));
  fold_sim_destroy(sim);
  return check_report("get_algo");
}
