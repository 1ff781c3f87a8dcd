/* foldrun_out.c — foldrun's output: each rank's lines, prefixed with its rank, written whole. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "foldrun.h"

void foldrun_write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return; /* our stdout is gone: nothing sensible left to do with the text */
    p += w, n -= (size_t)w;
  }
}

/* Emit one line (without its newline) of rank r with the prefix, as one write. */
void foldrun_emit(int out, int r, const char *line, size_t n) {
  char head[32];
  int hn = snprintf(head, sizeof head, "[%d] ", r);
  char *tmp = malloc((size_t)hn + n + 1);
  if (tmp == NULL) {
    foldrun_write_all(out, head, (size_t)hn);
    foldrun_write_all(out, line, n);
    foldrun_write_all(out, "\n", 1);
    return;
  }
  memcpy(tmp, head, (size_t)hn);
  memcpy(tmp + hn, line, n);
  tmp[(size_t)hn + n] = '\n';
  foldrun_write_all(out, tmp, (size_t)hn + n + 1);
  free(tmp);
}

/* Emit every whole line of buf[0, n) with the prefix, in one write: a rank
 * printing many short lines (`yes`) must not cost a write per line, which
 * on a loaded host delays noticing failures and signals by seconds.
 * Returns the length of the whole lines (the rest is a partial line). */
static size_t emit_lines(int out, int r, const char *buf, size_t n) {
  char head[32];
  int hn = snprintf(head, sizeof head, "[%d] ", r);
  size_t lines = 0, whole = 0;
  for (size_t i = 0; i < n; i++)
    if (buf[i] == '\n')
      lines++, whole = i + 1;
  if (lines == 0)
    return 0;
  char *tmp = malloc(lines * (size_t)hn + whole), *o = tmp;
  if (tmp == NULL) { /* line by line, then */
    for (size_t start = 0, i = 0; i < whole; i++)
      if (buf[i] == '\n') {
        foldrun_emit(out, r, buf + start, i - start);
        start = i + 1;
      }
    return whole;
  }
  for (size_t start = 0, i = 0; i < whole; i++)
    if (buf[i] == '\n') {
      memcpy(o, head, (size_t)hn);
      memcpy(o + hn, buf + start, i + 1 - start);
      o += (size_t)hn + (i + 1 - start);
      start = i + 1;
    }
  foldrun_write_all(out, tmp, (size_t)(o - tmp));
  free(tmp);
  return whole;
}

/* Do one read (at most LINE_MAX_BYTES, and a pipe holds 64 KiB); emit whole
 * lines; at EOF flush the partial line. One read, not "until EAGAIN": a rank
 * that writes faster than we re-emit would keep the pipe full and starve the
 * signalfd, waitpid and the kill timer in the poll loop. */
void foldrun_pump(stream *s, int r) {
  if (s->len == LINE_MAX_BYTES) {
    foldrun_emit(s->out, r, s->buf, s->len);
    s->len = 0;
  }
  ssize_t n;
  do
    n = read(s->fd, s->buf + s->len, LINE_MAX_BYTES - s->len);
  while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    return;
  if (n <= 0) {
    if (s->len)
      foldrun_emit(s->out, r, s->buf, s->len);
    s->len = 0;
    close(s->fd);
    s->fd = -1;
    return;
  }
  size_t end = s->len + (size_t)n, start = emit_lines(s->out, r, s->buf, end);
  memmove(s->buf, s->buf + start, end - start);
  s->len = end - start;
}
