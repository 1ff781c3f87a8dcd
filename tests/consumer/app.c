/* app.c — a program of fold's users: a 2-rank allreduce on threads, checked, and where its libfold came from. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <fold.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

enum { N = 1000 };
static fold_comm *comms[2];
static int rcs[2];
static double out[2][N];

static void *rank_main(void *arg) {
  int r = (int)(long)arg;
  double in[N];
  for (int i = 0; i < N; i++) in[i] = (r + 1) * i; /* rank 0: i, rank 1: 2i */
  rcs[r] = fold_allreduce(in, out[r], N, FOLD_FLOAT64, FOLD_SUM, comms[r]);
  if (rcs[r] != FOLD_OK) fprintf(stderr, "rank %d: %s\n", r, fold_comm_last_error(comms[r]));
  return NULL;
}

int main(void) {
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", FOLD_VERSION_MAJOR, FOLD_VERSION_MINOR, FOLD_VERSION_PATCH);
  if (strcmp(fold_version(), want) != 0) {
    printf("fold_version() = %s, the header says %s\n", fold_version(), want);
    return 1;
  }
  Dl_info info;
  if (dladdr((void *)fold_version, &info) && info.dli_fname) printf("libfold %s\n", info.dli_fname);
  if (fold_comm_init_threads(2, comms) != FOLD_OK) {
    printf("fold_comm_init_threads: %s\n", fold_comm_last_error(NULL));
    return 1;
  }
  pthread_t t[2];
  for (long r = 0; r < 2; r++) pthread_create(&t[r], NULL, rank_main, (void *)r);
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
  int bad = rcs[0] != FOLD_OK || rcs[1] != FOLD_OK;
  for (int r = 0; r < 2 && !bad; r++)
    for (int i = 0; i < N; i++)
      if (out[r][i] != 3.0 * i) {
        printf("rank %d: element %d is %g, want %g\n", r, i, out[r][i], 3.0 * i);
        bad = 1;
        break;
      }
  fold_comm_destroy(comms[0]);
  fold_comm_destroy(comms[1]);
  if (bad) return 1;
  printf("allreduce ok, fold %s\n", fold_version());
  return 0;
}
