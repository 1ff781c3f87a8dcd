/* tcp_harness.c — ranks as threads connected by the tcp transport alone, for the tcp tests. */
#include "comm/comm.h"
#include "tcp/tcp_harness.h"

#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "engine/engine.h"

double tcp_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int tcp_world_prepare(tcp_world *w, int n, const char *store_host) {
  memset(w, 0, sizeof *w);
  w->n = n;
  fold__auth_key_derive(&w->key, "tcp-test-token", NULL);
  for (int r = 0; r < n; r++) {
    int rc = fold__comm_alloc(r, n, &w->c[r]);
    if (rc)
      return rc;
    rc = fold__tcp_prepare(w->c[r], store_host, &w->card[r], &w->state[r]);
    if (rc)
      return rc;
  }
  return 0;
}

typedef struct {
  tcp_world *w;
  int rank;
} conn_arg;

static void *connect_main(void *p) {
  conn_arg *a = p;
  tcp_world *w = a->w;
  int r = a->rank, n = w->n;
  fold_comm *c = w->c[r];
  uint8_t use[TCP_H_MAX];
  for (int q = 0; q < n; q++)
    use[q] = q != r;
  fold__tp *tp = NULL;
  if (w->delay_ms[r])
    usleep((useconds_t)w->delay_ms[r] * 1000);
  void *st = w->state[r];
  w->state[r] = NULL; /* connect frees it, also on failure */
  w->rc[r] = fold__tcp_connect(c, st, w->card, use, &w->key, w->deadline_ns, &tp);
  if (w->rc[r] == 0) {
    fold__comm_add_tp(c, tp);
    for (int q = 0; q < n; q++)
      if (q != r)
        c->peer_tp[q] = tp;
  }
  return NULL;
}

int tcp_world_connect(tcp_world *w, double timeout_s) {
  pthread_t th[TCP_H_MAX];
  conn_arg a[TCP_H_MAX];
  int started[TCP_H_MAX] = {0};
  w->deadline_ns = fold__clock_mono(NULL) + (int64_t)(timeout_s * 1e9);
  for (int r = 0; r < w->n; r++) {
    if (w->connect_mask && !(w->connect_mask & (1 << r)))
      continue;
    a[r] = (conn_arg){w, r};
    started[r] = pthread_create(&th[r], NULL, connect_main, &a[r]) == 0;
    if (!started[r])
      w->rc[r] = FOLD_ESYS;
  }
  int failed = 0;
  for (int r = 0; r < w->n; r++) {
    if (started[r])
      pthread_join(th[r], NULL);
    if (w->rc[r])
      failed++;
  }
  return failed;
}

int tcp_world_create(tcp_world *w, int n, const char *store_host) {
  int rc = tcp_world_prepare(w, n, store_host);
  if (rc)
    return rc;
  return tcp_world_connect(w, 20.0) ? FOLD_ETIMEDOUT : 0;
}

typedef struct {
  tcp_world *w;
  int rank;
  tcp_rank_fn fn;
  void *arg;
} run_arg;

static void *run_main(void *p) {
  run_arg *a = p;
  a->fn(a->w->c[a->rank], a->rank, a->arg);
  return NULL;
}

void tcp_world_run(tcp_world *w, tcp_rank_fn fn, void *arg) {
  pthread_t th[TCP_H_MAX];
  run_arg a[TCP_H_MAX];
  for (int r = 0; r < w->n; r++) {
    a[r] = (run_arg){w, r, fn, arg};
    pthread_create(&th[r], NULL, run_main, &a[r]);
  }
  for (int r = 0; r < w->n; r++)
    pthread_join(th[r], NULL);
}

void tcp_world_destroy(tcp_world *w) {
  for (int r = 0; r < w->n; r++) {
    if (w->state[r])
      fold__tcp_abandon(w->state[r]);
    w->state[r] = NULL;
    if (w->c[r])
      fold_comm_destroy(w->c[r]);
    w->c[r] = NULL;
  }
}
