/* shm_tp.h — the shared-memory transport's state and the calls its files share (private to src/transport/shm/).
 *
 * shm.c holds the vtable, the lifecycle, waiting and peer loss; shm_send.c
 * streams sends into the peers' rings, shm_recv.c takes messages out of
 * ours, shm_area.c runs the collective area (transport.h, fold__area). */
#ifndef FOLD_SHM_TP_H
#define FOLD_SHM_TP_H

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "engine/engine.h"
#include "transport/shm/shm_ring.h"
#include "transport/shm/shm_seg.h"

#define MSG_MAGIC 0x47534d46u        /* "FMSG" */
#define EAGER_MAX (64u << 10)         /* unexpected messages up to this are "eager" */
#define MSG_MAX (1ull << 40)          /* 1 TiB: larger lengths are refused */
#define CHECK_NS 10000000             /* liveness check period: 10 ms */
#define SLEEP_CAP_NS 50000000         /* longest futex sleep: 50 ms */
#define LINK_MIN (64u << 10)          /* sends this big are timed for the link's rate */

/* The frame of a message in a ring; the payload follows. */
typedef struct msg_hdr {
  uint32_t magic;
  int32_t ctx;
  int32_t tag;
  uint32_t cid;   /* communicator id (0: the world; docs/comm.md) */
  uint64_t bytes;
} msg_hdr;
_Static_assert(sizeof(msg_hdr) == 24, "msg_hdr must have no padding");

/* A receipt: the receiver's answer to an answered message (below), sent
 * back through its own ring to the sender, between messages. seq is the
 * message's number among the answered ones from that sender (both sides
 * count them in ring order, so the header carries no number); status is
 * FOLD_OK (matched to a receive big enough), FOLD_EMISMATCH (refused: room
 * is the receive buffer's size) or FOLD_EABORTED (discarded unreceived: the
 * communicator it was for is gone). The same size as msg_hdr: a ring
 * holds whole frames of either kind, told apart by the magic. */
#define RCPT_MAGIC 0x52534d46u       /* "FMSR" */
typedef struct rcpt_hdr {
  uint32_t magic;
  int32_t status;
  uint32_t seq;
  uint32_t zero;
  uint64_t room;
} rcpt_hdr;
_Static_assert(sizeof(rcpt_hdr) == sizeof(msg_hdr), "a receipt is one frame header long");

/* Answered messages: user point-to-point messages over EAGER_MAX. Their
 * send completes at the receiver's receipt, not when the last byte is in
 * the ring, so that a refusal fails the send as over tcp. */
static inline int fold__shm_answered(int ctx, uint64_t bytes) {
  return ctx == FOLD__CTX_P2P && bytes > EAGER_MAX;
}

typedef struct fold__shm_peer {
  int rank, pid, pidfd;
  int live;                      /* 0 once lost */
  char why[64];                  /* how it was lost */
  fold__shm_map map;             /* its header page and the slot we write */
  fold__ring out;                /* producer side of map.slot */
  fold__ring in;                 /* consumer side of our slot for it */
  struct sockaddr_un bell_addr;  /* its doorbell socket (abstract name) */
  socklen_t bell_len;
  /* sends to this peer, oldest first (we hold a reference on each) */
  fold__list sq;                 /* fold_request.link */
  int sq_hdr_done;               /* the head's frame header is in the ring */
  int64_t tx_t0;                 /* when the head's header went in, if it is large (LINK_MIN); else 0 */
  fold__meter tx_meter;          /* ns per byte of the large sends to this peer (the vtable's link) */
  /* the message being received from this peer */
  int rx_active;
  int rx_ctx, rx_tag;
  uint32_t rx_cid;
  uint64_t rx_bytes, rx_off;
  fold_request *rx_req;          /* matched receive (referenced), or */
  fold__unexp *rx_unexp;         /* buffer for an unmatched message; both NULL: discard */
  /* receipts (rarely used: last, so that the fields above keep their cache lines) */
  uint32_t tx_seq;               /* answered messages sent to this peer so far */
  /* answered sends streamed whole, waiting for their receipt (a reference
   * each; tp_data holds the message's number) */
  fold__list ack;                /* fold_request.link */
  rcpt_hdr *rc;                  /* receipts to write to this peer, oldest first */
  int rc_n, rc_cap;
  int rx_answer;                 /* the message is answered: rx_seq is its number */
  uint32_t rx_seq, rx_seq_next;  /* answered messages received from this peer so far: rx_seq_next */
} fold__shm_peer;

typedef struct fold__shm_tp {
  fold__tp base;
  fold__shm_map own;
  uint64_t own_ring;             /* ring size of the own segment */
  fold__shm_peer *peers;               /* c->size entries; connected ones have map.hdr */
  int *watch;                    /* ranks of connected peers */
  int nwatch;
  struct pollfd *pfd;            /* scratch for the pidfd check */
  int *pfd_rank;
  uint32_t bell_seen;            /* doorbell sequence read at the start of poll */
  uint64_t area_seen;            /* sum of the peers' collective counters, read at the start of poll */
  int more;                      /* poll stopped early: wait must not sleep */
  int moved;                     /* poll moved bytes or completed something */
  int oversub;                   /* more local ranks than CPUs we may run on */
  int64_t next_check;            /* next liveness check (fold__now) */
  int down, down_status;         /* shut down (fail-stop) */
  fold__shm_area *area;          /* every rank's collective area, or NULL (shm_area.c) */
  fold__list kids;               /* fold__shm_area.link: the areas of sub-communicators made so far (shm_kid.c) */
  int bell_fd;                   /* own doorbell socket (bound on first wait_fd), or -1 */
  int tx_fd;                     /* unbound socket we ring peers' doorbell sockets with */
} fold__shm_tp;

/* Tell the owner of p's segment that something changed (shm.c). */
void fold__shm_ring_bell(fold__shm_tp *t, fold__shm_peer *p);
/* Fail the communicator: the ring `what` ("ring to", "ring from") p is corrupt (shm.c). */
int fold__shm_corrupt(fold__shm_tp *t, fold__shm_peer *p, const char *what);
/* Bytes copied per ring step: a quarter ring, so that the other side works
 * on one part while we copy the next. */
static inline size_t fold__shm_chunk_of(const fold__ring *r) { return (size_t)(r->size / 4); }

/* ---- shm_send.c ---- */
/* The vtable's isend. */
int fold__shm_isend(fold__tp *tp, fold_request *r);
/* Stream queued sends to p until the queue is empty or the ring is full.
 * Returns 0 or the communicator's failure status. */
int fold__shm_push(fold__shm_tp *t, fold__shm_peer *p);

/* Queue receipt (seq, status, room) to p and write it now if p's ring is
 * between messages (else after the message in progress). Nothing when p is
 * lost or the transport is down. Returns 0 or the communicator's failure
 * status. */
int fold__shm_answer(fold__shm_tp *t, fold__shm_peer *p, uint32_t seq, int status, uint64_t room);
/* Write the receipts queued for p, and nothing else (a rank leaving:
 * shm.c): 0 all written, 1 some wait (p's ring is full, or a message to p
 * is half written), <0 the ring is corrupt. */
int fold__shm_push_receipts(fold__shm_tp *t, fold__shm_peer *p);
/* A receipt arrived from p: complete the send it answers. Returns 0 or the
 * communicator's failure status. */
int fold__shm_receipt(fold__shm_tp *t, fold__shm_peer *p, const rcpt_hdr *h);
/* An answered message buffered whole and not yet received: the engine
 * keeps it as a rendezvous record (u->tp is the transport, u->cookie points
 * at this, just past the payload) and the vtable's pull delivers it and
 * sends the receipt. */
typedef struct fold__shm_held {
  int rank;                      /* the sender, in the transport's numbering */
  uint32_t seq;
} fold__shm_held;

/* ---- shm_recv.c ---- */
/* Receive from p's ring until it is empty or `budget` bytes were taken.
 * Returns 0 or the communicator's failure status. */
int fold__shm_drain(fold__shm_tp *t, fold__shm_peer *p, uint64_t budget);

/* ---- shm_area.c ---- */
/* An area for `size` ranks (this one `rank`) with data slots of
 * slot_bytes, its arrays allocated and zero; NULL when out of memory.
 * delete frees it (not its mappings); NULL is fine. */
fold__shm_area *fold__shm_area_new(fold__shm_tp *t, int rank, int size, size_t slot_bytes);
void fold__shm_area_delete(fold__shm_area *a);
/* Make t->area when every peer is reached through t and every segment
 * carries an area of the same slot size; else leave it NULL (logged). */
void fold__shm_area_make(fold__shm_tp *t);
void fold__shm_area_free(fold__shm_tp *t);
/* The sum of every peer's collective counters, over the world's area and
 * the children's: it changes whenever a peer publishes a collective flag
 * (counters only grow). */
uint64_t fold__shm_area_sum(const fold__shm_tp *t);
/* The vtable's coll: the world's area, or a child's (shm_kid.c). */
fold__area *fold__shm_coll(fold__tp *tp, fold_comm *c);

/* ---- shm_kid.c: the areas of sub-communicators ---- */
/* Sub-communicator c's area (made, without segments, on first use and kept
 * in an extension slot of c), or NULL when c has none: some peer is not
 * reached through t or its area differs from ours (the verdict is kept). */
fold__area *fold__shm_kid_area(fold__shm_tp *t, fold_comm *c);
/* Make this rank's segment of a child's area (named after ours and the
 * cid) and ring the peers. Returns 0 or a negative code (message in the
 * child's last error). */
int fold__shm_kid_make(fold__shm_area *a);
/* Map the peers' segments that exist by now: 1 all mapped, 0 some not
 * yet, <0 the child failed (a peer lost before it made its area: FOLD_EPEER;
 * an unusable one). */
int fold__shm_kid_connect(fold__shm_area *a, fold__area_call *call);
/* Every peer mapped our segment: unlink its name. */
void fold__shm_kid_unlink(fold__shm_area *a);
/* For a timeout's message: the peers whose area is not mapped yet; returns
 * the first of them or -1. */
int fold__shm_kid_describe(fold__shm_area *a, char *buf, size_t cap);

#endif /* FOLD_SHM_TP_H */
