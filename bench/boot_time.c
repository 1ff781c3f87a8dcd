/* boot_time.c — fold-boottime: how long fold_init takes at this world size (bench/boot_bench.sh). */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fold.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Open sockets of this process (/proc/self/fd): data connections, the
 * listener, the store connection. */
static int sockets(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    char path[300], link[64];
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t k = readlink(path, link, sizeof link - 1);
    n += k > 7 && strncmp(link, "socket:", 7) == 0;
  }
  if (d)
    closedir(d);
  return n;
}

/* Every rank times its fold_init; rank 0 prints the slowest and the mean,
 * after one checked allreduce and a split with a checked allreduce on each
 * half (so the world really works). The store
 * requests are counted by fold itself: FOLD_DEBUG=INFO prints them on each
 * rank's "joined" line, which bench/boot_bench.sh adds up. */
int main(void) {
  fold_comm *c = NULL;
  double t0 = now_s();
  int rc = fold_init(&c);
  double t = now_s() - t0;
  if (rc != FOLD_OK) {
    fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
    return 1;
  }
  int n = fold_comm_size(c), r = fold_comm_rank(c);
  double s_init = sockets(), s_end = 0, s_init_sum = 0, s_end_sum = 0, s_end_max = 0;
  double mx = 0, sum = 0;
  int64_t one = 1, count = 0;
  if (fold_allreduce(&t, &mx, 1, FOLD_FLOAT64, FOLD_MAX, c) != FOLD_OK ||
      fold_allreduce(&t, &sum, 1, FOLD_FLOAT64, FOLD_SUM, c) != FOLD_OK ||
      fold_allreduce(&one, &count, 1, FOLD_INT64, FOLD_SUM, c) != FOLD_OK || count != n) {
    fprintf(stderr, "rank %d: allreduce failed: %s\n", r, fold_comm_last_error(c));
    fold_comm_destroy(c);
    return 1;
  }
  /* sockets: right after fold_init, and after the three allreduces */
  s_end = sockets();
  if (fold_allreduce(&s_init, &s_init_sum, 1, FOLD_FLOAT64, FOLD_SUM, c) != FOLD_OK ||
      fold_allreduce(&s_end, &s_end_sum, 1, FOLD_FLOAT64, FOLD_SUM, c) != FOLD_OK ||
      fold_allreduce(&s_end, &s_end_max, 1, FOLD_FLOAT64, FOLD_MAX, c) != FOLD_OK) {
    fprintf(stderr, "rank %d: allreduce failed: %s\n", r, fold_comm_last_error(c));
    fold_comm_destroy(c);
    return 1;
  }
  /* a split into even and odd ranks, with a checked allreduce on each half */
  fold_comm *half = NULL;
  int64_t mine = r, got = -1, want = 0;
  for (int q = r % 2; q < n; q += 2)
    want += q;
  if (fold_comm_split(c, r % 2, r, &half) != FOLD_OK ||
      fold_allreduce(&mine, &got, 1, FOLD_INT64, FOLD_SUM, half) != FOLD_OK || got != want) {
    fprintf(stderr, "rank %d: split or its allreduce failed (got %lld, want %lld): %s\n", r, (long long)got,
            (long long)want, fold_comm_last_error(half ? half : c));
    if (half)
      fold_comm_destroy(half);
    fold_comm_destroy(c);
    return 1;
  }
  fold_comm_destroy(half);
  if (r == 0)
    printf("boottime ranks=%d init_max_s=%.4f init_mean_s=%.4f sockets_init_mean=%.1f sockets_end_mean=%.1f "
           "sockets_end_max=%.0f split=ok\n",
           n, mx, sum / n, s_init_sum / n, s_end_sum / n, s_end_max);
  fold_comm_destroy(c);
  return 0;
}
