/* fold_bench_tune.c — fold-bench --tune: time every algorithm per size and write the winners as FOLD_RULES rules. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fold_bench.h"

/* Method (docs/fold-bench.md, "Tuning"):
 *   for each collective with more than one algorithm and each size, every
 *   algorithm still in the race is forced with fold_comm_set_algo and timed
 *   out of place like a table row: a timed probe (its status agreed by every
 *   rank, so a refusal skips on all ranks together) that also sizes the
 *   iteration count, warm-up, then timed calls each after a barrier; one
 *   fold_allreduce(MAX) gives every iteration's slowest rank, and the score
 *   is the median of those maxima. The reduced times are identical on every
 *   rank, so every rank derives the same counts and the same winner without
 *   another message; only rank 0 prints and writes. */

/* Timed calls per (algorithm, size) stop at about this many seconds (but at
 * least MIN_ITERS): large sizes get fewer iterations, which bounds a sweep
 * to 256 MiB. */
#define BUDGET_S 0.15
#define MIN_ITERS 3
/* Keep the previous size's winner unless another is faster by more than
 * this: noise must not split a range into flip-flopping pieces. */
#define HYSTERESIS 0.05
/* From this many bytes on, an algorithm over DROP_FACTOR x the best at two
 * sizes in a row is not timed again: it will not come back at larger sizes,
 * and the slow ones dominate the run time. */
#define DROP_FROM ((size_t)64 << 10)
#define DROP_FACTOR 3.0

typedef struct point {
  size_t bytes;  /* the call's count argument in bytes: what rules match */
  int winner;    /* algorithm index */
} point;

/* Median over iterations of the slowest rank's time of call k (seconds),
 * the same on every rank; INFINITY when fold refuses the call on any rank. */
static double time_call(const fb_call *k, const fb_tune_args *a, fold_comm *comm, double *t, double *tmax) {
  int rc;
  if ((rc = fold_barrier(comm)) != FOLD_OK) fb_die(comm, "fold_barrier", rc);
  fb_force(k, comm, 1);
  double t0 = fb_now();
  int run = fb_run(k, comm);
  fb_force(k, comm, 0);
  double probe[2] = {fb_now() - t0, run == FOLD_OK ? 0.0 : 1.0}, agreed[2];
  if (run != FOLD_OK && run != FOLD_EINVAL) fb_die(comm, fb_colls[k->coll].name, run);
  if ((rc = fold_allreduce(probe, agreed, 2, FOLD_FLOAT64, FOLD_MAX, comm)) != FOLD_OK)
    fb_die(comm, "fold_allreduce (probe)", rc);
  if (agreed[1] != 0.0) return INFINITY;
  int iters = agreed[0] > 0 ? (int)(BUDGET_S / agreed[0]) : a->iters;
  if (iters > a->iters) iters = a->iters;
  if (iters < MIN_ITERS) iters = MIN_ITERS;
  /* the probe warmed the caches already; slow calls need no more */
  int warm = agreed[0] < 1e-3 ? a->warmup : 0;
  return fb_time_calls(k, comm, warm, iters, t, tmax);
}

static int nalgos(fb_coll c) {
  int n = 0;
  while (n < FB_MAX_ALGOS && fb_colls[c].algos[n]) n++;
  return n;
}

/* ---- the rules text ------------------------------------------------------ */

/* A growing text buffer (rank 0 only). */
typedef struct text {
  char *s;
  size_t len, cap;
} text;

static void FB_PRINTF(2, 3) tprintf(text *t, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    size_t room = t->cap - t->len;
    va_start(ap, fmt);
    int n = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? room : 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (t->s && (size_t)n < room) {
      t->len += (size_t)n;
      return;
    }
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->len + (size_t)n + 1) cap *= 2;
    char *p = realloc(t->s, cap);
    if (p == NULL) {
      fprintf(stderr, "fold-bench: out of memory\n");
      exit(1);
    }
    t->s = p, t->cap = cap;
  }
}

/* Comment that opens (and identifies) one collective's block of rules. */
static void block_tag(char *buf, size_t len, fb_coll c, int n, const char *tp) {
  snprintf(buf, len, "# %s, %d ranks, %s:", fb_colls[c].name, n, tp);
}

/* Rules for coll c from the measured points: equal neighbours merge; the
 * first range starts at 0 and the last is open, so this (ranks, transport)
 * pair never falls through to the built-in table for c. */
static void emit_rules(text *out, fb_coll c, int n, const char *tp, const point *pts, int npts) {
  for (int i = 0; i < npts;) {
    int j = i;
    while (j + 1 < npts && pts[j + 1].winner == pts[i].winner) j++;
    size_t lo = i == 0 ? 0 : pts[i].bytes;
    char range[64];
    if (j + 1 == npts) snprintf(range, sizeof range, "%zu-", lo);
    else snprintf(range, sizeof range, "%zu-%zu", lo, pts[j + 1].bytes - 1);
    if (i == 0 && j + 1 == npts) snprintf(range, sizeof range, "*");
    tprintf(out, "%-14s %-4s %-3d %-22s %s\n", fb_colls[c].name, tp, n, range, fb_colls[c].algos[pts[i].winner]);
    i = j + 1;
  }
}

/* Whether a line of an existing file belongs to what this run replaces:
 * a rule of a tuned collective for exactly this rank count and transport,
 * or the comment that opened such a block. */
static int replaced(const char *line, const int *tuned, int n, const char *tp) {
  char tag[128];
  for (int c = 0; c < FB_NCOLL; c++) {
    if (!tuned[c]) continue;
    block_tag(tag, sizeof tag, (fb_coll)c, n, tp);
    if (strncmp(line, tag, strlen(tag)) == 0) return 1;
  }
  char coll[64], trans[64], ranks[64];
  if (sscanf(line, " %63s %63s %63s", coll, trans, ranks) != 3 || coll[0] == '#') return 0;
  char nstr[16];
  snprintf(nstr, sizeof nstr, "%d", n);
  if (strcmp(trans, tp) != 0 || strcmp(ranks, nstr) != 0) return 0;
  for (int c = 0; c < FB_NCOLL; c++)
    if (tuned[c] && strcmp(coll, fb_colls[c].name) == 0) return 1;
  return 0;
}

/* Keep every line of path that this run does not replace, add `fresh`,
 * and replace path atomically (temp file + rename). Returns 0 or -1. */
static int write_rules(const char *path, const text *fresh, const int *tuned, int n, const char *tp) {
  text all = {0};
  FILE *old = fopen(path, "r");
  if (old) {
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, old) >= 0) {
      size_t len = strlen(line); /* a NUL byte may end it early; the file is text for FOLD_RULES anyway */
      if (!replaced(line, tuned, n, tp)) tprintf(&all, "%s%s", line, len && line[len - 1] == '\n' ? "" : "\n");
    }
    free(line);
    fclose(old);
  } else if (errno != ENOENT) {
    fprintf(stderr, "fold-bench: cannot read %s: %s\n", path, strerror(errno));
    return -1;
  } else {
    tprintf(&all, "# fold selection rules (FOLD_RULES; format: include/fold.h, docs/collectives.md)\n"
                  "# collective transport ranks bytes algorithm [commutative] [pof2]\n");
  }
  tprintf(&all, "%s", fresh->s ? fresh->s : "");
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  int ok = f != NULL;
  if (ok) ok = fwrite(all.s, 1, all.len, f) == all.len;
  if (f && fclose(f) != 0) ok = 0;
  if (ok && rename(tmp, path) != 0) ok = 0;
  if (!ok) {
    fprintf(stderr, "fold-bench: cannot write %s: %s\n", path, strerror(errno));
    unlink(tmp);
  }
  free(all.s);
  return ok ? 0 : -1;
}

/* ---- the sweep ------------------------------------------------------------- */

static size_t count_sizes(const fb_tune_args *a) {
  size_t k = 1;
  for (size_t s = a->minb; s <= a->maxb / a->factor; s *= a->factor) k++;
  return k;
}

/* Tune collective c; append its rules to out (rank 0). */
static void tune_coll(const fb_tune_args *a, fold_comm *comm, fb_coll c, char *sbuf, char *rbuf, double *t,
                      double *tmax, text *out, const char *tp) {
  int rank = fold_comm_rank(comm), n = fold_comm_size(comm), na = nalgos(c);
  size_t nsizes = c == FB_BARRIER ? 1 : count_sizes(a), npts = 0; /* barrier: one 0-byte row */
  point *pts = calloc(nsizes, sizeof *pts);
  int slow[FB_MAX_ALGOS] = {0}, dropped[FB_MAX_ALGOS] = {0}, last = -1;
  if (pts == NULL) fb_die(comm, "calloc", FOLD_ENOMEM);
  if (rank == 0) {
    printf("# tune %s: %d ranks, %s, %s%s%s; time (us): median of the slowest rank\n# %12s", fb_colls[c].name, n,
           tp, fold_dtype_name(a->dtype), fb_colls[c].reduces ? " " : "", fb_colls[c].reduces ? fb_op_name(a->op) : "",
           "bytes");
    for (int i = 0; i < na; i++) printf("  %18s", fb_colls[c].algos[i]);
    printf("  winner\n");
    fflush(stdout);
  }
  size_t s = a->minb;
  for (size_t idx = 0; idx < nsizes; idx++, s *= a->factor) {
    fb_call k = {.coll = c, .dtype = a->dtype, .op = a->op, .root = a->root, .rank = rank, .n = n, .sbuf = sbuf,
                 .rbuf = rbuf};
    if (!fb_shape(&k, s)) continue;
    double tm[FB_MAX_ALGOS];
    int best = -1;
    for (int i = 0; i < na; i++) {
      tm[i] = INFINITY;
      if (dropped[i]) continue;
      k.algo = fb_colls[c].algos[i];
      tm[i] = time_call(&k, a, comm, t, tmax);
      if (tm[i] < INFINITY && (best < 0 || tm[i] < tm[best])) best = i;
    }
    if (best < 0) continue; /* every algorithm refused: nothing to learn */
    int win = best;
    if (last >= 0 && tm[last] <= tm[best] * (1 + HYSTERESIS)) win = last;
    size_t bytes = k.count * fold_dtype_size(k.dtype);
    pts[npts++] = (point){bytes, win};
    last = win;
    if (rank == 0) {
      printf("  %12zu", bytes);
      for (int i = 0; i < na; i++)
        if (tm[i] < INFINITY) printf("  %18.2f", tm[i] * 1e6);
        else printf("  %18s", dropped[i] ? "-" : "N/A");
      printf("  %s\n", fb_colls[c].algos[win]);
      fflush(stdout);
    }
    for (int i = 0; i < na; i++) {
      slow[i] = tm[i] < INFINITY && tm[i] > DROP_FACTOR * tm[best] && bytes >= DROP_FROM ? slow[i] + 1 : 0;
      if (slow[i] >= 2 && !dropped[i]) {
        dropped[i] = 1;
        if (rank == 0)
          printf("# %s: %s dropped from here on (over %.0fx %s at two sizes)\n", fb_colls[c].name,
                 fb_colls[c].algos[i], DROP_FACTOR, fb_colls[c].algos[best]);
      }
    }
  }
  if (rank == 0 && npts > 0) {
    char tag[128], date[64];
    time_t now_s = time(NULL);
    struct tm tmv;
    strftime(date, sizeof date, "%Y-%m-%d %H:%M", localtime_r(&now_s, &tmv));
    block_tag(tag, sizeof tag, c, n, tp);
    tprintf(out, "%s fold-bench --tune, %s%s%s, %zu..%zu B per call, %s\n", tag, fold_dtype_name(a->dtype),
            fb_colls[c].reduces ? " " : "", fb_colls[c].reduces ? fb_op_name(a->op) : "", pts[0].bytes,
            pts[npts - 1].bytes, date);
    emit_rules(out, c, n, tp, pts, (int)npts);
  }
  free(pts);
}

int fb_tune(const fb_tune_args *a, fold_comm *comm, char *sbuf, char *rbuf) {
  int rank = fold_comm_rank(comm), n = fold_comm_size(comm);
  const char *tp = fold_comm_transport(comm);
  double *t = calloc((size_t)a->iters + MIN_ITERS, sizeof *t), *tmax = calloc((size_t)a->iters + MIN_ITERS, sizeof *t);
  if (t == NULL || tmax == NULL) fb_die(comm, "calloc", FOLD_ENOMEM);
  int tuned[FB_NCOLL] = {0};
  text out = {0};
  double t0 = fb_now();
  for (int c = 0; c < FB_NCOLL; c++) {
    if ((a->coll != -1 && a->coll != c) || nalgos((fb_coll)c) < 2) continue;
    tuned[c] = 1;
    tune_coll(a, comm, (fb_coll)c, sbuf, rbuf, t, tmax, &out, tp);
  }
  int status = 0;
  if (rank == 0) {
    printf("#\n# rules for %d ranks over %s (%.2f s):\n", n, tp, fb_now() - t0);
    fputs(out.s ? out.s : "", stdout);
    if (write_rules(a->path, &out, tuned, n, tp) != 0) status = 1;
    else printf("# written to %s\n#\n", a->path);
    fflush(stdout);
  }
  free(out.s);
  free(t);
  free(tmax);
  /* every rank leaves with rank 0's status */
  int agreed = 0, rc = fold_allreduce(&status, &agreed, 1, FOLD_INT32, FOLD_MAX, comm);
  if (rc != FOLD_OK) fb_die(comm, "fold_allreduce (status)", rc);
  return agreed;
}
