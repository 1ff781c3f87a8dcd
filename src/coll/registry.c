/* registry.c — the tables and name lookups generated from the lists in coll/registry.h. */
#include <stdio.h>
#include <string.h>

#include "coll/registry.h"

/* One NULL-terminated array per collective: fold__allreduce_algos, ... */
#define ALGO_ENTRY(coll, algo) &fold__##coll##_##algo,
#define ALGO_ARRAY(KIND, name) \
  static const fold__algo *const fold__##name##_algos[FOLD__ALGO_COUNT_##name + 1] = {FOLD__ALGOS_##name(ALGO_ENTRY) NULL};
FOLD__COLLS(ALGO_ARRAY)
#undef ALGO_ARRAY
#undef ALGO_ENTRY

#define TABLE_ENTRY(KIND, name) [FOLD__COLL_##KIND] = {#name, fold__##name##_algos, FOLD__ALGO_COUNT_##name},
const fold__algo_table fold__algo_tables[FOLD__COLL_COUNT] = {FOLD__COLLS(TABLE_ENTRY)};
#undef TABLE_ENTRY

const char *fold__coll_name(fold__coll_kind k) {
  return (unsigned)k < FOLD__COLL_COUNT ? fold__algo_tables[k].coll_name : "?";
}

int fold__coll_index(const char *s, size_t len) {
  for (int k = 0; k < FOLD__COLL_COUNT; k++) {
    const char *name = fold__algo_tables[k].coll_name;
    if (strlen(name) == len && strncmp(name, s, len) == 0) return k;
  }
  return -1;
}

void fold__coll_names(char *buf, size_t len) {
  size_t n = 0;
  buf[0] = '\0';
  for (int k = 0; k < FOLD__COLL_COUNT && n < len; k++) {
    int w = snprintf(buf + n, len - n, "%s%s", k ? " " : "", fold__algo_tables[k].coll_name);
    if (w < 0) break;
    n += (size_t)w;
  }
}

int fold__algo_index(fold__coll_kind kind, const char *name, size_t len) {
  const fold__algo *const *a = fold__algo_tables[kind].algos;
  for (int i = 0; a[i]; i++)
    if (strlen(a[i]->name) == len && strncmp(a[i]->name, name, len) == 0) return i;
  return -1;
}

int fold__coll_algo_index(fold__coll_kind k, const fold__algo *algo) {
  const fold__algo *const *t = fold__algo_tables[k].algos;
  for (int i = 0; t[i]; i++)
    if (t[i] == algo) return i;
  return -1;
}

void fold__algo_names(fold__coll_kind kind, char *buf, size_t len) {
  const fold__algo *const *a = fold__algo_tables[kind].algos;
  size_t n = 0;
  buf[0] = '\0';
  for (int i = 0; a[i] && n < len; i++) {
    int w = snprintf(buf + n, len - n, "%s%s", i ? " " : "", a[i]->name);
    if (w < 0) break;
    n += (size_t)w;
  }
}
