/* heap.h — the one binary min-heap fold uses: fixed-size elements, ordered by the caller's comparison. */
#ifndef FOLD_HEAP_H
#define FOLD_HEAP_H

#include <stddef.h>

/* Elements are stored by value (esize bytes each, copied in by push and out
 * by pop), not as pointers: its users (the simulator's events, the KV
 * store's outbox) keep small records that would otherwise each need an
 * allocation of their own, and by value the heap frees them all at once.
 *
 * before(a, b) is nonzero when a must come out before b. Make it a strict
 * total order (break ties with a sequence number, as both users do): then
 * the pop order depends only on the elements, never on the heap's layout,
 * and runs repeat exactly. */
typedef int (*fold__heap_before)(const void *a, const void *b);

typedef struct fold__heap {
  char *a;                   /* cap + 1 elements: the last is the sifts' scratch */
  size_t n, cap, esize;
  fold__heap_before before;
} fold__heap;

/* An empty heap of esize-byte elements (no allocation until the first push). */
void fold__heap_init(fold__heap *h, size_t esize, fold__heap_before before);

/* Free the storage. Elements still held are dropped: walk them first
 * (fold__heap_at) if they own memory. The heap is empty and usable after. */
void fold__heap_fini(fold__heap *h);

/* Make room for `extra` more elements, so that the next `extra` pushes
 * cannot fail (when two must go in together, or neither). Returns 0 or
 * FOLD_ENOMEM (the heap unchanged). */
int fold__heap_reserve(fold__heap *h, size_t extra);

/* Copy *e in. O(log n). Returns 0, or FOLD_ENOMEM (the heap unchanged). */
int fold__heap_push(fold__heap *h, const void *e);

/* Copy the first element out to *out (out may be NULL: dropped) and remove
 * it. Returns 1, or 0 if the heap is empty. O(log n). */
int fold__heap_pop(fold__heap *h, void *out);

/* The first element, or NULL if the heap is empty; valid until the next
 * push or pop. */
static inline void *fold__heap_top(const fold__heap *h) { return h->n ? h->a : NULL; }

static inline size_t fold__heap_size(const fold__heap *h) { return h->n; }

/* Element i (< size) in no particular order: for walking them all. */
static inline void *fold__heap_at(const fold__heap *h, size_t i) { return h->a + i * h->esize; }

#endif /* FOLD_HEAP_H */
