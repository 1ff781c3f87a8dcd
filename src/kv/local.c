/* local.c — the local store: push groups a call's values by key, sums them (fold__kv_sum), updates; pull copies out. */
#include <stdlib.h>
#include <string.h>

#include "kv/kv.h"

int fold__kv_local_init(fold_kv *kv, fold__kv_ent *e, const void *value) {
  size_t bytes = e->count * e->esize;
  if ((e->val = malloc(bytes)) == NULL) return fold__kv_err(kv, FOLD_ENOMEM, "fold_kv_init: out of memory (%zu bytes)", bytes);
  memcpy(e->val, value, bytes);
  e->server = -1;
  return FOLD_OK;
}

static void *scratch(fold_kv *kv, size_t bytes) {
  if (kv->scratch_cap < bytes) {
    void *p = realloc(kv->scratch, bytes);
    if (p == NULL) return NULL;
    kv->scratch = p;
    kv->scratch_cap = bytes;
  }
  return kv->scratch;
}

int fold__kv_local_push(fold_kv *kv, int n, const int64_t *keys, const void *const *values) {
  /* group by key: srcs holds every value of one key (several devices) */
  const void **srcs = malloc(sizeof *srcs * (size_t)(n ? n : 1));
  int *order = fold__kv_group(n, keys);
  int rc = FOLD_OK;
  if (srcs == NULL || order == NULL) {
    rc = fold__kv_err(kv, FOLD_ENOMEM, "fold_kv_push: out of memory");
    goto out;
  }
  for (int a = 0, b; a < n && rc == FOLD_OK; a = b) {
    int64_t key = keys[order[a]];
    int ns = 0;
    for (b = a; b < n && keys[order[b]] == key; b++) srcs[ns++] = values[order[b]];
    fold__kv_ent *e = fold__kv_map_get(&kv->ents, key);
    void *sum = scratch(kv, e->count * e->esize);
    if (sum == NULL) {
      rc = fold__kv_err(kv, FOLD_ENOMEM, "fold_kv_push: out of memory (%zu bytes)", e->count * e->esize);
      break;
    }
    /* blocks over the pool's threads only above the big-array bound */
    rc = fold__kv_sum(kv->pool, sum, srcs, ns, e->count, e->dtype, kv->bound);
    if (rc != FOLD_OK) {
      char kb[300];
      rc = fold__kv_err(kv, rc, "fold_kv_push: %s: %s", fold__kv_keyname(kv, key, kb, sizeof kb),
                        fold_comm_last_error(NULL));
      break;
    }
    fold__kv_apply(kv, e->key, 0, sum, e->val, e->count, e->dtype);
  }
out:
  free(srcs);
  free(order);
  return rc;
}

int fold__kv_local_pull(fold_kv *kv, int n, const int64_t *keys, void *const *outs) {
  for (int i = 0; i < n; i++) {
    const fold__kv_ent *e = fold__kv_map_get(&kv->ents, keys[i]);
    if (outs[i] != e->val) memcpy(outs[i], e->val, e->count * e->esize);
  }
  return FOLD_OK;
}
