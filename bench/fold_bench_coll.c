/* fold_bench_coll.c — fold-bench's per-collective knowledge: sizes, buffer layouts, exact inputs and the local reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "fold_bench.h"

const fb_coll_info fb_colls[FB_NCOLL] = {
  [FB_ALLREDUCE] = {"allreduce", 1, 0, 1,
                    {"reduce_bcast", "recursive_doubling", "rabenseifner", "ring", "ring_segmented", "direct", "shm", "ring_skip",
                     "hier"}},
  [FB_BROADCAST] = {"broadcast", 0, 1, 0, {"binomial", "scatter_allgather", "pipeline", "shm", "hier"}},
  [FB_REDUCE] = {"reduce", 1, 1, 1, {"binomial", "rabenseifner", "shm", "hier"}},
  [FB_REDUCE_SCATTER] = {"reduce_scatter", 1, 0, 1, {"recursive_halving", "ring", "pairwise", "shm", "ring_skip", "hier"}},
  [FB_ALLGATHER] = {"allgather", 0, 0, 1, {"recursive_doubling", "bruck", "ring", "shm", "hier"}},
  [FB_GATHER] = {"gather", 0, 1, 1, {"binomial", "linear", "shm"}},
  [FB_SCATTER] = {"scatter", 0, 1, 1, {"binomial", "linear", "shm"}},
  /* alltoall has no in-place form; broadcast has one buffer only, so its
   * single form is timed once, in the out-of-place columns. */
  [FB_ALLTOALL] = {"alltoall", 0, 0, 0, {"pairwise", "bruck", "shm"}},
  [FB_BARRIER] = {"barrier", 0, 0, 0, {"dissemination", "shm", "hier"}},
};

/* ---- sizes -------------------------------------------------------------- */

/* nccl-tests convention: allreduce/broadcast/reduce count the buffer;
 * allgather/gather the gathered (receive) total; reduce_scatter and scatter
 * the full (send) buffer; alltoall one rank's whole buffer. The per-rank
 * block is then size/n, rounded down to whole elements. */
int fb_shape(fb_call *k, size_t size) {
  size_t es = fold_dtype_size(k->dtype), n = (size_t)k->n;
  switch (k->coll) {
  case FB_ALLREDUCE:
  case FB_BROADCAST:
  case FB_REDUCE:
    k->count = size / es;
    k->bytes = k->count * es;
    break;
  case FB_BARRIER:
    k->count = 0;
    k->bytes = 0;
    return 1;
  default: /* block per rank */
    k->count = size / n / es;
    k->bytes = k->count * n * es;
    break;
  }
  return k->count > 0;
}

double fb_bus_factor(fb_coll coll, int n) {
  switch (coll) {
  case FB_ALLREDUCE:
    return 2.0 * (n - 1) / n;
  case FB_BROADCAST:
  case FB_REDUCE:
    return 1.0;
  case FB_BARRIER:
    return 0.0;
  default:
    return (double)(n - 1) / n;
  }
}

int fb_op_valid(fold_op op, fold_dtype dtype) {
  int is_float = dtype == FOLD_FLOAT16 || dtype == FOLD_BFLOAT16 || dtype == FOLD_FLOAT32 || dtype == FOLD_FLOAT64;
  if (op == FOLD_MINLOC || op == FOLD_MAXLOC) return 0;
  if (op == FOLD_SUM_EXACT) return dtype == FOLD_FLOAT32 || dtype == FOLD_FLOAT64;
  return !(is_float && (op == FOLD_BAND || op == FOLD_BOR || op == FOLD_BXOR));
}

/* ---- layouts ------------------------------------------------------------ */

/* Where the call reads this rank's input and where it writes its result.
 * Out of place: input in sbuf, result in rbuf. In place, the one buffer is
 * rbuf, with the offsets fold.h prescribes:
 *   allreduce, reduce     sendbuf == recvbuf (every rank, harmless off-root)
 *   reduce_scatter        recvbuf == sendbuf + rank*count*es
 *   allgather, gather     sendbuf == recvbuf + rank*count*es
 *   scatter               recvbuf == sendbuf + rank*count*es */
typedef struct fb_layout {
  char *send, *recv;
} fb_layout;

static fb_layout layout(const fb_call *k) {
  size_t blk = k->count * fold_dtype_size(k->dtype) * (size_t)k->rank;
  fb_layout l = {k->sbuf, k->rbuf};
  if (!k->in_place) return l;
  switch (k->coll) {
  case FB_REDUCE_SCATTER:
  case FB_SCATTER:
    l.send = k->rbuf, l.recv = k->rbuf + blk;
    break;
  case FB_ALLGATHER:
  case FB_GATHER:
    l.send = k->rbuf + blk, l.recv = k->rbuf;
    break;
  default:
    l.send = l.recv = k->rbuf;
    break;
  }
  return l;
}

double fb_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

_Noreturn void fb_die(fold_comm *comm, const char *what, int rc) {
  fprintf(stderr, "fold-bench: rank %d: %s failed: %s (%s)\n", fold_comm_rank(comm), what, fold_strerror(rc),
          fold_comm_last_error(comm));
  exit(1);
}

void fb_force(const fb_call *k, fold_comm *comm, int on) {
  if (k->algo == NULL) return;
  char spec[96];
  snprintf(spec, sizeof spec, "%s=%s", fb_colls[k->coll].name, on ? k->algo : "auto");
  int rc = fold_comm_set_algo(comm, spec);
  if (rc != FOLD_OK) fb_die(comm, spec, rc);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int fb_user_loop;

double fb_time_calls(const fb_call *k, fold_comm *comm, int warm, int iters, double *t, double *tmax) {
  int rc;
  for (int it = 0; it < warm + iters; it++) {
    if ((rc = fold_barrier(comm)) != FOLD_OK) fb_die(comm, "fold_barrier", rc);
    fb_force(k, comm, 1);
    double t0 = fb_now();
    rc = fb_run(k, comm);
    double t1 = fb_now();
    fb_force(k, comm, 0);
    if (rc != FOLD_OK) fb_die(comm, fb_colls[k->coll].name, rc);
    if (it >= warm) t[it - warm] = t1 - t0;
    /* --user-loop: the slowest rank's time of this iteration at once, by an
     * 8 B MAX allreduce between the timed calls (as a user's timing loop does) */
    if (fb_user_loop) {
      double dt = t1 - t0, mx;
      if ((rc = fold_allreduce(&dt, &mx, 1, FOLD_FLOAT64, FOLD_MAX, comm)) != FOLD_OK)
        fb_die(comm, "fold_allreduce (time)", rc);
      if (it >= warm) tmax[it - warm] = mx;
    }
  }
  /* slowest rank per iteration */
  if (!fb_user_loop && (rc = fold_allreduce(t, tmax, (size_t)iters, FOLD_FLOAT64, FOLD_MAX, comm)) != FOLD_OK)
    fb_die(comm, "fold_allreduce (times)", rc);
  qsort(tmax, (size_t)iters, sizeof(double), cmp_double);
  return iters % 2 ? tmax[iters / 2] : (tmax[iters / 2 - 1] + tmax[iters / 2]) / 2;
}

int fb_run(const fb_call *k, fold_comm *comm) {
  fb_layout l = layout(k);
  switch (k->coll) {
  case FB_ALLREDUCE:
    return fold_allreduce(l.send, l.recv, k->count, k->dtype, k->op, comm);
  case FB_BROADCAST:
    return fold_broadcast(l.recv, k->count, k->dtype, k->root, comm);
  case FB_REDUCE:
    return fold_reduce(l.send, l.recv, k->count, k->dtype, k->op, k->root, comm);
  case FB_REDUCE_SCATTER:
    return fold_reduce_scatter(l.send, l.recv, k->count, k->dtype, k->op, comm);
  case FB_ALLGATHER:
    return fold_allgather(l.send, l.recv, k->count, k->dtype, comm);
  case FB_GATHER:
    return fold_gather(l.send, l.recv, k->count, k->dtype, k->root, comm);
  case FB_SCATTER:
    return fold_scatter(l.send, l.recv, k->count, k->dtype, k->root, comm);
  case FB_ALLTOALL:
    return fold_alltoall(l.send, l.recv, k->count, k->dtype, comm);
  case FB_BARRIER:
  default:
    return fold_barrier(comm);
  }
}

/* ---- elements ----------------------------------------------------------- */

/* The inputs are small integers, so binary16 and bfloat16 hold them exactly
 * and a truncating conversion is exact; decoding is general, since a wrong
 * result may be anything. */
static uint16_t f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  int e = (int)((x >> 23) & 0xff);
  if (e == 0) return sign;
  e = e - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) return sign;
  return (uint16_t)(sign | (e << 10) | ((x & 0x7fffff) >> 13));
}

static float f16_to_f32(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(1024 + m), e - 25);
  return (h & 0x8000) ? -v : v;
}

static void set_elem(void *buf, fold_dtype t, size_t i, double v) {
  int64_t iv = (int64_t)v;
  switch (t) {
  case FOLD_INT8: ((int8_t *)buf)[i] = (int8_t)iv; break;
  case FOLD_UINT8: ((uint8_t *)buf)[i] = (uint8_t)iv; break;
  case FOLD_INT32: ((int32_t *)buf)[i] = (int32_t)iv; break;
  case FOLD_UINT32: ((uint32_t *)buf)[i] = (uint32_t)iv; break;
  case FOLD_INT64: ((int64_t *)buf)[i] = iv; break;
  case FOLD_UINT64: ((uint64_t *)buf)[i] = (uint64_t)iv; break;
  case FOLD_FLOAT16: ((uint16_t *)buf)[i] = f32_to_f16((float)v); break;
  case FOLD_BFLOAT16: {
    float f = (float)v;
    uint32_t x;
    memcpy(&x, &f, 4);
    ((uint16_t *)buf)[i] = (uint16_t)(x >> 16);
    break;
  }
  case FOLD_FLOAT32: ((float *)buf)[i] = (float)v; break;
  case FOLD_FLOAT64: ((double *)buf)[i] = v; break;
  default: break;
  }
}

static double get_elem(const void *buf, fold_dtype t, size_t i) {
  switch (t) {
  case FOLD_INT8: return ((const int8_t *)buf)[i];
  case FOLD_UINT8: return ((const uint8_t *)buf)[i];
  case FOLD_INT32: return ((const int32_t *)buf)[i];
  case FOLD_UINT32: return ((const uint32_t *)buf)[i];
  case FOLD_INT64: return (double)((const int64_t *)buf)[i];
  case FOLD_UINT64: return (double)((const uint64_t *)buf)[i];
  case FOLD_FLOAT16: return f16_to_f32(((const uint16_t *)buf)[i]);
  case FOLD_BFLOAT16: {
    uint32_t x = (uint32_t)((const uint16_t *)buf)[i] << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
  }
  case FOLD_FLOAT32: return ((const float *)buf)[i];
  case FOLD_FLOAT64: return ((const double *)buf)[i];
  default: return NAN;
  }
}

/* ---- exact inputs and the reference --------------------------------------- */

/* The largest integer every partial result must stay under, so that no sum
 * overflows an integer type and every float intermediate is exact. */
static double exact_limit(fold_dtype t) {
  switch (t) {
  case FOLD_INT8: return 127;
  case FOLD_UINT8: return 255;
  case FOLD_FLOAT16: return 2048;
  case FOLD_BFLOAT16: return 256;
  default: return 1 << 24;
  }
}

static int is_signed(fold_dtype t) { return t != FOLD_UINT8 && t != FOLD_UINT32 && t != FOLD_UINT64; }

/* Input of rank r at global element i (i indexes the whole send buffer).
 * Chosen per op so that every result is exact whatever order the algorithm
 * combines in:
 *   sum   values in 0..m with n*m under the type's limit (m <= 4); if even
 *         m = 1 is too much, a 0/1 indicator with one 1 per element
 *   prod  1 everywhere except one rank per element, which gives 1..3
 *   min/max  0..60, shifted to -30..30 for signed types
 *   avg   base +1 / -1 in pairs of ranks (an odd last rank gives base), so
 *         the sum is exactly n*base and the quotient exact
 *   bitwise  7-bit patterns
 *   data movement (no op): (31 r + 7 i) mod 97 */
static double input(const fb_call *k, int r, size_t i) {
  int n = k->n;
  if (!fb_colls[k->coll].reduces) return (double)(((size_t)r * 31 + (i % 97) * 7) % 97);
  double lim = exact_limit(k->dtype);
  switch (k->op) {
  case FOLD_SUM_EXACT: /* the same small integers as sum: exact either way, so the two time alike work */
  case FOLD_SUM: {
    int m = lim / n >= 4 ? 4 : (int)(lim / n);
    if (m < 1) return (i + (size_t)r) % (size_t)n == 0;
    return (double)((i % 97 * 7 + (size_t)r * 3) % (size_t)(m + 1));
  }
  case FOLD_PROD:
    return (i + (size_t)r) % (size_t)n == 0 ? (double)(1 + i % 3) : 1.0;
  case FOLD_MIN:
  case FOLD_MAX:
    return (double)((i % 61 * 13 + (size_t)r * 7) % 61) - (is_signed(k->dtype) ? 30 : 0);
  case FOLD_AVG: {
    int bmax = lim / n - 1 >= 4 ? 4 : (int)(lim / n - 1);
    if (bmax < 1) bmax = 1;
    double base = (double)(1 + i % (size_t)bmax);
    if (r % 2 == 1) return base - 1;
    return r + 1 < n ? base + 1 : base;
  }
  default: /* band, bor, bxor */
    return (double)((i % 128 * 37 + (size_t)r * 11 + 5) & 0x7f);
  }
}

/* The reduction of element i over every rank's input, as fold defines it. */
static double reduced(const fb_call *k, size_t i) {
  double acc = input(k, 0, i);
  for (int r = 1; r < k->n; r++) {
    double v = input(k, r, i);
    switch (k->op) {
    case FOLD_SUM:
    case FOLD_SUM_EXACT:
    case FOLD_AVG: acc += v; break;
    case FOLD_PROD: acc *= v; break;
    case FOLD_MIN: acc = v < acc ? v : acc; break;
    case FOLD_MAX: acc = v > acc ? v : acc; break;
    case FOLD_BAND: acc = (double)((int64_t)acc & (int64_t)v); break;
    case FOLD_BOR: acc = (double)((int64_t)acc | (int64_t)v); break;
    case FOLD_BXOR: acc = (double)((int64_t)acc ^ (int64_t)v); break;
    default: break;
    }
  }
  if (k->op == FOLD_AVG) acc = trunc(acc / k->n); /* exact by construction */
  return acc;
}

/* Poison byte for outputs: 0xA5 decodes to a value no input or result takes
 * (-91 as int8, 165 as uint8, a negative fraction as a half). */
#define POISON 0xA5

void fb_fill(const fb_call *k) {
  if (k->coll == FB_BARRIER) return;
  size_t n = (size_t)k->n, c = k->count;
  fb_layout l = layout(k);
  memset(k->rbuf, POISON, k->bytes); /* every result region lies in rbuf[0, bytes) */
  switch (k->coll) {
  case FB_ALLREDUCE:
  case FB_REDUCE:
    for (size_t i = 0; i < c; i++) set_elem(l.send, k->dtype, i, input(k, k->rank, i));
    break;
  case FB_BROADCAST:
    if (k->rank == k->root)
      for (size_t i = 0; i < c; i++) set_elem(l.recv, k->dtype, i, input(k, k->rank, i));
    break;
  case FB_ALLGATHER:
  case FB_GATHER:
    for (size_t j = 0; j < c; j++) set_elem(l.send, k->dtype, j, input(k, k->rank, j));
    break;
  case FB_SCATTER:
    if (k->rank == k->root)
      for (size_t i = 0; i < n * c; i++) set_elem(l.send, k->dtype, i, input(k, k->rank, i));
    break;
  case FB_REDUCE_SCATTER:
  case FB_ALLTOALL:
    for (size_t i = 0; i < n * c; i++) set_elem(l.send, k->dtype, i, input(k, k->rank, i));
    break;
  default:
    break;
  }
}

long fb_check(const fb_call *k) {
  size_t n = (size_t)k->n, c = k->count, me = (size_t)k->rank;
  fb_layout l = layout(k);
  long wrong = 0;
#define EXPECT(idx, val) wrong += get_elem(l.recv, k->dtype, (idx)) != (val)
  switch (k->coll) {
  case FB_ALLREDUCE:
    for (size_t i = 0; i < c; i++) EXPECT(i, reduced(k, i));
    break;
  case FB_REDUCE:
    if (k->rank == k->root)
      for (size_t i = 0; i < c; i++) EXPECT(i, reduced(k, i));
    break;
  case FB_BROADCAST:
    for (size_t i = 0; i < c; i++) EXPECT(i, input(k, k->root, i));
    break;
  case FB_REDUCE_SCATTER:
    for (size_t j = 0; j < c; j++) EXPECT(j, reduced(k, me * c + j));
    break;
  case FB_ALLGATHER:
  case FB_GATHER:
    if (k->coll == FB_GATHER && k->rank != k->root) break;
    for (size_t p = 0; p < n; p++)
      for (size_t j = 0; j < c; j++) EXPECT(p * c + j, input(k, (int)p, j));
    break;
  case FB_SCATTER:
    for (size_t j = 0; j < c; j++) EXPECT(j, input(k, k->root, me * c + j));
    break;
  case FB_ALLTOALL:
    for (size_t p = 0; p < n; p++)
      for (size_t j = 0; j < c; j++) EXPECT(p * c + j, input(k, (int)p, me * c + j));
    break;
  default:
    break;
  }
#undef EXPECT
  return wrong;
}
