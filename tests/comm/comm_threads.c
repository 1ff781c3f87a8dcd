/* comm_threads.c — sub-communicators over inproc (ranks as threads): the suite for n up to 17, mismatches, destroy orders. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "comm/comm_suite.h"
#include "core/internal.h"
#include "fold.h"
#include "select/select.h"
#include "coll/coll.h"

#define MAXT 17

typedef struct { fold_comm *c; int cases; } arg_t;

static void run_threads(int n, void *(*fn)(void *), arg_t *a) {
  pthread_t th[MAXT];
  for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, fn, &a[i]);
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
}

static void *suite(void *p) {
  arg_t *a = p;
  comm_suite_all(a->c, a->cases);
  return NULL;
}

/* Rank 0 splits while the others call a collective: FOLD_EMISMATCH on all. */
static void *split_vs_coll(void *p) {
  arg_t *a = p;
  fold_comm *w = a->c, *k = NULL;
  int me = fold_comm_rank(w);
  unsigned char buf[24 * MAXT] = {0};
  if (me == 0) {
    CHECK_RC(fold_comm_split(w, 0, 0, &k), FOLD_EMISMATCH, w);
    CHECK(k == NULL, "mismatched split made a communicator");
  } else if (a->cases == 0) {
    /* the same shape as the split's own exchange: 24 bytes each */
    CHECK_RC(fold_allgather(buf, buf, 24, FOLD_UINT8, w), FOLD_EMISMATCH, w);
  } else {
    CHECK_RC(fold_barrier(w), FOLD_EMISMATCH, w);
  }
  const char *e = fold_comm_last_error(w);
  CHECK(strstr(e, "comm_split") != NULL, "mismatch message does not name the split: %s", e);
  return NULL;
}

/* The world destroyed before its children: they stay usable. */
static void *world_first(void *p) {
  arg_t *a = p;
  fold_comm *w = a->c, *k = NULL, *kk = NULL;
  int n = fold_comm_size(w), me = fold_comm_rank(w);
  CHECK_OK(fold_comm_set_algo(w, "allreduce=ring,broadcast=binomial"), w);
  CHECK_OK(fold_comm_split(w, me % 2, me, &k), w);
  CHECK_OK(fold_comm_dup(k, &kk), k);
  /* a child inherits the forced algorithms */
  const fold__selection *sw = fold__selection_of(w), *sk = fold__selection_of(k), *skk = fold__selection_of(kk);
  CHECK(sw && sk && skk, "a communicator without selection state");
  CHECK(memcmp(sk->coll_algo, sw->coll_algo, sizeof sw->coll_algo) == 0, "forced algorithms not inherited");
  CHECK(skk->coll_algo[0] == sw->coll_algo[0], "forced algorithms not inherited by a grandchild");
  /* and the FOLD_RULES rules (a copy: the file is not read again) */
  CHECK(sw->rules && sk->rules && skk->rules && sk->rules != sw->rules && sk->rules->count == sw->rules->count &&
            memcmp(sk->rules->rule, sw->rules->rule, (size_t)sw->rules->count * sizeof sw->rules->rule[0]) == 0,
        "FOLD_RULES not inherited");
  CHECK_OK(fold_comm_destroy(w), NULL);
  int64_t one = 1, sum = 0;
  CHECK_OK(fold_allreduce(&one, &sum, 1, FOLD_INT64, FOLD_SUM, k), k);
  CHECK(sum == (n + 1 - me % 2) / 2, "after the world went: %lld", (long long)sum);
  CHECK_OK(fold_comm_destroy(k), NULL);
  sum = 0;
  CHECK_OK(fold_allreduce(&one, &sum, 1, FOLD_INT64, FOLD_SUM, kk), kk);
  CHECK(sum == (n + 1 - me % 2) / 2, "grandchild after its parents went: %lld", (long long)sum);
  CHECK_OK(fold_comm_destroy(kk), NULL);
  return NULL;
}

/* Every collective with every algorithm (but shm) on children of a
 * 7-rank world split 4 + 3 with the ranks reversed: sizes that are not
 * powers of two and ranks that differ from the world's. */
static int run_coll(fold_comm *k, int kind) {
  int s = fold_comm_size(k), r = fold_comm_rank(k), bad = 0;
  enum { C = 5 };
  int32_t in[C * 8], out[C * 8];
  for (int i = 0; i < C * s; i++) {
    in[i] = r * 1000 + i;
    out[i] = -1;
  }
  int rc;
  switch (kind) {
  case FOLD__COLL_BROADCAST:
    for (int i = 0; i < C; i++) out[i] = r == s - 1 ? 7 * i : -1;
    rc = fold_broadcast(out, C, FOLD_INT32, s - 1, k);
    for (int i = 0; i < C; i++) bad += out[i] != 7 * i;
    break;
  case FOLD__COLL_REDUCE:
  case FOLD__COLL_ALLREDUCE:
    rc = kind == FOLD__COLL_REDUCE ? fold_reduce(in, out, C, FOLD_INT32, FOLD_SUM, 1 % s, k)
                                   : fold_allreduce(in, out, C, FOLD_INT32, FOLD_SUM, k);
    if (kind == FOLD__COLL_ALLREDUCE || r == 1 % s)
      for (int i = 0; i < C; i++) bad += out[i] != 1000 * s * (s - 1) / 2 + s * i;
    break;
  case FOLD__COLL_REDUCE_SCATTER:
    rc = fold_reduce_scatter(in, out, C, FOLD_INT32, FOLD_SUM, k);
    for (int i = 0; i < C; i++) bad += out[i] != 1000 * s * (s - 1) / 2 + s * (r * C + i);
    break;
  case FOLD__COLL_ALLGATHER:
  case FOLD__COLL_GATHER:
    rc = kind == FOLD__COLL_GATHER ? fold_gather(in, out, C, FOLD_INT32, 0, k) : fold_allgather(in, out, C, FOLD_INT32, k);
    if (kind == FOLD__COLL_ALLGATHER || r == 0)
      for (int p = 0; p < s; p++)
        for (int i = 0; i < C; i++) bad += out[p * C + i] != p * 1000 + i;
    break;
  case FOLD__COLL_SCATTER:
    rc = fold_scatter(in, out, C, FOLD_INT32, 0, k);
    for (int i = 0; i < C; i++) bad += out[i] != r * C + i;
    break;
  case FOLD__COLL_ALLTOALL:
    rc = fold_alltoall(in, out, C, FOLD_INT32, k);
    for (int p = 0; p < s; p++)
      for (int i = 0; i < C; i++) bad += out[p * C + i] != p * 1000 + r * C + i;
    break;
  default:
    rc = fold_barrier(k);
    break;
  }
  return rc != FOLD_OK ? rc : bad ? -100 : 0;
}

static void *all_algos(void *p) {
  arg_t *a = p;
  fold_comm *w = a->c, *k = NULL;
  int me = fold_comm_rank(w);
  CHECK_OK(fold_comm_split(w, me < 4, -me, &k), w);
  for (int kind = 0; kind < FOLD__COLL_COUNT && k; kind++) {
    const fold__algo *const *algos = fold__algo_tables[kind].algos;
    for (int i = 0; algos[i]; i++) {
      char spec[96];
      snprintf(spec, sizeof spec, "%s=%s", fold__coll_name((fold__coll_kind)kind), algos[i]->name);
      CHECK_OK(fold_comm_set_algo(k, spec), k);
      int rc = run_coll(k, kind);
      if (strcmp(algos[i]->name, "shm") == 0) {
        CHECK(rc == FOLD_EINVAL, "%s on a child (inproc): %d", spec, rc);
      } else {
        CHECK(rc == 0, "%s on a child of %d ranks, rank %d: %d (%s)", spec, fold_comm_size(k), fold_comm_rank(k), rc,
              fold_comm_last_error(k));
      }
    }
    char spec[64];
    snprintf(spec, sizeof spec, "%s=auto", fold__coll_name((fold__coll_kind)kind));
    CHECK_OK(fold_comm_set_algo(k, spec), k);
  }
  fold_comm_destroy(k);
  return NULL;
}

/* A receive on a child that times out names the silent rank in both
 * numberings; the world is not failed by it. */
static void *child_timeout(void *p) {
  arg_t *a = p;
  fold_comm *w = a->c, *k = NULL;
  int me = fold_comm_rank(w);
  CHECK_OK(fold_comm_split(w, 0, -me, &k), w); /* reversed: child rank 2 is world rank 0 */
  if (me == 2) {
    int32_t v;
    k->timeout_ns = 500000000; /* this child only: the world keeps FOLD_TIMEOUT */
    CHECK_RC(fold_recv(&v, 1, FOLD_INT32, 2, 1, k), FOLD_ETIMEDOUT, k);
    const char *e = fold_comm_last_error(k);
    CHECK(strstr(e, "rank 2 here is rank 0 of the world") != NULL, "child timeout message: %s", e);
  }
  CHECK_OK(fold_barrier(w), w);
  fold_comm_destroy(k);
  return NULL;
}

/* Many split+destroy cycles: no growth (ASan reports leaks). */
static void *cycles(void *p) {
  arg_t *a = p;
  fold_comm *w = a->c;
  int me = fold_comm_rank(w);
  for (int i = 0; i < a->cases; i++) {
    fold_comm *k = NULL;
    CHECK_OK(fold_comm_split(w, (me + i) % 2, -me, &k), w);
    int32_t v = me, s = 0;
    CHECK_OK(fold_allreduce(&v, &s, 1, FOLD_INT32, FOLD_SUM, k), k);
    CHECK_OK(fold_comm_destroy(k), NULL);
  }
  return NULL;
}

static void with_world(int n, void *(*fn)(void *), int cases, int destroy) {
  fold_comm *c[MAXT];
  arg_t a[MAXT];
  CHECK_OK(fold_comm_init_threads(n, c), NULL);
  for (int i = 0; i < n; i++) a[i] = (arg_t){c[i], cases};
  run_threads(n, fn, a);
  for (int i = 0; destroy && i < n; i++) fold_comm_destroy(c[i]);
}

int main(int argc, char **argv) {
  setenv("FOLD_TIMEOUT", "20", 0);
  int only = argc > 1 ? atoi(argv[1]) : 0;
  static const int sizes[] = {1, 2, 3, 4, 5, 7, 8, 13, 16, 17};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    if (only && sizes[i] != only) continue;
    with_world(sizes[i], suite, sizes[i] > 8 ? 4 : 8, 1);
    printf("suite on %d threads done\n", sizes[i]);
    fflush(stdout);
  }
  if (only) return check_report("comm_threads");
  with_world(7, all_algos, 0, 1);
  with_world(3, child_timeout, 0, 1);
  with_world(3, split_vs_coll, 0, 1);
  with_world(4, split_vs_coll, 1, 1);
  char rules[] = "/tmp/fold-comm-rules-XXXXXX";
  int fd = mkstemp(rules);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (f) {
    fputs("allreduce * * * ring\nbroadcast * 2-8 * binomial\n", f);
    fclose(f);
  }
  setenv("FOLD_RULES", rules, 1);
  with_world(5, world_first, 0, 0);
  unsetenv("FOLD_RULES");
  unlink(rules);
  with_world(4, cycles, 1000, 1);
  return check_report("comm_threads");
}
