/* ml_csv.h — read scikit-learn's bundled data sets (CSV, optionally .gz) for the ML examples and tests. */
#ifndef FOLD_ML_CSV_H
#define FOLD_ML_CSV_H

#include <stddef.h>
#include <stdint.h>

typedef struct ml_data {
  size_t n, dim;
  double *x;  /* n x dim, row-major */
  int32_t *y; /* n labels (the last column) */
} ml_data;

/* Load path: every line is dim numbers and a label; a first line that is
 * scikit-learn's header ("150,4,setosa,...") is skipped; a .gz file is read
 * through `gzip -dc`. 0 on success; -1 with a message on stderr. */
int ml_csv_load(const char *path, ml_data *d);
void ml_csv_free(ml_data *d);
/* scikit-learn's StandardScaler over all rows: x = (x - mean) / std
 * (population std; a column of std 0 is left centred). */
void ml_standardize(ml_data *d);

#endif
