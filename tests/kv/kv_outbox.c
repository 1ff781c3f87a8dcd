/* kv_outbox.c — the KV worker's outbox (fifo + heap) pops in fold__kvw_out_before's order whatever the priorities. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kv/dist_wrk.h"

/* The reference: the queued messages in an array, the first in the order
 * found by a scan. */
typedef struct ref {
  kv_out *a;
  size_t n;
} ref;

static int ref_pop(ref *r, kv_out *m) {
  if (r->n == 0) return 0;
  size_t best = 0;
  for (size_t i = 1; i < r->n; i++)
    if (fold__kvw_out_before(&r->a[i], &r->a[best])) best = i;
  *m = r->a[best];
  r->a[best] = r->a[--r->n];
  return 1;
}

/* Priorities by pattern: 0 all equal, 1 falling (MXNet's -index), 2 rising,
 * 3 random in [-3, 3], 4 random wide, 5 falling runs that jump up. */
static int prio_of(int pattern, int i) {
  switch (pattern) {
  case 0: return 0;
  case 1: return -i;
  case 2: return i;
  case 3: return rand() % 7 - 3;
  case 4: return rand() - RAND_MAX / 2;
  default: return (i / 16) * 100 - i % 16;
  }
}

static void run(int pattern, int n, int pop_every) {
  kv_outbox o;
  fold__kvw_out_init(&o);
  ref r = {calloc((size_t)n, sizeof(kv_out)), 0};
  uint64_t seq = 0;
  int popped = 0, bad = 0;
  kv_out got = {0}, want = {0};
  for (int i = 0; i < n; i++) {
    kv_out m = {NULL, 0, i % 3, 0, prio_of(pattern, i), seq++, NULL};
    CHECK(fold__kvw_out_push(&o, &m) == FOLD_OK, "pattern %d: push %d failed", pattern, i);
    r.a[r.n++] = m;
    CHECK(fold__kvw_out_size(&o) == r.n, "pattern %d: size %zu, wanted %zu", pattern, fold__kvw_out_size(&o), r.n);
    if (pop_every && i % pop_every == pop_every - 1) {
      int a = fold__kvw_out_pop(&o, &got), b = ref_pop(&r, &want);
      if (a != b || got.seq != want.seq) bad++;
      popped++;
    }
  }
  while (ref_pop(&r, &want)) {
    if (!fold__kvw_out_pop(&o, &got) || got.seq != want.seq || got.prio != want.prio) bad++;
    popped++;
  }
  CHECK(!fold__kvw_out_pop(&o, &got), "pattern %d: the outbox has more than was queued", pattern);
  CHECK(fold__kvw_out_size(&o) == 0, "pattern %d: size %zu after the last pop", pattern, fold__kvw_out_size(&o));
  CHECK(bad == 0, "pattern %d, n %d, a pop every %d pushes: %d of %d pops out of order", pattern, n, pop_every, bad,
        popped);
  fold__kvw_out_free(&o);
  free(r.a);
}

int main(void) {
  srand(7);
  for (int pattern = 0; pattern < 6; pattern++)
    for (int pe = 0; pe < 4; pe++) run(pattern, pattern == 4 ? 3000 : 1000, pe);
  /* a queue that is freed with messages still in it frees them */
  kv_outbox o;
  fold__kvw_out_init(&o);
  for (int i = 0; i < 100; i++) {
    kv_out m = {malloc(16), 16, 0, 0, i % 2 ? i : -i, (uint64_t)i, NULL};
    CHECK(fold__kvw_out_push(&o, &m) == FOLD_OK, "push %d failed", i);
  }
  fold__kvw_out_free(&o);
  CHECK(fold__kvw_out_size(&o) == 0, "size %zu after free", fold__kvw_out_size(&o));
  if (check_failures) return 1;
  printf("kv_outbox: ok\n");
  return 0;
}
