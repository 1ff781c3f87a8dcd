/* init_world.c — fold_init's world as a program sees it: the singleton, incomplete launchers, node-local rank/size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fold.h"



/* Every collective on c, with results that depend on every rank. */
static void collectives(fold_comm *c) {
  int r = fold_comm_rank(c), n = fold_comm_size(c);
  int64_t v = r + 1, s = 0;
  CHECK_OK(fold_allreduce(&v, &s, 1, FOLD_INT64, FOLD_SUM, c), c);
  CHECK(s == (int64_t)n * (n + 1) / 2, "allreduce: %lld", (long long)s);
  CHECK_OK(fold_barrier(c), c);
  int32_t b = r == 0 ? 41 : -1;
  CHECK_OK(fold_broadcast(&b, 1, FOLD_INT32, 0, c), c);
  CHECK(b == 41, "broadcast: %d", (int)b);
  int32_t *all = calloc((size_t)n, sizeof *all), *sc = calloc((size_t)n, sizeof *sc), mine = 100 + r, got = -1;
  CHECK_OK(fold_allgather(&mine, all, 1, FOLD_INT32, c), c);
  for (int p = 0; p < n; p++)
    CHECK(all[p] == 100 + p, "allgather[%d] = %d", p, (int)all[p]);
  for (int p = 0; p < n; p++)
    sc[p] = r * 10 + p;
  CHECK_OK(fold_alltoall(sc, all, 1, FOLD_INT32, c), c);
  for (int p = 0; p < n; p++)
    CHECK(all[p] == p * 10 + r, "alltoall[%d] = %d", p, (int)all[p]);
  for (int p = 0; p < n; p++)
    sc[p] = p;
  CHECK_OK(fold_reduce_scatter(sc, &got, 1, FOLD_INT32, FOLD_SUM, c), c);
  CHECK(got == r * n, "reduce_scatter: %d", (int)got);
  int64_t red = -1;
  CHECK_OK(fold_reduce(&v, &red, 1, FOLD_INT64, FOLD_MAX, 0, c), c);
  CHECK(r != 0 || red == n, "reduce: %lld", (long long)red);
  CHECK_OK(fold_gather(&mine, all, 1, FOLD_INT32, 0, c), c);
  CHECK(r != 0 || all[n - 1] == 100 + n - 1, "gather");
  CHECK_OK(fold_scatter(sc, &got, 1, FOLD_INT32, 0, c), c);
  CHECK(got == r, "scatter: %d", (int)got);
  int32_t x = 5, y = 0;
  fold_request *q = NULL;
  CHECK_OK(fold_isend(&x, 1, FOLD_INT32, r, 3, c, &q), c); /* to oneself */
  CHECK_OK(fold_recv(&y, 1, FOLD_INT32, r, 3, c), c);
  CHECK_OK(fold_wait(q), c);
  CHECK(y == 5, "self send: %d", (int)y);
  free(all);
  free(sc);
}

/* Usage:
 *   init_world SIZE all|own [TRANSPORT]  fold_init must give SIZE ranks whose
 *       local rank/size are rank/size (all) or 0/1 (own host each), and run
 *       every collective; TRANSPORT: the fold_comm_transport wanted.
 *   init_world einval|eauth WORD...      fold_init must fail with FOLD_EINVAL
 *       (FOLD_EAUTH), with a message naming each WORD.
 *   init_world unit                      threads, simulator and NULL. */
int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "unit") == 0) {
    CHECK_RC(fold_comm_local_rank(NULL), FOLD_EINVAL, NULL);
    CHECK_RC(fold_comm_local_size(NULL), FOLD_EINVAL, NULL);
    fold_comm *t[3];
    CHECK_OK(fold_comm_init_threads(3, t), NULL);
    for (int i = 0; i < 3; i++) {
      CHECK(fold_comm_local_rank(t[i]) == i, "threads: rank %d has local rank %d", i, fold_comm_local_rank(t[i]));
      CHECK(fold_comm_local_size(t[i]) == 3, "threads: local size %d", fold_comm_local_size(t[i]));
      fold_comm_destroy(t[i]);
    }
    fold_sim *sim = NULL;
    fold_comm *s[4];
    CHECK_OK(fold_sim_create(4, NULL, &sim, s), NULL);
    for (int i = 0; i < 4; i++) {
      CHECK(fold_comm_local_rank(s[i]) == 0, "sim: rank %d has local rank %d", i, fold_comm_local_rank(s[i]));
      CHECK(fold_comm_local_size(s[i]) == 1, "sim: local size %d", fold_comm_local_size(s[i]));
    }
    fold_sim_destroy(sim);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", FOLD_VERSION_MAJOR, FOLD_VERSION_MINOR, FOLD_VERSION_PATCH);
    CHECK(strcmp(fold_version(), want) == 0, "fold_version() = %s, header %s", fold_version(), want);
    return check_report("init_world unit");
  }
  fold_comm *c = NULL;
  int rc = fold_init(&c);
  if (argc >= 2 && (strcmp(argv[1], "einval") == 0 || strcmp(argv[1], "eauth") == 0)) {
    int want = strcmp(argv[1], "einval") == 0 ? FOLD_EINVAL : FOLD_EAUTH;
    CHECK(rc == want, "fold_init returned %d (%s), wanted %s", rc, fold_strerror(rc), fold_strerror(want));
    CHECK(c == NULL, "comm not NULL on failure");
    for (int i = 2; i < argc; i++)
      CHECK(strstr(fold_comm_last_error(NULL), argv[i]) != NULL, "message lacks \"%s\": %s", argv[i],
            fold_comm_last_error(NULL));
    printf("refused: %s\n", fold_comm_last_error(NULL));
    fold_comm_destroy(c);
    return check_report("init_world refused");
  }
  if (argc < 3) {
    fprintf(stderr, "usage: init_world SIZE all|own [TRANSPORT] | einval WORD... | unit\n");
    return 2;
  }
  if (rc != FOLD_OK) {
    fprintf(stderr, "fold_init: %s: %s\n", fold_strerror(rc), fold_comm_last_error(NULL));
    return 10;
  }
  int n = atoi(argv[1]), own = strcmp(argv[2], "own") == 0;
  int r = fold_comm_rank(c);
  CHECK(fold_comm_size(c) == n, "size %d, wanted %d", fold_comm_size(c), n);
  CHECK(r >= 0 && r < n, "rank %d", r);
  CHECK(fold_comm_local_rank(c) == (own ? 0 : r), "rank %d: local rank %d (%s)", r, fold_comm_local_rank(c),
        argv[2]);
  CHECK(fold_comm_local_size(c) == (own ? 1 : n), "rank %d: local size %d (%s)", r, fold_comm_local_size(c),
        argv[2]);
  if (argc >= 4)
    CHECK(strcmp(fold_comm_transport(c), argv[3]) == 0, "transport %s, wanted %s", fold_comm_transport(c), argv[3]);
  collectives(c);
  printf("rank %d of %d: local %d of %d, transport %s\n", r, fold_comm_size(c), fold_comm_local_rank(c),
         fold_comm_local_size(c), fold_comm_transport(c));
  fold_comm_destroy(c);
  return check_report("init_world");
}
