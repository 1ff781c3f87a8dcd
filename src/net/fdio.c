/* fdio.c — send/receive exactly n bytes on a non-blocking socket, or wait for it, under a deadline. */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "net/fdio.h"
#include "core/internal.h"

int fold__fd_wait(int fd, short events, int64_t deadline_ns) {
  for (;;) {
    int64_t left = deadline_ns - fold__clock_mono(NULL);
    if (left <= 0)
      return FOLD_ETIMEDOUT;
    struct pollfd pfd = {.fd = fd, .events = events};
    int ms = (int)((left + 999999) / 1000000);
    int r = poll(&pfd, 1, ms);
    if (r > 0)
      return 0;
    if (r < 0 && errno != EINTR)
      return FOLD_ESYS;
  }
}

int fold__fd_send_all(int fd, const void *buf, size_t n, int64_t deadline_ns) {
  const uint8_t *p = buf;
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w, n -= (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int rc = fold__fd_wait(fd, POLLOUT, deadline_ns);
      if (rc < 0)
        return rc;
      continue;
    }
    return (w < 0 && (errno == EPIPE || errno == ECONNRESET)) ? FOLD_EPEER : FOLD_ESYS;
  }
  return 0;
}

int fold__fd_recv_all(int fd, void *buf, size_t n, int64_t deadline_ns) {
  uint8_t *p = buf;
  while (n > 0) {
    ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r, n -= (size_t)r;
      continue;
    }
    if (r == 0)
      return FOLD_EPEER;
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      int rc = fold__fd_wait(fd, POLLIN, deadline_ns);
      if (rc < 0)
        return rc;
      continue;
    }
    return errno == ECONNRESET ? FOLD_EPEER : FOLD_ESYS;
  }
  return 0;
}
