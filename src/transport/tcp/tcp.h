/* tcp.h — what the files of the TCP transport share: interface selection,
 * address text, socket tuning and the hand-over from connection setup
 * (tcp_conn.c) to the data path (tcp.c). Not used outside src/transport/tcp
 * except by tests. */
#ifndef FOLD_TCP_H
#define FOLD_TCP_H

#include <net/if.h>
#include <sys/socket.h>

#include "transport/transport.h"

/* ---- interfaces (netif.c) ------------------------------------------------- */
typedef struct fold__netif {
  char name[IF_NAMESIZE + 1];
  struct sockaddr_storage addr; /* AF_INET or AF_INET6, port 0 */
  struct sockaddr_storage mask; /* same family as addr */
  int up;
  int loopback;
} fold__netif;

/* Does interface `name` pass the FOLD_SOCKET_IFNAME filter `spec`? Pure.
 * Grammar (NCCL's NCCL_SOCKET_IFNAME): a comma-separated list of name
 * prefixes ("eth,ib"); a leading '^' selects every interface NOT matching
 * the list ("^docker,lo"); a following (or sole) leading '=' makes the
 * entries exact names ("=eth0", "^=docker0"). Empty entries are ignored.
 * A NULL or empty spec matches every name. Returns 1 or 0. */
int fold__netif_match(const char *spec, const char *name);

/* Pick the interface to listen on among ifs[0..n). Pure.
 * Usable: up, and not an IPv6 link-local address (those need a scope id
 * that a card cannot carry). With `spec` non-empty, the usable interfaces
 * that spec matches compete; without it, the usable non-loopback ones do,
 * or the loopback ones if `store` is a loopback address or no other one
 * exists. Among the competitors the first best by: same subnet as `store`,
 * then same family as `store` (IPv4 when store is NULL), then
 * non-loopback. Returns the index, or -1 if nothing qualifies. */
int fold__netif_pick(const fold__netif *ifs, int n, const char *spec, const struct sockaddr *store);

/* Choose this rank's listen address as fold__tcp_prepare documents: reads
 * FOLD_SOCKET_IFNAME, lists interfaces (getifaddrs), resolves store_host
 * (NULL or "" for none; "[v6]" brackets allowed). Fills *addr (port 0) and
 * ifname. Returns 0, or FOLD_EINVAL/FOLD_ESYS with a message on c. */
int fold__netif_choose(fold_comm *c, const char *store_host, struct sockaddr_storage *addr,
                       char ifname[IF_NAMESIZE + 1]);

/* "a.b.c.d:port" or "[v6]:port" for *sa (port included). Returns the length,
 * or -1 if it does not fit in cap or the family is unknown. */
int fold__tcp_addr_format(const struct sockaddr *sa, char *buf, size_t cap);

/* Parse the text form above (strictly: numeric address, port 1..65535, no
 * trailing bytes) into *ss. Pure. Returns 0 or FOLD_EINVAL. */
int fold__tcp_addr_parse(const char *text, struct sockaddr_storage *ss, socklen_t *len);

/* ---- sockets and the transport (tcp.c) -------------------------------------- */
/* Make fd ready for data: non-blocking, TCP_NODELAY, large buffers (when the
 * kernel allows the full size; else kernel autotuning is better). Failures
 * of the tuning options are ignored; returns 0 or FOLD_ESYS. */
int fold__tcp_sock_tune(int fd);
/* Socket buffer size to ask for (bytes), 0 to keep kernel autotuning. */
int fold__tcp_sockbuf_size(void);

/* Build the transport over connected, authenticated sockets: fds[p] is the
 * connection to rank p or -1 (c->size entries). Takes ownership of every
 * fd, also on failure. Returns 0 or a negative code (message on c). */
int fold__tcp_tp_create(fold_comm *c, int *fds, fold__tp **out);

/* Connections on first use (FOLD_TCP_CONNECT=lazy, not the default;
 * tcp_lazy.c): the transport over listener lfd (taken, also on failure),
 * with no connection yet; each is made when a send to the peer or a
 * receive from it needs it, or accepted by the transport's acceptor thread
 * (tcp_accept.c), which serves lfd until the transport shuts down.
 * Returns 0 or a negative code (message on c). */
struct fold__auth_key;
int fold__tcp_lazy_create(fold_comm *c, int lfd, const fold__card *cards, const uint8_t *use,
                          const struct fold__auth_key *key, fold__tp **out);
/* The peers tp (a tcp transport) made a data connection with (open now or
 * closed since): for tests and the benchmarks' counts. */
int fold__tcp_conn_count(const fold__tp *tp);

#endif /* FOLD_TCP_H */
