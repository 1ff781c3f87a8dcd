/* sum_unit.c — fold__kv_sum against an independent serial sum: every summable dtype, 1..8 sources, counts around the big-array bound, 1/2/4 threads. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fold.h"
#include "kv/sum.h"
#include "op/op.h"

#define BOUND (3 * FOLD__KV_SUM_BLOCK + 5)
#define MAXSRC 8

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
/* Uniform in [-1, 1). */
static double unit_rand(void) { return (double)(next_rand() >> 11) / 4503599627370496.0 - 1.0; }

static void fill(fold_dtype dt, void *buf, size_t n) {
  for (size_t i = 0; i < n; i++) {
    switch (dt) {
    case FOLD_FLOAT32: ((float *)buf)[i] = (float)(unit_rand() * 1000.0); break;
    case FOLD_FLOAT64: ((double *)buf)[i] = unit_rand() * 1000.0; break;
    case FOLD_FLOAT16: ((uint16_t *)buf)[i] = fold__f32_to_f16((float)(unit_rand() * 100.0)); break;
    case FOLD_BFLOAT16: ((uint16_t *)buf)[i] = fold__f32_to_bf16((float)(unit_rand() * 100.0)); break;
    default: {
      /* integers: every bit random, so sums wrap */
      uint64_t r = next_rand();
      memcpy((char *)buf + i * fold_dtype_size(dt), &r, fold_dtype_size(dt));
    }
    }
  }
}

/* The serial reference: element by element, sources left to right, written
 * without fold's kernels (integers wrap in the unsigned type; halves are
 * rounded after each addition, the rule sum.h states). */
static void reference(fold_dtype dt, void *out, void *const *s, int nsrc, size_t n) {
  for (size_t i = 0; i < n; i++) {
    switch (dt) {
#define INT_CASE(D, U)                                                                                  \
  case D: {                                                                                             \
    U acc = ((const U *)s[0])[i];                                                                       \
    for (int k = 1; k < nsrc; k++) acc = (U)(acc + ((const U *)s[k])[i]);                              \
    ((U *)out)[i] = acc;                                                                                \
    break;                                                                                              \
  }
      INT_CASE(FOLD_INT8, uint8_t)
      INT_CASE(FOLD_UINT8, uint8_t)
      INT_CASE(FOLD_INT32, uint32_t)
      INT_CASE(FOLD_UINT32, uint32_t)
      INT_CASE(FOLD_INT64, uint64_t)
      INT_CASE(FOLD_UINT64, uint64_t)
#undef INT_CASE
    case FOLD_FLOAT32: {
      float acc = ((const float *)s[0])[i];
      for (int k = 1; k < nsrc; k++) acc += ((const float *)s[k])[i];
      ((float *)out)[i] = acc;
      break;
    }
    case FOLD_FLOAT64: {
      double acc = ((const double *)s[0])[i];
      for (int k = 1; k < nsrc; k++) acc += ((const double *)s[k])[i];
      ((double *)out)[i] = acc;
      break;
    }
    case FOLD_FLOAT16:
    case FOLD_BFLOAT16: {
      int bf = dt == FOLD_BFLOAT16;
      uint16_t acc = ((const uint16_t *)s[0])[i];
      for (int k = 1; k < nsrc; k++) {
        uint16_t b = ((const uint16_t *)s[k])[i];
        float f = bf ? fold__bf16_to_f32(acc) + fold__bf16_to_f32(b) : fold__f16_to_f32(acc) + fold__f16_to_f32(b);
        acc = bf ? fold__f32_to_bf16(f) : fold__f32_to_f16(f);
      }
      ((uint16_t *)out)[i] = acc;
      break;
    }
    default: break;
    }
  }
}

static const fold_dtype summable[] = {FOLD_INT8,    FOLD_UINT8,    FOLD_INT32,   FOLD_UINT32, FOLD_INT64,
                                      FOLD_UINT64,  FOLD_FLOAT16,  FOLD_BFLOAT16, FOLD_FLOAT32, FOLD_FLOAT64};

static void matrix(fold__kv_pool *const *pools, int npools) {
  static const size_t counts[] = {0, 1, 7, FOLD__KV_SUM_BLOCK - 1, FOLD__KV_SUM_BLOCK, FOLD__KV_SUM_BLOCK + 1,
                                  BOUND - 1, BOUND, BOUND + 1, 5 * FOLD__KV_SUM_BLOCK + 3};
  size_t maxn = 5 * FOLD__KV_SUM_BLOCK + 3;
  void *src[MAXSRC];
  for (int k = 0; k < MAXSRC; k++) src[k] = malloc(maxn * 8);
  unsigned char *want = malloc(maxn * 8), *got = malloc(maxn * 8 + 8), *first = malloc(maxn * 8);
  for (size_t d = 0; d < sizeof summable / sizeof *summable; d++) {
    fold_dtype dt = summable[d];
    size_t es = fold_dtype_size(dt);
    for (int nsrc = 1; nsrc <= MAXSRC; nsrc++) {
      for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
        size_t n = counts[c];
        for (int k = 0; k < nsrc; k++) fill(dt, src[k], n);
        reference(dt, want, src, nsrc, n);
        memcpy(first, src[0], n * es);
        for (int p = 0; p < npools; p++) {
          /* into a separate buffer */
          memset(got, 0xA5, n * es + 8);
          CHECK_OK(fold__kv_sum(pools[p], got, (const void *const *)src, nsrc, n, dt, BOUND), NULL);
          CHECK(memcmp(got, want, n * es) == 0, "%s nsrc %d count %zu threads %d: differs from the serial sum",
                fold_dtype_name(dt), nsrc, n, fold__kv_pool_threads(pools[p]));
          CHECK(got[n * es] == 0xA5, "%s nsrc %d count %zu: wrote past the end", fold_dtype_name(dt), nsrc, n);
          /* in place: dst aliases srcs[0] */
          memcpy(src[0], first, n * es);
          CHECK_OK(fold__kv_sum(pools[p], src[0], (const void *const *)src, nsrc, n, dt, BOUND), NULL);
          CHECK(memcmp(src[0], want, n * es) == 0, "%s nsrc %d count %zu threads %d in place: differs",
                fold_dtype_name(dt), nsrc, n, fold__kv_pool_threads(pools[p]));
          memcpy(src[0], first, n * es);
        }
      }
    }
  }
  for (int k = 0; k < MAXSRC; k++) free(src[k]);
  free(want);
  free(got);
  free(first);
}

/* A large sum on a pool of several threads really hands blocks to helpers
 * (the caller may race through small ones alone: retry a few times). */
static void spread(fold__kv_pool *p) {
  size_t n = 64 * FOLD__KV_SUM_BLOCK;
  float *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b), *o = malloc(n * sizeof *o);
  const void *s[2] = {a, b};
  size_t before = fold__kv_pool_helper_blocks(p);
  for (int t = 0; t < 200 && fold__kv_pool_helper_blocks(p) == before; t++)
    CHECK_OK(fold__kv_sum(p, o, s, 2, n, FOLD_FLOAT32, 0), NULL);
  CHECK(fold__kv_pool_helper_blocks(p) > before, "%d threads: helpers never summed a block",
        fold__kv_pool_threads(p));
  /* at or below the bound, the caller sums alone */
  before = fold__kv_pool_helper_blocks(p);
  for (int t = 0; t < 20; t++) CHECK_OK(fold__kv_sum(p, o, s, 2, n, FOLD_FLOAT32, n), NULL);
  CHECK(fold__kv_pool_helper_blocks(p) == before, "%d threads: helpers summed below the bound",
        fold__kv_pool_threads(p));
  free(a);
  free(b);
  free(o);
}

/* Two threads summing on one pool at once: serialised, both right. */
typedef struct {
  fold__kv_pool *p;
  int32_t base;
  int bad;
} conc_arg;

static void *conc_main(void *arg) {
  conc_arg *c = arg;
  size_t n = 40 * FOLD__KV_SUM_BLOCK + 9;
  int32_t *v[4], *o = malloc(n * sizeof *o);
  for (int k = 0; k < 4; k++) {
    v[k] = malloc(n * sizeof *v[k]);
    for (size_t i = 0; i < n; i++) v[k][i] = c->base + k * (int32_t)i;
  }
  for (int r = 0; r < 30; r++) {
    if (fold__kv_sum(c->p, o, (const void *const *)v, 4, n, FOLD_INT32, 1000) != 0) c->bad++;
    for (size_t i = 0; i < n; i++)
      if (o[i] != 4 * c->base + 6 * (int32_t)i) {
        c->bad++;
        break;
      }
  }
  for (int k = 0; k < 4; k++) free(v[k]);
  free(o);
  return NULL;
}

static void concurrent(fold__kv_pool *p) {
  conc_arg a[2] = {{p, 1, 0}, {p, -7, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, conc_main, &a[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  CHECK(a[0].bad == 0 && a[1].bad == 0, "concurrent sums on one pool: %d and %d wrong", a[0].bad, a[1].bad);
}

static void expect_einval(int rc, const char *want_in_msg) {
  CHECK(rc == FOLD_EINVAL, "wanted FOLD_EINVAL, got %d", rc);
  const char *m = fold_comm_last_error(NULL);
  CHECK(m && strstr(m, want_in_msg), "message \"%s\" does not say \"%s\"", m ? m : "(null)", want_in_msg);
}

static void bad_input(fold__kv_pool *p) {
  int32_t a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, o[4] = {0, 0, 0, 0};
  const void *s[2] = {a, b};
  const void *sn[2] = {a, NULL};
  expect_einval(fold__kv_sum(p, o, s, 2, 2, FOLD_FLOAT32_INT32, 0), "float32_int32");
  expect_einval(fold__kv_sum(p, o, s, 2, 2, FOLD_INT64_INT64, 0), "cannot sum");
  fold_dtype rec;
  CHECK_OK(fold_dtype_create(12, &rec), NULL);
  expect_einval(fold__kv_sum(p, o, s, 2, 1, rec, 0), "cannot sum");
  expect_einval(fold__kv_sum(p, o, s, 0, 4, FOLD_INT32, 0), "want at least one");
  expect_einval(fold__kv_sum(p, o, NULL, 2, 4, FOLD_INT32, 0), "want at least one");
  expect_einval(fold__kv_sum(p, o, sn, 2, 4, FOLD_INT32, 0), "value 1 of 2");
  expect_einval(fold__kv_sum(p, NULL, s, 2, 4, FOLD_INT32, 0), "NULL buffer");
  expect_einval(fold__kv_sum(p, o, s, 2, SIZE_MAX / 2, FOLD_INT32, 0), "overflows");
  CHECK(o[0] == 0 && o[3] == 0, "a rejected sum wrote its output");
  CHECK(fold__kv_pool_create(0) == NULL, "a pool of 0 threads was made");
  expect_einval(FOLD_EINVAL, "FOLD_KV_REDUCE_THREADS=0");
  /* count 0 with NULL buffers is a no-op */
  CHECK_OK(fold__kv_sum(p, NULL, s, 2, 0, FOLD_INT32, 0), NULL);
}

int main(void) {
  fold__kv_pool *pools[3] = {fold__kv_pool_create(1), fold__kv_pool_create(2), fold__kv_pool_create(4)};
  CHECK(pools[0] && pools[1] && pools[2], "pool creation failed: %s", fold_comm_last_error(NULL));
  if (!(pools[0] && pools[1] && pools[2])) return 1;
  fold__kv_pool *all[4] = {NULL, pools[0], pools[1], pools[2]};
  matrix(all, 4);
  spread(pools[1]);
  spread(pools[2]);
  concurrent(pools[2]);
  bad_input(pools[2]);
  for (int i = 0; i < 3; i++) fold__kv_pool_destroy(pools[i]);
  fold__kv_pool_destroy(NULL);
  return check_report("kvparts_sum");
}
