/* p2p_suite.c — point-to-point matrix: sizes, every pair, ordering, bad arguments. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fold.h"
#include "p2p/p2p_suite.h"

/* Byte i of a message from src to dst with tag: a pattern that differs per
 * pair, tag and position, so misdelivery and misplacement are both caught. */
static uint8_t pat(int src, int dst, int tag, size_t i) {
  return (uint8_t)((i * 131u) ^ (i >> 8) ^ (unsigned)(src * 7 + dst * 13 + tag * 29));
}

static void fill(uint8_t *b, size_t n, int src, int dst, int tag) {
  for (size_t i = 0; i < n; i++) b[i] = pat(src, dst, tag, i);
}

static size_t first_bad(const uint8_t *b, size_t n, int src, int dst, int tag) {
  for (size_t i = 0; i < n; i++)
    if (b[i] != pat(src, dst, tag, i)) return i;
  return SIZE_MAX;
}

/* Every rank sends one message of `bytes` to every rank (itself included)
 * and receives one from every rank, all outstanding at once. */
static void all_pairs(fold_comm *c, size_t bytes, int tag) {
  int n = fold_comm_size(c), me = fold_comm_rank(c);
  uint8_t **sb = calloc((size_t)n, sizeof *sb), **rb = calloc((size_t)n, sizeof *rb);
  fold_request **rq = calloc((size_t)(2 * n), sizeof *rq);
  for (int p = 0; p < n; p++) {
    sb[p] = malloc(bytes ? bytes : 1);
    rb[p] = malloc(bytes + 16);
    fill(sb[p], bytes, me, p, tag);
    memset(rb[p], 0xEE, bytes + 16);
  }
  for (int p = 0; p < n; p++)
    CHECK_OK(fold_irecv(rb[p], bytes, FOLD_UINT8, p, tag, c, &rq[p]), c);
  for (int k = 0; k < n; k++) { /* staggered order: rank me starts with me+1 */
    int p = (me + 1 + k) % n;
    CHECK_OK(fold_isend(sb[p], bytes, FOLD_UINT8, p, tag, c, &rq[n + p]), c);
  }
  for (int i = 0; i < 2 * n; i++)
    if (rq[i]) CHECK_OK(fold_wait(rq[i]), c);
  for (int p = 0; p < n; p++) {
    size_t bad = first_bad(rb[p], bytes, p, me, tag);
    CHECK(bad == SIZE_MAX, "rank %d: %zu-byte message from %d wrong at byte %zu", me, bytes, p, bad);
    CHECK(rb[p][bytes] == 0xEE, "rank %d: receive from %d wrote past the message", me, p);
    free(sb[p]);
    free(rb[p]);
  }
  free(sb);
  free(rb);
  free(rq);
}

/* Many outstanding messages of mixed sizes with one tag arrive in order. */
static void ordering(fold_comm *c) {
  int n = fold_comm_size(c), me = fold_comm_rank(c);
  if (n < 2) return;
  enum { K = 64 };
  static const size_t sizes[] = {0, 1, 100, 4096, 70000, 300000};
  int to = (me + 1) % n, from = (me + n - 1) % n;
  uint8_t *sb[K], *rb[K];
  fold_request *rr[K], *sr[K];
  for (int k = 0; k < K; k++) {
    size_t b = sizes[k % 6];
    sb[k] = malloc(b + 1);
    rb[k] = malloc(b + 1);
    fill(sb[k], b, me, to, 1000 + k);
    CHECK_OK(fold_irecv(rb[k], b, FOLD_UINT8, from, 7, c, &rr[k]), c);
  }
  for (int k = 0; k < K; k++)
    CHECK_OK(fold_isend(sb[k], sizes[k % 6], FOLD_UINT8, to, 7, c, &sr[k]), c);
  for (int k = 0; k < K; k++) {
    CHECK_OK(fold_wait(rr[k]), c);
    size_t bad = first_bad(rb[k], sizes[k % 6], from, me, 1000 + k);
    CHECK(bad == SIZE_MAX, "rank %d: message %d of the ordered stream wrong at byte %zu", me, k, bad);
  }
  for (int k = 0; k < K; k++) {
    CHECK_OK(fold_wait(sr[k]), c);
    free(sb[k]);
    free(rb[k]);
  }
}

/* What the sender of a message longer than the receive buffer gets
 * (fold.h, point-to-point): over every real transport (tcp, shm, inproc,
 * or a mix: "*") a message over 64 KiB waits for the receiver's answer and
 * the refusal reaches the sender; eager messages never wait for one, nor
 * do simulated ones. */
static int oversized_send_status(fold_comm *c, size_t bytes) {
  int answered = strcmp(fold_comm_transport(c), "sim") != 0;
  return answered && bytes > 65536 ? FOLD_EMISMATCH : FOLD_OK;
}

/* Rank 1 receives a message of b bytes from rank 0 into b/2 bytes of a
 * b-byte buffer: FOLD_EMISMATCH, nothing written past the b/2 bytes. */
static void recv_too_small_check(fold_comm *c, fold_request *r, uint8_t *buf, size_t b) {
  CHECK_RC(fold_wait(r), FOLD_EMISMATCH, c);
  CHECK(strstr(fold_comm_last_error(c), "larger than the receive buffer") != NULL, "message: %s",
        fold_comm_last_error(c));
  size_t bad = SIZE_MAX;
  for (size_t i = b / 2; i < b && bad == SIZE_MAX; i++)
    if (buf[i] != 0x5A) bad = i;
  CHECK(bad == SIZE_MAX, "rank 1: oversized %zu-byte message wrote past the buffer at byte %zu", b, bad);
}

/* A message longer than the receive buffer: FOLD_EMISMATCH for the
 * receive, nothing written past the buffer, the sender gets what fold.h
 * says for its transport, and the communicator stays usable: the next
 * message on the same tag arrives whole. Both orders: the receive posted
 * before the message comes, and the message waiting (unexpected) when the
 * receive is posted. Sizes: eager, rendezvous, and larger than the default
 * shm ring (streamed in pieces). */
static void too_small(fold_comm *c) {
  int n = fold_comm_size(c), me = fold_comm_rank(c);
  if (n < 2 || me > 1) return;
  static const size_t sizes[] = {100, 200000, 3u << 20};
  for (int s = 0; s < 3; s++) {
    for (int unexpected = 0; unexpected < 2; unexpected++) {
      size_t b = sizes[s];
      int tag = 40 + 2 * s + unexpected, note = 0;
      uint8_t *buf = malloc(b);
      if (me == 0) {
        fill(buf, b, 0, 1, tag);
        int want = oversized_send_status(c, b);
        fold_request *r;
        if (!unexpected) {
          /* rank 1 has posted its receive once it tells us so */
          CHECK_OK(fold_recv(&note, 1, FOLD_INT32, 1, 39, c), c);
          CHECK_RC(fold_send(buf, b, FOLD_UINT8, 1, tag, c), want, c);
        } else {
          CHECK_OK(fold_isend(buf, b, FOLD_UINT8, 1, tag, c, &r), c);
          CHECK_OK(fold_send(&note, 1, FOLD_INT32, 1, 39, c), c); /* behind the big one */
          CHECK_RC(fold_wait(r), want, c);
        }
        if (want == FOLD_EMISMATCH) {
          const char *m = fold_comm_last_error(c);
          CHECK(strstr(m, "larger than the receive buffer") && strstr(m, "rank 1"), "sender's message: %s", m);
        }
        /* usable: the next message on the same tag arrives whole */
        CHECK_OK(fold_send(buf, b, FOLD_UINT8, 1, tag, c), c);
      } else {
        memset(buf, 0x5A, b);
        fold_request *r;
        if (!unexpected) {
          CHECK_OK(fold_irecv(buf, b / 2, FOLD_UINT8, 0, tag, c, &r), c);
          CHECK_OK(fold_send(&note, 1, FOLD_INT32, 0, 39, c), c);
        } else {
          CHECK_OK(fold_recv(&note, 1, FOLD_INT32, 0, 39, c), c); /* the big one came first */
          CHECK_OK(fold_irecv(buf, b / 2, FOLD_UINT8, 0, tag, c, &r), c);
        }
        recv_too_small_check(c, r, buf, b);
        memset(buf, 0, b);
        CHECK_OK(fold_recv(buf, b, FOLD_UINT8, 0, tag, c), c);
        size_t bad = first_bad(buf, b, 0, 1, tag);
        CHECK(bad == SIZE_MAX, "rank 1: %zu-byte message after a mismatch wrong at byte %zu", b, bad);
      }
      free(buf);
    }
  }
}

/* Wrong arguments are FOLD_EINVAL with a message and never reach a peer. */
static void bad_args(fold_comm *c) {
  int n = fold_comm_size(c), x = 0;
  fold_request *r = (fold_request *)&x;
  CHECK_RC(fold_send(NULL, 1, FOLD_INT32, 0, 0, c), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "NULL") != NULL, "message: %s", fold_comm_last_error(c));
  CHECK_RC(fold_recv(NULL, 4, FOLD_INT32, 0, 0, c), FOLD_EINVAL, c);
  CHECK_RC(fold_send(&x, 1, FOLD_INT32, n, 0, c), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "not a rank") != NULL, "message: %s", fold_comm_last_error(c));
  CHECK_RC(fold_send(&x, 1, FOLD_INT32, -1, 0, c), FOLD_EINVAL, c);
  CHECK_RC(fold_send(&x, 1, (fold_dtype)99, 0, 0, c), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "dtype") != NULL, "message: %s", fold_comm_last_error(c));
  CHECK_RC(fold_send(&x, 1, FOLD_INT32, 0, -5, c), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "negative") != NULL, "message: %s", fold_comm_last_error(c));
  CHECK_RC(fold_isend(&x, 1, FOLD_INT32, 0, 0, c, NULL), FOLD_EINVAL, c);
  CHECK_RC(fold_irecv(&x, 1, FOLD_INT32, n + 3, 0, c, &r), FOLD_EINVAL, c);
  CHECK(r == NULL, "failed irecv left *req set");
  CHECK_RC(fold_send(&x, SIZE_MAX / 2, FOLD_INT64, 0, 0, c), FOLD_EINVAL, c);
  CHECK_RC(fold_wait(NULL), FOLD_EINVAL, c);
  CHECK_RC(fold_test(NULL, NULL), FOLD_EINVAL, c);
  CHECK(fold_comm_rank(NULL) == FOLD_EINVAL && fold_comm_size(NULL) == FOLD_EINVAL, "NULL accessors");
  CHECK(fold_send(&x, 0, FOLD_INT32, 0, 0, NULL) == FOLD_EINVAL, "NULL comm");
  /* zero-length with a NULL buffer is fine: send to self and receive */
  fold_request *s;
  CHECK_OK(fold_isend(NULL, 0, FOLD_INT32, fold_comm_rank(c), 3, c, &s), c);
  CHECK_OK(fold_recv(NULL, 0, FOLD_INT32, fold_comm_rank(c), 3, c), c);
  CHECK_OK(fold_wait(s), c);
}

/* fold_test polls to completion. */
static void test_polling(fold_comm *c) {
  int n = fold_comm_size(c), me = fold_comm_rank(c);
  int to = (me + 1) % n, from = (me + n - 1) % n, in = -1, out = me;
  fold_request *r, *s;
  CHECK_OK(fold_irecv(&in, 1, FOLD_INT32, from, 9, c, &r), c);
  CHECK_OK(fold_isend(&out, 1, FOLD_INT32, to, 9, c, &s), c);
  int done = 0, spins = 0;
  while (!done && spins++ < 50000000) CHECK_OK(fold_test(r, &done), c);
  CHECK(done && in == from, "rank %d: fold_test loop got %d from %d", me, in, from);
  CHECK_OK(fold_wait(s), c);
}

int p2p_suite_run(fold_comm *c, size_t big_mib) {
  int before = atomic_load(&check_failures);
  const size_t sizes[] = {0, 1, 4096, 65536, 65537, 1 << 20, big_mib << 20};
  bad_args(c);
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    all_pairs(c, sizes[i], 100 + (int)i);
  ordering(c);
  too_small(c);
  test_polling(c);
  p2p_wild_run(c, 256 << 10);
  return atomic_load(&check_failures) - before;
}

int p2p_suite_huge(fold_comm *c, size_t bytes) {
  int before = atomic_load(&check_failures), me = fold_comm_rank(c);
  if (me > 1) return 0;
  uint8_t *b = malloc(bytes);
  CHECK(b != NULL, "cannot allocate %zu bytes", bytes);
  if (!b) return 1;
  /* a cheap pattern over the whole buffer, checked at every 4 KiB page */
  if (me == 0) {
    for (size_t i = 0; i < bytes; i += 4096) memcpy(b + i, &i, sizeof i < bytes - i ? sizeof i : bytes - i);
    b[bytes - 1] = 0x77;
    CHECK_OK(fold_send(b, bytes, FOLD_UINT8, 1, 77, c), c);
  } else {
    memset(b, 0, bytes);
    CHECK_OK(fold_recv(b, bytes, FOLD_UINT8, 0, 77, c), c);
    size_t bad = SIZE_MAX;
    for (size_t i = 0; i + sizeof i <= bytes && bad == SIZE_MAX; i += 4096) {
      size_t v;
      memcpy(&v, b + i, sizeof v);
      if (v != i) bad = i;
    }
    CHECK(bad == SIZE_MAX && b[bytes - 1] == 0x77, "huge message of %zu bytes wrong at %zu", bytes, bad);
  }
  free(b);
  return atomic_load(&check_failures) - before;
}
