/* log.c — FOLD_DEBUG levels and the one function that writes log lines. */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

#include "core/internal.h"

int fold__log_level_env(void) {
  const char *v = getenv("FOLD_DEBUG");
  if (v == NULL || *v == '\0')
    return FOLD__LOG_WARN;
  if (strcasecmp(v, "TRACE") == 0) return FOLD__LOG_TRACE;
  if (strcasecmp(v, "INFO") == 0) return FOLD__LOG_INFO;
  if (strcasecmp(v, "WARN") == 0) return FOLD__LOG_WARN;
  if (strcasecmp(v, "NONE") == 0) return FOLD__LOG_NONE;
  return FOLD__LOG_WARN;
}

void fold__log(int level, int rank, const char *fmt, ...) {
  static const char *names[] = {"NONE", "WARN", "INFO", "TRACE"};
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  /* One fprintf per line so that lines of different threads do not mix. */
  if (rank >= 0)
    fprintf(stderr, "fold[rank %d] %s: %s\n", rank, names[level & 3], line);
  else
    fprintf(stderr, "fold %s: %s\n", names[level & 3], line);
}
