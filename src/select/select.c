/* select.c — the automatic selection table (data), forced choices and the FOLD_ALGO grammar. */
#include <stdlib.h>
#include <string.h>

#include "select/select.h"

/* The automatic table, first match wins. Starting point: the MPICH and Open
 * MPI decision rules (few steps for small messages, little data per rank
 * for large ones); retuned by measurement in docs/performance.md. */
static const fold__rule default_rules[] = {
  /* shared-memory collectives first, wherever they are usable (one host,
   * every peer over shm): see src/coll/shm_coll.c */
  {FOLD__COLL_BROADCAST, 0, 0, 0, 0, 0, 0, "shm"},
  {FOLD__COLL_REDUCE, 0, 0, 0, 0, 0, 0, "shm"},
  {FOLD__COLL_ALLREDUCE, 0, 0, 0, 0, 0, 0, "shm"},
  {FOLD__COLL_REDUCE_SCATTER, 0, 0, 0, 0, 0, 0, "shm"},
  {FOLD__COLL_ALLGATHER, 0, 0, 0, 0, 0, 0, "shm"},
  {FOLD__COLL_GATHER, 0, 0, 0, 0, 0, 0, "shm"},
  {FOLD__COLL_SCATTER, 0, 0, 0, 0, 0, 0, "shm"},
  {FOLD__COLL_ALLTOALL, 0, 0, 0, 0, 0, 0, "shm"},
  {FOLD__COLL_BARRIER, 0, 0, 0, 0, 0, 0, "shm"},
  {FOLD__COLL_BROADCAST, 0, 0, 0, 12288, 0, 0, "binomial"},
  {FOLD__COLL_BROADCAST, 0, 7, 0, 0, 0, 0, "binomial"},
  {FOLD__COLL_BROADCAST, 0, 0, 0, 524288, 0, 0, "scatter_allgather"},
  {FOLD__COLL_BROADCAST, 0, 0, 0, 0, 0, 0, "pipeline"},
  {FOLD__COLL_REDUCE, 0, 0, 0, 2048, 0, 0, "binomial"},
  {FOLD__COLL_REDUCE, 0, 0, 0, 0, 1, 0, "rabenseifner"},
  {FOLD__COLL_REDUCE, 0, 0, 0, 0, 0, 0, "binomial"},
  {FOLD__COLL_ALLREDUCE, 0, 0, 0, 2048, 0, 0, "recursive_doubling"},
  {FOLD__COLL_ALLREDUCE, 0, 0, 0, 524288, 1, 0, "rabenseifner"},
  {FOLD__COLL_ALLREDUCE, 0, 0, 0, 0, 1, 0, "ring_segmented"},
  {FOLD__COLL_ALLREDUCE, 0, 0, 0, 0, 0, 0, "recursive_doubling"},
  {FOLD__COLL_REDUCE_SCATTER, 0, 0, 0, 524288, 1, 0, "recursive_halving"},
  {FOLD__COLL_REDUCE_SCATTER, 0, 0, 0, 0, 1, 0, "ring"},
  {FOLD__COLL_REDUCE_SCATTER, 0, 0, 0, 0, 0, 0, "pairwise"},
  {FOLD__COLL_ALLGATHER, 0, 0, 0, 8192, 0, 1, "recursive_doubling"},
  {FOLD__COLL_ALLGATHER, 0, 0, 0, 65536, 0, 0, "bruck"},
  {FOLD__COLL_ALLGATHER, 0, 0, 0, 0, 0, 0, "ring"},
  {FOLD__COLL_GATHER, 0, 0, 0, 0, 0, 0, "binomial"},
  {FOLD__COLL_SCATTER, 0, 0, 0, 0, 0, 0, "binomial"},
  {FOLD__COLL_ALLTOALL, 8, 0, 0, 256, 0, 0, "bruck"},
  {FOLD__COLL_ALLTOALL, 0, 0, 0, 0, 0, 0, "pairwise"},
  {FOLD__COLL_BARRIER, 0, 0, 0, 0, 0, 0, "dissemination"},
};

int fold__algo_index(fold__coll_kind kind, const char *name, size_t len) {
  const fold__algo *const *a = fold__algo_tables[kind].algos;
  for (int i = 0; a && a[i]; i++)
    if (strlen(a[i]->name) == len && strncmp(a[i]->name, name, len) == 0) return i;
  return -1;
}

static const fold__algo *rule_pick(const fold_comm *c, fold__coll_kind kind, size_t bytes, int commutative) {
  const fold__algo *const *algos = fold__algo_tables[kind].algos;
  for (size_t i = 0; i < sizeof default_rules / sizeof *default_rules; i++) {
    const fold__rule *r = &default_rules[i];
    if (r->coll != kind || c->size < r->min_ranks || (r->max_ranks && c->size > r->max_ranks)) continue;
    if (bytes < r->min_bytes || (r->max_bytes && bytes > r->max_bytes)) continue;
    if (r->commutative_only && !commutative) continue;
    if (r->pof2_only && (c->size & (c->size - 1))) continue;
    int k = fold__algo_index(kind, r->algo, strlen(r->algo));
    if (k >= 0 && algos[k]->usable && algos[k]->usable(c)) continue; /* e.g. shm on threads */
    if (k >= 0 && (commutative || algos[k]->noncommutative_ok)) return algos[k];
  }
  /* No rule fits (e.g. a table without a non-commutative entry): the first
   * algorithm that can serve the call. */
  for (int k = 0; algos[k]; k++)
    if ((commutative || algos[k]->noncommutative_ok) && !(algos[k]->usable && algos[k]->usable(c))) return algos[k];
  return NULL;
}

int fold__select(fold_comm *c, fold__coll_kind kind, size_t bytes, int commutative, const fold__algo **out,
                 const char *opname) {
  int forced = c->coll_algo[kind];
  if (forced >= 0) {
    const fold__algo *a = fold__algo_tables[kind].algos[forced];
    const char *why = a->usable ? a->usable(c) : NULL;
    if (why)
      return fold__error(c, FOLD_EINVAL, "%s: rank %d: algorithm %s (forced by FOLD_ALGO or fold_comm_set_algo) cannot run "
                         "on this communicator: %s", opname, c->rank, a->name, why);
    if (!commutative && !a->noncommutative_ok)
      return fold__error(c, FOLD_EINVAL,
                         "%s: rank %d: algorithm %s (forced by FOLD_ALGO or fold_comm_set_algo) cannot keep the rank "
                         "order a non-commutative op needs",
                         opname, c->rank, a->name);
    *out = a;
    return FOLD_OK;
  }
  *out = rule_pick(c, kind, bytes, commutative);
  if (*out == NULL) return fold__error(c, FOLD_EINTERNAL, "%s: rank %d: no algorithm fits", opname, c->rank);
  return FOLD_OK;
}

int fold__algo_spec_apply(fold_comm *c, const char *spec, const char *source) {
  signed char next[16];
  memcpy(next, c->coll_algo, sizeof next);
  const char *p = spec;
  while (p && *p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *eq = memchr(p, '=', len);
    if (eq == NULL)
      return fold__error(c, FOLD_EINVAL, "%s: \"%.*s\" is not collective=algorithm", source, (int)len, p);
    size_t klen = (size_t)(eq - p), vlen = len - klen - 1;
    int kind = -1;
    for (int k = 0; k < FOLD__COLL_COUNT; k++)
      if (strlen(fold__coll_name((fold__coll_kind)k)) == klen && strncmp(fold__coll_name((fold__coll_kind)k), p, klen) == 0)
        kind = k;
    if (kind < 0) return fold__error(c, FOLD_EINVAL, "%s: unknown collective \"%.*s\"", source, (int)klen, p);
    if (vlen == 4 && strncmp(eq + 1, "auto", 4) == 0) {
      next[kind] = -1;
    } else {
      int idx = fold__algo_index((fold__coll_kind)kind, eq + 1, vlen);
      if (idx < 0)
        return fold__error(c, FOLD_EINVAL, "%s: %s has no algorithm \"%.*s\"", source,
                           fold__coll_name((fold__coll_kind)kind), (int)vlen, eq + 1);
      next[kind] = (signed char)idx;
    }
    p = end ? end + 1 : NULL;
  }
  memcpy(c->coll_algo, next, sizeof next);
  return FOLD_OK;
}

int fold_comm_set_algo(fold_comm *comm, const char *spec) {
  if (comm == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_comm_set_algo: communicator is NULL");
  if (spec == NULL) return fold__error(comm, FOLD_EINVAL, "fold_comm_set_algo: spec is NULL");
  return fold__algo_spec_apply(comm, spec, "fold_comm_set_algo");
}

/* Called when a communicator is made: FOLD_ALGO applies to every
 * communicator; a bad value is reported and ignored. */
void fold__select_init(fold_comm *c) {
  const char *v = getenv("FOLD_ALGO");
  if (v && *v && fold__algo_spec_apply(c, v, "FOLD_ALGO") != FOLD_OK)
    FOLD__WARN(c, "%s (FOLD_ALGO ignored)", c->last_error);
}
