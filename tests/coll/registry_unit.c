/* registry_unit.c — the algorithm registry: the lists, the tables and the lookups agree, and today's indexes and names stay. */
#include <string.h>

#include "check.h"
#include "coll/registry.h"
#include "op/op.h"


/* Every list entry: its descriptor is named as the list says and sits at
 * the index the list gives it, in its collective's table. */
static int entries;
#define CHECK_ENTRY(coll, algo)                                                                                    \
  do {                                                                                                             \
    const fold__algo_table *t_ = &fold__algo_tables[kind];                                                         \
    CHECK(strcmp(fold__##coll##_##algo.name, #algo) == 0, "fold__" #coll "_" #algo " is named \"%s\", want \"%s\"", \
          fold__##coll##_##algo.name, #algo);                                                                      \
    CHECK(FOLD__ALGO_##coll##_##algo < t_->count && t_->algos[FOLD__ALGO_##coll##_##algo] == &fold__##coll##_##algo, \
          #coll "/" #algo ": not at index %d of the %s table", (int)FOLD__ALGO_##coll##_##algo, t_->coll_name);     \
    entries++;                                                                                                     \
  } while (0);
#define CHECK_COLL(KIND, name)                                                                                     \
  {                                                                                                                \
    fold__coll_kind kind = FOLD__COLL_##KIND;                                                                      \
    CHECK(strcmp(fold__algo_tables[kind].coll_name, #name) == 0, "table %d is \"%s\", want \"%s\"", (int)kind,      \
          fold__algo_tables[kind].coll_name, #name);                                                               \
    CHECK(fold__algo_tables[kind].count == FOLD__ALGO_COUNT_##name, #name ": table counts %d, list %d",           \
          fold__algo_tables[kind].count, (int)FOLD__ALGO_COUNT_##name);                                            \
    CHECK(fold__algo_tables[kind].algos[FOLD__ALGO_COUNT_##name] == NULL, #name ": table not NULL-terminated");    \
    FOLD__ALGOS_##name(CHECK_ENTRY)                                                                                \
  }

static void lists_match_tables(void) {
  FOLD__COLLS(CHECK_COLL)
  int total = 0;
  for (int k = 0; k < FOLD__COLL_COUNT; k++) {
    CHECK(fold__algo_tables[k].algos != NULL, "collective %d has no table", k);
    for (int i = 0; fold__algo_tables[k].algos[i]; i++) total++;
  }
  CHECK(entries == total && total > 0, "the lists have %d entries, the tables %d", entries, total);
}

/* The indexes and names as they were when the registry was made: they are
 * wire format (fold__sig) and file format (FOLD_ALGO, rules files), so a
 * list may grow at its end but never reorder or rename. */
static void frozen_order(void) {
  static const char *const colls = "broadcast reduce allreduce reduce_scatter allgather gather scatter alltoall barrier";
  static const char *const algos[] = {
    "binomial scatter_allgather pipeline shm",
    "binomial rabenseifner shm",
    "reduce_bcast recursive_doubling rabenseifner ring ring_segmented direct shm",
    "recursive_halving ring pairwise shm",
    "recursive_doubling bruck ring shm",
    "binomial linear shm",
    "binomial linear shm",
    "pairwise bruck shm",
    "dissemination shm",
  };
  char buf[512];
  fold__coll_names(buf, sizeof buf);
  CHECK(strncmp(buf, colls, strlen(colls)) == 0 && (buf[strlen(colls)] == '\0' || buf[strlen(colls)] == ' '),
        "collectives reordered or renamed: \"%s\", want \"%s\" first", buf, colls);
  for (int k = 0; k < (int)(sizeof algos / sizeof *algos) && k < FOLD__COLL_COUNT; k++) {
    size_t n = strlen(algos[k]);
    fold__algo_names((fold__coll_kind)k, buf, sizeof buf);
    CHECK(strncmp(buf, algos[k], n) == 0 && (buf[n] == '\0' || buf[n] == ' '),
          "%s: algorithms reordered or renamed: \"%s\", want \"%s\" first", fold__coll_name((fold__coll_kind)k), buf,
          algos[k]);
  }
  CHECK(FOLD__COLL_COUNT >= 9, "collectives dropped: %d", (int)FOLD__COLL_COUNT);
}

static void lookups(void) {
  for (int k = 0; k < FOLD__COLL_COUNT; k++) {
    const char *name = fold__coll_name((fold__coll_kind)k);
    CHECK(fold__coll_index(name, strlen(name)) == k, "fold__coll_index(\"%s\") is not %d", name, k);
    const fold__algo_table *t = &fold__algo_tables[k];
    for (int i = 0; i < t->count; i++) {
      const char *an = t->algos[i]->name;
      CHECK(fold__algo_index((fold__coll_kind)k, an, strlen(an)) == i, "%s: fold__algo_index(\"%s\") is not %d", name,
            an, i);
      CHECK(fold__coll_algo_index((fold__coll_kind)k, t->algos[i]) == i, "%s: fold__coll_algo_index(%s) is not %d",
            name, an, i);
    }
  }
  /* out of range and unknown: answers, never a crash */
  CHECK(strcmp(fold__coll_name(FOLD__COLL_COUNT), "?") == 0, "an out-of-range collective is not \"?\"");
  CHECK(strcmp(fold__coll_name((fold__coll_kind)-1), "?") == 0, "a negative collective is not \"?\"");
  CHECK(fold__coll_index("allreducex", 10) == -1, "\"allreducex\" found");
  CHECK(fold__coll_index("allreduce", 3) == -1, "the prefix \"all\" found");
  CHECK(fold__coll_index("", 0) == -1, "the empty name found");
  CHECK(fold__coll_index("allreducex", 9) == FOLD__COLL_ALLREDUCE, "a length-bounded name not found");
  CHECK(fold__algo_index(FOLD__COLL_ALLREDUCE, "rin", 3) == -1, "the prefix \"rin\" found");
  CHECK(fold__algo_index(FOLD__COLL_ALLREDUCE, "ring_segmented", 4) == FOLD__ALGO_allreduce_ring,
        "\"ring\" (bounded) is not the ring");
  CHECK(fold__algo_index(FOLD__COLL_BARRIER, "ring", 4) == -1, "barrier has a ring");
  CHECK(fold__coll_algo_index(FOLD__COLL_BARRIER, &fold__allreduce_ring) == -1, "barrier's table holds allreduce/ring");
  CHECK(fold__coll_algo_index(FOLD__COLL_ALLREDUCE, &fold__reduce_shm) == -1, "allreduce's table holds reduce/shm");

  /* name lists truncate inside their buffer */
  char small[8];
  memset(small, 'x', sizeof small);
  fold__algo_names(FOLD__COLL_ALLREDUCE, small, 6);
  CHECK(strlen(small) == 5 && small[6] == 'x' && small[7] == 'x', "fold__algo_names wrote past 6 bytes: \"%.8s\"",
        small);
  memset(small, 'x', sizeof small);
  fold__coll_names(small, 4);
  CHECK(strlen(small) == 3 && small[4] == 'x', "fold__coll_names wrote past 4 bytes");
}

/* The enum-indexed name tables of the other layers (their sizes are tied
 * to the counts by static asserts; here: no row left empty in between). */
static void other_name_tables(void) {
  for (int d = 0; d < FOLD_DTYPE_COUNT; d++) {
    const char *n = fold_dtype_name((fold_dtype)d);
    CHECK(n && *n && strcmp(n, "invalid") != 0 && fold_dtype_size((fold_dtype)d) > 0, "dtype %d has no row", d);
  }
  for (int o = 0; o < FOLD_OP_BUILTIN_COUNT; o++) {
    char tmp[16];
    const char *n = fold__op_name((unsigned)o, tmp, sizeof tmp);
    CHECK(n && *n && strncmp(n, "user#", 5) != 0, "op %d has no name", o);
    for (int p = 0; p < o; p++) {
      char tmp2[16];
      CHECK(strcmp(n, fold__op_name((unsigned)p, tmp2, sizeof tmp2)) != 0, "ops %d and %d share the name %s", p, o, n);
    }
  }
}

int main(void) {
  lists_match_tables();
  frozen_order();
  lookups();
  other_name_tables();
  return check_report("registry_unit");
}
