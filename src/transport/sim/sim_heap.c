/* sim_heap.c — the simulator's deterministic event queue (binary min-heap). */
#include <stdint.h>
#include <stdlib.h>

#include "fold.h"
#include "transport/sim/sim_heap.h"

/* Strict order: earlier time first; at equal times the earlier push. Since
 * seq is unique, no two events compare equal, which is what makes the pop
 * order (and so the whole simulation) independent of the heap's layout. */
static int ev_before(const fold__sim_ev *x, const fold__sim_ev *y) {
  if (x->t != y->t)
    return x->t < y->t;
  return x->seq < y->seq;
}

void fold__sim_heap_init(fold__sim_heap *h) {
  h->a = NULL;
  h->n = h->cap = 0;
  h->next_seq = 0;
}

void fold__sim_heap_fini(fold__sim_heap *h) {
  free(h->a);
  fold__sim_heap_init(h);
}

int fold__sim_heap_reserve(fold__sim_heap *h, size_t extra) {
  if (extra <= h->cap - h->n)
    return FOLD_OK;
  size_t cap = h->cap ? h->cap : 64;
  while (cap - h->n < extra) {
    if (cap > SIZE_MAX / 2 / sizeof(fold__sim_ev))
      return FOLD_ENOMEM;
    cap *= 2;
  }
  fold__sim_ev *a = realloc(h->a, cap * sizeof *a);
  if (a == NULL)
    return FOLD_ENOMEM;
  h->a = a;
  h->cap = cap;
  return FOLD_OK;
}

int fold__sim_heap_push(fold__sim_heap *h, double t, int kind, int rank, void *ptr) {
  if (h->n == h->cap && fold__sim_heap_reserve(h, 1) != FOLD_OK)
    return FOLD_ENOMEM;
  fold__sim_ev ev = {.t = t, .seq = h->next_seq++, .kind = kind, .rank = rank, .ptr = ptr};
  /* sift up: move parents down until ev's place is found (one write each) */
  size_t i = h->n++;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!ev_before(&ev, &h->a[parent]))
      break;
    h->a[i] = h->a[parent];
    i = parent;
  }
  h->a[i] = ev;
  return FOLD_OK;
}

int fold__sim_heap_pop(fold__sim_heap *h, fold__sim_ev *out) {
  if (h->n == 0)
    return 0;
  *out = h->a[0];
  fold__sim_ev last = h->a[--h->n];
  if (h->n == 0)
    return 1;
  /* sift down the former last element from the root */
  size_t i = 0;
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= h->n)
      break;
    if (child + 1 < h->n && ev_before(&h->a[child + 1], &h->a[child]))
      child++;
    if (!ev_before(&h->a[child], &last))
      break;
    h->a[i] = h->a[child];
    i = child;
  }
  h->a[i] = last;
  return 1;
}
