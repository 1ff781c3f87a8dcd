/* optim.c — the built-in optimizers of the key-value store: spec parsing, per-key state, SGD and Adam updates. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv/optim.h"

enum { OPT_SGD, OPT_ADAM };

/* One key's state: sized and typed by its first update. */
typedef struct optim_state {
  int64_t key;
  uint64_t off; /* the part of the key it updates (a server's piece) starts here */
  size_t count;
  fold_dtype dtype;
  int64_t t;      /* Adam's step count */
  void *m, *v;    /* momentum (sgd) / first and second moments (adam) */
} optim_state;

struct fold__kv_optim {
  int kind;
  double lr, momentum, wd, rescale, clip, beta1, beta2, epsilon;
  /* key -> state: open addressing, linear probing, cap a power of two kept
   * at most half full (servers hold hundreds to tens of thousands of keys,
   * looked up once per push). */
  optim_state **slots;
  size_t cap, used;
};

/* ---- parsing ----------------------------------------------------------------- */

typedef struct setting {
  const char *name, *alias;
  size_t off;       /* into fold__kv_optim */
  double lo, hi;    /* allowed range */
  int lo_open, hi_open;
} setting;

#define OFF(f) offsetof(struct fold__kv_optim, f)
static const setting sgd_settings[] = {
  {"lr", "learning_rate", OFF(lr), 0, INFINITY, 0, 1},
  {"momentum", NULL, OFF(momentum), 0, 1, 0, 1},
  {"wd", "weight_decay", OFF(wd), 0, INFINITY, 0, 1},
  {"rescale", "rescale_grad", OFF(rescale), -INFINITY, INFINITY, 1, 1},
  {"clip", "clip_gradient", OFF(clip), 0, INFINITY, 0, 1},
};
static const setting adam_settings[] = {
  {"lr", "learning_rate", OFF(lr), 0, INFINITY, 0, 1},
  {"beta1", NULL, OFF(beta1), 0, 1, 0, 1},
  {"beta2", NULL, OFF(beta2), 0, 1, 0, 1},
  {"epsilon", "eps", OFF(epsilon), 0, INFINITY, 1, 1},
  {"wd", "weight_decay", OFF(wd), 0, INFINITY, 0, 1},
  {"rescale", "rescale_grad", OFF(rescale), -INFINITY, INFINITY, 1, 1},
  {"clip", "clip_gradient", OFF(clip), 0, INFINITY, 0, 1},
};
#undef OFF

static int say(char *why, size_t whylen, const char *fmt, ...) FOLD__PRINTF(3, 4);
static int say(char *why, size_t whylen, const char *fmt, ...) {
  if (why != NULL && whylen > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
  }
  return FOLD_EINVAL;
}

/* One "name=value" token (len bytes at tok) into o. */
static int parse_setting(fold__kv_optim *o, const char *kind, const setting *set, size_t nset, unsigned *given,
                         const char *tok, size_t len, char *why, size_t whylen) {
  const char *eq = memchr(tok, '=', len);
  if (eq == NULL)
    return say(why, whylen, "optimizer \"%s\": token \"%.*s\" is not name=value", kind, (int)len, tok);
  size_t nlen = (size_t)(eq - tok);
  for (size_t i = 0; i < nset; i++) {
    const setting *s = &set[i];
    if (!((strlen(s->name) == nlen && memcmp(s->name, tok, nlen) == 0) ||
          (s->alias && strlen(s->alias) == nlen && memcmp(s->alias, tok, nlen) == 0)))
      continue;
    if (*given & (1u << i))
      return say(why, whylen, "optimizer \"%s\": token \"%.*s\": %s given twice", kind, (int)len, tok, s->name);
    *given |= 1u << i;
    /* the value must be the whole rest of the token */
    char buf[64];
    size_t vlen = len - nlen - 1;
    if (vlen == 0 || vlen >= sizeof buf)
      return say(why, whylen, "optimizer \"%s\": token \"%.*s\": not a number", kind, (int)len, tok);
    memcpy(buf, eq + 1, vlen);
    buf[vlen] = '\0';
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (*end != '\0' || errno == ERANGE || !isfinite(v))
      return say(why, whylen, "optimizer \"%s\": token \"%.*s\": not a finite number", kind, (int)len, tok);
    if ((s->lo_open ? v <= s->lo : v < s->lo) || (s->hi_open ? v >= s->hi : v > s->hi)) {
      char lo[32], hi[32];
      snprintf(lo, sizeof lo, "%g", s->lo);
      snprintf(hi, sizeof hi, "%g", s->hi);
      return say(why, whylen, "optimizer \"%s\": token \"%.*s\": %s must be in %c%s, %s%c", kind, (int)len, tok,
                 s->name, s->lo_open ? '(' : '[', lo, hi, s->hi_open ? ')' : ']');
    }
    *(double *)((char *)o + s->off) = v;
    return 0;
  }
  return say(why, whylen, "optimizer \"%s\": token \"%.*s\": unknown setting \"%.*s\"", kind, (int)len, tok, (int)nlen,
             tok);
}

static int is_blank(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == ','; }

int fold__kv_optim_parse(const char *spec, fold__kv_optim **out, char *why, size_t whylen) {
  if (out == NULL) return say(why, whylen, "optimizer: NULL result pointer");
  *out = NULL;
  if (spec == NULL) return say(why, whylen, "optimizer: NULL spec");
  const char *p = spec;
  while (*p && is_blank(*p)) p++;
  const char *name = p;
  while (*p && !is_blank(*p)) p++;
  size_t nlen = (size_t)(p - name);
  if (nlen == 0) return say(why, whylen, "optimizer: empty spec (want \"sgd ...\" or \"adam ...\")");
  fold__kv_optim o = {.rescale = 1};
  const setting *set;
  size_t nset;
  const char *kind;
  if (nlen == 3 && strncmp(name, "sgd", 3) == 0) {
    o.kind = OPT_SGD, kind = "sgd", set = sgd_settings, nset = sizeof sgd_settings / sizeof *sgd_settings;
    o.lr = 0.01;
  } else if (nlen == 4 && strncmp(name, "adam", 4) == 0) {
    o.kind = OPT_ADAM, kind = "adam", set = adam_settings, nset = sizeof adam_settings / sizeof *adam_settings;
    o.lr = 0.001, o.beta1 = 0.9, o.beta2 = 0.999, o.epsilon = 1e-8;
  } else {
    return say(why, whylen, "optimizer: unknown optimizer \"%.*s\" (known: sgd, adam)", (int)nlen, name);
  }
  unsigned given = 0;
  for (;;) {
    while (*p && is_blank(*p)) p++;
    if (*p == '\0') break;
    const char *tok = p;
    while (*p && !is_blank(*p)) p++;
    int rc = parse_setting(&o, kind, set, nset, &given, tok, (size_t)(p - tok), why, whylen);
    if (rc != 0) return rc;
  }
  fold__kv_optim *r = malloc(sizeof *r);
  if (r == NULL) return FOLD_ENOMEM;
  *r = o;
  *out = r;
  if (why != NULL && whylen > 0) why[0] = '\0';
  return 0;
}

const char *fold__kv_optim_name(const fold__kv_optim *o) { return o->kind == OPT_SGD ? "sgd" : "adam"; }

/* ---- per-key state --------------------------------------------------------------- */

static size_t slot_of(int64_t key, uint64_t off, size_t cap) {
  /* Fibonacci hashing spreads sequential keys (and a key's pieces) */
  uint64_t h = ((uint64_t)key ^ (off * 0xff51afd7ed558ccdull)) * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 32) & (cap - 1);
}

static int grow(fold__kv_optim *o) {
  size_t ncap = o->cap ? o->cap * 2 : 64;
  optim_state **ns = calloc(ncap, sizeof *ns);
  if (ns == NULL) return FOLD_ENOMEM;
  for (size_t i = 0; i < o->cap; i++) {
    optim_state *s = o->slots[i];
    if (s == NULL) continue;
    size_t j = slot_of(s->key, s->off, ncap);
    while (ns[j] != NULL) j = (j + 1) & (ncap - 1);
    ns[j] = s;
  }
  free(o->slots);
  o->slots = ns;
  o->cap = ncap;
  return 0;
}

/* The state of key's part at off, made zeroed (with `arrays` state arrays) if new; NULL on ENOMEM. */
static optim_state *state_of(fold__kv_optim *o, int64_t key, uint64_t off, size_t count, fold_dtype dt, int arrays) {
  if (o->cap > 0) {
    for (size_t j = slot_of(key, off, o->cap); o->slots[j] != NULL; j = (j + 1) & (o->cap - 1))
      if (o->slots[j]->key == key && o->slots[j]->off == off) return o->slots[j];
  }
  if ((o->used + 1) * 2 > o->cap && grow(o) != 0) return NULL;
  optim_state *s = calloc(1, sizeof *s);
  size_t es = fold_dtype_size(dt);
  if (s == NULL) return NULL;
  s->key = key, s->off = off, s->count = count, s->dtype = dt;
  if ((arrays >= 1 && (s->m = calloc(count ? count : 1, es)) == NULL) ||
      (arrays >= 2 && (s->v = calloc(count ? count : 1, es)) == NULL)) {
    free(s->m);
    free(s);
    return NULL;
  }
  size_t j = slot_of(key, off, o->cap);
  while (o->slots[j] != NULL) j = (j + 1) & (o->cap - 1);
  o->slots[j] = s;
  o->used++;
  return s;
}

/* ---- updates ------------------------------------------------------------------- */

/* The same body for float and double: T is the weight's type, SQRT its
 * square root. Constants are rounded to T once, as a framework's kernel
 * receives them. */
#define DEF_UPDATES(sfx, T, SQRT)                                                                     \
  static T grad_##sfx(const fold__kv_optim *o, T g, T w) {                                            \
    g = (T)o->rescale * g;                                                                            \
    if (o->clip > 0) g = g > (T)o->clip ? (T)o->clip : (g < -(T)o->clip ? -(T)o->clip : g);           \
    return g + (T)o->wd * w;                                                                          \
  }                                                                                                   \
  static void sgd_##sfx(const fold__kv_optim *o, const T *g, T *w, T *mom, size_t n) {                \
    T lr = (T)o->lr, mu = (T)o->momentum;                                                             \
    if (mom == NULL) {                                                                                \
      for (size_t i = 0; i < n; i++) w[i] -= lr * grad_##sfx(o, g[i], w[i]);                          \
      return;                                                                                         \
    }                                                                                                 \
    for (size_t i = 0; i < n; i++) {                                                                  \
      mom[i] = mu * mom[i] - lr * grad_##sfx(o, g[i], w[i]);                                          \
      w[i] += mom[i];                                                                                 \
    }                                                                                                 \
  }                                                                                                   \
  static void adam_##sfx(const fold__kv_optim *o, int64_t t, const T *g, T *w, T *m, T *v, size_t n) { \
    T b1 = (T)o->beta1, b2 = (T)o->beta2, eps = (T)o->epsilon;                                        \
    T step = (T)(o->lr / (1.0 - pow(o->beta1, (double)t)));                                           \
    T bc2 = (T)sqrt(1.0 - pow(o->beta2, (double)t));                                                  \
    for (size_t i = 0; i < n; i++) {                                                                  \
      T gi = grad_##sfx(o, g[i], w[i]);                                                               \
      m[i] = b1 * m[i] + (1 - b1) * gi;                                                               \
      v[i] = b2 * v[i] + (1 - b2) * gi * gi;                                                          \
      w[i] -= step * m[i] / (SQRT(v[i]) / bc2 + eps);                                                 \
    }                                                                                                 \
  }

DEF_UPDATES(f32, float, sqrtf)
DEF_UPDATES(f64, double, sqrt)

int fold__kv_optim_apply(fold__kv_optim *o, int64_t key, const void *grad, void *weight, size_t count,
                         fold_dtype dtype) {
  return fold__kv_optim_apply_part(o, key, 0, grad, weight, count, dtype);
}

int fold__kv_optim_apply_part(fold__kv_optim *o, int64_t key, uint64_t off, const void *grad, void *weight,
                              size_t count, fold_dtype dtype) {
  if (o == NULL) return fold__error(NULL, FOLD_EINVAL, "fold kv: key %lld: no optimizer", (long long)key);
  const char *name = fold__kv_optim_name(o);
  if (dtype != FOLD_FLOAT32 && dtype != FOLD_FLOAT64)
    return fold__error(NULL, FOLD_EINVAL, "fold kv: key %lld: optimizer %s updates float32 or float64, not %s",
                       (long long)key, name, fold_dtype_name(dtype));
  if (count > 0 && (grad == NULL || weight == NULL))
    return fold__error(NULL, FOLD_EINVAL, "fold kv: key %lld: optimizer %s given a NULL %s", (long long)key, name,
                       grad == NULL ? "gradient" : "weight");
  int arrays = o->kind == OPT_ADAM ? 2 : o->momentum != 0 ? 1 : 0;
  optim_state *s = state_of(o, key, off, count, dtype, arrays);
  if (s == NULL)
    return fold__error(NULL, FOLD_ENOMEM, "fold kv: key %lld: no memory for %s state of %zu elements",
                       (long long)key, name, count);
  if (s->count != count || s->dtype != dtype)
    return fold__error(NULL, FOLD_EINVAL,
                       "fold kv: key %lld: optimizer %s got %zu %s elements, but %zu %s before", (long long)key,
                       name, count, fold_dtype_name(dtype), s->count, fold_dtype_name(s->dtype));
  s->t++;
  int f32 = dtype == FOLD_FLOAT32;
  if (o->kind == OPT_SGD) {
    if (f32)
      sgd_f32(o, grad, weight, s->m, count);
    else
      sgd_f64(o, grad, weight, s->m, count);
  } else if (f32) {
    adam_f32(o, s->t, grad, weight, s->m, s->v, count);
  } else {
    adam_f64(o, s->t, grad, weight, s->m, s->v, count);
  }
  return 0;
}

void fold__kv_optim_free(fold__kv_optim *o) {
  if (o == NULL) return;
  for (size_t i = 0; i < o->cap; i++) {
    if (o->slots[i] == NULL) continue;
    free(o->slots[i]->m);
    free(o->slots[i]->v);
    free(o->slots[i]);
  }
  free(o->slots);
  free(o);
}
