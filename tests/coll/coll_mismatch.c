/* coll_mismatch.c — ranks that disagree (algorithm, root, op, dtype) all get FOLD_EMISMATCH, none FOLD_OK. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fold.h"

/* Usage: coll_mismatch            4 ranks as threads (inproc)
 *        coll_mismatch --procs    under a launcher (foldrun over shm or tcp)
 * Every scenario makes a fresh communicator in which one rank (the odd one)
 * calls differently from the others: another algorithm (every ordered pair
 * of allreduce and of reduce_scatter algorithms, forced with
 * fold_comm_set_algo), or another root, op or dtype in a rooted collective.
 * Every rank then checks that its call failed with FOLD_EMISMATCH (no rank
 * returns FOLD_OK, not even with the data its own call asks for; never a
 * timeout: FOLD_TIMEOUT is 20 s and the failure must come within 10 s),
 * and for algorithm pairs that the message names both algorithms. */

#define N 4
#define CNT 12 /* elements per rank (allreduce) or per block */

enum { K_ALGO, K_ROOT, K_OP, K_DTYPE_SAME, K_DTYPE_WIDER };
enum { C_ALLREDUCE, C_REDUCE_SCATTER, C_REDUCE, C_BROADCAST, C_GATHER, C_SCATTER };
static const char *coll_names[] = {"allreduce", "reduce_scatter", "reduce", "broadcast", "gather", "scatter"};
static const char *kind_names[] = {"algorithm", "root", "op", "dtype (same size)", "dtype (wider)"};

static const char *allreduce_algos[] = {"reduce_bcast", "recursive_doubling", "rabenseifner", "ring",
                                        "ring_segmented", "direct", "shm", "ring_skip", NULL};
static const char *reduce_scatter_algos[] = {"recursive_halving", "ring", "pairwise", "shm", "ring_skip", NULL};

typedef struct {
  int coll, kind, odd;
  const char *algo, *odd_algo; /* K_ALGO */
} scenario;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Rank r's input element i (as a number; stored in the rank's dtype). */
static int64_t val(int r, size_t i) { return 100 * (int64_t)r + (int64_t)i + 1; }
/* Element i of block p of root q's scatter send buffer. */
static int64_t sval(int q, int p, size_t i) { return 1000 * (int64_t)q + 100 * (int64_t)p + (int64_t)i + 1; }

static void put(void *buf, fold_dtype dt, size_t i, int64_t v) {
  if (dt == FOLD_INT32) ((int32_t *)buf)[i] = (int32_t)v;
  else if (dt == FOLD_FLOAT32) ((float *)buf)[i] = (float)v;
  else ((int64_t *)buf)[i] = v;
}
static int64_t get(const void *buf, fold_dtype dt, size_t i) {
  if (dt == FOLD_INT32) return ((const int32_t *)buf)[i];
  if (dt == FOLD_FLOAT32) return (int64_t)((const float *)buf)[i];
  return ((const int64_t *)buf)[i];
}

/* One rank's part of a scenario on communicator c. */
static void run_rank(fold_comm *c, const scenario *s) {
  int me = fold_comm_rank(c), n = fold_comm_size(c), odd = me == s->odd;
  fold_dtype dt = FOLD_INT32;
  fold_op op = FOLD_SUM;
  int root = 1;
  if (odd && s->kind == K_ROOT) root = s->odd == 1 ? 3 : s->odd; /* the odd rank names another root */
  if (odd && s->kind == K_OP) op = FOLD_MAX;
  if (odd && s->kind == K_DTYPE_SAME) dt = FOLD_FLOAT32;
  if (odd && s->kind == K_DTYPE_WIDER) dt = FOLD_INT64;
  char spec[64];
  if (s->kind == K_ALGO) {
    snprintf(spec, sizeof spec, "%s=%s", coll_names[s->coll], odd ? s->odd_algo : s->algo);
    CHECK_OK(fold_comm_set_algo(c, spec), c);
  }
  size_t bytes = (size_t)N * CNT * 8;
  char *in = calloc(1, bytes), *out = calloc(1, bytes), *want = calloc(1, bytes);
  int64_t sentinel = -7;
  for (size_t i = 0; i < (size_t)N * CNT; i++) {
    put(in, dt, i, s->coll == C_SCATTER ? sval(me, (int)(i / CNT), i % CNT) : val(me, i));
    put(out, dt, i, sentinel);
  }
  size_t nwant = 0; /* elements of out to check */
  double t0 = now_s();
  int rc = FOLD_OK;
  switch (s->coll) {
  case C_ALLREDUCE:
    rc = fold_allreduce(in, out, CNT, dt, op, c);
    for (size_t i = 0; i < CNT; i++) {
      int64_t sum = 0;
      for (int r = 0; r < n; r++) sum += val(r, i);
      put(want, dt, i, sum);
    }
    nwant = CNT;
    break;
  case C_REDUCE_SCATTER:
    rc = fold_reduce_scatter(in, out, CNT, dt, op, c);
    for (size_t i = 0; i < CNT; i++) {
      int64_t sum = 0;
      for (int r = 0; r < n; r++) sum += val(r, (size_t)me * CNT + i);
      put(want, dt, i, sum);
    }
    nwant = CNT;
    break;
  case C_REDUCE:
    rc = fold_reduce(in, out, CNT, dt, op, root, c);
    for (size_t i = 0; i < CNT; i++) {
      int64_t acc = op == FOLD_MAX ? val(0, i) : 0;
      for (int r = 0; r < n; r++) acc = op == FOLD_MAX ? (val(r, i) > acc ? val(r, i) : acc) : acc + val(r, i);
      put(want, dt, i, acc);
    }
    nwant = me == root ? CNT : 0;
    break;
  case C_BROADCAST:
    memcpy(out, in, bytes);
    rc = fold_broadcast(out, CNT, dt, root, c);
    for (size_t i = 0; i < CNT; i++) put(want, dt, i, val(root, i));
    nwant = CNT;
    break;
  case C_GATHER:
    rc = fold_gather(in, out, CNT, dt, root, c);
    for (size_t i = 0; i < (size_t)n * CNT; i++) put(want, dt, i, val((int)(i / CNT), i % CNT));
    nwant = me == root ? (size_t)n * CNT : 0;
    break;
  case C_SCATTER:
    rc = fold_scatter(in, out, CNT, dt, root, c);
    for (size_t i = 0; i < CNT; i++) put(want, dt, i, sval(root, me, i));
    nwant = CNT;
    break;
  }
  double secs = now_s() - t0;
  const char *msg = fold_comm_last_error(c);
  char what[160];
  snprintf(what, sizeof what, "%s %s mismatch (odd rank %d%s%s%s%s), rank %d", coll_names[s->coll],
           kind_names[s->kind], s->odd, s->algo ? ": " : "", s->algo ? s->algo : "", s->algo ? " vs " : "",
           s->odd_algo ? s->odd_algo : "", me);
  if (rc == FOLD_OK) {
    /* every rank of a failed call hears of it: none returns FOLD_OK, not
     * even with data its own call asked for */
    size_t bad = 0;
    for (size_t i = 0; i < nwant; i++) bad += get(out, dt, i) != get(want, dt, i);
    CHECK(0, "%s: FOLD_OK (with %zu wrong elements) from a call another rank made differently", what, bad);
  } else {
    CHECK(rc == FOLD_EMISMATCH, "%s: returned %s, not FOLD_EMISMATCH (%s)", what, fold_strerror(rc), msg);
    CHECK(secs < 10.0, "%s: FOLD_EMISMATCH after %.1f s", what, secs);
    CHECK(strstr(msg, "collective #") && strstr(msg, "rank"), "%s: message: %s", what, msg);
    if (s->kind == K_ALGO) {
      char a1[48], a2[48];
      snprintf(a1, sizeof a1, "algo=%s)", s->algo);
      snprintf(a2, sizeof a2, "algo=%s)", s->odd_algo);
      CHECK(strstr(msg, a1) && strstr(msg, a2), "%s: message names not both algorithms: %s", what, msg);
    }
  }
  free(in);
  free(out);
  free(want);
}

/* ---- the scenarios ---- */

/* Threads run every ordered pair of algorithms and every odd rank. A
 * process job pays a communicator's creation per scenario (0.1-0.4 s
 * here), so there: every ordered pair involving shm (the one algorithm
 * that is not messages), every other pair one way round (alternating which
 * side the odd rank takes; threads run both ways through the same message
 * matching), and rank 2 as the odd rank of the rooted calls. */
static int make_scenarios(scenario *sc, int with_shm, int sample) {
  int k = 0;
  for (int coll = C_ALLREDUCE; coll <= C_REDUCE_SCATTER; coll++) {
    const char **t = coll == C_ALLREDUCE ? allreduce_algos : reduce_scatter_algos;
    for (int a = 0; t[a]; a++)
      for (int b = 0; t[b]; b++) {
        int shm = !strcmp(t[a], "shm") || !strcmp(t[b], "shm");
        if (a == b || (shm && !with_shm)) continue;
        if (sample && !shm && (a < b) != ((a + b) % 2 == 0)) continue; /* one way round */
        sc[k] = (scenario){coll, K_ALGO, k % N, t[a], t[b]};
        k++;
      }
  }
  for (int coll = C_REDUCE; coll <= C_SCATTER; coll++)
    for (int kind = K_ROOT; kind <= K_DTYPE_WIDER; kind++) {
      if (kind == K_OP && coll != C_REDUCE) continue;
      for (int odd = 0; odd < N; odd++)
        if (!sample || odd == 2) sc[k++] = (scenario){coll, kind, odd, NULL, NULL};
    }
  return k;
}

typedef struct {
  fold_comm *c;
  const scenario *s;
} thread_arg;

static void *thread_main(void *p) {
  thread_arg *a = p;
  run_rank(a->c, a->s);
  return NULL;
}

int main(int argc, char **argv) {
  int procs = argc > 1 && !strcmp(argv[1], "--procs");
  setenv("FOLD_TIMEOUT", "20", 1);
  setenv("FOLD_DEBUG", "NONE", 0);
  static scenario sc[256];
  int with_shm = 0, me = 0;
  if (procs) { /* is shm usable here? ask a first communicator */
    fold_comm *c;
    if (fold_init(&c) != FOLD_OK) {
      fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
      return 2;
    }
    CHECK(fold_comm_size(c) == N, "run me with %d ranks", N);
    with_shm = !strcmp(fold_comm_transport(c), "shm");
    me = fold_comm_rank(c);
    fold_comm_destroy(c);
  }
  int ns = make_scenarios(sc, with_shm, procs);
  double t0 = now_s();
  for (int i = 0; i < ns; i++) {
    if (procs) {
      fold_comm *c;
      if (fold_init(&c) != FOLD_OK) {
        fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
        return 2;
      }
      double t1 = now_s();
      run_rank(c, &sc[i]);
      if (getenv("MM_VERBOSE")) printf("rank %d scenario %d: %.3f s\n", me, i, now_s() - t1);
      fold_comm_destroy(c);
    } else {
      fold_comm *comms[N];
      CHECK_OK(fold_comm_init_threads(N, comms), NULL);
      pthread_t th[N];
      thread_arg a[N];
      for (int r = 0; r < N; r++) {
        a[r] = (thread_arg){comms[r], &sc[i]};
        pthread_create(&th[r], NULL, thread_main, &a[r]);
      }
      for (int r = 0; r < N; r++) pthread_join(th[r], NULL);
      for (int r = 0; r < N; r++) fold_comm_destroy(comms[r]);
    }
  }
  if (me == 0) printf("%d mismatch scenarios%s in %.1f s\n", ns, with_shm ? " (with shm)" : "", now_s() - t0);
  char name[64];
  snprintf(name, sizeof name, "coll_mismatch rank %d", me);
  return check_report(name);
}
