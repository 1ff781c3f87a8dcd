/* ml_csv.c — read scikit-learn's bundled data sets (CSV, optionally .gz) for the ML examples and tests. */
#define _POSIX_C_SOURCE 200809L
#include "ml_csv.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int push(double **v, size_t *n, size_t *cap, double x) {
  if (*n == *cap) {
    size_t c = *cap ? 2 * *cap : 1024;
    double *nv = realloc(*v, c * sizeof *nv);
    if (!nv) return -1;
    *v = nv;
    *cap = c;
  }
  (*v)[(*n)++] = x;
  return 0;
}

int ml_csv_load(const char *path, ml_data *d) {
  memset(d, 0, sizeof *d);
  size_t pl = strlen(path);
  int gz = pl > 3 && strcmp(path + pl - 3, ".gz") == 0;
  FILE *f;
  if (gz) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "gzip -dc -- '%s'", path);
    f = popen(cmd, "r");
  } else {
    f = fopen(path, "r");
  }
  if (!f) {
    fprintf(stderr, "ml_csv_load: cannot open %s\n", path);
    return -1;
  }
  char *line = NULL;
  size_t lcap = 0, cols = 0, nv = 0, cap = 0, rows = 0;
  double *v = NULL;
  int bad = 0, first = 1;
  while (!bad && getline(&line, &lcap, f) > 0) {
    if (first && strpbrk(line, "abcdefghijklmnopqrstuvwxyz")) { /* the header: "150,4,setosa,..." */
      first = 0;
      continue;
    }
    first = 0;
    size_t c = 0;
    for (char *p = line; *p && *p != '\n';) {
      char *end;
      double x = strtod(p, &end);
      if (end == p) {
        bad = 1;
        break;
      }
      if (push(&v, &nv, &cap, x)) bad = 1;
      c++;
      p = end;
      while (*p == ',' || isspace((unsigned char)*p)) p++;
    }
    if (c == 0) continue;
    if (cols == 0) cols = c;
    if (c != cols) bad = 1;
    rows++;
  }
  free(line);
  if (gz) pclose(f); else fclose(f);
  if (bad || rows == 0 || cols < 2) {
    fprintf(stderr, "ml_csv_load: %s: bad line near row %zu\n", path, rows);
    free(v);
    return -1;
  }
  d->n = rows;
  d->dim = cols - 1;
  d->x = malloc(rows * d->dim * sizeof *d->x);
  d->y = malloc(rows * sizeof *d->y);
  for (size_t i = 0; i < rows; i++) {
    memcpy(d->x + i * d->dim, v + i * cols, d->dim * sizeof *d->x);
    d->y[i] = (int32_t)v[i * cols + d->dim];
  }
  free(v);
  return 0;
}

void ml_csv_free(ml_data *d) {
  free(d->x);
  free(d->y);
  memset(d, 0, sizeof *d);
}

void ml_standardize(ml_data *d) {
  for (size_t j = 0; j < d->dim; j++) {
    double mean = 0, var = 0;
    for (size_t i = 0; i < d->n; i++) mean += d->x[i * d->dim + j];
    mean /= (double)d->n;
    for (size_t i = 0; i < d->n; i++) {
      double e = d->x[i * d->dim + j] - mean;
      var += e * e;
    }
    double sd = sqrt(var / (double)d->n);
    for (size_t i = 0; i < d->n; i++) {
      double *p = &d->x[i * d->dim + j];
      *p = sd > 0 ? (*p - mean) / sd : *p - mean;
    }
  }
}
