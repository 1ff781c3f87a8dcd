/* shm_coll.h — the `shm` algorithms' side of collectives through a shared collective area (shm_coll.c; the area itself: transport.h, fold__area). */
#ifndef FOLD_SHM_COLL_H
#define FOLD_SHM_COLL_H

#include "coll/coll.h"
#include "transport/transport.h"

/* What one shm collective does with chunk i of its call (0-based; the
 * chunk's slot parity is s, and mine is this rank's slot s): a
 * fold__area_kind (transport.h) whose arg is the call's fold__coll:
 *   fill(co, a, i, mine)  put this rank's part of chunk i into its own slot
 *   mid(co, a, i, s)      only in calls that asked for it (fold__shm_init):
 *                         runs once every rank filled chunk i; may write
 *                         this rank's own slot s; a second flag follows
 *   drain(co, a, i, s)    runs once every rank filled (and mid-ed) chunk
 *                         i: read the slots, write the user's buffers
 * Any of them may be NULL. None may block. */
typedef fold__area_kind fold__shm_kind;

/* The per-call number the algorithms share in co->u (elements per chunk);
 * an algorithm may use u[1..7] and v[0..7]. The chunk loop's state is
 * co->area. */
enum { FOLD__SHM_U_ELEMS = 0 };

/* NULL if the shm algorithms can run on c, else why not. They can when c
 * has one rank, or when its one transport offers c a collective area
 * (fold__tp_ops.coll): every peer is a process on this host, and every
 * rank's area has the same size. A sub-communicator gets areas of its own
 * (made by its first collective). */
const char *fold__shm_usable(const fold_comm *c);

/* NULL if a slot holds one element of esize bytes per piece of collective
 * `kind` (n pieces for alltoall, reduce_scatter and scatter, else one),
 * else why not: chunks are whole elements, never parts of one. */
const char *fold__shm_fits(const fold_comm *c, fold__coll_kind kind, size_t esize);

/* The collective area of c, or NULL (one rank, or none: usable() says why). */
fold__area *fold__shm_area(const fold_comm *c);

/* For an algorithm's init: the call moves `elems` elements per chunk
 * (elems >= 1) in `nchunks` chunks (0 is taken as 1: a call always
 * synchronises once, so a mismatch is still seen); use_mid asks for the
 * mid phase. Hands out the call's chunk indices, so it must be the last
 * thing init does. */
int fold__shm_init(fold__coll *co, size_t elems, size_t nchunks, int use_mid);

/* A call of co's communicator runs a round algorithm: if the communicator
 * has a collective area, leave the call's sequence number and signature
 * there, so that ranks that run shm for the same call report the mismatch. */
void fold__shm_note_round_call(const fold__coll *co);

/* The task step of an shm algorithm: 1 done, 0 waiting, <0 failed. */
int fold__shm_step(fold__coll *co, const fold__shm_kind *k);

/* The describe() of every shm algorithm (fold__algo): the ranks whose flag
 * the call waits for, and the chunk; returns the first of them or -1. */
int fold__shm_describe(fold__coll *co, char *buf, size_t cap);

/* Data slot s of rank p. */
static inline char *fold__shm_slot(const fold__area *a, int p, int s) { return fold__area_slot(a, p, s); }

/* Elements of chunk i of a call over `total` elements: first element and length. */
static inline size_t fold__shm_chunk(const fold__coll *co, size_t i, size_t total, size_t *len) {
  size_t m = co->u[FOLD__SHM_U_ELEMS], off = i * m;
  *len = off >= total ? 0 : total - off < m ? total - off : m;
  return off;
}

/* Elements per slot for a collective moving `pieces` pieces per slot. */
static inline size_t fold__shm_elems(const fold__coll *co, int pieces) {
  const fold__area *a = fold__shm_area(co->comm);
  size_t slot = a ? a->slot_bytes : 4096;
  return slot / ((size_t)pieces * co->esize);
}

/* Rank r's share of a chunk of len elements split n ways, in whole cache
 * lines of 4-byte elements where the length allows: first element, length. */
static inline size_t fold__shm_share(size_t len, int n, int r, size_t *share) {
  size_t per = (len + (size_t)n - 1) / (size_t)n;
  per = (per + 15) & ~(size_t)15;
  size_t lo = per * (size_t)r < len ? per * (size_t)r : len;
  *share = len - lo < per ? len - lo : per;
  return lo;
}

#endif
