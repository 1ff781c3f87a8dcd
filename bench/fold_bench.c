/* fold_bench.c — fold-bench, the nccl-tests-style collective benchmark: options, the timed sweep, the table and the JSON. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold_bench.h"

/* Method (docs/fold-bench.md):
 *   for each collective section (one per algorithm with -a all) and size:
 *   for out of place, then in place: one untimed probe call (checked with
 *   --check, and its status agreed by every rank, so that an algorithm that
 *   refuses a call is skipped on all ranks together), w warm-up calls, then
 *   `iters` timed calls, each preceded by a barrier and timed alone with
 *   CLOCK_MONOTONIC on every rank. After the loop one fold_allreduce(MAX,
 *   float64) over the per-iteration times gives each iteration's slowest
 *   rank; the row reports the median and p99 of those maxima. The
 *   bookkeeping stays outside the timed region. */

typedef struct options {
  int coll;            /* fb_coll, or -1 for all */
  size_t minb, maxb, factor;
  fold_dtype dtype;
  fold_op op;
  const char *algo;    /* NULL: automatic; "all": every algorithm */
  int iters, warmup, root, check;
  const char *json;
  const char *tune;    /* --tune FILE */
  int coll_given;      /* -c on the command line */
} options;

typedef struct mode_result {
  int ran;            /* 0: not applicable or refused */
  double time_us, algbw, busbw, p99_us;
  long wrong;         /* -1 without --check */
} mode_result;

typedef struct row {
  fb_coll coll;
  const char *algo;
  const char *picked; /* the algorithm the calls ran: forced, or what automatic selection chose for this size */
  size_t bytes, count;
  int root;
  mode_result oop, ip;
  double sum_us;      /* -o sum_exact: the same call with FOLD_SUM (out of place), 0 if not timed */
} row;

/* fold-bench measures the numeric types and their ops: its inputs and
 * checks are numbers (the pair types and MINLOC/MAXLOC are not offered). */
#define FB_NDTYPES (FOLD_FLOAT64 + 1)
#define FB_NOPS (FOLD_SUM_EXACT + 1) /* minloc/maxloc are named but refused (fb_op_valid) */
static const char *const dtype_names[FB_NDTYPES] = {
  "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64"};
static const char *const op_names[FB_NOPS] = {"sum", "prod", "min", "max", "avg", "band", "bor", "bxor",
                                               "minloc", "maxloc", "sum_exact"};

const char *fb_op_name(fold_op op) { return (unsigned)op < FB_NOPS ? op_names[op] : "user"; }

/* ---- options ------------------------------------------------------------ */

static void usage(FILE *f) {
  fprintf(f,
          "usage: fold-bench [options]   (run under a launcher: foldrun -n N fold-bench ...)\n"
          "  -c COLL    allreduce broadcast reduce reduce_scatter allgather gather scatter\n"
          "             alltoall barrier, or all (default allreduce)\n"
          "  -b SIZE    smallest size in bytes (default 8); K, M, G suffixes are powers of 1024\n"
          "  -e SIZE    largest size in bytes (default 64M)\n"
          "  -f FACTOR  size step factor, an integer >= 2 (default 2)\n"
          "  -d DTYPE   int8 uint8 int32 uint32 int64 uint64 float16 bfloat16 float32 float64\n"
          "             (default float32)\n"
          "  -o OP      sum prod min max avg band bor bxor sum_exact (default sum; sum_exact also\n"
          "             times sum per size and prints the ratio, float32/float64 only)\n"
          "  -a ALGO    an algorithm of the collective (docs/collectives.md), auto (default),\n"
          "             or all: one table section per algorithm\n"
          "  -n ITERS   timed iterations per size (default 20)\n"
          "  -w ITERS   warm-up iterations per size (default 5)\n"
          "  -r ROOT    root of broadcast, reduce, gather, scatter (default 0)\n"
          "  --check    verify every result against a local reference; count wrong elements\n"
          "  --json F   rank 0 also writes every row to file F as JSON (-o sum_exact: with\n"
          "             the sum time and the sum_exact/sum ratio of each row)\n"
          "  --user-loop  end each timed iteration with an 8 B MAX allreduce of its time\n"
          "             (barrier, call, allreduce: a user's timing loop) instead of one\n"
          "             allreduce of all the times after the loop\n"
          "  --tune F   time every algorithm per size and write the fastest as FOLD_RULES\n"
          "             rules for this rank count and transport into F (kept: F's other\n"
          "             rules); -c defaults to every collective with several algorithms\n"
          "  -h         this help\n"
          "Size: nccl-tests convention (allgather/gather: gathered total; reduce_scatter,\n"
          "scatter: whole send buffer; alltoall: one rank's buffer). Columns: docs/fold-bench.md.\n");
}

/* This rank's number as a launcher gives it (fold_init's variables), or
 * NULL when no launcher started us. */
static const char *launcher_rank(void) {
  static const char *const vars[] = {"FOLD_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v) return v;
  }
  return NULL;
}

/* Rank 0 alone speaks before fold_init. */
static int quiet_rank(void) {
  const char *r = launcher_rank();
  return r != NULL && strcmp(r, "0") != 0;
}

static int bad(const char *fmt, const char *arg) {
  if (!quiet_rank()) {
    fprintf(stderr, "fold-bench: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    usage(stderr);
  }
  return 2;
}

static int parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  if (*s < '0' || *s > '9') return -1;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno) return -1;
  unsigned shift = 0;
  switch (*end) {
  case 'K': case 'k': shift = 10, end++; break;
  case 'M': case 'm': shift = 20, end++; break;
  case 'G': case 'g': shift = 30, end++; break;
  default: break;
  }
  if (*end != '\0' || v > (SIZE_MAX >> shift)) return -1;
  *out = (size_t)v << shift;
  return 0;
}

static int parse_int(const char *s, int lo, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end != '\0' || v < lo || v > 1000000000) return -1;
  *out = (int)v;
  return 0;
}

static int find_name(const char *s, const char *const *names, int count) {
  for (int i = 0; i < count; i++)
    if (strcmp(s, names[i]) == 0) return i;
  return -1;
}

static int has_algo(fb_coll c, const char *algo) {
  for (int i = 0; i < FB_MAX_ALGOS && fb_colls[c].algos[i]; i++)
    if (strcmp(fb_colls[c].algos[i], algo) == 0) return 1;
  return 0;
}

/* Returns 0 to run, 1 after -h, 2 for a bad command line. */
static int parse_args(int argc, char **argv, options *o) {
  *o = (options){.coll = FB_ALLREDUCE, .minb = 8, .maxb = 64u << 20, .factor = 2, .dtype = FOLD_FLOAT32,
                 .op = FOLD_SUM, .iters = 20, .warmup = 5};
  static const struct option longs[] = {
    {"check", no_argument, NULL, 'C'}, {"json", required_argument, NULL, 'J'}, {"help", no_argument, NULL, 'h'},
    {"tune", required_argument, NULL, 'T'}, {"user-loop", no_argument, NULL, 'U'}, {NULL, 0, NULL, 0}};
  int ch, f;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, ":c:b:e:f:d:o:a:n:w:r:h", longs, NULL)) != -1) {
    switch (ch) {
    case 'c': {
      const char *names[FB_NCOLL];
      for (int i = 0; i < FB_NCOLL; i++) names[i] = fb_colls[i].name;
      o->coll = strcmp(optarg, "all") == 0 ? -1 : find_name(optarg, names, FB_NCOLL);
      if (o->coll == -1 && strcmp(optarg, "all") != 0) return bad("unknown collective \"%s\"", optarg);
      o->coll_given = 1;
      break;
    }
    case 'b':
      if (parse_size(optarg, &o->minb) || o->minb == 0) return bad("bad -b size \"%s\" (want >= 1)", optarg);
      break;
    case 'e':
      if (parse_size(optarg, &o->maxb) || o->maxb == 0) return bad("bad -e size \"%s\" (want >= 1)", optarg);
      break;
    case 'f':
      if (parse_int(optarg, 2, &f)) return bad("bad -f factor \"%s\" (want an integer >= 2)", optarg);
      o->factor = (size_t)f;
      break;
    case 'd':
      if ((f = find_name(optarg, dtype_names, FB_NDTYPES)) < 0) return bad("unknown dtype \"%s\"", optarg);
      o->dtype = (fold_dtype)f;
      break;
    case 'o':
      if ((f = find_name(optarg, op_names, FB_NOPS)) < 0) return bad("unknown op \"%s\"", optarg);
      o->op = (fold_op)f;
      break;
    case 'a': o->algo = strcmp(optarg, "auto") == 0 ? NULL : optarg; break;
    case 'n':
      if (parse_int(optarg, 1, &o->iters)) return bad("bad -n iterations \"%s\" (want >= 1)", optarg);
      break;
    case 'w':
      if (parse_int(optarg, 0, &o->warmup)) return bad("bad -w warm-up \"%s\" (want >= 0)", optarg);
      break;
    case 'r':
      if (parse_int(optarg, 0, &o->root)) return bad("bad -r root \"%s\" (want >= 0)", optarg);
      break;
    case 'C': o->check = 1; break;
    case 'U': fb_user_loop = 1; break;
    case 'J': o->json = optarg; break;
    case 'T':
      if (*optarg == '\0') return bad("--tune needs a file name%s", "");
      o->tune = optarg;
      break;
    case 'h':
      if (!quiet_rank()) usage(stdout);
      return 1;
    case ':': return bad("option %s needs a value", argv[optind - 1]);
    default: return bad("unknown option %s", argv[optind - 1]);
    }
  }
  if (optind < argc) return bad("unexpected argument \"%s\"", argv[optind]);
  if (o->minb > o->maxb) return bad("-b is larger than -e%s", "");
  if (o->tune) {
    /* --tune times every algorithm itself, out of place and unchecked */
    if (o->algo) return bad("--tune times every algorithm; it takes no -a %s", o->algo);
    if (o->json || o->check) return bad("--tune takes neither --json nor --check%s", "");
    if (!o->coll_given) o->coll = -1;
  }
  int any_reduce = 0, any_algo = 0;
  for (int c = 0; c < FB_NCOLL; c++) {
    if (o->coll != -1 && o->coll != c) continue;
    any_reduce |= fb_colls[c].reduces;
    any_algo |= o->algo == NULL || strcmp(o->algo, "all") == 0 || has_algo((fb_coll)c, o->algo);
  }
  if (any_reduce && !fb_op_valid(o->op, o->dtype)) return bad("op %s does not take this dtype (bitwise ops: integers; sum_exact: float32, float64; no minloc/maxloc)", op_names[o->op]);
  if (!any_algo) return bad("no such algorithm \"%s\" for the collective (docs/collectives.md)", o->algo);
  return 0;
}

/* ---- measuring ---------------------------------------------------------- */

/* Time k in one mode (out of place or in place). Every rank returns the same
 * `ran` and `wrong`; the times are meaningful on rank 0. */
static mode_result measure(const fb_call *k, const options *o, fold_comm *comm, double *t, double *tmax) {
  mode_result m = {.wrong = -1};
  /* probe: untimed, checked, and agreed on (a refusal must skip on all ranks) */
  if (o->check) fb_fill(k);
  fb_force(k, comm, 1);
  int rc = fb_run(k, comm), agreed;
  fb_force(k, comm, 0);
  if (rc != FOLD_OK && rc != FOLD_EINVAL) fb_die(comm, fb_colls[k->coll].name, rc);
  int r2 = fold_allreduce(&rc, &agreed, 1, FOLD_INT32, FOLD_MIN, comm);
  if (r2 != FOLD_OK) fb_die(comm, "fold_allreduce (status)", r2);
  if (agreed != FOLD_OK) {
    if (k->rank == 0)
      printf("# %s (%s, %zu B): refused by fold: %s\n", fb_colls[k->coll].name, k->in_place ? "in place" : "out of place",
             k->bytes, rc != FOLD_OK ? fold_comm_last_error(comm) : "on another rank");
    if (k->rank == 0) fflush(stdout);
    return m;
  }
  if (o->check) {
    int64_t w = fb_check(k), wsum = 0;
    if ((r2 = fold_allreduce(&w, &wsum, 1, FOLD_INT64, FOLD_SUM, comm)) != FOLD_OK)
      fb_die(comm, "fold_allreduce (#wrong)", r2);
    m.wrong = (long)wsum;
  }
  double med = fb_time_calls(k, comm, o->warmup, o->iters, t, tmax);
  int i = o->iters;
  int p99 = (int)ceil(0.99 * i) - 1;
  m.ran = 1;
  m.time_us = med * 1e6;
  m.p99_us = tmax[p99 < 0 ? 0 : p99] * 1e6;
  m.algbw = med > 0 ? (double)k->bytes / med / 1e9 : 0;
  m.busbw = m.algbw * fb_bus_factor(k->coll, k->n);
  return m;
}

/* ---- output ------------------------------------------------------------- */

static const char *transport_name(void) {
  const char *t = getenv("FOLD_TRANSPORT");
  if (launcher_rank() == NULL) return "inproc";
  return t && *t ? t : "auto";
}

static void print_header(const options *o, fb_coll c, const char *algo, int n) {
  printf("#\n# fold-bench\n");
  printf("# collective: %s\n", fb_colls[c].name);
  printf("# algorithm: %s\n", algo ? algo : "auto");
  printf("# ranks: %d\n# transport: %s\n", n, transport_name());
  printf("# dtype: %s\n# op: %s\n", c == FB_BARRIER ? "none" : dtype_names[o->dtype],
         fb_colls[c].reduces ? op_names[o->op] : "none");
  printf("# iterations: %d, warm-up: %d, check: %s, root: %d%s\n", o->iters, o->warmup, o->check ? "on" : "off",
         o->root, fb_user_loop ? ", user loop" : "");
  printf("#%66s%-42s%s\n", "", "out-of-place", "in-place");
  printf("#%11s  %12s  %8s  %6s  %6s  %10s  %8s  %8s  %6s  %10s  %8s  %8s  %6s  %10s  %s\n", "size", "count", "type",
         "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "p99", "algorithm");
  printf("#%11s  %12s  %8s  %6s  %6s  %10s  %8s  %8s  %6s  %10s  %8s  %8s  %6s  %10s\n", "(B)", "(elements)", "", "",
         "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)");
}

static void print_mode(const mode_result *m) {
  if (!m->ran) {
    printf("  %10s  %8s  %8s  %6s", "N/A", "N/A", "N/A", "N/A");
    return;
  }
  printf("  %10.2f  %8.2f  %8.2f", m->time_us, m->algbw, m->busbw);
  if (m->wrong < 0)
    printf("  %6s", "N/A");
  else
    printf("  %6ld", m->wrong);
}

static void print_row(const options *o, const row *r) {
  const fb_coll_info *ci = &fb_colls[r->coll];
  printf("%12zu  %12zu  %8s  %6s  %6d", r->bytes, r->count, r->coll == FB_BARRIER ? "none" : dtype_names[o->dtype],
         ci->reduces ? op_names[o->op] : "none", ci->rooted ? r->root : -1);
  print_mode(&r->oop);
  print_mode(&r->ip);
  printf("  %10.2f  %s\n", r->oop.ran ? r->oop.p99_us : r->ip.p99_us, r->picked ? r->picked : "-");
  fflush(stdout); /* one write per line: rows stay whole when stderr joins stdout */
}

static void json_mode(FILE *f, const char *pre, const mode_result *m) {
  if (!m->ran) {
    fprintf(f, ", \"%s_time_us\": null, \"%s_algbw\": null, \"%s_busbw\": null, \"%s_wrong\": null", pre, pre, pre, pre);
    return;
  }
  fprintf(f, ", \"%s_time_us\": %.3f, \"%s_algbw\": %.6f, \"%s_busbw\": %.6f, \"%s_wrong\": %ld", pre, m->time_us, pre,
          m->algbw, pre, m->busbw, pre, m->wrong);
}

static int write_json(const options *o, int n, const row *rows, size_t nrows, double avg) {
  FILE *f = fopen(o->json, "w");
  if (f == NULL) {
    fprintf(stderr, "fold-bench: cannot write %s: %s\n", o->json, strerror(errno));
    return -1;
  }
  fprintf(f, "{\n  \"tool\": \"fold-bench\", \"ranks\": %d, \"transport\": \"%s\", \"dtype\": \"%s\", \"op\": \"%s\",\n",
          n, transport_name(), dtype_names[o->dtype], op_names[o->op]);
  fprintf(f, "  \"iterations\": %d, \"warmup\": %d, \"check\": %s, \"user_loop\": %s, \"avg_busbw\": %.6f,\n  \"rows\": [",
          o->iters, o->warmup, o->check ? "true" : "false", fb_user_loop ? "true" : "false", avg);
  for (size_t i = 0; i < nrows; i++) {
    const row *r = &rows[i];
    const fb_coll_info *ci = &fb_colls[r->coll];
    fprintf(f, "%s\n    {\"collective\": \"%s\", \"algorithm\": \"%s\", \"size\": %zu, \"count\": %zu, ", i ? "," : "",
            ci->name, r->algo ? r->algo : "auto", r->bytes, r->count);
    fprintf(f, "\"selected\": \"%s\", ", r->picked ? r->picked : "");
    fprintf(f, "\"type\": \"%s\", \"redop\": \"%s\", \"root\": %d", r->coll == FB_BARRIER ? "none" : dtype_names[o->dtype],
            ci->reduces ? op_names[o->op] : "none", ci->rooted ? r->root : -1);
    json_mode(f, "oop", &r->oop);
    json_mode(f, "ip", &r->ip);
    fprintf(f, ", \"p99_us\": %.3f", r->oop.ran ? r->oop.p99_us : r->ip.p99_us);
    /* what exactness costs: the out-of-place time of the same call with
     * FOLD_SUM, and sum_exact's time over it (the rows of -o sum_exact) */
    if (o->op == FOLD_SUM_EXACT && ci->reduces && r->oop.ran && r->sum_us > 0)
      fprintf(f, ", \"sum_time_us\": %.3f, \"sum_exact_ratio\": %.4f", r->sum_us, r->oop.time_us / r->sum_us);
    else if (o->op == FOLD_SUM_EXACT && ci->reduces)
      fprintf(f, ", \"sum_time_us\": null, \"sum_exact_ratio\": null");
    fprintf(f, "}");
  }
  fprintf(f, "\n  ]\n}\n");
  return fclose(f) == 0 ? 0 : -1;
}

/* ---- the sweep ---------------------------------------------------------- */

typedef struct bench {
  options o;
  fold_comm *comm;
  int rank, n;
  char *sbuf, *rbuf;
  double *t, *tmax;
  row *rows;
  size_t nrows, caprows;
  double t_start, bw_sum;
  double progress_after; /* seconds of run before progress lines (FOLD_BENCH_PROGRESS_AFTER, default 2) */
  int bw_count;
  long wrong_total;
} bench;

static void add_row(bench *b, const row *r) {
  if (b->nrows == b->caprows) {
    size_t cap = b->caprows ? 2 * b->caprows : 64;
    row *p = realloc(b->rows, cap * sizeof *p);
    if (p == NULL) return; /* the table is printed already; only the JSON loses rows */
    b->rows = p, b->caprows = cap;
  }
  b->rows[b->nrows++] = *r;
}

/* The sweep: minb, minb*f, ... up to maxb (s*f <= maxb iff s <= maxb/f). */
static size_t count_sizes(const options *o) {
  size_t k = 1;
  for (size_t s = o->minb; s <= o->maxb / o->factor; s *= o->factor) k++;
  return k;
}

static void run_section(bench *b, fb_coll c, const char *algo) {
  if (b->rank == 0) print_header(&b->o, c, algo, b->n);
  size_t nsizes = c == FB_BARRIER ? 1 : count_sizes(&b->o), idx = 0;
  for (size_t s = b->o.minb; idx < nsizes; s *= b->o.factor, idx++) {
    fb_call k = {.coll = c, .dtype = b->o.dtype, .op = b->o.op, .root = b->o.root, .rank = b->rank, .n = b->n,
                 .sbuf = b->sbuf, .rbuf = b->rbuf, .algo = algo};
    if (!fb_shape(&k, s)) continue;
    if (b->rank == 0 && fb_now() - b->t_start >= b->progress_after) { /* progress: a comment line of the table, whole */
      printf("# running %s %s: %zu B (%zu/%zu), %.0f s\n", fb_colls[c].name, algo ? algo : "auto", k.bytes, idx + 1,
             nsizes, fb_now() - b->t_start);
      fflush(stdout);
    }
    row r = {.coll = c, .algo = algo, .bytes = k.bytes, .root = b->o.root};
    /* the name automatic selection gives this call (local, no communication); a forced one stays as it is */
    r.picked = algo ? algo : fold_comm_get_algo(b->comm, fb_colls[c].name, k.count, k.dtype, k.op);
    r.count = c == FB_BARRIER ? 0 : k.bytes / fold_dtype_size(k.dtype);
    r.oop = measure(&k, &b->o, b->comm, b->t, b->tmax);
    if (fb_colls[c].in_place) {
      k.in_place = 1;
      r.ip = measure(&k, &b->o, b->comm, b->t, b->tmax);
    }
    if (c == FB_BARRIER) r.oop.wrong = -1; /* nothing to check */
    if (!r.oop.ran && !r.ip.ran) continue;
    if (r.oop.wrong > 0) b->wrong_total += r.oop.wrong;
    if (r.ip.wrong > 0) b->wrong_total += r.ip.wrong;
    if (c != FB_BARRIER) {
      if (r.oop.ran) b->bw_sum += r.oop.busbw, b->bw_count++;
      if (r.ip.ran) b->bw_sum += r.ip.busbw, b->bw_count++;
    }
    if (b->rank == 0) print_row(&b->o, &r);
    if (k.op == FOLD_SUM_EXACT && r.oop.ran) { /* what exactness costs: the same call with FOLD_SUM */
      k.op = FOLD_SUM;
      k.in_place = 0;
      mode_result plain = measure(&k, &b->o, b->comm, b->t, b->tmax);
      if (plain.ran && plain.time_us > 0) r.sum_us = plain.time_us;
      if (b->rank == 0 && r.sum_us > 0)
        printf("# %zu B: sum_exact %.2f us, sum %.2f us, ratio %.2f\n", k.bytes, r.oop.time_us, plain.time_us,
               r.oop.time_us / plain.time_us);
      fflush(stdout);
    }
    if (b->rank == 0) add_row(b, &r); /* after the ratio: the JSON row carries it */
  }
}

int main(int argc, char **argv) {
  bench b = {0};
  int prc = parse_args(argc, argv, &b.o);
  if (prc == 1) return 0;
  if (prc != 0) return prc;

  /* Started without a launcher: one rank, in this process. */
  int rc = launcher_rank() ? fold_init(&b.comm) : fold_comm_init_threads(1, &b.comm);
  if (rc != FOLD_OK) {
    fprintf(stderr, "fold-bench: fold_init failed: %s (%s)\n", fold_strerror(rc), fold_comm_last_error(NULL));
    return 1;
  }
  b.rank = fold_comm_rank(b.comm);
  b.n = fold_comm_size(b.comm);
  if (b.o.root >= b.n) {
    if (b.rank == 0) fprintf(stderr, "fold-bench: root %d is not a rank (n = %d)\n", b.o.root, b.n);
    fold_comm_destroy(b.comm);
    return 2;
  }

  /* Buffers: allocated once at the largest size of the sweep, touched now so
   * that no page fault lands in a timed call. */
  size_t largest = b.o.minb;
  for (size_t i = count_sizes(&b.o); i > 1; i--) largest *= b.o.factor;
  size_t cap = (largest + 4095) / 4096 * 4096;
  if (posix_memalign((void **)&b.sbuf, 4096, cap) || posix_memalign((void **)&b.rbuf, 4096, cap)) {
    fprintf(stderr, "fold-bench: rank %d: cannot allocate 2 x %zu bytes\n", b.rank, cap);
    return 1;
  }
  memset(b.sbuf, 0, cap);
  memset(b.rbuf, 0, cap);
  b.t = calloc((size_t)b.o.iters, sizeof(double));
  b.tmax = calloc((size_t)b.o.iters, sizeof(double));
  if (b.t == NULL || b.tmax == NULL) return 1;

  b.t_start = fb_now();
  const char *pa = getenv("FOLD_BENCH_PROGRESS_AFTER");
  char *pend = NULL;
  b.progress_after = pa && *pa ? strtod(pa, &pend) : 2.0;
  if (pa && *pa && (*pend || !(b.progress_after >= 0))) b.progress_after = 2.0; /* not a number of seconds: the default */
  if (b.o.tune) {
    fb_tune_args ta = {.path = b.o.tune, .coll = b.o.coll, .minb = b.o.minb, .maxb = b.o.maxb, .factor = b.o.factor,
                       .dtype = b.o.dtype, .op = b.o.op, .iters = b.o.iters, .warmup = b.o.warmup, .root = b.o.root};
    int status = fb_tune(&ta, b.comm, b.sbuf, b.rbuf);
    if ((rc = fold_barrier(b.comm)) != FOLD_OK) fb_die(b.comm, "fold_barrier", rc);
    fold_comm_destroy(b.comm);
    free(b.sbuf);
    free(b.rbuf);
    free(b.t);
    free(b.tmax);
    return status;
  }
  for (int c = 0; c < FB_NCOLL; c++) {
    if (b.o.coll != -1 && b.o.coll != c) continue;
    if (b.o.algo == NULL) {
      run_section(&b, (fb_coll)c, NULL);
    } else if (strcmp(b.o.algo, "all") == 0) {
      for (int a = 0; a < FB_MAX_ALGOS && fb_colls[c].algos[a]; a++) run_section(&b, (fb_coll)c, fb_colls[c].algos[a]);
    } else if (has_algo((fb_coll)c, b.o.algo)) {
      run_section(&b, (fb_coll)c, b.o.algo);
    }
  }

  double avg = b.bw_count ? b.bw_sum / b.bw_count : 0;
  int status = 0;
  if (b.rank == 0) {
    printf("#\n");
    if (b.o.check) printf("# Wrong elements : %ld %s\n", b.wrong_total, b.wrong_total ? "ERROR" : "OK");
    printf("# Avg bus bandwidth : %.6f\n#\n", avg);
    fflush(stdout);
    if (b.o.json && write_json(&b.o, b.n, b.rows, b.nrows, avg) != 0) status = 1;
  }
  if (b.wrong_total > 0) status = 1;
  /* Leave together: a launcher stops the job when a rank exits non-zero,
   * which must not cut rank 0's table short. */
  if ((rc = fold_barrier(b.comm)) != FOLD_OK) fb_die(b.comm, "fold_barrier", rc);
  fold_comm_destroy(b.comm);
  free(b.sbuf);
  free(b.rbuf);
  free(b.t);
  free(b.tmax);
  free(b.rows);
  return status;
}
