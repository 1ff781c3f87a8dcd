/* shm_harness.c — a multi-process test harness for the shm transport: fork,
 * exchange business cards over pipes, connect, run a body on every rank. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm.h"
#include "core/internal.h"
#include "engine/engine.h"
#include "shm/shm_harness.h"
#include "transport/transport.h"

#define HARNESS_DEADLINE_S 60.0
#define SHM_MAX_RANKS 64

/* The cards of this rank's job, while its body runs (for shm_wait_exit). */
static const fold__card *body_cards;
static int body_n;

double shm_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int shm_barrier(fold_comm *c) {
  const int tag = 1 << 30;
  int rank = fold_comm_rank(c), n = fold_comm_size(c), rc = FOLD_OK;
  if (rank == 0) {
    for (int p = 1; p < n && rc == FOLD_OK; p++)
      rc = fold_recv(NULL, 0, FOLD_UINT8, p, tag, c);
    for (int p = 1; p < n && rc == FOLD_OK; p++)
      rc = fold_send(NULL, 0, FOLD_UINT8, p, tag, c);
  } else {
    rc = fold_send(NULL, 0, FOLD_UINT8, 0, tag, c);
    if (rc == FOLD_OK)
      rc = fold_recv(NULL, 0, FOLD_UINT8, 0, tag, c);
  }
  return rc;
}

int shm_wait_exit(int rank, double timeout_s) {
  if (body_cards == NULL || rank < 0 || rank >= body_n)
    return -1;
  /* A pidfd turns readable once the process has exited, zombie or not (the
   * harness reaps in rank order, so kill(pid, 0) would still find it). */
  int fd = (int)syscall(SYS_pidfd_open, (pid_t)body_cards[rank].pid, 0);
  if (fd < 0)
    return errno == ESRCH ? 0 : -1; /* ESRCH: already reaped */
  double deadline = shm_now() + timeout_s;
  int rc = -1;
  for (;;) {
    int ms = (int)((deadline - shm_now()) * 1000);
    if (ms <= 0)
      break;
    struct pollfd pfd = {fd, POLLIN, 0};
    int k = poll(&pfd, 1, ms);
    if (k > 0) {
      rc = 0;
      break;
    }
    if (k < 0 && errno != EINTR)
      break;
  }
  close(fd);
  return rc;
}

/* Read exactly n bytes within the harness deadline; 0 on success, -1 on EOF
 * or timeout. */
static int read_full(int fd, void *buf, size_t n, double deadline) {
  char *p = buf;
  while (n > 0) {
    int ms = (int)((deadline - shm_now()) * 1000);
    if (ms <= 0)
      return -1;
    struct pollfd pfd = {fd, POLLIN, 0};
    int k = poll(&pfd, 1, ms);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return -1;
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

static int write_full(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* The child: one rank. Never returns. */
static void child(const shm_run *run, const char *job, int rank, int up, int down) {
  prctl(PR_SET_PDEATHSIG, SIGKILL); /* a dying harness takes its ranks along */
  double deadline = shm_now() + HARNESS_DEADLINE_S;
  int n = run->n;
  fold_comm *c = NULL;
  fold__card *cards = calloc((size_t)n, sizeof *cards);
  uint8_t *use = malloc((size_t)n);
  if (cards == NULL || use == NULL || fold__comm_alloc(rank, n, &c) != FOLD_OK)
    _exit(90);
  fold__card me;
  memset(&me, 0, sizeof me);
  me.pid = (int32_t)getpid();
  void *state = NULL;
  if (fold__shm_prepare(c, job, &me, &state) != FOLD_OK) {
    fprintf(stderr, "rank %d: prepare: %s\n", rank, fold_comm_last_error(c));
    _exit(91);
  }
  if (write_full(up, &me, sizeof me) != 0)
    _exit(92);
  if (run->die_rank == rank && run->die_stage == SHM_DIE_BEFORE_CONNECT)
    kill(getpid(), SIGKILL);
  if (read_full(down, cards, (size_t)n * sizeof *cards, deadline) != 0)
    _exit(93);
  memset(use, 1, (size_t)n);
  fold__tp *tp = NULL;
  if (fold__shm_connect(c, state, cards, use, 0, &tp) != FOLD_OK) {
    fprintf(stderr, "rank %d: connect: %s\n", rank, fold_comm_last_error(c));
    _exit(94);
  }
  fold__comm_add_tp(c, tp);
  for (int p = 0; p < n; p++)
    if (p != rank)
      c->peer_tp[p] = tp;
  if (run->pre_join)
    run->pre_join(c, job, run->arg);
  char b = 'j';
  if (write_full(up, &b, 1) != 0 || read_full(down, &b, 1, deadline) != 0)
    _exit(95);
  if (tp->ops->joined)
    tp->ops->joined(tp);
  body_cards = cards;
  body_n = n;
  int failed = run->fn(c, run->arg);
  body_cards = NULL;
  fold_comm_destroy(c);
  free(cards);
  free(use);
  /* exit, not _exit: LeakSanitizer runs at exit (stdio was flushed before
   * the fork, so nothing of the parent's is written twice) */
  exit(failed ? 1 : 0);
}

/* Names in /dev/shm that belong to this job ("fold-<job>-<rank>"). */
static int leftovers(const char *job) {
  char prefix[128];
  snprintf(prefix, sizeof prefix, "fold-%s-", job);
  DIR *d = opendir("/dev/shm");
  if (d == NULL)
    return 0;
  int found = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
      fprintf(stderr, "leftover segment /dev/shm/%s\n", e->d_name);
      found++;
    }
  closedir(d);
  return found;
}

int shm_run_ranks(const shm_run *run) {
  int n = run->n, problems = 0;
  char job[64];
  snprintf(job, sizeof job, "t%d-%s", (int)getpid(), run->name);
  /* fixed arrays: the children inherit them, and nothing is left for
   * LeakSanitizer to report there */
  static pid_t pids[SHM_MAX_RANKS];
  static int up[SHM_MAX_RANKS], down[SHM_MAX_RANKS];
  static fold__card cards[SHM_MAX_RANKS];
  static uint8_t alive[SHM_MAX_RANKS];
  if (n < 1 || n > SHM_MAX_RANKS)
    return 1;
  fflush(stdout);
  fflush(stderr);
  for (int r = 0; r < n; r++) {
    int u[2], d[2];
    if (pipe(u) != 0 || pipe(d) != 0)
      return 1;
    pids[r] = fork();
    if (pids[r] == 0) {
      close(u[0]);
      close(d[1]);
      for (int q = 0; q < r; q++) {
        close(up[q]);
        close(down[q]);
      }
      child(run, job, r, u[1], d[0]);
    }
    close(u[1]);
    close(d[0]);
    up[r] = u[0];
    down[r] = d[1];
  }
  double deadline = shm_now() + HARNESS_DEADLINE_S;
  /* Cards: every rank sends its own and gets all. */
  for (int r = 0; r < n; r++) {
    alive[r] = read_full(up[r], &cards[r], sizeof cards[r], deadline) == 0;
    if (!alive[r] && r != run->die_rank) {
      fprintf(stderr, "%s: rank %d sent no card\n", run->name, r);
      problems++;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  for (int r = 0; r < n; r++)
    write_full(down[r], cards, (size_t)n * sizeof *cards);
  /* Barrier before joined(): every rank has mapped every segment. A rank
   * that killed itself on purpose gives EOF instead. */
  for (int r = 0; r < n; r++) {
    char b;
    if (read_full(up[r], &b, 1, deadline) != 0 && r != run->die_rank) {
      fprintf(stderr, "%s: rank %d did not connect\n", run->name, r);
      problems++;
    }
  }
  for (int r = 0; r < n; r++)
    write_full(down[r], "g", 1);
  /* Reap, bounded: a hung rank is killed and reported. */
  for (int r = 0; r < n; r++) {
    int st = 0;
    pid_t w;
    while ((w = waitpid(pids[r], &st, WNOHANG)) == 0 && shm_now() < deadline)
      usleep(2000);
    if (w == 0) {
      fprintf(stderr, "%s: rank %d hung; killing it\n", run->name, r);
      kill(pids[r], SIGKILL);
      waitpid(pids[r], &st, 0);
      problems++;
      continue;
    }
    int killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
    if (r == run->expect_killed) {
      if (!killed) {
        fprintf(stderr, "%s: rank %d should have been killed\n", run->name, r);
        problems++;
      }
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "%s: rank %d failed (%s %d)\n", run->name, r, WIFEXITED(st) ? "exit" : "signal",
              WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
      problems++;
    }
  }
  problems += leftovers(job);
  for (int r = 0; r < n; r++) {
    close(up[r]);
    close(down[r]);
  }
  printf("%s (%d ranks): %s\n", run->name, n, problems ? "FAILED" : "ok");
  return problems;
}
