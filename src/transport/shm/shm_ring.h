/* shm_ring.h — a lock-free single-producer single-consumer byte ring that
 * lives in shared memory (one process writes, another reads).
 *
 * Layout: a control block (fold__ring_ctl, FOLD__RING_CTL_BYTES long) then
 * `size` data bytes, size a power of two. head and tail count every byte
 * ever written / read (64-bit, they never wrap in practice and the
 * arithmetic is modular anyway), so head - tail is the fill level and no
 * byte is wasted to tell full from empty.
 *
 * Ordering: the producer copies data, then publishes head with a release
 * store; the consumer loads head with acquire before copying out, then
 * publishes tail with release; the producer loads tail with acquire before
 * reusing the space. Each side keeps its own index in private memory and a
 * cached copy of the other's, so the shared lines are touched only when the
 * cached view runs out.
 *
 * The peer writes this memory too, so nothing read from it is trusted: an
 * index that would put the fill level outside [0, size] makes the calls
 * return FOLD__RING_CORRUPT instead of copying out of bounds.
 *
 * The ring itself never sleeps; `blocked` is the handshake that lets a
 * producer that found the ring full ask the consumer for a wake-up (see
 * fold__ring_block / fold__ring_unblock_needed).
 */
#ifndef FOLD_SHM_RING_H
#define FOLD_SHM_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define FOLD__RING_CTL_BYTES 256
#define FOLD__RING_CORRUPT (-1)

/* The shared control block. Each index sits on its own cache line so the
 * producer's stores to head do not evict the consumer's tail (false
 * sharing between two cores is the main cost of a ring). */
typedef struct fold__ring_ctl {
  _Alignas(64) _Atomic uint64_t head;  /* bytes written; producer stores */
  _Alignas(64) _Atomic uint64_t tail;  /* bytes read; consumer stores */
  _Alignas(64) _Atomic uint32_t blocked; /* producer waits for space */
  _Atomic uint32_t producer_gone;        /* producer left (fold_comm_destroy) */
} fold__ring_ctl;

_Static_assert(sizeof(fold__ring_ctl) <= FOLD__RING_CTL_BYTES, "ring control block too large");

/* One side's private view of a ring. */
typedef struct fold__ring {
  fold__ring_ctl *ctl;
  uint8_t *data;
  uint64_t size, mask;
  uint64_t pos;   /* producer: head; consumer: tail (the side's own index) */
  uint64_t other; /* last seen value of the other side's index */
} fold__ring;

/* Is size a valid ring size (a power of two, at least 64 bytes)? */
int fold__ring_size_ok(uint64_t size);

/* Attach to the ring whose control block starts at `mem` (data follows at
 * mem + FOLD__RING_CTL_BYTES), as producer (producer != 0) or consumer.
 * The control block must be zero-filled (a fresh segment) or in use by the
 * other side. Returns 0, or FOLD__RING_CORRUPT if size is invalid or the
 * indices are inconsistent. */
int fold__ring_attach(fold__ring *r, void *mem, uint64_t size, int producer);

/* Producer: bytes that can be written now, or FOLD__RING_CORRUPT. */
int64_t fold__ring_writable(fold__ring *r);
/* Producer: copy up to n bytes from src and publish them. Returns the count
 * copied (0 when full), or FOLD__RING_CORRUPT. */
int64_t fold__ring_write(fold__ring *r, const void *src, size_t n);

/* Producer: copy all n bytes, or nothing if they do not fit now (for
 * headers, which the consumer then never sees half-written). Returns n, 0,
 * or FOLD__RING_CORRUPT. n must not exceed the ring size. */
int64_t fold__ring_write_all(fold__ring *r, const void *src, size_t n);

/* Consumer: bytes that can be read now, or FOLD__RING_CORRUPT. */
int64_t fold__ring_readable(fold__ring *r);
/* Consumer: copy up to n bytes into dst and release their space (dst may
 * be NULL to discard them). Returns the count, or FOLD__RING_CORRUPT. */
int64_t fold__ring_read(fold__ring *r, void *dst, size_t n);

/* Consumer: copy exactly n bytes, or nothing if fewer are available.
 * Returns n, 0, or FOLD__RING_CORRUPT. */
int64_t fold__ring_read_all(fold__ring *r, void *dst, size_t n);

/* Producer found fewer than `need` bytes free (need: 1 for payload, the
 * header size for an all-or-nothing header): announce it, then re-check.
 * Returns the free byte count if it is now >= need (the flag is withdrawn
 * and writing goes on), 0 if it is still short (the consumer is now bound
 * to notice `blocked` after it frees space, see fold__ring_unblock_needed),
 * or FOLD__RING_CORRUPT. */
int64_t fold__ring_block(fold__ring *r, size_t need);
/* Consumer, after a read freed space: returns 1 (and clears the flag) if
 * the producer announced it was blocked and must be woken. */
int fold__ring_unblock_needed(fold__ring *r);

#endif /* FOLD_SHM_RING_H */
