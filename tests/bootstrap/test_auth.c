/* test_auth.c — the HMAC challenge-response: success, wrong key, impostor server, truncated and garbage handshakes. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/auth.h"
#include "check.h"
#include "core/internal.h"

static int64_t now_ns(void) { return fold__clock_mono(NULL); }

/* Drive a server handshake on fd until it finishes (poll-based). */
static int run_server(int fd, const fold__auth_key *k, int64_t deadline, char *claim_out) {
  fold__auth_srv a;
  int rc = fold__auth_srv_start(&a, deadline);
  if (rc)
    return rc;
  for (;;) {
    rc = fold__auth_srv_step(&a, fd, k, now_ns());
    if (rc != 0)
      break;
    struct pollfd p = {.fd = fd, .events = (short)fold__auth_srv_events(&a)};
    poll(&p, 1, 20);
  }
  if (rc == 1 && claim_out)
    strcpy(claim_out, a.claim);
  return rc;
}

typedef struct client_arg {
  int fd;
  fold__auth_key key;
  const char *claim;
  int64_t deadline;
  int rc;
} client_arg;

static void *client_main(void *p) {
  client_arg *c = p;
  c->rc = fold__auth_client(c->fd, &c->key, c->claim, c->deadline);
  return NULL;
}

static void pair(int sv[2]) {
  int rc = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
  CHECK(rc == 0, "socketpair: %s", strerror(errno));
  fcntl(sv[0], F_SETFL, O_NONBLOCK);
}

/* A full handshake between a server keyed ks and a client keyed kc. */
static void handshake(const fold__auth_key *ks, const fold__auth_key *kc, const char *claim, int *srv_rc,
                      int *cli_rc, char *claim_out) {
  int sv[2];
  pair(sv);
  client_arg ca = {.fd = sv[1], .key = *kc, .claim = claim, .deadline = now_ns() + 2000000000LL};
  pthread_t t;
  pthread_create(&t, NULL, client_main, &ca);
  *srv_rc = run_server(sv[0], ks, now_ns() + 2000000000LL, claim_out);
  close(sv[0]); /* a rejected client sees the close */
  pthread_join(t, NULL);
  close(sv[1]);
  *cli_rc = ca.rc;
}

static void test_key_derive(void) {
  fold__auth_key a, b, c, d;
  fold__auth_key_derive(&a, "secret", "tcp://h:1");
  fold__auth_key_derive(&b, "secret", "tcp://other:2");
  fold__auth_key_derive(&c, NULL, "tcp://h:1");
  fold__auth_key_derive(&d, "", "tcp://h:1");
  CHECK(a.from_token == 1 && c.from_token == 0 && d.from_token == 0, "from_token flags");
  CHECK(memcmp(a.bytes, b.bytes, 32) == 0, "a token key does not depend on the store");
  CHECK(memcmp(a.bytes, c.bytes, 32) != 0, "token and store keys differ");
  CHECK(memcmp(c.bytes, d.bytes, 32) == 0, "empty token means no token");
  fold__auth_key e;
  fold__auth_key_derive(&e, NULL, "tcp://h:2");
  CHECK(memcmp(c.bytes, e.bytes, 32) != 0, "different stores give different keys");
  /* the token "tcp://h:1" must not collide with the store "tcp://h:1" */
  fold__auth_key f;
  fold__auth_key_derive(&f, "tcp://h:1", NULL);
  CHECK(memcmp(c.bytes, f.bytes, 32) != 0, "domain separation of token and store");
}

static void test_success_and_wrong_key(void) {
  fold__auth_key k, other;
  fold__auth_key_derive(&k, "job-a", NULL);
  fold__auth_key_derive(&other, "job-b", NULL);
  int s, c;
  char claim[FOLD__AUTH_CLAIM_MAX + 1] = "";
  handshake(&k, &k, "store rank 7", &s, &c, claim);
  CHECK(s == 1 && c == 0, "good handshake: server %d client %d", s, c);
  CHECK(strcmp(claim, "store rank 7") == 0, "claim arrives: \"%s\"", claim);
  handshake(&k, &other, "store rank 1", &s, &c, NULL);
  CHECK(s == FOLD_EAUTH, "server refuses a wrong key: %d", s);
  CHECK(c == FOLD_EAUTH, "client sees FOLD_EAUTH for a wrong key: %d", c);
  /* empty and maximal claims */
  handshake(&k, &k, "", &s, &c, claim);
  CHECK(s == 1 && c == 0 && claim[0] == '\0', "empty claim");
  char big[FOLD__AUTH_CLAIM_MAX + 2];
  memset(big, 'x', FOLD__AUTH_CLAIM_MAX);
  big[FOLD__AUTH_CLAIM_MAX] = '\0';
  handshake(&k, &k, big, &s, &c, claim);
  CHECK(s == 1 && c == 0 && strcmp(claim, big) == 0, "64-byte claim");
  big[FOLD__AUTH_CLAIM_MAX] = 'x', big[FOLD__AUTH_CLAIM_MAX + 1] = '\0';
  int sv[2];
  pair(sv);
  CHECK(fold__auth_client(sv[1], &k, big, now_ns() + 100000000) == FOLD_EINVAL, "65-byte claim is refused locally");
  close(sv[0]), close(sv[1]);
}

/* Send raw bytes as the client and report what the server decides. */
static int server_sees(const void *bytes, size_t n, int close_after, int64_t srv_timeout_ns) {
  fold__auth_key k;
  fold__auth_key_derive(&k, "job", NULL);
  int sv[2];
  pair(sv);
  uint8_t hello[FOLD__AUTH_HELLO_LEN];
  fold__auth_srv a;
  fold__auth_srv_start(&a, now_ns() + srv_timeout_ns);
  int rc = fold__auth_srv_step(&a, sv[0], &k, now_ns()); /* sends HELLO */
  CHECK(rc == 0, "server waits for the proof: %d", rc);
  CHECK(read(sv[1], hello, sizeof hello) == (ssize_t)sizeof hello, "HELLO is 44 bytes");
  CHECK(memcmp(hello, "FOLDAUTH", 8) == 0, "HELLO magic");
  if (n)
    CHECK(write(sv[1], bytes, n) == (ssize_t)n, "write");
  if (close_after)
    shutdown(sv[1], SHUT_WR);
  int64_t t0 = now_ns();
  while ((rc = fold__auth_srv_step(&a, sv[0], &k, now_ns())) == 0 && now_ns() - t0 < 5000000000LL) {
    struct pollfd p = {.fd = sv[0], .events = POLLIN};
    poll(&p, 1, 10);
  }
  close(sv[0]), close(sv[1]);
  return rc;
}

static void test_truncated_and_garbage(void) {
  uint8_t buf[200];
  memset(buf, 0x41, sizeof buf);
  /* 20 bytes then EOF: truncated proof */
  CHECK(server_sees(buf, 20, 1, 2000000000LL) == FOLD_EPEER, "truncated proof + close -> FOLD_EPEER");
  /* nothing then EOF */
  CHECK(server_sees(NULL, 0, 1, 2000000000LL) == FOLD_EPEER, "silent close -> FOLD_EPEER");
  /* claim length 0x4141 > 64: refused as soon as the length is in */
  CHECK(server_sees(buf, 40, 0, 2000000000LL) == FOLD_EAUTH, "oversized claim length -> FOLD_EAUTH");
  /* well-formed lengths, garbage MAC */
  uint8_t proof[32 + 2 + 5 + 32];
  memset(proof, 7, sizeof proof);
  proof[32] = 5, proof[33] = 0;
  memcpy(proof + 34, "hello", 5);
  CHECK(server_sees(proof, sizeof proof, 0, 2000000000LL) == FOLD_EAUTH, "garbage MAC -> FOLD_EAUTH");
  /* a stall mid-handshake ends at the deadline */
  int64_t t0 = now_ns();
  int rc = server_sees(buf, 10, 0, 300000000LL);
  double dt = (now_ns() - t0) / 1e9;
  CHECK(rc == FOLD_ETIMEDOUT && dt < 2.0, "stalled client -> FOLD_ETIMEDOUT after the deadline (%d, %.2f s)", rc, dt);
}

/* A fake server: valid HELLO, then reads the proof and answers junk. */
static void *impostor(void *p) {
  int fd = *(int *)p;
  uint8_t hello[FOLD__AUTH_HELLO_LEN] = "FOLDAUTH";
  hello[8] = 1;
  if (write(fd, hello, sizeof hello) < 0)
    return NULL;
  uint8_t in[256];
  ssize_t n = read(fd, in, sizeof in);
  (void)n;
  uint8_t junk[FOLD__AUTH_MAC];
  memset(junk, 0x5a, sizeof junk);
  if (write(fd, junk, sizeof junk) < 0)
    return NULL;
  return NULL;
}

static void test_client_checks_server(void) {
  fold__auth_key k;
  fold__auth_key_derive(&k, "job", NULL);
  int sv[2];
  pair(sv);
  pthread_t t;
  pthread_create(&t, NULL, impostor, &sv[0]);
  int rc = fold__auth_client(sv[1], &k, "store rank 0", now_ns() + 2000000000LL);
  pthread_join(t, NULL);
  CHECK(rc == FOLD_EAUTH, "client refuses a server that cannot prove the key: %d", rc);
  close(sv[0]), close(sv[1]);

  /* wrong magic / version */
  pair(sv);
  uint8_t bad[FOLD__AUTH_HELLO_LEN] = "NOTFOLD!";
  CHECK(write(sv[0], bad, sizeof bad) == (ssize_t)sizeof bad, "write");
  CHECK(fold__auth_client(sv[1], &k, "x", now_ns() + 1000000000LL) == FOLD_EAUTH, "bad magic -> FOLD_EAUTH");
  close(sv[0]), close(sv[1]);
  pair(sv);
  uint8_t v2[FOLD__AUTH_HELLO_LEN] = "FOLDAUTH";
  v2[8] = 2;
  CHECK(write(sv[0], v2, sizeof v2) == (ssize_t)sizeof v2, "write");
  CHECK(fold__auth_client(sv[1], &k, "x", now_ns() + 1000000000LL) == FOLD_EAUTH, "bad version -> FOLD_EAUTH");
  close(sv[0]), close(sv[1]);
  /* a server that says nothing: the client's deadline holds */
  pair(sv);
  int64_t t0 = now_ns();
  rc = fold__auth_client(sv[1], &k, "x", now_ns() + 200000000LL);
  CHECK(rc == FOLD_ETIMEDOUT && now_ns() - t0 < 1500000000LL, "silent server -> FOLD_ETIMEDOUT (%d)", rc);
  close(sv[0]), close(sv[1]);
}

int main(void) {
  test_key_derive();
  test_success_and_wrong_key();
  test_truncated_and_garbage();
  test_client_checks_server();
  return check_report("test_auth");
}
