/* env.c — the FOLD_* variables that several layers read, as the values they use (parsed by params.c). */
#include "core/internal.h"

int64_t fold__env_timeout_ns(void) { return (int64_t)(fold__param_real(FOLD__P_TIMEOUT) * 1e9); }

int fold__env_transport(void) {
  fold__pval v;
  /* the table's choices are in FOLD__TP_KIND_* order: auto, inproc, shm, tcp */
  return fold__param_read(FOLD__P_TRANSPORT, &v) < 0 ? -1 : (int)v.u;
}
