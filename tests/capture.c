/* capture.c — stderr into a temporary file and back (capture.h). */
#include "capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int saved_fd = -1;
static char cap_path[64];

void capture_begin(void) {
  fflush(stderr);
  snprintf(cap_path, sizeof cap_path, "/tmp/fold_capture_XXXXXX");
  int fd = mkstemp(cap_path);
  if (fd < 0) {
    perror("mkstemp");
    exit(2);
  }
  saved_fd = dup(2);
  dup2(fd, 2);
  close(fd);
}

const char *capture_end(void) {
  static char text[1 << 16];
  fflush(stderr);
  dup2(saved_fd, 2);
  close(saved_fd);
  FILE *f = fopen(cap_path, "r");
  size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
  if (f) fclose(f);
  text[n] = '\0';
  unlink(cap_path);
  return text;
}
