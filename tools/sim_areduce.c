/* sim_areduce.c — fold-sim areduce-full / areduce-partial: the LuNA thesis' emulator experiments, run by the real fold_areduce on the sim transport. */
#include "sim_areduce.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fold.h"

/* The thesis' cost model in the simulator's terms (1 tick = 1 us):
 * T_lat is the latency; T_bth, the time to receive one fragment, is the
 * byte time of a message times its length (a 16-byte header and one
 * partial result: xcfg.msg_bytes); T_op is op_overhead, charged per
 * combine. The simulator also makes the sender's link busy for T_bth (the
 * thesis charges only the receiver): see docs/areduce.md. */
#define US 1e-6
#define HDR_BYTES 16.0 /* fold_areduce's message header (src/areduce/areduce.c) */
/* FOLD_SUM_EXACT's partial results travel as accumulators of this many
 * bytes per element (docs/areduce.md, src/op/exact.c): T_bth stays per
 * message whatever the op, so the byte time follows the message's size. */
#define EXACT_ACC_F64 544.0
#define EXACT_ACC_F32 88.0
#define MAX_RUNS 256

/* What the fragments hold and how they combine (--op, --dtype). int64:
 * {generation time in ns, 1}; float32/float64: {generation time in us, 1,
 * x}, x an adversarial term (x_term) whose sum shows whether the result
 * depends on the order of combination. */
typedef struct xcfg {
  fold_op op;
  fold_dtype dtype;
  size_t count;
  double msg_bytes;
  int terms;                /* --terms: print every x and the exact result (exact_fsum.py's line) */
  uint64_t xbits[MAX_RUNS]; /* the sum of the x terms of each run, as bits (float32: its float's bits) */
  double xval[MAX_RUNS];
  int nruns;
} xcfg;

static uint64_t rng(uint64_t *s) {
  uint64_t x = (*s += 0x9e3779b97f4a7c15ULL);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* The x term of rank r's fragment j (n ranks): fragment 0 carries a huge
 * H_r, fragment 1 -H_(r-1) (so the huge terms cancel exactly, but on
 * different ranks: a rounded sum loses the small terms it met while one
 * was in it), fragment 2 a subnormal, the others small terms of random
 * sign across 80 binades. Exactly representable in the dtype. */
static double x_term(fold_dtype dt, int n, int r, int j) {
  int f32 = dt == FOLD_FLOAT32;
  uint64_t s = 0x5eed0000ULL + (uint64_t)(j == 1 ? (r + n - 1) % n : r) * 1000003ULL + (uint64_t)(j == 1 ? 0 : j);
  double u = (double)(rng(&s) >> 11) / 9007199254740992.0, v;
  if (j == 0 || j == 1)
    v = (j == 0 ? 1 : -1) * ldexp(1 + u, f32 ? 60 : 90);
  else if (j == 2)
    v = ldexp(u, f32 ? -149 + 20 : -1074 + 50); /* subnormal */
  else
    v = ((rng(&s) & 1) ? -1 : 1) * ldexp(1 + u, (int)(rng(&s) % 81) - 40);
  return f32 ? (double)(float)v : v;
}

typedef struct gen {
  fold_sim *sim;
  fold_areduce *ar;
  const xcfg *x;
  int rank, n, j, left;
  double t, gmin, gmax;
  uint64_t seed;
} gen;

/* Make one fragment (its generation time, 1, and for floats its x term)
 * and schedule the next. */
static void gen_fire(void *p) {
  gen *g = p;
  if (g->left > 0) {
    int64_t fi[2] = {(int64_t)llround(g->t * 1e9), 1};
    double fd[3] = {g->t / US, 1, x_term(g->x->dtype, g->n, g->rank, g->j)};
    float ff[3] = {(float)fd[0], 1, (float)fd[2]};
    const void *f = g->x->dtype == FOLD_INT64 ? (const void *)fi : g->x->dtype == FOLD_FLOAT64 ? (const void *)fd
                                                                                              : (const void *)ff;
    fold_areduce_contribute(g->ar, f);
    g->j++;
    g->left--;
  }
  if (g->left == 0) {
    fold_areduce_done(g->ar);
    g->left = -1;
    return;
  }
  double u = (double)(rng(&g->seed) >> 11) / 9007199254740992.0;
  g->t += g->gmin + u * (g->gmax - g->gmin);
  fold_sim_at(g->sim, g->t, gen_fire, g);
}

/* What the target has seen: alpha(1000) over time (partial runs). */
/* The target's newest result as {generation times summed in ns, fragments
 * counted by the data, x sum}; fold_areduce_result's own count in *nf. */
static int read_result(fold_areduce *ar, const xcfg *x, double v[3], uint64_t *nf, int *fin) {
  int64_t oi[2] = {0, 0};
  double od[3] = {0, 0, 0};
  float of[3] = {0, 0, 0};
  void *o = x->dtype == FOLD_INT64 ? (void *)oi : x->dtype == FOLD_FLOAT64 ? (void *)od : (void *)of;
  int rc = fold_areduce_result(ar, o, nf, fin);
  if (x->dtype == FOLD_INT64)
    v[0] = (double)oi[0], v[1] = (double)oi[1], v[2] = 0;
  else if (x->dtype == FOLD_FLOAT64)
    v[0] = od[0] * 1e3, v[1] = od[1], v[2] = od[2];
  else
    v[0] = (double)of[0] * 1e3, v[1] = of[1], v[2] = of[2];
  return rc;
}

typedef struct watch {
  fold_sim *sim;
  fold_areduce *ar;
  const xcfg *x;
  double start, period, end;
  double fin_t;     /* when the target first saw its result final */
  uint64_t nf;      /* fragments seen so far */
  double gsum;      /* their generation times summed (ns) */
  /* batches seen, newest last: fragments and summed lag (ns) */
  uint64_t *bk;
  double *blag;
  int nb, cap, head;
  uint64_t win_k;   /* fragments in the window batches[head..nb) */
  double win_lag;
  FILE *csv;
  const char *label;
  double *alpha_t, *alpha_v;
  int na, cap_a;
} watch;

static void watch_fire(void *p) {
  watch *w = p;
  double now = fold_sim_time(w->sim);
  double out[3];
  uint64_t nf = 0;
  int fin = 0;
  read_result(w->ar, w->x, out, &nf, &fin);
  if (fin && w->fin_t < 0)
    w->fin_t = now;
  if (nf > w->nf) {
    uint64_t k = nf - w->nf;
    double gs = out[0] - w->gsum;
    double lag = (double)k * now * 1e9 - gs;
    if (w->nb == w->cap) {
      w->cap = w->cap ? 2 * w->cap : 256;
      w->bk = realloc(w->bk, (size_t)w->cap * sizeof *w->bk);
      w->blag = realloc(w->blag, (size_t)w->cap * sizeof *w->blag);
    }
    w->bk[w->nb] = k;
    w->blag[w->nb++] = lag;
    w->win_k += k;
    w->win_lag += lag;
    /* keep the newest ~1000 fragments: drop whole old batches while the
     * rest still holds 1000 */
    while (w->head < w->nb - 1 && w->win_k - w->bk[w->head] >= 1000) {
      w->win_k -= w->bk[w->head];
      w->win_lag -= w->blag[w->head];
      w->head++;
    }
    w->nf = nf;
    w->gsum = out[0];
  }
  if (w->win_k > 0) {
    double alpha = w->win_lag / (double)w->win_k / 1e3; /* us */
    if (w->csv)
      fprintf(w->csv, "%s,%.1f,%.3f,%llu\n", w->label, now / US, alpha, (unsigned long long)nf);
    if (w->na == w->cap_a) {
      w->cap_a = w->cap_a ? 2 * w->cap_a : 256;
      w->alpha_t = realloc(w->alpha_t, (size_t)w->cap_a * sizeof *w->alpha_t);
      w->alpha_v = realloc(w->alpha_v, (size_t)w->cap_a * sizeof *w->alpha_v);
    }
    w->alpha_t[w->na] = now;
    w->alpha_v[w->na++] = alpha;
  }
  if (!fin && now + w->period <= w->end)
    fold_sim_at(w->sim, now + w->period, watch_fire, w);
}

/* One run: n ranks, nf fragments each at intervals in [gmin, gmax] us.
 * Returns the virtual time the run ended (the target's final result),
 * or a negative number if it failed. */
static double run(xcfg *x, int n, int degree, fold_areduce_mode mode, double t_wait_us, double lat_us, double bth_us,
                  double op_us, int nf, double gmin_us, double gmax_us, uint64_t seed, watch *w) {
  fold_sim_params p;
  fold_sim_params_default(&p);
  p.latency = lat_us * US;
  p.byte_time = bth_us * US / x->msg_bytes;
  p.op_time = 0;
  p.op_overhead = op_us * US;
  fold_sim *sim;
  fold_comm **c = calloc((size_t)n, sizeof *c);
  gen *g = calloc((size_t)n, sizeof *g);
  double t_res = -1;
  if (fold_sim_create(n, &p, &sim, c) != FOLD_OK)
    goto out;
  for (int r = 0; r < n; r++) {
    if (fold_areduce_create(c[r], x->count, x->dtype, x->op, 0, degree, mode, t_wait_us * US, &g[r].ar) != FOLD_OK) {
      fprintf(stderr, "fold-sim: fold_areduce_create: %s\n", fold_comm_last_error(c[r]));
      goto out_sim;
    }
    g[r] = (gen){sim, g[r].ar, x, r, n, 0, nf, 0, gmin_us * US, gmax_us * US, seed * 7919 + (uint64_t)r};
    double u = (double)(rng(&g[r].seed) >> 11) / 9007199254740992.0;
    g[r].t = g[r].gmin + u * (g[r].gmax - g[r].gmin);
    fold_sim_at(sim, g[r].t, gen_fire, &g[r]);
  }
  if (w) {
    w->sim = sim;
    w->ar = g[0].ar;
    w->x = x;
    fold_sim_at(sim, w->start, watch_fire, w);
  }
  if (fold_sim_run(sim) != FOLD_OK) {
    fprintf(stderr, "fold-sim: %s\n", fold_comm_last_error(c[0]));
    goto out_sim;
  }
  double res[3];
  uint64_t got = 0, want = (uint64_t)n * (uint64_t)nf;
  int fin = 0;
  /* complete: the library's count and the data's own count (exact in
   * every dtype: small integers) */
  if (read_result(g[0].ar, x, res, &got, &fin) == FOLD_OK && fin && got == want && res[1] == (double)want) {
    t_res = w && w->fin_t >= 0 ? w->fin_t : fold_sim_time(sim);
    if (x->nruns < MAX_RUNS) {
      double v = res[2];
      float vf = (float)v;
      uint64_t bits = 0;
      uint32_t b32;
      if (x->dtype == FOLD_FLOAT32)
        memcpy(&b32, &vf, 4), bits = b32;
      else
        memcpy(&bits, &v, 8);
      x->xval[x->nruns] = v;
      x->xbits[x->nruns++] = bits;
    }
  } else
    fprintf(stderr, "fold-sim: the target has %llu of %llu fragments (counted by the data: %.0f; final %d)\n",
            (unsigned long long)got, (unsigned long long)want, res[1], fin);
out_sim:
  for (int r = 0; r < n; r++) fold_areduce_destroy(g[r].ar);
  fold_sim_destroy(sim);
out:
  free(c);
  free(g);
  return t_res;
}

static int gnuplot(const char *script) {
  FILE *g = popen("gnuplot 2>/dev/null", "w");
  if (g == NULL)
    return 1;
  fputs(script, g);
  return pclose(g) != 0;
}

static const char *dtype_name(fold_dtype dt) {
  return dt == FOLD_INT64 ? "int64" : dt == FOLD_FLOAT32 ? "float32" : "float64";
}

/* Floats: did every run give the same x sum? FOLD_SUM_EXACT must (the
 * correctly rounded sum, whatever the tree); a rounded sum usually does
 * not. With --terms, one line for tests/op/exact_fsum.py: every x term and
 * the sum, which it checks against math.fsum (float32: the exact rational
 * sum rounded once). Returns 1 if FOLD_SUM_EXACT's runs disagree. */
static int x_report(const xcfg *x, int n, int nf) {
  if (x->dtype == FOLD_INT64 || x->nruns == 0)
    return 0;
  int distinct = 0;
  for (int i = 0; i < x->nruns; i++) {
    int seen = 0;
    for (int k = 0; k < i && !seen; k++) seen = x->xbits[k] == x->xbits[i];
    distinct += !seen;
  }
  printf("# %s %s: the x sum of %d runs: %d distinct result%s (the first: %a)\n", x->op == FOLD_SUM_EXACT ? "sum_exact" : "sum",
         dtype_name(x->dtype), x->nruns, distinct, distinct == 1 ? "" : "s", x->xval[0]);
  if (x->terms) {
    printf("%s", x->dtype == FOLD_FLOAT32 ? "f32" : "f64");
    for (int r = 0; r < n; r++)
      for (int j = 0; j < nf; j++) printf(" %a", x_term(x->dtype, n, r, j));
    printf(" = %a\n", x->xval[0]);
  }
  if (x->op == FOLD_SUM_EXACT && distinct != 1) {
    fprintf(stderr, "fold-sim: FOLD_SUM_EXACT gave %d different results over %d runs\n", distinct, x->nruns);
    return 1;
  }
  return 0;
}

static int full(xcfg *x, const char *csv, const char *png) {
  const double lats[] = {1, 3, 10, 30, 100, 300, 1000, 3000};
  const int nl = 8, dmax = 30, n = 31;
  FILE *f = csv ? fopen(csv, "w") : NULL;
  if (csv && !f) {
    fprintf(stderr, "fold-sim: cannot write %s\n", csv);
    return 1;
  }
  if (f) fprintf(f, "t_lat_us,degree,t_res_us\n");
  printf("# areduce-full: N = %d, T_op = T_bth = 10, N_F = 100, T_G in [10, 11] (us); op %s, dtype %s\n", n,
         x->op == FOLD_SUM_EXACT ? "sum_exact" : "sum", dtype_name(x->dtype));
  printf("%8s %10s %12s\n", "T_lat", "best_deg", "T_res_best");
  int rc = 0, bestdeg[8] = {0};
  for (int l = 0; l < nl; l++) {
    double best = INFINITY;
    int bestd = 0;
    for (int d = 1; d <= dmax; d++) {
      /* T_res: when the target's result is final, seen by polling it every
       * 1 us from the earliest time the last fragment can appear (the run
       * itself ends later: create's agreement check, sends completing) */
      watch w = {.start = 100 * 10 * US, .period = 1 * US, .end = 1.0, .fin_t = -1};
      double t = run(x, n, d, FOLD_AREDUCE_FULL, 0, lats[l], 10, 10, 100, 10, 11, 1, &w);
      free(w.bk), free(w.blag), free(w.alpha_t), free(w.alpha_v);
      if (t < 0) {
        rc = 1;
        continue;
      }
      if (f) fprintf(f, "%g,%d,%.3f\n", lats[l], d, t / US);
      if (t < best) best = t, bestd = d;
    }
    printf("%8g %10d %12.1f\n", lats[l], bestd, best / US);
    bestdeg[l] = bestd;
  }
  if (f && fclose(f) != 0) rc = 1;
  if (f && png) {
    char s[2048];
    snprintf(s, sizeof s,
             "set terminal png size 900,600 noenhanced\nset output '%s'\nset datafile separator ','\n"
             "set title 'areduce-full: T_res against degree (N = 31)'\nset logscale y\nset xlabel 'degree'\n"
             "set ylabel 'T_res (us)'\nset key outside right\n"
             "plot for [L in '1 3 10 30 100 300 1000 3000'] '%s' using ($1 == L+0 ? $2 : 1/0):3 with linespoints "
             "title 'T_lat = '.L\n",
             png, csv);
    if (gnuplot(s)) fprintf(stderr, "fold-sim: gnuplot failed: no PNG\n");
    else printf("# plot: %s\n", png);
    /* figure 4.2: the optimal degree against the latency, next to the
     * first plot (NAME.png -> NAME-optimal.png) */
    char png2[4200];
    size_t len = strlen(png);
    snprintf(png2, sizeof png2, "%.*s-optimal.png", (int)(len > 4 && !strcmp(png + len - 4, ".png") ? len - 4 : len),
             png);
    int k = snprintf(s, sizeof s,
                     "set terminal png size 700,450 noenhanced\nset output '%s'\n"
                     "set title 'areduce-full: optimal degree against T_lat (N = 31)'\nset logscale x\n"
                     "set xlabel 'T_lat (us)'\nset ylabel 'optimal degree'\nset yrange [0:31]\nset key off\n"
                     "$opt << EOD\n",
                     png2);
    for (int l = 0; l < nl && k > 0 && (size_t)k < sizeof s; l++)
      k += snprintf(s + k, sizeof s - (size_t)k, "%g %d\n", lats[l], bestdeg[l]);
    if (k > 0 && (size_t)k < sizeof s)
      snprintf(s + k, sizeof s - (size_t)k, "EOD\nplot $opt using 1:2 with linespoints pt 7\n");
    if (gnuplot(s)) fprintf(stderr, "fold-sim: gnuplot failed: no PNG\n");
    else printf("# plot: %s\n", png2);
  }
  return rc | x_report(x, n, 100);
}

static int partial(xcfg *x, const char *csv, const char *png) {
  const int degs[] = {1, 2, 4, 8, 16, 31}, nd = 6, n = 32, nf = 300;
  const double waits[] = {10, 30, 100, 300, 1000};
  const int nw = 5;
  FILE *f = csv ? fopen(csv, "w") : NULL;
  if (csv && !f) {
    fprintf(stderr, "fold-sim: cannot write %s\n", csv);
    return 1;
  }
  if (f) fprintf(f, "run,t_us,alpha1000_us,fragments\n");
  printf("# areduce-partial: N = %d, T_op = T_bth = T_lat = 10, T_G in [20, 80] (us), %d fragments per rank; op %s, "
         "dtype %s\n", n, nf, x->op == FOLD_SUM_EXACT ? "sum_exact" : "sum", dtype_name(x->dtype));
  printf("# alpha(1000) in us at 25%% / 50%% / 95%% of the generation time; unstable: it keeps growing\n");
  printf("%6s %7s %9s %9s %9s %9s\n", "degree", "t_wait", "a(25%)", "a(50%)", "a(95%)", "verdict");
  char map[6][5];
  int rc = 0;
  double gen_end = nf * 50 * US; /* mean interval 50 us */
  for (int i = 0; i < nd; i++)
    for (int j = 0; j < nw; j++) {
      char label[32];
      snprintf(label, sizeof label, "d%d_w%g", degs[i], waits[j]);
      watch w = {.start = 20 * US, .period = 20 * US, .end = 10.0, .fin_t = -1, .csv = f, .label = label};
      double t = run(x, n, degs[i], FOLD_AREDUCE_PARTIAL, waits[j], 10, 10, 10, nf, 20, 80, 2, &w);
      if (t < 0) rc = 1;
      double a[3] = {NAN, NAN, NAN}, q[3] = {0.25, 0.5, 0.95};
      for (int k = 0; k < 3; k++)
        for (int m = 0; m < w.na; m++)
          if (w.alpha_t[m] <= q[k] * gen_end) a[k] = w.alpha_v[m];
      /* stable: alpha(1000) levels off (the second half grows by less than
       * half the first half's level); unstable: it keeps growing */
      int stable = !(a[2] > 1.5 * a[1] && a[2] - a[1] > 200);
      map[i][j] = stable ? 'S' : 'U';
      printf("%6d %7g %9.0f %9.0f %9.0f %9s\n", degs[i], waits[j], a[0], a[1], a[2], stable ? "stable" : "UNSTABLE");
      free(w.bk), free(w.blag), free(w.alpha_t), free(w.alpha_v);
    }
  printf("# stability map (rows: degree, columns: t_wait 10 30 100 300 1000)\n");
  for (int i = 0; i < nd; i++) {
    printf("%6d   ", degs[i]);
    for (int j = 0; j < nw; j++) printf(" %c", map[i][j]);
    printf("\n");
  }
  if (f && fclose(f) != 0) rc = 1;
  if (f && png) {
    char s[2048];
    snprintf(s, sizeof s,
             "set terminal png size 1000,650 noenhanced\nset output '%s'\nset datafile separator ','\n"
             "set title 'areduce-partial: alpha(1000) over time (N = 32), degree 2 and 31' noenhanced\n"
             "set logscale y\nset xlabel 'virtual time (us)'\nset ylabel 'alpha(1000) (us)'\nset key outside right\n"
             "plot for [R in 'd2_w10 d2_w100 d2_w1000 d31_w10 d31_w100 d31_w1000'] '%s' using "
             "(strcol(1) eq R ? $2 : 1/0):3 with lines title R noenhanced\n",
             png, csv);
    if (gnuplot(s)) fprintf(stderr, "fold-sim: gnuplot failed: no PNG\n");
    else printf("# plot: %s\n", png);
  }
  return rc | x_report(x, n, nf);
}

static int usage(const char *what, const char *why) {
  fprintf(stderr,
          "fold-sim: %s\nusage: fold-sim %s [--op sum|sum_exact] [--dtype int64|float32|float64] [--terms]\n"
          "       [--csv FILE [--png FILE]]\n"
          "  --op     how fragments combine (default sum; sum_exact: FOLD_SUM_EXACT, float32/float64)\n"
          "  --dtype  int64 (default for sum): {generation time, 1}; float32/float64 (default for\n"
          "           sum_exact): {generation time, 1, x}, x an adversarial term; the x sum of every\n"
          "           run is compared (sum_exact: exit 1 unless all runs give the same bits)\n"
          "  --terms  also print every x term and the sum: 'f64|f32 x... = sum' (tests/op/exact_fsum.py)\n",
          why, what);
  return 2;
}

int fold_sim_areduce_main(int argc, char **argv) {
  const char *csv = NULL, *png = NULL, *op = "sum", *dt = NULL;
  int terms = 0;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
    else if (!strcmp(argv[i], "--png") && i + 1 < argc) png = argv[++i];
    else if (!strcmp(argv[i], "--op") && i + 1 < argc) op = argv[++i];
    else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) dt = argv[++i];
    else if (!strcmp(argv[i], "--terms")) terms = 1;
    else return usage(argv[1], "bad argument");
  }
  static xcfg x; /* large: its per-run results */
  memset(&x, 0, sizeof x);
  x.terms = terms;
  if (!strcmp(op, "sum")) x.op = FOLD_SUM;
  else if (!strcmp(op, "sum_exact")) x.op = FOLD_SUM_EXACT;
  else return usage(argv[1], "--op: sum or sum_exact (the experiments measure lags from summed generation times)");
  if (dt == NULL) dt = x.op == FOLD_SUM_EXACT ? "float64" : "int64";
  if (!strcmp(dt, "int64")) x.dtype = FOLD_INT64;
  else if (!strcmp(dt, "float32")) x.dtype = FOLD_FLOAT32;
  else if (!strcmp(dt, "float64")) x.dtype = FOLD_FLOAT64;
  else return usage(argv[1], "--dtype: int64, float32 or float64");
  if (x.op == FOLD_SUM_EXACT && x.dtype == FOLD_INT64)
    return usage(argv[1], "--op sum_exact takes float32 or float64");
  if (terms && x.dtype == FOLD_INT64)
    return usage(argv[1], "--terms needs a float dtype (the x terms)");
  x.count = x.dtype == FOLD_INT64 ? 2 : 3;
  double elt = x.op == FOLD_SUM_EXACT ? (x.dtype == FOLD_FLOAT64 ? EXACT_ACC_F64 : EXACT_ACC_F32)
                                      : (double)fold_dtype_size(x.dtype);
  x.msg_bytes = HDR_BYTES + (double)x.count * elt;
  if (csv && !png) {
    static char def[4096];
    snprintf(def, sizeof def, "%.*s.png", (int)(strlen(csv) > 4 && !strcmp(csv + strlen(csv) - 4, ".csv") ? strlen(csv) - 4 : strlen(csv)), csv);
    png = def;
  }
  return !strcmp(argv[1], "areduce-full") ? full(&x, csv, png) : partial(&x, csv, png);
}
