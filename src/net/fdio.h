/* fdio.h — blocking-with-deadline helpers for non-blocking sockets (the bootstrap's stores, the handshake). */
#ifndef FOLD_FDIO_H
#define FOLD_FDIO_H

#include <stddef.h>
#include <stdint.h>

/* Wait until fd is ready for `events` (POLLIN/POLLOUT) or the monotonic
 * deadline passes. 0 when ready (also on POLLHUP/POLLERR: the next send or
 * recv reports it), FOLD_ETIMEDOUT, or FOLD_ESYS. */
int fold__fd_wait(int fd, short events, int64_t deadline_ns);

/* Send all n bytes of p, waiting for room as needed. 0, FOLD_ETIMEDOUT,
 * FOLD_EPEER (the peer closed or reset the connection) or FOLD_ESYS; errno
 * is left as the failing call set it. */
int fold__fd_send_all(int fd, const void *p, size_t n, int64_t deadline_ns);

/* Receive exactly n bytes into p. 0, FOLD_ETIMEDOUT, FOLD_EPEER (closed
 * before n bytes came, or reset) or FOLD_ESYS. */
int fold__fd_recv_all(int fd, void *p, size_t n, int64_t deadline_ns);

#endif
