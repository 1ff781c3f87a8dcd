/* kv_threads.c — a distributed store whose ranks are threads of one process (inproc transport): dist_sync and dist_async, 3 workers and 2 servers, several stores at once; fold_comm_abort ending a store's wait. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fold.h"

#define N 5 /* ranks: workers 0-2, servers 3-4 (FOLD_KV_SERVERS=2) */
#define STEPS 6
#define COUNT 2500 /* above the bound set below: split over both servers */

static fold_comm *comms[N];

/* stored += merged; ctx counts the calls of this server thread */
static void add(int64_t key, const void *merged, void *stored, size_t count, fold_dtype dt, void *ctx) {
  (void)key;
  (void)dt;
  (*(int *)ctx)++;
  for (size_t i = 0; i < count; i++) ((int64_t *)stored)[i] += ((const int64_t *)merged)[i];
}

static void *rank_main(void *arg) {
  int r = (int)(intptr_t)arg;
  fold_comm *w = comms[r];
  const char *types[2] = {"dist_sync", "dist_async"};
  for (int t = 0; t < 2; t++) {
    fold_kv *kv;
    CHECK_OK(fold_kv_create(w, types[t], &kv), w);
    if (kv == NULL) return NULL;
    if (fold_kv_role(kv) == FOLD_KV_SERVER) {
      int calls = 0;
      fold_kv_set_updater(kv, add, &calls);
      CHECK_OK(fold_kv_serve(kv), w);
      CHECK(calls > 0, "server %d applied nothing", r);
      fold_kv_destroy(kv);
      continue;
    }
    int64_t *v = calloc(COUNT, sizeof *v), *o = calloc(COUNT, sizeof *o);
    int64_t key = 7;
    CHECK_OK(fold_kv_init(kv, key, v, COUNT, FOLD_INT64), w);
    for (int s = 1; s <= STEPS; s++) {
      for (int i = 0; i < COUNT; i++) v[i] = r + s + i % 5;
      const void *vp[1] = {v};
      void *op[1] = {o};
      CHECK_OK(fold_kv_pushpull(kv, 1, &key, vp, op, 0), w);
      CHECK_OK(fold_kv_wait(kv), w);
      if (t == 1) continue;
      /* sync: after step s, sum over steps 1..s and workers 0..2 */
      for (int i = 0; i < COUNT; i++) {
        int64_t want = 0;
        for (int q = 1; q <= s; q++) want += (0 + q + i % 5) + (1 + q + i % 5) + (2 + q + i % 5);
        if (o[i] != want) {
          CHECK(0, "%s rank %d step %d element %d: %lld, wanted %lld", types[t], r, s, i, (long long)o[i], (long long)want);
          break;
        }
      }
    }
    CHECK_OK(fold_kv_barrier(kv), w);
    int64_t key1 = key;
    void *op[1] = {o};
    CHECK_OK(fold_kv_pull(kv, 1, &key1, op, 0), w);
    CHECK_OK(fold_kv_wait(kv), w);
    int64_t want = 0;
    for (int q = 1; q <= STEPS; q++) want += 3 * q + 3;
    CHECK(o[0] == want, "%s rank %d: final %lld, wanted %lld", types[t], r, (long long)o[0], (long long)want);
    CHECK_OK(fold_kv_destroy(kv), w);
    free(v);
    free(o);
  }
  return NULL;
}

/* fold_comm_abort on the communicator a store was made on ends the store's
 * waits with FOLD_EABORTED: worker 0 blocks in a barrier that the servers,
 * which have not called fold_kv_serve, cannot answer; another thread aborts
 * the worker's communicator. */
static atomic_int abort_done;
static fold_comm *acomms[2];

static void *aborter(void *arg) {
  (void)arg;
  struct timespec ts = {0, 100 * 1000 * 1000};
  nanosleep(&ts, NULL);
  fold_comm_abort(acomms[0]);
  return NULL;
}

static void *abort_rank(void *arg) {
  int r = (int)(intptr_t)arg;
  fold_kv *kv;
  CHECK_OK(fold_kv_create(acomms[r], "dist_sync", &kv), acomms[r]);
  if (kv == NULL) return NULL;
  if (r == 0) {
    pthread_t a;
    CHECK(pthread_create(&a, NULL, aborter, NULL) == 0, "thread");
    int rc = fold_kv_barrier(kv);
    CHECK(rc == FOLD_EABORTED, "a barrier on an aborted communicator's store returned %s", fold_strerror(rc));
    pthread_join(a, NULL);
    fold_kv_destroy(kv);
    atomic_store(&abort_done, 1);
  } else { /* the server: not serving until the worker's barrier ended */
    struct timespec ts = {0, 5 * 1000 * 1000};
    for (int i = 0; i < 2000 && !atomic_load(&abort_done); i++) nanosleep(&ts, NULL);
    CHECK(atomic_load(&abort_done), "the worker's barrier never returned");
    fold_kv_destroy(kv);
  }
  return NULL;
}

static void case_abort(void) {
  setenv("FOLD_KV_SERVERS", "1", 1);
  CHECK_OK(fold_comm_init_threads(2, acomms), NULL);
  pthread_t th[2];
  for (int r = 0; r < 2; r++) pthread_create(&th[r], NULL, abort_rank, (void *)(intptr_t)r);
  for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < 2; r++) fold_comm_destroy(acomms[r]);
}

int main(void) {
  setenv("FOLD_KV_SERVERS", "2", 1);
  setenv("FOLD_KV_BIGARRAY_BOUND", "1000", 1);
  setenv("FOLD_TIMEOUT", "20", 1);
  CHECK_OK(fold_comm_init_threads(N, comms), NULL);
  pthread_t th[N];
  for (int r = 0; r < N; r++) pthread_create(&th[r], NULL, rank_main, (void *)(intptr_t)r);
  for (int r = 0; r < N; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < N; r++) fold_comm_destroy(comms[r]);
  case_abort();
  return check_report("kv_threads");
}
