/* foldrun.c — local launcher: serves a store, starts N ranks, prefixes their output, and stops the job on the first failure. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "net/auth.h"
#include "bootstrap/store.h"
#include "core/internal.h"
#include "foldrun.h"

#define KILL_GRACE_NS (3LL * 1000000000)
#define DRAIN_NS (1LL * 1000000000) /* after the last rank exits, wait this long for grandchildren's output */

extern char **environ;

typedef struct rank_proc {
  pid_t pid;
  int alive;
  int status;
  /* when it ended, as event numbers (see first_failure); 0: not seen */
  long chld_seq, eof_seq;
  int64_t chld_ns, eof_ns;
  unsigned long sent; /* bit s: foldrun sent it signal s (forwarded, or the stop after a failure) */
  int held;           /* signal_ranks stopped it and must continue it */
  stream s[2]; /* stdout, stderr */
} rank_proc;

static void usage(FILE *f) {
  fprintf(f,
          "usage: foldrun -n N [--transport auto|shm|tcp] [--timeout SECONDS] [--bind core|none] [--] program [args...]\n"
          "       foldrun [--transport T] [--timeout SECONDS] --print-config\n"
          "       foldrun --version\n"
          "-np N (MPI's spelling) is the same as -n N.\n"
          "Starts N ranks of program on this host. Each rank gets FOLD_RANK, FOLD_SIZE, FOLD_STORE and\n"
          "FOLD_JOB_TOKEN (and FOLD_TRANSPORT / FOLD_TIMEOUT when given); fold_init() reads them.\n"
          "Output lines are prefixed with \"[rank] \". When a rank fails, the others are stopped\n"
          "(SIGTERM, then SIGKILL after 3 s) and foldrun exits with the status of the rank that failed\n"
          "first (128 + the signal when a signal ended it), naming that rank.\n"
          "--bind core pins rank r to the r-th CPU foldrun may run on (modulo their count); the default is\n"
          "core when N is at most that CPU count, else none (oversubscribed ranks are left to the scheduler).\n"
          "--print-config prints every FOLD_* variable as the ranks would read it from this environment (with\n"
          "--transport / --timeout applied; docs/configuration.md) and exits.\n");
}

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Full path of prog (searched in PATH if it has no '/'), or NULL. */
static char *find_program(const char *prog) {
  if (strchr(prog, '/'))
    return access(prog, X_OK) == 0 ? strdup(prog) : NULL;
  const char *path = getenv("PATH");
  if (path == NULL)
    path = "/usr/local/bin:/usr/bin:/bin";
  for (const char *p = path;;) {
    const char *e = strchr(p, ':');
    size_t dl = e ? (size_t)(e - p) : strlen(p);
    char *full = malloc(dl + strlen(prog) + 2);
    if (full == NULL)
      return NULL;
    snprintf(full, dl + strlen(prog) + 2, "%.*s/%s", (int)dl, dl ? p : ".", prog);
    struct stat st;
    if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0)
      return full;
    free(full);
    if (e == NULL)
      return NULL;
    p = e + 1;
  }
}

/* The children's environment: ours without the FOLD_* that we set, plus ours. */
static char **make_env(char **extra, int nextra) {
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = calloc(n + (size_t)nextra + 1, sizeof *env);
  if (env == NULL)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int replaced = 0;
    for (int j = 0; j < nextra && !replaced; j++) {
      size_t nl = (size_t)(strchr(extra[j], '=') - extra[j]) + 1;
      replaced = strncmp(environ[i], extra[j], nl) == 0;
    }
    if (!replaced)
      env[k++] = environ[i];
  }
  for (int j = 0; j < nextra; j++)
    env[k++] = extra[j];
  env[k] = NULL;
  return env;
}

static void describe_failure(int r, int status, char *buf, size_t cap) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char *abbrev = sigabbrev_np(sig);
    snprintf(buf, cap, "foldrun: rank %d killed by signal %d (SIG%s)", r, sig, abbrev ? abbrev : "?");
  } else {
    snprintf(buf, cap, "foldrun: rank %d exited with status %d", r, WEXITSTATUS(status));
  }
}

/* 1 if pid is stopped or traced now (state T or t in /proc/pid/stat). */
static int proc_stopped(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t k = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (k <= 0)
    return 0;
  buf[k] = '\0';
  const char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
  return p != NULL && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
}

/* Send sig to every live rank as if at once. kill() one rank after the
 * other leaves a gap in which foldrun may lose its core: a rank signalled
 * first ends, and one not yet signalled sees that end (its peer lost) and
 * acts on it instead of on the signal. So the ranks are stopped first, then
 * signalled, then continued: a continued rank handles its pending signal
 * before it runs anything else. A rank that was stopped already (by itself,
 * a user or a debugger) is only signalled: foldrun continues only what it
 * stopped. */
static void signal_ranks(rank_proc *rp, long n, int sig) {
  for (long r = 0; r < n; r++) {
    rp[r].held = rp[r].alive && !proc_stopped(rp[r].pid);
    if (rp[r].held)
      kill(rp[r].pid, SIGSTOP);
  }
  for (long r = 0; r < n; r++)
    if (rp[r].alive) {
      rp[r].sent |= 1UL << sig;
      kill(rp[r].pid, sig);
    }
  for (long r = 0; r < n; r++)
    if (rp[r].held) {
      rp[r].held = 0;
      kill(rp[r].pid, SIGCONT);
    }
}

/* Read every pending signal: forward SIGINT/TERM/HUP to the live ranks (they
 * decide how to stop; their exits drive ours), and number the exits that
 * SIGCHLD reports (the kernel keeps one pending SIGCHLD, that of the
 * earliest exit since the last read). */
static void read_signals(int sfd, rank_proc *rp, long n, long *seq) {
  struct signalfd_siginfo si;
  while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
    if (si.ssi_signo != SIGCHLD) {
      signal_ranks(rp, n, (int)si.ssi_signo);
      continue;
    }
    if (si.ssi_code != CLD_EXITED && si.ssi_code != CLD_KILLED && si.ssi_code != CLD_DUMPED)
      continue; /* stopped or continued: not an end */
    for (long r = 0; r < n; r++)
      if (rp[r].pid == (pid_t)si.ssi_pid && rp[r].chld_seq == 0) {
        rp[r].chld_seq = ++*seq;
        rp[r].chld_ns = mono_ns();
      }
  }
}

/* The rank that failed first, or -1. waitpid(-1) returns zombies in start
 * order, and even SIGCHLD can come late: a dying process closes its files
 * (its sockets, our pipes) before it tells its parent, and the survivors
 * it wakes that way may fail and exit before it (or foldrun) gets a CPU
 * again. So among the failures seen within 1 s of the first one, a rank
 * ended by a signal that foldrun did not send (SIGKILL from outside, a
 * crash) is the cause: survivors of a lost peer exit, they are not
 * killed. Otherwise the earliest end: the close of both output pipes if
 * it came shortly (< 1 s) before the exit, else the SIGCHLD; ties (one
 * wake-up saw both) go to the earlier SIGCHLD. */
static long first_failure(const rank_proc *rp, long n) {
  int64_t t0 = 0;
  for (long r = 0; r < n; r++) {
    const rank_proc *p = &rp[r];
    if (!p->alive && p->pid && p->chld_seq && !(WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0) &&
        (t0 == 0 || p->chld_ns < t0))
      t0 = p->chld_ns;
  }
  long best = -1, best_key = 0;
  int best_class = 0;
  for (long r = 0; r < n; r++) {
    const rank_proc *p = &rp[r];
    if (p->alive || p->pid == 0 || (WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0))
      continue;
    long key = p->chld_seq ? p->chld_seq : LONG_MAX;
    if (p->eof_seq && p->chld_seq && p->chld_ns - p->eof_ns < 1000000000LL && p->eof_seq < key)
      key = p->eof_seq;
    int cls = WIFSIGNALED(p->status) && !(p->sent & (1UL << WTERMSIG(p->status))) && p->chld_seq && p->chld_ns - t0 < 1000000000LL ? 0 : 1;
    if (best < 0 || cls < best_class || (cls == best_class && key < best_key) ||
        (cls == best_class && key == best_key && p->chld_seq < rp[best].chld_seq))
      best = r, best_key = key, best_class = cls;
  }
  return best;
}

int main(int argc, char **argv) {
  static const struct option opts[] = {{"np", required_argument, NULL, 'n'},
                                       {"transport", required_argument, NULL, 't'},
                                       {"timeout", required_argument, NULL, 'T'},
                                       {"bind", required_argument, NULL, 'B'},
                                       {"help", no_argument, NULL, 'h'},
                                       {"version", no_argument, NULL, 'V'},
                                       {"print-config", no_argument, NULL, 'P'},
                                       {NULL, 0, NULL, 0}};
  long n = 0;
  const char *transport = NULL, *timeout = NULL;
  int bind = -1; /* -1: decide from the CPU count; 0: none; 1: core */
  int print_config = 0;
  int o;
  /* _only: a single dash may start a long option too, so MPI's "-np 4"
   * works; "-n 4" and "-n4" still parse as the short option. */
  while ((o = getopt_long_only(argc, argv, "+n:h", opts, NULL)) != -1) {
    char *end = NULL;
    switch (o) {
    case 'n':
      n = strtol(optarg, &end, 10);
      if (*optarg == '\0' || *end != '\0' || n < 1 || n > 65536) {
        fprintf(stderr, "foldrun: -n wants a rank count in 1..65536, not \"%s\"\n", optarg);
        usage(stderr);
        return 2;
      }
      break;
    case 't':
      if (strcmp(optarg, "auto") != 0 && strcmp(optarg, "shm") != 0 && strcmp(optarg, "tcp") != 0) {
        fprintf(stderr, "foldrun: --transport wants auto, shm or tcp, not \"%s\"\n", optarg);
        usage(stderr);
        return 2;
      }
      transport = optarg;
      break;
    case 'T': {
      double s = strtod(optarg, &end);
      if (*optarg == '\0' || *end != '\0' || !(s > 0 && s < 1e7)) {
        fprintf(stderr, "foldrun: --timeout wants a positive number of seconds, not \"%s\"\n", optarg);
        usage(stderr);
        return 2;
      }
      timeout = optarg;
      break;
    }
    case 'B':
      if (strcmp(optarg, "core") != 0 && strcmp(optarg, "none") != 0) {
        fprintf(stderr, "foldrun: --bind wants core or none, not \"%s\"\n", optarg);
        usage(stderr);
        return 2;
      }
      bind = strcmp(optarg, "core") == 0;
      break;
    case 'h':
      usage(stdout);
      return 0;
    case 'V':
      printf("foldrun (fold) %d.%d.%d\n", FOLD_VERSION_MAJOR, FOLD_VERSION_MINOR, FOLD_VERSION_PATCH);
      return 0;
    case 'P':
      print_config = 1;
      break;
    default:
      usage(stderr);
      return 2;
    }
  }
  if (print_config) {
    /* what the ranks would read: ours, with the options foldrun passes on */
    if (transport) setenv("FOLD_TRANSPORT", transport, 1);
    if (timeout) setenv("FOLD_TIMEOUT", timeout, 1);
    size_t len = fold_config_print(NULL, 0);
    char *text = malloc(len + 1);
    if (text == NULL) {
      fprintf(stderr, "foldrun: out of memory\n");
      return 1;
    }
    fold_config_print(text, len + 1);
    fputs(text, stdout);
    free(text);
    return 0;
  }
  if (n == 0 || optind >= argc) {
    fprintf(stderr, "foldrun: %s\n", n == 0 ? "-n N is required" : "no program given");
    usage(stderr);
    return 2;
  }
  char **prog_argv = argv + optind;
  char *prog = find_program(prog_argv[0]);
  if (prog == NULL) {
    fprintf(stderr, "foldrun: %s: command not found or not executable\n", prog_argv[0]);
    return 127;
  }

  /* Signals arrive through a signalfd; block them before the server thread
   * exists so that it inherits the mask and never takes one. */
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  /* A signal ignored when we start (nohup, a background job of a script)
   * stays ignored, for us and the ranks: it is neither caught nor forwarded. */
  static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP};
  for (int i = 0; i < 3; i++) {
    struct sigaction sa;
    if (sigaction(forwarded[i], NULL, &sa) == 0 && sa.sa_handler != SIG_IGN)
      sigaddset(&set, forwarded[i]);
  }
  sigprocmask(SIG_BLOCK, &set, &old);
  int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  signal(SIGPIPE, SIG_IGN);

  uint8_t raw[32];
  char token[65];
  if (sfd < 0 || RAND_bytes(raw, sizeof raw) != 1) {
    fprintf(stderr, "foldrun: setup failed (%s)\n", sfd < 0 ? strerror(errno) : "no random bytes");
    return 1;
  }
  for (int i = 0; i < 32; i++)
    snprintf(token + 2 * i, 3, "%02x", raw[i]);
  fold__store_srv_cfg cfg = {.host = "127.0.0.1", .port = 0, .log_rank = -1};
  fold__auth_key_derive(&cfg.key, token, NULL);
  fold__store_srv *srv = NULL;
  int port = 0;
  if (fold__store_srv_start(&cfg, &srv, &port, NULL) < 0) {
    fprintf(stderr, "foldrun: %s\n", fold_comm_last_error(NULL));
    return 1;
  }

  char e_rank[32], e_size[32], e_store[64], e_token[96], e_tp[64], e_to[64];
  char *extra[6];
  int nextra = 0;
  snprintf(e_size, sizeof e_size, "FOLD_SIZE=%ld", n);
  snprintf(e_store, sizeof e_store, "FOLD_STORE=tcp://127.0.0.1:%d", port);
  snprintf(e_token, sizeof e_token, "FOLD_JOB_TOKEN=%s", token);
  extra[nextra++] = e_rank; /* filled per rank */
  extra[nextra++] = e_size;
  extra[nextra++] = e_store;
  extra[nextra++] = e_token;
  if (transport) {
    snprintf(e_tp, sizeof e_tp, "FOLD_TRANSPORT=%s", transport);
    extra[nextra++] = e_tp;
  }
  if (timeout) {
    snprintf(e_to, sizeof e_to, "FOLD_TIMEOUT=%s", timeout);
    extra[nextra++] = e_to;
  }
  snprintf(e_rank, sizeof e_rank, "FOLD_RANK=0");
  char **env = make_env(extra, nextra);
  rank_proc *rp = calloc((size_t)n, sizeof *rp);
  struct pollfd *pfd = calloc((size_t)(2 * n + 1), sizeof *pfd);
  stream **pst = calloc((size_t)(2 * n + 1), sizeof *pst); /* pfd[i] reads pst[i] */
  int *pr = calloc((size_t)(2 * n + 1), sizeof *pr);       /* ... of rank pr[i] */
  long event_seq = 0; /* numbers the ends of ranks in the order we see them */
  if (env == NULL || rp == NULL || pfd == NULL || pst == NULL || pr == NULL) {
    fprintf(stderr, "foldrun: out of memory\n");
    return 1;
  }
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

  /* Binding: a rank that stays on one core keeps its caches and never
   * queues behind a sibling that the scheduler moved onto its core (the MPI
   * launchers bind by default too). Only when every rank gets a core of its
   * own: oversubscribed ranks need the scheduler to move them. */
  int cpus[CPU_SETSIZE], ncpus = 0;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &allowed)) cpus[ncpus++] = c;
  if (bind < 0) bind = ncpus > 0 && n <= ncpus;
  if (bind && ncpus == 0) {
    fprintf(stderr, "foldrun: --bind core: cannot read this process's CPU set (%s)\n", strerror(errno));
    return 1;
  }

  int failed = 0, exit_code = 0, alive = 0;
  int64_t kill_at = 0;
  char failure[160] = "";
  pid_t self = getpid(); /* each child compares getppid() with this after PR_SET_PDEATHSIG */
  for (long r = 0; r < n && !failed; r++) {
    int pipes[2][2];
    if (pipe2(pipes[0], O_CLOEXEC) < 0 || pipe2(pipes[1], O_CLOEXEC) < 0) {
      fprintf(stderr, "foldrun: cannot start rank %ld: %s\n", r, strerror(errno));
      failed = 1, exit_code = 1;
      break;
    }
    snprintf(e_rank, sizeof e_rank, "FOLD_RANK=%ld", r); /* env[] points at e_rank */
    pid_t pid = fork();
    if (pid == 0) {
      /* Only async-signal-safe calls from here to exec. */
      dup2(pipes[0][1], 1);
      dup2(pipes[1][1], 2);
      if (r != 0 && devnull >= 0)
        dup2(devnull, 0);
      struct sigaction dfl = {.sa_handler = SIG_DFL};
      sigaction(SIGPIPE, &dfl, NULL);
      prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive foldrun */
      if (getppid() != self)             /* foldrun died before prctl took hold */
        _exit(127);
      sigprocmask(SIG_SETMASK, &old, NULL);
      if (bind) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[r % ncpus], &one);
        sched_setaffinity(0, sizeof one, &one); /* a refusal leaves the rank unbound, not failed */
      }
      execve(prog, prog_argv, env);
      static const char msg[] = "foldrun: exec failed\n";
      if (write(2, msg, sizeof msg - 1) < 0) {
      }
      _exit(127);
    }
    close(pipes[0][1]);
    close(pipes[1][1]);
    if (pid < 0) {
      close(pipes[0][0]);
      close(pipes[1][0]);
      fprintf(stderr, "foldrun: cannot start rank %ld: %s\n", r, strerror(errno));
      failed = 1, exit_code = 1;
      break;
    }
    rp[r].pid = pid;
    rp[r].alive = 1;
    alive++;
    for (int k = 0; k < 2; k++) {
      rp[r].s[k].fd = pipes[k][0];
      rp[r].s[k].out = k + 1;
      rp[r].s[k].buf = malloc(LINE_MAX_BYTES);
      fcntl(pipes[k][0], F_SETFL, O_NONBLOCK);
      if (rp[r].s[k].buf == NULL) {
        fprintf(stderr, "foldrun: out of memory\n");
        return 1;
      }
    }
  }
  if (failed) { /* could not start every rank: stop those that run */
    signal_ranks(rp, n, SIGTERM);
    kill_at = mono_ns() + KILL_GRACE_NS;
  }

  int64_t drain_until = 0;
  for (;;) {
    int open_streams = 0;
    for (long r = 0; r < n; r++)
      open_streams += (rp[r].s[0].fd >= 0) + (rp[r].s[1].fd >= 0);
    if (alive == 0) {
      if (open_streams == 0)
        break;
      if (drain_until == 0)
        drain_until = mono_ns() + DRAIN_NS;
      else if (mono_ns() >= drain_until)
        break;
    }
    int np = 0;
    pfd[np++] = (struct pollfd){.fd = sfd, .events = POLLIN};
    for (long r = 0; r < n; r++)
      for (int k = 0; k < 2; k++)
        if (rp[r].s[k].fd >= 0) {
          pst[np] = &rp[r].s[k];
          pr[np] = (int)r;
          pfd[np++] = (struct pollfd){.fd = rp[r].s[k].fd, .events = POLLIN};
        }
    int64_t wake = drain_until ? drain_until : kill_at;
    int ms = -1;
    if (wake) {
      int64_t left = wake - mono_ns();
      ms = left <= 0 ? 0 : (int)((left + 999999) / 1000000);
    }
    int ready = poll(pfd, (nfds_t)np, ms);
    if (ready < 0 && errno != EINTR)
      break;
    event_seq++; /* streams that close in one wake-up count as one moment */
    for (int i = 1; ready > 0 && i < np; i++)
      if (pfd[i].revents) {
        foldrun_pump(pst[i], pr[i]);
        rank_proc *p = &rp[pr[i]];
        if (p->s[0].fd < 0 && p->s[1].fd < 0 && p->eof_seq == 0) {
          p->eof_seq = event_seq;
          p->eof_ns = mono_ns();
        }
      }
    if (kill_at && mono_ns() >= kill_at) {
      for (long r = 0; r < n; r++)
        if (rp[r].alive) {
          rp[r].sent |= 1UL << SIGKILL;
          kill(rp[r].pid, SIGKILL);
        }
      kill_at = 0;
    }
    read_signals(sfd, rp, n, &event_seq);
    int status, bad = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      long r = 0;
      while (r < n && rp[r].pid != pid)
        r++;
      if (r == n || !rp[r].alive)
        continue;
      rp[r].alive = 0;
      rp[r].status = status;
      alive--;
      if (rp[r].chld_seq == 0) { /* its SIGCHLD merged into another's: the reaping is all we saw */
        rp[r].chld_seq = ++event_seq;
        rp[r].chld_ns = mono_ns();
      }
      bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    if (bad && !failed) {
      /* stop the rest now; whom to name is decided at the end, when
       * every end has been seen (first_failure) */
      failed = 1;
      signal_ranks(rp, n, SIGTERM);
      kill_at = mono_ns() + KILL_GRACE_NS;
    }
    if (alive == 0)
      kill_at = 0;
  }
  /* Whatever grandchildren still hold a pipe: flush what we have. */
  for (long r = 0; r < n; r++)
    for (int k = 0; k < 2; k++) {
      if (rp[r].s[k].fd >= 0 && rp[r].s[k].len)
        foldrun_emit(rp[r].s[k].out, (int)r, rp[r].s[k].buf, rp[r].s[k].len);
      if (rp[r].s[k].fd >= 0)
        close(rp[r].s[k].fd);
      free(rp[r].s[k].buf);
    }
  read_signals(sfd, rp, n, &event_seq); /* the SIGCHLDs of the last sweep */
  long first = first_failure(rp, n);
  if (first >= 0) {
    int status = rp[first].status;
    describe_failure((int)first, status, failure, sizeof failure);
    exit_code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  }
  if (failure[0]) {
    char line[192];
    int ln = snprintf(line, sizeof line, "%s\n", failure);
    foldrun_write_all(2, line, (size_t)ln);
  }
  fold__store_srv_stop(srv);
  free(rp);
  free(pfd);
  free(pst);
  free(pr);
  free(env);
  free(prog);
  return failed && exit_code == 0 ? 1 : exit_code;
}
