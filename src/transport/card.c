/* card.c — the business card each rank publishes at rendezvous: who it is (its host, which the transports and fold_comm_split_host compare), where it listens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "transport/transport.h"

/* Read the first line of a small file into buf; "" if unreadable. */
static void read_line(const char *path, char *buf, size_t cap) {
  buf[0] = '\0';
  FILE *f = fopen(path, "re");
  if (f == NULL)
    return;
  if (fgets(buf, (int)cap, f) == NULL)
    buf[0] = '\0';
  fclose(f);
  buf[strcspn(buf, "\r\n")] = '\0';
}

static unsigned long long ns_inode(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

/* A field value must not contain the separators of the text form. */
static void sanitize(char *s) {
  for (; *s; s++)
    if (*s == ';' || *s == '=' || *s == '|' || (unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
      *s = '_';
}

int fold__card_self(fold__card *card) {
  memset(card, 0, sizeof *card);
  /* Two processes may share memory (and see each other's pids) only on
   * the same kernel boot and in the same network, pid and ipc namespaces:
   * the host string names all of these, so equal strings mean shm works. */
  char name[65] = "", boot[64] = "";
  if (gethostname(name, sizeof name - 1) < 0)
    snprintf(name, sizeof name, "unknown");
  name[sizeof name - 1] = '\0';
  sanitize(name);
  read_line("/proc/sys/kernel/random/boot_id", boot, sizeof boot);
  sanitize(boot);
  int n = snprintf(card->host, sizeof card->host, "%s|%s|%llu|%llu|%llu", name, boot,
                   ns_inode("/proc/self/ns/net"), ns_inode("/proc/self/ns/pid"), ns_inode("/proc/self/ns/ipc"));
  if (n < 0 || (size_t)n >= sizeof card->host)
    return fold__error(NULL, FOLD_EINTERNAL, "host identity does not fit the card");
  card->pid = (int32_t)getpid();
  return FOLD_OK;
}

int fold__card_encode(const fold__card *card, char *buf, size_t cap) {
  int n = snprintf(buf, cap, "host=%s;pid=%d;tcp=%s;shm=%s", card->host, (int)card->pid, card->tcp, card->shm);
  if (n < 0 || (size_t)n >= cap)
    return -1;
  return n;
}

/* Copy value [v, v+n) into dst[cap] if it fits and holds no separator. */
static int take(char *dst, size_t cap, const char *v, size_t n) {
  if (n >= cap)
    return -1;
  for (size_t i = 0; i < n; i++)
    if (v[i] == ';' || v[i] == '=' || (unsigned char)v[i] < 0x20 || (unsigned char)v[i] > 0x7e)
      return -1;
  memcpy(dst, v, n);
  dst[n] = '\0';
  return 0;
}

int fold__card_decode(fold__card *card, const char *buf, size_t len) {
  /* The card comes from the store: another rank wrote it, but check it as
   * if anyone had. Exactly the four fields, in order, each once. */
  static const char *const names[4] = {"host", "pid", "tcp", "shm"};
  memset(card, 0, sizeof *card);
  size_t pos = 0;
  for (int field = 0; field < 4; field++) {
    size_t nl = strlen(names[field]);
    if (len - pos < nl + 1 || memcmp(buf + pos, names[field], nl) != 0 || buf[pos + nl] != '=')
      return FOLD_EINVAL;
    pos += nl + 1;
    const char *v = buf + pos;
    const char *semi = memchr(v, ';', len - pos);
    size_t vn = semi ? (size_t)(semi - v) : len - pos;
    if ((field < 3) != (semi != NULL))
      return FOLD_EINVAL;
    char pidtxt[16];
    int rc = field == 0   ? take(card->host, sizeof card->host, v, vn)
             : field == 1 ? take(pidtxt, sizeof pidtxt, v, vn)
             : field == 2 ? take(card->tcp, sizeof card->tcp, v, vn)
                          : take(card->shm, sizeof card->shm, v, vn);
    if (rc < 0)
      return FOLD_EINVAL;
    if (field == 0 && vn == 0)
      return FOLD_EINVAL;
    if (field == 1) {
      /* canonical decimal only: what encode writes, nothing else */
      if (vn == 0 || vn > 10 || pidtxt[0] == '0' || strspn(pidtxt, "0123456789") != vn)
        return FOLD_EINVAL;
      long long pid = strtoll(pidtxt, NULL, 10);
      if (pid < 1 || pid > 0x7fffffffLL)
        return FOLD_EINVAL;
      card->pid = (int32_t)pid;
    }
    pos += vn + (semi ? 1 : 0);
  }
  return pos == len ? FOLD_OK : FOLD_EINVAL;
}
