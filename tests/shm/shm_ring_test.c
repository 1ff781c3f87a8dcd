/* shm_ring_test.c — unit tests of the SPSC byte ring: empty/full, wraparound,
 * 64-bit index wrap, corrupt indices, and a two-thread chunked stream. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/shm/shm_ring.h"

#define CHECK(cond)                                                                    \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);         \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

/* The byte expected at stream position pos: depends on more than the low
 * bits so that a chunk landing at the wrong offset is caught. */
static uint8_t pattern(uint64_t pos) { return (uint8_t)(pos ^ (pos >> 7) ^ (pos >> 17) ^ (pos >> 33)); }

static void *ring_mem(uint64_t size) {
  void *m = aligned_alloc(64, FOLD__RING_CTL_BYTES + size);
  CHECK(m != NULL);
  memset(m, 0, FOLD__RING_CTL_BYTES + size);
  return m;
}

/* Cheap deterministic generator for chunk sizes. */
static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void test_sizes(void) {
  CHECK(!fold__ring_size_ok(0));
  CHECK(!fold__ring_size_ok(32));
  CHECK(!fold__ring_size_ok(100));
  CHECK(fold__ring_size_ok(64));
  CHECK(fold__ring_size_ok(1u << 20));
  fold__ring r;
  void *m = ring_mem(64);
  CHECK(fold__ring_attach(&r, m, 96, 1) == FOLD__RING_CORRUPT);
  free(m);
}

static void test_empty_full(void) {
  const uint64_t size = 64;
  void *m = ring_mem(size);
  fold__ring p, c;
  CHECK(fold__ring_attach(&p, m, size, 1) == 0);
  CHECK(fold__ring_attach(&c, m, size, 0) == 0);
  uint8_t buf[200], out[200];
  for (int i = 0; i < 200; i++)
    buf[i] = (uint8_t)(i * 7 + 1);

  CHECK(fold__ring_readable(&c) == 0);
  CHECK(fold__ring_read(&c, out, 10) == 0);
  CHECK(fold__ring_writable(&p) == 64);
  CHECK(fold__ring_write(&p, buf, 0) == 0);
  /* A write larger than the ring is cut at the free space. */
  CHECK(fold__ring_write(&p, buf, 100) == 64);
  CHECK(fold__ring_writable(&p) == 0);
  CHECK(fold__ring_write(&p, buf, 1) == 0);
  CHECK(fold__ring_readable(&c) == 64);
  /* Full ring: the producer announces it is blocked; nobody freed space. */
  CHECK(fold__ring_block(&p, 1) == 0);
  CHECK(atomic_load(&p.ctl->blocked) == 1);
  CHECK(fold__ring_read(&c, out, 10) == 10);
  CHECK(memcmp(out, buf, 10) == 0);
  CHECK(fold__ring_unblock_needed(&c) == 1);
  CHECK(fold__ring_unblock_needed(&c) == 0); /* cleared by the first call */
  CHECK(fold__ring_writable(&p) == 10);
  /* Discard (dst NULL) moves the tail without copying. */
  CHECK(fold__ring_read(&c, NULL, 4) == 4);
  CHECK(fold__ring_read(&c, out, 200) == 50);
  CHECK(memcmp(out, buf + 14, 50) == 0);
  CHECK(fold__ring_readable(&c) == 0);
  /* Nothing blocked: no wake-up needed. */
  CHECK(fold__ring_unblock_needed(&c) == 0);
  /* A producer that blocks while space exists sees the space at once. */
  CHECK(fold__ring_block(&p, 1) == 64);
  CHECK(atomic_load(&p.ctl->blocked) == 0); /* withdrawn: no wake-up wanted */
  /* Some space, but less than a header needs: the producer stays blocked
   * (it would otherwise retry forever without the consumer's wake-up). */
  CHECK(fold__ring_write(&p, buf, 54) == 54);
  CHECK(fold__ring_block(&p, 24) == 0);
  CHECK(atomic_load(&p.ctl->blocked) == 1);
  CHECK(fold__ring_block(&p, 10) == 10);
  CHECK(atomic_load(&p.ctl->blocked) == 0);
  CHECK(fold__ring_read(&c, NULL, 54) == 54);

  /* All-or-nothing writes and reads (message headers). */
  CHECK(fold__ring_write(&p, buf, 50) == 50);
  CHECK(fold__ring_write_all(&p, buf, 24) == 0); /* 14 free: nothing written */
  CHECK(fold__ring_readable(&c) == 50);
  CHECK(fold__ring_write_all(&p, buf, 14) == 14);
  CHECK(fold__ring_write_all(&p, buf, 65) == FOLD__RING_CORRUPT); /* can never fit */
  CHECK(fold__ring_read(&c, NULL, 40) == 40);
  CHECK(fold__ring_read_all(&c, out, 25) == 0); /* 24 available */
  CHECK(fold__ring_read_all(&c, out, 24) == 24);
  CHECK(memcmp(out, buf + 40, 10) == 0 && memcmp(out + 10, buf, 14) == 0);
  CHECK(fold__ring_write_all(&p, buf, 64) == 64); /* exactly the ring, wrapping */
  CHECK(fold__ring_read_all(&c, out, 64) == 64);
  CHECK(memcmp(out, buf, 64) == 0);
  free(m);
}

/* Many writes and reads of co-prime sizes cross the end of the data area at
 * every possible offset; the content must come out in order. */
static void test_wraparound(uint64_t start) {
  const uint64_t size = 256;
  void *m = ring_mem(size);
  fold__ring_ctl *ctl = m;
  atomic_store(&ctl->head, start);
  atomic_store(&ctl->tail, start);
  fold__ring p, c;
  CHECK(fold__ring_attach(&p, m, size, 1) == 0);
  CHECK(fold__ring_attach(&c, m, size, 0) == 0);
  uint64_t wpos = 0, rpos = 0, seed = 0x9e3779b97f4a7c15ull ^ start;
  uint8_t in[300], out[300];
  while (rpos < 200000) {
    size_t n = (size_t)(rng_next(&seed) % 300);
    for (size_t i = 0; i < n; i++)
      in[i] = pattern(wpos + i);
    int64_t w = fold__ring_write(&p, in, n);
    CHECK(w >= 0 && (uint64_t)w <= n);
    CHECK((uint64_t)w == n || wpos + (uint64_t)w - rpos == size); /* short only when full */
    wpos += (uint64_t)w;
    size_t k = (size_t)(rng_next(&seed) % 300);
    int64_t r = fold__ring_read(&c, out, k);
    CHECK(r >= 0 && (uint64_t)r <= k);
    CHECK((uint64_t)r == k || rpos + (uint64_t)r == wpos); /* short only when empty */
    for (int64_t i = 0; i < r; i++)
      CHECK(out[i] == pattern(rpos + (uint64_t)i));
    rpos += (uint64_t)r;
  }
  CHECK(atomic_load(&ctl->head) == start + wpos);
  CHECK(atomic_load(&ctl->tail) == start + rpos);
  free(m);
}

/* Indices a broken peer could leave behind must be refused, not used. */
static void test_corrupt(void) {
  const uint64_t size = 128;
  void *m = ring_mem(size);
  fold__ring_ctl *ctl = m;
  fold__ring p, c;
  uint8_t buf[200] = {0};
  atomic_store(&ctl->head, 1000);
  atomic_store(&ctl->tail, 1000 + 1); /* tail ahead of head */
  CHECK(fold__ring_attach(&p, m, size, 1) == FOLD__RING_CORRUPT);
  atomic_store(&ctl->tail, 1000);
  CHECK(fold__ring_attach(&p, m, size, 1) == 0);
  CHECK(fold__ring_attach(&c, m, size, 0) == 0);
  atomic_store(&ctl->tail, 1001); /* consumer side claims to have read more than written */
  CHECK(fold__ring_writable(&p) == FOLD__RING_CORRUPT);
  /* A write that needs more than the cached free space re-reads the tail. */
  CHECK(fold__ring_write(&p, buf, 200) == FOLD__RING_CORRUPT);
  atomic_store(&ctl->tail, 1000);
  atomic_store(&ctl->head, 1000 + size + 1); /* more than a ring full */
  CHECK(fold__ring_readable(&c) == FOLD__RING_CORRUPT);
  CHECK(fold__ring_read(&c, buf, 16) == FOLD__RING_CORRUPT);
  CHECK(c.pos == 1000); /* nothing consumed */
  atomic_store(&ctl->head, 999); /* head behind the consumer */
  CHECK(fold__ring_readable(&c) == FOLD__RING_CORRUPT);
  free(m);
}

/* ---- two threads streaming a large transfer in random chunks ---- */
typedef struct stream_arg {
  void *mem;
  uint64_t size, total;
  int producer;
  int fail;
} stream_arg;

static void *stream_thread(void *p) {
  stream_arg *a = p;
  fold__ring r;
  if (fold__ring_attach(&r, a->mem, a->size, a->producer) != 0) {
    a->fail = 1;
    return NULL;
  }
  uint8_t *buf = malloc(65536);
  uint64_t pos = 0, seed = a->producer ? 12345 : 67890;
  int idle = 0;
  while (pos < a->total) {
    size_t n = (size_t)(rng_next(&seed) % 65536) + 1;
    if (n > a->total - pos)
      n = (size_t)(a->total - pos);
    int64_t k;
    if (a->producer) {
      for (size_t i = 0; i < n; i++)
        buf[i] = pattern(pos + i);
      k = fold__ring_write(&r, buf, n);
    } else {
      k = fold__ring_read(&r, buf, n);
      for (int64_t i = 0; i < k; i++)
        if (buf[i] != pattern(pos + (uint64_t)i)) {
          fprintf(stderr, "stream: byte %llu wrong\n", (unsigned long long)(pos + (uint64_t)i));
          a->fail = 1;
          free(buf);
          return NULL;
        }
    }
    if (k < 0) {
      a->fail = 1;
      break;
    }
    /* The producer rewrites the pattern of an unsent tail next round: its
     * stream position only moves by what the ring took. */
    pos += (uint64_t)k;
    if (k == 0 && ++idle > 64) {
      sched_yield(); /* 2 cores: let the other side run */
      idle = 0;
    }
  }
  free(buf);
  return NULL;
}

static void test_two_threads(uint64_t size, uint64_t total) {
  void *m = ring_mem(size);
  stream_arg pa = {m, size, total, 1, 0}, ca = {m, size, total, 0, 0};
  pthread_t tp, tc;
  CHECK(pthread_create(&tc, NULL, stream_thread, &ca) == 0);
  CHECK(pthread_create(&tp, NULL, stream_thread, &pa) == 0);
  pthread_join(tp, NULL);
  pthread_join(tc, NULL);
  CHECK(!pa.fail && !ca.fail);
  fold__ring_ctl *ctl = m;
  CHECK(atomic_load(&ctl->head) == total && atomic_load(&ctl->tail) == total);
  free(m);
}

int main(void) {
  test_sizes();
  test_empty_full();
  test_wraparound(0);
  test_wraparound(UINT32_MAX - 1000);         /* 32-bit boundary */
  test_wraparound(UINT64_MAX - 50000);        /* the 64-bit counters wrap */
  test_corrupt();
  test_two_threads(4096, 16ull << 20);        /* chunks larger than the ring */
  test_two_threads(256 << 10, 64ull << 20);
  printf("shm_ring_test: ok\n");
  return 0;
}
