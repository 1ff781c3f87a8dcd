/* tcp_info.c — what the kernel measured of a TCP connection (TCP_INFO), for the transport's link figures.
 *
 * A file of its own because glibc's <netinet/tcp.h> has an old struct
 * tcp_info without the minimum RTT and the delivery rate, and it cannot be
 * included together with the kernel's <linux/tcp.h>, which has them. */
#include <linux/tcp.h>
#include <stddef.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>

#include "transport/tcp/tcp_info.h"

int fold__tcp_info_read(int fd, double *min_rtt_ns, double *rate_bytes_s) {
  struct tcp_info ti;
  memset(&ti, 0, sizeof ti);
  socklen_t len = sizeof ti;
  if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) return -1;
  /* an older kernel fills less: fields past its length stay 0 (unknown) */
  size_t has_rtt = offsetof(struct tcp_info, tcpi_min_rtt) + sizeof ti.tcpi_min_rtt;
  size_t has_rate = offsetof(struct tcp_info, tcpi_delivery_rate) + sizeof ti.tcpi_delivery_rate;
  *min_rtt_ns = len >= has_rtt ? ti.tcpi_min_rtt * 1e3 : 0;
  *rate_bytes_s = len >= has_rate ? (double)ti.tcpi_delivery_rate : 0;
  return 0;
}

int fold__tcp_info_outq(int fd, long *outq) {
  int q = 0;
  if (fd < 0 || ioctl(fd, SIOCOUTQ, &q) != 0) return -1;
  *outq = q;
  return 0;
}
