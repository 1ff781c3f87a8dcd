/* comm_threads_big.c — a world of many thread ranks (default 1,024): checked allreduce, split and allreduce in the children, broadcast, barrier. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "fold.h"

#define GROUPS 8 /* the split's colours: rank % GROUPS */

typedef struct { fold_comm *c; } arg_t;

static void *rank_main(void *p) {
  fold_comm *w = ((arg_t *)p)->c, *k = NULL;
  int n = fold_comm_size(w), me = fold_comm_rank(w);
  int64_t mine[2] = {me, 1}, sum[2] = {0, 0};
  CHECK_OK(fold_allreduce(mine, sum, 2, FOLD_INT64, FOLD_SUM, w), w);
  CHECK(sum[0] == (int64_t)n * (n - 1) / 2 && sum[1] == n, "rank %d: world sum %lld count %lld", me,
        (long long)sum[0], (long long)sum[1]);
  CHECK_OK(fold_comm_split(w, me % GROUPS, -me, &k), w); /* key -me: the children's ranks reversed */
  int kn = fold_comm_size(k), kme = fold_comm_rank(k);
  int want_n = n / GROUPS + (me % GROUPS < n % GROUPS);
  CHECK(kn == want_n && kme == want_n - 1 - me / GROUPS, "rank %d: child rank %d of %d, want %d of %d", me, kme, kn,
        want_n - 1 - me / GROUPS, want_n);
  int64_t csum = 0, expect = 0;
  for (int r = me % GROUPS; r < n; r += GROUPS) expect += r;
  CHECK_OK(fold_allreduce(&mine[0], &csum, 1, FOLD_INT64, FOLD_SUM, k), k);
  CHECK(csum == expect, "rank %d: child sum %lld, want %lld", me, (long long)csum, (long long)expect);
  int64_t b = kme == 0 ? 1000 + me % GROUPS : -1;
  CHECK_OK(fold_broadcast(&b, 1, FOLD_INT64, 0, k), k);
  CHECK(b == 1000 + me % GROUPS, "rank %d: child broadcast gave %lld", me, (long long)b);
  CHECK_OK(fold_barrier(w), w);
  CHECK_OK(fold_comm_destroy(k), NULL);
  CHECK_OK(fold_comm_destroy(w), NULL);
  return NULL;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1024;
  if (n < 1 || n > 65536) {
    fprintf(stderr, "usage: comm_threads_big [N] (1 <= N <= 65536)\n");
    return 2;
  }
  fold_comm **c = calloc((size_t)n, sizeof *c);
  arg_t *a = calloc((size_t)n, sizeof *a);
  pthread_t *th = calloc((size_t)n, sizeof *th);
  CHECK(c && a && th, "out of memory");
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK_OK(fold_comm_init_threads(n, c), NULL);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 << 10); /* 1,024 default 8 MiB stacks would be 8 GiB of address space */
  for (int i = 0; i < n; i++) {
    a[i].c = c[i];
    CHECK(pthread_create(&th[i], &attr, rank_main, &a[i]) == 0, "cannot start thread %d", i);
  }
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("comm_threads_big: %d thread ranks: allreduce, split into %d, allreduce, broadcast, barrier: ok in %.2f s\n",
         n, GROUPS, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
  pthread_attr_destroy(&attr);
  free(c), free(a), free(th);
  return check_report("comm_threads_big");
}
