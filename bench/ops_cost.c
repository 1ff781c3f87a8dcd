/* ops_cost.c — what one small operation costs on a 2-thread world: an 8 B allreduce, a KV push, an areduce.
 *
 * Usage: fold-opscost OP N     OP: allreduce8 | kvpush | areduce;  N operations after N/10 of warm-up
 * Prints one line: "OP N ns_per_op", the time of rank 0's loop over N.
 *   allreduce8  both ranks: fold_allreduce of one int64 (sum)
 *   kvpush      a dist_sync store, rank 0 the worker and rank 1 the server:
 *               the worker pushes one key of 2 floats and waits for it
 *   areduce     both ranks: create an areduce of 2 floats (target 0),
 *               contribute one fragment, done, wait, destroy
 * Only the public API: the same source builds against an older fold, so
 * that bench/ops_cost.sh can pair two builds. Allocations per operation:
 * run it under `valgrind --tool=memcheck` with N and 2N and divide the
 * difference of the "total heap usage" allocs by N (ops_cost.sh does). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fold.h"
#include "fold_areduce.h"
#include "fold_kv.h"

static const char *op;
static long n_ops;
static fold_comm *comms[2];
static double result_ns;

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void die(const char *what, int rc, fold_comm *c) {
  fprintf(stderr, "fold-opscost: %s: %s: %s\n", what, fold_strerror(rc), fold_comm_last_error(c));
  exit(1);
}

static void allreduce8(fold_comm *c, long n) {
  int64_t x = 1, y = 0;
  for (long i = 0; i < n; i++) {
    int rc = fold_allreduce(&x, &y, 1, FOLD_INT64, FOLD_SUM, c);
    if (rc != FOLD_OK) die("fold_allreduce", rc, c);
  }
}

static void areduce(fold_comm *c, long n) {
  float frag[2] = {1, 2}, out[2];
  for (long i = 0; i < n; i++) {
    fold_areduce *ar;
    int rc = fold_areduce_create(c, 2, FOLD_FLOAT32, FOLD_SUM, 0, 2, FOLD_AREDUCE_FULL, 0, &ar);
    if (rc == FOLD_OK) rc = fold_areduce_contribute(ar, frag);
    if (rc == FOLD_OK) rc = fold_areduce_done(ar);
    if (rc == FOLD_OK) rc = fold_areduce_wait(ar, out, NULL);
    if (rc != FOLD_OK) die("fold_areduce", rc, c);
    fold_areduce_destroy(ar);
  }
}

/* Run the whole store's life; time the worker's pushes after the warm-up. */
static double kvpush(fold_comm *c, long warm, long n) {
  fold_kv *kv;
  int rc = fold_kv_create(c, "dist_sync", &kv);
  if (rc != FOLD_OK) die("fold_kv_create", rc, c);
  double t = 0;
  if (fold_kv_role(kv) == FOLD_KV_SERVER) {
    if ((rc = fold_kv_serve(kv)) != FOLD_OK) die("fold_kv_serve", rc, c);
  } else {
    float v[2] = {1, 2};
    int64_t key = 7;
    const void *vals[1] = {v};
    if ((rc = fold_kv_init(kv, key, v, 2, FOLD_FLOAT32)) != FOLD_OK) die("fold_kv_init", rc, c);
    for (long i = 0; i < warm + n; i++) {
      if (i == warm) t = now_ns();
      if ((rc = fold_kv_push(kv, 1, &key, vals, 0)) != FOLD_OK || (rc = fold_kv_wait(kv)) != FOLD_OK)
        die("fold_kv_push", rc, c);
    }
    t = now_ns() - t;
  }
  fold_kv_destroy(kv);
  return t;
}

static void *rank_main(void *arg) {
  int r = (int)(long)arg;
  fold_comm *c = comms[r];
  long warm = n_ops / 10 + 1;
  double t;
  if (!strcmp(op, "kvpush")) {
    t = kvpush(c, warm, n_ops);
  } else {
    void (*fn)(fold_comm *, long) = !strcmp(op, "areduce") ? areduce : allreduce8;
    fn(c, warm);
    int rc = fold_barrier(c);
    if (rc != FOLD_OK) die("fold_barrier", rc, c);
    t = now_ns();
    fn(c, n_ops);
    t = now_ns() - t;
  }
  if (r == 0) result_ns = t;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "allreduce8") && strcmp(argv[1], "kvpush") && strcmp(argv[1], "areduce")) ||
      (n_ops = atol(argv[2])) < 1) {
    fprintf(stderr, "usage: fold-opscost allreduce8|kvpush|areduce N\n");
    return 2;
  }
  op = argv[1];
  int rc = fold_comm_init_threads(2, comms);
  if (rc != FOLD_OK) die("fold_comm_init_threads", rc, NULL);
  pthread_t th[2];
  for (long r = 0; r < 2; r++) pthread_create(&th[r], NULL, rank_main, (void *)r);
  for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < 2; r++) fold_comm_destroy(comms[r]);
  printf("%s %ld %.1f\n", op, n_ops, result_ns / (double)n_ops);
  return 0;
}
