/* params.c — the one parser of the FOLD_* variables (params.h): read, cache per raw value, warn, log, print. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/internal.h"
#include "core/params.h"

/* The FLAGS column's words, for the table below only. */
enum { LO_OPEN = FOLD__PF_LO_OPEN, HI_OPEN = FOLD__PF_HI_OPEN, ERROR = FOLD__PF_ERROR, SECRET = FOLD__PF_SECRET };

const fold__param_info fold__params[FOLD__P_COUNT] = {
#define FOLD__PARAM_ROW(id, name, type, flags, dflt, lo, hi, grammar, dflt_doc, when, doc) \
  {name, FOLD__PT_##type, (flags), (long double)(dflt), (long double)(lo), (long double)(hi), grammar, dflt_doc, when, doc},
    FOLD__PARAMS(FOLD__PARAM_ROW)
#undef FOLD__PARAM_ROW
};

/* The last raw value each parameter was read with, and what it parsed to:
 * a read whose raw string is the same costs a getenv and a strcmp; a
 * changed one (tests set variables between communicators) is parsed,
 * warned about or logged again. */
static pthread_mutex_t params_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  int seen, state;
  char *raw; /* NULL: unset or empty */
  fold__pval v;
} slots[FOLD__P_COUNT];

/* A number as the docs say it: powers of two from 1024 as 2^k. */
static void num_text(long double x, char *buf, size_t cap) {
  if (x >= 1024 && x <= 0x1p63L && x == floorl(x)) {
    uint64_t u = (uint64_t)x;
    if ((u & (u - 1)) == 0) {
      int k = 0;
      while ((1ull << k) != u) k++;
      snprintf(buf, cap, "2^%d", k);
      return;
    }
  }
  snprintf(buf, cap, "%.15Lg", x);
}

void fold__param_valid_text(const fold__param_info *p, char *buf, size_t cap) {
  char lo[32], hi[32];
  num_text(p->lo, lo, sizeof lo);
  num_text(p->hi, hi, sizeof hi);
  if (p->type == FOLD__PT_ENUM) {
    size_t n = 0;
    for (const char *g = p->grammar; *g && n < cap;) {
      size_t len = strcspn(g, "|");
      n += (size_t)snprintf(buf + n, cap - n, "%s%.*s", g == p->grammar ? "one of " : ", ", (int)len, g);
      g += len + (g[len] == '|');
    }
    return;
  }
  if (p->grammar[0]) {
    snprintf(buf, cap, "%s", p->grammar);
  } else if (p->type == FOLD__PT_UINT || p->type == FOLD__PT_POW2) {
    const char *what = p->type == FOLD__PT_POW2 ? "a power of two" : "an integer";
    if (p->hi >= (long double)UINT64_MAX)
      snprintf(buf, cap, "%s >= %s", what, lo);
    else
      snprintf(buf, cap, "%s in [%s, %s]", what, lo, hi);
  } else {
    snprintf(buf, cap, "a number in %c%s, %s%c", p->flags & FOLD__PF_LO_OPEN ? '(' : '[', lo, hi,
             p->flags & FOLD__PF_HI_OPEN ? ')' : ']');
  }
}

/* raw (non-empty) as p's type: 0 and *v, or -1. */
static int parse(const fold__param_info *p, const char *raw, fold__pval *v) {
  switch (p->type) {
  case FOLD__PT_UINT:
  case FOLD__PT_POW2: {
    if (!isdigit((unsigned char)raw[0])) return -1; /* no sign, no blank: "-5" is not 2^64 - 5 */
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(raw, &end, 10);
    if (errno != 0 || *end != '\0' || (long double)x < p->lo || (long double)x > p->hi) return -1;
    if (p->type == FOLD__PT_POW2 && (x & (x - 1)) != 0) return -1;
    v->u = x;
    return 0;
  }
  case FOLD__PT_REAL: {
    char *end = NULL;
    double x = strtod(raw, &end);
    if (end == raw || *end != '\0' || !isfinite(x)) return -1;
    long double lx = x;
    if (lx < p->lo || lx > p->hi) return -1;
    if ((p->flags & FOLD__PF_LO_OPEN) && lx == p->lo) return -1;
    if ((p->flags & FOLD__PF_HI_OPEN) && lx == p->hi) return -1;
    v->d = x;
    return 0;
  }
  case FOLD__PT_ENUM: {
    size_t len = strlen(raw);
    uint64_t i = 0;
    for (const char *g = p->grammar; *g; i++) {
      size_t n = strcspn(g, "|");
      if (n == len && strncasecmp(g, raw, n) == 0) {
        v->u = i;
        return 0;
      }
      g += n + (g[n] == '|');
    }
    return -1;
  }
  default:
    v->s = raw;
    return 0;
  }
}

/* A new raw value of p: warn if it was rejected, log it at INFO if not. */
static void announce(const fold__param_info *p, const char *raw, int state, const fold__pval *v) {
  if (state < 0) {
    if (p->flags & FOLD__PF_ERROR) return; /* the reader's error says it */
    char valid[160];
    fold__param_valid_text(p, valid, sizeof valid);
    fold__warn_env(p->name, raw, "is not %s; using %s", valid, p->dflt_doc);
    return;
  }
  uint64_t level = p == &fold__params[FOLD__P_DEBUG] ? v->u : fold__param_u64(FOLD__P_DEBUG);
  if (level < FOLD__LOG_INFO) return;
  if (p->flags & FOLD__PF_SECRET)
    fold__log(FOLD__LOG_INFO, -1, "%s is set (secret: not shown)", p->name);
  else
    fold__log(FOLD__LOG_INFO, -1, "%s=%s (read at %s)", p->name, raw, p->when);
}

static int same(const char *a, const char *b) { return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0; }

int fold__param_read(fold__param_id id, fold__pval *out) {
  const fold__param_info *p = &fold__params[id];
  const char *raw = getenv(p->name);
  if (raw != NULL && raw[0] == '\0') raw = NULL; /* empty is unset, as it always was */
  fold__pval v = {.u = (uint64_t)p->dflt, .d = (double)p->dflt, .s = NULL};
  int state, fresh = 0;
  pthread_mutex_lock(&params_lock);
  if (slots[id].seen && same(slots[id].raw, raw)) {
    v = slots[id].v;
    state = slots[id].state;
  } else {
    state = raw == NULL ? 0 : parse(p, raw, &v) == 0 ? 1 : -1;
    if (state < 0) /* parse may have written part: the default stands */
      v = (fold__pval){.u = (uint64_t)p->dflt, .d = (double)p->dflt, .s = NULL};
    char *copy = raw ? strdup(raw) : NULL;
    if (raw == NULL || copy != NULL) { /* out of memory: parsed again next time */
      free(slots[id].raw);
      slots[id].raw = copy;
      slots[id].v = v;
      slots[id].state = state;
      slots[id].seen = 1;
    }
    fresh = 1;
  }
  pthread_mutex_unlock(&params_lock);
  v.s = state > 0 && p->type == FOLD__PT_STR ? raw : NULL; /* the environment's string, never our copy */
  if (fresh && raw != NULL) announce(p, raw, state, &v);
  if (out) *out = v;
  return state;
}

uint64_t fold__param_u64(fold__param_id id) {
  fold__pval v;
  fold__param_read(id, &v);
  return v.u;
}

double fold__param_real(fold__param_id id) {
  fold__pval v;
  fold__param_read(id, &v);
  return v.d;
}

const char *fold__param_str(fold__param_id id) {
  fold__pval v;
  fold__param_read(id, &v);
  return v.s;
}

int fold__test_host(int rank) {
  const char *map = fold__param_str(FOLD__P_TEST_HOST_MAP);
  if (map) {
    /* two passes: the length, then entry rank % len; digits and commas only */
    int len = 0, ok = 1;
    for (const char *p = map; ok; p++) {
      if (*p < '0' || *p > '9') { ok = 0; break; }
      while (*p >= '0' && *p <= '9') p++;
      len++;
      if (*p == '\0') break;
      if (*p != ',') ok = 0;
    }
    if (ok && len > 0 && rank >= 0) {
      int want = rank % len, i = 0;
      const char *p = map;
      while (i < want) i += *p++ == ',';
      long v = 0;
      while (*p >= '0' && *p <= '9' && v < (1 << 30)) v = v * 10 + (*p++ - '0');
      return (int)v;
    }
    static _Atomic int warned;
    if (!atomic_exchange(&warned, 1))
      FOLD__WARN((fold_comm *)NULL, "FOLD_TEST_HOST_MAP=%s is not a list of host numbers separated by commas; ignored", map);
  }
  int th = (int)fold__param_u64(FOLD__P_TEST_HOSTS);
  return th > 0 && rank >= 0 ? rank / th : -1;
}

int fold__param_find(const char *name) {
  for (int i = 0; i < FOLD__P_COUNT; i++)
    if (strcmp(fold__params[i].name, name) == 0) return i;
  return -1;
}

const char *fold__env_str(const char *name) {
  int id = fold__param_find(name);
  if (id >= 0) fold__param_read((fold__param_id)id, NULL); /* logged or warned as any read */
  return getenv(name);
}

/* ---- the public view -------------------------------------------------------------- */

typedef struct {
  char *buf;
  size_t cap, len;
} text;

static void add(text *t, const char *fmt, ...) FOLD__PRINTF(2, 3);
static void add(text *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = t->len < t->cap ? t->cap - t->len : 0;
  int n = vsnprintf(room ? t->buf + t->len : NULL, room, fmt, ap);
  va_end(ap);
  if (n > 0) t->len += (size_t)n;
}

/* The value as the library uses it (set and valid). */
static void value_text(const fold__param_info *p, const fold__pval *v, const char *raw, text *t) {
  switch (p->type) {
  case FOLD__PT_UINT:
  case FOLD__PT_POW2: add(t, "%llu", (unsigned long long)v->u); break;
  case FOLD__PT_REAL: add(t, "%g", v->d); break;
  case FOLD__PT_ENUM: {
    const char *g = p->grammar;
    for (uint64_t i = 0; i < v->u && *g; i++) g += strcspn(g, "|") + 1;
    add(t, "%.*s", (int)strcspn(g, "|"), g);
    break;
  }
  default: add(t, "%s", raw); break;
  }
}

size_t fold_config_print(char *buf, size_t cap) {
  text t = {buf, buf ? cap : 0, 0};
  if (t.cap) buf[0] = '\0';
  add(&t, "# fold %s: the FOLD_* variables as this process reads them now (docs/configuration.md)\n", fold_version());
  for (int i = 0; i < FOLD__P_COUNT; i++) {
    const fold__param_info *p = &fold__params[i];
    fold__pval v;
    int state = fold__param_read((fold__param_id)i, &v);
    const char *raw = getenv(p->name);
    add(&t, "%-23s ", p->name);
    if (state > 0 && (p->flags & FOLD__PF_SECRET)) {
      add(&t, "(set; secret)\n");
    } else if (state > 0) {
      value_text(p, &v, raw, &t);
      add(&t, "\n");
    } else if (state == 0) {
      add(&t, "%s (default)\n", p->dflt_doc);
    } else {
      char valid[160];
      fold__param_valid_text(p, valid, sizeof valid);
      if (p->flags & FOLD__PF_ERROR)
        add(&t, "\"%s\" is not %s (an error when read)\n", raw ? raw : "", valid);
      else
        add(&t, "%s (default: \"%s\" is not %s)\n", p->dflt_doc, raw ? raw : "", valid);
    }
  }
  if (t.cap) t.buf[t.len < t.cap ? t.len : t.cap - 1] = '\0';
  return t.len;
}

int fold_config_get(const char *name, char *buf, size_t cap) {
  int id = name ? fold__param_find(name) : -1;
  if (id < 0)
    return fold__error(NULL, FOLD_EINVAL, "fold_config_get: %s is not a FOLD_* variable of this library",
                       name ? name : "NULL");
  if (buf == NULL && cap > 0)
    return fold__error(NULL, FOLD_EINVAL, "fold_config_get: buf is NULL and cap is %zu", cap);
  fold__pval v;
  int state = fold__param_read((fold__param_id)id, &v);
  text t = {buf, cap, 0};
  if (cap) buf[0] = '\0';
  if (state > 0) value_text(&fold__params[id], &v, getenv(name), &t);
  if (cap) buf[t.len < cap ? t.len : cap - 1] = '\0';
  return t.len > (size_t)INT32_MAX ? INT32_MAX : (int)t.len;
}
