/* ml_run.c — run fold_kmeans or fold_logreg on a scikit-learn data set under foldrun and compare with ml_ref.py's answer. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "fold_ml.h"
#include "ml_csv.h"

/* Usage: ml_run kmeans FILE K [--ref REF] [--out OUT] [--ckpt DIR] [--die RANK SUPERSTEP] [--pp SEED]
 *                  [--max-iter N]
 *        ml_run logreg FILE [--ref REF] */
static const char *ref_path, *out_path, *ckpt;
static int die_rank = -1, die_at = -1, pp = 0, rank, max_iter = 1000;
static uint64_t pp_seed;

static int fail(const char *what, fold_comm *c) {
  fprintf(stderr, "[%d] ml_run: %s failed: %s\n", rank, what, fold_comm_last_error(c));
  return 1;
}

/* Read "name count..." then count numbers. */
static double *ref_read(FILE *f, const char *name, size_t *count) {
  char word[64];
  size_t a = 0, b = 1;
  if (fscanf(f, "%63s %zu", word, &a) != 2 || strcmp(word, name) != 0) return NULL;
  if (strcmp(name, "centroids") == 0 && fscanf(f, "%zu", &b) != 1) return NULL;
  *count = a * b;
  double *v = malloc((*count ? *count : 1) * sizeof *v);
  for (size_t i = 0; i < *count; i++)
    if (fscanf(f, "%lf", &v[i]) != 1) return free(v), NULL;
  return v;
}

static double ref_scalar(FILE *f, const char *name) {
  char word[64];
  double v = NAN;
  if (fscanf(f, "%63s %lf", word, &v) != 2 || strcmp(word, name) != 0) return NAN;
  return v;
}

/* max |a - b| / max |b| */
static double rel(const double *a, const double *b, size_t n) {
  double d = 0, s = 0;
  for (size_t i = 0; i < n; i++) {
    d = fmax(d, fabs(a[i] - b[i]));
    s = fmax(s, fabs(b[i]));
  }
  return s > 0 ? d / s : d;
}

static void on_step(const fold_kmeans_step *s, void *arg) {
  (void)arg;
  if (rank == die_rank && s->iter == die_at) raise(SIGKILL); /* the crash the checkpoint test recovers from */
}

static int kmeans(fold_comm *c, const ml_data *d, int k) {
  int size = fold_comm_size(c);
  uint64_t start, n;
  fold_partition(d->n, rank, size, &start, &n);
  double *init = malloc((size_t)k * d->dim * sizeof *init), *cen = malloc((size_t)k * d->dim * sizeof *cen);
  /* Initial centroids: the mean of rows [j*n/k, (j+1)*n/k), as ml_ref.py computes them (see there why not rows). */
  for (int j = 0; j < k; j++) {
    size_t a = (size_t)j * d->n / (size_t)k, b = (size_t)(j + 1) * d->n / (size_t)k;
    for (size_t t = 0; t < d->dim; t++) {
      double s = 0;
      for (size_t i = a; i < b; i++) s += d->x[i * d->dim + t];
      init[(size_t)j * d->dim + t] = s / (double)(b - a);
    }
  }
  fold_kmeans_params p;
  fold_kmeans_params_default(&p);
  p.k = k;
  p.max_iter = max_iter;
  p.init = pp ? NULL : init;
  p.seed = pp_seed;
  p.checkpoint_dir = ckpt;
  p.progress = on_step;
  int32_t *lab = calloc(d->n, sizeof *lab);
  double inertia;
  int iters;
  if (fold_kmeans(c, d->x + start * d->dim, n, d->dim, &p, cen, lab + start, &inertia, &iters) != FOLD_OK)
    return fail("fold_kmeans", c);
  /* every label to every rank: each rank's block, zeros elsewhere, summed */
  if (fold_allreduce(lab, lab, d->n, FOLD_INT32, FOLD_SUM, c) != FOLD_OK) return fail("label allreduce", c);
  int bad = 0;
  if (rank == 0) {
    printf("kmeans: %d ranks, %d supersteps, inertia %.17g\n", size, iters, inertia);
    if (out_path) { /* hex floats: the checkpoint test compares bit for bit */
      FILE *o = fopen(out_path, "w");
      fprintf(o, "supersteps %d\ninertia %a\n", iters, inertia); /* a resume that started over would differ */
      for (size_t i = 0; i < (size_t)k * d->dim; i++) fprintf(o, "%a\n", cen[i]);
      for (size_t i = 0; i < d->n; i++) fprintf(o, "%d\n", lab[i]);
      fclose(o);
    }
    if (ref_path) {
      FILE *f = fopen(ref_path, "r");
      size_t nc = 0, nl = 0;
      double ri = f ? ref_scalar(f, "inertia") : NAN;
      double *rc = f ? ref_read(f, "centroids", &nc) : NULL, *rl = rc ? ref_read(f, "labels", &nl) : NULL;
      if (!rl || nc != (size_t)k * d->dim || nl != d->n) {
        fprintf(stderr, "ml_run: cannot read reference %s\n", ref_path);
        return 1;
      }
      size_t diff = 0;
      for (size_t i = 0; i < d->n; i++) diff += lab[i] != (int32_t)rl[i];
      double ec = rel(cen, rc, nc), ei = fabs(inertia - ri) / fabs(ri);
      printf("kmeans vs scikit-learn: centroids rel %.3g, inertia rel %.3g, labels differing %zu of %zu\n", ec, ei,
             diff, d->n);
      bad = !(ec <= 1e-9 && ei <= 1e-9 && diff == 0);
      fclose(f);
      free(rc);
      free(rl);
    }
  }
  free(init);
  free(cen);
  free(lab);
  return bad;
}

static int logreg(fold_comm *c, ml_data *d) {
  ml_standardize(d);
  int size = fold_comm_size(c);
  uint64_t start, n;
  fold_partition(d->n, rank, size, &start, &n);
  fold_logreg_params p;
  fold_logreg_params_default(&p);
  double *w = calloc(d->dim + 1, sizeof *w);
  int iters;
  if (fold_logreg(c, d->x + start * d->dim, d->y + start, n, d->dim, &p, w, &w[d->dim], &iters) != FOLD_OK)
    return fail("fold_logreg", c);
  int bad = 0;
  if (rank == 0) {
    size_t correct = 0;
    for (size_t i = 0; i < d->n; i++) {
      double z = w[d->dim];
      for (size_t j = 0; j < d->dim; j++) z += w[j] * d->x[i * d->dim + j];
      correct += (z > 0) == (d->y[i] == 1);
    }
    printf("logreg: %d ranks, %d L-BFGS steps, %zu of %zu correct\n", size, iters, correct, d->n);
    if (ref_path) {
      FILE *f = fopen(ref_path, "r");
      size_t nw = 0;
      double *rw = f ? ref_read(f, "coef", &nw) : NULL;
      double rc = rw ? ref_scalar(f, "correct") : NAN;
      if (!rw || nw != d->dim + 1 || isnan(rc)) {
        fprintf(stderr, "ml_run: cannot read reference %s\n", ref_path);
        return 1;
      }
      double num = 0, den = 0;
      for (size_t j = 0; j < nw; j++) num += (w[j] - rw[j]) * (w[j] - rw[j]), den += rw[j] * rw[j];
      double e = sqrt(num / den);
      printf("logreg vs scikit-learn: coefficients rel %.3g (norm), correct %zu vs %.0f\n", e, correct, rc);
      bad = !(e <= 1e-6 && (double)correct == rc);
      fclose(f);
      free(rw);
    }
  }
  free(w);
  return bad;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: ml_run kmeans FILE K [options] | ml_run logreg FILE [options]\n");
    return 2;
  }
  int k = 0, a = 3;
  if (strcmp(argv[1], "kmeans") == 0 && argc > 3) k = atoi(argv[a++]);
  for (; a < argc; a++) {
    if (strcmp(argv[a], "--ref") == 0 && a + 1 < argc) ref_path = argv[++a];
    else if (strcmp(argv[a], "--out") == 0 && a + 1 < argc) out_path = argv[++a];
    else if (strcmp(argv[a], "--ckpt") == 0 && a + 1 < argc) ckpt = argv[++a];
    else if (strcmp(argv[a], "--max-iter") == 0 && a + 1 < argc) max_iter = atoi(argv[++a]);
    else if (strcmp(argv[a], "--pp") == 0 && a + 1 < argc) pp = 1, pp_seed = strtoull(argv[++a], NULL, 10);
    else if (strcmp(argv[a], "--die") == 0 && a + 2 < argc) die_rank = atoi(argv[a + 1]), die_at = atoi(argv[a + 2]), a += 2;
    else {
      fprintf(stderr, "ml_run: unknown argument %s\n", argv[a]);
      return 2;
    }
  }
  ml_data d;
  if (ml_csv_load(argv[2], &d) != 0) return 1;
  fold_comm *c;
  if (fold_init(&c) != FOLD_OK) return fail("fold_init", NULL);
  rank = fold_comm_rank(c);
  int bad = strcmp(argv[1], "kmeans") == 0 ? kmeans(c, &d, k) : logreg(c, &d);
  fold_comm_destroy(c);
  ml_csv_free(&d);
  return bad;
}
