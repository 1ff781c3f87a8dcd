/* ml.c — argument checks shared by the ML algorithms. */
#include "ml/ml.h"

#include <math.h>

#include "queue/iterq.h"

int fold__ml_check_finite(const double *x, size_t n, size_t dim, int rank, const char *fn, char *text, size_t cap) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < dim; j++)
      if (!isfinite(x[i * dim + j])) {
        fold__iq_text(text, cap, "%s: rank %d: row %zu, column %zu of its rows is %g, not a finite number", fn, rank, i,
                      j, x[i * dim + j]);
        return FOLD_EINVAL;
      }
  return FOLD_OK;
}
