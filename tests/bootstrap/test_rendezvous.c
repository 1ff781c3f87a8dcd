/* test_rendezvous.c — fold_comm_init end to end with threads and processes as ranks: success, timeouts naming ranks, strangers, wrong tokens, argument errors. */
#include <errno.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/store.h"
#include "check.h"
#include "core/internal.h"

static int64_t now_ns(void) { return fold__clock_mono(NULL); }

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t l = sizeof a;
  bind(fd, (struct sockaddr *)&a, sizeof a);
  getsockname(fd, (struct sockaddr *)&a, &l);
  close(fd);
  return ntohs(a.sin_port);
}

typedef struct rank_arg {
  const char *url;
  int rank, size;
  int rc;
  char msg[FOLD__ERRLEN];
  int ring_ok;
  double secs;
} rank_arg;

/* Init, pass a token around the ring, destroy. */
static void *rank_main(void *p) {
  rank_arg *a = p;
  fold_comm *c = NULL;
  int64_t t0 = now_ns();
  a->rc = fold_comm_init(&c, a->rank, a->size, a->url);
  a->secs = (now_ns() - t0) / 1e9;
  snprintf(a->msg, sizeof a->msg, "%s", fold_comm_last_error(NULL));
  if (a->rc != FOLD_OK) {
    CHECK(c == NULL, "comm is NULL on failure");
    return NULL;
  }
  int n = a->size, r = a->rank;
  long tok = 0;
  int rc = 0;
  if (n > 1) {
    if (r == 0) {
      rc = fold_send(&tok, 1, FOLD_INT64, 1 % n, 5, c);
      if (!rc)
        rc = fold_recv(&tok, 1, FOLD_INT64, n - 1, 5, c);
      a->ring_ok = rc == 0 && tok == (long)n * (n - 1) / 2;
    } else {
      rc = fold_recv(&tok, 1, FOLD_INT64, r - 1, 5, c);
      tok += r;
      if (!rc)
        rc = fold_send(&tok, 1, FOLD_INT64, (r + 1) % n, 5, c);
      a->ring_ok = rc == 0;
    }
    CHECK(rc == 0, "rank %d ring: %s", r, fold_comm_last_error(c));
  } else {
    a->ring_ok = 1;
  }
  fold_comm_destroy(c);
  return NULL;
}

/* Run the listed ranks of a size-`size` job as threads. */
static void run_ranks(const char *url, int size, const int *ranks, int nranks, rank_arg *out) {
  pthread_t t[16];
  for (int i = 0; i < nranks; i++) {
    out[i] = (rank_arg){.url = url, .rank = ranks[i], .size = size};
    pthread_create(&t[i], NULL, rank_main, &out[i]);
  }
  for (int i = 0; i < nranks; i++)
    pthread_join(t[i], NULL);
}

static void run_all(const char *url, int size, const char *what) {
  int ranks[16];
  rank_arg a[16];
  for (int i = 0; i < size; i++)
    ranks[i] = i;
  run_ranks(url, size, ranks, size, a);
  for (int i = 0; i < size; i++)
    CHECK(a[i].rc == 0 && a[i].ring_ok, "%s: rank %d: %s (%s)", what, i, fold_strerror(a[i].rc), a[i].msg);
}

static void test_args(void) {
  fold_comm *c = (fold_comm *)1;
  CHECK_RC(fold_comm_init(NULL, 0, 1, "file:///tmp/x"), FOLD_EINVAL, NULL);
  CHECK_RC(fold_comm_init(&c, 2, 2, "file:///tmp/x"), FOLD_EINVAL, NULL);
  CHECK(c == NULL, "*comm is NULL on failure");
  CHECK(strstr(fold_comm_last_error(NULL), "rank 2") != NULL, "message: %s", fold_comm_last_error(NULL));
  CHECK_RC(fold_comm_init(&c, -1, 2, "file:///tmp/x"), FOLD_EINVAL, NULL);
  CHECK_RC(fold_comm_init(&c, 0, 0, "file:///tmp/x"), FOLD_EINVAL, NULL);
  CHECK_RC(fold_comm_init(&c, 0, 1, NULL), FOLD_EINVAL, NULL);
  CHECK_RC(fold_comm_init(&c, 0, 1, "udp://h:1"), FOLD_EINVAL, NULL);
  CHECK(strstr(fold_comm_last_error(NULL), "udp://h:1") != NULL, "bad URL named: %s", fold_comm_last_error(NULL));
  setenv("FOLD_TRANSPORT", "inproc", 1);
  CHECK_RC(fold_comm_init(&c, 0, 1, "file:///tmp/x"), FOLD_EINVAL, NULL);
  CHECK(strstr(fold_comm_last_error(NULL), "inproc") != NULL, "inproc named: %s", fold_comm_last_error(NULL));
  setenv("FOLD_TRANSPORT", "carrier-pigeon", 1);
  CHECK_RC(fold_comm_init(&c, 0, 1, "file:///tmp/x"), FOLD_EINVAL, NULL);
  unsetenv("FOLD_TRANSPORT");
  /* fold_init with no launcher variables is a world of one (issue 9, item
   * 12); with only half a launcher it says what it looked for */
  const char *vars[] = {"FOLD_RANK", "FOLD_SIZE", "RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                        "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "FOLD_STORE", "MASTER_ADDR",
                        "MASTER_PORT"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    unsetenv(vars[i]);
  CHECK_RC(fold_init(&c), FOLD_OK, NULL);
  CHECK(c != NULL && fold_comm_rank(c) == 0 && fold_comm_size(c) == 1, "singleton: rank %d of %d",
        fold_comm_rank(c), fold_comm_size(c));
  fold_comm_destroy(c);
  setenv("SLURM_NTASKS", "4", 1);
  CHECK_RC(fold_init(&c), FOLD_EINVAL, NULL);
  CHECK(c == NULL, "*comm is NULL on failure");
  const char *m = fold_comm_last_error(NULL);
  CHECK(strstr(m, "SLURM_NTASKS=4") && strstr(m, "FOLD_RANK") && strstr(m, "OMPI_COMM_WORLD_RANK") &&
            strstr(m, "PMI_RANK") && strstr(m, "SLURM_PROCID") && strstr(m, "WORLD_SIZE"), "fold_init message: %s", m);
  unsetenv("SLURM_NTASKS");
  setenv("FOLD_RANK", "0", 1);
  setenv("FOLD_SIZE", "2", 1);
  CHECK_RC(fold_init(&c), FOLD_EINVAL, NULL);
  m = fold_comm_last_error(NULL);
  CHECK(strstr(m, "FOLD_STORE") && strstr(m, "MASTER_ADDR"), "fold_init store message: %s", m);
  setenv("FOLD_RANK", "5", 1);
  CHECK_RC(fold_init(&c), FOLD_EINVAL, NULL);
  unsetenv("FOLD_RANK");
  unsetenv("FOLD_SIZE");
}

/* size 3, only ranks 0 and 2 start: both fail in ~FOLD_TIMEOUT naming rank 1. */
static void test_timeout_names_missing(const char *url, const char *what) {
  setenv("FOLD_TIMEOUT", "2", 1);
  int ranks[2] = {0, 2};
  rank_arg a[2];
  run_ranks(url, 3, ranks, 2, a);
  for (int i = 0; i < 2; i++) {
    CHECK(a[i].rc == FOLD_ETIMEDOUT, "%s: rank %d: %s (%s)", what, ranks[i], fold_strerror(a[i].rc), a[i].msg);
    CHECK(strstr(a[i].msg, "rank 1 did not join within 2 s") != NULL, "%s: message: %s", what, a[i].msg);
    CHECK(strstr(a[i].msg, "ranks 0") == NULL && strstr(a[i].msg, ", 2") == NULL, "only rank 1 named: %s", a[i].msg);
    CHECK(a[i].secs > 1.8 && a[i].secs < 5.0, "%s: took %.2f s", what, a[i].secs);
  }
  unsetenv("FOLD_TIMEOUT");
}

/* ---- strangers hammer the store port during a rendezvous ---- */

static atomic_int stop_strangers;
static int stranger_port;

static int dial(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)stranger_port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static void *stranger(void *p) {
  int kind = (int)(intptr_t)p;
  int stalled[8], nst = 0;
  while (!atomic_load(&stop_strangers)) {
    int fd = dial();
    if (fd < 0) {
      usleep(5000); /* rank 0 not serving yet */
      continue;
    }
    uint8_t buf[4096];
    memset(buf, kind == 0 ? 0xff : 'G', sizeof buf);
    if (kind == 0) { /* garbage */
      ssize_t w = send(fd, buf, sizeof buf, MSG_NOSIGNAL);
      (void)w;
      close(fd);
    } else if (kind == 1) { /* a proof claiming an enormous claim length */
      memset(buf, 0, 34);
      buf[32] = 0xff, buf[33] = 0xff;
      ssize_t w = send(fd, buf, 34, MSG_NOSIGNAL);
      (void)w;
      close(fd);
    } else if (nst < 8) { /* nothing at all: keep it open, stalled */
      stalled[nst++] = fd;
    } else {
      close(fd);
    }
    usleep(2000);
  }
  for (int i = 0; i < nst; i++)
    close(stalled[i]);
  return NULL;
}

static void test_strangers(void) {
  stranger_port = free_port();
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", stranger_port);
  atomic_store(&stop_strangers, 0);
  pthread_t st[3];
  for (int i = 0; i < 3; i++)
    pthread_create(&st[i], NULL, stranger, (void *)(intptr_t)i);
  setenv("FOLD_TRANSPORT", "tcp", 1);
  setenv("FOLD_DEBUG", "NONE", 1); /* the refusals are logged at WARN: expected here */
  int64_t t0 = now_ns();
  run_all(url, 4, "rendezvous with strangers");
  CHECK(now_ns() - t0 < 10000000000LL, "strangers did not slow the rendezvous to %.1f s", (now_ns() - t0) / 1e9);
  unsetenv("FOLD_DEBUG");
  unsetenv("FOLD_TRANSPORT");
  atomic_store(&stop_strangers, 1);
  for (int i = 0; i < 3; i++)
    pthread_join(st[i], NULL);
}

/* A rank with another job's token: refused with FOLD_EAUTH; the others
 * time out naming it. Processes, since the token is per process. */
static void test_wrong_token(void) {
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", free_port());
  setenv("FOLD_TIMEOUT", "3", 1);
  setenv("FOLD_JOB_TOKEN", "the-right-token", 1);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("FOLD_JOB_TOKEN", "a-wrong-token", 1);
    usleep(200000); /* let rank 0 start serving */
    fold_comm *c = NULL;
    int rc = fold_comm_init(&c, 1, 2, url);
    int ok = rc == FOLD_EAUTH && c == NULL && strstr(fold_comm_last_error(NULL), "authentication") != NULL;
    if (!ok)
      fprintf(stderr, "wrong-token rank: %s: %s\n", fold_strerror(rc), fold_comm_last_error(NULL));
    _exit(ok ? 0 : 1);
  }
  setenv("FOLD_DEBUG", "NONE", 1);
  int ranks[1] = {0};
  rank_arg a[1];
  run_ranks(url, 2, ranks, 1, a);
  unsetenv("FOLD_DEBUG");
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the rank with a wrong token got FOLD_EAUTH");
  CHECK(a[0].rc == FOLD_ETIMEDOUT && strstr(a[0].msg, "rank 1 did not join"), "rank 0: %s", a[0].msg);
  unsetenv("FOLD_TIMEOUT");
  unsetenv("FOLD_JOB_TOKEN");
}

/* A finished rendezvous leaves the file store directory empty. */
static void check_file_store_clean(const char *dir) {
  DIR *d = opendir(dir);
  CHECK(d != NULL, "open %s", dir);
  if (d == NULL)
    return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    CHECK(strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0, "leftover file %s/%s", dir, e->d_name);
  closedir(d);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  unsetenv("FOLD_JOB_TOKEN");
  unsetenv("FOLD_TRANSPORT");
  test_args();

  char dir[] = "/tmp/fold-rdv-test-XXXXXX", url[128];
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  snprintf(url, sizeof url, "file://%s", dir);
  /* file store, auto transport (threads of one process share a host: shm) */
  run_all(url, 1, "file store, 1 rank");
  run_all(url, 4, "file store, 4 ranks");
  /* again at the same store: a new round, keys do not mix */
  setenv("FOLD_TRANSPORT", "tcp", 1);
  run_all(url, 3, "file store again, tcp");
  unsetenv("FOLD_TRANSPORT");
  check_file_store_clean(dir);
  char sub[200];
  snprintf(sub, sizeof sub, "file://%s/timeout", dir);
  test_timeout_names_missing(sub, "file store");

  /* tcp store served by rank 0 */
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", free_port());
  setenv("FOLD_JOB_TOKEN", "rdv-test", 1);
  run_all(url, 5, "tcp store served by rank 0");
  /* tcp store served by someone else (like foldrun): rank 0 is a client */
  fold__store_srv_cfg cfg = {.host = "127.0.0.1", .port = 0, .log_rank = -1};
  fold__auth_key_derive(&cfg.key, "rdv-test", NULL);
  fold__store_srv *srv = NULL;
  int port = 0;
  CHECK_OK(fold__store_srv_start(&cfg, &srv, &port, NULL), NULL);
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
  run_all(url, 3, "external tcp store");
  run_all(url, 3, "external tcp store, second round");
  test_timeout_names_missing(url, "tcp store");
  fold__store_srv_stop(srv);
  unsetenv("FOLD_JOB_TOKEN");

  test_strangers();
  test_wrong_token();

  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0, "cleanup");
  return check_report("test_rendezvous");
}
