/* netif.c — choosing the network interface the TCP transport listens on, and address text. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tcp/tcp.h"

int fold__netif_match(const char *spec, const char *name) {
  if (spec == NULL || *spec == '\0')
    return 1;
  int exclude = 0, exact = 0;
  if (*spec == '^') {
    exclude = 1;
    spec++;
  }
  if (*spec == '=') {
    exact = 1;
    spec++;
  }
  size_t name_len = strlen(name);
  int hit = 0;
  while (*spec) {
    const char *comma = strchr(spec, ',');
    size_t n = comma ? (size_t)(comma - spec) : strlen(spec);
    /* An empty entry would be a prefix of everything: "eth0,,ib" must not
     * silently select every interface. */
    if (n > 0) {
      if (exact ? (name_len == n && memcmp(name, spec, n) == 0) : (name_len >= n && memcmp(name, spec, n) == 0))
        hit = 1;
    }
    spec += n;
    if (*spec == ',')
      spec++;
  }
  return exclude ? !hit : hit;
}

static int is_v6_link_local(const struct sockaddr *sa) {
  if (sa->sa_family != AF_INET6)
    return 0;
  const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
  return IN6_IS_ADDR_LINKLOCAL(a);
}

static int is_loopback_addr(const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET) {
    uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
    return (a >> 24) == 127;
  }
  if (sa->sa_family == AF_INET6) {
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(a))
      return 1;
    return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
  }
  return 0;
}

/* Raw address bytes of an AF_INET/AF_INET6 sockaddr, and their count. */
static const uint8_t *addr_bytes(const struct sockaddr *sa, size_t *n) {
  if (sa->sa_family == AF_INET) {
    *n = 4;
    return (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
  }
  if (sa->sa_family == AF_INET6) {
    *n = 16;
    return (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
  }
  *n = 0;
  return NULL;
}

static int same_subnet(const fold__netif *i, const struct sockaddr *store) {
  const struct sockaddr *a = (const struct sockaddr *)&i->addr, *m = (const struct sockaddr *)&i->mask;
  if (store == NULL || a->sa_family != store->sa_family || m->sa_family != a->sa_family)
    return 0;
  size_t na, nm, ns;
  const uint8_t *pa = addr_bytes(a, &na), *pm = addr_bytes(m, &nm), *ps = addr_bytes(store, &ns);
  if (na == 0 || na != nm || na != ns)
    return 0;
  for (size_t k = 0; k < na; k++)
    if ((pa[k] & pm[k]) != (ps[k] & pm[k]))
      return 0;
  return 1;
}

static int usable(const fold__netif *i) {
  int fam = i->addr.ss_family;
  return i->up && (fam == AF_INET || fam == AF_INET6) && !is_v6_link_local((const struct sockaddr *)&i->addr);
}

int fold__netif_pick(const fold__netif *ifs, int n, const char *spec, const struct sockaddr *store) {
  int have_spec = spec != NULL && *spec != '\0';
  int store_loop = store != NULL && is_loopback_addr(store);
  int want_family = store ? store->sa_family : AF_INET;
  /* Pass 0: the natural competitors; pass 1 (no spec only): any usable
   * interface, so that a host with only loopback (or a loopback store on a
   * host without lo) still gets an address. */
  for (int pass = 0; pass < 2; pass++) {
    int best = -1, best_score = -1;
    for (int k = 0; k < n; k++) {
      const fold__netif *i = &ifs[k];
      if (!usable(i))
        continue;
      if (have_spec) {
        if (!fold__netif_match(spec, i->name))
          continue;
      } else if (pass == 0 && (store_loop ? !i->loopback : i->loopback)) {
        continue;
      }
      int score = same_subnet(i, store) * 4 + (i->addr.ss_family == want_family) * 2 + !i->loopback;
      if (score > best_score) {
        best = k;
        best_score = score;
      }
    }
    if (best >= 0 || have_spec)
      return best;
  }
  return -1;
}

/* The host's interfaces with an IPv4/IPv6 address, one entry per address. */
static int netif_list(fold__netif **out, int *count) {
  struct ifaddrs *all;
  *out = NULL;
  *count = 0;
  if (getifaddrs(&all) != 0)
    return FOLD_ESYS;
  int n = 0;
  for (struct ifaddrs *a = all; a; a = a->ifa_next)
    if (a->ifa_addr && (a->ifa_addr->sa_family == AF_INET || a->ifa_addr->sa_family == AF_INET6))
      n++;
  fold__netif *ifs = calloc(n ? (size_t)n : 1, sizeof *ifs);
  if (ifs == NULL) {
    freeifaddrs(all);
    return FOLD_ENOMEM;
  }
  int k = 0;
  for (struct ifaddrs *a = all; a && k < n; a = a->ifa_next) {
    if (!a->ifa_addr || (a->ifa_addr->sa_family != AF_INET && a->ifa_addr->sa_family != AF_INET6))
      continue;
    fold__netif *i = &ifs[k++];
    snprintf(i->name, sizeof i->name, "%s", a->ifa_name ? a->ifa_name : "?");
    size_t sl = a->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
    memcpy(&i->addr, a->ifa_addr, sl);
    if (a->ifa_netmask && a->ifa_netmask->sa_family == a->ifa_addr->sa_family)
      memcpy(&i->mask, a->ifa_netmask, sl);
    i->up = (a->ifa_flags & IFF_UP) != 0;
    i->loopback = (a->ifa_flags & IFF_LOOPBACK) != 0;
  }
  freeifaddrs(all);
  *out = ifs;
  *count = k;
  return 0;
}

/* Resolve the store's host (numeric or a name; "[v6]" allowed) to its first
 * address. Returns 0 or -1. */
static int resolve_store(const char *host, struct sockaddr_storage *ss) {
  char h[256];
  size_t n = strlen(host);
  if (n >= sizeof h)
    return -1;
  if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
    memcpy(h, host + 1, n - 2);
    h[n - 2] = '\0';
  } else {
    memcpy(h, host, n + 1);
  }
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(h, NULL, &hints, &res) != 0 || res == NULL)
    return -1;
  int rc = -1;
  for (struct addrinfo *a = res; a; a = a->ai_next) {
    if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) && a->ai_addrlen <= sizeof *ss) {
      memset(ss, 0, sizeof *ss);
      memcpy(ss, a->ai_addr, a->ai_addrlen);
      rc = 0;
      break;
    }
  }
  freeaddrinfo(res);
  return rc;
}

int fold__netif_choose(fold_comm *c, const char *store_host, struct sockaddr_storage *addr,
                       char ifname[IF_NAMESIZE + 1]) {
  const char *spec = fold__param_str(FOLD__P_SOCKET_IFNAME);
  struct sockaddr_storage store;
  const struct sockaddr *sp = NULL;
  if (store_host && *store_host) {
    if (resolve_store(store_host, &store) == 0)
      sp = (const struct sockaddr *)&store;
    else
      FOLD__INFO(c, "tcp: cannot resolve store host \"%s\"; choosing an interface without it", store_host);
  }
  fold__netif *ifs;
  int n;
  int rc = netif_list(&ifs, &n);
  if (rc < 0)
    return fold__error(c, rc, "cannot list network interfaces");
  int k = fold__netif_pick(ifs, n, spec, sp);
  if (k < 0) {
    char have[256] = "";
    size_t off = 0;
    for (int i = 0; i < n && off < sizeof have; i++) {
      /* one entry per address: name each interface once */
      int seen = 0;
      for (int j = 0; j < i && !seen; j++)
        seen = strcmp(ifs[j].name, ifs[i].name) == 0;
      if (seen)
        continue;
      int w = snprintf(have + off, sizeof have - off, "%s%s", off ? ", " : "", ifs[i].name);
      if (w < 0)
        break;
      off += (size_t)w;
    }
    free(ifs);
    if (spec && *spec)
      return fold__error(c, FOLD_EINVAL,
                         "FOLD_SOCKET_IFNAME=\"%s\" matches no usable interface (interfaces with an address: %s)",
                         spec, *have ? have : "none");
    return fold__error(c, FOLD_ESYS, "no usable network interface (have: %s)", *have ? have : "none");
  }
  memcpy(addr, &ifs[k].addr, sizeof *addr);
  snprintf(ifname, IF_NAMESIZE + 1, "%s", ifs[k].name);
  free(ifs);
  return 0;
}

int fold__tcp_addr_format(const struct sockaddr *sa, char *buf, size_t cap) {
  char a[INET6_ADDRSTRLEN];
  int n;
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *s = (const struct sockaddr_in *)sa;
    if (!inet_ntop(AF_INET, &s->sin_addr, a, sizeof a))
      return -1;
    n = snprintf(buf, cap, "%s:%u", a, (unsigned)ntohs(s->sin_port));
  } else if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;
    if (!inet_ntop(AF_INET6, &s->sin6_addr, a, sizeof a))
      return -1;
    n = snprintf(buf, cap, "[%s]:%u", a, (unsigned)ntohs(s->sin6_port));
  } else {
    return -1;
  }
  return (n < 0 || (size_t)n >= cap) ? -1 : n;
}

/* Port text: 1..5 digits, value 1..65535. */
static int parse_port(const char *s, uint16_t *port) {
  size_t n = strlen(s);
  if (n == 0 || n > 5)
    return -1;
  unsigned v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (unsigned)(s[i] - '0');
  }
  if (v == 0 || v > 65535)
    return -1;
  *port = (uint16_t)v;
  return 0;
}

int fold__tcp_addr_parse(const char *text, struct sockaddr_storage *ss, socklen_t *len) {
  char host[INET6_ADDRSTRLEN + 1];
  const char *port_text;
  memset(ss, 0, sizeof *ss);
  if (text == NULL)
    return FOLD_EINVAL;
  if (text[0] == '[') {
    const char *end = strchr(text, ']');
    if (end == NULL || end[1] != ':' || (size_t)(end - text - 1) >= sizeof host)
      return FOLD_EINVAL;
    memcpy(host, text + 1, (size_t)(end - text - 1));
    host[end - text - 1] = '\0';
    port_text = end + 2;
    struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET6, host, &s->sin6_addr) != 1 || parse_port(port_text, &s->sin6_port) != 0)
      return FOLD_EINVAL;
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(s->sin6_port);
    *len = sizeof *s;
    return 0;
  }
  const char *colon = strchr(text, ':');
  if (colon == NULL || strchr(colon + 1, ':') != NULL || (size_t)(colon - text) >= sizeof host)
    return FOLD_EINVAL;
  memcpy(host, text, (size_t)(colon - text));
  host[colon - text] = '\0';
  struct sockaddr_in *s = (struct sockaddr_in *)ss;
  if (inet_pton(AF_INET, host, &s->sin_addr) != 1 || parse_port(colon + 1, &s->sin_port) != 0)
    return FOLD_EINVAL;
  s->sin_family = AF_INET;
  s->sin_port = htons(s->sin_port);
  *len = sizeof *s;
  return 0;
}
