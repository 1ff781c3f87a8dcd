/* p2p_wild.c — wildcard receives, statuses, probe and fold_progress, runnable on any real communicator. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fold.h"
#include "p2p/p2p_suite.h"

/* Every phase uses its own tags and ends with a barrier (collective
 * traffic, which wildcards never match), so a fast rank's next phase
 * cannot feed a slow rank's wildcard receive of this one. */
enum { T_MANY = 200, T_ORDER = 210, T_PROBE = 220, T_PROGRESS = 230, T_BIG = 240, T_SELF = 250 };
enum { K = 6, MAXLEN = 8 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Message k of src to dst: length 3 + k % 4 int32 {src, tag, k, ...}. */
static int msg_len(int k) { return 3 + k % 4; }
static int msg_tag(int src, int k) { return T_MANY + (src + k) % 3; }

/* Every rank sends K messages to every rank (itself included) over three
 * tags, then receives them all with a rotating mix of ANY/ANY, ANY_SOURCE
 * with a tag, a source with ANY_TAG and fully specific receives. Checks:
 * the status names the message's source, tag and length; per (source,
 * tag) the messages come in sending order. */
static void many_senders(fold_comm *c) {
  int n = fold_comm_size(c), me = fold_comm_rank(c);
  int32_t (*sb)[MAXLEN] = calloc((size_t)(n * K), sizeof *sb);
  fold_request **rq = calloc((size_t)(n * K), sizeof *rq);
  int *left = calloc((size_t)(n * 3), sizeof *left), *next = calloc((size_t)(n * 3), sizeof *next);
  for (int p = 0; p < n; p++)
    for (int k = 0; k < K; k++) {
      int32_t *m = sb[p * K + k];
      m[0] = me, m[1] = msg_tag(me, k), m[2] = k;
      for (int i = 3; i < MAXLEN; i++) m[i] = me * 1000 + k * 10 + i;
      CHECK_OK(fold_isend(m, (size_t)msg_len(k), FOLD_INT32, p, m[1], c, &rq[p * K + k]), c);
    }
  for (int p = 0; p < n; p++)
    for (int k = 0; k < K; k++) left[p * 3 + (msg_tag(p, k) - T_MANY)]++;
  for (int i = 0; i < n * K; i++) {
    int src = FOLD_ANY_SOURCE, tag = FOLD_ANY_TAG, kind = i % 5;
    /* pick a (source, tag) with messages left for the specific kinds */
    int pick = -1;
    for (int j = 0; j < n * 3 && pick < 0; j++)
      if (left[(i + j) % (n * 3)] > 0) pick = (i + j) % (n * 3);
    if (kind == 1) tag = T_MANY + pick % 3;
    if (kind == 2) src = pick / 3;
    if (kind == 3) src = pick / 3, tag = T_MANY + pick % 3;
    int32_t rb[MAXLEN + 1];
    memset(rb, 0xEE, sizeof rb);
    fold_status st = {-7, -7, 999};
    if (kind == 4) { /* plain fold_recv: no status, the payload names itself */
      CHECK_OK(fold_recv(rb, MAXLEN, FOLD_INT32, src, tag, c), c);
      st.source = rb[0], st.tag = rb[1], st.count = (size_t)msg_len(rb[2]);
    } else {
      CHECK_OK(fold_recv_status(rb, MAXLEN, FOLD_INT32, src, tag, c, &st), c);
    }
    CHECK(st.source >= 0 && st.source < n && st.source == rb[0] && st.tag == rb[1],
          "rank %d: status (%d, %d) but message from %d tag %d", me, st.source, st.tag, rb[0], rb[1]);
    if (st.source < 0 || st.source >= n || st.tag < T_MANY || st.tag > T_MANY + 2) continue;
    CHECK(src == FOLD_ANY_SOURCE || src == st.source, "rank %d: asked source %d, got %d", me, src, st.source);
    CHECK(tag == FOLD_ANY_TAG || tag == st.tag, "rank %d: asked tag %d, got %d", me, tag, st.tag);
    CHECK(st.count == (size_t)msg_len(rb[2]), "rank %d: count %zu for message %d of length %d", me, st.count,
          rb[2], msg_len(rb[2]));
    int slot = st.source * 3 + (st.tag - T_MANY);
    /* per (source, tag), the k values come in increasing order */
    int want = next[slot];
    while (want < K && msg_tag(st.source, want) != st.tag) want++;
    CHECK(rb[2] == want, "rank %d: from %d tag %d got message %d, wanted %d (order lost)", me, st.source,
          st.tag, rb[2], want);
    next[slot] = rb[2] + 1;
    left[slot]--;
    for (int j = 3; j < msg_len(rb[2]); j++)
      CHECK(rb[j] == st.source * 1000 + rb[2] * 10 + j, "rank %d: word %d wrong", me, j);
    CHECK(rb[msg_len(rb[2])] == (int32_t)0xEEEEEEEE, "rank %d: wrote past the message", me);
  }
  for (int i = 0; i < n * K; i++) {
    fold_status st = {-7, -7, 999};
    CHECK_OK(fold_wait_status(rq[i], &st), c);
    /* a send's status: this rank, its tag, elements sent */
    CHECK(st.source == me && st.tag == msg_tag(me, i % K) && st.count == (size_t)msg_len(i % K),
          "rank %d: send status (%d, %d, %zu)", me, st.source, st.tag, st.count);
  }
  free(sb), free(rq), free(left), free(next);
  CHECK_OK(fold_barrier(c), c);
}

/* Posted order decides: rank 0 posts (1, t), (ANY, ANY), (1, t), (ANY, t+1)
 * before rank 1 sends t, t, t, t+1: they land in that order. The barrier in
 * between is not taken by the wildcard. */
static void posted_order(fold_comm *c) {
  int n = fold_comm_size(c), me = fold_comm_rank(c);
  if (n < 2) return;
  int32_t got[4] = {-1, -1, -1, -1};
  fold_request *r[4] = {0};
  const int t = T_ORDER;
  if (me == 0) {
    CHECK_OK(fold_irecv(&got[0], 1, FOLD_INT32, 1, t, c, &r[0]), c);
    CHECK_OK(fold_irecv(&got[1], 1, FOLD_INT32, FOLD_ANY_SOURCE, FOLD_ANY_TAG, c, &r[1]), c);
    CHECK_OK(fold_irecv(&got[2], 1, FOLD_INT32, 1, t, c, &r[2]), c);
    CHECK_OK(fold_irecv(&got[3], 1, FOLD_INT32, FOLD_ANY_SOURCE, t + 1, c, &r[3]), c);
  }
  CHECK_OK(fold_barrier(c), c);
  if (me == 1)
    for (int32_t k = 0; k < 4; k++) CHECK_OK(fold_send(&k, 1, FOLD_INT32, 0, k == 3 ? t + 1 : t, c), c);
  if (me == 0) {
    fold_status st[4];
    for (int k = 0; k < 4; k++) CHECK_OK(fold_wait_status(r[k], &st[k]), c);
    for (int k = 0; k < 4; k++)
      CHECK(got[k] == k && st[k].source == 1 && st[k].tag == (k == 3 ? t + 1 : t) && st[k].count == 1,
            "posted receive %d got %d (source %d, tag %d, count %zu)", k, got[k], st[k].source, st[k].tag,
            st[k].count);
  }
  CHECK_OK(fold_barrier(c), c);
}

/* Probe until found (bounded), return found. */
static int probe_wait(fold_comm *c, int peer, int tag, fold_status *st) {
  int found = 0;
  double t0 = now_s();
  while (!found && now_s() - t0 < 20) CHECK_OK(fold_iprobe(peer, tag, c, &found, st), c);
  return found;
}

static void probe(fold_comm *c) {
  int n = fold_comm_size(c), me = fold_comm_rank(c), found = 7;
  /* bad input */
  CHECK_RC(fold_iprobe(n, 0, c, &found, NULL), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "peer") != NULL, "message: %s", fold_comm_last_error(c));
  CHECK_RC(fold_iprobe(-2, 0, c, &found, NULL), FOLD_EINVAL, c);
  CHECK_RC(fold_iprobe(0, -3, c, &found, NULL), FOLD_EINVAL, c);
  CHECK_RC(fold_iprobe(0, 0, c, NULL, NULL), FOLD_EINVAL, c);
  CHECK_RC(fold_iprobe(0, 0, NULL, &found, NULL), FOLD_EINVAL, NULL);
  /* nothing sent with this tag: not found */
  CHECK_OK(fold_iprobe(FOLD_ANY_SOURCE, T_PROBE + 5, c, &found, NULL), c);
  CHECK(found == 0, "rank %d: probe found a message nobody sent", me);
  int to = (me + 1) % n, from = (me + n - 1) % n;
  int32_t out[3] = {me, 1, 2}, in[3] = {0};
  CHECK_OK(fold_send(out, 3, FOLD_INT32, to, T_PROBE, c), c);
  fold_status st = {-7, -7, 0};
  CHECK(probe_wait(c, FOLD_ANY_SOURCE, FOLD_ANY_TAG, &st), "rank %d: probe never found the message", me);
  CHECK(st.source == from && st.tag == T_PROBE && st.count == 12, "rank %d: probe status (%d, %d, %zu)", me,
        st.source, st.tag, st.count);
  /* not consumed: found again, specifically and with st == NULL */
  CHECK_OK(fold_iprobe(from, T_PROBE, c, &found, NULL), c);
  CHECK(found == 1, "rank %d: the probe consumed the message", me);
  CHECK_OK(fold_iprobe(from, T_PROBE + 1, c, &found, &st), c);
  CHECK(found == 0, "rank %d: probe matched the wrong tag", me);
  CHECK_OK(fold_recv_status(in, 3, FOLD_INT32, st.source, FOLD_ANY_TAG, c, &st), c);
  CHECK(in[0] == from && st.count == 3 && st.tag == T_PROBE, "rank %d: recv after probe got %d, count %zu", me,
        in[0], st.count);
  CHECK_OK(fold_iprobe(FOLD_ANY_SOURCE, FOLD_ANY_TAG, c, &found, NULL), c);
  CHECK(found == 0, "rank %d: the message is still there after its receive", me);
  CHECK_OK(fold_barrier(c), c);
}

/* fold_progress alone moves an isend/irecv pair (a rendezvous one) and a
 * nonblocking allreduce to their end: the data is there before any
 * fold_test/fold_wait is called on them. */
static void progress_only(fold_comm *c, size_t big) {
  int n = fold_comm_size(c), me = fold_comm_rank(c);
  int to = (me + 1) % n, from = (me + n - 1) % n;
  uint8_t *sb = malloc(big), *rb = malloc(big);
  for (size_t i = 0; i < big; i++) sb[i] = (uint8_t)(i * 7 + (size_t)me), rb[i] = 0;
  int32_t ain[64], aout[64];
  for (int i = 0; i < 64; i++) ain[i] = me + i, aout[i] = -1;
  fold_request *rr, *sr, *ar;
  CHECK_OK(fold_irecv(rb, big, FOLD_UINT8, FOLD_ANY_SOURCE, T_PROGRESS, c, &rr), c);
  CHECK_OK(fold_isend(sb, big, FOLD_UINT8, to, T_PROGRESS, c, &sr), c);
  CHECK_OK(fold_iallreduce(ain, aout, 64, FOLD_INT32, FOLD_SUM, c, &ar), c);
  int ok = 0;
  long sum0 = (long)n * (n - 1) / 2;
  double t0 = now_s();
  while (!ok && now_s() - t0 < 30) {
    CHECK_OK(fold_progress(c), c);
    ok = rb[big - 1] == (uint8_t)((big - 1) * 7 + (size_t)from) && rb[0] == (uint8_t)from;
    for (int i = 0; i < 64 && ok; i++) ok = aout[i] == sum0 + (long)n * i;
  }
  CHECK(ok, "rank %d: fold_progress did not complete the transfers in 30 s", me);
  CHECK_RC(fold_progress(NULL), FOLD_EINVAL, NULL);
  fold_status st;
  CHECK_OK(fold_wait_status(rr, &st), c);
  CHECK(st.source == from && st.count == big, "rank %d: status (%d, %zu)", me, st.source, st.count);
  CHECK_OK(fold_wait(sr), c);
  CHECK_OK(fold_wait_status(ar, &st), c);
  CHECK(st.source == FOLD_ANY_SOURCE && st.tag == FOLD_ANY_TAG && st.count == 0,
        "rank %d: collective status (%d, %d, %zu)", me, st.source, st.tag, st.count);
  free(sb), free(rb);
  CHECK_OK(fold_barrier(c), c);
}

/* Rendezvous-size messages from every other rank to rank 0 by ANY_SOURCE:
 * two receives posted before the sends, the rest after (unexpected). */
static void big_any_source(fold_comm *c, size_t big) {
  int n = fold_comm_size(c), me = fold_comm_rank(c);
  if (n < 2) return;
  uint8_t *b = malloc(big + 1);
  fold_request *pre[2] = {0};
  uint8_t *pb[2] = {0};
  int npre = me == 0 ? (n - 1 < 2 ? n - 1 : 2) : 0;
  for (int i = 0; i < npre; i++) {
    pb[i] = malloc(big);
    CHECK_OK(fold_irecv(pb[i], big, FOLD_UINT8, FOLD_ANY_SOURCE, FOLD_ANY_TAG, c, &pre[i]), c);
  }
  CHECK_OK(fold_barrier(c), c);
  if (me != 0) {
    for (size_t i = 0; i < big; i++) b[i] = (uint8_t)(i * 13 + (size_t)me * 5);
    CHECK_OK(fold_send(b, big, FOLD_UINT8, 0, T_BIG + me, c), c);
  } else {
    uint8_t *seen = calloc((size_t)n, 1);
    for (int k = 0; k < n - 1; k++) {
      fold_status st = {-7, -7, 0};
      uint8_t *buf = k < npre ? pb[k] : b;
      if (k < npre) CHECK_OK(fold_wait_status(pre[k], &st), c);
      else CHECK_OK(fold_recv_status(b, big + 1, FOLD_UINT8, FOLD_ANY_SOURCE, FOLD_ANY_TAG, c, &st), c);
      CHECK(st.source > 0 && st.source < n && st.tag == T_BIG + st.source && st.count == big,
            "big any-source receive %d: status (%d, %d, %zu)", k, st.source, st.tag, st.count);
      if (st.source <= 0 || st.source >= n) continue;
      CHECK(!seen[st.source], "rank %d's big message received twice", st.source);
      seen[st.source] = 1;
      size_t bad = SIZE_MAX;
      for (size_t i = 0; i < big && bad == SIZE_MAX; i++)
        if (buf[i] != (uint8_t)(i * 13 + (size_t)st.source * 5)) bad = i;
      CHECK(bad == SIZE_MAX, "big message from %d wrong at byte %zu", st.source, bad);
    }
    free(seen);
  }
  for (int i = 0; i < npre; i++) free(pb[i]);
  free(b);
  CHECK_OK(fold_barrier(c), c);
}

/* Wildcards are for receives only; statuses may be NULL everywhere. */
static void bad_and_null(fold_comm *c) {
  int me = fold_comm_rank(c), v = 1, w = 0, done = 0;
  fold_request *r;
  CHECK_RC(fold_send(&v, 1, FOLD_INT32, FOLD_ANY_SOURCE, 0, c), FOLD_EINVAL, c);
  CHECK_RC(fold_send(&v, 1, FOLD_INT32, me, FOLD_ANY_TAG, c), FOLD_EINVAL, c);
  CHECK_RC(fold_isend(&v, 1, FOLD_INT32, FOLD_ANY_SOURCE, 0, c, &r), FOLD_EINVAL, c);
  CHECK_RC(fold_irecv(&v, 1, FOLD_INT32, me, -2, c, &r), FOLD_EINVAL, c);
  CHECK_RC(fold_recv_status(&v, 1, FOLD_INT32, -2, 0, c, NULL), FOLD_EINVAL, c);
  CHECK_RC(fold_recv_status(&v, 1, FOLD_INT32, fold_comm_size(c), 0, c, NULL), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "peer") != NULL, "message: %s", fold_comm_last_error(c));
  CHECK_RC(fold_test_status(NULL, &done, NULL), FOLD_EINVAL, NULL);
  CHECK_RC(fold_wait_status(NULL, NULL), FOLD_EINVAL, NULL);
  /* to self with wildcards and NULL statuses */
  CHECK_OK(fold_irecv(&w, 1, FOLD_INT32, FOLD_ANY_SOURCE, FOLD_ANY_TAG, c, &r), c);
  CHECK_OK(fold_send(&v, 1, FOLD_INT32, me, T_SELF, c), c);
  double t0 = now_s();
  while (!done && now_s() - t0 < 10) CHECK_OK(fold_test_status(r, &done, NULL), c);
  CHECK(done && w == 1, "rank %d: self message by wildcard: done %d, got %d", me, done, w);
  CHECK_OK(fold_send(&v, 1, FOLD_INT32, me, T_SELF, c), c);
  CHECK_OK(fold_irecv(&w, 1, FOLD_INT32, me, FOLD_ANY_TAG, c, &r), c);
  CHECK_OK(fold_wait_status(r, NULL), c);
  CHECK_OK(fold_barrier(c), c);
}

int p2p_wild_run(fold_comm *c, size_t big) {
  int before = atomic_load(&check_failures);
  CHECK_OK(fold_barrier(c), c);
  bad_and_null(c);
  many_senders(c);
  posted_order(c);
  probe(c);
  progress_only(c, big);
  big_any_source(c, big);
  return atomic_load(&check_failures) - before;
}
