/* shm_ring.c — the single-producer single-consumer byte ring of the shm transport. */
#include <string.h>

#include "transport/shm/shm_ring.h"

int fold__ring_size_ok(uint64_t size) { return size >= 64 && (size & (size - 1)) == 0; }

int fold__ring_attach(fold__ring *r, void *mem, uint64_t size, int producer) {
  memset(r, 0, sizeof *r);
  if (!fold__ring_size_ok(size))
    return FOLD__RING_CORRUPT;
  r->ctl = (fold__ring_ctl *)mem;
  r->data = (uint8_t *)mem + FOLD__RING_CTL_BYTES;
  r->size = size;
  r->mask = size - 1;
  uint64_t head = atomic_load_explicit(&r->ctl->head, memory_order_acquire);
  uint64_t tail = atomic_load_explicit(&r->ctl->tail, memory_order_acquire);
  if (head - tail > size)
    return FOLD__RING_CORRUPT;
  r->pos = producer ? head : tail;
  r->other = producer ? tail : head;
  return 0;
}

/* Producer: refresh the cached tail and return the free space. The
 * consumer's tail must lie in [head - size, head]; anything else is a
 * corrupted (or hostile) index. */
static int64_t refresh_tail(fold__ring *r) {
  uint64_t tail = atomic_load_explicit(&r->ctl->tail, memory_order_acquire);
  uint64_t used = r->pos - tail;
  if (used > r->size)
    return FOLD__RING_CORRUPT;
  r->other = tail;
  return (int64_t)(r->size - used);
}

int64_t fold__ring_writable(fold__ring *r) { return refresh_tail(r); }

/* Copy n bytes into the ring at logical position pos, splitting at the end
 * of the data area. */
static void copy_in(fold__ring *r, uint64_t pos, const uint8_t *src, size_t n) {
  size_t off = (size_t)(pos & r->mask);
  size_t first = (size_t)r->size - off;
  if (first > n)
    first = n;
  memcpy(r->data + off, src, first);
  if (n > first)
    memcpy(r->data, src + first, n - first);
}

static void copy_out(fold__ring *r, uint64_t pos, uint8_t *dst, size_t n) {
  size_t off = (size_t)(pos & r->mask);
  size_t first = (size_t)r->size - off;
  if (first > n)
    first = n;
  memcpy(dst, r->data + off, first);
  if (n > first)
    memcpy(dst + first, r->data, n - first);
}

int64_t fold__ring_write(fold__ring *r, const void *src, size_t n) {
  /* Use the cached tail first: it can only understate the free space. */
  uint64_t space = r->size - (r->pos - r->other);
  if (space < n) {
    int64_t s = refresh_tail(r);
    if (s < 0)
      return s;
    space = (uint64_t)s;
  }
  if (n > space)
    n = (size_t)space;
  if (n == 0)
    return 0;
  copy_in(r, r->pos, (const uint8_t *)src, n);
  r->pos += n;
  atomic_store_explicit(&r->ctl->head, r->pos, memory_order_release);
  return (int64_t)n;
}

int64_t fold__ring_write_all(fold__ring *r, const void *src, size_t n) {
  if (n > r->size)
    return FOLD__RING_CORRUPT;
  if (r->size - (r->pos - r->other) < n) {
    int64_t s = refresh_tail(r);
    if (s < (int64_t)n)
      return s < 0 ? s : 0;
  }
  return fold__ring_write(r, src, n);
}

/* Consumer: refresh the cached head; the fill level must be in [0, size]. */
static int64_t refresh_head(fold__ring *r) {
  uint64_t head = atomic_load_explicit(&r->ctl->head, memory_order_acquire);
  uint64_t avail = head - r->pos;
  if (avail > r->size)
    return FOLD__RING_CORRUPT;
  r->other = head;
  return (int64_t)avail;
}

int64_t fold__ring_readable(fold__ring *r) { return refresh_head(r); }

int64_t fold__ring_read(fold__ring *r, void *dst, size_t n) {
  uint64_t avail = r->other - r->pos;
  if (avail < n) {
    int64_t a = refresh_head(r);
    if (a < 0)
      return a;
    avail = (uint64_t)a;
  }
  if (n > avail)
    n = (size_t)avail;
  if (n == 0)
    return 0;
  if (dst)
    copy_out(r, r->pos, (uint8_t *)dst, n);
  r->pos += n;
  atomic_store_explicit(&r->ctl->tail, r->pos, memory_order_release);
  return (int64_t)n;
}

int64_t fold__ring_read_all(fold__ring *r, void *dst, size_t n) {
  if (r->other - r->pos < n) {
    int64_t a = refresh_head(r);
    if (a < (int64_t)n)
      return a < 0 ? a : 0;
  }
  return fold__ring_read(r, dst, n);
}

/* The block handshake is the store-buffering pattern: each side stores its
 * own word, then (after a full fence) loads the other's. The fences
 * guarantee that at least one side sees the other's store, so either the
 * producer sees the freed space or the consumer sees `blocked`. */
int64_t fold__ring_block(fold__ring *r, size_t need) {
  atomic_store_explicit(&r->ctl->blocked, 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_seq_cst);
  int64_t s = refresh_tail(r);
  if (s >= 0 && (uint64_t)s < need)
    return 0; /* still short: stay announced (a partial free is not enough) */
  /* enough space (or corruption): nobody needs to wake us */
  atomic_store_explicit(&r->ctl->blocked, 0, memory_order_relaxed);
  return s;
}

int fold__ring_unblock_needed(fold__ring *r) {
  atomic_thread_fence(memory_order_seq_cst);
  if (atomic_load_explicit(&r->ctl->blocked, memory_order_relaxed) == 0)
    return 0;
  return atomic_exchange_explicit(&r->ctl->blocked, 0, memory_order_relaxed) != 0;
}
