/* comm_shm.c — the `shm` collective algorithms on sub-communicators of real processes (run under foldrun): every collective's sampled case matrix on children of several shapes against the serial reference, children of one host in a job spanning (faked) hosts, refusal where a child spans hosts, no segment left linked. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "coll/coll_case.h"
#include "coll/coll_ref.h"
#include "fold.h"
#include "transport/shm/shm_seg.h"

/* Usage: comm_shm [hosts]
 * Without an argument every rank is on one host (foldrun --transport shm):
 * children split by parity, a dup, a nested split and split_host run every
 * collective's shm cases. With `hosts` (FOLD_TEST_HOSTS=3 set by the test:
 * ranks {0,1,2} and {3,4} are two hosts, shm within, tcp between) the
 * world cannot run shm, split_host children can, and children spanning the
 * hosts refuse a forced shm (FOLD_EINVAL). */

static fold_op affine;

/* Every collective's shm cases (the --quick sample) on k; returns the cases run. */
static int shm_matrix(fold_comm *k, const char *what) {
  int n = fold_comm_size(k), total = 0;
  for (int coll = 0; coll < NCOLL; coll++) {
    plan_t plan = {0};
    make_plan(&plan, coll, ALGO_SHM, n);
    int before = atomic_load(&check_failures);
    for (int i = 0; i < plan.ncases && atomic_load(&check_failures) - before < 3; i++) run_case(k, &plan.cases[i], affine);
    if (atomic_load(&check_failures) > before)
      printf("%s: %s shm on %d ranks FAILED\n", what, coll_names[coll], n);
    total += plan.ncases;
    free(plan.cases);
  }
  return total;
}

/* Segments this process made that are still linked in /dev/shm under a
 * child's area name ("/fold-<job>-<rank>.<cid>"). */
static int linked_kid_areas(void) {
  DIR *d = opendir("/dev/shm");
  if (d == NULL) return 0;
  int found = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (strncmp(e->d_name, "fold-", 5) != 0 || strchr(e->d_name, '.') == NULL) continue;
    char name[300];
    snprintf(name, sizeof name, "/%s", e->d_name);
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd < 0) continue;
    fold__shm_hdr *h = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (h == MAP_FAILED) continue;
    if (h->magic == FOLD__SHM_MAGIC && h->pid == getpid()) {
      printf("rank pid %d: %s still linked\n", (int)getpid(), name);
      found++;
    }
    munmap(h, 4096);
  }
  closedir(d);
  return found;
}

/* Nonblocking shm calls on the world and a child, started in one order and
 * waited in the other: their areas are independent. */
static void interleave(fold_comm *w, fold_comm *k) {
  int64_t one = 1, sw = 0, sk = 0;
  fold_request *rw = NULL, *rk = NULL;
  CHECK_OK(fold_comm_set_algo(w, "allreduce=shm"), w);
  CHECK_OK(fold_comm_set_algo(k, "allreduce=shm"), k);
  CHECK_OK(fold_iallreduce(&one, &sw, 1, FOLD_INT64, FOLD_SUM, w, &rw), w);
  CHECK_OK(fold_iallreduce(&one, &sk, 1, FOLD_INT64, FOLD_SUM, k, &rk), k);
  CHECK_OK(fold_wait(rk), k);
  CHECK_OK(fold_wait(rw), w);
  CHECK(sw == fold_comm_size(w) && sk == fold_comm_size(k), "interleaved: world %lld, child %lld", (long long)sw,
        (long long)sk);
}

/* Ranks that disagree on a child's first call: rank 0 runs a round
 * algorithm (its note makes its area), the others shm; then a count that
 * differs between shm-running ranks. FOLD_EMISMATCH on every rank, no hang;
 * only that child fails. */
static void mismatches(fold_comm *w) {
  int me = fold_comm_rank(w);
  int64_t in[4] = {1, 2, 3, 4}, out[4];
  for (int round = 0; round < 2; round++) {
    fold_comm *d = NULL;
    CHECK_OK(fold_comm_dup(w, &d), w);
    if (round == 0)
      CHECK_OK(fold_comm_set_algo(d, me == 0 ? "allreduce=ring" : "allreduce=shm"), d);
    else
      CHECK_OK(fold_comm_set_algo(d, "allreduce=shm"), d);
    size_t count = round == 1 && me == 1 ? 3 : 4;
    CHECK_RC(fold_allreduce(in, out, count, FOLD_INT64, FOLD_SUM, d), FOLD_EMISMATCH, d);
    CHECK(strstr(fold_comm_last_error(d), round == 0 ? "ring" : "count") != NULL, "child mismatch %d: %s", round,
          fold_comm_last_error(d));
    CHECK_OK(fold_comm_destroy(d), NULL);
  }
  CHECK_OK(fold_barrier(w), w); /* the world is unharmed */
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Not a check, numbers for docs/comm.md (the largest over the ranks): a
 * fresh dup's first shm allreduce (it makes the areas), then 8-byte shm
 * allreduces on the world and on the dup. */
static void timing(fold_comm *w) {
  fold_comm *d = NULL;
  int64_t v = 1, s = 0;
  CHECK_OK(fold_comm_set_algo(w, "allreduce=shm"), w);
  CHECK_OK(fold_comm_dup(w, &d), w);
  CHECK_OK(fold_comm_set_algo(d, "allreduce=shm"), d);
  CHECK_OK(fold_barrier(w), w);
  double t0 = now_s();
  CHECK_OK(fold_allreduce(&v, &s, 1, FOLD_INT64, FOLD_SUM, d), d);
  double t[3] = {now_s() - t0, 0, 0}, mx[3];
  const int reps = 2000;
  for (int k = 0; k < 2; k++) {
    fold_comm *c = k ? d : w;
    CHECK_OK(fold_barrier(w), w);
    t0 = now_s();
    for (int i = 0; i < reps; i++) fold_allreduce(&v, &s, 1, FOLD_INT64, FOLD_SUM, c);
    t[1 + k] = (now_s() - t0) / reps;
  }
  CHECK_OK(fold_comm_set_algo(w, "allreduce=auto"), w);
  CHECK_OK(fold_allreduce(t, mx, 3, FOLD_FLOAT64, FOLD_MAX, w), w);
  if (fold_comm_rank(w) == 0)
    printf("shm allreduce of 8 B, %d processes: first call on a dup %.1f us; then world %.2f us, dup %.2f us\n",
           fold_comm_size(w), mx[0] * 1e6, mx[1] * 1e6, mx[2] * 1e6);
  CHECK_OK(fold_comm_destroy(d), NULL);
}

static int one_host(fold_comm *w) {
  int me = fold_comm_rank(w), n = fold_comm_size(w), total = 0;
  fold_comm *par = NULL, *dup = NULL, *nest = NULL, *host = NULL;
  /* split by parity, ranks reversed: sizes ceil(n/2) and floor(n/2) */
  CHECK_OK(fold_comm_split(w, me % 2, -me, &par), w);
  total += shm_matrix(par, "parity split");
  CHECK(linked_kid_areas() == 0, "a child's area is still linked after its first call");
  /* a dup of the world */
  CHECK_OK(fold_comm_dup(w, &dup), w);
  total += shm_matrix(dup, "dup");
  interleave(w, dup);
  /* a split of a split: {0, 4} / {2} of the even ranks at 5 */
  CHECK_OK(fold_comm_split(par, fold_comm_rank(par) % 2, 0, &nest), par);
  total += shm_matrix(nest, "nested split");
  /* split_host: everyone on one host */
  CHECK_OK(fold_comm_split_host(w, &host), w);
  CHECK(fold_comm_size(host) == n, "split_host: %d ranks, want %d", fold_comm_size(host), n);
  total += shm_matrix(host, "split_host");
  /* automatic selection picks shm on a child as on the world: the same
   * small allreduce, forced and automatic, agree */
  CHECK_OK(fold_comm_set_algo(par, "allreduce=auto"), par);
  int64_t v = me, s = 0;
  CHECK_OK(fold_allreduce(&v, &s, 1, FOLD_INT64, FOLD_SUM, par), par);
  int64_t want = 0;
  for (int r = me % 2; r < n; r += 2) want += r;
  CHECK(s == want, "parity allreduce: %lld, want %lld", (long long)s, (long long)want);
  /* destroyed in an order unlike their making */
  CHECK_OK(fold_comm_destroy(par), NULL);
  CHECK_OK(fold_comm_destroy(host), NULL);
  CHECK_OK(fold_comm_destroy(nest), NULL);
  CHECK_OK(fold_comm_destroy(dup), NULL);
  CHECK(linked_kid_areas() == 0, "a child's area is still linked after destroy");
  mismatches(w);
  CHECK(linked_kid_areas() == 0, "a failed child's area is still linked after destroy");
  timing(w);
  return total;
}

/* FOLD_TEST_HOSTS=3 on 5 ranks: hosts {0,1,2} and {3,4}. */
static int two_hosts(fold_comm *w) {
  int me = fold_comm_rank(w), total = 0;
  int64_t one = 1, s = 0;
  fold_comm *host = NULL, *dup = NULL;
  /* the world spans hosts: refused, with the reason */
  CHECK_OK(fold_comm_set_algo(w, "allreduce=shm"), w);
  CHECK_RC(fold_allreduce(&one, &s, 1, FOLD_INT64, FOLD_SUM, w), FOLD_EINVAL, w);
  CHECK_OK(fold_comm_set_algo(w, "allreduce=auto"), w);
  /* a child of one host runs shm where its world cannot */
  CHECK_OK(fold_comm_split_host(w, &host), w);
  CHECK(fold_comm_size(host) == (me < 3 ? 3 : 2), "split_host: %d ranks", fold_comm_size(host));
  total += shm_matrix(host, "split_host of two hosts");
  /* a child that spans the hosts is refused, naming why */
  CHECK_OK(fold_comm_dup(w, &dup), w);
  CHECK_OK(fold_comm_set_algo(dup, "allreduce=shm"), dup);
  s = 0;
  CHECK_RC(fold_allreduce(&one, &s, 1, FOLD_INT64, FOLD_SUM, dup), FOLD_EINVAL, dup);
  CHECK(strstr(fold_comm_last_error(dup), "more than one transport") != NULL, "refusal on a child across hosts: %s",
        fold_comm_last_error(dup));
  /* automatic selection passes shm over there, and uses it on the host child */
  CHECK_OK(fold_comm_set_algo(dup, "allreduce=auto"), dup);
  CHECK_OK(fold_allreduce(&one, &s, 1, FOLD_INT64, FOLD_SUM, dup), dup);
  CHECK(s == fold_comm_size(w), "auto allreduce across hosts: %lld", (long long)s);
  CHECK_OK(fold_comm_set_algo(host, "allreduce=auto"), host);
  CHECK_OK(fold_allreduce(&one, &s, 1, FOLD_INT64, FOLD_SUM, host), host);
  CHECK(s == fold_comm_size(host), "auto allreduce on a host: %lld", (long long)s);
  CHECK_OK(fold_comm_destroy(dup), NULL);
  CHECK_OK(fold_comm_destroy(host), NULL);
  CHECK(linked_kid_areas() == 0, "a child's area is still linked after destroy");
  return total;
}

int main(int argc, char **argv) {
  int hosts = argc > 1 && strcmp(argv[1], "hosts") == 0;
  fold_comm *w;
  if (fold_init(&w) != FOLD_OK) {
    fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
    return 2;
  }
  int me = fold_comm_rank(w), n = fold_comm_size(w);
  CHECK_OK(fold_op_create(&affine, ref_affine_fn, NULL, 0, w), w); /* children inherit it */
  opt_quick = 1;
  int total = hosts ? two_hosts(w) : one_host(w);
  CHECK_OK(fold_barrier(w), w);
  CHECK_OK(fold_comm_destroy(w), NULL);
  char name[64];
  snprintf(name, sizeof name, "comm_shm%s rank %d/%d (%d cases)", hosts ? " hosts" : "", me, n, total);
  return check_report(name);
}
