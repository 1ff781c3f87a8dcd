/* key.c — the store's key table (int64 -> pointer, open addressing) and string keys (fold_kv_key). */
#include <stdlib.h>
#include <string.h>

#include "kv/kv.h"

/* A 64-bit mix (splitmix64's finaliser): integer keys are often dense
 * (0, 1, 2, ...), string keys are hashes already; both spread well. */
static uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static size_t slot_of(const fold__kv_map *m, int64_t key) {
  size_t i = (size_t)mix((uint64_t)key) & (m->cap - 1);
  while (m->vals[i] != NULL && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
  return i;
}

void *fold__kv_map_get(const fold__kv_map *m, int64_t key) {
  if (m->cap == 0) return NULL;
  return m->vals[slot_of(m, key)];
}

static int grow(fold__kv_map *m) {
  size_t cap = m->cap ? m->cap * 2 : 64;
  fold__kv_map n = {calloc(cap, sizeof *n.keys), calloc(cap, sizeof *n.vals), cap, 0};
  if (n.keys == NULL || n.vals == NULL) {
    free(n.keys);
    free(n.vals);
    return FOLD_ENOMEM;
  }
  for (size_t i = 0; i < m->cap; i++)
    if (m->vals[i]) {
      size_t j = slot_of(&n, m->keys[i]);
      n.keys[j] = m->keys[i];
      n.vals[j] = m->vals[i];
      n.n++;
    }
  free(m->keys);
  free(m->vals);
  *m = n;
  return FOLD_OK;
}

int fold__kv_map_put(fold__kv_map *m, int64_t key, void *val) {
  /* at most half full: probes stay short */
  if ((m->n + 1) * 2 > m->cap && grow(m) != FOLD_OK) return FOLD_ENOMEM;
  size_t i = slot_of(m, key);
  if (m->vals[i] == NULL) m->n++;
  m->keys[i] = key;
  m->vals[i] = val;
  return FOLD_OK;
}

void fold__kv_map_free(fold__kv_map *m, void (*fn)(void *val)) {
  for (size_t i = 0; i < m->cap; i++)
    if (m->vals[i] && fn) fn(m->vals[i]);
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

/* ---- grouping a call's keys ------------------------------------------------ */

typedef struct kv_pos {
  int64_t key;
  int idx;
} kv_pos;

static int pos_cmp(const void *a, const void *b) {
  const kv_pos *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

int *fold__kv_group(int n, const int64_t *keys) {
  kv_pos *p = malloc(sizeof *p * (size_t)(n ? n : 1));
  int *order = malloc(sizeof *order * (size_t)(n ? n : 1));
  if (p == NULL || order == NULL) {
    free(p);
    free(order);
    return NULL;
  }
  for (int i = 0; i < n; i++) p[i] = (kv_pos){keys[i], i};
  /* O(n log n): a call may carry a whole model's keys (10,000 and more) */
  qsort(p, (size_t)n, sizeof *p, pos_cmp);
  for (int i = 0; i < n; i++) order[i] = p[i].idx;
  free(p);
  return order;
}

/* ---- string keys ---------------------------------------------------------- */

/* FNV-1a over the name: the same on every rank and every run, whatever the
 * order of calls (no shared counter to agree on). */
static uint64_t fnv1a(const char *s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 0x100000001b3ULL;
  }
  return h;
}

int fold_kv_key(fold_kv *kv, const char *name, int64_t *key) {
  if (kv == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_kv_key: kv is NULL");
  if (key == NULL) return fold__kv_err(kv, FOLD_EINVAL, "fold_kv_key: key is NULL (name '%s')", name ? name : "(null)");
  if (name == NULL || name[0] == '\0')
    return fold__kv_err(kv, FOLD_EINVAL, "fold_kv_key: the name is %s", name ? "empty" : "NULL");
  size_t len = strlen(name);
  if (len >= sizeof ((fold__kv_name *)0)->name)
    return fold__kv_err(kv, FOLD_EINVAL, "fold_kv_key: the name '%.40s...' is %zu bytes (at most 255)", name, len);
  /* negative, never -0: string keys stay apart from integer keys >= 0 */
  int64_t k = -1 - (int64_t)(fnv1a(name) & 0x3fffffffffffffffULL);
  fold__kv_name *nm = fold__kv_map_get(&kv->names, k);
  if (nm != NULL) {
    if (strcmp(nm->name, name) != 0)
      return fold__kv_err(kv, FOLD_EINVAL, "fold_kv_key: the names '%s' and '%s' hash to the same key %lld", nm->name,
                          name, (long long)k);
    *key = k;
    return FOLD_OK;
  }
  if ((nm = malloc(sizeof *nm)) == NULL) return fold__kv_err(kv, FOLD_ENOMEM, "fold_kv_key: out of memory");
  nm->key = k;
  memcpy(nm->name, name, len + 1);
  if (fold__kv_map_put(&kv->names, k, nm) != FOLD_OK) {
    free(nm);
    return fold__kv_err(kv, FOLD_ENOMEM, "fold_kv_key: out of memory");
  }
  *key = k;
  return FOLD_OK;
}

const char *fold__kv_keyname(const fold_kv *kv, int64_t key, char *buf, size_t cap) {
  const fold__kv_name *nm = fold__kv_map_get(&kv->names, key);
  if (nm)
    snprintf(buf, cap, "key '%s' (%lld)", nm->name, (long long)key);
  else
    snprintf(buf, cap, "key %lld", (long long)key);
  return buf;
}
