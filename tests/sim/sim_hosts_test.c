/* sim_hosts_test.c — simulated hosts: grouping (local ranks, split_host), the shared NIC timed exactly, bad arguments, collectives at 320 ranks.
 * Usage: sim_hosts_test <case>. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "sim/sim_check.h"

/* Dyadic parameters: every time below is exact in binary floating point. */
#define LAT (1.0 / 1024)     /* network latency, 2^-10 s */
#define BT (1.0 / (1 << 20)) /* network byte time, 2^-20 s */
#define B 4096               /* bytes: one network transfer takes 2^-8 s */
#define XFER ((double)B * BT)

static unsigned char sbuf[B], rbuf[8][B];

static fold_sim_params params(double lat, double bt) {
  fold_sim_params p;
  fold_sim_params_default(&p);
  p.latency = lat;
  p.byte_time = bt;
  return p;
}

/* The network class (LAT, BT) and a host link four times faster both ways. */
static void set_hosts(fold_sim *sim, int hosts, const int *of) {
  fold_sim_params host = params(LAT / 4, BT / 4), net = params(LAT, BT);
  CHECK_RC(fold_sim_set_hosts(sim, hosts, of, &host, &net), FOLD_OK, NULL);
}

/* Sum over the ranks of comm of v, by allreduce on every rank (then run). */
static void sum_all(fold_sim *sim, fold_comm **comm, int n, const int64_t *v, int64_t *out) {
  fold_request **q = calloc((size_t)n, sizeof *q);
  CHECK(q != NULL);
  for (int i = 0; i < n; i++)
    CHECK_RC(fold_iallreduce(&v[i], &out[i], 1, FOLD_INT64, FOLD_SUM, comm[i], &q[i]), FOLD_OK, comm[i]);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  for (int i = 0; i < n; i++)
    CHECK_RC(fold_wait(q[i]), FOLD_OK, comm[i]);
  free(q);
}

/* Round-robin hosts (rank r on host r % 3) and the default contiguous
 * blocks: local ranks and sizes, and fold_comm_split_host groups by them. */
static void case_split_host(void) {
  enum { N = 12, H = 3 };
  int of[N];
  for (int r = 0; r < N; r++) of[r] = r % H;
  fold_comm *w[N], *h[N];
  fold_sim *sim;
  CHECK_RC(fold_sim_create(N, NULL, &sim, w), FOLD_OK, NULL);
  CHECK(fold_comm_local_size(w[5]) == 1); /* no hosts yet: every rank its own */
  set_hosts(sim, H, of);
  for (int r = 0; r < N; r++) {
    CHECK(fold_comm_local_size(w[r]) == N / H);
    CHECK(fold_comm_local_rank(w[r]) == r / H);
  }
  for (int r = 0; r < N; r++) CHECK_RC(fold_comm_split_host(w[r], &h[r]), FOLD_OK, w[r]);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  int64_t v[N], s[N];
  for (int r = 0; r < N; r++) {
    CHECK(h[r] != NULL && fold_comm_size(h[r]) == N / H && fold_comm_rank(h[r]) == r / H);
    CHECK(fold_comm_local_size(h[r]) == N / H);
    v[r] = r;
  }
  /* the members are exactly the host's ranks: their world ranks' sum */
  sum_all(sim, h, N, v, s);
  for (int r = 0; r < N; r++) {
    int64_t want = 0;
    for (int q = r % H; q < N; q += H) want += q;
    CHECK(s[r] == want);
  }
  CHECK_RC(fold_sim_destroy(sim), FOLD_OK, NULL);

  /* host_of_rank NULL: contiguous blocks r * hosts / n, 10 ranks on 4
   * hosts: {0,1,2} {3,4} {5,6,7} {8,9} */
  enum { M = 10 };
  static const int want_size[M] = {3, 3, 3, 2, 2, 3, 3, 3, 2, 2}, want_rank[M] = {0, 1, 2, 0, 1, 0, 1, 2, 0, 1};
  CHECK_RC(fold_sim_create(M, NULL, &sim, w), FOLD_OK, NULL);
  set_hosts(sim, 4, NULL);
  for (int r = 0; r < M; r++) {
    CHECK(fold_comm_local_size(w[r]) == want_size[r] && fold_comm_local_rank(w[r]) == want_rank[r]);
    CHECK_RC(fold_comm_split_host(w[r], &h[r]), FOLD_OK, w[r]);
  }
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  for (int r = 0; r < M; r++)
    CHECK(fold_comm_size(h[r]) == want_size[r] && fold_comm_rank(h[r]) == want_rank[r]);
  CHECK_RC(fold_sim_destroy(sim), FOLD_OK, NULL);
}

/* Post sends src[k] -> dst[k] of B bytes at t = 0 (receives first) and
 * return, in *t, each receive's completion time in arrival order. */
static void sends(fold_sim *sim, fold_comm **w, int m, const int *src, const int *dst, double *t) {
  fold_request *rr[8], *ss[8];
  for (int k = 0; k < m; k++) CHECK_RC(fold_irecv(rbuf[k], B, FOLD_UINT8, src[k], k, w[dst[k]], &rr[k]), FOLD_OK, w[dst[k]]);
  for (int k = 0; k < m; k++) CHECK_RC(fold_isend(sbuf, B, FOLD_UINT8, dst[k], k, w[src[k]], &ss[k]), FOLD_OK, w[src[k]]);
  for (int k = 0; k < m; k++) {
    CHECK_RC(fold_wait(rr[k]), FOLD_OK, w[dst[k]]);
    t[k] = fold_sim_time(sim);
  }
  for (int k = 0; k < m; k++) CHECK_RC(fold_wait(ss[k]), FOLD_OK, w[src[k]]);
}

/* Hosts {0,1} {2,3} {4,5}: one rank sending to another host takes
 * LAT + XFER; two ranks of a host sending out at once share its NIC (the
 * second ends XFER later: twice the transfer time in all), as do two
 * hosts sending into one; traffic inside a host takes the host link and
 * leaves the NIC alone. Exact times (docs/simulator.md). */
static void case_nic_share(void) {
  static const int of[6] = {0, 0, 1, 1, 2, 2};
  fold_comm *w[6];
  fold_sim *sim;
  double t[4];
#define WORLD()                                                   \
  do {                                                            \
    CHECK_RC(fold_sim_create(6, NULL, &sim, w), FOLD_OK, NULL);   \
    set_hosts(sim, 3, of);                                        \
  } while (0)
  /* one sender */
  WORLD();
  sends(sim, w, 1, (int[]){0}, (int[]){2}, t);
  CHECK_T(t[0], LAT + XFER);
  fold_sim_destroy(sim);
  /* two senders of host 0 to host 1: egress shared */
  WORLD();
  sends(sim, w, 2, (int[]){0, 1}, (int[]){2, 3}, t);
  CHECK_T(t[0], LAT + XFER);
  CHECK_T(t[1], LAT + 2 * XFER);
  fold_sim_destroy(sim);
  /* hosts 1 and 2 into host 0: ingress shared (each egress is its own) */
  WORLD();
  sends(sim, w, 2, (int[]){2, 4}, (int[]){0, 1}, t);
  CHECK_T(t[0], LAT + XFER);
  CHECK_T(t[1], LAT + 2 * XFER);
  fold_sim_destroy(sim);
  /* inside a host: rank 1 -> 0 on the host link while 0 sends out and
   * into its host: nothing shares the NIC */
  WORLD();
  sends(sim, w, 3, (int[]){1, 0, 0}, (int[]){0, 1, 2}, t);
  CHECK_T(t[0], LAT / 4 + XFER / 4); /* 1 -> 0 and 0 -> 1: both at once, each its own links */
  CHECK_T(t[1], LAT / 4 + XFER / 4);
  CHECK_T(t[2], LAT + XFER); /* 0 -> 2 as if alone */
  fold_sim_destroy(sim);
  /* two senders to two other hosts: one egress NIC all the same */
  WORLD();
  sends(sim, w, 2, (int[]){0, 1}, (int[]){2, 4}, t);
  CHECK_T(t[1], LAT + 2 * XFER);
  fold_sim_destroy(sim);
#undef WORLD
}

/* One rank per host with the world's parameters as both classes is the
 * model without hosts: the same ring allreduce time to the bit. */
static void case_one_per_host(void) {
  enum { N = 8, CNT = 4096 };
  static float in[CNT], out[N][CNT];
  double t[2];
  for (int with = 0; with < 2; with++) {
    fold_comm *w[N];
    fold_request *q[N];
    fold_sim *sim;
    fold_sim_params p = params(LAT, BT);
    CHECK_RC(fold_sim_create(N, &p, &sim, w), FOLD_OK, NULL);
    if (with) CHECK_RC(fold_sim_set_hosts(sim, N, NULL, NULL, NULL), FOLD_OK, NULL);
    for (int r = 0; r < N; r++) {
      CHECK_RC(fold_comm_set_algo(w[r], "allreduce=ring"), FOLD_OK, w[r]);
      CHECK_RC(fold_iallreduce(in, out[r], CNT, FOLD_FLOAT32, FOLD_SUM, w[r], &q[r]), FOLD_OK, w[r]);
    }
    CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
    t[with] = fold_sim_time(sim);
    for (int r = 0; r < N; r++) CHECK_RC(fold_wait(q[r]), FOLD_OK, w[r]);
    fold_sim_destroy(sim);
  }
  CHECK(t[0] > 0);
  CHECK_T(t[1], t[0]);
}

static void expect_einval(int rc, const char *words) {
  CHECK_RC(rc, FOLD_EINVAL, NULL);
  const char *e = fold_comm_last_error(NULL);
  if (strstr(e, words) == NULL) {
    fprintf(stderr, "error '%s' does not say '%s'\n", e, words);
    exit(1);
  }
}

static void case_args(void) {
  fold_comm *w[4];
  fold_sim *sim;
  CHECK_RC(fold_sim_create(4, NULL, &sim, w), FOLD_OK, NULL);
  fold_sim_params ok = params(LAT, BT), neg = params(-1, BT), nan_ = params(LAT, NAN);
  expect_einval(fold_sim_set_hosts(NULL, 2, NULL, NULL, NULL), "sim is NULL");
  expect_einval(fold_sim_set_hosts(sim, 0, NULL, NULL, NULL), "hosts = 0");
  expect_einval(fold_sim_set_hosts(sim, 5, NULL, NULL, NULL), "hosts = 5");
  expect_einval(fold_sim_set_hosts(sim, 2, (int[]){0, 1, 2, 0}, NULL, NULL), "rank 2 is on host 2");
  expect_einval(fold_sim_set_hosts(sim, 2, (int[]){0, -1, 1, 0}, NULL, NULL), "rank 1 is on host -1");
  expect_einval(fold_sim_set_hosts(sim, 3, (int[]){0, 0, 2, 2}, NULL, NULL), "host 1 has no rank");
  expect_einval(fold_sim_set_hosts(sim, 2, NULL, &neg, &ok), "host_link");
  expect_einval(fold_sim_set_hosts(sim, 2, NULL, &ok, &nan_), "net_link");
  CHECK(fold_comm_local_size(w[0]) == 1); /* nothing was changed */
  /* regrouping before anything started is fine; after, refused */
  CHECK_RC(fold_sim_set_hosts(sim, 2, NULL, &ok, &ok), FOLD_OK, NULL);
  CHECK_RC(fold_sim_set_hosts(sim, 1, NULL, &ok, &ok), FOLD_OK, NULL);
  CHECK(fold_comm_local_size(w[3]) == 4 && fold_comm_local_rank(w[3]) == 3);
  fold_request *s, *r;
  CHECK_RC(fold_irecv(rbuf[0], 1, FOLD_UINT8, 0, 0, w[1], &r), FOLD_OK, w[1]);
  CHECK_RC(fold_isend(sbuf, 1, FOLD_UINT8, 1, 0, w[0], &s), FOLD_OK, w[0]);
  expect_einval(fold_sim_set_hosts(sim, 2, NULL, NULL, NULL), "operations have started");
  CHECK_RC(fold_wait(r), FOLD_OK, w[1]);
  CHECK_RC(fold_wait(s), FOLD_OK, w[0]);
  CHECK(fold_comm_local_size(w[3]) == 4);
  fold_sim_destroy(sim);
}

/* Flat allreduce algorithms on 40 hosts x 8 ranks, contiguous and round
 * robin: results checked; with ranks round robin a ring crosses the network
 * at every hop (all 8 ranks of a host share its NIC), so it is slower. */
static void case_coll(void) {
  enum { H = 40, P = 8, N = H * P, CNT = 1024 };
  static const char *const algos[] = {"ring", "recursive_doubling", "rabenseifner", "ring_segmented"};
  int64_t *in = malloc(sizeof(int64_t) * N * CNT), *out = malloc(sizeof(int64_t) * N * CNT);
  int of[N];
  CHECK(in && out);
  for (int r = 0; r < N; r++)
    for (int i = 0; i < CNT; i++) in[(size_t)r * CNT + i] = (int64_t)r * 1000 + i;
  for (int a = 0; a < 4; a++) {
    double t[2];
    for (int rr = 0; rr < 2; rr++) {
      fold_comm *w[N];
      fold_request *q[N];
      fold_sim *sim;
      for (int r = 0; r < N; r++) of[r] = rr ? r % H : r / P;
      CHECK_RC(fold_sim_create(N, NULL, &sim, w), FOLD_OK, NULL);
      fold_sim_params host = params(5e-7, 2e-11), net = params(5e-6, 8e-11);
      CHECK_RC(fold_sim_set_hosts(sim, H, of, &host, &net), FOLD_OK, NULL);
      char spec[64];
      snprintf(spec, sizeof spec, "allreduce=%s", algos[a]);
      for (int r = 0; r < N; r++) {
        CHECK_RC(fold_comm_set_algo(w[r], spec), FOLD_OK, w[r]);
        CHECK_RC(fold_iallreduce(in + (size_t)r * CNT, out + (size_t)r * CNT, CNT, FOLD_INT64, FOLD_SUM, w[r], &q[r]),
                 FOLD_OK, w[r]);
      }
      CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
      t[rr] = fold_sim_time(sim);
      for (int r = 0; r < N; r++) CHECK_RC(fold_wait(q[r]), FOLD_OK, w[r]);
      for (int r = 0; r < N; r++)
        for (int i = 0; i < CNT; i += 31) {
          int64_t want = (int64_t)1000 * N * (N - 1) / 2 + (int64_t)N * i;
          if (out[(size_t)r * CNT + i] != want) {
            fprintf(stderr, "%s %s: rank %d element %d = %lld, want %lld\n", algos[a], rr ? "round robin" : "contiguous",
                    r, i, (long long)out[(size_t)r * CNT + i], (long long)want);
            exit(1);
          }
        }
      fold_sim_destroy(sim);
    }
    printf("allreduce %-20s %d x %d, %d B: contiguous %.6e s, round robin %.6e s\n", algos[a], H, P, CNT * 8, t[0], t[1]);
    if (a == 0) CHECK(t[1] > t[0]);
  }
  free(in);
  free(out);
}

int main(int argc, char **argv) {
  static const sim_check_case cases[] = {
      {"split_host", case_split_host}, {"nic_share", case_nic_share}, {"one_per_host", case_one_per_host},
      {"args", case_args},             {"coll", case_coll},
  };
  return sim_check_run("sim_hosts_test", cases, sizeof cases / sizeof *cases, argc, argv);
}
