/* mixed_wait.c — a job that mixes shm and tcp (FOLD_TEST_HOSTS=2: ranks {0,1} and {2,3} are two
 * "hosts"): ping-pong across the tcp pair and the shm pair with specific and wildcard receives,
 * and a wildcard receive that either transport may answer; prints the one-way latencies.
 *
 * Why: a rank with two transports sleeps in one epoll over both (engine/progress.c); before,
 * each transport got a 1 ms turn, so a wait answered over the other one reacted ~1 ms late. The
 * test checks every message and the mix itself; the latencies are printed, not asserted (the
 * machine is shared), see docs/performance.md for the measured figures.
 *
 * Usage: FOLD_TEST_HOSTS=2 foldrun -n 4 mixed_wait [round_trips] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fold.h"


static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sleep a little before answering, so that the waiter has left its spin
 * and sleeps: that is the wake-up this test is about. */
static void pause_us(int us) {
  struct timespec ts = {0, (long)us * 1000};
  nanosleep(&ts, NULL);
}

/* n round trips between me and peer; `wild`: the initiator receives from
 * FOLD_ANY_SOURCE/FOLD_ANY_TAG. The answering side pauses `delay_us` first.
 * Returns the mean one-way latency in us (on the initiator), less half the pause. */
static double pingpong(fold_comm *c, int me, int init, int peer, int n, int wild, int delay_us) {
  double t0 = now_s();
  for (int i = 0; i < n; i++) {
    int64_t v = (int64_t)i * 7 + me, got = -1;
    if (me == init) {
      CHECK_OK(fold_send(&v, 1, FOLD_INT64, peer, 5, c), c);
      fold_status st = {-2, -2, 0};
      CHECK_OK(fold_recv_status(&got, 1, FOLD_INT64, wild ? FOLD_ANY_SOURCE : peer, wild ? FOLD_ANY_TAG : 6, c, &st),
               c);
      CHECK(got == (int64_t)i * 7 + peer, "rank %d: round %d: got %lld from rank %d", me, i, (long long)got, peer);
      CHECK(st.source == peer && st.tag == 6, "rank %d: status source %d tag %d", me, st.source, st.tag);
    } else {
      CHECK_OK(fold_recv(&got, 1, FOLD_INT64, init, 5, c), c);
      CHECK(got == (int64_t)i * 7 + init, "rank %d: round %d: got %lld", me, i, (long long)got);
      if (delay_us)
        pause_us(delay_us);
      CHECK_OK(fold_send(&v, 1, FOLD_INT64, init, 6, c), c);
    }
  }
  return (now_s() - t0) / n / 2 * 1e6 - delay_us / 2.0;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 300;
  fold_comm *c = NULL;
  int rc = fold_init(&c);
  if (rc) {
    fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
    return 1;
  }
  int me = fold_comm_rank(c), size = fold_comm_size(c);
  CHECK(size == 4, "needs 4 ranks, got %d", size);
  /* the mix this test is about: two ranks per "host", tcp between hosts */
  CHECK(fold_comm_local_size(c) == 2, "rank %d: local size %d (is FOLD_TEST_HOSTS=2 set?)", me,
        fold_comm_local_size(c));
  CHECK(strcmp(fold_comm_transport(c), "tcp") == 0, "rank %d: transport %s", me, fold_comm_transport(c));
  if (size != 4 || check_failures) {
    fold_comm_destroy(c);
    return check_report("mixed_wait");
  }
  struct {
    const char *name;
    int a, b, wild, delay;
  } runs[] = {
      {"tcp 0<->2 specific", 0, 2, 0, 0},   {"tcp 0<->2 wildcard", 0, 2, 1, 0},
      {"shm 0<->1 specific", 0, 1, 0, 0},   {"shm 0<->1 wildcard", 0, 1, 1, 0},
      {"tcp 0<->2 asleep", 0, 2, 0, 300},   {"shm 0<->1 asleep", 0, 1, 0, 300},
      {"tcp 1<->3 wildcard", 1, 3, 1, 0},
  };
  for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
    CHECK_OK(fold_barrier(c), c);
    int rounds = runs[k].delay ? n / 4 + 1 : n;
    if (me == runs[k].a || me == runs[k].b) {
      double us = pingpong(c, me, runs[k].a, me == runs[k].a ? runs[k].b : runs[k].a, rounds, runs[k].wild,
                           runs[k].delay);
      if (me == runs[k].a)
        printf("mixed_wait: %-20s one-way %.1f us%s\n", runs[k].name, us,
               runs[k].delay ? " (beyond the answer's 300 us pause)" : "");
    }
  }
  /* Rank 0 takes a wildcard message that either host may send: ranks 1
   * (shm) and 2 (tcp) take turns, each after a pause. */
  CHECK_OK(fold_barrier(c), c);
  for (int i = 0; i < 20; i++) {
    int from = i % 2 ? 2 : 1;
    int64_t v = 1000 + i, got = -1;
    if (me == 0) { /* "go" to the sender of this round, then wait for anyone */
      fold_status st;
      CHECK_OK(fold_send(&v, 1, FOLD_INT64, from, 9, c), c);
      CHECK_OK(fold_recv_status(&got, 1, FOLD_INT64, FOLD_ANY_SOURCE, FOLD_ANY_TAG, c, &st), c);
      CHECK(got == v && st.source == from, "round %d: got %lld from %d, wanted %lld from %d", i, (long long)got,
            st.source, (long long)v, from);
    } else if (me == from) {
      CHECK_OK(fold_recv(&got, 1, FOLD_INT64, 0, 9, c), c);
      CHECK(got == v, "rank %d: go %lld", me, (long long)got);
      pause_us(200);
      CHECK_OK(fold_send(&v, 1, FOLD_INT64, 0, 8, c), c);
    }
  }
  CHECK_OK(fold_barrier(c), c);
  fold_comm_destroy(c);
  return check_report("mixed_wait");
}
