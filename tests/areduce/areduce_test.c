/* areduce_test.c — asynchronous tree reduction: the tree, full and partial mode on threads, processes and the simulator, bad input, a lost rank. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fold.h"

/* ---- the tree against the rule, built another way ------------------
 * Levels as explicit lists: the root's level is {target}; the next level
 * takes the next smallest ids, handing them out round robin over the
 * current level's nodes until each has `degree` (or ids run out). */
static void reference_tree(int n, int target, int degree, int *parent, int *nch) {
  int *rest = malloc((size_t)n * sizeof *rest), *level = malloc((size_t)n * sizeof *level);
  int *next = malloc((size_t)n * sizeof *next);
  int nrest = 0;
  for (int r = 0; r < n; r++) {
    nch[r] = 0;
    parent[r] = -1;
    if (r != target) rest[nrest++] = r;
  }
  int m = 1, pos = 0;
  level[0] = target;
  while (pos < nrest) {
    int k = 0;
    for (int round = 0; round < degree && pos < nrest; round++)
      for (int i = 0; i < m && pos < nrest; i++) {
        parent[rest[pos]] = level[i];
        nch[level[i]]++;
        next[k++] = rest[pos++];
      }
    /* the next level in id order (they were taken in id order already) */
    memcpy(level, next, (size_t)k * sizeof *level);
    m = k;
  }
  free(rest);
  free(level);
  free(next);
}

static void test_tree(void) {
  int par[80], nch[80], ch[80];
  for (int n = 1; n <= 70; n += (n < 20 ? 1 : 7))
    for (int target = 0; target < n; target += (n < 12 ? 1 : 5))
      for (int degree = 1; degree <= n + 1; degree += (degree < 6 ? 1 : 4)) {
        reference_tree(n, target, degree, par, nch);
        for (int r = 0; r < n; r++) {
          int p = -2, k = -1;
          CHECK_RC(fold_areduce_tree(n, target, degree, r, &p, ch, &k), FOLD_OK, NULL);
          CHECK(p == par[r] && k == nch[r], "n %d target %d degree %d rank %d: parent %d (want %d), %d children (want %d)",
                n, target, degree, r, p, par[r], k, nch[r]);
          CHECK(k <= degree, "too many children");
          for (int i = 0; i < k; i++) {
            CHECK(ch[i] >= 0 && ch[i] < n && par[ch[i]] == r, "n %d target %d degree %d: child %d of %d", n, target,
                  degree, ch[i], r);
            CHECK(i == 0 || ch[i] > ch[i - 1], "children not ascending");
          }
          int k2 = -1;
          CHECK_RC(fold_areduce_tree(n, target, degree, r, &p, NULL, &k2), FOLD_OK, NULL);
          CHECK(k2 == k, "children NULL: count %d, want %d", k2, k);
        }
      }
  /* the thesis' example shape: n = 7, target 0, degree 2: 0 -> {1,2}; 1 -> {3,5}; 2 -> {4,6} */
  int p, k;
  fold_areduce_tree(7, 0, 2, 1, &p, ch, &k);
  CHECK(p == 0 && k == 2 && ch[0] == 3 && ch[1] == 5, "n 7 rank 1: parent %d children %d", p, k);
  int p0;
  CHECK_RC(fold_areduce_tree(0, 0, 1, 0, &p0, ch, &k), FOLD_EINVAL, NULL);
  CHECK(strstr(fold_comm_last_error(NULL), "n is 0") != NULL, "message: %s", fold_comm_last_error(NULL));
  CHECK_RC(fold_areduce_tree(4, 4, 1, 0, &p0, ch, &k), FOLD_EINVAL, NULL);
  CHECK_RC(fold_areduce_tree(4, 0, 0, 0, &p0, ch, &k), FOLD_EINVAL, NULL);
  CHECK_RC(fold_areduce_tree(4, 0, 1, -1, &p0, ch, &k), FOLD_EINVAL, NULL);
  CHECK_RC(fold_areduce_tree(4, 0, 1, 0, NULL, ch, &k), FOLD_EINVAL, NULL);
  CHECK_RC(fold_areduce_tree(4, 0, 1, 0, &p0, ch, NULL), FOLD_EINVAL, NULL);
}

/* ---- the workload: deterministic fragment counts and values --------------- */
static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}
static int nfrags(unsigned seed, int rank, int k) { return (int)(mix(seed * 1000003ull + rank * 131ull + k) % 23); }
static int64_t value(int rank, int j, size_t e, int k) { return (int64_t)(rank + 1) * 1000003 + j * 31 + (int64_t)e * 7 + k; }

/* Fragments and sum of rank's subtree (the tree's own function). */
static void subtree(int n, int target, int degree, int r, unsigned seed, int k, uint64_t *nf) {
  int p, nc, ch[64];
  fold_areduce_tree(n, target, degree, r, &p, ch, &nc);
  *nf += (uint64_t)nfrags(seed, r, k);
  for (int i = 0; i < nc; i++) subtree(n, target, degree, ch[i], seed, k, nf);
}

#define NR 3
/* Three reductions live at once (full, partial, full with another tree),
 * fragments interleaved with an allreduce and ring point-to-point. */
static void workload(fold_comm *c, unsigned seed, size_t count, int sleepy) {
  int n, r;
  n = fold_comm_size(c);
  r = fold_comm_rank(c);
  int degree[NR] = {1, 2, 3}, target[NR] = {0, n - 1, n / 2};
  fold_areduce_mode mode[NR] = {FOLD_AREDUCE_FULL, FOLD_AREDUCE_PARTIAL, FOLD_AREDUCE_FULL};
  fold_areduce *ar[NR];
  for (int k = 0; k < NR; k++)
    CHECK_RC(fold_areduce_create(c, count, FOLD_INT64, FOLD_SUM, target[k], degree[k], mode[k], 0.001, &ar[k]), FOLD_OK, c);
  int64_t *frag = malloc(count * sizeof *frag), *out = malloc(count * sizeof *out);
  int nf[NR], maxnf = 0;
  for (int k = 0; k < NR; k++) {
    nf[k] = nfrags(seed, r, k);
    if (nf[k] > maxnf) maxnf = nf[k];
  }
  uint64_t rs = mix(seed + (unsigned)r);
  uint64_t last_seen = 0;
  for (int j = 0; j < maxnf; j++) {
    for (int k = 0; k < NR; k++)
      if (j < nf[k]) {
        for (size_t e = 0; e < count; e++) frag[e] = value(r, j, e, k);
        CHECK_RC(fold_areduce_contribute(ar[k], frag), FOLD_OK, c);
      }
    if (sleepy && (rs = mix(rs)) % 3 == 0) usleep((useconds_t)(rs % 300));
    if (r == target[1]) { /* the partial result only grows */
      uint64_t got = 0;
      int fin = -1;
      CHECK_RC(fold_areduce_result(ar[1], out, &got, &fin), FOLD_OK, c);
      CHECK(got >= last_seen && fin == 0, "partial result went from %llu to %llu fragments (final %d)",
            (unsigned long long)last_seen, (unsigned long long)got, fin);
      last_seen = got;
    }
  }
  /* collectives and point-to-point between the fragments and the dones */
  int64_t one = 1, sum = 0;
  CHECK_RC(fold_allreduce(&one, &sum, 1, FOLD_INT64, FOLD_SUM, c), FOLD_OK, c);
  CHECK(sum == n, "allreduce among live reductions: %lld", (long long)sum);
  int64_t tok = r, got = -1;
  fold_request *rq = NULL;
  CHECK_RC(fold_irecv(&got, 1, FOLD_INT64, (r + n - 1) % n, 7, c, &rq), FOLD_OK, c);
  CHECK_RC(fold_send(&tok, 1, FOLD_INT64, (r + 1) % n, 7, c), FOLD_OK, c);
  CHECK_RC(fold_wait(rq), FOLD_OK, c);
  CHECK(got == (r + n - 1) % n, "ring token %lld", (long long)got);
  for (int k = 0; k < NR; k++) CHECK_RC(fold_areduce_done(ar[k]), FOLD_OK, c);
  for (int k = NR - 1; k >= 0; k--) {
    uint64_t want_nf = 0, got_nf = 0;
    subtree(n, target[k], degree[k], r, seed, k, &want_nf);
    memset(out, 0, count * sizeof *out);
    CHECK_RC(fold_areduce_wait(ar[k], out, &got_nf), FOLD_OK, c);
    if (r == target[k]) {
      int fin = 0;
      uint64_t again = 0;
      CHECK_RC(fold_areduce_result(ar[k], out, &again, &fin), FOLD_OK, c);
      CHECK(fin == 1 && again == got_nf, "result after wait: final %d, %llu fragments", fin, (unsigned long long)again);
      for (size_t e = 0; e < count; e++) {
        int64_t want = 0;
        for (int q = 0; q < n; q++)
          for (int j = 0; j < nfrags(seed, q, k); j++) want += value(q, j, e, k);
        if (want_nf == 0) want = 0; /* no fragment at all: out untouched */
        CHECK(out[e] == want, "n %d reduction %d element %zu: %lld, want %lld", n, k, e, (long long)out[e],
              (long long)want);
        if (out[e] != want) break;
      }
    }
    CHECK(got_nf == want_nf, "n %d rank %d reduction %d: %llu fragments, want %llu", n, r, k,
          (unsigned long long)got_nf, (unsigned long long)want_nf);
  }
  for (int k = 0; k < NR; k++) CHECK_RC(fold_areduce_destroy(ar[k]), FOLD_OK, c);
  free(frag);
  free(out);
}

typedef struct targ {
  fold_comm *c;
  unsigned seed;
  size_t count;
  void (*fn)(struct targ *);
} targ;

static void *thread_main(void *p) {
  targ *a = p;
  a->fn(a);
  return NULL;
}

static void run_threads(int n, void (*fn)(targ *), unsigned seed, size_t count) {
  fold_comm *c[32];
  pthread_t th[32];
  targ a[32];
  CHECK_RC(fold_comm_init_threads(n, c), FOLD_OK, NULL);
  for (int i = 0; i < n; i++) {
    a[i] = (targ){c[i], seed, count, fn};
    CHECK(pthread_create(&th[i], NULL, thread_main, &a[i]) == 0, "pthread_create");
  }
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < n; i++) fold_comm_destroy(c[i]);
}

static void work_fn(targ *a) { workload(a->c, a->seed, a->count, 1); }

/* ---- bad input --------------------------------------------------------------- */
static void bad_fn(targ *a) {
  fold_comm *c = a->c;
  int r;
  r = fold_comm_rank(c);
  fold_areduce *ar = NULL;
  /* mismatched arguments: FOLD_EMISMATCH everywhere, naming the argument */
  CHECK_RC(fold_areduce_create(c, 4, FOLD_INT64, FOLD_SUM, 0, r == 2 ? 3 : 2, FOLD_AREDUCE_FULL, 0, &ar),
           FOLD_EMISMATCH, c);
  CHECK(ar == NULL && strstr(fold_comm_last_error(c), "degree (from 2 to 3)"), "message: %s", fold_comm_last_error(c));
  CHECK_RC(fold_areduce_create(c, r == 1 ? 5 : 4, FOLD_INT64, FOLD_SUM, 0, 2, FOLD_AREDUCE_FULL, 0, &ar), FOLD_EMISMATCH, c);
  CHECK(strstr(fold_comm_last_error(c), "count") != NULL, "message: %s", fold_comm_last_error(c));
  CHECK_RC(fold_areduce_create(c, 4, FOLD_INT64, FOLD_SUM, 0, 2, r == 3 ? FOLD_AREDUCE_PARTIAL : FOLD_AREDUCE_FULL, 1, &ar),
           FOLD_EMISMATCH, c);
  CHECK_RC(fold_areduce_create(c, 4, FOLD_INT64, r == 0 ? FOLD_MAX : FOLD_SUM, 0, 2, FOLD_AREDUCE_FULL, 1, &ar),
           FOLD_EMISMATCH, c);
  CHECK_RC(fold_areduce_create(c, 4, r == 0 ? FOLD_INT32 : FOLD_INT64, FOLD_SUM, 0, 2, FOLD_AREDUCE_FULL, 1, &ar),
           FOLD_EMISMATCH, c);
  CHECK_RC(fold_areduce_create(c, 4, FOLD_INT64, FOLD_SUM, r == 3, 2, FOLD_AREDUCE_FULL, 1, &ar), FOLD_EMISMATCH, c);
  CHECK(strstr(fold_comm_last_error(c), "target (from 0 to 1)") != NULL, "message: %s", fold_comm_last_error(c));
  /* one rank's bad argument: FOLD_EINVAL everywhere; the others name it */
  CHECK_RC(fold_areduce_create(c, 4, FOLD_INT64, FOLD_SUM, 0, r == 1 ? 0 : 2, FOLD_AREDUCE_FULL, 0, &ar), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), r == 1 ? "degree is 0" : "rank 1 passed an invalid argument") != NULL,
        "message: %s", fold_comm_last_error(c));
  CHECK_RC(fold_areduce_create(c, 4, FOLD_INT64, FOLD_SUM, 0, 2, FOLD_AREDUCE_PARTIAL, r == 2 ? 0.0 : 1.0, &ar),
           FOLD_EINVAL, c);
  CHECK_RC(fold_areduce_create(c, 4, FOLD_INT64, FOLD_SUM, 0, 2, FOLD_AREDUCE_PARTIAL, r == 2 ? -1.0 : 1.0, &ar),
           FOLD_EINVAL, c);
  CHECK_RC(fold_areduce_create(c, 4, FOLD_INT64, FOLD_SUM, r == 0 ? 9 : 0, 2, FOLD_AREDUCE_FULL, 0, &ar), FOLD_EINVAL, c);
  CHECK_RC(fold_areduce_create(c, 4, FOLD_INT64, FOLD_SUM, 0, 2, (fold_areduce_mode)(r == 3 ? 7 : 0), 0, &ar),
           FOLD_EINVAL, c);
  CHECK_RC(fold_areduce_create(c, 4, FOLD_FLOAT64, r == 1 ? FOLD_BAND : FOLD_SUM, 0, 2, FOLD_AREDUCE_FULL, 0, &ar),
           FOLD_EINVAL, c);
  CHECK_RC(fold_areduce_create(c, 4, FOLD_INT64, FOLD_SUM, 0, 2, FOLD_AREDUCE_FULL, 0, r == 2 ? NULL : &ar), FOLD_EINVAL, c);
  CHECK_RC(fold_areduce_create(NULL, 4, FOLD_INT64, FOLD_SUM, 0, 2, FOLD_AREDUCE_FULL, 0, &ar), FOLD_EINVAL, NULL);
  /* the communicator still works, and a good reduction after the bad ones */
  CHECK_RC(fold_areduce_create(c, 2, FOLD_INT64, FOLD_SUM, 0, 2, FOLD_AREDUCE_FULL, 0, &ar), FOLD_OK, c);
  int64_t f[2] = {r, 1}, out[2] = {-1, -1};
  uint64_t nf = 0;
  CHECK_RC(fold_areduce_contribute(ar, NULL), FOLD_EINVAL, c);
  CHECK_RC(fold_areduce_contribute(ar, f), FOLD_OK, c);
  CHECK_RC(fold_areduce_wait(ar, out, &nf), FOLD_EINVAL, c); /* before done: would never end */
  CHECK(strstr(fold_comm_last_error(c), "fold_areduce_done first") != NULL, "message: %s", fold_comm_last_error(c));
  if (r != 0) CHECK_RC(fold_areduce_result(ar, out, &nf, NULL), FOLD_EINVAL, c);
  if (r == 0) CHECK_RC(fold_areduce_result(ar, NULL, &nf, NULL), FOLD_EINVAL, c);
  CHECK_RC(fold_areduce_done(ar), FOLD_OK, c);
  CHECK_RC(fold_areduce_done(ar), FOLD_EINVAL, c);
  CHECK_RC(fold_areduce_contribute(ar, f), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "after fold_areduce_done") != NULL, "message: %s", fold_comm_last_error(c));
  CHECK_RC(fold_areduce_wait(ar, out, &nf), FOLD_OK, c);
  if (r == 0) CHECK(out[0] == 6 && out[1] == 4 && nf == 4, "result %lld %lld (%llu)", (long long)out[0], (long long)out[1],
                    (unsigned long long)nf);
  CHECK_RC(fold_areduce_destroy(ar), FOLD_OK, c);
  CHECK_RC(fold_areduce_contribute(NULL, f), FOLD_EINVAL, NULL);
  CHECK_RC(fold_areduce_done(NULL), FOLD_EINVAL, NULL);
  CHECK_RC(fold_areduce_wait(NULL, out, &nf), FOLD_EINVAL, NULL);
  CHECK_RC(fold_areduce_result(NULL, out, &nf, NULL), FOLD_EINVAL, NULL);
  CHECK_RC(fold_areduce_destroy(NULL), FOLD_OK, NULL);
  /* a reduction left live goes with the communicator (ASan: no leak) */
  CHECK_RC(fold_areduce_create(c, 2, FOLD_INT64, FOLD_SUM, 0, 2, FOLD_AREDUCE_PARTIAL, 0.01, &ar), FOLD_OK, c);
  CHECK_RC(fold_areduce_contribute(ar, f), FOLD_OK, c);
  int64_t x = 0, y = 0;
  CHECK_RC(fold_allreduce(&x, &y, 1, FOLD_INT64, FOLD_SUM, c), FOLD_OK, c);
}

/* ---- processes (foldrun): the workload, a larger count (tcp: rendezvous
 * messages past 64 KiB), and a lost rank ------------------------------------ */
static int run_procs(const char *what) {
  fold_comm *c = NULL;
  if (fold_init(&c) != FOLD_OK) {
    fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
    return 2;
  }
  int r = fold_comm_rank(c);
  if (strcmp(what, "procs") == 0) {
    workload(c, 11, 3, 1);
    workload(c, 12, 10000, 0);
  } else if (strcmp(what, "lost") == 0) {
    /* n = 5, degree 2, target 0: 0 -> {1, 2}, 1 -> {3}, 2 -> {4}. Rank 3
     * goes mid-reduction: rank 1 (its parent) and rank 0 (the target)
     * fail naming it; ranks 2 and 4 are not waiting on it. */
    fold_areduce *ar;
    CHECK_RC(fold_areduce_create(c, 1, FOLD_INT64, FOLD_SUM, 0, 2, FOLD_AREDUCE_FULL, 0, &ar), FOLD_OK, c);
    int64_t one = 1;
    int crc = fold_areduce_contribute(ar, &one);
    CHECK(crc == FOLD_OK || (crc == FOLD_EPEER && r <= 1), "rank %d: contribute: %d: %s", r, crc, fold_comm_last_error(c));
    if (r == 3) _exit(0);
    int drc = fold_areduce_done(ar); /* rank 0 or 1 may have seen the loss already */
    CHECK(drc == FOLD_OK || (drc == FOLD_EPEER && r <= 1), "rank %d: done: %d: %s", r, drc, fold_comm_last_error(c));
    int64_t out = 0;
    int rc = fold_areduce_wait(ar, &out, NULL);
    if (r == 0 || r == 1) {
      CHECK(rc == FOLD_EPEER && strstr(fold_comm_last_error(c), "peer rank 3") != NULL, "rank %d: %d: %s", r, rc,
            fold_comm_last_error(c));
    }
    fold_areduce_destroy(ar);
  }
  fold_comm_destroy(c);
  return check_report(what);
}


/* ---- the simulator: fragments at random virtual times ------------------------- */
typedef struct simrank {
  fold_sim *sim;
  fold_areduce *ar;
  int rank, j, nf;
  uint64_t rs;
  double t;
} simrank;

static void sim_frag(void *p) {
  simrank *s = p;
  if (s->j < s->nf) {
    int64_t f[2] = {value(s->rank, s->j, 0, 0), 1};
    CHECK_RC(fold_areduce_contribute(s->ar, f), FOLD_OK, NULL);
    s->j++;
  }
  if (s->j == s->nf) {
    CHECK_RC(fold_areduce_done(s->ar), FOLD_OK, NULL);
    return;
  }
  s->rs = mix(s->rs);
  s->t += 20e-6 + (double)(s->rs % 60) * 1e-6; /* T_G in [20, 80] us */
  fold_sim_at(s->sim, s->t, sim_frag, s);
}

typedef struct mid {
  fold_areduce *ar;
  uint64_t seen;
  int fin;
} mid;
static void sim_mid(void *p) {
  mid *m = p;
  int64_t out[2];
  CHECK_RC(fold_areduce_result(m->ar, out, &m->seen, &m->fin), FOLD_OK, NULL);
}

static void sim_case(int n, int degree, fold_areduce_mode mode) {
  fold_sim *sim;
  fold_comm **c = calloc((size_t)n, sizeof *c);
  simrank *s = calloc((size_t)n, sizeof *s);
  fold_sim_params prm;
  fold_sim_params_default(&prm);
  prm.latency = 10e-6;
  CHECK_RC(fold_sim_create(n, &prm, &sim, c), FOLD_OK, NULL);
  int target = n / 3;
  uint64_t total = 0;
  int64_t want = 0;
  for (int r = 0; r < n; r++) {
    CHECK_RC(fold_areduce_create(c[r], 2, FOLD_INT64, FOLD_SUM, target, degree, mode, 30e-6, &s[r].ar), FOLD_OK, c[r]);
    s[r] = (simrank){sim, s[r].ar, r, 0, nfrags(7, r, n) * 3, mix((uint64_t)r + 99), 0};
    total += (uint64_t)s[r].nf;
    for (int j = 0; j < s[r].nf; j++) want += value(r, j, 0, 0);
    fold_sim_at(sim, 0, sim_frag, &s[r]);
  }
  mid m = {s[target].ar, 0, -1};
  fold_sim_at(sim, 600e-6, sim_mid, &m);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  int64_t out[2] = {0, 0};
  uint64_t nf = 0;
  int fin = 0;
  CHECK_RC(fold_areduce_result(s[target].ar, out, &nf, &fin), FOLD_OK, c[target]);
  CHECK(fin == 1 && nf == total && out[0] == want && out[1] == (int64_t)total,
        "sim n %d degree %d mode %d: final %d, %llu of %llu fragments, %lld (want %lld)", n, degree, (int)mode, fin,
        (unsigned long long)nf, (unsigned long long)total, (long long)out[0], (long long)want);
  if (mode == FOLD_AREDUCE_PARTIAL && n >= 31) /* the target sees fragments come in well before the end */
    CHECK(m.fin == 0 && m.seen > 0 && m.seen < total, "partial result at 600 us: %llu of %llu fragments", (unsigned long long)m.seen,
          (unsigned long long)total);
  for (int r = 0; r < n; r++) {
    uint64_t h = 0;
    CHECK_RC(fold_areduce_wait(s[r].ar, NULL, &h), FOLD_OK, c[r]);
    CHECK_RC(fold_areduce_destroy(s[r].ar), FOLD_OK, c[r]);
  }
  fold_sim_destroy(sim);
  free(c);
  free(s);
}

/* A rank that computes without calling fold delays only its own subtree
 * (docs/areduce.md): in the simulator, every rank contributes one fragment
 * and says done at t = 0; then one rank computes for 1 ms (fold_sim_compute:
 * it neither sends nor reduces meanwhile). A leaf's data left with its done,
 * so the final result comes exactly when it does with nobody slow; an inner
 * node holds its children's data for the whole millisecond. Virtual time:
 * exact, free of this machine's noise. */
typedef struct watch {
  fold_sim *sim;
  fold_areduce *ar;
  double t_final;
} watch;
static void sim_watch(void *p) {
  watch *w = p;
  int64_t out[1];
  uint64_t nf = 0;
  int fin = 0;
  CHECK_RC(fold_areduce_result(w->ar, out, &nf, &fin), FOLD_OK, NULL);
  if (fin) {
    w->t_final = fold_sim_time(w->sim);
    return;
  }
  double t = fold_sim_time(w->sim) + 1e-6; /* look every virtual microsecond, for 5 ms */
  if (t < 5e-3) fold_sim_at(w->sim, t, sim_watch, w);
}
typedef struct slowrank {
  fold_comm *c;
  fold_areduce *ar;
  int rank, slow;
} slowrank;
static void sim_slow_start(void *p) {
  slowrank *s = p;
  int64_t f[1] = {s->rank + 1};
  CHECK_RC(fold_areduce_contribute(s->ar, f), FOLD_OK, s->c);
  CHECK_RC(fold_areduce_done(s->ar), FOLD_OK, s->c);
  if (s->rank == s->slow) CHECK_RC(fold_sim_compute(s->c, 1e-3), FOLD_OK, s->c);
}
/* The virtual time at which the target's result is final with rank `slow`
 * computing for 1 ms after its done (-1: nobody slow). */
static double sim_slow_final(int n, int degree, int target, int slow) {
  fold_sim *sim;
  fold_comm **c = calloc((size_t)n, sizeof *c);
  slowrank *s = calloc((size_t)n, sizeof *s);
  fold_sim_params prm;
  fold_sim_params_default(&prm);
  prm.latency = 10e-6;
  CHECK_RC(fold_sim_create(n, &prm, &sim, c), FOLD_OK, NULL);
  for (int r = 0; r < n; r++) {
    s[r] = (slowrank){c[r], NULL, r, slow};
    CHECK_RC(fold_areduce_create(c[r], 1, FOLD_INT64, FOLD_SUM, target, degree, FOLD_AREDUCE_FULL, 0, &s[r].ar), FOLD_OK, c[r]);
    fold_sim_at(sim, 0, sim_slow_start, &s[r]);
  }
  watch w = {sim, s[target].ar, -1};
  fold_sim_at(sim, 0, sim_watch, &w);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  int64_t out[1] = {0};
  uint64_t nf = 0;
  CHECK_RC(fold_areduce_wait(s[target].ar, out, &nf), FOLD_OK, c[target]);
  CHECK(out[0] == (int64_t)n * (n + 1) / 2 && nf == (uint64_t)n, "slow rank %d: sum %lld of %llu fragments", slow,
        (long long)out[0], (unsigned long long)nf);
  for (int r = 0; r < n; r++) {
    if (r != target) CHECK_RC(fold_areduce_wait(s[r].ar, NULL, NULL), FOLD_OK, c[r]);
    CHECK_RC(fold_areduce_destroy(s[r].ar), FOLD_OK, c[r]);
  }
  fold_sim_destroy(sim);
  free(c);
  free(s);
  return w.t_final;
}
static void sim_slow_subtree(void) {
  const int n = 15, degree = 2, target = 0;
  int leaf = -1, inner = -1;
  for (int r = 0; r < n; r++) {
    int parent, children[16], nch;
    CHECK_RC(fold_areduce_tree(n, target, degree, r, &parent, children, &nch), FOLD_OK, NULL);
    if (nch == 0 && leaf < 0) leaf = r;
    if (nch > 0 && parent >= 0 && parent != target && inner < 0) inner = r;
  }
  double base = sim_slow_final(n, degree, target, -1), t_leaf = sim_slow_final(n, degree, target, leaf),
         t_inner = sim_slow_final(n, degree, target, inner), t_target = sim_slow_final(n, degree, target, target);
  printf("final result at: nobody slow %.1f us, leaf %d slow %.1f us, inner node %d slow %.1f us, target slow %.1f us\n",
         base * 1e6, leaf, t_leaf * 1e6, inner, t_inner * 1e6, t_target * 1e6);
  CHECK(base > 0 && base < 1e-4, "nobody slow: final at %g s", base);
  CHECK(t_leaf == base, "a slow leaf delayed the result: %g s against %g s", t_leaf, base);
  CHECK(t_inner >= 1e-3 && t_inner < 1e-3 + base + 1e-4, "a slow inner node: final at %g s", t_inner);
  /* the target sends nothing: its result is complete when the last data
   * arrives (the simulator delays a busy rank's sends and charged work, not
   * its arrivals); its computing only delays when it looks at the result */
  CHECK(t_target == base, "a slow target: final at %g s against %g s", t_target, base);
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "tree";
  if (strcmp(what, "tree") == 0) {
    test_tree();
  } else if (strcmp(what, "threads") == 0) {
    for (int n = 1; n <= 17; n++) run_threads(n, work_fn, (unsigned)n, 3);
    run_threads(4, work_fn, 5, 20000); /* inproc with large fragments */
  } else if (strcmp(what, "bad") == 0) {
    run_threads(4, bad_fn, 0, 0);
  } else if (strcmp(what, "sim") == 0) {
    int ns[] = {1, 2, 31, 200};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
      for (int d = 1; d <= 8; d *= 2) {
        sim_case(ns[i], d, FOLD_AREDUCE_FULL);
        sim_case(ns[i], d, FOLD_AREDUCE_PARTIAL);
      }
    sim_slow_subtree();
  } else {
    return run_procs(what);
  }
  return check_report(what);
}
