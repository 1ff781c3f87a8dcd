/* rules.c — the FOLD_RULES file parser: text rules (docs/collectives.md "Rules files") into fold__rule arrays. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "select/select.h"
#include "transport/transport.h"

/* Grammar (one rule per line, '#' starts a comment anywhere):
 *   rule      := collective transport ranks bytes algorithm flag*
 *   transport := '*' | inproc | shm | tcp | sim
 *   ranks     := range of integers >= 1
 *   bytes     := range of sizes: digits with an optional K, M or G (x1024^k)
 *   range     := '*' | V | V '-' | '-' V | V '-' V     (inclusive)
 *   flag      := commutative | pof2 | multihost
 * A file is all or nothing: one bad line rejects the file, so that a typo
 * never leaves a half-applied table that silently differs from the author's. */

#define FIELDS_MAX 16

static const char *const tp_names[] = {[FOLD__TP_KIND_INPROC] = "inproc", [FOLD__TP_KIND_SHM] = "shm",
                                       [FOLD__TP_KIND_TCP] = "tcp", [FOLD__TP_KIND_SIM] = "sim"};

const char *fold__tp_kind_name(int kind) {
  if (kind > 0 && kind < (int)(sizeof tp_names / sizeof *tp_names) && tp_names[kind]) return tp_names[kind];
  return "*";
}

int fold__tp_kind_parse(const char *s) {
  if (strcmp(s, "*") == 0) return 0;
  for (int k = 1; k < (int)(sizeof tp_names / sizeof *tp_names); k++)
    if (tp_names[k] && strcmp(tp_names[k], s) == 0) return k;
  return -1;
}

/* The error text being built: the first problem in full, then a count. */
typedef struct perr {
  char *buf;
  size_t len;
  int count;
} perr;

static void FOLD__PRINTF(4, 5) report(perr *e, const char *path, int line, const char *fmt, ...) {
  if (e->count++ > 0) return;
  int n = line > 0 ? snprintf(e->buf, e->len, "%s:%d: ", path, line) : snprintf(e->buf, e->len, "%s: ", path);
  if (n < 0 || (size_t)n >= e->len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->buf + n, e->len - (size_t)n, fmt, ap);
  va_end(ap);
}

/* A decimal number with an optional K/M/G suffix (suffix only if allowed).
 * Returns 0, or -1 when s is not one or overflows. */
static int parse_value(const char *s, size_t len, int suffix, size_t *out) {
  size_t v = 0, i = 0;
  if (len == 0) return -1;
  for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
    size_t d = (size_t)(s[i] - '0');
    if (v > (SIZE_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  if (i == 0) return -1;
  unsigned shift = 0;
  if (suffix && i + 1 == len) {
    switch (s[i]) {
    case 'K': case 'k': shift = 10; break;
    case 'M': case 'm': shift = 20; break;
    case 'G': case 'g': shift = 30; break;
    default: return -1;
    }
    i++;
  }
  if (i != len || v > (SIZE_MAX >> shift)) return -1;
  *out = v << shift;
  return 0;
}

/* "*", "V", "V-", "-V", "V-W" into [lo, hi]; open ends become lo_any/hi_any. */
static int parse_range(const char *s, int suffix, size_t lo_any, size_t hi_any, size_t *lo, size_t *hi) {
  if (strcmp(s, "*") == 0) {
    *lo = lo_any, *hi = hi_any;
    return 0;
  }
  const char *dash = strchr(s, '-');
  if (dash == NULL) {
    if (parse_value(s, strlen(s), suffix, lo)) return -1;
    *hi = *lo;
    return 0;
  }
  if (dash == s && dash[1] == '\0') return -1; /* "-" alone */
  if (dash == s) *lo = lo_any;
  else if (parse_value(s, (size_t)(dash - s), suffix, lo)) return -1;
  if (dash[1] == '\0') *hi = hi_any;
  else if (parse_value(dash + 1, strlen(dash + 1), suffix, hi)) return -1;
  return 0;
}

/* Parse one line's fields into *r. Returns 0, 1 for a blank line, -1 after
 * reporting a problem. */
static int parse_line(char *text, const char *path, int line, perr *e, fold__rule *r) {
  char *hash = strchr(text, '#');
  if (hash) *hash = '\0';
  char *f[FIELDS_MAX];
  int nf = 0;
  for (char *save = NULL, *t = strtok_r(text, " \t\r\n\v\f", &save); t; t = strtok_r(NULL, " \t\r\n\v\f", &save)) {
    if (nf == FIELDS_MAX) {
      report(e, path, line, "too many fields (a rule is: collective transport ranks bytes algorithm "
                            "[commutative] [pof2] [multihost])");
      return -1;
    }
    f[nf++] = t;
  }
  if (nf == 0) return 1;
  if (nf < 5) {
    report(e, path, line,
           "%d field%s; a rule is: collective transport ranks bytes algorithm [commutative] [pof2] [multihost]", nf,
           nf == 1 ? "" : "s");
    return -1;
  }
  *r = (fold__rule){.line = line};
  int kind = fold__coll_index(f[0], strlen(f[0]));
  if (kind < 0) {
    char known[128];
    fold__coll_names(known, sizeof known);
    report(e, path, line, "unknown collective \"%s\" (known: %s)", f[0], known);
    return -1;
  }
  r->coll = (fold__coll_kind)kind;
  if ((r->transport = fold__tp_kind_parse(f[1])) < 0) {
    report(e, path, line, "unknown transport \"%s\" (known: * inproc shm tcp sim)", f[1]);
    return -1;
  }
  size_t lo, hi;
  if (parse_range(f[2], 0, 1, (size_t)FOLD__RULE_ANY_RANKS, &lo, &hi) || lo < 1 || lo > hi ||
      hi > (size_t)FOLD__RULE_ANY_RANKS) {
    report(e, path, line, "bad ranks range \"%s\" (want *, N, N-, -M or N-M with 1 <= N <= M)", f[2]);
    return -1;
  }
  r->min_ranks = (int)lo, r->max_ranks = (int)hi;
  if (parse_range(f[3], 1, 0, FOLD__RULE_ANY_BYTES, &lo, &hi) || lo > hi) {
    report(e, path, line, "bad bytes range \"%s\" (want *, N, N-, -M or N-M with N <= M; K, M, G suffixes)", f[3]);
    return -1;
  }
  r->min_bytes = lo, r->max_bytes = hi;
  int idx = fold__algo_index(r->coll, f[4], strlen(f[4]));
  if (idx < 0) {
    char known[256];
    fold__algo_names(r->coll, known, sizeof known);
    report(e, path, line, "%s has no algorithm \"%s\" (known: %s)", f[0], f[4], known);
    return -1;
  }
  /* Point at the table's own name: no allocation per rule, and the name
   * outlives the file. */
  r->algo = fold__algo_tables[r->coll].algos[idx]->name;
  r->algo_idx = idx + 1;
  for (int i = 5; i < nf; i++) {
    if (strcmp(f[i], "commutative") == 0) r->commutative_only = 1;
    else if (strcmp(f[i], "pof2") == 0) r->pof2_only = 1;
    else if (strcmp(f[i], "multihost") == 0) r->multihost_only = 1;
    else {
      report(e, path, line, "unknown flag \"%s\" (known: commutative pof2 multihost)", f[i]);
      return -1;
    }
  }
  return 0;
}

/* What a non-regular file is, for the message. */
static const char *file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

/* The whole file into a NUL-terminated buffer of at most
 * FOLD__RULES_MAX_BYTES. Only regular files: a FIFO or a device could block
 * the caller (fold_comm_init_threads promises not to block) or never end
 * (/dev/zero), and O_NONBLOCK keeps even the open from waiting for a FIFO's
 * writer. The size is checked again while reading: /proc files say 0, and a
 * file may grow. */
static int slurp(const char *path, perr *e, char **out, size_t *len) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    report(e, path, 0, "cannot open: %s", strerror(errno));
    return FOLD_EINVAL;
  }
  struct stat st;
  if (fstat(fd, &st) < 0) {
    report(e, path, 0, "cannot stat: %s", strerror(errno));
    close(fd);
    return FOLD_EINVAL;
  }
  if (!S_ISREG(st.st_mode)) {
    report(e, path, 0, "%s, not a regular file", file_kind(st.st_mode));
    close(fd);
    return FOLD_EINVAL;
  }
  if (st.st_size > FOLD__RULES_MAX_BYTES) {
    report(e, path, 0, "%lld bytes, over the limit of %d for a rules file", (long long)st.st_size,
           FOLD__RULES_MAX_BYTES);
    close(fd);
    return FOLD_EINVAL;
  }
  /* One byte more than the limit tells a file that grew past it. */
  size_t cap = (size_t)FOLD__RULES_MAX_BYTES + 1, n = 0;
  char *buf = malloc(cap + 1);
  if (buf == NULL) {
    report(e, path, 0, "out of memory reading the rules");
    close(fd);
    return FOLD_ENOMEM;
  }
  for (;;) {
    ssize_t got = read(fd, buf + n, cap - n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      report(e, path, 0, "read error: %s", strerror(errno));
      break;
    }
    if (got == 0) break;
    n += (size_t)got;
    if (n == cap) {
      report(e, path, 0, "more than %d bytes, the limit for a rules file", FOLD__RULES_MAX_BYTES);
      break;
    }
  }
  close(fd);
  if (e->count > 0) {
    free(buf);
    return FOLD_EINVAL;
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return FOLD_OK;
}

int fold__rules_load(const char *path, fold__rules **out, char *err, size_t errlen) {
  *out = NULL;
  perr e = {err, errlen, 0};
  if (errlen) err[0] = '\0';
  char *text = NULL;
  size_t tlen = 0;
  int rc = slurp(path, &e, &text, &tlen);
  if (rc != FOLD_OK) return rc;
  size_t plen = strlen(path) + 1, cap = 16;
  fold__rules *rs = malloc(sizeof *rs + cap * sizeof(fold__rule));
  char *pcopy = malloc(plen);
  if (rs == NULL || pcopy == NULL) goto nomem;
  memcpy(pcopy, path, plen);
  rs->path = pcopy;
  rs->count = 0;
  int line = 0;
  for (size_t at = 0; at < tlen;) {
    char *s = text + at, *nl = memchr(s, '\n', tlen - at);
    size_t llen = nl ? (size_t)(nl - s) : tlen - at;
    s[llen] = '\0'; /* the newline, or the buffer's own terminator */
    at += llen + 1;
    line++;
    if (memchr(s, '\0', llen)) {
      report(&e, path, line, "a NUL byte: not a text file");
      continue;
    }
    fold__rule r;
    if (parse_line(s, path, line, &e, &r) != 0) continue;
    if ((size_t)rs->count == cap) {
      fold__rules *bigger = realloc(rs, sizeof *rs + 2 * cap * sizeof(fold__rule));
      if (bigger == NULL) goto nomem;
      rs = bigger, cap *= 2;
    }
    rs->rule[rs->count++] = r;
  }
  free(text);
  if (e.count > 0) {
    if (e.count > 1) {
      size_t n = strlen(err);
      if (n < errlen) snprintf(err + n, errlen - n, " (and %d more bad line%s)", e.count - 1, e.count > 2 ? "s" : "");
    }
    fold__rules_free(rs);
    return FOLD_EINVAL;
  }
  *out = rs;
  return FOLD_OK;
nomem:
  free(text);
  free(pcopy);
  if (rs) rs->path = NULL;
  fold__rules_free(rs);
  /* The first problem wins the text; out of memory must still be said. */
  e.count = 0;
  report(&e, path, 0, "out of memory reading the rules");
  return FOLD_ENOMEM;
}

void fold__rules_free(fold__rules *rs) {
  if (rs == NULL) return;
  free(rs->path);
  free(rs);
}
