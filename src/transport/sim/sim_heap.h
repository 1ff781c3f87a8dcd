/* sim_heap.h — the simulator's event queue: a binary min-heap keyed by
 * (virtual time, sequence number), so that events at equal times run in the
 * order they were scheduled and every run is bit-for-bit repeatable. */
#ifndef FOLD_SIM_HEAP_H
#define FOLD_SIM_HEAP_H

#include <stddef.h>
#include <stdint.h>

/* One scheduled event. `kind`, `rank` and `ptr` are the simulator's; the
 * heap only orders by (t, seq). */
typedef struct fold__sim_ev {
  double t;      /* virtual time in seconds (finite, >= 0) */
  uint64_t seq;  /* global scheduling order: the tie-breaker */
  int kind;
  int rank;
  void *ptr;
} fold__sim_ev;

typedef struct fold__sim_heap {
  fold__sim_ev *a;    /* a[0] is the earliest event */
  size_t n, cap;
  uint64_t next_seq;  /* the seq the next push receives */
} fold__sim_heap;

/* An empty heap (no allocation until the first push). */
void fold__sim_heap_init(fold__sim_heap *h);

/* Free the storage. Events still queued are dropped: pop them first if
 * their ptr owns memory. */
void fold__sim_heap_fini(fold__sim_heap *h);

/* Make room for `extra` more events, so that the next `extra` pushes cannot
 * fail (a message schedules two events: both or neither). Returns 0 or
 * FOLD_ENOMEM. */
int fold__sim_heap_reserve(fold__sim_heap *h, size_t extra);

/* Schedule an event at time t; it gets the next sequence number, so among
 * events with equal t it runs after every event pushed before it.
 * O(log n). Returns 0, or FOLD_ENOMEM (the heap is unchanged). */
int fold__sim_heap_push(fold__sim_heap *h, double t, int kind, int rank, void *ptr);

/* Remove the earliest event into *out. Returns 1, or 0 if the heap is empty.
 * O(log n). */
int fold__sim_heap_pop(fold__sim_heap *h, fold__sim_ev *out);

/* The earliest event without removing it, or NULL if the heap is empty. */
static inline const fold__sim_ev *fold__sim_heap_peek(const fold__sim_heap *h) {
  return h->n ? &h->a[0] : NULL;
}

static inline size_t fold__sim_heap_size(const fold__sim_heap *h) { return h->n; }

#endif /* FOLD_SIM_HEAP_H */
