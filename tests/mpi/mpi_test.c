/* mpi_test.c — libfoldmpi through mpi.h alone: each collective (blocking and nonblocking) against a serial
 * reference over counts x types x ops x roots, MPI_IN_PLACE, point-to-point with wildcards and statuses,
 * communicators, MPI_ERRORS_RETURN giving the right class, and unsupported calls giving
 * MPI_ERR_UNSUPPORTED_OPERATION. Usage (under fold-mpiexec): mpi_test [all|fatal]. */
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failures, checks;

static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "rank %d: FAIL: ", rank);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  if (++failures > 20) {
    fprintf(stderr, "rank %d: too many failures\n", rank);
    exit(1);
  }
}
#define CHECK(cond, ...) (checks++, (cond) ? (void)0 : fail(__VA_ARGS__))

/* value of element i of rank r's contribution: small integers, exact in every type */
static long val(int r, long i) { return (r + 1) * (i % 13 + 1) - (i % 3 == 0 ? 2 * r : 0); }

enum { T_INT, T_DOUBLE, T_FLOAT, T_LONG, T_UCHAR, T_NTYPES };
static const MPI_Datatype mtype[] = {MPI_INT, MPI_DOUBLE, MPI_FLOAT, MPI_LONG, MPI_UNSIGNED_CHAR};
static const size_t tsize[] = {sizeof(int), sizeof(double), sizeof(float), sizeof(long), 1};
static const char *tname[] = {"int", "double", "float", "long", "uchar"};

static void put(int t, void *b, long i, long v) {
  switch (t) {
  case T_INT: ((int *)b)[i] = (int)v; break;
  case T_DOUBLE: ((double *)b)[i] = (double)v; break;
  case T_FLOAT: ((float *)b)[i] = (float)v; break;
  case T_LONG: ((long *)b)[i] = v; break;
  default: ((unsigned char *)b)[i] = (unsigned char)v; break;
  }
}
static long get(int t, const void *b, long i) {
  switch (t) {
  case T_INT: return ((const int *)b)[i];
  case T_DOUBLE: return (long)((const double *)b)[i];
  case T_FLOAT: return (long)((const float *)b)[i];
  case T_LONG: return ((const long *)b)[i];
  default: return ((const unsigned char *)b)[i];
  }
}
static long fill_val(int t, int r, long i) { return t == T_UCHAR ? val(r, i) & 0xff : val(r, i); }
/* the serial reduction of element i over every rank; ops on uchar wrap like the type */
static long ref(int t, MPI_Op op, long i) {
  long acc = fill_val(t, 0, i);
  for (int r = 1; r < size; r++) {
    long v = fill_val(t, r, i); /* the value as the type holds it */
    if (op == MPI_SUM) acc += v;
    else if (op == MPI_MAX) acc = v > acc ? v : acc;
    else if (op == MPI_MIN) acc = v < acc ? v : acc;
    else if (op == MPI_BOR) acc |= v;
    else if (op == MPI_BXOR) acc ^= v;
    if (t == T_UCHAR) acc &= 0xff;
    if (t == T_INT) acc = (int)acc;
  }
  return t == T_UCHAR ? acc & 0xff : acc;
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) { perror("malloc"); exit(1); }
  return p;
}

static void wait_or_not(int nb, MPI_Request *rq, const char *what) {
  if (!nb)
    return;
  /* a few MPI_Test calls first, then MPI_Wait */
  int flag = 0;
  for (int k = 0; k < 3 && !flag; k++)
    CHECK(MPI_Test(rq, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS, "%s: MPI_Test", what);
  if (!flag)
    CHECK(MPI_Wait(rq, MPI_STATUS_IGNORE) == MPI_SUCCESS, "%s: MPI_Wait", what);
  CHECK(*rq == MPI_REQUEST_NULL, "%s: request not MPI_REQUEST_NULL after completion", what);
}

static void test_reductions(MPI_Comm comm, long count, int t, MPI_Op op, int nb, int inplace) {
  char what[128];
  snprintf(what, sizeof what, "reductions n=%d count=%ld %s op=%d nb=%d inplace=%d", size, count, tname[t], op, nb,
           inplace);
  size_t sz = tsize[t];
  void *s = xmalloc(count * sz * size), *r = xmalloc(count * sz * size);
  MPI_Request rq = MPI_REQUEST_NULL;
  /* allreduce */
  for (long i = 0; i < count; i++) put(t, s, i, fill_val(t, rank, i));
  if (inplace) memcpy(r, s, count * sz);
  int rc = nb ? MPI_Iallreduce(inplace ? MPI_IN_PLACE : s, r, count, mtype[t], op, comm, &rq)
              : MPI_Allreduce(inplace ? MPI_IN_PLACE : s, r, count, mtype[t], op, comm);
  CHECK(rc == MPI_SUCCESS, "%s: allreduce rc %d", what, rc);
  wait_or_not(nb, &rq, what);
  for (long i = 0; i < count; i++)
    if (get(t, r, i) != ref(t, op, i)) { fail("%s: allreduce [%ld] = %ld, want %ld", what, i, get(t, r, i), ref(t, op, i)); break; }
  /* reduce at every root */
  for (int root = 0; root < size; root++) {
    for (long i = 0; i < count; i++) put(t, s, i, fill_val(t, rank, i));
    memset(r, 0x5a, count * sz);
    int ip = inplace && rank == root;
    if (ip) memcpy(r, s, count * sz);
    rc = nb ? MPI_Ireduce(ip ? MPI_IN_PLACE : s, r, count, mtype[t], op, root, comm, &rq)
            : MPI_Reduce(ip ? MPI_IN_PLACE : s, r, count, mtype[t], op, root, comm);
    CHECK(rc == MPI_SUCCESS, "%s: reduce root %d rc %d", what, root, rc);
    wait_or_not(nb, &rq, what);
    if (rank == root)
      for (long i = 0; i < count; i++)
        if (get(t, r, i) != ref(t, op, i)) { fail("%s: reduce root %d [%ld] = %ld, want %ld", what, root, i, get(t, r, i), ref(t, op, i)); break; }
  }
  /* reduce_scatter_block: block b of rank r's input is val(r, b*count + i) */
  for (long i = 0; i < count * size; i++) put(t, s, i, fill_val(t, rank, i));
  if (inplace) memcpy(r, s, count * size * sz);
  rc = nb ? MPI_Ireduce_scatter_block(inplace ? MPI_IN_PLACE : s, r, count, mtype[t], op, comm, &rq)
          : MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : s, r, count, mtype[t], op, comm);
  CHECK(rc == MPI_SUCCESS, "%s: reduce_scatter_block rc %d", what, rc);
  wait_or_not(nb, &rq, what);
  for (long i = 0; i < count; i++)
    if (get(t, r, i) != ref(t, op, rank * count + i)) { fail("%s: reduce_scatter_block [%ld] = %ld, want %ld", what, i, get(t, r, i), ref(t, op, rank * count + i)); break; }
  /* reduce_scatter with unequal counts (blocking only): rank q gets count + q elements */
  if (!nb) {
    int *rc_ = xmalloc(sizeof(int) * size);
    long total = 0, before = 0;
    for (int q = 0; q < size; q++) { rc_[q] = (int)count + q; if (q < rank) before += rc_[q]; total += rc_[q]; }
    void *s2 = xmalloc(total * sz), *r2 = xmalloc(total * sz);
    for (long i = 0; i < total; i++) put(t, s2, i, fill_val(t, rank, i));
    if (inplace) memcpy(r2, s2, total * sz);
    rc = MPI_Reduce_scatter(inplace ? MPI_IN_PLACE : s2, r2, rc_, mtype[t], op, comm);
    CHECK(rc == MPI_SUCCESS, "%s: reduce_scatter rc %d", what, rc);
    for (long i = 0; i < rc_[rank]; i++)
      if (get(t, r2, i) != ref(t, op, before + i)) { fail("%s: reduce_scatter [%ld] = %ld, want %ld", what, i, get(t, r2, i), ref(t, op, before + i)); break; }
    free(s2); free(r2); free(rc_);
  }
  free(s);
  free(r);
}

/* byte pattern of rank r's block for rank q, element i */
static unsigned char pat(int r, int q, long i) { return (unsigned char)(r * 31 + q * 7 + i * 3 + 1); }

static void test_movement(MPI_Comm comm, long count, int nb, int inplace) {
  char what[96];
  snprintf(what, sizeof what, "movement n=%d count=%ld nb=%d inplace=%d", size, count, nb, inplace);
  /* ints as the type on one side and 4 bytes per int on the other: sizes agree, types need not */
  size_t bytes = count * sizeof(int);
  unsigned char *s = xmalloc(bytes * size), *r = xmalloc(bytes * size);
  MPI_Request rq = MPI_REQUEST_NULL;
  int rc;
  for (int root = 0; root < size; root++) {
    /* bcast */
    for (size_t i = 0; i < bytes; i++) r[i] = rank == root ? pat(root, 0, i) : 0;
    rc = nb ? MPI_Ibcast(r, (int)count, MPI_INT, root, comm, &rq) : MPI_Bcast(r, (int)count, MPI_INT, root, comm);
    CHECK(rc == MPI_SUCCESS, "%s: bcast rc %d", what, rc);
    wait_or_not(nb, &rq, what);
    for (size_t i = 0; i < bytes; i++)
      if (r[i] != pat(root, 0, i)) { fail("%s: bcast root %d byte %zu", what, root, i); break; }
    /* gather */
    for (size_t i = 0; i < bytes; i++) s[i] = pat(rank, 0, i);
    memset(r, 0, bytes * size);
    int ip = inplace && rank == root;
    if (ip) memcpy(r + rank * bytes, s, bytes);
    rc = nb ? MPI_Igather(ip ? MPI_IN_PLACE : s, (int)count, MPI_INT, r, (int)bytes, MPI_BYTE, root, comm, &rq)
            : MPI_Gather(ip ? MPI_IN_PLACE : s, (int)count, MPI_INT, r, (int)bytes, MPI_BYTE, root, comm);
    CHECK(rc == MPI_SUCCESS, "%s: gather rc %d", what, rc);
    wait_or_not(nb, &rq, what);
    if (rank == root)
      for (int q = 0; q < size; q++)
        for (size_t i = 0; i < bytes; i++)
          if (r[q * bytes + i] != pat(q, 0, i)) { fail("%s: gather root %d block %d byte %zu", what, root, q, i); q = size; break; }
    /* scatter */
    for (int q = 0; q < size; q++)
      for (size_t i = 0; i < bytes; i++) s[q * bytes + i] = rank == root ? pat(root, q, i) : 0;
    memset(r, 0, bytes);
    rc = nb ? MPI_Iscatter(s, (int)bytes, MPI_BYTE, ip ? MPI_IN_PLACE : r, (int)count, MPI_INT, root, comm, &rq)
            : MPI_Scatter(s, (int)bytes, MPI_BYTE, ip ? MPI_IN_PLACE : r, (int)count, MPI_INT, root, comm);
    CHECK(rc == MPI_SUCCESS, "%s: scatter rc %d", what, rc);
    wait_or_not(nb, &rq, what);
    const unsigned char *got = ip ? s + rank * bytes : r;
    for (size_t i = 0; i < bytes; i++)
      if (got[i] != pat(root, rank, i)) { fail("%s: scatter root %d byte %zu", what, root, i); break; }
  }
  /* allgather */
  for (size_t i = 0; i < bytes; i++) s[i] = pat(rank, 0, i);
  memset(r, 0, bytes * size);
  if (inplace) memcpy(r + rank * bytes, s, bytes);
  rc = nb ? MPI_Iallgather(inplace ? MPI_IN_PLACE : s, (int)count, MPI_INT, r, (int)count, MPI_INT, comm, &rq)
          : MPI_Allgather(inplace ? MPI_IN_PLACE : s, (int)count, MPI_INT, r, (int)count, MPI_INT, comm);
  CHECK(rc == MPI_SUCCESS, "%s: allgather rc %d", what, rc);
  wait_or_not(nb, &rq, what);
  for (int q = 0; q < size; q++)
    for (size_t i = 0; i < bytes; i++)
      if (r[q * bytes + i] != pat(q, 0, i)) { fail("%s: allgather block %d byte %zu", what, q, i); q = size; break; }
  /* alltoall: block q of rank r's input is pat(r, q) */
  for (int q = 0; q < size; q++)
    for (size_t i = 0; i < bytes; i++) s[q * bytes + i] = pat(rank, q, i);
  if (inplace) memcpy(r, s, bytes * size);
  rc = nb ? MPI_Ialltoall(inplace ? MPI_IN_PLACE : s, (int)count, MPI_INT, r, (int)count, MPI_INT, comm, &rq)
          : MPI_Alltoall(inplace ? MPI_IN_PLACE : s, (int)count, MPI_INT, r, (int)count, MPI_INT, comm);
  CHECK(rc == MPI_SUCCESS, "%s: alltoall rc %d", what, rc);
  wait_or_not(nb, &rq, what);
  for (int q = 0; q < size; q++)
    for (size_t i = 0; i < bytes; i++)
      if (r[q * bytes + i] != pat(q, rank, i)) { fail("%s: alltoall block %d byte %zu", what, q, i); q = size; break; }
  /* barrier */
  rc = nb ? MPI_Ibarrier(comm, &rq) : MPI_Barrier(comm);
  CHECK(rc == MPI_SUCCESS, "%s: barrier rc %d", what, rc);
  wait_or_not(nb, &rq, what);
  free(s);
  free(r);
}

/* the v-collectives: rank q's block has q + k elements (k = 0 or 3), laid out in reverse order with a gap */
static void test_v(MPI_Comm comm, int k, int inplace, int nb) {
  char what[64];
  snprintf(what, sizeof what, "v-collectives n=%d k=%d inplace=%d nb=%d", size, k, inplace, nb);
  MPI_Request rq = MPI_REQUEST_NULL;
  int *cnt = xmalloc(sizeof(int) * size), *dsp = xmalloc(sizeof(int) * size), *scnt = xmalloc(sizeof(int) * size),
      *sdsp = xmalloc(sizeof(int) * size);
  int total = 0;
  for (int q = size - 1; q >= 0; q--) { cnt[q] = q + k; dsp[q] = total; total += cnt[q] + 1; }
  int *r = xmalloc(sizeof(int) * (total + 1)), *s = xmalloc(sizeof(int) * (total + 1));
  for (int root = 0; root < size; root++) {
    /* gatherv */
    for (int i = 0; i < cnt[rank]; i++) s[i] = rank * 100 + i;
    for (int i = 0; i < total; i++) r[i] = -1;
    int ip = inplace && rank == root;
    if (ip) memcpy(r + dsp[rank], s, sizeof(int) * cnt[rank]);
    CHECK((nb ? MPI_Igatherv(ip ? MPI_IN_PLACE : s, cnt[rank], MPI_INT, r, cnt, dsp, MPI_INT, root, comm, &rq)
              : MPI_Gatherv(ip ? MPI_IN_PLACE : s, cnt[rank], MPI_INT, r, cnt, dsp, MPI_INT, root, comm)) == MPI_SUCCESS, "%s: gatherv", what);
    wait_or_not(nb, &rq, what);
    if (rank == root)
      for (int q = 0; q < size; q++)
        for (int i = 0; i < cnt[q]; i++)
          if (r[dsp[q] + i] != q * 100 + i) { fail("%s: gatherv root %d block %d [%d] = %d", what, root, q, i, r[dsp[q] + i]); q = size; break; }
    /* scatterv */
    for (int q = 0; q < size; q++)
      for (int i = 0; i < cnt[q]; i++) s[dsp[q] + i] = root * 1000 + q * 10 + i;
    for (int i = 0; i < total; i++) r[i] = -1;
    CHECK((nb ? MPI_Iscatterv(s, cnt, dsp, MPI_INT, ip ? MPI_IN_PLACE : r, cnt[rank], MPI_INT, root, comm, &rq)
              : MPI_Scatterv(s, cnt, dsp, MPI_INT, ip ? MPI_IN_PLACE : r, cnt[rank], MPI_INT, root, comm)) == MPI_SUCCESS, "%s: scatterv", what);
    wait_or_not(nb, &rq, what);
    const int *got = ip ? s + dsp[rank] : r;
    for (int i = 0; i < cnt[rank]; i++)
      if (got[i] != root * 1000 + rank * 10 + i) { fail("%s: scatterv root %d [%d] = %d", what, root, i, got[i]); break; }
  }
  /* allgatherv */
  for (int i = 0; i < cnt[rank]; i++) s[i] = rank * 100 + i;
  for (int i = 0; i < total; i++) r[i] = -1;
  if (inplace) memcpy(r + dsp[rank], s, sizeof(int) * cnt[rank]);
  CHECK((nb ? MPI_Iallgatherv(inplace ? MPI_IN_PLACE : s, cnt[rank], MPI_INT, r, cnt, dsp, MPI_INT, comm, &rq)
            : MPI_Allgatherv(inplace ? MPI_IN_PLACE : s, cnt[rank], MPI_INT, r, cnt, dsp, MPI_INT, comm)) == MPI_SUCCESS, "%s: allgatherv", what);
  wait_or_not(nb, &rq, what);
  for (int q = 0; q < size; q++)
    for (int i = 0; i < cnt[q]; i++)
      if (r[dsp[q] + i] != q * 100 + i) { fail("%s: allgatherv block %d [%d] = %d", what, q, i, r[dsp[q] + i]); q = size; break; }
  /* alltoallv: rank p sends q (p + q) % 3 + k elements; in place, both layouts are the receive layout */
  int stot = 0, rtot = 0;
  for (int q = 0; q < size; q++) {
    scnt[q] = (rank + q) % 3 + k; sdsp[q] = stot; stot += scnt[q];
    cnt[q] = (q + rank) % 3 + k; dsp[q] = rtot + 1; rtot += cnt[q] + 1;
  }
  free(r); free(s);
  r = xmalloc(sizeof(int) * (rtot + stot + 1)); s = xmalloc(sizeof(int) * (rtot + stot + 1));
  for (int q = 0; q < size; q++)
    for (int i = 0; i < scnt[q]; i++) s[sdsp[q] + i] = rank * 1000 + q * 10 + i;
  for (int i = 0; i < rtot; i++) r[i] = -1;
  if (inplace)
    for (int q = 0; q < size; q++)
      for (int i = 0; i < cnt[q]; i++) r[dsp[q] + i] = rank * 1000 + q * 10 + i;
  CHECK((nb ? MPI_Ialltoallv(inplace ? MPI_IN_PLACE : s, scnt, sdsp, MPI_INT, r, cnt, dsp, MPI_INT, comm, &rq)
            : MPI_Alltoallv(inplace ? MPI_IN_PLACE : s, scnt, sdsp, MPI_INT, r, cnt, dsp, MPI_INT, comm)) == MPI_SUCCESS, "%s: alltoallv", what);
  wait_or_not(nb, &rq, what);
  for (int q = 0; q < size; q++)
    for (int i = 0; i < cnt[q]; i++)
      if (r[dsp[q] + i] != q * 1000 + rank * 10 + i) { fail("%s: alltoallv from %d [%d] = %d", what, q, i, r[dsp[q] + i]); q = size; break; }
  free(r); free(s); free(cnt); free(dsp); free(scnt); free(sdsp);
}

/* MPI_Type_contiguous: 3 ints as one element, reduced and moved; sizes and extents */
static void test_contig(MPI_Comm comm) {
  MPI_Datatype t3, t6;
  int sz = 0;
  MPI_Aint lb = -1, ext = 0;
  CHECK(MPI_Type_contiguous(3, MPI_INT, &t3) == MPI_SUCCESS && MPI_Type_commit(&t3) == MPI_SUCCESS, "contiguous");
  CHECK(MPI_Type_contiguous(2, t3, &t6) == MPI_SUCCESS && MPI_Type_commit(&t6) == MPI_SUCCESS, "contiguous of contiguous");
  CHECK(MPI_Type_size(t6, &sz) == MPI_SUCCESS && sz == 6 * (int)sizeof(int), "type_size %d", sz);
  CHECK(MPI_Type_get_extent(t3, &lb, &ext) == MPI_SUCCESS && lb == 0 && ext == 3 * (MPI_Aint)sizeof(int), "extent");
  int a[12], b[12];
  for (int i = 0; i < 12; i++) a[i] = rank * 12 + i;
  CHECK(MPI_Allreduce(a, b, 2, t6, MPI_MAX, comm) == MPI_SUCCESS, "allreduce contiguous");
  for (int i = 0; i < 12; i++)
    if (b[i] != (size - 1) * 12 + i) { fail("allreduce contiguous [%d] = %d", i, b[i]); break; }
  CHECK(MPI_Bcast(a, 4, t3, 0, comm) == MPI_SUCCESS && a[11] == 11, "bcast contiguous %d", a[11]);
  MPI_Status st;
  int cnt = -1;
  CHECK(MPI_Sendrecv(a, 4, t3, rank, 1, b, 4, t3, rank, 1, comm, &st) == MPI_SUCCESS, "sendrecv self contiguous");
  CHECK(MPI_Get_count(&st, t3, &cnt) == MPI_SUCCESS && cnt == 4, "get_count contiguous %d", cnt);
  CHECK(MPI_Get_count(&st, t6, &cnt) == MPI_SUCCESS && cnt == 2, "get_count contiguous x2 %d", cnt);
  CHECK(MPI_Get_elements(&st, t3, &cnt) == MPI_SUCCESS && cnt == 12, "get_elements %d", cnt);
  CHECK(MPI_Type_free(&t6) == MPI_SUCCESS && t6 == MPI_DATATYPE_NULL, "type_free");
  MPI_Type_free(&t3);
}

static void test_loc(MPI_Comm comm) {
  struct { int v, i; } a[3], b[3];
  struct { double v; int i; } c[2], d[2];
  for (int k = 0; k < 3; k++) { a[k].v = (rank * (k + 2)) % 3; a[k].i = rank; }
  for (int k = 0; k < 2; k++) { c[k].v = k ? -rank : rank % 2; c[k].i = rank; }
  CHECK(MPI_Allreduce(a, b, 3, MPI_2INT, MPI_MAXLOC, comm) == MPI_SUCCESS, "maxloc 2int");
  for (int k = 0; k < 3; k++) {
    int bv = -1, bi = -1;
    for (int r = 0; r < size; r++) { int v = (r * (k + 2)) % 3; if (v > bv) { bv = v; bi = r; } }
    CHECK(b[k].v == bv && b[k].i == bi, "maxloc 2int [%d] = (%d,%d), want (%d,%d)", k, b[k].v, b[k].i, bv, bi);
  }
  CHECK(MPI_Allreduce(c, d, 2, MPI_DOUBLE_INT, MPI_MINLOC, comm) == MPI_SUCCESS, "minloc double_int");
  CHECK(d[0].v == 0 && d[0].i == 0, "minloc double_int [0] = (%g,%d)", d[0].v, d[0].i);
  CHECK(d[1].v == -(size - 1) && d[1].i == size - 1, "minloc double_int [1] = (%g,%d)", d[1].v, d[1].i);
}

static void test_p2p(MPI_Comm comm) {
  int n;
  MPI_Comm_size(comm, &n);
  int me;
  MPI_Comm_rank(comm, &me);
  /* a ring with Sendrecv */
  int out = me * 10 + 1, in = -1;
  MPI_Status st;
  CHECK(MPI_Sendrecv(&out, 1, MPI_INT, (me + 1) % n, 5, &in, 1, MPI_INT, (me + n - 1) % n, 5, comm, &st) == MPI_SUCCESS, "sendrecv");
  CHECK(in == ((me + n - 1) % n) * 10 + 1 && st.MPI_SOURCE == (me + n - 1) % n && st.MPI_TAG == 5, "sendrecv got %d from %d tag %d", in, st.MPI_SOURCE, st.MPI_TAG);
  /* everyone sends (me, 3 doubles) to rank 0 with tag me; rank 0 receives with wildcards */
  double v[3] = {me, me + 0.5, -me};
  if (me != 0) {
    MPI_Request rq;
    CHECK(MPI_Isend(v, 3, MPI_DOUBLE, 0, 100 + me, comm, &rq) == MPI_SUCCESS, "isend");
    CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE) == MPI_SUCCESS, "wait isend");
  } else {
    int seen = 0;
    for (int k = 1; k < n; k++) {
      double w[8];
      int flag = 0, cnt;
      CHECK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st) == MPI_SUCCESS, "probe");
      CHECK(MPI_Get_count(&st, MPI_DOUBLE, &cnt) == MPI_SUCCESS && cnt == 3, "probe count %d", cnt);
      CHECK(MPI_Iprobe(st.MPI_SOURCE, st.MPI_TAG, comm, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag, "iprobe");
      CHECK(MPI_Recv(w, 8, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st) == MPI_SUCCESS, "recv any");
      CHECK(MPI_Get_count(&st, MPI_DOUBLE, &cnt) == MPI_SUCCESS && cnt == 3, "get_count %d", cnt);
      CHECK(MPI_Get_count(&st, MPI_INT, &cnt) == MPI_SUCCESS && cnt == 6, "get_count as int %d", cnt);
      CHECK(st.MPI_TAG == 100 + st.MPI_SOURCE && w[1] == st.MPI_SOURCE + 0.5, "recv any: tag %d source %d", st.MPI_TAG, st.MPI_SOURCE);
      seen |= 1 << st.MPI_SOURCE;
    }
    CHECK(seen == ((1 << n) - 2), "wildcard receives saw sources %#x", seen);
  }
  MPI_Barrier(comm); /* no later message may meet rank 0's wildcard receives */
  /* nonblocking in flight at once: every pair, Waitall; then Waitany / Testall on a second round */
  int *sb = xmalloc(sizeof(int) * n), *rb = xmalloc(sizeof(int) * n);
  MPI_Request *rq = xmalloc(sizeof(MPI_Request) * 2 * n);
  MPI_Status *sts = xmalloc(sizeof(MPI_Status) * 2 * n);
  for (int q = 0; q < n; q++) {
    sb[q] = me * 1000 + q;
    rb[q] = -1;
    CHECK(MPI_Irecv(&rb[q], 1, MPI_INT, q, 7, comm, &rq[q]) == MPI_SUCCESS, "irecv");
  }
  for (int q = 0; q < n; q++)
    CHECK(MPI_Isend(&sb[q], 1, MPI_INT, q, 7, comm, &rq[n + q]) == MPI_SUCCESS, "isend");
  CHECK(MPI_Waitall(2 * n, rq, sts) == MPI_SUCCESS, "waitall");
  for (int q = 0; q < n; q++)
    CHECK(rb[q] == q * 1000 + me && sts[q].MPI_SOURCE == q, "waitall: from %d got %d", q, rb[q]);
  for (int q = 0; q < n; q++) {
    CHECK(MPI_Irecv(&rb[q], 1, MPI_INT, q, 8, comm, &rq[q]) == MPI_SUCCESS, "irecv2");
    CHECK(MPI_Isend(&sb[q], 1, MPI_INT, q, 8, comm, &rq[n + q]) == MPI_SUCCESS, "isend2");
  }
  for (int k = 0; k < n; k++) {
    int idx = -1;
    CHECK(MPI_Waitany(n, rq, &idx, &st) == MPI_SUCCESS && idx >= 0 && idx < n, "waitany");
    if (idx >= 0 && idx < n)
      CHECK(rb[idx] == idx * 1000 + me && st.MPI_SOURCE == idx, "waitany: %d got %d", idx, rb[idx]);
  }
  int idx = 0, flag = 0;
  CHECK(MPI_Waitany(n, rq, &idx, &st) == MPI_SUCCESS && idx == MPI_UNDEFINED, "waitany on nothing");
  for (int k = 0; k < 1000000 && !flag; k++)
    CHECK(MPI_Testall(n, rq + n, &flag, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "testall");
  CHECK(flag, "testall never done");
  /* MPI_PROC_NULL */
  CHECK(MPI_Send(sb, 1, MPI_INT, MPI_PROC_NULL, 0, comm) == MPI_SUCCESS, "send proc_null");
  CHECK(MPI_Recv(rb, 1, MPI_INT, MPI_PROC_NULL, 0, comm, &st) == MPI_SUCCESS && st.MPI_SOURCE == MPI_PROC_NULL, "recv proc_null");
  /* count 0 */
  if (n > 1) {
    int cnt = -1;
    if (me == 0) CHECK(MPI_Send(NULL, 0, MPI_INT, 1, 9, comm) == MPI_SUCCESS, "send 0");
    if (me == 1) {
      CHECK(MPI_Recv(NULL, 0, MPI_INT, 0, 9, comm, &st) == MPI_SUCCESS, "recv 0");
      CHECK(MPI_Get_count(&st, MPI_INT, &cnt) == MPI_SUCCESS && cnt == 0, "count 0: %d", cnt);
    }
  }
  free(sb); free(rb); free(rq); free(sts);
}

static int class_of(int code) {
  int c = -1;
  MPI_Error_class(code, &c);
  return c;
}
static int names(int code, const char *call) {
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  return MPI_Error_string(code, s, &len) == MPI_SUCCESS && strstr(s, call) != NULL && len == (int)strlen(s);
}

static void test_errors(void) {
  MPI_Comm c;
  CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &c) == MPI_SUCCESS, "dup");
  CHECK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN) == MPI_SUCCESS, "set errhandler");
  MPI_Errhandler eh;
  CHECK(MPI_Comm_get_errhandler(c, &eh) == MPI_SUCCESS && eh == MPI_ERRORS_RETURN, "get errhandler");
  int x = 1, y = 0, e;
  float f = 1, g;
  short sh = 1, sh2;
  e = MPI_Send(&x, 1, MPI_INT, size, 0, c);
  CHECK(class_of(e) == MPI_ERR_RANK && names(e, "MPI_Send"), "bad rank: class %d", class_of(e));
  e = MPI_Send(&x, 1, MPI_INT, 0, -5, c);
  CHECK(class_of(e) == MPI_ERR_TAG, "bad tag: class %d", class_of(e));
  e = MPI_Send(&x, -1, MPI_INT, 0, 0, c);
  CHECK(class_of(e) == MPI_ERR_COUNT, "bad count: class %d", class_of(e));
  e = MPI_Send(&x, 1, 9999, 0, 0, c);
  CHECK(class_of(e) == MPI_ERR_TYPE, "bad type: class %d", class_of(e));
  e = MPI_Bcast(&x, 1, MPI_INT, size + 3, c);
  CHECK(class_of(e) == MPI_ERR_ROOT && names(e, "MPI_Bcast"), "bad root: class %d", class_of(e));
  e = MPI_Allreduce(&f, &g, 1, MPI_FLOAT, MPI_BAND, c);
  CHECK(class_of(e) == MPI_ERR_OP, "band on float: class %d", class_of(e));
  e = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_MAXLOC, c);
  CHECK(class_of(e) == MPI_ERR_OP, "maxloc on int: class %d", class_of(e));
  e = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_LAND, c);
  CHECK(class_of(e) == MPI_ERR_UNSUPPORTED_OPERATION && names(e, "MPI_LAND"), "land: class %d", class_of(e));
  e = MPI_Allreduce(&sh, &sh2, 1, MPI_SHORT, MPI_SUM, c);
  CHECK(class_of(e) == MPI_ERR_UNSUPPORTED_OPERATION && names(e, "MPI_SHORT"), "short sum: class %d", class_of(e));
  /* an invalid communicator raises on MPI_COMM_WORLD's handler */
  CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN) == MPI_SUCCESS, "world returns");
  e = MPI_Comm_rank(12345, &x);
  CHECK(class_of(e) == MPI_ERR_COMM && names(e, "MPI_Comm_rank"), "bad comm: class %d", class_of(e));
  CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL) == MPI_SUCCESS, "world fatal again");
  /* truncation: a message longer than the receive buffer (the communicator stays usable) */
  if (size > 1) {
    int two[2] = {1, 2}, one = 0;
    MPI_Status st;
    if (rank == 0) CHECK(MPI_Send(two, 2, MPI_INT, 1, 3, c) == MPI_SUCCESS, "send 2");
    if (rank == 1) {
      e = MPI_Recv(&one, 1, MPI_INT, 0, 3, c, &st);
      CHECK(class_of(e) == MPI_ERR_TRUNCATE && names(e, "MPI_Recv"), "truncate: class %d", class_of(e));
    }
    CHECK(MPI_Barrier(c) == MPI_SUCCESS, "barrier after truncation");
  }
  /* unsupported calls: the class and a string naming the call */
  int rcounts[64] = {0}, displs[64] = {0};
  MPI_Request vr;
  MPI_Datatype types[64];
  for (int i = 0; i < 64; i++) types[i] = MPI_INT;
  e = MPI_Ialltoallw(&x, rcounts, displs, types, &y, rcounts, displs, types, c, &vr);
  CHECK(class_of(e) == MPI_ERR_UNSUPPORTED_OPERATION && names(e, "MPI_Ialltoallw"), "ialltoallw: class %d", class_of(e));
  MPI_Group gr;
  e = MPI_Comm_group(c, &gr);
  CHECK(class_of(e) == MPI_ERR_UNSUPPORTED_OPERATION && names(e, "MPI_Comm_group"), "comm_group: class %d", class_of(e));
  e = MPI_Scan(&x, &y, 1, MPI_INT, MPI_SUM, c);
  CHECK(class_of(e) == MPI_ERR_UNSUPPORTED_OPERATION && names(e, "MPI_Scan"), "scan: class %d", class_of(e));
  CHECK(MPI_Comm_free(&c) == MPI_SUCCESS && c == MPI_COMM_NULL, "free");
  /* Error_string of a class */
  char s[MPI_MAX_ERROR_STRING];
  int len;
  CHECK(MPI_Error_string(MPI_ERR_UNSUPPORTED_OPERATION, s, &len) == MPI_SUCCESS && strstr(s, "UNSUPPORTED"), "class string");
}

static void test_comms(void) {
  MPI_Comm dup, half, rev, host;
  int r, n, res;
  CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup) == MPI_SUCCESS, "dup");
  CHECK(MPI_Comm_compare(dup, MPI_COMM_WORLD, &res) == MPI_SUCCESS && res == MPI_CONGRUENT, "compare dup %d", res);
  CHECK(MPI_Comm_compare(dup, dup, &res) == MPI_SUCCESS && res == MPI_IDENT, "compare ident %d", res);
  CHECK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half) == MPI_SUCCESS, "split");
  MPI_Comm_rank(half, &r);
  MPI_Comm_size(half, &n);
  CHECK(n == (size + 1 - rank % 2) / 2 && r == n - 1 - rank / 2, "split: rank %d of %d", r, n);
  int sum = -1;
  CHECK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half) == MPI_SUCCESS, "allreduce on split");
  int want = 0;
  for (int q = rank % 2; q < size; q += 2) want += q;
  CHECK(sum == want, "allreduce on split: %d, want %d", sum, want);
  {
    /* a v-collective on the split (its private duplicate goes with MPI_Comm_free below) */
    int hc[64], hd[64], hr[64], me2 = rank;
    for (int q = 0; q < n; q++) { hc[q] = 1; hd[q] = n - 1 - q; }
    CHECK(MPI_Allgatherv(&me2, 1, MPI_INT, hr, hc, hd, MPI_INT, half) == MPI_SUCCESS, "allgatherv on split");
    for (int q = 0; q < n; q++) /* rank q of half is world rank (n - 1 - q) * 2 + rank % 2 */
      CHECK(hr[n - 1 - q] == (n - 1 - q) * 2 + rank % 2, "allgatherv on split: [%d] = %d", n - 1 - q, hr[n - 1 - q]);
  }
  CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev) == MPI_SUCCESS, "split reversed");
  CHECK(MPI_Comm_compare(rev, MPI_COMM_WORLD, &res) == MPI_SUCCESS && res == (size > 1 ? MPI_SIMILAR : MPI_CONGRUENT), "compare reversed %d", res);
  MPI_Comm none;
  CHECK(MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, 0, &none) == MPI_SUCCESS && none == MPI_COMM_NULL, "split undefined");
  CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, -rank, MPI_INFO_NULL, &host) == MPI_SUCCESS, "split_type");
  MPI_Comm_rank(host, &r);
  MPI_Comm_size(host, &n);
  CHECK(n == size && r == size - 1 - rank, "split_type: rank %d of %d (one host, key reversed)", r, n);
  CHECK(MPI_Comm_size(MPI_COMM_SELF, &n) == MPI_SUCCESS && n == 1, "self size");
  CHECK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF) == MPI_SUCCESS && sum == rank, "self allreduce");
  int *tag_ub, flag;
  CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag) == MPI_SUCCESS && flag && *tag_ub >= 32767, "tag_ub");
  MPI_Comm_free(&dup);
  MPI_Comm_free(&half);
  MPI_Comm_free(&rev);
  MPI_Comm_free(&host);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "all";
  int provided = -1;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (strcmp(mode, "fatal") == 0) {
    /* MPI_ERRORS_ARE_FATAL (the default): the job ends with a message naming the call */
    MPI_Win w;
    MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    printf("rank %d: MPI_Win_create returned under MPI_ERRORS_ARE_FATAL\n", rank);
    return 0;
  }
  CHECK(provided == MPI_THREAD_SERIALIZED, "provided %d", provided);
  int flag = 0, v, sv;
  CHECK(MPI_Initialized(&flag) == MPI_SUCCESS && flag, "initialized");
  CHECK(MPI_Get_version(&v, &sv) == MPI_SUCCESS && v == 3 && sv == 1, "version");
  char name[MPI_MAX_PROCESSOR_NAME];
  int len;
  CHECK(MPI_Get_processor_name(name, &len) == MPI_SUCCESS && len > 0, "processor name");
  double t0 = MPI_Wtime();
  CHECK(MPI_Wtick() > 0 && MPI_Wtick() < 1e-3 && MPI_Wtime() >= t0, "wtime");

  static const long counts[] = {0, 1, 7, 1000, 70000};
  static const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_BOR, MPI_BXOR};
  for (int ci = 0; ci < 5; ci++)
    for (int t = 0; t < T_NTYPES; t++)
      for (int oi = 0; oi < 5; oi++) {
        if ((ops[oi] == MPI_BOR || ops[oi] == MPI_BXOR) && (t == T_DOUBLE || t == T_FLOAT)) continue;
        if (counts[ci] > 1000 && oi > 1) continue; /* the large count: sum and max */
        for (int nb = 0; nb < 2; nb++)
          for (int ip = 0; ip < 2; ip++)
            test_reductions(MPI_COMM_WORLD, counts[ci], t, ops[oi], nb, ip);
      }
  for (int ci = 0; ci < 5; ci++)
    for (int nb = 0; nb < 2; nb++)
      for (int ip = 0; ip < 2; ip++)
        test_movement(MPI_COMM_WORLD, counts[ci], nb, ip);
  for (int k = 0; k <= 3; k += 3)
    for (int ip = 0; ip < 2; ip++)
      for (int nb = 0; nb < 2; nb++)
        test_v(MPI_COMM_WORLD, k, ip, nb);
  test_contig(MPI_COMM_WORLD);
  test_loc(MPI_COMM_WORLD);
  test_p2p(MPI_COMM_WORLD);
  test_comms();
  test_errors();
  /* several nonblocking collectives in flight at once */
  {
    int a = rank, b = 0, c2[64], d = rank == 0 ? 42 : 0;
    MPI_Request rq[3];
    MPI_Iallreduce(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[0]);
    MPI_Iallgather(&a, 1, MPI_INT, c2, 1, MPI_INT, MPI_COMM_WORLD, &rq[1]);
    MPI_Ibcast(&d, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq[2]);
    CHECK(MPI_Waitall(3, rq, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitall collectives");
    CHECK(b == size * (size - 1) / 2 && d == 42 && c2[size - 1] == size - 1, "collectives in flight: %d %d", b, d);
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("mpi_test: %d ranks, %d checks on rank 0, %d failures in all\n", size, checks, total);
  CHECK(MPI_Finalize() == MPI_SUCCESS, "finalize");
  MPI_Finalized(&flag);
  return total || !flag ? 1 : 0;
}
