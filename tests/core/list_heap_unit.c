/* list_heap_unit.c — unit tests of core/list.h (order, O(1) unlink, safe deletion) and core/heap.h (order). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/heap.h"
#include "core/list.h"
#include "fold.h"

typedef struct item {
  int v;
  fold__list link;
} item;

/* The list's values front to back into out (at most cap), checking that the
 * prev links mirror the next ones; returns the count. */
static int values(const fold__list *h, int *out, int cap) {
  int n = 0;
  const fold__list *prev = h;
  FOLD__LIST_FOR_EACH(item, it, h, link) {
    CHECK(it->link.prev == prev, "item %d: prev link broken", it->v);
    prev = &it->link;
    if (n < cap) out[n] = it->v;
    n++;
  }
  CHECK(h->prev == prev, "head's prev is not the last item");
  return n;
}

static void expect(const fold__list *h, const int *want, int n, const char *what) {
  int got[64];
  int m = values(h, got, 64);
  CHECK(m == n, "%s: %d items, wanted %d", what, m, n);
  for (int i = 0; i < n && i < m; i++)
    CHECK(got[i] == want[i], "%s: item %d is %d, wanted %d", what, i, got[i], want[i]);
  CHECK(fold__list_empty(h) == (n == 0), "%s: empty() wrong", what);
}

static void test_list(void) {
  fold__list h;
  fold__list_init(&h);
  expect(&h, NULL, 0, "new");
  CHECK(fold__list_first(&h) == NULL && fold__list_pop_front(&h) == NULL, "empty list has a first item");

  item it[8];
  memset(it, 0, sizeof it); /* zeroed nodes count as unlinked */
  for (int i = 0; i < 8; i++) {
    it[i].v = i;
    CHECK(!fold__list_linked(&it[i].link), "zeroed node %d reads as linked", i);
  }
  fold__list_unlink(&it[0].link); /* unlinking a never-linked node: nothing */
  CHECK(!fold__list_linked(&it[0].link), "unlink of an unlinked node linked it");

  for (int i = 1; i <= 4; i++) fold__list_push_back(&h, &it[i].link);
  fold__list_push_front(&h, &it[0].link);
  expect(&h, (int[]){0, 1, 2, 3, 4}, 5, "push_back/front");
  CHECK(fold__list_linked(&it[2].link), "a queued node reads as unlinked");

  fold__list_unlink(&it[2].link); /* middle */
  expect(&h, (int[]){0, 1, 3, 4}, 4, "unlink middle");
  CHECK(!fold__list_linked(&it[2].link) && it[2].link.next == &it[2].link, "unlinked node not self-linked");
  fold__list_unlink(&it[2].link); /* again: idempotent */
  expect(&h, (int[]){0, 1, 3, 4}, 4, "unlink twice");
  fold__list_unlink(&it[0].link); /* front */
  fold__list_unlink(&it[4].link); /* back */
  expect(&h, (int[]){1, 3}, 2, "unlink ends");
  fold__list_insert_before(&it[3].link, &it[2].link);
  fold__list_insert_before(&h, &it[4].link);
  expect(&h, (int[]){1, 2, 3, 4}, 4, "insert_before");

  fold__list *n = fold__list_pop_front(&h);
  CHECK(n == &it[1].link && FOLD__LIST_ENTRY(n, item, link)->v == 1, "pop_front took the wrong item");
  expect(&h, (int[]){2, 3, 4}, 3, "pop_front");
  item *f = FOLD__LIST_FIRST(&h, item, link);
  CHECK(f == &it[2], "FIRST is not the front item");
  CHECK(FOLD__LIST_NEXT(f, &h, item, link) == &it[3], "NEXT of the front item is wrong");
  CHECK(FOLD__LIST_NEXT(&it[4], &h, item, link) == NULL, "NEXT of the last item is not NULL");

  fold__list h2;
  fold__list_init(&h2);
  fold__list_push_back(&h2, &it[5].link);
  fold__list_push_back(&h2, &it[6].link);
  fold__list_splice_back(&h, &h2);
  expect(&h, (int[]){2, 3, 4, 5, 6}, 5, "splice_back");
  expect(&h2, NULL, 0, "spliced-from list");
  fold__list_splice_back(&h, &h2); /* empty: nothing */
  expect(&h, (int[]){2, 3, 4, 5, 6}, 5, "splice of an empty list");

  /* deletion while iterating: every odd value, first and last included */
  fold__list_push_front(&h, &it[1].link);
  fold__list_push_back(&h, &it[7].link);
  FOLD__LIST_FOR_EACH_SAFE(item, x, &h, link) {
    if (x->v % 2) fold__list_unlink(&x->link);
  }
  expect(&h, (int[]){2, 4, 6}, 3, "for_each_safe deleting odd items");
  FOLD__LIST_FOR_EACH_SAFE(item, x, &h, link) fold__list_unlink(&x->link);
  expect(&h, NULL, 0, "for_each_safe deleting all");
  CHECK(FOLD__LIST_FIRST(&h, item, link) == NULL, "FIRST of an empty list is not NULL");

  /* freeing items in the safe loop (ASan sees a read after free) */
  for (int i = 0; i < 10; i++) {
    item *m = malloc(sizeof *m);
    CHECK(m != NULL, "malloc");
    if (m == NULL) return;
    m->v = i;
    fold__list_push_back(&h, &m->link);
  }
  int seen = 0;
  FOLD__LIST_FOR_EACH_SAFE(item, x, &h, link) {
    CHECK(x->v == seen, "freeing loop: item %d, wanted %d", x->v, seen);
    seen++;
    fold__list_unlink(&x->link);
    free(x);
  }
  CHECK(seen == 10 && fold__list_empty(&h), "freeing loop saw %d items", seen);
}

/* ---- heap ---- */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

typedef struct rec {
  int key;
  uint32_t seq; /* push order: the tie-breaker */
  char pad[5];  /* an odd size: the heap copies esize bytes, no more */
} rec;

static int rec_before(const void *a, const void *b) {
  const rec *x = a, *y = b;
  return x->key != y->key ? x->key < y->key : x->seq < y->seq;
}

static int rec_cmp(const void *a, const void *b) { return rec_before(a, b) ? -1 : rec_before(b, a) ? 1 : 0; }

static void test_heap_sorted(int n, int keys) {
  fold__heap h;
  fold__heap_init(&h, sizeof(rec), rec_before);
  CHECK(fold__heap_top(&h) == NULL && fold__heap_pop(&h, NULL) == 0, "empty heap gives an element");
  rec *all = malloc((size_t)(n ? n : 1) * sizeof *all);
  CHECK(all != NULL, "malloc");
  if (all == NULL) return;
  for (int i = 0; i < n; i++) {
    all[i] = (rec){.key = (int)(rng() % (uint64_t)keys) - keys / 2, .seq = (uint32_t)i};
    memset(all[i].pad, i & 0x7f, sizeof all[i].pad);
    CHECK(fold__heap_push(&h, &all[i]) == FOLD_OK, "push %d failed", i);
  }
  CHECK(fold__heap_size(&h) == (size_t)n, "size %zu after %d pushes", fold__heap_size(&h), n);
  qsort(all, (size_t)n, sizeof *all, rec_cmp);
  for (int i = 0; i < n; i++) {
    rec r;
    const rec *top = fold__heap_top(&h);
    CHECK(top != NULL && top->key == all[i].key && top->seq == all[i].seq, "top %d differs from the sorted array", i);
    CHECK(fold__heap_pop(&h, &r) == 1, "pop %d: empty", i);
    CHECK(r.key == all[i].key && r.seq == all[i].seq && memcmp(r.pad, all[i].pad, sizeof r.pad) == 0,
          "pop %d: (%d, %u), sorted array has (%d, %u)", i, r.key, r.seq, all[i].key, all[i].seq);
  }
  CHECK(fold__heap_pop(&h, NULL) == 0 && fold__heap_size(&h) == 0, "heap not empty after %d pops", n);
  fold__heap_fini(&h);
  free(all);
}

/* Interleaved pushes and pops against a brute-force minimum. */
static void test_heap_interleaved(void) {
  enum { CAP = 512 };
  static rec ref[CAP];
  size_t nref = 0;
  uint32_t seq = 0;
  fold__heap h;
  fold__heap_init(&h, sizeof(rec), rec_before);
  CHECK(fold__heap_reserve(&h, 3) == FOLD_OK, "reserve");
  for (int step = 0; step < 50000; step++) {
    if (nref == 0 || (nref < CAP && rng() % 100 < 52)) {
      rec r = {.key = (int)(rng() % 8), .seq = seq++};
      CHECK(fold__heap_push(&h, &r) == FOLD_OK, "push");
      ref[nref++] = r;
    } else {
      size_t best = 0;
      for (size_t i = 1; i < nref; i++)
        if (rec_before(&ref[i], &ref[best])) best = i;
      rec r;
      CHECK(fold__heap_pop(&h, &r) == 1, "pop");
      CHECK(r.key == ref[best].key && r.seq == ref[best].seq, "step %d: popped (%d, %u), wanted (%d, %u)", step, r.key,
            r.seq, ref[best].key, ref[best].seq);
      ref[best] = ref[--nref];
    }
    CHECK(fold__heap_size(&h) == nref, "size");
  }
  /* every element reachable through fold__heap_at */
  long sum = 0, want = 0;
  for (size_t i = 0; i < fold__heap_size(&h); i++) sum += ((rec *)fold__heap_at(&h, i))->seq;
  for (size_t i = 0; i < nref; i++) want += ref[i].seq;
  CHECK(sum == want, "heap_at walk sums %ld, wanted %ld", sum, want);
  fold__heap_fini(&h);
  CHECK(fold__heap_size(&h) == 0 && fold__heap_top(&h) == NULL, "fini left elements");
  rec r = {.key = 1, .seq = 1};
  CHECK(fold__heap_push(&h, &r) == FOLD_OK && fold__heap_size(&h) == 1, "heap unusable after fini");
  fold__heap_fini(&h);
}

/* A heap too big to address fails with FOLD_ENOMEM and stays as it was. */
static void test_heap_enomem(void) {
  fold__heap h;
  fold__heap_init(&h, 1024, rec_before);
  CHECK(fold__heap_reserve(&h, SIZE_MAX / 512) == FOLD_ENOMEM, "absurd reserve succeeded");
  CHECK(fold__heap_size(&h) == 0 && h.cap == 0, "failed reserve changed the heap");
  fold__heap_fini(&h);
}

int main(void) {
  test_list();
  test_heap_sorted(0, 1);
  test_heap_sorted(1, 1);
  test_heap_sorted(2, 1);
  for (int n = 3; n < 200; n += 7) test_heap_sorted(n, 1 + n / 4); /* many duplicates */
  test_heap_sorted(100000, 50);
  test_heap_sorted(100000, 1 << 30);
  test_heap_interleaved();
  test_heap_enomem();
  if (check_failures) return 1;
  printf("list_heap_unit: ok\n");
  return 0;
}
