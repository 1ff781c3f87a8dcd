/* clock.c — the real clock and sleeping, for code that runs outside the simulator. */
#include <errno.h>
#include <time.h>

#include "core/internal.h"

int64_t fold__clock_mono(void *ctx) {
  (void)ctx;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void fold__sleep_ns(int64_t ns) {
  if (ns <= 0) return;
  struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000), .tv_nsec = (long)(ns % 1000000000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}
