/* env.c — parse the FOLD_* configuration variables. */
#include <stdlib.h>
#include <strings.h>

#include "core/internal.h"

#define FOLD__DEFAULT_TIMEOUT_S 300.0

int64_t fold__env_timeout_ns(void) {
  const char *v = getenv("FOLD_TIMEOUT");
  double s = FOLD__DEFAULT_TIMEOUT_S;
  if (v && *v) {
    char *end = NULL;
    double x = strtod(v, &end);
    if (end != v && *end == '\0' && x > 0 && x < 1e7)
      s = x;
    else
      /* Read by every communicator and rendezvous: said once per process. */
      fold__warn_env("FOLD_TIMEOUT", v, "is not a positive number of seconds; using %.0f", s);
  }
  return (int64_t)(s * 1e9);
}

int fold__env_transport(void) {
  const char *v = getenv("FOLD_TRANSPORT");
  if (v == NULL || *v == '\0' || strcasecmp(v, "auto") == 0) return FOLD__TP_KIND_AUTO;
  if (strcasecmp(v, "inproc") == 0) return FOLD__TP_KIND_INPROC;
  if (strcasecmp(v, "shm") == 0) return FOLD__TP_KIND_SHM;
  if (strcasecmp(v, "tcp") == 0) return FOLD__TP_KIND_TCP;
  return -1;
}

size_t fold__env_size(const char *name, size_t dflt) {
  const char *v = getenv(name);
  if (v == NULL || *v == '\0') return dflt;
  char *end = NULL;
  unsigned long long x = strtoull(v, &end, 10);
  if (end != v && *end == '\0' && x > 0 && x <= SIZE_MAX && v[0] != '-') return (size_t)x;
  fold__warn_env(name, v, "is not a positive integer; using %zu", dflt);
  return dflt;
}
