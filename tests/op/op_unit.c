/* op_unit.c — reduction kernels against scalar references; float16/bfloat16 conversions against the compiler's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coll/coll_ref.h"
#include "comm/comm.h"
#include "op/op.h"

/* Kernels: out = a op b over lengths that hit vector bodies and tails, for
 * every valid pair, compared with the serial reference of coll_ref.c (two
 * "ranks": a is rank 0, b is rank 1), with out aliasing a, b or neither. */
static void kernels(fold_comm *c) {
  fold_dtype dts[128];
  int ops[128];
  int np = ref_pairs(dts, ops, 128);
  fold_op affine;
  CHECK_OK(fold_op_create(&affine, ref_affine_fn, NULL, 0, c), c);
  const size_t lens[] = {0, 1, 3, 7, 8, 31, 33, 257, 1000};
  for (int p = 0; p < np; p++)
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
      for (int alias = 0; alias < 3; alias++) {
        size_t n = lens[li], es = fold_dtype_size(dts[p]);
        int op = ops[p];
        fold_op fop = op == REF_OP_AFFINE ? affine : (fold_op)op;
        uint8_t *a = malloc(n * es + 1), *b = malloc(n * es + 1), *o = malloc(n * es + 1), *w = malloc(n * es + 1);
        ref_fill(a, n, dts[p], op, 0, 42);
        ref_fill(b, n, dts[p], op, 1, 42);
        /* the AVG division belongs to fold__op_finish; compare sums here */
        ref_reduce(w, 0, n, dts[p], op == FOLD_AVG ? FOLD_SUM : op, 2, 42);
        if (op == FOLD_AVG) ref_fill(a, n, dts[p], FOLD_SUM, 0, 42), ref_fill(b, n, dts[p], FOLD_SUM, 1, 42);
        void *out = alias == 0 ? (void *)o : alias == 1 ? (void *)a : (void *)b;
        fold__op_reduce3(fold__op_table_of(c), fop, dts[p], out, a, b, n);
        CHECK(n == 0 || memcmp(out, w, n * es) == 0, "kernel %s op %d len %zu alias %d", fold_dtype_name(dts[p]), op, n, alias);
        free(a), free(b), free(o), free(w);
      }
}

/* Built-in ops need no communicator: capabilities reduce outside a
 * collective with c == NULL. Every built-in pair, against the same reference. */
static void kernels_without_comm(void) {
  fold_dtype dts[128];
  int ops[128];
  int np = ref_pairs(dts, ops, 128), checked = 0;
  for (int p = 0; p < np; p++) {
    if (ops[p] == REF_OP_AFFINE) continue;
    size_t n = 33, es = fold_dtype_size(dts[p]);
    uint8_t *a = malloc(n * es), *b = malloc(n * es), *w = malloc(n * es);
    int op = ops[p] == FOLD_AVG ? FOLD_SUM : ops[p];
    ref_fill(a, n, dts[p], op, 0, 7);
    ref_fill(b, n, dts[p], op, 1, 7);
    ref_reduce(w, 0, n, dts[p], op, 2, 7);
    fold__op_reduce3(NULL, (fold_op)op, dts[p], a, a, b, n);
    CHECK(memcmp(a, w, n * es) == 0, "kernel without comm: %s op %d", fold_dtype_name(dts[p]), op);
    checked++;
    free(a), free(b), free(w);
  }
  CHECK(checked > 20, "only %d built-in pairs checked", checked);
}

/* AVG: the division by the rank count, truncating integers toward zero. */
static void avg_finish(void) {
  int32_t v[4] = {-7, 7, 9, -9};
  fold__op_finish(FOLD_AVG, FOLD_INT32, v, 4, 2);
  CHECK(v[0] == -3 && v[1] == 3 && v[2] == 4 && v[3] == -4, "int avg %d %d %d %d", v[0], v[1], v[2], v[3]);
  double d[2] = {1.0, -3.0};
  fold__op_finish(FOLD_AVG, FOLD_FLOAT64, d, 2, 4);
  CHECK(d[0] == 0.25 && d[1] == -0.75, "double avg");
  int32_t s[1] = {10};
  fold__op_finish(FOLD_SUM, FOLD_INT32, s, 1, 4);
  CHECK(s[0] == 10, "finish leaves non-avg alone");
}

/* float16 against GCC's _Float16 (IEEE binary16, round to nearest even). */
static void half_conversions(void) {
#if defined(__FLT16_MAX__)
  for (uint32_t h = 0; h < 65536; h++) {
    _Float16 x;
    uint16_t hh = (uint16_t)h;
    memcpy(&x, &hh, 2);
    float want = (float)x, got = fold__f16_to_f32(hh);
    CHECK((isnan(want) && isnan(got)) || memcmp(&want, &got, 4) == 0, "f16->f32 of 0x%04x", h);
  }
  uint64_t st = 1;
  for (int i = 0; i < 2000000; i++) {
    st = st * 6364136223846793005ULL + 1442695040888963407ULL;
    uint32_t u = (uint32_t)(st >> 32);
    if (i % 3 == 0) u = (u & 0x807fffffu) | ((uint32_t)(100 + (u >> 7) % 50) << 23); /* near the half range */
    float f;
    memcpy(&f, &u, 4);
    _Float16 w = (_Float16)f;
    uint16_t want, got = fold__f32_to_f16(f);
    memcpy(&want, &w, 2);
    CHECK(want == got || (isnan(f) && (got & 0x7c00) == 0x7c00 && (got & 0x3ff)), "f32->f16 of %a: 0x%04x vs 0x%04x", f,
          got, want);
    if (atomic_load(&check_failures) > 10) return;
  }
#else
  CHECK(fold__f16_to_f32(fold__f32_to_f16(1.5f)) == 1.5f, "f16 round trip");
#endif
}

/* bfloat16: the upper 16 bits of float32, rounded to nearest even. */
static void bf16_conversions(void) {
  CHECK(fold__f32_to_bf16(1.0f) == 0x3f80, "bf16 1.0");
  CHECK(fold__bf16_to_f32(0xc040) == -3.0f, "bf16 -3");
  /* 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even -> 1.0 */
  CHECK(fold__f32_to_bf16(1.0f + ldexpf(1, -8)) == 0x3f80, "bf16 tie to even down");
  /* 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6: up to even */
  CHECK(fold__f32_to_bf16(1.0f + 3 * ldexpf(1, -8)) == 0x3f82, "bf16 tie to even up");
  CHECK(fold__f32_to_bf16(1.0f + 3 * ldexpf(1, -9)) == 0x3f81, "bf16 above half rounds up");
  CHECK(isnan(fold__bf16_to_f32(fold__f32_to_bf16(NAN))), "bf16 NaN stays NaN");
  CHECK(fold__bf16_to_f32(fold__f32_to_bf16(INFINITY)) == INFINITY, "bf16 inf");
  for (uint32_t h = 0; h < 65536; h++) {
    float f = fold__bf16_to_f32((uint16_t)h);
    if (!isnan(f)) CHECK(fold__f32_to_bf16(f) == h, "bf16 round trip 0x%04x", h);
  }
}

static void validation(fold_comm *c) {
  CHECK_RC(fold__op_check(c, fold__op_table_of(c), "t", FOLD_BXOR, FOLD_FLOAT32), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "bitwise") != NULL, "message: %s", fold_comm_last_error(c));
  CHECK_RC(fold__op_check(c, fold__op_table_of(c), "t", FOLD_BAND, FOLD_BFLOAT16), FOLD_EINVAL, c);
  CHECK_OK(fold__op_check(c, fold__op_table_of(c), "t", FOLD_BOR, FOLD_UINT8), c);
  CHECK_RC(fold__op_check(c, fold__op_table_of(c), "t", (fold_op)-1, FOLD_INT32), FOLD_EINVAL, c);
  CHECK_RC(fold__op_check(c, fold__op_table_of(c), "t", (fold_op)(FOLD_OP_BUILTIN_COUNT + 50), FOLD_INT32), FOLD_EINVAL, c);
  CHECK_RC(fold__op_check(c, fold__op_table_of(c), "t", FOLD_SUM, (fold_dtype)42), FOLD_EINVAL, c);
  fold_op u;
  CHECK_RC(fold_op_create(NULL, ref_affine_fn, NULL, 0, c), FOLD_EINVAL, c);
  CHECK_RC(fold_op_create(&u, NULL, NULL, 0, c), FOLD_EINVAL, c);
  CHECK_RC(fold_op_create(&u, ref_affine_fn, NULL, 0, NULL), FOLD_EINVAL, NULL);
  CHECK_OK(fold_op_create(&u, ref_affine_fn, NULL, 1, c), c);
  CHECK(fold__op_commutative(fold__op_table_of(c), u) == 1 && fold__op_commutative(fold__op_table_of(c), FOLD_MAX) == 1, "commutative flags");
}

int main(void) {
  fold_comm *c;
  CHECK_OK(fold_comm_init_threads(1, &c), NULL);
  kernels(c);
  kernels_without_comm();
  avg_finish();
  half_conversions();
  bf16_conversions();
  validation(c);
  fold_comm_destroy(c);
  return check_report("op_unit");
}
