/* iterq_ckpt.c — the iterative queue's checkpoints: atomic per-rank files, a manifest, and agreed resume. */
#include "queue/iterq.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A file: this header, then ninit fold__iq_dig (the name and digest of each
 * buffer put before the run: the run's identity, per buffer so that a
 * refusal can name the one that differs), then per session buffer a
 * fold__iq_fbuf and its bytes, then the FNV-1a digest of everything before
 * it (a torn or damaged file fails it and is passed over). Native byte
 * order: checkpoints are read back by the same program on the same machines. */
typedef struct fold__iq_fhead {
  char magic[8];
  int32_t rank, size, iter, stop;
  uint64_t steps_digest, data_digest;
  uint32_t nbufs, ninit;
} fold__iq_fhead;

typedef struct fold__iq_fbuf {
  char name[FOLD__IQ_NAME];
  int32_t dtype, pad;
  uint64_t esize, count;
} fold__iq_fbuf;

/* The last byte is the format's version: files of another one are refused by name, not passed over as torn. */
static const char magic[8] = {'F', 'O', 'L', 'D', 'I', 'Q', 'C', '2'};

int fold_iterq_set_checkpoint(fold_iterq *q, const char *dir, int every) {
  if (q == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_iterq_set_checkpoint: queue is NULL");
  if (q->ran)
    return fold__error(q->comm, FOLD_EINVAL, "fold_iterq_set_checkpoint: rank %d: the queue has already run", q->rank);
  if (dir == NULL || dir[0] == 0)
    return fold__error(q->comm, FOLD_EINVAL, "fold_iterq_set_checkpoint: rank %d: dir is NULL or empty", q->rank);
  if (every < 1)
    return fold__error(q->comm, FOLD_EINVAL, "fold_iterq_set_checkpoint: rank %d: every = %d < 1", q->rank, every);
  char *d = strdup(dir);
  if (d == NULL) return fold__error(q->comm, FOLD_ENOMEM, "fold_iterq_set_checkpoint: rank %d", q->rank);
  free(q->dir);
  q->dir = d;
  q->every = every;
  return FOLD_OK;
}

/* The step list names the computation (compute steps by position only:
 * function addresses move between runs); the data is what the caller put
 * before the run, digested per buffer (name, dtype, count, bytes). */
int fold__iq_digests(fold_iterq *q) {
  uint64_t h = FOLD__FNV_INIT;
  for (int i = 0; i < q->nsteps; i++) {
    const fold__iq_step *s = &q->steps[i];
    int32_t f[3] = {s->kind, (int32_t)s->op, s->root};
    if (s->kind == FOLD__IQ_COMPUTE) f[1] = f[2] = 0;
    if (s->kind == FOLD__IQ_ALLREDUCE) f[2] = 0;
    if (s->kind == FOLD__IQ_BROADCAST) f[1] = 0;
    h = fold__iq_fnv(h, f, sizeof f);
    if (s->kind != FOLD__IQ_COMPUTE) h = fold__iq_fnv(h, s->name, strlen(s->name) + 1);
  }
  int32_t ends[2] = {q->stop != NULL, q->close != NULL};
  q->steps_digest = fold__iq_fnv(h, ends, sizeof ends);
  free(q->init);
  q->init = calloc(q->nbufs ? (size_t)q->nbufs : 1, sizeof *q->init);
  if (q->init == NULL) return fold_iterq_fail(q, FOLD_ENOMEM, "rank %d: out of memory", q->rank);
  q->ninit = q->nbufs;
  h = FOLD__FNV_INIT;
  for (int i = 0; i < q->nbufs; i++) {
    const fold__iq_buf *b = &q->bufs[i];
    uint64_t f[2] = {(uint64_t)b->dtype, b->count};
    uint64_t d = fold__iq_fnv(FOLD__FNV_INIT, b->name, strlen(b->name) + 1);
    d = fold__iq_fnv(d, f, sizeof f);
    d = fold__iq_fnv(d, b->data, b->count * b->esize);
    memcpy(q->init[i].name, b->name, sizeof q->init[i].name);
    q->init[i].digest = d;
    h = fold__iq_fnv(h, &d, sizeof d);
  }
  q->data_digest = h;
  return FOLD_OK;
}

static void file_name(const fold_iterq *q, int iter, char *buf, size_t cap) {
  snprintf(buf, cap, "%s/rank-%d.%09d.ckpt", q->dir, q->rank, iter);
}

/* ---- writing ------------------------------------------------------------------------- */

static int write_all(int fd, const void *p, size_t n, uint64_t *h) {
  const char *b = p;
  *h = fold__iq_fnv(*h, p, n);
  while (n > 0) {
    ssize_t w = write(fd, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    b += w;
    n -= (size_t)w;
  }
  return 0;
}

/* The directory's entry must reach the disk too, or a crash may lose a rename. */
static void sync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
}

/* Write path atomically: to path.tmp, fsync, rename. */
static int write_file(fold_iterq *q, const char *path, const fold__iq_fhead *hd, int with_bufs, const char *text) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fold_iterq_fail(q, FOLD_ESYS, "cannot create %s: %s", tmp, strerror(errno));
  uint64_t h = FOLD__FNV_INIT;
  int bad = 0;
  if (text) {
    bad = write_all(fd, text, strlen(text), &h);
  } else {
    bad = write_all(fd, hd, sizeof *hd, &h);
    for (int i = 0; !bad && with_bufs && i < q->ninit; i++) bad = write_all(fd, &q->init[i], sizeof q->init[i], &h);
    for (int i = 0; !bad && with_bufs && i < q->nbufs; i++) {
      const fold__iq_buf *b = &q->bufs[i];
      fold__iq_fbuf fb;
      memset(&fb, 0, sizeof fb);
      memcpy(fb.name, b->name, sizeof fb.name);
      fb.dtype = (int32_t)b->dtype;
      fb.esize = b->esize;
      fb.count = b->count;
      bad = write_all(fd, &fb, sizeof fb, &h) || write_all(fd, b->data, b->count * b->esize, &h);
    }
    uint64_t sum = h;
    if (!bad) bad = write_all(fd, &sum, sizeof sum, &h);
  }
  if (!bad) bad = fsync(fd) != 0;
  int e = errno;
  if (close(fd) != 0 && !bad) bad = 1, e = errno;
  if (!bad && rename(tmp, path) != 0) bad = 1, e = errno;
  if (bad) {
    unlink(tmp);
    return fold_iterq_fail(q, FOLD_ESYS, "cannot write %s: %s", path, strerror(e));
  }
  sync_dir(q->dir);
  return FOLD_OK;
}

int fold__iq_save(fold_iterq *q, int stop) {
  char path[4096];
  fold__iq_fhead hd;
  memset(&hd, 0, sizeof hd);
  memcpy(hd.magic, magic, sizeof magic);
  hd.rank = q->rank;
  hd.size = q->size;
  hd.iter = q->iter;
  hd.stop = stop;
  hd.steps_digest = q->steps_digest;
  hd.data_digest = q->data_digest;
  hd.nbufs = (uint32_t)q->nbufs;
  hd.ninit = (uint32_t)q->ninit;
  if (q->rank == 0 && q->kept[1] == 0) { /* the manifest: which run this dir belongs to */
    char text[256];
    fold__iq_text(text, sizeof text, "fold iterq checkpoint 1\nranks %d\nsteps %016llx\n", q->size,
             (unsigned long long)q->steps_digest);
    snprintf(path, sizeof path, "%s/manifest", q->dir);
    int rc = write_file(q, path, NULL, 0, text);
    if (rc < 0) return rc;
  }
  file_name(q, q->iter, path, sizeof path);
  int rc = write_file(q, path, &hd, 1, NULL);
  if (rc < 0) return rc;
  /* Keep the last two: a rank that dies while writing superstep s leaves
   * the others with s and s - every, and s - every is then the agreed one. */
  if (q->kept[0]) {
    file_name(q, q->kept[0], path, sizeof path);
    unlink(path);
  }
  q->kept[0] = q->kept[1];
  q->kept[1] = q->iter;
  return FOLD_OK;
}

/* ---- reading ------------------------------------------------------------------------- */

/* Read and check a file. 1: intact (and *out holds it, free()), 0: torn,
 * damaged or missing (pass over it), 2: intact but of another format version. */
static int read_file(const char *path, unsigned char **out, size_t *len) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (f == NULL) return 0;
  unsigned char *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? 2 * cap : 65536;
      unsigned char *nb = realloc(buf, cap);
      if (nb == NULL) break;
      buf = nb;
    }
    size_t r = fread(buf + n, 1, cap - n, f);
    n += r;
    if (r == 0) break;
  }
  fclose(f);
  uint64_t sum;
  if (buf == NULL || n < sizeof(fold__iq_fhead) + sizeof sum) {
    free(buf);
    return 0;
  }
  memcpy(&sum, buf + n - sizeof sum, sizeof sum);
  if (sum != fold__iq_fnv(FOLD__FNV_INIT, buf, n - sizeof sum) || memcmp(buf, magic, sizeof magic - 1) != 0) {
    free(buf);
    return 0;
  }
  if (buf[sizeof magic - 1] != (unsigned char)magic[sizeof magic - 1]) {
    free(buf);
    return 2;
  }
  *out = buf;
  *len = n - sizeof sum;
  return 1;
}

/* Which buffer put before the run differs from the file's table (into out). */
static void data_diff(const fold_iterq *q, const fold__iq_dig *fd, uint32_t nf, char *out, size_t cap) {
  for (int i = 0; i < q->ninit; i++) {
    uint32_t j = 0;
    while (j < nf && strncmp(fd[j].name, q->init[i].name, FOLD__IQ_NAME) != 0) j++;
    if (j == nf) {
      fold__iq_text(out, cap, "buffer '%s' was not put before that run", q->init[i].name);
      return;
    }
    if (fd[j].digest != q->init[i].digest) {
      fold__iq_text(out, cap, "buffer '%s' differs (count, dtype or contents)", q->init[i].name);
      return;
    }
  }
  for (uint32_t j = 0; j < nf; j++) {
    int i = 0;
    while (i < q->ninit && strncmp(fd[j].name, q->init[i].name, FOLD__IQ_NAME) != 0) i++;
    if (i == q->ninit) {
      fold__iq_text(out, cap, "that run put buffer '%.63s' before it started, this one does not", fd[j].name);
      return;
    }
  }
  fold__iq_text(out, cap, "the buffers put before fold_iterq_run differ");
}

/* Does the file (named for superstep iter) belong to this run and this rank? FOLD_OK, or FOLD_EINVAL
 * with what differs in q->msg. */
static int check_identity(fold_iterq *q, const char *path, int iter, const unsigned char *buf, size_t len) {
  fold__iq_fhead hd;
  memcpy(&hd, buf, sizeof hd);
  if (hd.size != q->size)
    return fold_iterq_fail(q, FOLD_EINVAL, "rank %d: checkpoint %s is from a run of %d ranks, this run has %d; remove it "
                           "or use another dir", q->rank, path, hd.size, q->size);
  if (hd.rank != q->rank)
    return fold_iterq_fail(q, FOLD_EINVAL, "rank %d: checkpoint %s was written by rank %d, not by rank %d (a file copied "
                           "or renamed from another rank's?); remove it or use another dir", q->rank, path, hd.rank, q->rank);
  if (hd.iter != iter)
    return fold_iterq_fail(q, FOLD_EINVAL, "rank %d: checkpoint %s holds superstep %d in its header, not %d as its name "
                           "says (renamed?); remove it or use another dir", q->rank, path, hd.iter, iter);
  if (hd.steps_digest != q->steps_digest)
    return fold_iterq_fail(q, FOLD_EINVAL, "rank %d: checkpoint %s is from a run with another step list (digest %016llx,"
                           " this run's %016llx)", q->rank, path, (unsigned long long)hd.steps_digest,
                           (unsigned long long)q->steps_digest);
  if (hd.ninit > (len - sizeof hd) / sizeof(fold__iq_dig))
    return fold_iterq_fail(q, FOLD_EINVAL, "rank %d: checkpoint %s is damaged (its table of buffers runs past its end)",
                           q->rank, path);
  if (hd.data_digest != q->data_digest) {
    fold__iq_dig *fd = malloc(hd.ninit ? hd.ninit * sizeof *fd : 1);
    char why[200] = "the buffers put before fold_iterq_run differ";
    if (fd) {
      memcpy(fd, buf + sizeof hd, hd.ninit * sizeof *fd);
      data_diff(q, fd, hd.ninit, why, sizeof why);
      free(fd);
    }
    return fold_iterq_fail(q, FOLD_EINVAL, "rank %d: checkpoint %s is from a run with other data on rank %d: %s; remove "
                           "it or use another dir", q->rank, path, q->rank, why);
  }
  return FOLD_OK;
}

/* Read this rank's file of superstep iter and check that it is this run's. 1: *out holds it (free()),
 * 0: torn, damaged or missing, < 0: refused (the reason in q->msg). */
static int load(fold_iterq *q, int iter, char *path, size_t cap, unsigned char **out, size_t *len) {
  file_name(q, iter, path, cap);
  int r = read_file(path, out, len);
  if (r == 2)
    return fold_iterq_fail(q, FOLD_EINVAL, "rank %d: checkpoint %s was written by another version of fold (another file "
                           "format); remove it or use another dir", q->rank, path);
  if (r == 0) return 0;
  int rc = check_identity(q, path, iter, *out, *len);
  if (rc < 0) {
    free(*out);
    *out = NULL;
    return rc;
  }
  return 1;
}

/* Replace the session by the file's buffers. */
static int restore(fold_iterq *q, const unsigned char *buf, size_t len) {
  fold__iq_fhead hd;
  memcpy(&hd, buf, sizeof hd);
  size_t off = sizeof hd + hd.ninit * sizeof(fold__iq_dig); /* check_identity checked the table fits */
  for (int i = 0; i < q->nbufs; i++) free(q->bufs[i].data);
  q->nbufs = 0;
  for (uint32_t i = 0; i < hd.nbufs; i++) {
    fold__iq_fbuf fb;
    if (len - off < sizeof fb) return FOLD_EINVAL;
    memcpy(&fb, buf + off, sizeof fb);
    off += sizeof fb;
    fb.name[FOLD__IQ_NAME - 1] = 0;
    if (fb.esize == 0 || fb.count > (len - off) / fb.esize) return FOLD_EINVAL;
    fold_dtype dt = (fold_dtype)fb.dtype;
    if (fold_dtype_size(dt) != fb.esize) { /* a record type is known by its size: make it exist here too */
      if (fold_dtype_create(fb.esize, &dt) != FOLD_OK) return FOLD_EINVAL;
    }
    int rc = fold_iterq_put(q, fb.name, buf + off, fb.count, dt);
    if (rc < 0) return rc;
    off += fb.count * fb.esize;
  }
  return FOLD_OK;
}

static int newest_first(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x < y) - (x > y);
}

/* This rank's checkpoint files, newest first (at most cap). */
static int list_files(fold_iterq *q, int *iters, int cap) {
  DIR *d = opendir(q->dir);
  if (d == NULL) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int r, it, end = 0;
    if (sscanf(e->d_name, "rank-%d.%d.ckpt%n", &r, &it, &end) != 2 || e->d_name[end] != 0 || r != q->rank || it < 1)
      continue;
    if (n < cap) iters[n++] = it;
  }
  closedir(d);
  qsort(iters, (size_t)n, sizeof *iters, newest_first);
  return n;
}

static int check_manifest(fold_iterq *q) {
  char path[4096];
  snprintf(path, sizeof path, "%s/manifest", q->dir);
  FILE *f = fopen(path, "r");
  if (f == NULL) return FOLD_OK;
  int ranks = 0;
  unsigned long long steps = 0;
  int ok = fscanf(f, "fold iterq checkpoint 1 ranks %d steps %llx", &ranks, &steps) == 2;
  fclose(f);
  if (!ok) return fold_iterq_fail(q, FOLD_EINVAL, "rank 0: %s is not a fold_iterq manifest", path);
  if (ranks != q->size)
    return fold_iterq_fail(q, FOLD_EINVAL, "rank 0: checkpoint dir %s (manifest) is from a run of %d ranks, this run "
                           "has %d; remove it or use another dir", q->dir, ranks, q->size);
  if (steps != q->steps_digest)
    return fold_iterq_fail(q, FOLD_EINVAL, "rank 0: checkpoint dir %s (manifest) is from a run with another step list",
                           q->dir);
  return FOLD_OK;
}

#define MAX_FILES 64

int fold__iq_resume(fold_iterq *q, int *start, int *stopped) {
  *start = 0;
  *stopped = 0;
  int iters[MAX_FILES];
  int fail = 0;
  int32_t latest = 0, v0 = 0;
  char text[FOLD__IQ_MSG], path[4096];
  q->msg[0] = 0;
  if (mkdir(q->dir, 0755) != 0 && errno != EEXIST)
    fail = fold_iterq_fail(q, FOLD_ESYS, "rank %d: cannot create checkpoint dir %s: %s", q->rank, q->dir,
                           strerror(errno));
  if (!fail && q->rank == 0) fail = check_manifest(q);
  int n = fail ? 0 : list_files(q, iters, MAX_FILES);
  /* The newest intact file: it must belong to this run; torn ones are passed over. */
  for (int i = 0; i < n && !fail && latest == 0; i++) {
    unsigned char *buf;
    size_t len;
    int r = load(q, iters[i], path, sizeof path, &buf, &len);
    if (r < 0) fail = r;
    if (r == 1) latest = iters[i];
    free(buf);
  }
  if (fail) fold__iq_text(text, sizeof text, "fold_iterq_run: refusing the checkpoint: %s", q->msg);
  int rc = fold__iq_agree(q, &fail, text, &latest, &v0);
  if (rc < 0) return rc;
  int m = latest; /* the newest superstep every rank has */
  int stop = 0;
  if (m > q->max_iter) { /* every rank sees it (same m, same max_iter); the lowest rank's text wins */
    file_name(q, m, path, sizeof path);
    fail = FOLD_EINVAL;
    fold__iq_text(text, sizeof text, "fold_iterq_run: refusing the checkpoint: rank %d: checkpoint %s holds superstep %d,"
                  " past this run's max_iter %d (resuming would not give this run's result); raise max_iter, or remove "
                  "the files or use another dir", q->rank, path, m, q->max_iter);
  } else if (m > 0) {
    unsigned char *buf;
    size_t len;
    int r = load(q, m, path, sizeof path, &buf, &len);
    if (r < 0) {
      fail = r;
      fold__iq_text(text, sizeof text, "fold_iterq_run: refusing the checkpoint: %s", q->msg);
    } else if (r == 0) {
      fail = FOLD_EINVAL;
      fold__iq_text(text, sizeof text, "fold_iterq_run: rank %d has no intact checkpoint of superstep %d (%s), which every "
               "other rank has", q->rank, m, path);
    } else {
      fold__iq_fhead hd;
      memcpy(&hd, buf, sizeof hd);
      stop = hd.stop;
      if (restore(q, buf, len) < 0) {
        fail = FOLD_EINVAL;
        fold__iq_text(text, sizeof text, "fold_iterq_run: rank %d: checkpoint %s is damaged", q->rank, path);
      }
      free(buf);
    }
  }
  /* Files past m belong to a future that did not happen; keep m and the one before. A refused
   * checkpoint keeps every file: the user decides. */
  int prev = 0;
  for (int i = 0; i < n && !fail; i++) {
    if (iters[i] < m && prev == 0) {
      prev = iters[i];
      continue;
    }
    if (iters[i] == m) continue;
    file_name(q, iters[i], path, sizeof path);
    unlink(path);
  }
  q->kept[0] = m ? prev : 0;
  q->kept[1] = m;
  int32_t dummy = 0, s0 = stop;
  rc = fold__iq_agree(q, &fail, text, &dummy, &s0);
  if (rc < 0) return rc;
  *start = m;
  *stopped = s0 != 0;
  if (m > 0) FOLD__INFO(q->comm, "fold_iterq_run: resuming after superstep %d from %s", m, q->dir);
  return FOLD_OK;
}
