/* foldrun.h — what foldrun's files share: a rank's output stream and its line-prefixing pump. */
#ifndef FOLDRUN_H
#define FOLDRUN_H

#include <stddef.h>

#define LINE_MAX_BYTES 65536 /* a longer line is split */

typedef struct stream {
  int fd;  /* read end, -1 once closed */
  int out; /* 1 or 2 */
  char *buf;
  size_t len;
} stream;

/* Write all of p[0, n) to fd, retrying on EINTR; gives up quietly once fd is gone. */
void foldrun_write_all(int fd, const char *p, size_t n);
/* Emit one line (without its newline) of rank r with the "[r] " prefix, as one write. */
void foldrun_emit(int out, int r, const char *line, size_t n);
/* One read of s (rank r's stream): emit its whole lines prefixed; at EOF flush the partial line and close s->fd. */
void foldrun_pump(stream *s, int r);

#endif
