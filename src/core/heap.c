/* heap.c — the binary min-heap of heap.h: sifts that move each element once. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/heap.h"
#include "fold.h"

#define AT(h, i) ((h)->a + (i) * (h)->esize)

void fold__heap_init(fold__heap *h, size_t esize, fold__heap_before before) {
  h->a = NULL;
  h->n = h->cap = 0;
  h->esize = esize;
  h->before = before;
}

void fold__heap_fini(fold__heap *h) {
  free(h->a);
  h->a = NULL;
  h->n = h->cap = 0;
}

int fold__heap_reserve(fold__heap *h, size_t extra) {
  if (extra <= h->cap - h->n)
    return FOLD_OK;
  size_t cap = h->cap ? h->cap : 64;
  while (cap - h->n < extra) {
    if (cap > SIZE_MAX / 4 / h->esize)
      return FOLD_ENOMEM;
    cap *= 2;
  }
  char *a = realloc(h->a, (cap + 1) * h->esize);
  if (a == NULL)
    return FOLD_ENOMEM;
  h->a = a;
  h->cap = cap;
  return FOLD_OK;
}

int fold__heap_push(fold__heap *h, const void *e) {
  if (h->n == h->cap && fold__heap_reserve(h, 1) != FOLD_OK)
    return FOLD_ENOMEM;
  /* sift up: parents that e goes before move down a level, e goes in the
   * hole once (one copy per level) */
  size_t i = h->n++;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!h->before(e, AT(h, parent)))
      break;
    memcpy(AT(h, i), AT(h, parent), h->esize);
    i = parent;
  }
  memcpy(AT(h, i), e, h->esize);
  return FOLD_OK;
}

int fold__heap_pop(fold__heap *h, void *out) {
  if (h->n == 0)
    return 0;
  if (out)
    memcpy(out, h->a, h->esize);
  if (--h->n == 0)
    return 1;
  /* sift the former last element down from the root, held in the scratch
   * slot past the end */
  char *last = AT(h, h->cap);
  memcpy(last, AT(h, h->n), h->esize);
  size_t i = 0;
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= h->n)
      break;
    if (child + 1 < h->n && h->before(AT(h, child + 1), AT(h, child)))
      child++;
    if (!h->before(AT(h, child), last))
      break;
    memcpy(AT(h, i), AT(h, child), h->esize);
    i = child;
  }
  memcpy(AT(h, i), last, h->esize);
  return 1;
}
