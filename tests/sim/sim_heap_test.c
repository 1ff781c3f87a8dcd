/* sim_heap_test.c — the simulator's events (core/heap.h ordered by fold__sim_ev_before) pop in (time, push order). */
#include <stdint.h>
#include <string.h>

#include "fold.h"
#include "sim/sim_check.h"
#include "transport/sim/sim.h"

/* Deterministic xorshift so that failures reproduce. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* The simulator's scheduling, on a heap of its own: t, kind, rank, ptr get
 * the next sequence number (as fold__sim_sched does). */
typedef struct {
  fold__heap heap;
  uint64_t next_seq;
} evq;

static void evq_init(evq *q) {
  fold__heap_init(&q->heap, sizeof(fold__sim_ev), fold__sim_ev_before);
  q->next_seq = 0;
}

static int evq_push(evq *q, double t, int kind, int rank, void *ptr) {
  fold__sim_ev ev = {.t = t, .seq = q->next_seq, .kind = kind, .rank = rank, .ptr = ptr};
  int rc = fold__heap_push(&q->heap, &ev);
  if (rc == FOLD_OK) q->next_seq++;
  return rc;
}

static void test_empty(void) {
  evq h;
  evq_init(&h);
  fold__sim_ev ev;
  CHECK(fold__heap_top(&h.heap) == NULL);
  CHECK(fold__heap_pop(&h.heap, &ev) == 0);
  fold__heap_fini(&h.heap);
}

/* Equal times pop in push order (the seq tie-breaker), whatever the layout. */
static void test_ties(void) {
  evq h;
  evq_init(&h);
  enum { N = 1000 };
  for (int i = 0; i < N; i++)
    CHECK(evq_push(&h, (i % 3) * 1.0, 0, i, NULL) == FOLD_OK);
  fold__sim_ev ev;
  int last_rank[3] = {-1, -1, -1};
  double last_t = -1;
  for (int i = 0; i < N; i++) {
    CHECK(fold__heap_pop(&h.heap, &ev) == 1);
    CHECK(ev.t >= last_t);
    int k = (int)ev.t;
    CHECK(ev.rank % 3 == k);
    CHECK(ev.rank > last_rank[k]);
    last_rank[k] = ev.rank;
    last_t = ev.t;
  }
  CHECK(fold__heap_pop(&h.heap, &ev) == 0);
  fold__heap_fini(&h.heap);
}

/* Interleaved pushes and pops against a brute-force reference: each pop must
 * return the (t, seq)-smallest of the events currently queued. */
static void test_random(void) {
  enum { CAP = 4096 };
  static fold__sim_ev ref[CAP];
  size_t nref = 0;
  evq h;
  evq_init(&h);
  uint64_t seq = 0;
  double now = 0; /* like the simulator: pushes are never in the past */
  for (int step = 0; step < 200000; step++) {
    int push = nref == 0 || (nref < CAP && rng() % 100 < 55);
    if (push) {
      double t = now + (double)(rng() % 16) * 0.25; /* many ties */
      CHECK(evq_push(&h, t, 7, step, &ref[0]) == FOLD_OK);
      ref[nref++] = (fold__sim_ev){.t = t, .seq = seq++, .kind = 7, .rank = step, .ptr = &ref[0]};
    } else {
      size_t best = 0;
      for (size_t i = 1; i < nref; i++)
        if (ref[i].t < ref[best].t || (ref[i].t == ref[best].t && ref[i].seq < ref[best].seq))
          best = i;
      fold__sim_ev ev;
      CHECK(fold__heap_pop(&h.heap, &ev) == 1);
      CHECK(ev.t == ref[best].t && ev.seq == ref[best].seq && ev.rank == ref[best].rank);
      CHECK(ev.kind == 7 && ev.ptr == &ref[0]);
      CHECK(ev.t >= now);
      now = ev.t;
      ref[best] = ref[--nref];
    }
    CHECK(fold__heap_size(&h.heap) == nref);
  }
  fold__heap_fini(&h.heap);
}

int main(void) {
  test_empty();
  test_ties();
  test_random();
  printf("sim_heap: ok\n");
  return 0;
}
