/* log.c — FOLD_DEBUG levels, the function that writes log lines, and the per-call-site repeat limit. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/internal.h"

#define WINDOW_NS ((int64_t)FOLD__LOG_WINDOW_S * 1000000000)

/* One lock for every site's counters and the env-warning memory: logging
 * is rare except in a flood, and then most lines only bump a counter. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static fold__log_site *held_sites; /* sites that ever held a line back */

/* FOLD_DEBUG's choices are in FOLD__LOG_* order (params.h). */
int fold__log_level_env(void) { return (int)fold__param_u64(FOLD__P_DEBUG); }

static const char *const level_names[] = {"NONE", "WARN", "INFO", "TRACE"};

static void write_line(int level, int rank, const char *line) {
  /* One fprintf per line so that lines of different threads do not mix. */
  if (rank >= 0)
    fprintf(stderr, "fold[rank %d] %s: %s\n", rank, level_names[level & 3], line);
  else
    fprintf(stderr, "fold %s: %s\n", level_names[level & 3], line);
}

void fold__log(int level, int rank, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  write_line(level, rank, line);
}

/* The summary of what s held back since its window began; lock held. */
static void summarise(fold__log_site *s, int64_t now) {
  char line[320];
  double secs = (double)(now - s->window_start) / 1e9;
  snprintf(line, sizeof line, "%d more like this in the last %.0f s, the last: %s", s->held, secs < 1 ? 1 : secs,
           s->last);
  write_line(s->level, s->rank, line);
  s->held = 0;
}

void fold__log_at(fold__log_site *s, int level, int rank, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  int64_t now = fold__clock_mono(NULL);
  pthread_mutex_lock(&log_lock);
  s->level = level;
  if (s->window_start == 0 || now - s->window_start >= WINDOW_NS) {
    /* A site still flooding gets no fresh burst: only its summaries. */
    int flooding = s->held > 0;
    if (flooding)
      summarise(s, now);
    s->window_start = now;
    s->shown = flooding ? FOLD__LOG_BURST : 0;
  }
  if (s->shown < FOLD__LOG_BURST) {
    s->shown++;
    write_line(level, rank, line);
  } else {
    s->held++;
    s->rank = rank;
    size_t len = strlen(line); /* truncated on purpose: the summary shows an example */
    if (len >= sizeof s->last)
      len = sizeof s->last - 1;
    memcpy(s->last, line, len);
    s->last[len] = '\0';
    if (!s->listed) {
      s->listed = 1;
      s->next = held_sites;
      held_sites = s;
    }
  }
  pthread_mutex_unlock(&log_lock);
}

void fold__log_flush(void) {
  int64_t now = fold__clock_mono(NULL);
  pthread_mutex_lock(&log_lock);
  for (fold__log_site *s = held_sites; s; s = s->next)
    if (s->held > 0) {
      summarise(s, now);
      /* The window goes on: the summary counts against it. */
    }
  pthread_mutex_unlock(&log_lock);
}

/* The variables warned about and the value each was warned for. */
static struct {
  const char *name;
  char value[64];
} env_warned[FOLD__P_COUNT + 8];

void fold__warn_env(const char *name, const char *value, const char *fmt, ...) {
  /* FOLD_DEBUG=NONE silences the others; FOLD_DEBUG itself cannot be NONE here. */
  if (strcmp(name, "FOLD_DEBUG") != 0 && fold__log_level_env() < FOLD__LOG_WARN)
    return;
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&log_lock);
  size_t n = sizeof env_warned / sizeof *env_warned, i = 0;
  while (i < n && env_warned[i].name && strcmp(env_warned[i].name, name) != 0)
    i++;
  int fresh = i == n || env_warned[i].name == NULL || strncmp(env_warned[i].value, value, sizeof env_warned[i].value - 1) != 0;
  if (fresh && i < n) {
    env_warned[i].name = name; /* callers pass string literals */
    snprintf(env_warned[i].value, sizeof env_warned[i].value, "%s", value);
  }
  if (fresh) {
    char line[700];
    snprintf(line, sizeof line, "%s=%s %s", name, value, text);
    write_line(FOLD__LOG_WARN, -1, line);
  }
  pthread_mutex_unlock(&log_lock);
}
