/* test_store.c — the rendezvous stores (tcp and file) with threads as clients, the frame parser, URLs and cards. */
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/store.h"
#include "check.h"
#include "core/internal.h"
#include "transport/transport.h"

#define NCLIENTS 8
#define ROUNDS 5

static int64_t now_ns(void) { return fold__clock_mono(NULL); }
static int64_t in_s(double s) { return now_ns() + (int64_t)(s * 1e9); }

/* ---- pure parts ------------------------------------------------------- */

static void test_parse_frame(void) {
  uint8_t b[FOLD__STORE_FRAME_MAX + 16];
  fold__store_frame f;
  fold__store_put_header(b, FOLD__ST_SET, 3, 2);
  memcpy(b + 8, "abcXY", 5);
  for (size_t n = 0; n < 13; n++)
    CHECK(fold__store_parse_frame(b, n, 0, &f) == 0, "prefix of %zu bytes is incomplete", n);
  CHECK(fold__store_parse_frame(b, 13, 0, &f) == 13 && f.type == FOLD__ST_SET && f.klen == 3 && f.vlen == 2 &&
            memcmp(f.key, "abc", 3) == 0 && memcmp(f.val, "XY", 2) == 0,
        "SET parses");
  CHECK(fold__store_parse_frame(b, 13, 1, &f) < 0, "a request is not a reply");
  b[0] = 0x77;
  CHECK(fold__store_parse_frame(b, 1, 0, &f) < 0 && f.why, "unknown type is refused from one byte");
  b[0] = FOLD__ST_SET, b[1] = 1;
  CHECK(fold__store_parse_frame(b, 2, 0, &f) < 0, "flags must be 0");
  fold__store_put_header(b, FOLD__ST_GET, 0, 4);
  CHECK(fold__store_parse_frame(b, 4, 0, &f) < 0, "empty key refused");
  fold__store_put_header(b, FOLD__ST_GET, FOLD__STORE_KEY_MAX + 1, 4);
  CHECK(fold__store_parse_frame(b, 4, 0, &f) < 0, "257-byte key refused");
  fold__store_put_header(b, FOLD__ST_SET, 1, FOLD__STORE_VAL_MAX + 1);
  CHECK(fold__store_parse_frame(b, 8, 0, &f) < 0, "64 KiB + 1 value refused from the header");
  fold__store_put_header(b, FOLD__ST_SET, 1, 0xffffffffu);
  CHECK(fold__store_parse_frame(b, 8, 0, &f) < 0, "4 GiB value refused");
  fold__store_put_header(b, FOLD__ST_GET, 1, 3);
  CHECK(fold__store_parse_frame(b, 8, 0, &f) < 0, "GET with a 3-byte wait refused");
  fold__store_put_header(b, FOLD__ST_ADD, 1, 4);
  CHECK(fold__store_parse_frame(b, 8, 0, &f) < 0, "ADD with 4 bytes refused");
  fold__store_put_header(b, FOLD__ST_DEL, 2, 0);
  b[8] = 'a', b[9] = ' ';
  CHECK(fold__store_parse_frame(b, 10, 0, &f) < 0, "key with a space refused");
  b[9] = 0;
  CHECK(fold__store_parse_frame(b, 10, 0, &f) < 0, "key with NUL refused");
  fold__store_put_header(b, FOLD__ST_SET, 1, FOLD__STORE_VAL_MAX);
  b[8] = 'k';
  CHECK(fold__store_parse_frame(b, FOLD__STORE_FRAME_MAX, 0, &f) == 8 + 1 + FOLD__STORE_VAL_MAX, "64 KiB value ok");
  fold__store_put_header(b, FOLD__ST_VALUE, 0, 8);
  CHECK(fold__store_parse_frame(b, 16, 1, &f) == 16, "VALUE reply");
  fold__store_put_header(b, FOLD__ST_OK, 1, 0);
  CHECK(fold__store_parse_frame(b, 8, 1, &f) < 0, "reply with a key refused");
  fold__store_put_header(b, FOLD__ST_NOTFOUND, 0, 1);
  CHECK(fold__store_parse_frame(b, 8, 1, &f) < 0, "NOTFOUND with a value refused");
}

static void test_urls(void) {
  fold__store_url u;
  CHECK(fold__store_url_parse("tcp://127.0.0.1:29500", &u) == 0 && u.kind == FOLD__STORE_TCP &&
            strcmp(u.host, "127.0.0.1") == 0 && u.port == 29500, "IPv4 URL");
  CHECK(fold__store_url_parse("tcp://[::1]:80", &u) == 0 && strcmp(u.host, "::1") == 0 && u.port == 80, "IPv6 URL");
  CHECK(fold__store_url_parse("tcp://node-7.cluster:1", &u) == 0 && strcmp(u.host, "node-7.cluster") == 0, "name");
  CHECK(fold__store_url_parse("file:///tmp/x", &u) == 0 && u.kind == FOLD__STORE_FILE && strcmp(u.path, "/tmp/x") == 0,
        "file URL");
  const char *bad[] = {"", "tcp://", "tcp://h", "tcp://h:", "tcp://h:0", "tcp://h:65536", "tcp://h:12x",
                       "tcp://::1:80", "tcp://[::1]80", "tcp://:80", "file://rel/dir", "http://h:1", "tcp://a/b:1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK(fold__store_url_parse(bad[i], &u) == FOLD_EINVAL, "\"%s\" is refused", bad[i]);
  CHECK(strstr(fold_comm_last_error(NULL), "store URL") != NULL, "message names the URL: %s", fold_comm_last_error(NULL));
}

static void test_cards(void) {
  fold__card a, b;
  CHECK(fold__card_self(&a) == 0, "card_self");
  CHECK(a.pid == (int32_t)getpid() && strchr(a.host, '|') != NULL, "host string \"%s\"", a.host);
  snprintf(a.tcp, sizeof a.tcp, "[::1]:4242");
  snprintf(a.shm, sizeof a.shm, "/fold-abc-3");
  char text[512];
  int n = fold__card_encode(&a, text, sizeof text);
  CHECK(n > 0 && fold__card_decode(&b, text, (size_t)n) == 0, "roundtrip of \"%s\"", text);
  CHECK(memcmp(&a, &b, sizeof a) == 0, "decoded card equals the original");
  const char *bad[] = {"", "host=h;pid=1;tcp=;shm=x;", "pid=1;host=h;tcp=;shm=", "host=;pid=1;tcp=;shm=",
                       "host=h;pid=0;tcp=;shm=", "host=h;pid=-5;tcp=;shm=", "host=h;pid=99999999999;tcp=;shm=",
                       "host=h;pid=1;tcp=a=b;shm=", "host=h;pid=1;tcp=", "host=h;pid=1x;tcp=;shm="};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK(fold__card_decode(&b, bad[i], strlen(bad[i])) == FOLD_EINVAL, "malformed card \"%s\" refused", bad[i]);
  char big[400];
  memset(big, 'h', sizeof big);
  memcpy(big, "host=", 5);
  CHECK(fold__card_decode(&b, big, sizeof big) == FOLD_EINVAL, "oversized host refused");
  CHECK(fold__card_decode(&b, "host=h\0;pid=1;tcp=;shm=", 23) == FOLD_EINVAL, "NUL inside refused");
  CHECK(fold__card_encode(&a, text, 10) == -1, "encode reports a short buffer");
}

/* ---- stores with threads as clients --------------------------------------- */

typedef struct cli {
  const char *url;
  fold__auth_key key;
  int id;
  int ok;
} cli;

static void *client_main(void *p) {
  cli *c = p;
  fold__store *s = NULL;
  char claim[64], key[64], val[64];
  snprintf(claim, sizeof claim, "store rank %d", c->id);
  int rc = fold__store_open(c->url, &c->key, claim, in_s(10), 0, &s);
  CHECK(rc == 0, "client %d open: %s", c->id, fold_comm_last_error(NULL));
  if (rc)
    return NULL;
  int good = 1;
  for (int round = 0; round < ROUNDS; round++) {
    snprintf(key, sizeof key, "r%d/val/%d", round, c->id);
    snprintf(val, sizeof val, "value %d of %d", round, c->id);
    good &= fold__store_set(s, key, val, strlen(val), in_s(10)) == 0;
    /* read everyone's, waiting for the slow ones */
    for (int q = 0; q < NCLIENTS; q++) {
      char got[64] = "", want[64];
      size_t len = 0;
      snprintf(key, sizeof key, "r%d/val/%d", round, q);
      snprintf(want, sizeof want, "value %d of %d", round, q);
      rc = fold__store_get(s, key, got, sizeof got - 1, &len, in_s(10));
      CHECK(rc == 0 && len == strlen(want) && memcmp(got, want, len) == 0, "client %d got \"%.*s\" for %s (%d)",
            c->id, (int)len, got, key, rc);
      good &= rc == 0;
    }
    int64_t total = 0;
    good &= fold__store_add(s, "counter", 2, &total, in_s(10)) == 0;
    CHECK(total >= 2 && total <= 2 * NCLIENTS * ROUNDS && total % 2 == 0, "counter %lld", (long long)total);
    snprintf(key, sizeof key, "bar%d", round);
    rc = fold__store_barrier(s, key, c->id, NCLIENTS, in_s(10), NULL);
    CHECK(rc == 0, "client %d barrier %d: %d", c->id, round, rc);
    good &= rc == 0;
    /* after the barrier every add of this round is in */
    int64_t seen = 0;
    good &= fold__store_add(s, "counter", 0, &seen, in_s(10)) == 0;
    CHECK(seen >= 2 * NCLIENTS * (round + 1), "after barrier %d the counter is %lld", round, (long long)seen);
    /* a second barrier so that no client races ahead into the next
     * round's adds while another still reads this round's total */
    snprintf(key, sizeof key, "post%d", round);
    good &= fold__store_barrier(s, key, c->id, NCLIENTS, in_s(10), NULL) == 0;
  }
  fold__store_close(s);
  c->ok = good;
  return NULL;
}

static void run_clients(const char *url, const fold__auth_key *key) {
  pthread_t t[NCLIENTS];
  cli c[NCLIENTS];
  for (int i = 0; i < NCLIENTS; i++) {
    c[i] = (cli){.url = url, .key = *key, .id = i};
    pthread_create(&t[i], NULL, client_main, &c[i]);
  }
  for (int i = 0; i < NCLIENTS; i++) {
    pthread_join(t[i], NULL);
    CHECK(c[i].ok, "client %d of %s failed", i, url);
  }
}

/* Single-client behaviour: timeouts, big values, deletes, limits. */
static void single_client_checks(const char *url, const fold__auth_key *key) {
  fold__store *s = NULL;
  CHECK_OK(fold__store_open(url, key, "store rank 99", in_s(5), 0, &s), NULL);
  if (s == NULL)
    return;
  char buf[16];
  size_t len = 0;
  int64_t t0 = now_ns();
  int rc = fold__store_get(s, "missing", buf, sizeof buf, &len, in_s(0.3));
  double dt = (now_ns() - t0) / 1e9;
  CHECK(rc == FOLD_ETIMEDOUT && dt >= 0.25 && dt < 2.0, "%s: get of a missing key times out (%d after %.2f s)", url,
        rc, dt);
  CHECK(fold__store_get(s, "missing", buf, sizeof buf, &len, 0) == FOLD_ETIMEDOUT, "probe with a past deadline");
  char *big = malloc(FOLD__STORE_VAL_MAX), *back = malloc(FOLD__STORE_VAL_MAX);
  for (int i = 0; i < FOLD__STORE_VAL_MAX; i++)
    big[i] = (char)(i * 7 + 3);
  CHECK_OK(fold__store_set(s, "big", big, FOLD__STORE_VAL_MAX, in_s(5)), NULL);
  CHECK(fold__store_get(s, "big", back, FOLD__STORE_VAL_MAX, &len, in_s(5)) == 0 && len == FOLD__STORE_VAL_MAX &&
            memcmp(big, back, len) == 0, "64 KiB value round trip");
  /* a short buffer gets a prefix and the full length */
  CHECK(fold__store_get(s, "big", buf, 4, &len, in_s(5)) == 0 && len == FOLD__STORE_VAL_MAX &&
            memcmp(buf, big, 4) == 0, "truncated read");
  CHECK(fold__store_set(s, "big", big, FOLD__STORE_VAL_MAX + 1, in_s(5)) == FOLD_EINVAL, "64 KiB + 1 refused");
  CHECK(fold__store_set(s, "bad key", "v", 1, in_s(5)) == FOLD_EINVAL, "key with a space refused");
  CHECK_OK(fold__store_set(s, "empty", "", 0, in_s(5)), NULL);
  CHECK(fold__store_get(s, "empty", buf, sizeof buf, &len, in_s(5)) == 0 && len == 0, "empty value");
  CHECK_OK(fold__store_del(s, "empty", in_s(5)), NULL);
  CHECK(fold__store_get(s, "empty", buf, sizeof buf, &len, 0) == FOLD_ETIMEDOUT, "deleted key is gone");
  int64_t total = 0;
  CHECK(fold__store_add(s, "big", 1, &total, in_s(5)) < 0, "add on a non-counter refused");
  CHECK(fold__store_add(s, "ctr", -5, &total, in_s(5)) == 0 && total == -5, "negative add: %lld", (long long)total);
  /* a key with characters the file store must escape */
  CHECK_OK(fold__store_set(s, "../a/./b%2F", "esc", 3, in_s(5)), NULL);
  CHECK(fold__store_get(s, "../a/./b%2F", buf, sizeof buf, &len, in_s(5)) == 0 && len == 3, "escaped key");
  CHECK(fold__store_get(s, "..%2Fa%2F.%2Fb%252F", buf, sizeof buf, &len, 0) == FOLD_ETIMEDOUT, "no alias");
  free(big);
  free(back);
  fold__store_close(s);
}

static void test_tcp_store(void) {
  fold__store_srv_cfg cfg = {.host = "127.0.0.1", .port = 0, .log_rank = -1};
  fold__auth_key_derive(&cfg.key, "test-store-token", NULL);
  fold__store_srv *srv = NULL;
  int port = 0;
  CHECK_OK(fold__store_srv_start(&cfg, &srv, &port, NULL), NULL);
  if (srv == NULL)
    return;
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
  run_clients(url, &cfg.key);
  single_client_checks(url, &cfg.key);
  /* a client with the wrong token is refused with FOLD_EAUTH */
  fold__auth_key wrong;
  fold__auth_key_derive(&wrong, "other-job", NULL);
  fold__store *s = NULL;
  CHECK_RC(fold__store_open(url, &wrong, "store rank 1", in_s(5), 0, &s), FOLD_EAUTH, NULL);
  CHECK(s == NULL, "no store on failure");
  /* binding the same port again reports EADDRINUSE */
  fold__store_srv *again = NULL;
  int err = 0;
  cfg.port = port;
  CHECK(fold__store_srv_start(&cfg, &again, NULL, &err) == FOLD_ESYS && err == EADDRINUSE, "port in use: %d", err);
  fold__store_srv_stop(srv);
  /* nobody serves: open gives up at its deadline */
  int64_t t0 = now_ns();
  CHECK_RC(fold__store_open(url, &cfg.key, "store rank 1", in_s(0.5), 0, &s), FOLD_ETIMEDOUT, NULL);
  CHECK(now_ns() - t0 < 2000000000LL, "unreachable store gives up in time");
}

/* ---- a starved store: silent for longer than the foreign-store check --------
 * A proxy in front of a store holds its first connection for 7 s before it
 * relays it, as a starved store thread answers late (foldrun's, 128
 * processes on 2 cores, was silent for over 6 s); later connections are
 * relayed at once. After 1 s of silence the client probes, and at a guessed
 * address (MASTER_ADDR/MASTER_PORT) 5 s more of it would make the server a
 * foreign one (tests/bootstrap/foreign_store.sh); at an address given as
 * fold's the client waits on for the greeting and gets in. */
static int raw_connect(int port);

typedef struct proxy {
  int lfd, to_port, held;
  double hold_s;
  atomic_int stop;
  pthread_t th[8];
  int fd[8], nth;
} proxy;

typedef struct proxy_conn {
  proxy *px;
  int fd, hold;
} proxy_conn;

static void *proxy_conn_main(void *arg) {
  proxy_conn *pc = arg;
  proxy *px = pc->px;
  int64_t until = in_s(pc->hold ? px->hold_s : 0);
  while (now_ns() < until && !atomic_load(&px->stop))
    usleep(20000);
  int up = raw_connect(px->to_port);
  char buf[4096];
  while (!atomic_load(&px->stop)) {
    struct pollfd pf[2] = {{.fd = pc->fd, .events = POLLIN}, {.fd = up, .events = POLLIN}};
    if (poll(pf, 2, 50) <= 0)
      continue;
    int done = 0;
    for (int i = 0; i < 2 && !done; i++) {
      if (!pf[i].revents)
        continue;
      ssize_t n = recv(pf[i].fd, buf, sizeof buf, 0);
      done = n <= 0 || send(pf[1 - i].fd, buf, (size_t)n, MSG_NOSIGNAL) != n;
    }
    if (done)
      break;
  }
  close(up);
  shutdown(pc->fd, SHUT_RDWR);
  free(pc);
  return NULL;
}

static void *proxy_main(void *arg) {
  proxy *px = arg;
  while (!atomic_load(&px->stop) && px->nth < 8) {
    struct pollfd pf = {.fd = px->lfd, .events = POLLIN};
    if (poll(&pf, 1, 50) <= 0)
      continue;
    int fd = accept(px->lfd, NULL, NULL);
    proxy_conn *pc = malloc(sizeof *pc);
    if (fd < 0 || pc == NULL) {
      free(pc);
      continue;
    }
    *pc = (proxy_conn){px, fd, !px->held};
    px->held = 1;
    px->fd[px->nth] = fd;
    pthread_create(&px->th[px->nth++], NULL, proxy_conn_main, pc);
  }
  return NULL;
}

static void test_starved_store(void) {
  fold__store_srv_cfg cfg = {.host = "127.0.0.1", .port = 0, .log_rank = -1, .auth_timeout_ns = 1000000000LL};
  fold__auth_key_derive(&cfg.key, "starved-test", NULL);
  fold__store_srv *srv = NULL;
  int port = 0;
  CHECK_OK(fold__store_srv_start(&cfg, &srv, &port, NULL), NULL);
  if (srv == NULL)
    return;
  static proxy px;
  px.to_port = port;
  px.hold_s = 7.0;
  atomic_init(&px.stop, 0);
  px.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  CHECK(bind(px.lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(px.lfd, 16) == 0 &&
            getsockname(px.lfd, (struct sockaddr *)&a, &al) == 0,
        "proxy listener: %s", strerror(errno));
  pthread_t th;
  pthread_create(&th, NULL, proxy_main, &px);
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", ntohs(a.sin_port));
  fold__store *s = NULL;
  int64_t t0 = now_ns();
  int rc = fold__store_open(url, &cfg.key, "store rank 1", in_s(30), 0, &s);
  double took = (double)(now_ns() - t0) / 1e9;
  CHECK(rc == 0, "a store silent for 7 s (starved) was not waited for: %s", fold_comm_last_error(NULL));
  CHECK(took > 6.0, "the proxy did not hold the first connection (in after %.2f s)", took);
  char v[8] = "";
  size_t len = 0;
  CHECK(s && fold__store_set(s, "k", "v", 1, in_s(5)) == 0 && fold__store_get(s, "k", v, sizeof v, &len, in_s(5)) == 0 &&
            len == 1 && v[0] == 'v',
        "the store works through the proxy");
  if (s)
    fold__store_close(s);
  atomic_store(&px.stop, 1);
  pthread_join(th, NULL);
  for (int i = 0; i < px.nth; i++)
    pthread_join(px.th[i], NULL);
  for (int i = 0; i < px.nth; i++)
    close(px.fd[i]);
  close(px.lfd);
  fold__store_srv_stop(srv);
}

/* ---- raw clients: framing violations, stalls, pipelining -------------------- */

static int raw_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect: %s", strerror(errno));
  return fd;
}

/* 1 if the server closed fd within `secs` (EOF or reset), draining replies. */
static int closed_within(int fd, double secs) {
  int64_t until = in_s(secs);
  char buf[4096];
  while (now_ns() < until) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 20) <= 0)
      continue;
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0)
      return 1;
  }
  return 0;
}

static int raw_authed(int port, const fold__auth_key *k) {
  int fd = raw_connect(port);
  CHECK(fold__auth_client(fd, k, "store raw", in_s(5)) == 0, "raw client authenticates");
  return fd;
}

static void test_hostile_clients(void) {
  fold__store_srv_cfg cfg = {.host = "127.0.0.1", .port = 0, .log_rank = -1, .auth_timeout_ns = 300000000LL};
  fold__auth_key_derive(&cfg.key, "hostile-test", NULL);
  fold__store_srv *srv = NULL;
  int port = 0;
  CHECK_OK(fold__store_srv_start(&cfg, &srv, &port, NULL), NULL);
  if (srv == NULL)
    return;
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
  /* a stalled handshake does not block a real client, and is dropped at its deadline */
  int stall = raw_connect(port);
  fold__store *s = NULL;
  int64_t t0 = now_ns();
  CHECK_OK(fold__store_open(url, &cfg.key, "store rank 0", in_s(5), 0, &s), NULL);
  CHECK(s && fold__store_set(s, "k", "v", 1, in_s(5)) == 0, "real client works beside a stalled one");
  CHECK(now_ns() - t0 < 200000000LL, "real client was not held up by the staller");
  CHECK(closed_within(stall, 2.0), "stalled handshake is closed by the server");
  close(stall);
  /* a claim that is not a store client */
  int fd = raw_connect(port);
  CHECK(fold__auth_client(fd, &cfg.key, "data rank 1", in_s(5)) == 0, "handshake itself succeeds");
  CHECK(closed_within(fd, 2.0), "non-store claim is closed");
  close(fd);
  /* framing violations after a good handshake: each closes only that connection */
  uint8_t bad[5][16];
  size_t badn[5] = {8, 8, 8, 8, 10};
  fold__store_put_header(bad[0], 0x42, 1, 0);                       /* unknown type */
  fold__store_put_header(bad[1], FOLD__ST_SET, 0, 1);               /* empty key */
  fold__store_put_header(bad[2], FOLD__ST_SET, 1, 0x7fffffff);      /* 2 GiB value */
  fold__store_put_header(bad[3], FOLD__ST_OK, 0, 0);                /* a reply type as a request */
  fold__store_put_header(bad[4], FOLD__ST_DEL, 2, 0);               /* key with a control byte */
  bad[4][8] = 'a', bad[4][9] = '\n';
  long before = fold__store_srv_rejected(srv);
  for (int i = 0; i < 5; i++) {
    fd = raw_authed(port, &cfg.key);
    CHECK(send(fd, bad[i], badn[i], MSG_NOSIGNAL) == (ssize_t)badn[i], "send");
    CHECK(closed_within(fd, 2.0), "bad frame %d closes the connection", i);
    close(fd);
  }
  CHECK(fold__store_srv_rejected(srv) >= before + 5, "rejections counted: %ld", fold__store_srv_rejected(srv) - before);
  /* a header promising more than is sent: nothing breaks, and the client's
   * half frame simply waits (then the client leaves) */
  fd = raw_authed(port, &cfg.key);
  uint8_t half[8];
  fold__store_put_header(half, FOLD__ST_SET, 4, FOLD__STORE_VAL_MAX);
  CHECK(send(fd, half, 8, MSG_NOSIGNAL) == 8, "send");
  close(fd);
  /* pipelining: 200 GETs of a 64 KiB value sent without reading (12.8 MiB
   * of replies): the server throttles and still answers every one */
  char *big = calloc(1, FOLD__STORE_VAL_MAX);
  big[0] = 'B', big[FOLD__STORE_VAL_MAX - 1] = 'E';
  CHECK_OK(fold__store_set(s, "bigv", big, FOLD__STORE_VAL_MAX, in_s(5)), NULL);
  fd = raw_authed(port, &cfg.key);
  uint8_t req[8 + 4 + 4];
  fold__store_put_header(req, FOLD__ST_GET, 4, 4);
  memcpy(req + 8, "bigv", 4);
  memset(req + 12, 0, 4);
  int nreq = 200;
  uint8_t *all = malloc(sizeof req * (size_t)nreq);
  for (int i = 0; i < nreq; i++)
    memcpy(all + i * sizeof req, req, sizeof req);
  CHECK(send(fd, all, sizeof req * (size_t)nreq, MSG_NOSIGNAL) == (ssize_t)(sizeof req * (size_t)nreq), "pipelined send");
  /* meanwhile another client is served */
  CHECK(fold__store_set(s, "k2", "v", 1, in_s(5)) == 0, "others served during a pipeline");
  size_t want = (size_t)nreq * (8 + FOLD__STORE_VAL_MAX), got = 0;
  uint8_t *rbuf = malloc(8 + FOLD__STORE_VAL_MAX);
  int ok = 1;
  size_t at = 0; /* offset within the current reply */
  int64_t until = in_s(10);
  while (got < want && now_ns() < until) {
    ssize_t n = recv(fd, rbuf + at, 8 + FOLD__STORE_VAL_MAX - at, 0);
    if (n <= 0) {
      ok = 0;
      break;
    }
    at += (size_t)n, got += (size_t)n;
    if (at == 8 + FOLD__STORE_VAL_MAX) {
      ok &= rbuf[0] == FOLD__ST_VALUE && rbuf[8] == 'B' && rbuf[8 + FOLD__STORE_VAL_MAX - 1] == 'E';
      at = 0;
    }
  }
  CHECK(ok && got == want, "all %d pipelined replies arrived intact (%zu of %zu bytes)", nreq, got, want);
  close(fd);
  free(all);
  free(rbuf);
  free(big);
  fold__store_close(s);
  fold__store_srv_stop(srv);
}

/* The same over IPv6 loopback, when this machine has it. */
static void test_ipv6(void) {
  fold__store_srv_cfg cfg = {.host = "::1", .port = 0, .log_rank = -1};
  fold__auth_key_derive(&cfg.key, "v6", NULL);
  fold__store_srv *srv = NULL;
  int port = 0, err = 0;
  if (fold__store_srv_start(&cfg, &srv, &port, &err) != 0) {
    printf("test_ipv6: no IPv6 loopback here (%s): skipped\n", strerror(err));
    return;
  }
  char url[64];
  snprintf(url, sizeof url, "tcp://[::1]:%d", port);
  fold__store *s = NULL;
  CHECK_OK(fold__store_open(url, &cfg.key, "store rank 0", in_s(5), 0, &s), NULL);
  char v[8];
  size_t len = 0;
  CHECK(s && fold__store_set(s, "six", "6", 1, in_s(5)) == 0 && fold__store_get(s, "six", v, sizeof v, &len, in_s(5)) == 0 &&
            len == 1 && v[0] == '6', "set/get over IPv6");
  fold__store_close(s);
  fold__store_srv_stop(srv);
}

static void test_file_store(void) {
  char dir[] = "/tmp/fold-store-test-XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  char url[128];
  snprintf(url, sizeof url, "file://%s/sub", dir); /* one level is created */
  fold__auth_key key;
  fold__auth_key_derive(&key, NULL, url);
  run_clients(url, &key);
  single_client_checks(url, &key);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0, "cleanup");
}

int main(void) {
  test_parse_frame();
  test_urls();
  test_cards();
  test_tcp_store();
  test_hostile_clients();
  test_starved_store();
  test_ipv6();
  test_file_store();
  return check_report("test_store");
}
