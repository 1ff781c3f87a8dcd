/* exact.c — FOLD_SUM_EXACT: exact sums whatever the order, algorithm or rank count; checked against math.fsum. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fold.h"
#include "fold_areduce.h"
#include "op/op.h"

/* Usage: exact              unit checks, then the collectives on 2, 3 and 5 thread ranks;
 *        exact procs [shm]  under foldrun: the collectives on its processes (shm: the shm algorithms too).
 * Rank 0 prints every element's inputs and result (%a) for exact_fsum.py. */

#define COUNT 42 /* elements per call; element i uses adversarial kind i % NKIND */
#define NKIND 7
#define NMAX 5

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15u;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

/* A random finite double of any binade below 2^(maxe) (sums of a few stay finite). */
static double any_double(uint64_t h, int f32) {
  int bits = f32 ? 24 : 53, emin = f32 ? -149 : -1074, emax = f32 ? 124 : 1020;
  double m = ldexp((double)(h >> (64 - bits)), -bits); /* [0, 1) */
  int e = emin + bits + (int)((h >> 8) % (uint64_t)(emax - emin - bits));
  double v = ldexp(m, e);
  return (h & 1) ? -v : v;
}

/* Input of rank r of n, element i: by kind, huge cancellation, the whole
 * exponent range, subnormals, near-1 noise, ties to even, signed zeros,
 * and a sum cancelling to a subnormal. */
static double gen(int f32, int n, int r, int i, int salt) {
  uint64_t h = mix((uint64_t)(f32 * 1000003 + n * 7919 + r * 104729 + i * 13 + salt * 1299709));
  double big = f32 ? 0x1p100 : 0x1p1000, sub = f32 ? 0x1p-149 : 0x1p-1074, eps = f32 ? 0x1p-24 : 0x1p-53;
  double v;
  switch (i % NKIND) {
  case 0: /* cancellation: +big, -big, then small terms of random size */
    v = r == 0 ? big * 1.5 : r == 1 ? -big * 1.5 : any_double(h, f32) * eps;
    break;
  case 1: v = any_double(h, f32); break;
  case 2: v = (double)(int64_t)(h % 2000001 - 1000000) * sub; break; /* subnormals (and a few small normals) */
  case 3: v = 1.0 + (double)(int64_t)(h % 2001 - 1000) * eps * 8; break;
  case 4: v = r == 0 ? 1.0 : r == 1 ? eps : r == 2 && (i / NKIND) % 2 ? sub : 0.0; break; /* a tie, broken or not */
  case 5: v = (i / NKIND) % 2 ? -0.0 : (r % 2 ? -0.0 : 0.0); break;
  default: v = r == 0 ? 1.0 + 2 * eps : r == 1 ? -1.0 : r == 2 ? -2 * eps : sub * (double)(r + 1); break;
  }
  if (f32) v = (double)(float)v; /* every value is a float32: exactly so */
  return v;
}

static void fill(int f32, int n, int r, int salt, void *buf, size_t count) {
  for (size_t i = 0; i < count; i++) {
    double v = gen(f32, n, r, (int)i, salt);
    if (f32)
      ((float *)buf)[i] = (float)v;
    else
      ((double *)buf)[i] = v;
  }
}

/* ---- unit: the accumulators alone ---------------------------------------------------------- */

static void unit(void) {
  /* a single term rounds back to itself, bit for bit */
  for (int f32 = 0; f32 < 2; f32++) {
    fold_dtype dt = f32 ? FOLD_FLOAT32 : FOLD_FLOAT64;
    size_t as = fold__exact_acc_size(dt);
    unsigned char *acc = malloc(as * 4);
    for (int k = 0; k < 20000; k++) {
      uint64_t h = mix((uint64_t)k + 77);
      unsigned char x[8], y[8];
      memcpy(x, &h, 8);
      if (f32 && ((h >> 23) & 0xff) == 0xff) continue;
      if (!f32 && ((h >> 52) & 0x7ff) == 0x7ff) continue;
      fold__exact_load(dt, acc, x, 1);
      fold__exact_round(dt, y, acc, 1);
      CHECK(memcmp(x, y, f32 ? 4 : 8) == 0, "%s: term %016llx does not round back to itself", f32 ? "f32" : "f64",
            (unsigned long long)h);
    }
    /* order independence: 64 terms summed in two shuffled orders give the same accumulator bytes */
    double t[64];
    for (int j = 0; j < 64; j++) t[j] = gen(0, 64, j, 1, 5);
    unsigned char *one = malloc(as), *sumA = calloc(1, as), *sumB = calloc(1, as);
    float tf[64];
    for (int j = 0; j < 64; j++) tf[j] = (float)gen(1, 64, j, 1, 5);
    double zero = -0.0; /* a -0 term is the additive identity */
    float zerof = -0.0f;
    fold__exact_load(dt, sumA, f32 ? (void *)&zerof : (void *)&zero, 1);
    memcpy(sumB, sumA, as);
    for (int j = 0; j < 64; j++) {
      fold__exact_load(dt, one, f32 ? (void *)&tf[j] : (void *)&t[j], 1);
      fold__exact_add(dt, sumA, sumA, one, 1);
      int q = (j * 37 + 11) % 64;
      fold__exact_load(dt, one, f32 ? (void *)&tf[q] : (void *)&t[q], 1);
      fold__exact_add(dt, sumB, one, sumB, 1);
    }
    CHECK(memcmp(sumA, sumB, as) == 0, "%s: two orders of the same 64 terms differ", f32 ? "f32" : "f64");
    free(one);
    free(sumA);
    free(sumB);
    free(acc);
  }
  /* infinities and NaN: IEEE's rules for the sum as a whole */
  struct {
    double a, b, c, want;
  } sp[] = {
    {INFINITY, 1.0, -1e308, INFINITY}, {-INFINITY, 1e308, 1e308, -INFINITY}, {INFINITY, -INFINITY, 0.0, NAN},
    {NAN, 1.0, 2.0, NAN}, {NAN, INFINITY, 2.0, NAN}, {1e308, 1e308, 0.0, INFINITY}, /* overflow rounds to inf */
    {-1e308, -1e308, 0.0, -INFINITY}, {0x1.fffffffffffffp1023, 0x1p970, -0x1p970, 0x1.fffffffffffffp1023},
    {-0.0, -0.0, -0.0, -0.0}, {-0.0, 0.0, -0.0, 0.0}, {1.5, -1.5, -0.0, 0.0},
  };
  for (size_t k = 0; k < sizeof sp / sizeof *sp; k++) {
    for (int f32 = 0; f32 < 2; f32++) {
      fold_dtype dt = f32 ? FOLD_FLOAT32 : FOLD_FLOAT64;
      size_t as = fold__exact_acc_size(dt);
      unsigned char *a = malloc(3 * as);
      double in[3] = {sp[k].a, sp[k].b, sp[k].c}, got;
      float inf32[3], g32;
      for (int j = 0; j < 3; j++) inf32[j] = fabs(in[j]) == 1e308 ? copysignf(3e38f, (float)in[j]) : (float)in[j];
      if (f32 && k == 7) { /* the largest float32 plus a cancelling pair */
        inf32[0] = 0x1.fffffep127f, inf32[1] = 0x1p100f, inf32[2] = -0x1p100f;
      }
      fold__exact_load(dt, a, f32 ? (void *)inf32 : (void *)in, 3);
      fold__exact_add(dt, a, a, a + as, 1);
      fold__exact_add(dt, a, a + 2 * as, a, 1);
      if (f32) {
        fold__exact_round(dt, &g32, a, 1);
        got = g32;
      } else {
        fold__exact_round(dt, &got, a, 1);
      }
      double want = f32 && k == 7 ? (double)0x1.fffffep127f : sp[k].want;
      int ok = isnan(want) ? isnan(got) : got == want && signbit(got) == signbit(want);
      CHECK(ok, "%s special case %zu: got %a, want %a", f32 ? "f32" : "f64", k, got, want);
      free(a);
    }
  }
}

/* ---- the collectives on thread ranks ------------------------------------------------------ */

static fold_comm *comms[NMAX];
static int nranks;

static int with_shm; /* procs on the shm transport: the shm algorithms join the lists (last entries) */
static const char *const allreduce_algos[] = {"allreduce=reduce_bcast", "allreduce=recursive_doubling",
                                              "allreduce=rabenseifner", "allreduce=ring",
                                              "allreduce=ring_segmented", "allreduce=direct", "allreduce=ring_skip",
                                              "allreduce=shm"};
static const char *const reduce_algos[] = {"reduce=binomial", "reduce=rabenseifner", "reduce=shm"};
static const char *const rs_algos[] = {"reduce_scatter=recursive_halving", "reduce_scatter=ring",
                                       "reduce_scatter=pairwise", "reduce_scatter=ring_skip",
                                       "reduce_scatter=shm"};

/* gold: rank 0's allreduce result under the first algorithm; every other call must match it */
static void compare(int r, int f32, const unsigned char *gold, const char *what, const void *got, size_t off,
                    size_t count) {
  size_t es = f32 ? 4 : 8;
  CHECK(memcmp(got, gold + off * es, count * es) == 0, "n=%d rank %d %s %s: differs from allreduce's result",
        nranks, r, f32 ? "f32" : "f64", what);
}

static void *rank_main(void *arg) {
  int r = (int)(intptr_t)arg;
  fold_comm *c = comms[r];
  for (int f32 = 0; f32 < 2; f32++) {
    fold_dtype dt = f32 ? FOLD_FLOAT32 : FOLD_FLOAT64;
    size_t es = f32 ? 4 : 8;
    unsigned char in[NMAX * COUNT * 8], keep[NMAX * COUNT * 8], out[NMAX * COUNT * 8], gold[COUNT * 8];
    fill(f32, nranks, r, 0, in, COUNT);
    memcpy(keep, in, COUNT * es);
    for (size_t a = 0; a < sizeof allreduce_algos / sizeof *allreduce_algos - !with_shm; a++) {
      CHECK_OK(fold_comm_set_algo(c, allreduce_algos[a]), c);
      int in_place = a % 2;
      if (in_place) memcpy(out, in, COUNT * es);
      CHECK_OK(fold_allreduce(in_place ? out : in, out, COUNT, dt, FOLD_SUM_EXACT, c), c);
      CHECK(memcmp(in, keep, COUNT * es) == 0, "rank %d: allreduce changed sendbuf", r);
      if (a == 0) {
        memcpy(gold, out, COUNT * es);
        CHECK_OK(fold_broadcast(gold, COUNT * es, FOLD_UINT8, 0, c), c);
      }
      compare(r, f32, gold, allreduce_algos[a], out, 0, COUNT);
    }
    CHECK_OK(fold_comm_set_algo(c, "allreduce=auto"), c);
    fold_request *req;
    memset(out, 0, COUNT * es);
    CHECK_OK(fold_iallreduce(in, out, COUNT, dt, FOLD_SUM_EXACT, c, &req), c);
    CHECK_OK(fold_wait(req), c);
    compare(r, f32, gold, "iallreduce", out, 0, COUNT);
    for (size_t a = 0; a < sizeof reduce_algos / sizeof *reduce_algos - !with_shm; a++) {
      int root = (int)a % nranks;
      CHECK_OK(fold_comm_set_algo(c, reduce_algos[a]), c);
      memset(out, 0, COUNT * es);
      CHECK_OK(fold_reduce(in, r == root ? out : NULL, COUNT, dt, FOLD_SUM_EXACT, root, c), c);
      if (r == root) compare(r, f32, gold, reduce_algos[a], out, 0, COUNT);
    }
    CHECK_OK(fold_comm_set_algo(c, "reduce=auto"), c);
    /* reduce_scatter of the allreduce input's first nranks * m elements:
     * rank q's result is the allreduce result's elements [q*m, q*m + m) */
    size_t m = COUNT / (size_t)nranks;
    for (size_t a = 0; a < sizeof rs_algos / sizeof *rs_algos - !with_shm; a++) {
      CHECK_OK(fold_comm_set_algo(c, rs_algos[a]), c);
      memset(out, 0, m * es);
      CHECK_OK(fold_reduce_scatter(in, out, m, dt, FOLD_SUM_EXACT, c), c);
      compare(r, f32, gold, rs_algos[a], out, (size_t)r * m, m);
    }
    CHECK_OK(fold_comm_set_algo(c, "reduce_scatter=auto"), c);
    if (r == 0) { /* the inputs and the result, for exact_fsum.py */
      for (int i = 0; i < COUNT; i++) {
        printf("%s", f32 ? "f32" : "f64");
        for (int q = 0; q < nranks; q++) printf(" %a", gen(f32, nranks, q, i, 0));
        double g;
        if (f32) {
          float gf;
          memcpy(&gf, gold + (size_t)i * 4, 4);
          g = gf;
        } else {
          memcpy(&g, gold + (size_t)i * 8, 8);
        }
        printf(" = %a\n", g);
      }
    }
    CHECK_OK(fold_barrier(c), c);
    /* fold_areduce: NFRAG fragments per rank, combined in arrival order, at
     * degrees 1 and 3 (and partial mode): the same bits each time, printed
     * with all n * NFRAG terms for the fsum check */
    enum { NFRAG = 3 };
    static const int degs[] = {1, 3, 2};
    for (int k = 0; k < 3; k++) {
      fold_areduce *ar;
      fold_areduce_mode mode = k == 2 ? FOLD_AREDUCE_PARTIAL : FOLD_AREDUCE_FULL;
      CHECK_OK(fold_areduce_create(c, COUNT, dt, FOLD_SUM_EXACT, 0, degs[k], mode, 1e-4, &ar), c);
      for (int f = 0; f < NFRAG; f++) {
        fill(f32, nranks, r, 1 + f, in, COUNT);
        CHECK_OK(fold_areduce_contribute(ar, in), c);
      }
      CHECK_OK(fold_areduce_done(ar), c);
      uint64_t nf = 0;
      CHECK_OK(fold_areduce_wait(ar, r == 0 ? out : NULL, &nf), c);
      CHECK_OK(fold_areduce_destroy(ar), c);
      if (r != 0) continue;
      CHECK(nf == (uint64_t)nranks * NFRAG, "n=%d: areduce degree %d: %llu fragments", nranks, degs[k],
            (unsigned long long)nf);
      if (k == 0) memcpy(gold, out, COUNT * es);
      CHECK(memcmp(gold, out, COUNT * es) == 0, "n=%d %s: areduce degree %d differs from degree 1", nranks,
            f32 ? "f32" : "f64", degs[k]);
    }
    if (r == 0) {
      for (int i = 0; i < COUNT; i++) {
        printf("%s", f32 ? "f32" : "f64");
        for (int q = 0; q < nranks; q++)
          for (int f = 0; f < NFRAG; f++) printf(" %a", gen(f32, nranks, q, i, 1 + f));
        double g;
        if (f32) {
          float gf;
          memcpy(&gf, gold + (size_t)i * 4, 4);
          g = gf;
        } else {
          memcpy(&g, gold + (size_t)i * 8, 8);
        }
        printf(" = %a\n", g);
      }
    }
    CHECK_OK(fold_barrier(c), c);
  }
  /* bad input: refused with FOLD_EINVAL, never a wrong answer */
  int32_t iv[4] = {1, 2, 3, 4}, io[4];
  CHECK_RC(fold_allreduce(iv, io, 4, FOLD_INT32, FOLD_SUM_EXACT, c), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "sum_exact") != NULL, "rank %d: message does not name sum_exact: %s", r,
        fold_comm_last_error(c));
  CHECK_RC(fold_allreduce(iv, io, 2, FOLD_FLOAT16, FOLD_SUM_EXACT, c), FOLD_EINVAL, c);
  fold_areduce *ar = NULL;
  CHECK_RC(fold_areduce_create(c, 4, FOLD_INT32, FOLD_SUM_EXACT, 0, 2, FOLD_AREDUCE_FULL, 0.0, &ar), FOLD_EINVAL, c);
  CHECK_OK(fold_barrier(c), c); /* the communicator still works */
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "procs") == 0) {
    fold_comm *c;
    if (fold_init(&c) != FOLD_OK) {
      fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
      return 1;
    }
    with_shm = argc > 2 && strcmp(argv[2], "shm") == 0;
    nranks = fold_comm_size(c);
    int r = fold_comm_rank(c);
    CHECK(nranks <= NMAX, "at most %d ranks", NMAX);
    if (nranks <= NMAX) {
      comms[r] = c;
      rank_main((void *)(intptr_t)r);
    }
    fold_comm_destroy(c);
    fflush(stdout);
    return check_report("op_exact procs");
  }
  unit();
  static const int sizes[] = {2, 3, 5};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    nranks = sizes[s];
    CHECK_OK(fold_comm_init_threads(nranks, comms), NULL);
    pthread_t th[NMAX];
    for (int r = 0; r < nranks; r++) pthread_create(&th[r], NULL, rank_main, (void *)(intptr_t)r);
    for (int r = 0; r < nranks; r++) pthread_join(th[r], NULL);
    for (int r = 0; r < nranks; r++) fold_comm_destroy(comms[r]);
  }
  fflush(stdout);
  return check_report("op_exact");
}
