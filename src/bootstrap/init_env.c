/* init_env.c — fold_init: rank, size and store from the launcher's environment (foldrun, torchrun, mpirun, hydra, srun), or a world of one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap/boot.h"
static const struct {
  const char *rank, *size, *who;
} launchers[] = {
    {"FOLD_RANK", "FOLD_SIZE", "foldrun"},
    {"RANK", "WORLD_SIZE", "torchrun"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "ompi"},
    {"PMI_RANK", "PMI_SIZE", "hydra"},
    {"SLURM_PROCID", "SLURM_NTASKS", "slurm"},
};

static int env_int(const char *name, long lo, long hi, int *out) {
  const char *v = fold__env_str(name);
  if (v == NULL || *v == '\0')
    return 0;
  char *end = NULL;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (*end != '\0' || errno != 0 || x < lo || x > hi)
    return -1;
  *out = (int)x;
  return 1;
}

static int env_eq(const char *a, const char *b) {
  const char *x = fold__env_str(a), *y = fold__env_str(b);
  return x && y && *x && strcmp(x, y) == 0;
}

/* MPICH's hydra exports no job id, but every rank on a host is a child
 * (maybe through a wrapper) of one hydra_pmi_proxy: its pid and start
 * time name the job on this host. */
static int hydra_job_id(char *out, size_t cap) {
  pid_t pid = getppid();
  for (int depth = 0; depth < 16 && pid > 1; depth++) {
    char path[64], comm[64] = "", stat[1024];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
      return -1;
    if (fgets(comm, sizeof comm, f) == NULL)
      comm[0] = '\0';
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    f = fopen(path, "re");
    if (f == NULL)
      return -1;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    /* Fields after the ")" that closes comm: state ppid ... starttime (22nd). */
    char *p = strrchr(stat, ')');
    if (p == NULL)
      return -1;
    long ppid = 0;
    unsigned long long start = 0;
    if (sscanf(p + 2, "%*c %ld %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu", &ppid,
               &start) != 2)
      return -1;
    if (strcmp(comm, "hydra_pmi_proxy") == 0) {
      snprintf(out, cap, "%d-%llu", (int)pid, start);
      return 0;
    }
    pid = (pid_t)ppid;
  }
  return -1;
}

/* Job id of a launcher that put every rank on this host, or -1. */
static int single_host_job_id(const char *who, char *out, size_t cap) {
  const char *v;
  if (strcmp(who, "ompi") == 0 && env_eq("OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_SIZE") &&
      ((v = fold__env_str("OMPI_MCA_ess_base_jobid")) || (v = fold__env_str("PMIX_NAMESPACE")))) {
    snprintf(out, cap, "%s", v);
    return 0;
  }
  if (strcmp(who, "hydra") == 0 && env_eq("MPI_LOCALNRANKS", "PMI_SIZE"))
    return hydra_job_id(out, cap);
  if (strcmp(who, "slurm") == 0 && (v = fold__env_str("SLURM_JOB_ID")) != NULL &&
      (fold__env_str("SLURM_NNODES") && strcmp(fold__env_str("SLURM_NNODES"), "1") == 0)) {
    const char *step = fold__env_str("SLURM_STEP_ID");
    snprintf(out, cap, "%s.%s", v, step ? step : "0");
    return 0;
  }
  return -1;
}

/* No complete rank/size pair. With no launcher variable at all the program
 * was started by hand: like MPI's singleton init it is a world of one
 * (inproc, no store, no sockets). A half-set launcher (FOLD_RANK without
 * FOLD_SIZE, a lone WORLD_SIZE) or a FOLD_STORE with no rank says a job was
 * meant: then running alone would hide the mistake, so it is an error. */
static int init_singleton(fold_comm **comm) {
  char set[256] = "";
  size_t n = 0;
  for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
    const char *names[2] = {launchers[i].rank, launchers[i].size};
    for (int k = 0; k < 2; k++) {
      const char *v = fold__env_str(names[k]);
      if (v && *v && n < sizeof set - 64)
        n += (size_t)snprintf(set + n, sizeof set - n, "%s%s=%.16s", n ? ", " : "", names[k], v);
    }
  }
  const char *st = fold__env_str("FOLD_STORE");
  if (st && *st && n < sizeof set - 64)
    n += (size_t)snprintf(set + n, sizeof set - n, "%sFOLD_STORE=%.40s", n ? ", " : "", st);
  if (n > 0)
    return fold__error(NULL, FOLD_EINVAL,
                       "fold_init: incomplete launcher environment (%s): need a complete rank/size pair "
                       "(FOLD_RANK/FOLD_SIZE, RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE, "
                       "PMI_RANK/PMI_SIZE or SLURM_PROCID/SLURM_NTASKS), or none of them for a world of one",
                       set);
  if (fold__env_transport() < 0)
    return fold__error(NULL, FOLD_EINVAL, "fold_init: FOLD_TRANSPORT=%s is not auto, shm or tcp",
                       fold__env_str("FOLD_TRANSPORT"));
  int rc = fold_comm_init_threads(1, comm);
  if (rc < 0) {
    *comm = NULL;
    return rc;
  }
  FOLD__INFO(*comm, "fold_init: no launcher variables: a world of one (rank 0 of 1, transport inproc, no store)");
  return FOLD_OK;
}

int fold_init(fold_comm **comm) {
  if (comm == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_init: comm is NULL");
  *comm = NULL;
  int rank = -1, size = -1;
  const char *who = NULL;
  for (size_t i = 0; i < sizeof launchers / sizeof launchers[0] && who == NULL; i++) {
    int r = env_int(launchers[i].rank, 0, 1 << 30, &rank);
    int s = env_int(launchers[i].size, 1, 1 << 30, &size);
    if (r == 0 || s == 0)
      continue; /* a lone RANK=... from elsewhere is not a launcher */
    if (r < 0 || s < 0 || rank >= size)
      return fold__error(NULL, FOLD_EINVAL, "fold_init: %s=%s and %s=%s are not a rank in [0, size)",
                         launchers[i].rank,
                         fold__env_str(launchers[i].rank) ? fold__env_str(launchers[i].rank) : "(unset)",
                         launchers[i].size,
                         fold__env_str(launchers[i].size) ? fold__env_str(launchers[i].size) : "(unset)");
    who = launchers[i].who;
  }
  if (who == NULL)
    return init_singleton(comm);
  char url[4200];
  const char *v = fold__env_str("FOLD_STORE"), *addr = fold__env_str("MASTER_ADDR");
  const char *port = fold__env_str("MASTER_PORT");
  char job[128];
  int made_dir = 0, guessed = 0;
  if (v && *v) {
    snprintf(url, sizeof url, "%s", v);
  } else if (addr && *addr && port && *port) {
    snprintf(url, sizeof url, strchr(addr, ':') && addr[0] != '[' ? "tcp://[%s]:%s" : "tcp://%s:%s", addr, port);
    guessed = 1;
  } else if (single_host_job_id(who, job, sizeof job) == 0) {
    for (char *p = job; *p; p++) /* the id becomes a file name */
      if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' || *p == '-'))
        *p = '_';
    const char *tmp = fold__env_str("TMPDIR");
    if (tmp == NULL || tmp[0] != '/')
      tmp = "/tmp";
    snprintf(url, sizeof url, "file://%s/fold-%s-%s", tmp, who, job);
    /* A directory in a shared /tmp: it must be ours and private, or
     * another user could read or forge the rendezvous. */
    const char *dir = url + 7;
    struct stat st;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
      return fold__error(NULL, FOLD_ESYS, "fold_init: rank %d: cannot create %s: %s", rank, dir, strerror(errno));
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0)
      return fold__error(NULL, FOLD_EINVAL, "fold_init: rank %d: %s is not a private directory of this user", rank,
                         dir);
    made_dir = 1;
  } else {
    return fold__error(NULL, FOLD_EINVAL,
                       "fold_init: rank %d: no store for this %s launch, which may span hosts: export "
                       "FOLD_STORE=tcp://<rank 0's host>:<a free port> and FOLD_JOB_TOKEN=<a random secret> to "
                       "every rank, e.g. `mpirun -x FOLD_STORE -x FOLD_JOB_TOKEN` (srun passes the environment "
                       "on). Looked for FOLD_STORE, MASTER_ADDR/MASTER_PORT and a single-host job id "
                       "(docs/bootstrap.md lists them)",
                       rank, who);
  }
  return fold__comm_init_url(comm, rank, size, url, made_dir, guessed);
}
