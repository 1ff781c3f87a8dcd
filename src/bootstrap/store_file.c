/* store_file.c — the file rendezvous store: one file per key in a shared directory (one host or a shared fs). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/store.h"
#include "core/internal.h"

#define POLL_MIN_NS (1LL * 1000000)   /* first re-look of a missing key */
#define POLL_MAX_NS (20LL * 1000000)  /* re-look at least this often */
#define LOCK_GRACE_NS (5LL * 1000000000) /* an add may wait this long past its deadline for the lock */

typedef struct file_store {
  fold__store base;
  char dir[4096];
} file_store;

static atomic_uint tmp_counter;

/* File of key: "k-" + the key with every byte outside [A-Za-z0-9_-] as
 * "%XX", so that distinct keys never share a file and no key escapes the
 * directory ('/' and '.' are escaped). */
static int key_path(const file_store *f, const char *key, char *out, size_t cap) {
  size_t klen = strlen(key);
  if (!fold__store_key_ok(key, klen))
    return fold__error(NULL, FOLD_EINVAL, "store: bad key \"%.40s\"", key);
  size_t n = (size_t)snprintf(out, cap, "%s/k-", f->dir);
  for (size_t i = 0; i < klen && n + 4 < cap; i++) {
    unsigned char ch = (unsigned char)key[i];
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-')
      out[n++] = (char)ch;
    else
      n += (size_t)snprintf(out + n, cap - n, "%%%02X", ch);
  }
  if (n + 4 >= cap)
    return fold__error(NULL, FOLD_EINVAL, "store: key \"%.40s\" too long for %s", key, f->dir);
  out[n] = '\0';
  return 0;
}

/* Write all of val to a fresh temporary file and rename it over path:
 * readers see the old value or the whole new one, never a part. */
static int write_atomic(const file_store *f, const char *path, const void *val, size_t len) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s/.tmp-%d-%u", f->dir, (int)getpid(), atomic_fetch_add(&tmp_counter, 1));
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == ENOENT && mkdir(f->dir, 0700) == 0) /* removed by the previous round's cleanup */
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return fold__error(NULL, FOLD_ESYS, "store file://%s: cannot create %s: %s", f->dir, tmp, strerror(errno));
  const char *p = val;
  size_t left = len;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      int e = errno;
      close(fd);
      unlink(tmp);
      return fold__error(NULL, FOLD_ESYS, "store file://%s: write failed: %s", f->dir, strerror(e));
    }
    p += w, left -= (size_t)w;
  }
  if (close(fd) < 0 || rename(tmp, path) < 0) {
    int e = errno;
    unlink(tmp);
    return fold__error(NULL, FOLD_ESYS, "store file://%s: cannot publish %s: %s", f->dir, path, strerror(e));
  }
  return 0;
}

/* Read the value at path: 0, 1 if it does not exist, or a negative code. */
static int read_value(const file_store *f, const char *path, void *buf, size_t cap, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT)
      return 1;
    return fold__error(NULL, FOLD_ESYS, "store file://%s: cannot open %s: %s", f->dir, path, strerror(errno));
  }
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > FOLD__STORE_VAL_MAX) {
    close(fd);
    return fold__error(NULL, FOLD_EINVAL, "store file://%s: %s is not a store value", f->dir, path);
  }
  size_t size = (size_t)st.st_size, got = 0;
  while (got < size && got < cap) {
    ssize_t r = read(fd, (char *)buf + got, (size < cap ? size : cap) - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  close(fd);
  if (got < (size < cap ? size : cap))
    return fold__error(NULL, FOLD_ESYS, "store file://%s: short read of %s", f->dir, path);
  *len = size;
  return 0;
}

static int file_set(fold__store *s, const char *key, const void *val, size_t len, int64_t deadline) {
  file_store *f = (file_store *)s;
  char path[4200];
  if (len > FOLD__STORE_VAL_MAX)
    return fold__error(NULL, FOLD_EINVAL, "store: value of %zu bytes is too long", len);
  int rc = key_path(f, key, path, sizeof path);
  return rc < 0 ? rc : write_atomic(f, path, val, len);
}

static int file_get(fold__store *s, const char *key, void *buf, size_t cap, size_t *len, int64_t deadline) {
  file_store *f = (file_store *)s;
  char path[4200];
  int rc = key_path(f, key, path, sizeof path);
  if (rc < 0)
    return rc;
  /* Poll with a growing sleep: cheap on the CPU when the wait is long,
   * quick to answer when the key appears soon. */
  int64_t nap = POLL_MIN_NS;
  for (;;) {
    size_t l = 0;
    rc = read_value(f, path, buf, cap, &l);
    if (rc <= 0) {
      if (rc == 0 && len)
        *len = l;
      return rc;
    }
    int64_t left = deadline - fold__clock_mono(NULL);
    if (left <= 0)
      return FOLD_ETIMEDOUT;
    fold__sleep_ns(nap < left ? nap : left);
    if (nap < POLL_MAX_NS)
      nap *= 2;
  }
}

/* add: read-modify-write under an flock on the directory's lock file. */
static int file_add(fold__store *s, const char *key, int64_t delta, int64_t *total, int64_t deadline) {
  file_store *f = (file_store *)s;
  char path[4200], lock[4200];
  int rc = key_path(f, key, path, sizeof path);
  if (rc < 0)
    return rc;
  snprintf(lock, sizeof lock, "%s/.lock", f->dir);
  int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0 && errno == ENOENT && mkdir(f->dir, 0700) == 0)
    fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return fold__error(NULL, FOLD_ESYS, "store file://%s: cannot open the lock: %s", f->dir, strerror(errno));
  int64_t until = (deadline > fold__clock_mono(NULL) ? deadline : fold__clock_mono(NULL)) + LOCK_GRACE_NS, nap = POLL_MIN_NS;
  while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      rc = fold__error(NULL, FOLD_ESYS, "store file://%s: lock failed: %s", f->dir, strerror(errno));
      close(fd);
      return rc;
    }
    if (fold__clock_mono(NULL) > until) {
      close(fd);
      return fold__error(NULL, FOLD_ETIMEDOUT, "store file://%s: lock held too long by another process", f->dir);
    }
    fold__sleep_ns(nap);
    if (nap < POLL_MAX_NS)
      nap *= 2;
  }
  uint8_t v[8] = {0};
  size_t len = 0;
  rc = read_value(f, path, v, sizeof v, &len);
  if (rc == 0 && len != 8)
    rc = fold__error(NULL, FOLD_EINVAL, "store file://%s: key %s is not a counter", f->dir, key);
  if (rc >= 0) {
    uint64_t x = 0;
    if (rc == 0)
      for (int i = 7; i >= 0; i--)
        x = x << 8 | v[i];
    x += (uint64_t)delta;
    for (int i = 0; i < 8; i++)
      v[i] = (uint8_t)(x >> (8 * i));
    rc = write_atomic(f, path, v, 8);
    if (rc == 0 && total)
      *total = (int64_t)x;
  }
  close(fd); /* releases the lock */
  return rc;
}

static int file_del(fold__store *s, const char *key, int64_t deadline) {
  file_store *f = (file_store *)s;
  char path[4200];
  int rc = key_path(f, key, path, sizeof path);
  if (rc < 0)
    return rc;
  if (unlink(path) < 0 && errno != ENOENT)
    return fold__error(NULL, FOLD_ESYS, "store file://%s: cannot remove %s: %s", f->dir, path, strerror(errno));
  return 0;
}

static void file_close(fold__store *s) { free(s); }

static const fold__store_ops file_ops = {file_set, file_get, file_add, file_del, file_close};

int fold__store_file_open(const fold__store_url *u, fold__store **out) {
  *out = NULL;
  /* Create the directory (one level) if needed; private to this user. */
  if (mkdir(u->path, 0700) < 0 && errno != EEXIST)
    return fold__error(NULL, FOLD_ESYS, "store file://%s: cannot create the directory: %s", u->path, strerror(errno));
  struct stat st;
  if (stat(u->path, &st) < 0 || !S_ISDIR(st.st_mode))
    return fold__error(NULL, FOLD_ESYS, "store file://%s: not a directory", u->path);
  if (access(u->path, W_OK | X_OK) < 0)
    return fold__error(NULL, FOLD_ESYS, "store file://%s: not writable: %s", u->path, strerror(errno));
  file_store *f = calloc(1, sizeof *f);
  if (f == NULL)
    return fold__error(NULL, FOLD_ENOMEM, "out of memory opening store");
  f->base.ops = &file_ops;
  f->base.kind = FOLD__STORE_FILE;
  snprintf(f->dir, sizeof f->dir, "%s", u->path);
  *out = &f->base;
  return 0;
}
