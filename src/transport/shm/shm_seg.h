/* shm_seg.h — the layout of a rank's shared-memory segment and the calls
 * shm.c and shm_seg.c share (private to the shm transport).
 *
 * Segment of rank r ("/fold-<job>-<r>", created by r, mapped by its peers):
 *
 *   offset 0                      fold__shm_hdr (one page)
 *   offset 4096 + i * stride      ring slot i: carries messages from rank i
 *                                 to r; control block, then ring_bytes data
 *   stride = 4096 + ring_bytes    (rounded up to a page multiple, so a peer
 *                                 maps only the header page and its own slot)
 *   offset 4096 + n * stride      the collective area (if coll_slot_bytes):
 *                                 fold__shm_ctl (one page), then two data
 *                                 slots of coll_slot_bytes each; written
 *                                 only by r, read by every peer (mapped
 *                                 read-only there); see shm_area.c
 *
 * Only r reads its rings and sleeps on its doorbell; rank i writes slot i
 * and rings r's doorbell. tmpfs is sparse: slots nobody writes cost no
 * memory.
 */
#ifndef FOLD_SHM_SEG_H
#define FOLD_SHM_SEG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"
#include "transport/transport.h"

#define FOLD__SHM_MAGIC 0x314d48534c4f46ull /* "FOLSHM1" */
#define FOLD__SHM_VERSION 3
#define FOLD__SHM_PAGE 4096u
#define FOLD__SHM_NAME_MAX 64 /* = sizeof card->shm */

typedef struct fold__shm_hdr {
  /* written once by the owner before its card is published */
  uint64_t magic;
  uint32_t version;
  int32_t pid;          /* owner process */
  int32_t rank;         /* owner rank */
  int32_t nranks;       /* number of ring slots */
  uint64_t ring_bytes;  /* data bytes per ring (a power of two) */
  uint64_t seg_bytes;   /* total segment size */
  uint64_t coll_slot_bytes; /* collective area data slot size (page multiple), 0: no area */
  /* owner destroyed its communicator: it reads no ring any more */
  _Atomic uint32_t gone;
  /* The doorbell, on its own line: `bell` is a sequence number senders bump
   * after publishing data (or after freeing space for a blocked producer);
   * it is also the futex word the owner sleeps on. `sleeping`: bit 0, the
   * owner sleeps on the futex; above it, how many of the owner's threads
   * sleep on its doorbell socket (2 each; shm.c, wait_arm) and want a
   * datagram too. */
  _Alignas(64) _Atomic uint32_t bell;
  _Atomic uint32_t sleeping;
} fold__shm_hdr;

_Static_assert(sizeof(fold__shm_hdr) <= FOLD__SHM_PAGE, "segment header larger than a page");

/* One mapping: the whole own segment, or a peer's header page + one slot. */
typedef struct fold__shm_map {
  fold__shm_hdr *hdr;  /* header page (NULL if not mapped) */
  void *slot;          /* ring slot: own segment: slot 0 (slots follow);
                          peer: the slot this rank writes */
  size_t hdr_bytes, slot_bytes;
  uint64_t ring_bytes; /* ring size, as chosen (own) or checked at map time
                          (peer): the header is writable by peers, so it is
                          never re-read */
  char name[FOLD__SHM_NAME_MAX];
  void *coll;          /* collective area (fold__shm_ctl, then two slots), or NULL */
  size_t coll_bytes;   /* its mapped length */
  uint64_t coll_slot;  /* its data slot size, as chosen (own) or checked (peer) */
  int single;          /* 1: hdr..hdr+hdr_bytes is one mapping holding slot and coll */
  int owner;           /* 1: this process created it (unlinks it) */
  int unlinked;
  int sig_slot;        /* 1 + its slot in the SIGTERM/SIGINT cleanup registry, 0 if none */
} fold__shm_map;

/* Byte distance between ring slots of a segment with ring_bytes rings: a
 * page for the control block, then the data rounded up to whole pages (so
 * that every slot starts on a page and can be mapped alone). */
static inline uint64_t fold__shm_stride(uint64_t ring_bytes) {
  return FOLD__SHM_PAGE + ((ring_bytes + FOLD__SHM_PAGE - 1) & ~(uint64_t)(FOLD__SHM_PAGE - 1));
}

/* ---- the collective area -------------------------------------------------
 * Per-rank words the chunk loop (shm_area.c) publishes, each on its own
 * cache line so that a rank spinning on one peer's flag does not steal the
 * line another is writing. Counters only grow: the value for the chunk
 * with global index g is g + 1, so nothing is ever reset between calls. */
typedef struct fold__shm_csig {
  uint32_t chunk; /* global index of the chunk this signature goes with (low 32 bits) */
  uint32_t index; /* the chunk's index within its call: a different sequence of calls shows here */
  uint32_t words[FOLD__AREA_SIG_WORDS]; /* the call's signature (fold__area_call.sig) */
} fold__shm_csig;

/* `arrive` shares its cache line with the two signatures: a peer that sees
 * the counter move has the signature it must check in the same line, one
 * transfer between cores instead of two. */
typedef struct fold__shm_ctl {
  _Alignas(64) _Atomic uint64_t arrive; /* my data for chunk g is in my slot */
  fold__shm_csig sig[2];                /* by chunk parity, written before `arrive` */
  _Alignas(64) _Atomic uint64_t mid;    /* my reduced sub-block of chunk g is in my slot */
  /* A call this rank runs with a round algorithm (not shm) while shm is
   * usable: its sequence number + 1 and its note (fold__area_ops.note_round),
   * so that shm-running ranks waiting for this rank's `arrive` in the same
   * call see the mismatch instead of waiting for ever (shm_area.c). */
  _Atomic uint32_t round_seq;        /* 0 while round_sig is being written */
  _Atomic uint64_t round_sig[FOLD__AREA_NOTE_WORDS]; /* word by word, release; read back as a seqlock */
  _Alignas(64) _Atomic uint64_t done;   /* I finished reading every slot of chunk g */
} fold__shm_ctl;
_Static_assert(sizeof(fold__shm_csig) == 28, "signature must be 28 bytes");
_Static_assert(offsetof(fold__shm_ctl, mid) == 64, "arrive and the signatures must fill one cache line");
_Static_assert(sizeof(fold__shm_ctl) <= FOLD__SHM_PAGE, "collective control block larger than a page");

static inline uint64_t fold__shm_coll_area_bytes(uint64_t slot) { return slot ? FOLD__SHM_PAGE + 2 * slot : 0; }

/* Every rank's collective area, as this rank maps it; owned by the shm
 * transport (none when the area is off or some peer is not reached
 * through this transport). pub is what the collective layer sees
 * (transport.h, fold__tp_ops.coll). */
struct fold__shm_peer;
typedef struct fold__shm_area {
  fold__area pub;      /* first: a fold__area * is a fold__shm_area * */
  fold__shm_ctl **ctl; /* size entries; ctl[rank] is writable, the others read-only
                          (a child's: NULL until mapped) */
  uint64_t issued;     /* chunks handed out to calls so far (this rank) */
  uint64_t completed;  /* chunks of finished calls: the next call may start at this index */
  fold__tp *tp;
  struct fold__shm_peer **peer; /* size entries: whose doorbell a flag rings (NULL: this rank) */
  /* A sub-communicator's area (shm_kid.c): segments of its own, one per
   * rank, made on first use. All zero/NULL on the world's area. */
  fold_comm *comm;     /* the sub-communicator */
  fold__shm_map *maps; /* size entries: maps[rank] our segment, the others the peers' (hdr NULL: not yet) */
  int missing;         /* peers whose segment is not mapped yet */
  int made;            /* 1: our segment exists (ctl[rank] is valid) */
  int linked;          /* our segment's name is still linked: some peer may not have mapped it */
  fold__list link;     /* the transport's list of children's areas (t->kids) */
} fold__shm_area;

/* Unlink the name of m if this process owns it and has not yet; idempotent. */
void fold__shm_map_unlink(fold__shm_map *m);
/* While a segment this process created is linked, SIGTERM and SIGINT
 * unlink it before they take effect (shm_signal.c; installed at the first
 * registration, over the dispositions the program had). register returns
 * the registry slot of `name` ("/fold-..."), or -1 if the registry is
 * full; unregister frees a slot (-1: nothing). */
int fold__shm_signal_register(const char *name);
void fold__shm_signal_unregister(int slot);
/* Unmap m (unlinking it first if owned); idempotent. */
void fold__shm_map_release(fold__shm_map *m);

/* Create, size and map read-write a new segment `name` of `bytes` bytes
 * into m (one mapping: m->hdr, m->hdr_bytes; m->single, m->owner set; the
 * name registered for SIGTERM/SIGINT cleanup). A stale segment of that
 * name whose owner process is gone is removed first. Returns 0 or a
 * negative code with a message naming rank and segment. */
int fold__shm_seg_create(fold_comm *c, const char *name, uint64_t bytes, fold__shm_map *m);
/* Map segment `name`, read-only and whole, into m once it exists with
 * `bytes` bytes and its header's magic (written last, release) is set:
 * 1 mapped, 0 not there yet (try again later), <0 -errno of a failure. */
int fold__shm_seg_open_ro(const char *name, uint64_t bytes, fold__shm_map *m);

/* Build the transport from the connected mappings (shm.c). Takes ownership
 * of own, of every peers[p] with peers[p].hdr != NULL and of pidfds[p] >= 0
 * (arrays of c->size entries), also on failure; pids[p] is the peer's pid
 * for messages. */
int fold__shm_tp_new(fold_comm *c, fold__shm_map *own, fold__shm_map *peers, const int *pids,
                     const int *pidfds, fold__tp **out);

#endif /* FOLD_SHM_SEG_H */
