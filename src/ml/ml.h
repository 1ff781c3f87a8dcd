/* ml.h — helpers the ML algorithms share (argument checks). */
#ifndef FOLD_ML_INTERNAL_H
#define FOLD_ML_INTERNAL_H

#include <stddef.h>

/* FOLD_OK, or FOLD_EINVAL with "fn: rank R: row I, column J is not finite"
 * in text: rows of NaN or infinity would poison every rank's model. */
int fold__ml_check_finite(const double *x, size_t n, size_t dim, int rank, const char *fn, char *text, size_t cap);

#endif
