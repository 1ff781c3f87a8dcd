/* areduce_real.c — fold_areduce on real transports with fragments made by an engine timer: T_res against degree and hop, the poll interval, a slow leaf against a slow inner node (measurements, and the slow-subtree test). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "engine/engine.h" /* fold__timer: the engine's timer service makes the fragments */
#include "fold.h"

/* Every rank makes NF fragments PERIOD_NS apart (the thesis' workload,
 * T_G = 10 us), then calls fold_areduce_done. */
#define NF 100
#define PERIOD_NS 10000

/* Wall time, seconds: every rank runs on this host, so one clock serves
 * all (the last fragment of any rank against the target's final result). */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* This process's CPU time, seconds. */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Computing without calling fold: a busy loop (it holds a core, as work does). */
static void spin_s(double s) {
  double end = now_s() + s;
  while (now_s() < end) {
  }
}

/* A long computation without fold calls that leaves the core to the other
 * ranks (this machine has fewer cores than ranks): a sleep. */
static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts v. */
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- the fragment generator: an engine timer --------------------------------
 * The engine fires gen_fire from a progress pass (fold_progress or any
 * other fold call on the communicator): it contributes one fragment and
 * arms the next deadline on the engine's clock (absolute: a late pass
 * does not shift the later fragments), and calls done after the last.
 * A fragment thus appears when the rank next lets the engine run, as a
 * fragment computed between two fold calls would. */
typedef struct gen {
  fold_areduce *ar;
  fold__timer t;
  int64_t t0;
  int j, nf, finished, rc;
  double last; /* wall time of the last fragment */
} gen;

static void gen_fire(fold_comm *c, fold__timer *t, void *arg) {
  gen *g = arg;
  int64_t one = 1;
  int rc = fold_areduce_contribute(g->ar, &one);
  g->last = now_s();
  if (rc == FOLD_OK && ++g->j < g->nf)
    rc = fold__timer_arm(c, t, g->t0 + (int64_t)g->j * PERIOD_NS);
  else if (rc == FOLD_OK) {
    rc = fold_areduce_done(g->ar);
    g->finished = 1;
  }
  if (rc != FOLD_OK) {
    g->rc = rc;
    g->finished = 1;
  }
}

/* One scenario: the tree's degree; every rank lets fold run only every
 * gap_us (0: all the time), before and after its done, until the target
 * has the final result (then the target tells everyone: the ranks keep
 * computing and polling, as in the thesis, instead of sleeping in a
 * blocking wait). Rank `late` (-1: none) makes its fragments 1 ms after
 * the others, so that its last one is surely the last of all and the
 * others' parts wait in the tree: the time to the final result is then
 * its path's hops. Rank `slow` (-1: none) makes one fragment only, calls
 * done and sleeps slow_s without calling fold: it went on to other work,
 * and only then do the others make theirs (they wait for its word, so
 * that its children's parts surely arrive while it computes). */
typedef struct scen {
  int degree;
  double gap_us;
  int slow;
  double slow_s;
  int late;
} scen;

/* One repetition. Rank 0 gets *lat, the time from the last fragment of
 * any rank to the final result at the target (rank 0), *wake, from the
 * slow rank's waking to the final result (negative: the result was final
 * while it still computed), and *tres, from
 * the start of the rank that started last to the final result (the
 * thesis' T_res; from the last start, since the ranks of this
 * oversubscribed machine leave create up to milliseconds apart), both in
 * seconds. */
static void one_rep(fold_comm *c, const scen *s, double *lat, double *tres, double *wake) {
  int n = fold_comm_size(c), r = fold_comm_rank(c);
  fold_areduce *ar = NULL;
  *lat = *tres = *wake = NAN;
  CHECK_OK(fold_barrier(c), c);
  CHECK_OK(fold_areduce_create(c, 1, FOLD_INT64, FOLD_SUM, 0, s->degree, FOLD_AREDUCE_FULL, 0, &ar), c);
  if (ar == NULL)
    return;
  int slow = s->slow >= 0 && s->slow < n ? s->slow : -1;
  int64_t tok = 0;
  if (slow >= 0 && r != slow) /* start when the slow rank has stopped calling fold (below) */
    CHECK_OK(fold_recv(&tok, 1, FOLD_INT64, slow, 9, c), c);
  gen g = {.ar = ar, .nf = r == slow ? 1 : NF};
  fold__timer_init(&g.t, gen_fire, &g);
  g.t0 = fold__now(c) + (r == s->late ? 1000000 : 0);
  double first = now_s() + (r == s->late ? 1e-3 : 0);
  CHECK_OK(fold__timer_arm(c, &g.t, g.t0), c);
  double gap = s->gap_us * 1e-6;
  while (!g.finished) { /* the rank computes; the engine's timer makes its fragments */
    if (gap > 0)
      spin_s(gap);
    CHECK_OK(fold_progress(c), c);
  }
  CHECK(g.rc == FOLD_OK, "rank %d: the generator failed: %d: %s", r, g.rc, fold_comm_last_error(c));
  if (r == slow) {
    /* the others start their fragments now: whatever reaches this rank
     * from its children arrives while it computes (a tiny eager send
     * leaves at once, without the receiver) */
    for (int p = 0; p < n; p++)
      if (p != r) CHECK_OK(fold_send(&tok, 1, FOLD_INT64, p, 9, c), c);
    sleep_s(s->slow_s);
  }
  double woke = r == slow ? now_s() : 0, wmax = 0;
  double fin_t = 0;
  int64_t out = 0;
  uint64_t nf = 0;
  if (r == 0) { /* the target polls its result, then stops the others */
    int fin = 0;
    /* No sched_yield here even with more ranks than cores: fold's idle
     * polls give the core away themselves (engine/progress.c). */
    while (!fin && fold_areduce_result(ar, &out, &nf, &fin) == FOLD_OK)
      if (gap > 0) spin_s(gap);
    fin_t = now_s();
    for (int p = 1; p < n; p++) CHECK_OK(fold_send(&tok, 1, FOLD_INT64, p, 10, c), c);
  } else { /* the others compute on, calling fold every gap, until then */
    int found = 0;
    while (!found && fold_iprobe(0, 10, c, &found, NULL) == FOLD_OK)
      if (!found && gap > 0) spin_s(gap);
    CHECK_OK(fold_recv(&tok, 1, FOLD_INT64, 0, 10, c), c);
  }
  CHECK_OK(fold_areduce_wait(ar, r == 0 ? &out : NULL, r == 0 ? &nf : NULL), c);
  int want = slow >= 0 ? (n - 1) * NF + 1 : n * NF;
  if (r == 0)
    CHECK(out == want && nf == (uint64_t)want, "degree %d: %lld (%llu fragments), want %d", s->degree, (long long)out,
          (unsigned long long)nf, want);
  double lmax = 0, fmax = 0;
  CHECK_OK(fold_allreduce(&g.last, &lmax, 1, FOLD_FLOAT64, FOLD_MAX, c), c);
  CHECK_OK(fold_allreduce(&first, &fmax, 1, FOLD_FLOAT64, FOLD_MAX, c), c);
  CHECK_OK(fold_allreduce(&woke, &wmax, 1, FOLD_FLOAT64, FOLD_MAX, c), c);
  fold_areduce_destroy(ar);
  *lat = fin_t - lmax;
  *tres = fin_t - fmax;
  if (slow >= 0) *wake = fin_t - wmax;
}

/* reps repetitions: rank 0 gets the median of the latency (last fragment
 * -> final) and its minimum and 90th percentile, the median T_res and the
 * median time from the slow rank's waking to the final result, in
 * microseconds. */
typedef struct stats {
  double med, min, p90, tres, wake;
} stats;

static stats measure(fold_comm *c, const scen *s, int reps) {
  double *v = calloc((size_t)reps, sizeof *v), *w = calloc((size_t)reps, sizeof *w),
         *k = calloc((size_t)reps, sizeof *k);
  for (int i = 0; i < reps; i++) {
    one_rep(c, s, &v[i], &w[i], &k[i]);
    v[i] *= 1e6, w[i] *= 1e6, k[i] *= 1e6;
  }
  stats st = {median(v, reps), v[0], v[(reps * 9) / 10 < reps ? (reps * 9) / 10 : reps - 1], median(w, reps),
              median(k, reps)};
  free(v);
  free(w);
  free(k);
  return st;
}

/* One hop: half a ping-pong of one int64 between ranks 1 and 0 (both
 * polling), the median of 400, in microseconds (rank 0). */
static double hop_us(fold_comm *c) {
  int r = fold_comm_rank(c), reps = 400;
  double *v = calloc((size_t)reps, sizeof *v);
  int64_t x = 0;
  CHECK_OK(fold_barrier(c), c);
  for (int i = -20; i < reps; i++) {
    double t = now_s();
    if (r == 0) {
      CHECK_OK(fold_send(&x, 1, FOLD_INT64, 1, 7, c), c);
      CHECK_OK(fold_recv(&x, 1, FOLD_INT64, 1, 7, c), c);
    } else if (r == 1) {
      CHECK_OK(fold_recv(&x, 1, FOLD_INT64, 0, 7, c), c);
      CHECK_OK(fold_send(&x, 1, FOLD_INT64, 0, 7, c), c);
    }
    if (i >= 0) v[i] = (now_s() - t) / 2 * 1e6;
  }
  double m = median(v, reps);
  free(v);
  return m;
}

static int tree_depth(int n, int d) {
  int depth = 0;
  for (int x = 0; x < n; x++) { /* the deepest rank's */
    int dd = 0, y = x, p, k;
    while (fold_areduce_tree(n, 0, d, y, &p, NULL, &k) == FOLD_OK && p >= 0) y = p, dd++;
    if (dd > depth) depth = dd;
  }
  return depth;
}

/* A leaf and an inner node of the tree of degree d (rank 0 the target):
 * the deepest leaf, and its parent if that is not the target. */
static void pick(int n, int d, int *leaf, int *inner) {
  *leaf = *inner = -1;
  int best = -1;
  for (int x = 1; x < n; x++) {
    int px, kx, p, k, dd = 0, y = x;
    fold_areduce_tree(n, 0, d, x, &px, NULL, &kx);
    while (fold_areduce_tree(n, 0, d, y, &p, NULL, &k) == FOLD_OK && p >= 0) y = p, dd++;
    if (kx == 0 && dd > best) best = dd, *leaf = x, *inner = px > 0 ? px : -1;
  }
}

/* ---- foldrun -n N ... areduce_real bench [reps] (docs/areduce.md) ---------- */
static void bench(fold_comm *c, int reps) {
  int n = fold_comm_size(c), r = fold_comm_rank(c);
  double hop = n > 1 ? hop_us(c) : 0;
  if (r == 0)
    printf("bench n %d: one hop (half a ping-pong of 8 B, median of 400): %.2f us; %d repetitions per line, "
           "medians (min, p90) in us\n", n, hop, reps);
  for (int d = 1; d <= (n > 1 ? n - 1 : 1); d++) { /* the thesis' workload: T_res against the degree */
    scen s = {d, 0, -1, 0, -1};
    stats st = measure(c, &s, reps);
    if (r == 0)
      printf("bench n %d degree %d depth %d: T_res (last rank's start -> final) %.1f; last fragment -> final %.1f "
             "(%.1f, %.1f)\n", n, d, tree_depth(n, d), st.tres, st.med, st.min, st.p90);
  }
  for (int d = 1; d <= (n > 1 ? n - 1 : 1); d++) { /* the deepest leaf's fragments come last: its path's hops */
    int leaf, inner;
    pick(n, d, &leaf, &inner);
    int depth = 0, y = leaf, p, k;
    while (leaf > 0 && fold_areduce_tree(n, 0, d, y, &p, NULL, &k) == FOLD_OK && p >= 0) y = p, depth++;
    scen s = {d, 0, -1, 0, leaf};
    stats st = measure(c, &s, reps);
    if (r == 0)
      printf("bench n %d degree %d: leaf %d at depth %d last: last fragment -> final %.1f (%.1f, %.1f); "
             "depth x hop %.1f\n", n, d, leaf, depth, st.med, st.min, st.p90, depth * hop);
  }
  static const double gaps[] = {0, 10, 30, 100, 300, 1000};
  int d2 = n > 2 ? 2 : 1, leaf, inner;
  pick(n, d2, &leaf, &inner);
  for (size_t i = 0; i < sizeof gaps / sizeof *gaps; i++) { /* how often to call fold_progress */
    scen s = {d2, gaps[i], -1, 0, leaf};
    stats st = measure(c, &s, reps);
    if (r == 0)
      printf("bench n %d degree %d every rank calls fold every %g us, leaf %d last: last fragment -> final %.1f "
             "(%.1f, %.1f)\n", n, d2, gaps[i], leaf, st.med, st.min, st.p90);
  }
  const int who[] = {-1, leaf, inner};
  const char *what[] = {"nobody", "a leaf", "an inner node"};
  for (int k = 0; k < 3; k++) { /* one rank makes one fragment, then computes 20 ms without calling fold */
    if (k > 0 && who[k] < 0)
      continue;
    scen s = {d2, 0, who[k], 0.02, -1};
    stats st = measure(c, &s, reps);
    if (r == 0)
      printf("bench n %d degree %d slow rank %d (%s) computes 20 ms after one fragment and done, without fold: "
             "last fragment -> final %.1f (%.1f, %.1f); final - the slow rank's waking %.1f\n", n, d2, who[k], what[k],
             st.med, st.min, st.p90, st.wake);
  }
}

/* The slow rank's repetitions: one shows whether the result waits for the
 * slow rank only if the others' last fragment came before it woke. On a
 * loaded machine the others' 1 ms of fragments can take longer than its
 * T (seen: 580 ms), and the result then comes after its waking whatever
 * the slow rank does. So repeat (at most 20 times) until 5 repetitions had
 * the scenario; rank 0 gets the median latency of all and the median
 * "final - waking" of those 5 (nvalid of them, if fewer). */
typedef struct slowrun {
  double lat, wake;
  int nrep, nvalid;
} slowrun;

static slowrun measure_slow(fold_comm *c, const scen *s) {
  double lat[20], vwake[20], tres, wake;
  slowrun out = {0, NAN, 0, 0};
  int more = 1;
  while (more) {
    one_rep(c, s, &lat[out.nrep], &tres, &wake);
    if (fold_comm_rank(c) == 0) {
      if (wake < lat[out.nrep]) /* the last fragment came before the slow rank woke */
        vwake[out.nvalid++] = wake * 1e6;
      lat[out.nrep] *= 1e6;
      more = out.nvalid < 5 && out.nrep + 1 < 20;
    }
    out.nrep++;
    CHECK_OK(fold_broadcast(&more, 1, FOLD_INT32, 0, c), c);
  }
  out.lat = median(lat, out.nrep);
  if (out.nvalid) out.wake = median(vwake, out.nvalid);
  return out;
}

/* ---- foldrun -n 4 ... areduce_real slow: the test --------------------------
 * n = 4, degree 2: 0 <- {1, 2}, 1 <- {3}. A leaf (3) or an inner node (1)
 * makes one fragment, calls done and computes T = 200 ms without calling
 * fold, while the others make theirs for ~1 ms. The leaf's part left with
 * its done, so the final result does not wait for it: it is final while
 * the leaf still computes, within T/10 of the last fragment. The inner
 * node holds its child's part until it calls fold again: the result is
 * final only after it wakes, and then within T/2. Medians of 5, compared
 * by order (before or after the slow rank wakes) and orders of magnitude,
 * not percentages: this machine's noise (a descheduled rank costs
 * milliseconds, and may stretch the others' 1 ms of fragments) must not
 * decide. */
static void slow_test(fold_comm *c) {
  int n = fold_comm_size(c), r = fold_comm_rank(c);
  const double T = 0.2; /* 50 ms failed once in a CI run that shared the machine with builds */
  int leaf, inner;
  pick(n, 2, &leaf, &inner);
  CHECK(n == 4 && leaf == 3 && inner == 1, "want n = 4 (leaf 3, inner node 1): n %d, leaf %d, inner %d", n, leaf,
        inner);
  if (n != 4)
    return;
  scen sl = {2, 0, leaf, T, -1}, si = {2, 0, inner, T, -1};
  slowrun l = measure_slow(c, &sl), i = measure_slow(c, &si);
  if (r == 0) {
    printf("slow: rank computing %.0f ms: leaf %d: last fragment -> final %.1f us (%d repetitions), final - its "
           "waking %.1f us (%d repetitions had the scenario); inner node %d: last fragment -> final %.1f us (%d), "
           "final - its waking %.1f us (%d) (medians)\n",
           T * 1e3, leaf, l.lat, l.nrep, l.wake, l.nvalid, inner, i.lat, i.nrep, i.wake, i.nvalid);
    CHECK(l.lat < T * 1e6 / 10, "a slow leaf delayed the final result by %.1f us (median), want < %.0f us", l.lat,
          T * 1e6 / 10);
    if (l.nvalid >= 3)
      CHECK(l.wake < 0, "the result was final %.1f us after the slow leaf woke (median), want before", l.wake);
    if (i.nvalid >= 3)
      CHECK(i.wake >= 0 && i.wake < T * 1e6 / 2,
            "the result was final %.1f us after the slow inner node woke (median), want after, within %.0f us", i.wake,
            T * 1e6 / 2);
    if (l.nvalid < 3 || i.nvalid < 3)
      printf("slow: the others made their fragments within the slow rank's %.0f ms in only %d of %d (leaf) and %d "
             "of %d (inner node) repetitions (a loaded machine): whether the result waits for it is not judged "
             "where fewer than 3 did\n", T * 1e3, l.nvalid, l.nrep, i.nvalid, i.nrep);
  }
}

/* ---- areduce_real rate: one rank's combine rate --------------------------- */
static void rate(void) {
  fold_comm *c;
  CHECK_OK(fold_comm_init_threads(1, &c), NULL);
  size_t counts[] = {1, 1024};
  for (int i = 0; i < 2; i++) {
    fold_areduce *ar;
    int64_t *f = calloc(counts[i], sizeof *f);
    CHECK_OK(fold_areduce_create(c, counts[i], FOLD_INT64, FOLD_SUM, 0, 2, FOLD_AREDUCE_FULL, 0, &ar), c);
    int reps = counts[i] == 1 ? 2000000 : 200000;
    double t0 = now_s(), c0 = cpu_s();
    for (int j = 0; j < reps; j++) fold_areduce_contribute(ar, f);
    double t = now_s() - t0, ct = cpu_s() - c0;
    /* the CPU time too: on this shared machine the wall time includes
     * the time slices other processes take */
    printf("rate: count %zu: %.2f M fragments/s of wall time (%.0f ns each), %.2f M/s of CPU time (%.0f ns each)\n",
           counts[i], reps / t / 1e6, t / reps * 1e9, reps / ct / 1e6, ct / reps * 1e9);
    fold_areduce_done(ar);
    fold_areduce_destroy(ar);
    free(f);
  }
  fold_comm_destroy(c);
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "";
  if (strcmp(what, "rate") == 0) {
    rate();
    return check_report(what);
  }
  if (strcmp(what, "bench") != 0 && strcmp(what, "slow") != 0) {
    fprintf(stderr, "usage: areduce_real rate | foldrun -n N ... areduce_real bench [reps] | foldrun -n 4 ... "
                    "areduce_real slow\n");
    return 2;
  }
  const char *pt = getenv("FOLD_PROGRESS_THREAD");
  if (pt && strcmp(pt, "1") == 0) {
    /* gen_fire calls fold from inside a progress pass, under the helper's
     * lock, which does not nest */
    fprintf(stderr, "areduce_real: not with FOLD_PROGRESS_THREAD (the fragments' timer calls fold from the engine)\n");
    return 2;
  }
  fold_comm *c = NULL;
  if (fold_init(&c) != FOLD_OK) {
    fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
    return 2;
  }
  if (strcmp(what, "bench") == 0)
    bench(c, argc > 2 ? atoi(argv[2]) > 0 ? atoi(argv[2]) : 1 : 21);
  else
    slow_test(c);
  fold_comm_destroy(c);
  return check_report(what);
}
