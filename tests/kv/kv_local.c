/* kv_local.c — the local store: devices 1..8, duplicate keys, counts around the big-array bound, every summable dtype, updater, optimizer, bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fold.h"
#include "kv/kv.h"
#include "kv_util.h"
#include "../../bench/kv_resnet50.h"


#define BOUND 1000 /* FOLD_KV_BIGARRAY_BOUND for this test: small, so big arrays are cheap */

/* Value of device d's element i in step s: small integers, exact in every
 * dtype (bfloat16 holds integers to 256) and in every sum of up to 8. */
static double val(int d, size_t i, int s) { return (double)((int)((i * 7 + (size_t)d * 3 + (size_t)s) % 9)) - (d % 2 ? 0 : 4); }

/* Push n devices' values of one key (the same key n times: summed first),
 * then pull into n outputs: every output equals the serial sum. */
static void sum_case(fold_kv *kv, int64_t key, size_t count, fold_dtype dt, int ndev) {
  size_t es = fold_dtype_size(dt);
  void *vals[8], *outs[8];
  const void *cvals[8];
  int64_t keys[8];
  for (int d = 0; d < ndev; d++) {
    vals[d] = malloc(count * es);
    outs[d] = calloc(count, es);
    cvals[d] = vals[d];
    keys[d] = key;
    for (size_t i = 0; i < count; i++) kv_set(vals[d], i, dt, val(d, i, 0));
  }
  void *init = calloc(count, es);
  CHECK_OK(fold_kv_init(kv, key, init, count, dt), NULL);
  CHECK_OK(fold_kv_push(kv, ndev, keys, cvals, 0), NULL);
  CHECK_OK(fold_kv_pull(kv, ndev, keys, outs, 0), NULL);
  CHECK_OK(fold_kv_wait(kv), NULL);
  int bad = 0;
  for (int d = 0; d < ndev && !bad; d++)
    for (size_t i = 0; i < count && !bad; i++) {
      /* the serial reference, left to right, in the dtype (wrapping for integers) */
      void *ref = calloc(1, 8);
      double sum = val(0, i, 0);
      kv_set(ref, 0, dt, sum);
      for (int e = 1; e < ndev; e++) {
        sum += val(e, i, 0); /* integers: exact in a double, wrapped when stored */
        kv_set(ref, 0, dt, kv_is_int(dt) ? sum : kv_get(ref, 0, dt) + kv_get(vals[e], i, dt));
      }
      if (memcmp((char *)outs[d] + i * es, ref, es) != 0) {
        bad = 1;
        CHECK(0, "dtype %s, count %zu, %d devices: output %d element %zu is %g, serial sum %g", fold_dtype_name(dt),
              count, ndev, d, i, kv_get(outs[d], i, dt), kv_get(ref, 0, dt));
      }
      free(ref);
    }
  for (int d = 0; d < ndev; d++) {
    free(vals[d]);
    free(outs[d]);
  }
  free(init);
}

/* weight -= 0.5 * grad (an updater), checked against the same rule run serially. */
static void halfstep(int64_t key, const void *merged, void *stored, size_t count, fold_dtype dtype, void *ctx) {
  (void)key;
  (*(int *)ctx)++;
  for (size_t i = 0; i < count; i++) kv_set(stored, i, dtype, kv_get(stored, i, dtype) - 0.5 * kv_get(merged, i, dtype));
}

static void updater_case(void) {
  fold_kv *kv;
  CHECK_OK(fold_kv_create(NULL, "local", &kv), NULL);
  int calls = 0;
  CHECK_OK(fold_kv_set_updater(kv, halfstep, &calls), NULL);
  enum { N = 3000 };
  double w[N], ref[N], g0[N], g1[N];
  for (int i = 0; i < N; i++) w[i] = ref[i] = i * 0.25;
  CHECK_OK(fold_kv_init(kv, 5, w, N, FOLD_FLOAT64), NULL);
  for (int s = 0; s < 4; s++) {
    for (int i = 0; i < N; i++) {
      g0[i] = val(0, (size_t)i, s);
      g1[i] = val(1, (size_t)i, s) * 0.5;
      ref[i] -= 0.5 * (g0[i] + g1[i]);
    }
    int64_t keys[2] = {5, 5};
    const void *v[2] = {g0, g1};
    CHECK_OK(fold_kv_push(kv, 2, keys, v, 0), NULL);
  }
  void *out[1] = {w};
  int64_t k5 = 5;
  CHECK_OK(fold_kv_pull(kv, 1, &k5, out, 0), NULL);
  CHECK_OK(fold_kv_wait(kv), NULL);
  CHECK(calls == 4, "the updater ran %d times, wanted 4 (once per push call)", calls);
  for (int i = 0; i < N; i++)
    if (w[i] != ref[i]) {
      CHECK(0, "updater: element %d is %g, serial reference %g", i, w[i], ref[i]);
      break;
    }
  CHECK_OK(fold_kv_destroy(kv), NULL);
}

/* The built-in sgd against its rule, serially: w -= lr * (g + wd * w)
 * with momentum 0 (the optimizer's own tests cover momentum and Adam). */
static void optimizer_case(void) {
  fold_kv *kv;
  CHECK_OK(fold_kv_create(NULL, "local", &kv), NULL);
  CHECK_OK(fold_kv_set_optimizer(kv, "sgd lr=0.25"), NULL);
  enum { N = 100 };
  float w[N], ref[N], g[N];
  for (int i = 0; i < N; i++) w[i] = ref[i] = (float)i;
  CHECK_OK(fold_kv_init(kv, 9, w, N, FOLD_FLOAT32), NULL);
  for (int s = 0; s < 3; s++) {
    for (int i = 0; i < N; i++) {
      g[i] = (float)val(2, (size_t)i, s);
      ref[i] -= 0.25f * (g[i] + g[i]);
    }
    int64_t keys[2] = {9, 9};
    const void *v[2] = {g, g};
    CHECK_OK(fold_kv_push(kv, 2, keys, v, 0), NULL);
  }
  int64_t k = 9;
  void *out[1] = {w};
  CHECK_OK(fold_kv_pull(kv, 1, &k, out, 0), NULL);
  for (int i = 0; i < N; i++)
    if (fabsf(w[i] - ref[i]) > 1e-5f * (1 + fabsf(ref[i]))) {
      CHECK(0, "sgd: element %d is %g, serial reference %g", i, w[i], ref[i]);
      break;
    }
  CHECK_OK(fold_kv_destroy(kv), NULL);
}

/* Each built-in optimizer through the store (two devices, three keys
 * interleaved, 5 steps) equals the same optimizer run by hand on the
 * serial sum of the devices' gradients: state per key kept alike. */
static void optimizer_specs(void) {
  static const char *const specs[] = {"sgd lr=0.1 momentum=0.9 wd=0.0001", "adam lr=0.01"};
  for (int sp = 0; sp < 2; sp++)
    for (int dt = FOLD_FLOAT32; dt <= FOLD_FLOAT64; dt++) {
      fold_kv *kv;
      CHECK_OK(fold_kv_create(NULL, "local", &kv), NULL);
      CHECK_OK(fold_kv_set_optimizer(kv, specs[sp]), NULL);
      fold__kv_optim *ref = NULL;
      char why[128];
      CHECK_OK(fold__kv_optim_parse(specs[sp], &ref, why, sizeof why), NULL);
      enum { NK = 3, C = 257 };
      size_t es = fold_dtype_size((fold_dtype)dt);
      char *w[NK], *rw[NK], *g0 = malloc(C * es), *g1 = malloc(C * es), *gs = malloc(C * es), *out = malloc(C * es);
      for (int k = 0; k < NK; k++) {
        w[k] = malloc(C * es);
        rw[k] = malloc(C * es);
        for (size_t i = 0; i < C; i++) kv_set(w[k], i, (fold_dtype)dt, 0.5 * k - 0.01 * (double)i);
        memcpy(rw[k], w[k], C * es);
        CHECK_OK(fold_kv_init(kv, 100 + k, w[k], C, (fold_dtype)dt), NULL);
      }
      for (int s = 0; s < 5; s++)
        for (int k = 0; k < NK; k++) {
          for (size_t i = 0; i < C; i++) {
            kv_set(g0, i, (fold_dtype)dt, 0.25 * val(0, i, s + k));
            kv_set(g1, i, (fold_dtype)dt, 0.125 * val(1, i, s));
            kv_set(gs, i, (fold_dtype)dt, kv_get(g0, i, (fold_dtype)dt) + kv_get(g1, i, (fold_dtype)dt));
          }
          int64_t keys[2] = {100 + k, 100 + k};
          const void *v[2] = {g0, g1};
          CHECK_OK(fold_kv_push(kv, 2, keys, v, 0), NULL);
          CHECK_OK(fold__kv_optim_apply(ref, 100 + k, gs, rw[k], C, (fold_dtype)dt), NULL);
        }
      for (int k = 0; k < NK; k++) {
        int64_t key = 100 + k;
        void *o[1] = {out};
        CHECK_OK(fold_kv_pull(kv, 1, &key, o, 0), NULL);
        CHECK(memcmp(out, rw[k], C * es) == 0, "%s on %s: key %d differs from the optimizer run by hand", specs[sp],
              fold_dtype_name((fold_dtype)dt), 100 + k);
        free(w[k]);
        free(rw[k]);
      }
      fold__kv_optim_free(ref);
      free(g0);
      free(g1);
      free(gs);
      free(out);
      CHECK_OK(fold_kv_destroy(kv), NULL);
    }
}

#define CHECK_EINVAL_NAMING(expr, text)                                                                          \
  do {                                                                                                           \
    CHECK_RC(expr, FOLD_EINVAL, NULL);                                                                           \
    CHECK(strstr(fold_comm_last_error(NULL), text) != NULL, "%s: the message '%s' does not name '%s'", #expr,    \
          fold_comm_last_error(NULL), text);                                                                     \
  } while (0)

/* An updater that calls into its own store: every call is refused with
 * FOLD_EINVAL saying so (a push from inside would sum into the buffer the
 * updater reads), nothing changes; the outer push completes. */
typedef struct reenter {
  fold_kv *kv;
  int calls, refused, told;
} reenter;
static void reentering(int64_t key, const void *merged, void *stored, size_t count, fold_dtype dtype, void *ctx) {
  reenter *r = ctx;
  double one = 1, out = 0;
  const void *vp[1] = {&one};
  void *op[1] = {&out};
  int rcs[5] = {fold_kv_push(r->kv, 1, &key, vp, 0), fold_kv_pull(r->kv, 1, &key, op, 0), fold_kv_wait(r->kv),
                fold_kv_set_updater(r->kv, NULL, NULL), fold_kv_destroy(r->kv)};
  for (int i = 0; i < 5; i++) r->refused += rcs[i] == FOLD_EINVAL;
  r->told += strstr(fold_comm_last_error(NULL), "may not call into its own store") != NULL;
  r->calls++;
  for (size_t i = 0; i < count; i++) kv_set(stored, i, dtype, kv_get(stored, i, dtype) + kv_get(merged, i, dtype));
}

static void reentry_case(void) {
  fold_kv *kv;
  CHECK_OK(fold_kv_create(NULL, "local", &kv), NULL);
  reenter r = {kv, 0, 0, 0};
  CHECK_OK(fold_kv_set_updater(kv, reentering, &r), NULL);
  int64_t key = 7;
  double v = 2, g = 3, out = 0;
  const void *vp[1] = {&g};
  void *op[1] = {&out};
  CHECK_OK(fold_kv_init(kv, key, &v, 1, FOLD_FLOAT64), NULL);
  CHECK_OK(fold_kv_push(kv, 1, &key, vp, 0), NULL);
  CHECK_OK(fold_kv_pull(kv, 1, &key, op, 0), NULL);
  CHECK(r.calls == 1 && r.refused == 5 && r.told == 1, "an updater calling into its own store: %d calls, %d of 5 refused, "
        "told %d: %s", r.calls, r.refused, r.told, fold_comm_last_error(NULL));
  CHECK(out == 5, "after a push of 3 onto 2 through a re-entering updater: %g", out);
  CHECK_OK(fold_kv_destroy(kv), NULL);
}

static void bad_input(void) {
  fold_kv *kv = (fold_kv *)1;
  CHECK_EINVAL_NAMING(fold_kv_create(NULL, "dist_fancy", &kv), "dist_fancy");
  CHECK(kv == NULL, "a failed create leaves *kv NULL");
  CHECK_RC(fold_kv_create(NULL, NULL, &kv), FOLD_EINVAL, NULL);
  CHECK_RC(fold_kv_create(NULL, "local", NULL), FOLD_EINVAL, NULL);
  CHECK_EINVAL_NAMING(fold_kv_create(NULL, "dist_sync", &kv), "communicator");
  CHECK_OK(fold_kv_create(NULL, "local", &kv), NULL);
  CHECK(fold_kv_role(kv) == FOLD_KV_WORKER, "a local store's role is FOLD_KV_WORKER");
  int32_t v[4] = {1, 2, 3, 4}, o[4] = {0};
  const void *vp[1] = {v};
  void *op[1] = {o};
  int64_t k = 3, knever = 77, kname;
  CHECK_OK(fold_kv_init(kv, k, v, 4, FOLD_INT32), NULL);
  CHECK_EINVAL_NAMING(fold_kv_init(kv, k, v, 4, FOLD_INT32), "key 3");
  CHECK_EINVAL_NAMING(fold_kv_init(kv, 4, NULL, 4, FOLD_INT32), "key 4");
  CHECK_EINVAL_NAMING(fold_kv_init(kv, 4, v, 0, FOLD_INT32), "key 4");
  CHECK_EINVAL_NAMING(fold_kv_init(kv, 4, v, 1, FOLD_INT32_INT32), "key 4");
  CHECK_EINVAL_NAMING(fold_kv_push(kv, 1, &knever, vp, 0), "key 77");
  CHECK_EINVAL_NAMING(fold_kv_pull(kv, 1, &knever, op, 0), "key 77");
  CHECK_OK(fold_kv_key(kv, "fc1.weight", &kname), NULL);
  CHECK(kname < 0, "string keys are negative (got %lld)", (long long)kname);
  int64_t again;
  CHECK_OK(fold_kv_key(kv, "fc1.weight", &again), NULL);
  CHECK(again == kname, "the same name gives the same key");
  CHECK_EINVAL_NAMING(fold_kv_push(kv, 1, &kname, vp, 0), "fc1.weight");
  CHECK_EINVAL_NAMING(fold_kv_pull(kv, 1, &kname, op, 0), "fc1.weight");
  CHECK_OK(fold_kv_init(kv, kname, v, 4, FOLD_INT32), NULL);
  CHECK_EINVAL_NAMING(fold_kv_init(kv, kname, v, 4, FOLD_INT32), "fc1.weight");
  const void *nullv[1] = {NULL};
  CHECK_EINVAL_NAMING(fold_kv_push(kv, 1, &kname, nullv, 0), "fc1.weight");
  CHECK_RC(fold_kv_key(kv, "", &again), FOLD_EINVAL, NULL);
  CHECK_RC(fold_kv_key(kv, NULL, &again), FOLD_EINVAL, NULL);
  CHECK_RC(fold_kv_push(kv, -1, &k, vp, 0), FOLD_EINVAL, NULL);
  CHECK_RC(fold_kv_push(kv, 1, NULL, vp, 0), FOLD_EINVAL, NULL);
  CHECK_RC(fold_kv_pull(kv, 1, &k, NULL, 0), FOLD_EINVAL, NULL);
  CHECK_OK(fold_kv_push(kv, 0, NULL, NULL, 0), NULL);
  CHECK_EINVAL_NAMING(fold_kv_set_optimizer(kv, "rmsprop lr=1"), "rmsprop");
  CHECK_RC(fold_kv_set_optimizer(kv, NULL), FOLD_EINVAL, NULL);
  CHECK_RC(fold_kv_serve(kv), FOLD_EINVAL, NULL);
  CHECK(fold_kv_dead_nodes(kv, NULL, 0) == 0, "a local store has no dead nodes");
  /* a call with one bad key changes nothing: the good key before it is not pushed */
  int64_t mixed[2] = {k, knever};
  const void *mv[2] = {o, o};
  CHECK_RC(fold_kv_push(kv, 2, mixed, mv, 0), FOLD_EINVAL, NULL);
  CHECK_OK(fold_kv_pull(kv, 1, &k, op, 0), NULL);
  CHECK(o[0] == 1 && o[3] == 4, "a rejected push changed the stored value: %d %d", o[0], o[3]);
  CHECK_OK(fold_kv_destroy(kv), NULL);
  CHECK_OK(fold_kv_destroy(NULL), NULL);
  CHECK_RC(fold_kv_role(NULL), FOLD_EINVAL, NULL);
  CHECK_RC(fold_kv_wait(NULL), FOLD_EINVAL, NULL);
}

int main(void) {
  setenv("FOLD_KV_BIGARRAY_BOUND", "1000", 1);
  setenv("FOLD_KV_REDUCE_THREADS", "2", 1);
  fold_kv *kv;
  CHECK_OK(fold_kv_create(NULL, "local", &kv), NULL);
  int64_t key = 0;
  static const size_t counts[] = {1, 7, BOUND - 1, BOUND, BOUND + 1, 4 * 4096 + 3};
  for (int dt = FOLD_INT8; dt <= FOLD_FLOAT64; dt++)
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
      for (int ndev = 1; ndev <= 8; ndev += (c == 2 || c == 4 ? 1 : 3)) sum_case(kv, key++, counts[c], (fold_dtype)dt, ndev);
  CHECK(fold__kv_pool_helper_blocks(kv->pool) > 0, "sums above the big-array bound were not spread over the pool's threads");
  CHECK_OK(fold_kv_destroy(kv), NULL);
  updater_case();
  optimizer_case();
  optimizer_specs();
  bad_input();
  reentry_case();
  /* placement: greedy by bytes, big arrays split */
  fold__kv_place p;
  CHECK_OK(fold__kv_place_init(&p, 3, 100), NULL);
  CHECK(fold__kv_place_key(&p, 50, 4) == 0 && fold__kv_place_key(&p, 10, 4) == 1 && fold__kv_place_key(&p, 10, 4) == 2 &&
            fold__kv_place_key(&p, 10, 4) == 1 && fold__kv_place_key(&p, 101, 4) == -1,
        "greedy placement order");
  size_t off, len;
  fold__kv_shard(101, 3, 2, &off, &len);
  CHECK(off == 68 && len == 33, "shard 2 of 101 over 3: %zu+%zu", off, len);
  fold__kv_place_free(&p);
  /* ResNet-50's 161 arrays (float32) in model order, MXNet's default bound:
   * the greedy placement's imbalance (largest server's bytes / mean) against
   * MXNet's placement by key hash (key % servers, the big arrays split too) */
  for (int ns = 2; ns <= 4; ns++) {
    fold__kv_place g;
    CHECK_OK(fold__kv_place_init(&g, ns, 1000000), NULL);
    uint64_t hash[4] = {0};
    for (int i = 0; i < FOLD_RESNET50_ARRAYS; i++) {
      fold__kv_place_key(&g, fold_resnet50[i].count, 4);
      if (fold_resnet50[i].count > 1000000)
        for (int s = 0; s < ns; s++) hash[s] += fold_resnet50[i].count * 4 / (size_t)ns;
      else
        hash[i % ns] += fold_resnet50[i].count * 4;
    }
    uint64_t hmax = 0, hsum = 0;
    for (int s = 0; s < ns; s++) {
      hsum += hash[s];
      if (hash[s] > hmax) hmax = hash[s];
    }
    double gi = fold__kv_place_imbalance(&g), hi = (double)hmax / ((double)hsum / ns);
    printf("ResNet-50 over %d servers: greedy imbalance %.4f, key %% servers %.4f\n", ns, gi, hi);
    CHECK(gi < 1.05, "greedy placement of ResNet-50 over %d servers: imbalance %.4f", ns, gi);
    CHECK(gi <= hi, "greedy placement worse than hashing");
    fold__kv_place_free(&g);
  }
  return check_report("kv_local");
}
