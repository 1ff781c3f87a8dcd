/* test_store_dos.c — regressions: silent strangers filling the store's handshake table, a flood of refusals in the log, and rank 0 destroying its comm right after the rendezvous. */
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/store.h"
#include "check.h"
#include "core/internal.h"

#define NSILENT 300   /* more than the server's 256 pending handshakes */
#define NROUNDS 100   /* rendezvous + immediate destroy */

static int64_t now_ns(void) { return fold__clock_mono(NULL); }
static int64_t in_s(double s) { return now_ns() + (int64_t)(s * 1e9); }

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t l = sizeof a;
  bind(fd, (struct sockaddr *)&a, sizeof a);
  getsockname(fd, (struct sockaddr *)&a, &l);
  close(fd);
  return ntohs(a.sin_port);
}

/* ---- 1: silent connections do not lock a real client out ------------------ */

static void test_silent_flood(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < NSILENT + 64) {
    rl.rlim_cur = rl.rlim_max < NSILENT + 64 ? rl.rlim_max : NSILENT + 64;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  fold__store_srv_cfg cfg = {.host = "127.0.0.1", .port = 0, .log_rank = -1};
  fold__auth_key_derive(&cfg.key, "dos-test", NULL);
  fold__store_srv *srv = NULL;
  int port = 0;
  CHECK_OK(fold__store_srv_start(&cfg, &srv, &port, NULL), NULL);
  if (srv == NULL)
    return;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int fds[NSILENT], n = 0;
  for (int i = 0; i < NSILENT; i++) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
      CHECK(0, "silent connection %d: %s", i, strerror(errno));
      if (fd >= 0)
        close(fd);
      break;
    }
    fds[n++] = fd;
  }
  fold__sleep_ns(200 * 1000000LL); /* let the server accept them all */
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
  fold__store *s = NULL;
  int64_t t0 = now_ns();
  CHECK_OK(fold__store_open(url, &cfg.key, "store rank 1", in_s(10), 0, &s), NULL);
  char v[8] = "";
  size_t len = 0;
  CHECK(s && fold__store_set(s, "k", "val", 3, in_s(5)) == 0, "set beside %d silent connections", n);
  CHECK(s && fold__store_get(s, "k", v, sizeof v, &len, in_s(5)) == 0 && len == 3 && memcmp(v, "val", 3) == 0,
        "get beside %d silent connections", n);
  double secs = (now_ns() - t0) / 1e9;
  CHECK(secs < 3.0, "real client served within %.3f s (wanted < 3 s)", secs);
  CHECK(fold__store_srv_rejected(srv) >= NSILENT - 256, "oldest strangers evicted: %ld rejected",
        fold__store_srv_rejected(srv));
  fold__store_close(s);
  for (int i = 0; i < n; i++)
    close(fds[i]);
  fold__store_srv_stop(srv);
}

/* ---- 1b: a flood of strangers is a few log lines, not one per stranger ---- */

#define NFLOOD 2000

static void test_refusal_flood(void) {
  setenv("FOLD_DEBUG", "WARN", 1);
  fold__store_srv_cfg cfg = {.host = "127.0.0.1", .port = 0, .log_rank = -1};
  fold__auth_key_derive(&cfg.key, "flood-test", NULL);
  fold__store_srv *srv = NULL;
  int port = 0;
  /* stderr into a file for the duration */
  char path[] = "/tmp/fold_store_floodXXXXXX";
  int fd = mkstemp(path), saved = dup(2);
  CHECK(fd >= 0 && saved >= 0, "capture setup");
  fflush(stderr);
  dup2(fd, 2);
  close(fd);
  CHECK_OK(fold__store_srv_start(&cfg, &srv, &port, NULL), NULL);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  char junk[40];
  memset(junk, 'x', sizeof junk);
  int sent = 0;
  int64_t until = in_s(60); /* bounded in time as well as count */
  for (int i = 0; srv && i < NFLOOD && now_ns() < until; i++) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0) {
      ssize_t w = send(s, junk, sizeof junk, MSG_NOSIGNAL);
      sent += w > 0;
    }
    if (s >= 0)
      close(s);
  }
  while (srv && fold__store_srv_rejected(srv) < sent && now_ns() < until)
    fold__sleep_ns(10 * 1000000LL);
  long rejected = srv ? fold__store_srv_rejected(srv) : 0;
  fold__store_srv_stop(srv); /* flushes the summaries */
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  static char text[1 << 16];
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
  if (f)
    fclose(f);
  text[n] = '\0';
  unlink(path);
  int lines = 0, shown = 0;
  long held = 0;
  for (char *l = text, *e; *l; l = e + 1) {
    if ((e = strchr(l, '\n')) == NULL)
      break;
    *e = '\0';
    lines++;
    char *m = strstr(l, " more like this in the last ");
    if (m) {
      while (m > l && m[-1] >= '0' && m[-1] <= '9')
        m--;
      held += strtol(m, NULL, 10);
    } else if (strstr(l, "WARN: store: closing connection from ")) {
      shown++;
    }
  }
  CHECK(sent >= NFLOOD / 2 && rejected == sent, "%d strangers sent, %ld refused", sent, rejected);
  CHECK(lines < 20, "%d log lines for %ld refusals", lines, rejected);
  CHECK(shown + held == rejected, "%d lines shown + %ld summarised != %ld refusals:\n%s", shown, held, rejected, text);
  printf("refusal flood: %ld refusals, %d log lines\n", rejected, lines);
  setenv("FOLD_DEBUG", "NONE", 1);
}

/* ---- 2: rank 0 destroys right after init; the last rank must not fail ----- */

static char rv_url[64];
static int rv_rc[2];
static char rv_msg[2][FOLD__ERRLEN];
static atomic_int busy_stop;

static void *busy_main(void *p) {
  (void)p;
  volatile unsigned long x = 0;
  while (!atomic_load(&busy_stop))
    x++;
  return NULL;
}

static void *rv_rank(void *p) {
  int r = (int)(intptr_t)p;
  fold_comm *c = NULL;
  rv_rc[r] = fold_comm_init(&c, r, 2, rv_url);
  snprintf(rv_msg[r], sizeof rv_msg[r], "%s", rv_rc[r] ? fold_comm_last_error(NULL) : "ok");
  fold_comm_destroy(c); /* rank 0: stops the store server at once */
  return NULL;
}

static void test_early_destroy(void) {
  setenv("FOLD_JOB_TOKEN", "early-destroy", 1);
  setenv("FOLD_TRANSPORT", "tcp", 1);
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int nbusy = ncpu < 1 ? 1 : ncpu > 8 ? 8 : (int)ncpu;
  pthread_t busy[8];
  atomic_store(&busy_stop, 0);
  for (int i = 0; i < nbusy; i++)
    pthread_create(&busy[i], NULL, busy_main, NULL);
  int fails = 0, it;
  int64_t until = in_s(40); /* bounded: stop early rather than hit the ctest timeout */
  for (it = 0; it < NROUNDS && now_ns() < until; it++) {
    snprintf(rv_url, sizeof rv_url, "tcp://127.0.0.1:%d", free_port());
    pthread_t th[2];
    for (intptr_t r = 0; r < 2; r++)
      pthread_create(&th[r], NULL, rv_rank, (void *)r);
    for (int r = 0; r < 2; r++)
      pthread_join(th[r], NULL);
    if (rv_rc[0] || rv_rc[1]) {
      if (++fails <= 3)
        fprintf(stderr, "round %d: rank 0 rc=%d (%s); rank 1 rc=%d (%s)\n", it, rv_rc[0], rv_msg[0], rv_rc[1],
                rv_msg[1]);
    }
  }
  atomic_store(&busy_stop, 1);
  for (int i = 0; i < nbusy; i++)
    pthread_join(busy[i], NULL);
  CHECK(fails == 0, "%d of %d rendezvous with an immediate destroy failed", fails, it);
  CHECK(it >= 20, "only %d rounds ran in the time allowed", it);
  printf("early destroy: %d rounds, %d failed\n", it, fails);
  unsetenv("FOLD_TRANSPORT");
  unsetenv("FOLD_JOB_TOKEN");
}

int main(void) {
  setenv("FOLD_DEBUG", "NONE", 1); /* evictions are logged at WARN: expected here */
  test_silent_flood();
  test_refusal_flood();
  test_early_destroy();
  return check_report("test_store_dos");
}
