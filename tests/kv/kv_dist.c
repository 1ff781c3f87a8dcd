/* kv_dist.c — the distributed store as processes: dist_sync step for step against a serial reference (with an early leaver), async and ssp converging, the sgd optimizer on servers, 10,000 small keys, bad input, killed workers and servers. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fold.h"
#include "kv_util.h"

/* Usage:
 *   foldrun -n N -- kv_dist MODE     MODE: sync async ssp opt many bad mismatch order
 *   kv_dist kill_worker|kill_server TRANSPORT N   (forks N ranks itself:
 *     foldrun would stop the job when a rank dies)
 * FOLD_KV_SERVERS picks the number of servers (the last ranks). */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

#define STEPS 12
#define NINT 6
/* 40001: split, and several pieces of at most 64 KiB on every server
 * (dist_worker.c); 3001 instead in the kill modes, whose traffic it would
 * multiply: a worker then often meets the servers' exit (a broken pipe)
 * before their notice naming the dead worker (docs/kvstore.md, Not done) */
static const size_t int_counts[NINT] = {1, 5, 1500 /* split: above the bound (1000) */, 300, 3001, 40001};
static const char *const names[2] = {"layer1.weight", "layer1.bias"};
static const size_t name_counts[2] = {700, 1200};

/* A worker's gradient for key slot k, element i, step s (small integers:
 * every sum is exact in int64 and float64). */
static double grad(int w, int s, int k, size_t i) { return (double)((int)((w * 31 + s * 7 + k * 3 + (int)(i % 97)) % 11) - 5); }
static double init_val(int k, size_t i) { return (double)(k + (int)(i % 3)); }

/* The servers' updater: stored += merged (so a round adds every worker's push). */
static int updater_calls;
static int kill_at = -1;
static void add(int64_t key, const void *merged, void *stored, size_t count, fold_dtype dt, void *ctx) {
  (void)key;
  (void)ctx;
  if (++updater_calls == kill_at) raise(SIGKILL);
  for (size_t i = 0; i < count; i++) kv_set(stored, i, dt, kv_get(stored, i, dt) + kv_get(merged, i, dt));
}

typedef struct slot {
  int64_t key;
  size_t count;
  fold_dtype dt;
  void *val, *a, *b, *out;
  double *ref;
} slot;

/* prio: when the server applied each key (the store applies a big key in
 * pieces: the number of the call that applied its last piece) and how
 * many of its elements in all */
static int applied_at[64]; /* prio: NBIG + 1 keys */
static size_t applied_elems[64];
static int napplied, applied_bad;
static void record(int64_t key, const void *merged, void *stored, size_t count, fold_dtype dt, void *ctx) {
  (void)merged;
  (void)stored;
  (void)dt;
  (void)ctx;
  napplied++;
  if (key < 0 || key >= 64) {
    applied_bad = 1;
    return;
  }
  applied_at[key] = napplied;
  applied_elems[key] += count;
}

/* One worker pushes NBIG arrays of 2 MiB at priority 0 (three times the
 * outbox's 16 MiB window), then a small one at priority 10: it overtakes
 * the big ones still queued. */
#define NBIG 24
#define PRIO_BIG (512 * 1024)
static void prio_worker(fold_kv *kv, fold_comm *w) {
  enum { BIG = PRIO_BIG };
  float *big = calloc(BIG, sizeof *big), small[4] = {0};
  for (int64_t k = 0; k <= NBIG; k++)
    CHECK_OK(fold_kv_init(kv, k, k < NBIG ? (void *)big : (void *)small, k < NBIG ? BIG : 4, FOLD_FLOAT32), w);
  CHECK_OK(fold_kv_wait(kv), w);
  int64_t keys[NBIG], klast = NBIG;
  const void *v[NBIG], *sv[1] = {small};
  for (int k = 0; k < NBIG; k++) {
    keys[k] = k;
    v[k] = big;
  }
  CHECK_OK(fold_kv_push(kv, NBIG, keys, v, 0), w);
  CHECK_OK(fold_kv_push(kv, 1, &klast, sv, 10), w);
  CHECK_OK(fold_kv_destroy(kv), w);
  free(big);
}

/* dist_ssp's bound: worker 0 runs free, worker 1 sleeps 20 ms a step.
 * Worker 1 pushes 1000 a step, worker 0 pushes 1: after worker 0's pull
 * of step s the value is s + 1000 m, m worker 1's pushes applied, and
 * m >= s - FOLD_KV_STALENESS (2). The lag must also reach 2 (worker 0
 * does run ahead: it is not a synchronous store). */
static void stale_worker(fold_kv *kv, fold_comm *w) {
  int rank = fold_comm_rank(w);
  int64_t key = 0, zero = 0, v = rank == 0 ? 1 : 1000, out = 0;
  const void *vp[1] = {&v};
  void *op[1] = {&out};
  CHECK_OK(fold_kv_init(kv, key, &zero, 1, FOLD_INT64), w);
  CHECK_OK(fold_kv_barrier(kv), w);
  int maxlag = 0;
  for (int s = 1; s <= 10; s++) {
    if (rank == 1) usleep(20000);
    CHECK_OK(fold_kv_pushpull(kv, 1, &key, vp, op, 0), w);
    CHECK_OK(fold_kv_wait(kv), w);
    if (rank != 0) continue;
    int64_t m = out / 1000, mine = out % 1000;
    CHECK(mine == s, "step %d: own pushes seen %lld", s, (long long)mine);
    CHECK(m >= s - 2, "step %d: worker 1 has %lld pushes applied: more than 2 behind", s, (long long)m);
    if (s - m > maxlag) maxlag = (int)(s - m);
  }
  if (rank == 0) {
    printf("dist_ssp: worker 0 ran up to %d rounds ahead of worker 1\n", maxlag);
    CHECK(maxlag == 2, "the fast worker's lag reached %d, wanted 2", maxlag);
  }
  CHECK_OK(fold_kv_destroy(kv), w);
}

static int server(fold_kv *kv, fold_comm *w, const char *mode) {
  if (strcmp(mode, "prio") == 0) fold_kv_set_updater(kv, record, NULL);
  else if (strcmp(mode, "opt") != 0) fold_kv_set_updater(kv, add, NULL);
  int rc = fold_kv_serve(kv);
  if (strncmp(mode, "kill", 4) == 0) {
    printf("rank %d: serve: %s: %s\n", fold_comm_rank(w), fold_strerror(rc), fold_comm_last_error(w));
    CHECK(rc == FOLD_EPEER, "a server's serve did not fail with FOLD_EPEER");
    int dead[8];
    int nd = fold_kv_dead_nodes(kv, dead, 8);
    CHECK(nd >= 1, "fold_kv_dead_nodes on a server lists %d ranks", nd);
  } else {
    CHECK_OK(rc, w);
  }
  if (strcmp(mode, "prio") == 0) {
    int whole = !applied_bad; /* every key applied once, whole */
    for (int k = 0; k <= NBIG; k++) whole &= applied_elems[k] == (k < NBIG ? PRIO_BIG : 4);
    int p8 = applied_at[NBIG], p7 = applied_at[NBIG - 1]; /* the small key's place, the last big one's end */
    printf("%d updater calls; the small key applied at call %d, the last big key completed at call %d\n", napplied,
           p8, p7);
    CHECK(whole, "a key was not applied exactly once");
    CHECK(p8 > 0 && p8 < p7, "the high-priority push did not overtake the queued ones");
  }
  fold_kv_destroy(kv);
  return 0;
}

/* Workers: every mode but bad and many. */
static void train(fold_kv *kv, fold_comm *w, const char *mode, int nworkers) {
  int rank = fold_comm_rank(w);
  int sync = strcmp(mode, "sync") == 0 || strcmp(mode, "opt") == 0 || strncmp(mode, "kill", 4) == 0;
  /* dist_sync: the last worker leaves after half the steps (an early leaver) */
  int leaver = strcmp(mode, "sync") == 0 && nworkers > 1 ? nworkers - 1 : -1;
  int my_steps = rank == leaver ? STEPS / 2 : STEPS;
  slot sl[NINT + 2];
  int ns = 0;
  for (int k = 0; k < NINT + 2; k++) {
    slot *s = &sl[ns++];
    if (k < NINT) {
      s->key = k;
      s->count = k == NINT - 1 && strncmp(mode, "kill", 4) == 0 ? 3001 : int_counts[k];
      s->dt = FOLD_INT64;
    } else {
      CHECK_OK(fold_kv_key(kv, names[k - NINT], &s->key), w);
      s->count = name_counts[k - NINT];
      s->dt = FOLD_FLOAT64;
    }
    if (strcmp(mode, "opt") == 0) s->dt = FOLD_FLOAT64;
    size_t es = fold_dtype_size(s->dt);
    s->val = malloc(s->count * es);
    s->a = malloc(s->count * es);
    s->b = malloc(s->count * es);
    s->out = calloc(s->count, es);
    s->ref = malloc(s->count * sizeof(double));
    for (size_t i = 0; i < s->count; i++) {
      kv_set(s->val, i, s->dt, init_val(k, i));
      s->ref[i] = init_val(k, i);
    }
    /* a worker other than 0 sends other values: only worker 0's are stored */
    if (rank != 0) memset(s->val, 0, s->count * es);
    CHECK_OK(fold_kv_init(kv, s->key, s->val, s->count, s->dt), w);
  }
  if (strcmp(mode, "opt") == 0 && rank == 0) CHECK_OK(fold_kv_set_optimizer(kv, "sgd lr=0.5"), w);
  CHECK_OK(fold_kv_barrier(kv), w);
  int failed = 0;
  for (int step = 1; step <= my_steps && !failed; step++) {
    if (strcmp(mode, "kill_worker") == 0 && rank == 1 && step == 5) raise(SIGKILL);
    int64_t keys[2 * (NINT + 2)];
    const void *vals[2 * (NINT + 2)];
    void *outs[NINT + 2];
    int64_t pkeys[NINT + 2];
    int n = 0;
    for (int k = 0; k < ns; k++) {
      slot *s = &sl[k];
      /* two devices: a + b = this worker's gradient (+ rank % 2 on b) */
      for (size_t i = 0; i < s->count; i++) {
        double g = grad(rank, step, k, i);
        kv_set(s->a, i, s->dt, g - 1);
        kv_set(s->b, i, s->dt, 1 + rank % 2);
      }
      keys[n] = s->key;
      vals[n++] = s->a;
      keys[n] = s->key;
      vals[n++] = s->b;
      pkeys[k] = s->key;
      outs[k] = s->out;
      /* the serial reference: every worker still in at this step */
      for (size_t i = 0; i < s->count; i++) {
        double sum = 0;
        for (int v = 0; v < nworkers; v++)
          if (v != leaver || step <= STEPS / 2) sum += grad(v, step, k, i) + v % 2;
        s->ref[i] = strcmp(mode, "opt") == 0 ? s->ref[i] - 0.5 * sum : s->ref[i] + sum;
      }
    }
    double t0 = now_s();
    int rc = fold_kv_push(kv, n, keys, vals, step % 3);
    if (rc == FOLD_OK) rc = fold_kv_pull(kv, ns, pkeys, outs, 0);
    if (rc == FOLD_OK) rc = fold_kv_wait(kv);
    if (strncmp(mode, "kill", 4) == 0 && rc != FOLD_OK) {
      double dt = now_s() - t0;
      const char *msg = fold_comm_last_error(w);
      printf("rank %d: step %d: %s after %.2f s: %s\n", rank, step, fold_strerror(rc), dt, msg);
      CHECK(rc == FOLD_EPEER, "a worker did not get FOLD_EPEER");
      CHECK(dt < 5.0, "FOLD_EPEER came after %.2f s", dt);
      int victim = strcmp(mode, "kill_worker") == 0 ? 1 : fold_comm_size(w) - 1;
      char want[32];
      snprintf(want, sizeof want, "peer rank %d", victim);
      CHECK(strstr(msg, want) != NULL, "the message does not name %s", want);
      int dead[8];
      int nd = fold_kv_dead_nodes(kv, dead, 8);
      int listed = 0;
      for (int d = 0; d < nd && d < 8; d++) listed |= dead[d] == victim;
      CHECK(listed, "fold_kv_dead_nodes: %d ranks, rank %d not among them", nd, victim);
      failed = 1;
      break;
    }
    CHECK_OK(rc, w);
    if (rc != FOLD_OK) break;
    if (!sync) continue; /* async and ssp: only the end is determined */
    /* the first element that differs (one report a step) */
    for (int k = 0, bad = 0; k < ns && !bad; k++)
      for (size_t i = 0; i < sl[k].count && !bad; i++)
        if (kv_get(sl[k].out, i, sl[k].dt) != sl[k].ref[i]) {
          CHECK(0, "rank %d step %d key %lld element %zu: %g, serial reference %g", rank, step, (long long)sl[k].key, i,
                kv_get(sl[k].out, i, sl[k].dt), sl[k].ref[i]);
          bad = 1;
        }
  }
  if (strncmp(mode, "kill", 4) == 0)
    CHECK(failed, "rank %d: the kill was not noticed", rank);
  if (!sync && !failed) {
    /* every worker's pushes applied: the final value is the whole sum */
    CHECK_OK(fold_kv_barrier(kv), w);
    for (int k = 0; k < ns; k++) {
      int64_t key = sl[k].key;
      void *o[1] = {sl[k].out};
      CHECK_OK(fold_kv_pull(kv, 1, &key, o, 0), w);
    }
    CHECK_OK(fold_kv_wait(kv), w);
    for (int k = 0; k < ns; k++)
      for (size_t i = 0; i < sl[k].count; i++)
        if (kv_get(sl[k].out, i, sl[k].dt) != sl[k].ref[i]) {
          CHECK(0, "%s: rank %d key %lld element %zu: %g, wanted %g", mode, rank, (long long)sl[k].key, i,
                kv_get(sl[k].out, i, sl[k].dt), sl[k].ref[i]);
          break;
        }
  }
  int drc = fold_kv_destroy(kv);
  if (!failed) CHECK_OK(drc, w);
  for (int k = 0; k < ns; k++) {
    free(sl[k].val);
    free(sl[k].a);
    free(sl[k].b);
    free(sl[k].out);
    free(sl[k].ref);
  }
}

/* 10,000 small keys: init, push, pull, checked. */
static void many(fold_kv *kv, fold_comm *w, int nworkers) {
  enum { K = 10000, C = 4 };
  int64_t *keys = malloc(K * sizeof *keys);
  int32_t *v = malloc(K * C * sizeof *v), *o = calloc(K * C, sizeof *o);
  const void **vp = malloc(K * sizeof *vp);
  void **op = malloc(K * sizeof *op);
  for (int k = 0; k < K; k++) {
    keys[k] = k;
    for (int i = 0; i < C; i++) v[k * C + i] = k + i;
    vp[k] = v + k * C;
    op[k] = o + k * C;
    CHECK_OK(fold_kv_init(kv, k, vp[k], C, FOLD_INT32), w);
  }
  double t0 = now_s();
  CHECK_OK(fold_kv_push(kv, K, keys, vp, 0), w);
  CHECK_OK(fold_kv_pull(kv, K, keys, op, 0), w);
  CHECK_OK(fold_kv_wait(kv), w);
  double dt = now_s() - t0;
  if (fold_comm_rank(w) == 0) printf("10000 keys of 16 bytes: push+pull %.3f s (%.0f ops/s per worker)\n", dt, 2 * K / dt);
  int bad = 0;
  for (int k = 0; k < K && !bad; k++)
    for (int i = 0; i < C; i++)
      if (o[k * C + i] != (k + i) * (1 + nworkers)) { /* the updater adds the round's sum to the initial value */
        CHECK(0, "key %d element %d: %d, wanted %d", k, i, o[k * C + i], (k + i) * (1 + nworkers));
        bad = 1;
        break;
      }
  CHECK_OK(fold_kv_destroy(kv), w);
  free(keys);
  free(v);
  free(o);
  free(vp);
  free(op);
}

/* Bad input on a distributed store, and FOLD_KV_* that differ. */
static void bad(fold_comm *w) {
  int rank = fold_comm_rank(w), n = fold_comm_size(w);
  fold_kv *kv;
  /* ranks that disagree on FOLD_KV_STALENESS: FOLD_EMISMATCH on every rank */
  char st[16];
  snprintf(st, sizeof st, "%d", rank == n - 1 ? 5 : 2);
  setenv("FOLD_KV_STALENESS", st, 1);
  CHECK_RC(fold_kv_create(w, "dist_ssp", &kv), FOLD_EMISMATCH, w);
  CHECK(strstr(fold_comm_last_error(w), "FOLD_KV_STALENESS") != NULL, "the message does not name the variable: %s",
        fold_comm_last_error(w));
  unsetenv("FOLD_KV_STALENESS");
  CHECK_RC(fold_kv_create(w, rank == 0 ? "dist_sync" : "dist_async", &kv), FOLD_EMISMATCH, w);
  CHECK_OK(fold_kv_create(w, "dist_sync", &kv), w);
  int64_t k = 1, never = 99;
  int32_t v[3] = {1, 2, 3}, o[3];
  const void *vp[1] = {v};
  void *op[1] = {o};
  int role = fold_kv_role(kv);
  if (role == FOLD_KV_SERVER) {
    CHECK_RC(fold_kv_init(kv, k, v, 3, FOLD_INT32), FOLD_EINVAL, w);
    CHECK_RC(fold_kv_push(kv, 1, &k, vp, 0), FOLD_EINVAL, w);
    CHECK_RC(fold_kv_wait(kv), FOLD_EINVAL, w);
    fold_kv_set_updater(kv, add, NULL);
    CHECK_OK(fold_kv_serve(kv), w);
  } else {
    CHECK_RC(fold_kv_serve(kv), FOLD_EINVAL, w);
    CHECK_OK(fold_kv_init(kv, k, v, 3, FOLD_INT32), w);
    CHECK_RC(fold_kv_init(kv, k, v, 3, FOLD_INT32), FOLD_EINVAL, w);
    CHECK(strstr(fold_comm_last_error(w), "key 1") != NULL, "init twice: %s", fold_comm_last_error(w));
    CHECK_RC(fold_kv_push(kv, 1, &never, vp, 0), FOLD_EINVAL, w);
    CHECK(strstr(fold_comm_last_error(w), "key 99") != NULL, "push of a key never initialised: %s", fold_comm_last_error(w));
    CHECK_RC(fold_kv_pull(kv, 1, &never, op, 0), FOLD_EINVAL, w);
    int64_t named;
    CHECK_OK(fold_kv_key(kv, "conv9.bias", &named), w);
    CHECK_RC(fold_kv_pull(kv, 1, &named, op, 0), FOLD_EINVAL, w);
    CHECK(strstr(fold_comm_last_error(w), "conv9.bias") != NULL, "a string key's name: %s", fold_comm_last_error(w));
    CHECK_RC(fold_kv_init(kv, 2, NULL, 3, FOLD_INT32), FOLD_EINVAL, w);
    CHECK_RC(fold_kv_set_optimizer(kv, "sgd lr=banana"), FOLD_EINVAL, w);
    /* the store still works: one round, the updater adds every worker's push to worker 0's value */
    CHECK_OK(fold_kv_pushpull(kv, 1, &k, vp, op, 0), w);
    CHECK_OK(fold_kv_wait(kv), w);
    int nw = n - 1;
    CHECK(o[0] == 1 + nw && o[2] == 3 + 3 * nw, "after the rejected calls: %d %d", o[0], o[2]);
    CHECK_OK(fold_kv_destroy(kv), w);
  }
  if (role == FOLD_KV_SERVER) fold_kv_destroy(kv);
}

/* Workers that initialise a key differently: the server sees it and every
 * rank fails with FOLD_EMISMATCH naming the key; and a local store made
 * over a communicator works on every rank alone. */
static void mismatch(fold_comm *w) {
  int rank = fold_comm_rank(w);
  fold_kv *kv;
  CHECK_OK(fold_kv_create(w, "local", &kv), w);
  int64_t k = 4, v[2] = {rank, 1}, o[2] = {0};
  const void *vp[2] = {v, v};
  void *op[1] = {o};
  int64_t kk[2] = {k, k};
  CHECK_OK(fold_kv_init(kv, k, v, 2, FOLD_INT64), w);
  CHECK_OK(fold_kv_push(kv, 2, kk, vp, 0), w);
  CHECK_OK(fold_kv_pull(kv, 1, &k, op, 0), w);
  CHECK(o[0] == 2 * rank && o[1] == 2, "a local store over a communicator: %lld %lld", (long long)o[0], (long long)o[1]);
  CHECK(fold_kv_dead_nodes(kv, NULL, 0) == 0, "a local store has no dead nodes");
  CHECK_OK(fold_kv_destroy(kv), w);
  CHECK_OK(fold_kv_create(w, "dist_sync", &kv), w);
  int rc;
  if (fold_kv_role(kv) == FOLD_KV_SERVER) {
    rc = fold_kv_serve(kv);
  } else {
    int64_t name;
    CHECK_OK(fold_kv_key(kv, "head.weight", &name), w);
    CHECK_OK(fold_kv_init(kv, name, v, rank == 1 ? 1 : 2, FOLD_INT64), w);
    rc = fold_kv_barrier(kv);
  }
  const char *msg = fold_comm_last_error(w);
  printf("rank %d: %s: %s\n", rank, fold_strerror(rc), msg);
  CHECK(rc == FOLD_EMISMATCH, "rank %d: workers that disagree on a key's count: %s", rank, fold_strerror(rc));
  CHECK(strstr(msg, "head.weight") != NULL, "rank %d: the message does not name the key", rank);
  fold_kv_destroy(kv);
}

/* Workers that initialise two keys in different orders (and so place them
 * on different servers) and push before any barrier: every rank fails with
 * FOLD_EMISMATCH naming both workers and both keys, long before
 * FOLD_TIMEOUT (20 s), instead of waiting for an INIT that never comes. */
static void order(fold_comm *w) {
  int rank = fold_comm_rank(w);
  fold_kv *kv;
  double t0 = now_s();
  /* a rank still inside fold_kv_create when a server finds the mismatch
   * (the workers went ahead) fails there, with the same error */
  int rc = fold_kv_create(w, "dist_sync", &kv);
  if (rc != FOLD_OK) {
    CHECK(rc == FOLD_EMISMATCH, "rank %d: fold_kv_create: %s", rank, fold_strerror(rc));
  } else if (fold_kv_role(kv) == FOLD_KV_SERVER) {
    fold_kv_set_updater(kv, add, NULL);
    rc = fold_kv_serve(kv);
  } else {
    int64_t keys[2];
    CHECK_OK(fold_kv_key(kv, names[0], &keys[0]), w);
    CHECK_OK(fold_kv_key(kv, names[1], &keys[1]), w);
    double *v[2] = {calloc(name_counts[0], sizeof(double)), calloc(name_counts[1], sizeof(double))};
    /* the mismatch may be found (and reach this rank) before its last init */
    for (int i = 0; i < 2 && rc == FOLD_OK; i++) {
      int k = rank == 1 ? 1 - i : i; /* worker 1: the other order */
      rc = fold_kv_init(kv, keys[k], v[k], name_counts[k], FOLD_FLOAT64);
    }
    const void *vp[2] = {v[0], v[1]};
    void *op[2] = {v[0], v[1]};
    if (rc == FOLD_OK) rc = fold_kv_pushpull(kv, 2, keys, vp, op, 0);
    if (rc == FOLD_OK) rc = fold_kv_wait(kv);
    free(v[0]);
    free(v[1]);
  }
  double dt = now_s() - t0;
  const char *msg = fold_comm_last_error(w);
  printf("rank %d: %s after %.2f s: %s\n", rank, fold_strerror(rc), dt, msg);
  CHECK(rc == FOLD_EMISMATCH, "rank %d: workers that initialise keys in different orders: %s", rank, fold_strerror(rc));
  CHECK(dt < 10.0, "rank %d: the mismatch took %.2f s", rank, dt);
  CHECK(strstr(msg, names[0]) && strstr(msg, names[1]), "rank %d: the message does not name both keys", rank);
  CHECK(strstr(msg, "worker 0") && strstr(msg, "worker 1"), "rank %d: the message does not name both workers", rank);
  fold_kv_destroy(kv);
}

/* A live worker that does not push (it sleeps past FOLD_TIMEOUT = 2 s):
 * worker 0's wait times out naming it, not the server it waits on. */
static void silent(fold_comm *w) {
  int rank = fold_comm_rank(w);
  fold_kv *kv;
  CHECK_OK(fold_kv_create(w, "dist_sync", &kv), w);
  if (fold_kv_role(kv) == FOLD_KV_SERVER) {
    fold_kv_serve(kv); /* fails once the workers go: any status */
    fold_kv_destroy(kv);
    return;
  }
  int64_t key, v[3] = {1, 2, 3}, o[3];
  const void *vp[1] = {v};
  void *op[1] = {o};
  CHECK_OK(fold_kv_key(kv, "slow.layer", &key), w);
  CHECK_OK(fold_kv_init(kv, key, v, 3, FOLD_INT64), w);
  if (rank == 1) {
    sleep(4);
  } else {
    CHECK_OK(fold_kv_pushpull(kv, 1, &key, vp, op, 0), w);
    int rc = fold_kv_wait(kv);
    const char *msg = fold_comm_last_error(w);
    printf("rank 0: %s: %s\n", fold_strerror(rc), msg);
    CHECK(rc == FOLD_ETIMEDOUT, "the wait did not time out");
    CHECK(strstr(msg, "worker rank 1") != NULL && strstr(msg, "slow.layer") != NULL,
          "the timeout does not name the silent worker and the key");
  }
  fold_kv_destroy(kv);
}

static int run(fold_comm *w, const char *mode) {
  if (strcmp(mode, "silent") == 0) {
    silent(w);
    return 0;
  }
  if (strcmp(mode, "bad") == 0) {
    bad(w);
    return 0;
  }
  if (strcmp(mode, "mismatch") == 0) {
    mismatch(w);
    return 0;
  }
  if (strcmp(mode, "order") == 0) {
    order(w);
    return 0;
  }
  const char *type = strcmp(mode, "async") == 0 || strcmp(mode, "prio") == 0 ? "dist_async"
                     : strcmp(mode, "ssp") == 0 || strcmp(mode, "stale") == 0 ? "dist_ssp"
                                                                              : "dist_sync";
  fold_kv *kv;
  int rc = fold_kv_create(w, type, &kv);
  CHECK_OK(rc, w);
  if (rc != FOLD_OK) return 1;
  int nworkers = fold_comm_size(w) - atoi(getenv("FOLD_KV_SERVERS") ? getenv("FOLD_KV_SERVERS") : "1");
  if (fold_kv_role(kv) == FOLD_KV_SERVER) {
    if (strcmp(mode, "kill_server") == 0 && fold_comm_rank(w) == fold_comm_size(w) - 1) kill_at = 30;
    return server(kv, w, mode);
  }
  if (strcmp(mode, "many") == 0)
    many(kv, w, nworkers);
  else if (strcmp(mode, "prio") == 0)
    prio_worker(kv, w);
  else if (strcmp(mode, "stale") == 0)
    stale_worker(kv, w);
  else
    train(kv, w, mode, nworkers);
  return 0;
}

/* The kill modes: fork n ranks meeting at a file store. */
static int forked(const char *mode, const char *transport, int n) {
  setenv("FOLD_TRANSPORT", transport, 1);
  setenv("FOLD_TIMEOUT", "20", 1);
  char dir[] = "/tmp/fold-kvkill-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char store[128];
  snprintf(store, sizeof store, "file://%s", dir);
  pid_t pids[16];
  for (int r = 0; r < n; r++) {
    fflush(stdout);
    if ((pids[r] = fork()) == 0) {
      fold_comm *w;
      if (fold_comm_init(&w, r, n, store)) {
        fprintf(stderr, "rank %d: init: %s\n", r, fold_comm_last_error(NULL));
        _exit(10);
      }
      run(w, mode);
      fold_comm_destroy(w);
      fflush(stdout);
      _exit(atomic_load(&check_failures) ? 1 : 0);
    }
  }
  int victim = strcmp(mode, "kill_worker") == 0 ? 1 : n - 1, failures = 0;
  for (int r = 0; r < n; r++) {
    int st;
    waitpid(pids[r], &st, 0);
    if (r == victim) {
      if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)) {
        printf("the victim did not die by SIGKILL (status %d)\n", st);
        failures++;
      }
    } else if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
      printf("rank %d failed (status %d)\n", r, st);
      failures++;
    }
  }
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) failures++;
  printf("kv_dist %s %s: %s\n", mode, transport, failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  setenv("FOLD_KV_BIGARRAY_BOUND", "1000", 1);
  if (strncmp(argv[1], "kill", 4) == 0) return argc < 4 ? 2 : forked(argv[1], argv[2], atoi(argv[3]));
  fold_comm *w;
  if (fold_init(&w) != FOLD_OK) {
    fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
    return 2;
  }
  run(w, argv[1]);
  fold_comm_destroy(w);
  char name[64];
  snprintf(name, sizeof name, "kv_dist %s", argv[1]);
  return check_report(name);
}
