/* comm_procs.c — sub-communicators over real processes (run under foldrun): the suite, split_host, and 1,000 split+destroy cycles without growth in open files or mappings. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "comm/comm_suite.h"
#include "fold.h"

static int count_fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static int count_maps(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  int n = 0;
  for (int ch; (ch = fgetc(f)) != EOF;) n += ch == '\n';
  fclose(f);
  return n;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  int cycles = argc > 1 ? atoi(argv[1]) : 1000;
  int host_size = argc > 2 ? atoi(argv[2]) : 0; /* expected fold_comm_split_host size (0: no check) */
  fold_comm *w;
  if (fold_init(&w) != FOLD_OK) {
    fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
    return 2;
  }
  int me = fold_comm_rank(w), n = fold_comm_size(w);
  comm_suite_all(w, 6);
  if (host_size > 0) {
    fold_comm *h = NULL;
    CHECK_OK(fold_comm_split_host(w, &h), w);
    CHECK(h && fold_comm_size(h) == host_size, "split_host: %d ranks, want %d", h ? fold_comm_size(h) : -1, host_size);
    fold_comm_destroy(h);
  }
  /* the time of one split (after a warm-up), max over ranks */
  fold_comm *k = NULL;
  CHECK_OK(fold_comm_split(w, me % 2, 0, &k), w);
  fold_comm_destroy(k);
  CHECK_OK(fold_barrier(w), w);
  double t0 = now_s();
  const int reps = 20;
  for (int i = 0; i < reps; i++) {
    CHECK_OK(fold_comm_split(w, me % 2, 0, &k), w);
    fold_comm_destroy(k);
  }
  double dt = (now_s() - t0) / reps, mx = 0;
  /* for scale: the allgather of 24 bytes that a split costs at least */
  unsigned char rec[24] = {0}, *all = calloc((size_t)n, 24);
  CHECK_OK(fold_barrier(w), w);
  t0 = now_s();
  for (int i = 0; i < reps; i++) CHECK_OK(fold_allgather(rec, all, 24, FOLD_UINT8, w), w);
  double ag = (now_s() - t0) / reps, agmx = 0;
  free(all);
  CHECK_OK(fold_allreduce(&dt, &mx, 1, FOLD_FLOAT64, FOLD_MAX, w), w);
  CHECK_OK(fold_allreduce(&ag, &agmx, 1, FOLD_FLOAT64, FOLD_MAX, w), w);
  if (me == 0)
    printf("split+destroy of %d processes (%s): %.1f us (an allgather of 24 bytes: %.1f us)\n", n,
           fold_comm_transport(w), mx * 1e6, agmx * 1e6);
  /* the shm collectives serve children too (their own areas): forced on a
   * dup and chosen automatically; tests/comm/comm_shm.c runs the matrix */
  if (strcmp(fold_comm_transport(w), "shm") == 0 && n > 1) {
    fold_comm *d = NULL;
    CHECK_OK(fold_comm_dup(w, &d), w);
    int64_t one = 1, sum = 0;
    CHECK_OK(fold_comm_set_algo(d, "allreduce=shm"), d);
    CHECK_OK(fold_allreduce(&one, &sum, 1, FOLD_INT64, FOLD_SUM, d), d);
    CHECK(sum == n, "child allreduce with shm forced: %lld", (long long)sum);
    CHECK_OK(fold_comm_set_algo(d, "allreduce=auto"), d);
    CHECK_OK(fold_allreduce(&one, &sum, 1, FOLD_INT64, FOLD_SUM, d), d);
    CHECK(sum == n, "child allreduce after auto: %lld", (long long)sum);
    fold_comm_destroy(d);
  }
  /* split+destroy cycles: no growth in files or mappings */
  int fds0 = count_fds(), maps0 = count_maps();
  for (int i = 0; i < cycles; i++) {
    CHECK_OK(fold_comm_split(w, (me + i) % 3, -me, &k), w);
    if (i % 50 == 0) {
      int32_t v = 1, s = 0;
      CHECK_OK(fold_allreduce(&v, &s, 1, FOLD_INT32, FOLD_SUM, k), k);
    }
    CHECK_OK(fold_comm_destroy(k), NULL);
  }
  int fds1 = count_fds(), maps1 = count_maps();
  CHECK(fds1 == fds0, "open files grew from %d to %d over %d splits", fds0, fds1, cycles);
  CHECK(maps1 <= maps0 + 2, "mappings grew from %d to %d over %d splits", maps0, maps1, cycles);
  CHECK_OK(fold_barrier(w), w);
  /* the world destroyed before a child: the child still works */
  CHECK_OK(fold_comm_dup(w, &k), w);
  CHECK_OK(fold_comm_destroy(w), NULL);
  int64_t one = 1, sum = 0;
  CHECK_OK(fold_allreduce(&one, &sum, 1, FOLD_INT64, FOLD_SUM, k), k);
  CHECK(sum == n, "child after the world went: %lld", (long long)sum);
  CHECK_OK(fold_barrier(k), k);
  fold_comm_destroy(k);
  char name[32];
  snprintf(name, sizeof name, "comm_procs rank %d", me);
  return check_report(name);
}
