/* shm_mp_test.c — point-to-point over the shm transport between real
 * processes: sizes, every pair, ordering, unexpected messages, too-small
 * receives, killed and departed peers, latency. Usage: shm_mp_test SCENARIO [N]. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "fold.h"
#include "shm/shm_harness.h"
#include "transport/shm/shm_ring.h"
#include "transport/shm/shm_seg.h"

/* ---- payload patterns: depend on the message identity and the position ---- */

static uint64_t word_at(uint64_t seed, uint64_t i) {
  return seed * 0x9e3779b97f4a7c15ull + i * 0xd1b54a32d192ed03ull + (i >> 17);
}

static void fill(void *buf, size_t bytes, uint64_t seed) {
  uint64_t w;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    w = word_at(seed, i / 8);
    memcpy((char *)buf + i, &w, 8);
  }
  w = word_at(seed, i / 8);
  memcpy((char *)buf + i, &w, bytes - i);
}

/* Offset of the first wrong byte, or SIZE_MAX if buf holds the pattern. */
static size_t verify(const void *buf, size_t bytes, uint64_t seed) {
  uint64_t w;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    w = word_at(seed, i / 8);
    if (memcmp((const char *)buf + i, &w, 8) != 0)
      return i;
  }
  w = word_at(seed, i / 8);
  return memcmp((const char *)buf + i, &w, bytes - i) == 0 ? SIZE_MAX : i;
}

static uint64_t seed_of(int src, int dst, size_t bytes, int round) {
  return ((uint64_t)src << 48) ^ ((uint64_t)dst << 40) ^ ((uint64_t)round << 36) ^ bytes;
}

static int wait_all(fold_request **reqs, int n, fold_comm *c) {
  int bad = 0;
  for (int i = 0; i < n; i++) {
    int rc = fold_wait(reqs[i]);
    if (rc != FOLD_OK) {
      fprintf(stderr, "rank %d: request %d: %s (%s)\n", fold_comm_rank(c), i, fold_strerror(rc),
              fold_comm_last_error(c));
      bad++;
    }
  }
  return bad;
}

/* ---- sizes: every ordered pair, 0 B .. 64 MiB, pre-posted and late ---- */

static const size_t kSizes[] = {0, 1, 4096, 1u << 20, 64u << 20};

static int sizes_body(fold_comm *c, void *arg) {
  int me = fold_comm_rank(c), n = fold_comm_size(c);
  size_t big = kSizes[sizeof kSizes / sizeof *kSizes - 1];
  char *sbuf = malloc(big + 1);
  char **rbuf = calloc((size_t)n, sizeof *rbuf);
  fold_request **reqs = calloc(2 * (size_t)n, sizeof *reqs);
  for (int p = 0; p < n; p++)
    rbuf[p] = malloc(big + 1);
  for (size_t s = 0; s < sizeof kSizes / sizeof *kSizes; s++) {
    size_t bytes = kSizes[s];
    for (int round = 0; round < 2; round++) {
      int nr = 0;
      /* round 0: receives posted before the sends; round 1: every rank
       * starts its sends first and then receives one peer at a time, so the
       * other peers' messages (large ones too) arrive unexpected meanwhile
       * (a send over 64 KiB completes only once received: waited last). */
      if (round == 0)
        for (int p = 0; p < n; p++)
          if (p != me)
            CHECK_OK(fold_irecv(rbuf[p], bytes, FOLD_UINT8, p, (int)s, c, &reqs[nr++]), c);
      /* One pattern per sender and round (filling per destination would
       * double the run time under TSan for no extra coverage: every pair
       * has its own ring). */
      fill(sbuf, bytes, seed_of(me, 0, bytes, round));
      for (int p = 0; p < n; p++) {
        if (p == me)
          continue;
        fold_request *sr;
        CHECK_OK(fold_isend(sbuf, bytes, FOLD_UINT8, p, (int)s, c, &sr), c);
        if (round == 0)
          CHECK_OK(fold_wait(sr), c);
        else
          reqs[nr++] = sr;
      }
      if (round == 1)
        for (int k = 1; k < n; k++) {
          int p = (me + n - k) % n; /* the reverse of the send order */
          CHECK_OK(fold_recv(rbuf[p], bytes, FOLD_UINT8, p, (int)s, c), c);
        }
      CHECK(wait_all(reqs, nr, c) == 0, "size %zu round %d", bytes, round);
      for (int p = 0; p < n; p++) {
        if (p == me)
          continue;
        size_t at = verify(rbuf[p], bytes, seed_of(p, 0, bytes, round));
        CHECK(at == SIZE_MAX, "rank %d: %zu bytes from rank %d (round %d) wrong at byte %zu", me, bytes, p, round,
              at);
      }
    }
  }
  for (int p = 0; p < n; p++)
    free(rbuf[p]);
  free(rbuf);
  free(reqs);
  free(sbuf);
  (void)arg;
  return atomic_load(&check_failures);
}

/* Sends in isend/wait pairs above would serialise the pairs; a rank that
 * sends to everyone before receiving relies on the transport buffering
 * unexpected messages of any size, which is the point of round 1. */

/* ---- order: many outstanding requests, two tags, mixed sizes ---- */

#define ORDER_MSGS 600

static size_t order_size(int i) { return i % 50 == 7 ? (200u << 10) + (size_t)i : (size_t)(i * 37) % 3000; }

static int order_body(fold_comm *c, void *arg) {
  int me = fold_comm_rank(c), n = fold_comm_size(c);
  int total = (n - 1) * ORDER_MSGS;
  fold_request **sreq = calloc((size_t)total, sizeof *sreq), **rreq = calloc((size_t)total, sizeof *rreq);
  char **sbuf = calloc((size_t)total, sizeof *sbuf), **rbuf = calloc((size_t)total, sizeof *rbuf);
  int ns = 0, nr = 0;
  /* First half of the receives pre-posted, sends all started (most do not
   * complete at once), the second half posted after the first completed. */
  for (int half = 0; half < 2; half++) {
    int lo = half ? ORDER_MSGS / 2 : 0, hi = half ? ORDER_MSGS : ORDER_MSGS / 2;
    int first = nr;
    for (int p = 0; p < n; p++) {
      if (p == me)
        continue;
      for (int i = lo; i < hi; i++) {
        rbuf[nr] = malloc(order_size(i) + 1);
        CHECK_OK(fold_irecv(rbuf[nr], order_size(i), FOLD_UINT8, p, 5 + i % 2, c, &rreq[nr]), c);
        nr++;
      }
    }
    if (half == 0)
      for (int p = 0; p < n; p++) {
        if (p == me)
          continue;
        for (int i = 0; i < ORDER_MSGS; i++) {
          sbuf[ns] = malloc(order_size(i) + 1);
          fill(sbuf[ns], order_size(i), seed_of(me, p, order_size(i), i));
          CHECK_OK(fold_isend(sbuf[ns], order_size(i), FOLD_UINT8, p, 5 + i % 2, c, &sreq[ns]), c);
          ns++;
        }
      }
    CHECK(wait_all(rreq + first, nr - first, c) == 0, "receives of half %d", half);
    int k = first;
    for (int p = 0; p < n; p++) {
      if (p == me)
        continue;
      for (int i = lo; i < hi; i++, k++) {
        size_t at = verify(rbuf[k], order_size(i), seed_of(p, me, order_size(i), i));
        CHECK(at == SIZE_MAX, "rank %d: message %d from rank %d out of order or wrong (byte %zu)", me, i, p, at);
      }
    }
  }
  CHECK(wait_all(sreq, ns, c) == 0, "sends");
  for (int i = 0; i < total; i++) {
    free(sbuf[i]);
    free(rbuf[i]);
  }
  free(sbuf);
  free(rbuf);
  free(sreq);
  free(rreq);
  (void)arg;
  return atomic_load(&check_failures);
}

/* ---- unexpected: a large message overtaken by a later tag; and a receive
 * posted while a large unexpected message is still streaming in ---- */

static int unexpected_body(fold_comm *c, void *arg) {
  int me = fold_comm_rank(c);
  const size_t big = 48u << 20;
  char *buf = malloc(big), *small = malloc(64);
  if (me == 0) {
    fill(buf, big, 1);
    fill(small, 64, 2);
    fold_request *a, *b;
    CHECK_OK(fold_isend(buf, big, FOLD_UINT8, 1, 1, c, &a), c);
    CHECK_OK(fold_isend(small, 64, FOLD_UINT8, 1, 2, c, &b), c);
    CHECK_OK(fold_wait(a), c);
    CHECK_OK(fold_wait(b), c);
    /* second pass: the same, for the receive posted mid-stream */
    fill(buf, big, 3);
    CHECK_OK(fold_send(buf, big, FOLD_UINT8, 1, 3, c), c);
    CHECK_OK(fold_send(small, 64, FOLD_UINT8, 1, 4, c), c);
  } else {
    /* Tag 2 is sent after tag 1 but received first: the transport must not
     * stall the stream behind the 48 MiB message. */
    CHECK_OK(fold_recv(small, 64, FOLD_UINT8, 0, 2, c), c);
    CHECK(verify(small, 64, 2) == SIZE_MAX, "small message wrong");
    CHECK_OK(fold_recv(buf, big, FOLD_UINT8, 0, 1, c), c);
    CHECK(verify(buf, big, 1) == SIZE_MAX, "unexpected large message wrong");
    memset(buf, 0, big);
    fold_request *s, *l;
    CHECK_OK(fold_irecv(small, 64, FOLD_UINT8, 0, 4, c, &s), c);
    int done = 0;
    double until = shm_now() + 0.002;
    while (!done && shm_now() < until) /* drive progress: part of tag 3 arrives unexpected */
      CHECK_OK(fold_test(s, &done), c);
    CHECK(!done, "tag 4 cannot complete before tag 3 streamed through");
    CHECK_OK(fold_irecv(buf, big, FOLD_UINT8, 0, 3, c, &l), c);
    CHECK_OK(fold_wait(l), c);
    if (!done) /* fold_test freed it otherwise */
      CHECK_OK(fold_wait(s), c);
    CHECK(verify(buf, big, 3) == SIZE_MAX, "large message received mid-stream wrong");
  }
  free(buf);
  free(small);
  (void)arg;
  return atomic_load(&check_failures);
}

/* ---- mismatch: receives too small, matched and unexpected ---- */

static int guard_ok(const unsigned char *b, size_t from, size_t to) {
  for (size_t i = from; i < to; i++)
    if (b[i] != 0xA5)
      return 0;
  return 1;
}

static int mismatch_body(fold_comm *c, void *arg) {
  int me = fold_comm_rank(c);
  size_t big = 1u << 20;
  unsigned char *buf = malloc(big), *rb = malloc(2048);
  if (me == 0) {
    CHECK_OK(shm_barrier(c), c);
    fill(buf, big, 9);
    CHECK_OK(fold_send(buf, 1000, FOLD_UINT8, 1, 1, c), c);  /* into a 100-byte receive (posted) */
    CHECK_OK(fold_send(buf, 10, FOLD_UINT8, 1, 2, c), c);
    /* 1 MiB into 1000 bytes (posted): the receiver's refusal fails the send */
    CHECK_RC(fold_send(buf, big, FOLD_UINT8, 1, 5, c), FOLD_EMISMATCH, c);
    CHECK(strstr(fold_comm_last_error(c), "to rank 1") && strstr(fold_comm_last_error(c), "larger than the receive buffer"),
          "sender's message: %s", fold_comm_last_error(c));
    CHECK_OK(fold_send(buf, 3000, FOLD_UINT8, 1, 3, c), c);  /* unexpected, then too small */
    CHECK_OK(fold_send(buf, 8, FOLD_UINT8, 1, 4, c), c);
    CHECK_OK(fold_recv(buf, 8, FOLD_UINT8, 1, 6, c), c);     /* the communicator still works */
  } else {
    fold_request *r1, *r5;
    memset(rb, 0xA5, 2048);
    CHECK_OK(fold_irecv(rb, 100, FOLD_UINT8, 0, 1, c, &r1), c);
    CHECK_OK(fold_irecv(rb + 1024, 1000, FOLD_UINT8, 0, 5, c, &r5), c);
    CHECK_OK(shm_barrier(c), c);
    CHECK_RC(fold_wait(r1), FOLD_EMISMATCH, c);
    CHECK(strstr(fold_comm_last_error(c), "from rank 0") != NULL, "message: %s", fold_comm_last_error(c));
    CHECK(guard_ok(rb, 0, 1024), "a too-small receive was written to");
    CHECK_OK(fold_recv(rb, 10, FOLD_UINT8, 0, 2, c), c);
    CHECK(verify(rb, 10, 9) == SIZE_MAX, "message after the mismatch wrong");
    CHECK_RC(fold_wait(r5), FOLD_EMISMATCH, c);
    CHECK(guard_ok(rb, 1024, 2048), "a too-small receive of a large message was written to");
    memset(rb, 0xA5, 2048);
    CHECK_OK(fold_recv(rb, 8, FOLD_UINT8, 0, 4, c), c); /* tag 3 arrives unexpected meanwhile */
    CHECK(verify(rb, 8, 9) == SIZE_MAX, "message after the discarded 1 MiB wrong");
    memset(rb, 0xA5, 2048);
    CHECK_RC(fold_recv(rb, 2000, FOLD_UINT8, 0, 3, c), FOLD_EMISMATCH, c);
    CHECK(guard_ok(rb, 0, 2048), "a too-small receive of an unexpected message was written to");
    CHECK_OK(fold_send(buf, 8, FOLD_UINT8, 0, 6, c), c);
  }
  free(buf);
  free(rb);
  (void)arg;
  return atomic_load(&check_failures);
}

/* ---- kill: the last rank is SIGKILLed; its dependents see FOLD_EPEER ---- */

static int kill_body(fold_comm *c, void *arg) {
  int me = fold_comm_rank(c), n = fold_comm_size(c), victim = n - 1;
  CHECK_OK(shm_barrier(c), c);
  if (me == victim)
    kill(getpid(), SIGKILL);
  size_t big = 64u << 20;
  char *buf = calloc(1, big);
  double t0 = shm_now();
  int rc;
  if (me == 0) /* a send larger than the ring: blocked on the dead receiver */
    rc = fold_send(buf, big, FOLD_UINT8, victim, 1, c);
  else
    rc = fold_recv(buf, 8, FOLD_UINT8, victim, 1, c);
  double dt = shm_now() - t0;
  CHECK(rc == FOLD_EPEER, "rank %d: got %s, wanted FOLD_EPEER", me, fold_strerror(rc));
  CHECK(dt < 5.0, "rank %d: loss noticed after %.2f s", me, dt);
  char want[64];
  snprintf(want, sizeof want, "peer rank %d", victim);
  const char *msg = fold_comm_last_error(c);
  CHECK(strstr(msg, want) && strstr(msg, "lost") && strstr(msg, "exited"),
        "rank %d: message does not name the lost rank: %s", me, fold_comm_last_error(c));
  printf("rank %d: %s after %.0f ms: %s\n", me, fold_strerror(rc), dt * 1e3, fold_comm_last_error(c));
  /* fail-stop: later operations fail at once */
  CHECK_RC(fold_send(buf, 1, FOLD_UINT8, (me + 1) % victim, 2, c), FOLD_EPEER, c);
  free(buf);
  (void)arg;
  return atomic_load(&check_failures);
}

/* ---- rcptkill: a user message over 64 KiB is whole in the ring, and its
 * receiver dies before posting a receive: the send, which waits for the
 * receiver's receipt, fails naming it (never FOLD_OK, never a hang) ---- */

static volatile int *rcpt_go; /* shared by the forked ranks: rank 0 has checked its send */

static int rcptkill_body(fold_comm *c, void *arg) {
  int me = fold_comm_rank(c), victim = 1;
  size_t big = 100u << 10; /* over the 64 KiB that are answered, inside the 256 KiB ring */
  char *buf = calloc(1, big);
  CHECK_OK(shm_barrier(c), c);
  if (me == victim) { /* no fold call from here: nothing is received or answered */
    for (int i = 0; i < 30000 && !*rcpt_go; i++)
      usleep(1000);
    kill(getpid(), SIGKILL);
  }
  fold_request *r;
  int done = 0;
  CHECK_OK(fold_isend(buf, big, FOLD_UINT8, victim, 1, c, &r), c);
  for (int i = 0; i < 16 && !done; i++)
    CHECK_OK(fold_test(r, &done), c);
  CHECK(!done, "a 100 KiB send completed before any receive was posted");
  *rcpt_go = 1;
  double t0 = shm_now();
  int rc = done ? FOLD_OK : fold_wait(r);
  CHECK(rc == FOLD_EPEER, "got %s, wanted FOLD_EPEER", fold_strerror(rc));
  CHECK(shm_now() - t0 < 5.0, "loss noticed after %.2f s", shm_now() - t0);
  const char *msg = fold_comm_last_error(c);
  CHECK(strstr(msg, "peer rank 1") && strstr(msg, "lost"), "message does not name the lost rank: %s", msg);
  printf("rank 0: %s after %.0f ms: %s\n", fold_strerror(rc), (shm_now() - t0) * 1e3, msg);
  free(buf);
  (void)arg;
  return atomic_load(&check_failures);
}

/* ---- earlykill: a rank dies before connecting (midkill: in the middle of a
 * message nobody receives yet); the others' traffic goes on, a receive
 * from the dead rank fails, and its segment is cleaned up ---- */

static int earlykill_body(fold_comm *c, void *arg) {
  int me = fold_comm_rank(c), other = 1 - me, dead = 2, midkill = arg != NULL;
  if (me == dead) { /* midkill: die while a 64 MiB message to rank 1 is half streamed */
    size_t big = 64u << 20;
    char *buf = calloc(1, big);
    fold_request *r;
    int done = 0;
    CHECK_OK(fold_isend(buf, big, FOLD_UINT8, 1, 1, c, &r), c);
    /* Stream what fits into the ring to rank 1. Rank 1 makes no fold call
     * (so reads nothing) until this process has exited, and the ring holds
     * far less than 64 MiB: the message is cut short here by construction.
     * A few turns fill the ring; more would only add idle turns, each a
     * sched_yield that a loaded host may make cost tens of ms. */
    for (int i = 0; i < 16 && !done; i++)
      CHECK_OK(fold_test(r, &done), c);
    CHECK(!done, "64 MiB passed through a ring nobody reads");
    kill(getpid(), SIGKILL);
  }
  if (me == 1 && midkill) /* the sender's death comes first */
    CHECK(shm_wait_exit(dead, 30.0) == 0, "rank %d did not die", dead);
  uint64_t v = 0;
  /* 20 exchanges over >= 100 ms: long enough for the loss to be noticed (the
   * count, not the clock, ends the loop: both sides must agree on it). */
  for (int i = 0; i < 20; i++) {
    usleep(5000);
    uint64_t x = (uint64_t)i * 1000 + (uint64_t)me;
    fold_request *s;
    CHECK_OK(fold_isend(&x, 1, FOLD_UINT64, other, 1, c, &s), c);
    CHECK_OK(fold_recv(&v, 1, FOLD_UINT64, other, 1, c), c);
    CHECK_OK(fold_wait(s), c);
    CHECK(v == (uint64_t)i * 1000 + (uint64_t)other, "exchange %d got %llu", i, (unsigned long long)v);
  }
  double t0 = shm_now();
  CHECK_RC(fold_recv(&v, 1, FOLD_UINT64, dead, 1, c), FOLD_EPEER, c);
  CHECK(shm_now() - t0 < 5.0, "loss noticed late");
  CHECK(strstr(fold_comm_last_error(c), "peer rank 2") && strstr(fold_comm_last_error(c), "lost"), "message: %s",
        fold_comm_last_error(c));
  return atomic_load(&check_failures);
}

/* ---- leave: a rank destroys its communicator (and lives on); the others
 * keep working with each other and get FOLD_EPEER only when they need it ---- */

static int leave_body(fold_comm *c, void *arg) {
  int me = fold_comm_rank(c);
  uint64_t v = 42;
  if (me == 2) {
    CHECK_OK(fold_send(&v, 1, FOLD_UINT64, 0, 9, c), c);
    fold_comm_destroy(c);
    sleep(2); /* alive: only the `gone` flags can tell the others */
    exit(atomic_load(&check_failures) ? 1 : 0);
  }
  int other = 1 - me;
  for (int i = 0; i < 20; i++) { /* >= 100 ms, as in earlykill */
    usleep(5000);
    fold_request *s;
    uint64_t x = (uint64_t)i;
    CHECK_OK(fold_isend(&x, 1, FOLD_UINT64, other, 1, c, &s), c);
    CHECK_OK(fold_recv(&v, 1, FOLD_UINT64, other, 1, c), c);
    CHECK_OK(fold_wait(s), c);
  }
  if (me == 0) { /* its last message is still delivered after it left */
    CHECK_OK(fold_recv(&v, 1, FOLD_UINT64, 2, 9, c), c);
    CHECK(v == 42, "message from the departed rank: %llu", (unsigned long long)v);
  }
  double t0 = shm_now();
  CHECK_RC(fold_recv(&v, 1, FOLD_UINT64, 2, 10, c), FOLD_EPEER, c);
  CHECK(shm_now() - t0 < 1.0, "departure noticed late (%.2f s)", shm_now() - t0);
  CHECK(strstr(fold_comm_last_error(c), "peer rank 2") && strstr(fold_comm_last_error(c), "destroyed"),
        "message: %s", fold_comm_last_error(c));
  (void)arg;
  return atomic_load(&check_failures);
}

/* ---- pingpong: pairs (0,1), (2,3), ... at once; prints the latency ---- */

static int pingpong_body(fold_comm *c, void *arg) {
  int me = fold_comm_rank(c), n = fold_comm_size(c);
  int iters = *(int *)arg;
  int peer = me ^ 1;
  CHECK_OK(shm_barrier(c), c);
  if (peer >= n)
    return atomic_load(&check_failures);
  uint64_t v = 0;
  double t0 = shm_now();
  for (int i = 0; i < iters; i++) {
    if (me & 1) {
      CHECK_OK(fold_recv(&v, 1, FOLD_UINT64, peer, 0, c), c);
      v++;
      CHECK_OK(fold_send(&v, 1, FOLD_UINT64, peer, 0, c), c);
    } else {
      uint64_t want = v + 1;
      CHECK_OK(fold_send(&v, 1, FOLD_UINT64, peer, 0, c), c);
      CHECK_OK(fold_recv(&v, 1, FOLD_UINT64, peer, 0, c), c);
      if (v != want) {
        CHECK(v == want, "pingpong value %llu, wanted %llu", (unsigned long long)v, (unsigned long long)want);
        break;
      }
    }
  }
  double dt = shm_now() - t0;
  if (!(me & 1))
    printf("pingpong ranks %d<->%d of %d (%ld cores): %.2f us per round trip (8 B)\n", me, peer, n,
           sysconf(_SC_NPROCESSORS_ONLN), dt / iters * 1e6);
  return atomic_load(&check_failures);
}

/* ---- bandwidth: rank 0 streams to rank 1; prints GB/s, checks the data ---- */

static int bandwidth_body(fold_comm *c, void *arg) {
  int me = fold_comm_rank(c);
  const size_t sizes[] = {64u << 10, 1u << 20, 64u << 20};
  char *buf = malloc(64u << 20);
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    size_t bytes = sizes[k];
    int reps = (int)((256u << 20) / bytes);
    fill(buf, bytes, bytes);
    CHECK_OK(shm_barrier(c), c);
    double t0 = shm_now();
    for (int i = 0; i < reps; i++) {
      if (me == 0)
        CHECK_OK(fold_send(buf, bytes, FOLD_UINT8, 1, 0, c), c);
      else if (me == 1)
        CHECK_OK(fold_recv(buf, bytes, FOLD_UINT8, 0, 0, c), c);
    }
    CHECK_OK(shm_barrier(c), c);
    double dt = shm_now() - t0;
    if (me == 1) {
      CHECK(verify(buf, bytes, bytes) == SIZE_MAX, "%zu-byte message wrong", bytes);
      printf("bandwidth rank 0 -> 1: %8zu B messages: %.2f GB/s\n", bytes, (double)bytes * reps / dt / 1e9);
    }
  }
  free(buf);
  (void)arg;
  return atomic_load(&check_failures);
}

/* ---- corrupt: rank 1 writes a hostile frame (arg 0: a 2 TiB length; arg 1:
 * a ring index beyond the ring) straight into rank 0's segment; rank 0
 * must fail cleanly, naming rank 1, without allocating or copying ---- */

static int corrupt_fd = -1;

/* Open rank 0's segment while its name still exists. */
static void corrupt_pre_join(fold_comm *c, const char *job, void *arg) {
  char name[128];
  snprintf(name, sizeof name, "/fold-%s-0", job);
  if (fold_comm_rank(c) == 1)
    corrupt_fd = shm_open(name, O_RDWR, 0);
  (void)arg;
}

static int corrupt_body(fold_comm *c, void *arg) {
  int me = fold_comm_rank(c), how = *(int *)arg;
  if (me == 1) {
    int fd = corrupt_fd;
    CHECK(fd >= 0, "open the segment of rank 0");
    if (fd < 0)
      return 1;
    fold__shm_hdr *h = mmap(NULL, FOLD__SHM_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    uint64_t ring = h->ring_bytes, stride = fold__shm_stride(ring);
    char *slot = mmap(NULL, stride, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(FOLD__SHM_PAGE + stride));
    close(fd);
    fold__ring_ctl *ctl = (fold__ring_ctl *)slot;
    uint64_t head = atomic_load(&ctl->head);
    if (how == 0) {
      uint32_t frame[6] = {0x47534d46u, 0, 1, 0, 0, 0};
      uint64_t len = 1ull << 41;
      memcpy(&frame[4], &len, 8);
      memcpy(slot + FOLD__RING_CTL_BYTES + (head & (ring - 1)), frame, sizeof frame);
      atomic_store(&ctl->head, head + sizeof frame);
    } else {
      atomic_store(&ctl->head, head + ring + 4096);
    }
    atomic_fetch_add(&h->bell, 1);
    munmap(slot, stride);
    munmap(h, FOLD__SHM_PAGE);
    /* Stay away from our own ring to rank 0 now (our next frame would
     * overwrite the forged one) and give rank 0 time to look. */
    usleep(300000);
  } else if (me == 0) {
    char buf[64];
    int rc = fold_recv(buf, sizeof buf, FOLD_UINT8, 1, 1, c);
    CHECK(rc == FOLD_EINTERNAL, "got %s", fold_strerror(rc));
    CHECK(strstr(fold_comm_last_error(c), "peer rank 1") && strstr(fold_comm_last_error(c), "corrupt"),
          "message: %s", fold_comm_last_error(c));
    printf("rank 0: %s\n", fold_comm_last_error(c));
  }
  return atomic_load(&check_failures);
}

/* ---- huge: one message over 2 GiB (sparse pattern: zero pages cost nothing) ---- */

static int huge_body(fold_comm *c, void *arg) {
  int me = fold_comm_rank(c);
  size_t bytes = (2ull << 30) + 12345;
  static const size_t marks[] = {0, 4095, 1u << 30, (2ull << 30) - 1, 2ull << 30, (2ull << 30) + 12344};
  char *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  CHECK(buf != MAP_FAILED, "mmap of %zu bytes", bytes);
  if (buf == MAP_FAILED)
    return 1;
  if (me == 0) {
    for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
      buf[marks[i]] = (char)(i + 1);
    CHECK_OK(fold_send(buf, bytes, FOLD_UINT8, 1, 1, c), c);
  } else {
    memset(buf + (1u << 30) - 64, 0x7f, 128); /* must become zero/marks again */
    CHECK_OK(fold_recv(buf, bytes, FOLD_UINT8, 0, 1, c), c);
    for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
      CHECK(buf[marks[i]] == (char)(i + 1), "mark %zu at %zu", i, marks[i]);
    CHECK(buf[(1u << 30) - 1] == 0 && buf[(1u << 30) + 1] == 0, "bytes around 1 GiB");
  }
  munmap(buf, bytes);
  (void)arg;
  return atomic_load(&check_failures);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s sizes|order|unexpected|mismatch|kill|earlykill|midkill|rcptkill|leave|pingpong|bandwidth|corrupt|huge [N [how]]\n", argv[0]);
    return 2;
  }
  setenv("FOLD_TIMEOUT", "30", 0); /* a hang becomes an error well within the test timeout */
  const char *s = argv[1];
  int n = argc > 2 ? atoi(argv[2]) : 2;
  int iters = 20000;
  int how = argc > 3 ? atoi(argv[3]) : 0;
  shm_run run = {n, s, NULL, NULL, -1, SHM_DIE_NEVER, -1, NULL};
  if (!strcmp(s, "sizes"))
    run.fn = sizes_body;
  else if (!strcmp(s, "order"))
    run.fn = order_body;
  else if (!strcmp(s, "unexpected"))
    run.fn = unexpected_body, run.n = 2;
  else if (!strcmp(s, "mismatch"))
    run.fn = mismatch_body, run.n = 2;
  else if (!strcmp(s, "kill"))
    run.fn = kill_body, run.expect_killed = n - 1;
  else if (!strcmp(s, "earlykill"))
    run.fn = earlykill_body, run.n = 3, run.die_rank = 2, run.die_stage = SHM_DIE_BEFORE_CONNECT,
    run.expect_killed = 2;
  else if (!strcmp(s, "midkill"))
    run.fn = earlykill_body, run.n = 3, run.expect_killed = 2, run.arg = &how; /* any arg: midkill */
  else if (!strcmp(s, "rcptkill")) {
    rcpt_go = mmap(NULL, sizeof *rcpt_go, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (rcpt_go == MAP_FAILED)
      return 2;
    run.fn = rcptkill_body, run.n = 2, run.expect_killed = 1;
  } else if (!strcmp(s, "leave"))
    run.fn = leave_body, run.n = 3;
  else if (!strcmp(s, "pingpong"))
    run.fn = pingpong_body, run.arg = &iters;
  else if (!strcmp(s, "bandwidth"))
    run.fn = bandwidth_body;
  else if (!strcmp(s, "corrupt"))
    run.fn = corrupt_body, run.arg = &how, run.n = 2, run.pre_join = corrupt_pre_join;
  else if (!strcmp(s, "huge"))
    run.fn = huge_body, run.n = 2;
  else {
    fprintf(stderr, "unknown scenario %s\n", s);
    return 2;
  }
  if (run.n < 2 || (run.fn == kill_body && run.n < 3)) {
    fprintf(stderr, "%s needs more ranks\n", s);
    return 2;
  }
  return shm_run_ranks(&run) ? 1 : 0;
}
