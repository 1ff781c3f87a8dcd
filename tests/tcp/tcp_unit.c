/* tcp_unit.c — pure parts of the tcp transport: FOLD_SOCKET_IFNAME matching, interface choice, address text, frame headers. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "check.h"
#include "transport/tcp/tcp.h"
#include "transport/tcp/tcp_wire.h"

static void t_match(void) {
  static const struct { const char *spec, *name; int want; } cases[] = {
      {NULL, "eth0", 1},        {"", "lo", 1},            {"eth", "eth0", 1},        {"eth", "ens3", 0},
      {"eth", "eth", 1},        {"eth0", "eth", 0},       {"^eth", "eth0", 0},       {"^eth", "lo", 1},
      {"=eth0", "eth0", 1},     {"=eth0", "eth01", 0},    {"=eth0", "eth", 0},       {"^=eth0", "eth01", 1},
      {"^=eth0", "eth0", 0},    {"ib,eth", "eth1", 1},    {"ib,eth", "ib0", 1},      {"ib,eth", "lo", 0},
      {"eth0,,ib", "lo", 0},    {",", "lo", 0},           {"^docker,lo", "lo", 0},   {"^docker,lo", "docker0", 0},
      {"^docker,lo", "eth0", 1}, {"=", "eth0", 0},        {"^", "eth0", 1},          {"^=", "eth0", 1},
      {"=eth0,eth1", "eth1", 1}, {"=eth0,eth1", "eth10", 0}, {"eth1,", "eth10", 1},  {"^=lo,eth0", "eth1", 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int got = fold__netif_match(cases[i].spec, cases[i].name);
    CHECK(got == cases[i].want, "match(\"%s\", \"%s\") = %d, wanted %d", cases[i].spec ? cases[i].spec : "(null)",
          cases[i].name, got, cases[i].want);
  }
}

static void set_addr(struct sockaddr_storage *ss, const char *text) {
  memset(ss, 0, sizeof *ss);
  if (strchr(text, ':')) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
    a->sin6_family = AF_INET6;
    CHECK(inet_pton(AF_INET6, text, &a->sin6_addr) == 1, "bad test address %s", text);
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    CHECK(inet_pton(AF_INET, text, &a->sin_addr) == 1, "bad test address %s", text);
  }
}

static fold__netif mk(const char *name, const char *addr, const char *mask, int up, int loop) {
  fold__netif i;
  memset(&i, 0, sizeof i);
  snprintf(i.name, sizeof i.name, "%s", name);
  set_addr(&i.addr, addr);
  set_addr(&i.mask, mask);
  i.up = up;
  i.loopback = loop;
  return i;
}

static int pick(const fold__netif *ifs, int n, const char *spec, const char *store) {
  struct sockaddr_storage ss;
  if (store == NULL)
    return fold__netif_pick(ifs, n, spec, NULL);
  set_addr(&ss, store);
  return fold__netif_pick(ifs, n, spec, (struct sockaddr *)&ss);
}

static void t_pick(void) {
  fold__netif ifs[] = {
      mk("lo", "127.0.0.1", "255.0.0.0", 1, 1),                       /* 0 */
      mk("lo", "::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 1, 1), /* 1 */
      mk("eth0", "fe80::1", "ffff:ffff:ffff:ffff::", 1, 0),           /* 2: link-local, never */
      mk("eth0", "10.0.0.5", "255.255.255.0", 1, 0),                  /* 3 */
      mk("eth1", "192.168.1.7", "255.255.255.0", 1, 0),               /* 4 */
      mk("eth1", "fd00::7", "ffff:ffff:ffff:ffff::", 1, 0),           /* 5 */
      mk("docker0", "172.17.0.1", "255.255.0.0", 1, 0),               /* 6 */
      mk("down0", "10.9.9.9", "255.0.0.0", 0, 0),                     /* 7: down, never */
  };
  int n = (int)(sizeof ifs / sizeof *ifs);
  static const struct { const char *spec, *store; int want; } cases[] = {
      {NULL, "192.168.1.100", 4}, /* same subnet wins over order */
      {NULL, "10.0.0.1", 3},
      {NULL, "10.9.9.1", 3},      /* the down interface's subnet does not count */
      {NULL, "8.8.8.8", 3},       /* no subnet match: first non-loopback of the family */
      {NULL, "127.0.0.1", 0},     /* loopback store: loopback */
      {NULL, "::1", 1},
      {NULL, "fd00::1", 5},
      {NULL, "2001:db8::1", 5},   /* first usable v6 (link-local skipped) */
      {NULL, "fe80::2", 5},
      {NULL, NULL, 3},            /* no store: IPv4 first */
      {"docker", NULL, 6},
      {"=eth", NULL, -1},
      {"down", NULL, -1},
      {"^eth,docker", NULL, 0},   /* only lo is left */
      {"lo", "10.0.0.1", 0},
      {"lo", "fd00::1", 1},
      {"=eth0", "fe80::2", 3},    /* eth0's v6 is link-local: its v4 address it is */
      {"eth", "192.168.1.1", 4},
      {"eth", "fd00::3", 5},
      {"^lo", "127.0.0.1", 3},    /* the spec rules; the store only ranks */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int got = pick(ifs, n, cases[i].spec, cases[i].store);
    CHECK(got == cases[i].want, "pick(spec %s, store %s) = %d, wanted %d", cases[i].spec ? cases[i].spec : "-",
          cases[i].store ? cases[i].store : "-", got, cases[i].want);
  }
  /* Only loopback: a remote store still gets loopback (the fallback). */
  CHECK(pick(ifs, 2, NULL, "10.0.0.1") == 0, "loopback fallback");
  CHECK(pick(ifs, 2, NULL, "fd00::1") == 1, "loopback fallback v6");
  /* Nothing usable at all. */
  CHECK(pick(ifs + 7, 1, NULL, NULL) == -1, "down interface picked");
  CHECK(pick(ifs, 0, NULL, NULL) == -1, "empty list");
}

static void t_addr(void) {
  static const char *good[] = {"127.0.0.1:80", "10.1.2.3:65535", "[::1]:5", "[fd00::7]:1234",
                               "[::ffff:1.2.3.4]:9"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    struct sockaddr_storage ss;
    socklen_t sl = 0;
    char back[128];
    CHECK(fold__tcp_addr_parse(good[i], &ss, &sl) == 0, "parse(%s) failed", good[i]);
    CHECK(sl == (ss.ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)),
          "parse(%s): length %u", good[i], (unsigned)sl);
    CHECK(fold__tcp_addr_format((struct sockaddr *)&ss, back, sizeof back) > 0 && strcmp(back, good[i]) == 0,
          "format(parse(%s)) = %s", good[i], back);
  }
  static const char *bad[] = {"",           "1.2.3.4",     "1.2.3.4:",      "1.2.3.4:0",   "1.2.3.4:65536",
                              "1.2.3.4:80x", "1.2.3.4:-1", "::1:5",         "[::1]5",      "[::1]:",
                              "host:80",    "1.2.3:80",    "1.2.3.4:80:1",  "[1.2.3.4]:80", "[::1]:123456",
                              "[::1",       " 1.2.3.4:80", "1.2.3.4: 80",   "[]:80"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct sockaddr_storage ss;
    socklen_t sl;
    CHECK(fold__tcp_addr_parse(bad[i], &ss, &sl) == FOLD_EINVAL, "parse(\"%s\") accepted", bad[i]);
  }
  CHECK(fold__tcp_addr_parse(NULL, &(struct sockaddr_storage){0}, &(socklen_t){0}) == FOLD_EINVAL, "NULL");
  /* format refuses a buffer too small */
  struct sockaddr_storage ss;
  socklen_t sl;
  char tiny[8];
  fold__tcp_addr_parse("127.0.0.1:80", &ss, &sl);
  CHECK(fold__tcp_addr_format((struct sockaddr *)&ss, tiny, sizeof tiny) == -1, "format overflowed");
}

static void put(uint8_t *h, int off, uint64_t v, int n) {
  for (int i = 0; i < n; i++)
    h[off + i] = (uint8_t)(v >> (8 * i));
}

static void t_frame(void) {
  uint8_t h[FOLD__TCP_HDR + 4], h2[FOLD__TCP_HDR];
  fold__tcp_frame f, g;
  /* round trips of every valid kind */
  static const fold__tcp_frame ok[] = {
      {.type = FOLD__TCP_EAGER, .ctx = 0, .tag = 0, .len = 0},
      {.type = FOLD__TCP_EAGER, .ctx = 2, .tag = 2147483647, .len = 65536},
      {.type = FOLD__TCP_RTS, .ctx = 1, .tag = 5, .len = 1ull << 40, .cookie = 77},
      /* collective data: the signature digest above FOLD__CTX_COLL */
      {.type = FOLD__TCP_EAGER, .ctx = 0x7ffffffd, .tag = 1, .len = 8},
      {.type = FOLD__TCP_RTS, .ctx = (1u << 2) | FOLD__CTX_COLL, .tag = 1, .len = 1ull << 20, .cookie = 5},
      /* a collective's messages go eager up to 1 MiB (FOLD__TCP_EAGER_COLL_MAX) */
      {.type = FOLD__TCP_EAGER, .ctx = (3u << 2) | FOLD__CTX_COLL, .tag = 1, .len = 1ull << 20},
      /* extension contexts (engine handlers): FOLD__CTX_SYS with a number above */
      {.type = FOLD__TCP_EAGER, .ctx = (1u << 2) | FOLD__CTX_SYS, .tag = 3, .len = 16},
      {.type = FOLD__TCP_RTS, .ctx = ((FOLD__CTX_EXT_COUNT - 1u) << 2) | FOLD__CTX_SYS, .tag = 3, .len = 1ull << 20, .cookie = 6},
      {.type = FOLD__TCP_CTS, .len = 65537, .cookie = ~0ull},
      {.type = FOLD__TCP_NACK, .len = 0, .cookie = 3},
      {.type = FOLD__TCP_RDATA, .len = 3000000000ull, .cookie = 1},
      /* a sub-communicator's messages carry its id */
      {.type = FOLD__TCP_EAGER, .ctx = 0, .tag = 3, .len = 4, .cid = 7},
      {.type = FOLD__TCP_RTS, .ctx = 1, .tag = 3, .len = 1ull << 20, .cookie = 2, .cid = 0xFFFFFFFEu},
  };
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    fold__tcp_frame_encode(h, &ok[i]);
    CHECK(fold__tcp_frame_parse(h, FOLD__TCP_HDR, &f) == FOLD__TCP_HDR, "valid %s refused: %s",
          fold__tcp_frame_name(ok[i].type), f.why ? f.why : "");
    CHECK(f.type == ok[i].type && f.ctx == ok[i].ctx && f.tag == ok[i].tag && f.len == ok[i].len &&
              f.cookie == ok[i].cookie && f.cid == ok[i].cid,
          "round trip of %s changed fields", fold__tcp_frame_name(ok[i].type));
    fold__tcp_frame_encode(h2, &f);
    CHECK(memcmp(h, h2, FOLD__TCP_HDR) == 0, "re-encoding differs");
    /* a short buffer is "need more", never an error */
    for (size_t n = 0; n < FOLD__TCP_HDR; n++)
      CHECK(fold__tcp_frame_parse(h, n, &g) == 0, "parse of %zu bytes did not ask for more", n);
  }
  /* ... but no further, and other contexts keep the 64 KiB limit */
  static const fold__tcp_frame too_long[] = {
      {.type = FOLD__TCP_EAGER, .ctx = (3u << 2) | FOLD__CTX_COLL, .tag = 1, .len = (1ull << 20) + 1},
      {.type = FOLD__TCP_EAGER, .ctx = (1u << 2) | FOLD__CTX_SYS, .tag = 1, .len = 65537},
      {.type = FOLD__TCP_EAGER, .ctx = FOLD__CTX_P2P, .tag = 1, .len = 1ull << 20},
  };
  for (size_t i = 0; i < sizeof too_long / sizeof *too_long; i++) {
    fold__tcp_frame_encode(h, &too_long[i]);
    f.why = NULL;
    CHECK(fold__tcp_frame_parse(h, FOLD__TCP_HDR, &f) < 0 && f.why && strstr(f.why, "eager payload longer"),
          "eager frame %zu of %llu bytes (ctx %u) not refused as too long: %s", i,
          (unsigned long long)too_long[i].len, too_long[i].ctx, f.why ? f.why : "accepted");
  }
  CHECK(fold__tcp_eager_max((2u << 2) | FOLD__CTX_COLL) == FOLD__TCP_EAGER_COLL_MAX &&
            fold__tcp_eager_max(FOLD__CTX_P2P) == FOLD__TCP_EAGER_MAX,
        "eager limits per context");
  /* the magic is "FLD2" on the wire whatever the host's byte order (format
   * 2: the 40-byte header with a communicator id) */
  fold__tcp_frame_encode(h, &ok[0]);
  CHECK(memcmp(h, "FLD2", 4) == 0, "magic bytes");
  CHECK(FOLD__TCP_HDR == 40, "header size");
  /* every malformed header is refused with a reason */
  struct { int off, n; uint64_t v; int type; } bad[] = {
      {0, 1, 'X', FOLD__TCP_EAGER},              /* magic */
      {5, 1, 1, FOLD__TCP_EAGER},                /* flags */
      {6, 2, 0x100, FOLD__TCP_EAGER},            /* pad */
      {4, 1, 0, FOLD__TCP_EAGER},                /* type 0 */
      {4, 1, 6, FOLD__TCP_EAGER},                /* type 6 */
      {4, 1, 255, FOLD__TCP_EAGER},              /* type 255 */
      {8, 4, FOLD__CTX_COUNT, FOLD__TCP_EAGER},   /* ctx out of range */
      {8, 4, 0xFFFFFFFF, FOLD__TCP_RTS},         /* ctx out of range */
      {8, 4, 0x80000001u, FOLD__TCP_EAGER},      /* collective ctx with a digest too wide */
      {8, 4, (5u << 2) | FOLD__CTX_SIG, FOLD__TCP_EAGER}, /* a digest on a context that has none */
      {8, 4, (5u << 2) | FOLD__CTX_P2P, FOLD__TCP_RTS},
      {8, 4, ((uint64_t)FOLD__CTX_EXT_COUNT << 2) | FOLD__CTX_SYS, FOLD__TCP_EAGER}, /* past the extension contexts */
      {12, 4, 0x80000000u, FOLD__TCP_EAGER},     /* negative tag */
      {16, 8, 65537, FOLD__TCP_EAGER},           /* eager too long */
      {16, 8, ~0ull, FOLD__TCP_EAGER},           /* eager too long */
      {24, 8, 1, FOLD__TCP_EAGER},               /* eager with cookie */
      {16, 8, 0, FOLD__TCP_RTS},                 /* empty rendezvous */
      {16, 8, 0, FOLD__TCP_RDATA},               /* empty rendezvous data */
      {16, 8, 0, FOLD__TCP_CTS},
      {8, 4, 1, FOLD__TCP_CTS},                  /* control frame with ctx */
      {12, 4, 1, FOLD__TCP_NACK},                /* control frame with tag */
      {12, 4, 9, FOLD__TCP_RDATA},
      {36, 4, 1, FOLD__TCP_EAGER},               /* reserved bytes after the cid */
      {39, 1, 0x80, FOLD__TCP_RTS},
      {32, 4, 1, FOLD__TCP_CTS},                 /* control frame with a cid */
      {32, 4, 5, FOLD__TCP_RDATA},
      {32, 4, 1, FOLD__TCP_NACK},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    fold__tcp_frame base = {.type = bad[i].type, .len = 100, .cookie = bad[i].type == FOLD__TCP_EAGER ? 0 : 9};
    fold__tcp_frame_encode(h, &base);
    CHECK(fold__tcp_frame_parse(h, FOLD__TCP_HDR, &f) == FOLD__TCP_HDR, "base %zu invalid: %s", i, f.why);
    put(h, bad[i].off, bad[i].v, bad[i].n);
    int rc = fold__tcp_frame_parse(h, FOLD__TCP_HDR, &f);
    CHECK(rc == FOLD_EINVAL && f.why != NULL, "malformed header %zu (offset %d) accepted (rc %d)", i, bad[i].off, rc);
  }
  CHECK(fold__tcp_frame_payload(&(fold__tcp_frame){.type = FOLD__TCP_RTS, .len = 9}) == 0, "RTS payload");
  CHECK(fold__tcp_frame_payload(&(fold__tcp_frame){.type = FOLD__TCP_RDATA, .len = 9}) == 9, "RDATA payload");
  CHECK(strcmp(fold__tcp_frame_name(42), "?") == 0, "unknown name");
}

int main(void) {
  t_match();
  t_pick();
  t_addr();
  t_frame();
  return check_report("tcp_unit");
}
