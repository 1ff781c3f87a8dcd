/* tcp_info.h — the kernel's measurements of one TCP connection (private to src/transport/tcp/). */
#ifndef FOLD_TCP_INFO_H
#define FOLD_TCP_INFO_H

/* TCP_INFO of socket fd: the minimum RTT seen on the connection in ns and
 * the most recent delivery rate in bytes per second (each 0 when the
 * kernel does not report it yet). Returns 0, or -1 if getsockopt fails. */
int fold__tcp_info_read(int fd, double *min_rtt_ns, double *rate_bytes_s);
/* The bytes written to socket fd that its peer has not acknowledged yet
 * (unsent or in flight: SIOCOUTQ) into *outq. Returns 0, or -1 if the
 * call fails. */
int fold__tcp_info_outq(int fd, long *outq);

#endif
