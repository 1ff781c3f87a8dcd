/* tcp_wire.h — the TCP transport's frame format and its pure parser.
 *
 * Every frame starts with a fixed 40-byte header (little-endian):
 *
 *   off size field
 *     0    4 magic   "FLD2" (format 1 had 32 bytes and no cid)
 *     4    1 type    FOLD__TCP_EAGER .. FOLD__TCP_RDATA
 *     5    1 flags   0 (reserved)
 *     6    2 pad     0 (reserved)
 *     8    4 ctx     message context (data frames: fold__ctx_valid), else 0
 *    12    4 tag     >= 0 (data frames), else 0
 *    16    8 length  see below
 *    24    8 cookie  names one rendezvous message between two ranks
 *    32    4 cid     communicator id (data frames: 0 is the world, a
 *                    sub-communicator's otherwise, docs/comm.md), else 0
 *    36    4 pad     0 (reserved)
 *
 * Frame types and what follows the header:
 *   EAGER  payload of `length` bytes (<= fold__tcp_eager_max(ctx)); cookie 0.
 *   RTS    nothing: "I have a message of `length` (>= 1) bytes for
 *          (ctx, tag)"; the receiver answers CTS or NACK once it matched.
 *   CTS    nothing: "send message `cookie`"; length repeats the message
 *          length (the sender checks it).
 *   NACK   nothing: "message `cookie` does not fit"; length is the
 *          receiver's capacity (for the sender's error message).
 *   RDATA  payload of `length` bytes: the data of message `cookie`, sent
 *          only after CTS, so it lands straight in the user's buffer.
 * Control frames (CTS, NACK) and RDATA carry ctx = tag = cid = 0: they are
 * matched by cookie, never by (cid, ctx, tag).
 */
#ifndef FOLD_TCP_WIRE_H
#define FOLD_TCP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"

#define FOLD__TCP_HDR 40
#define FOLD__TCP_MAGIC 0x32444c46u /* "FLD2" read little-endian */
#define FOLD__TCP_EAGER_MAX 65536u  /* larger messages use RTS/CTS */
/* A collective's messages go eager up to 1 MiB (the ring_segmented
 * allreduce's segment). Their receive is posted by the algorithm's own
 * step on the peer, and both sides compute the same size from the same
 * signature (whose digest is in the context, so a mismatched call never
 * matches): the RTS/CTS round trip only costs time there, and a lot of it
 * where the link is busy both ways. Measured over four network namespaces
 * at 1 Gbit/s, 4 ranks: with every 1 MiB segment waiting for its CTS
 * behind the data queued on the receiver's uplink, allreduce took ~10 %
 * longer from 2 MiB up (docs/tcp-perf.md). A rank running ahead buffers
 * at most the segments of its peers' next rounds. */
#define FOLD__TCP_EAGER_COLL_MAX (1u << 20)
static inline uint64_t fold__tcp_eager_max(uint32_t ctx) {
  return (ctx & 3) == FOLD__CTX_COLL ? FOLD__TCP_EAGER_COLL_MAX : FOLD__TCP_EAGER_MAX;
}
#define FOLD__TCP_NCTX FOLD__CTX_COUNT /* contexts without a digest are below this (fold__ctx_valid) */

enum {
  FOLD__TCP_EAGER = 1,
  FOLD__TCP_RTS = 2,
  FOLD__TCP_CTS = 3,
  FOLD__TCP_NACK = 4,
  FOLD__TCP_RDATA = 5
};

typedef struct fold__tcp_frame {
  int type;
  uint32_t ctx;
  int32_t tag;
  uint64_t len;
  uint64_t cookie;
  uint32_t cid;
  const char *why; /* set by a failed parse: what was wrong (static text) */
} fold__tcp_frame;

/* Parse one header from buf[0..len). Pure: no I/O, no allocation.
 * Returns FOLD__TCP_HDR when a valid header was parsed into *f, 0 when
 * len < FOLD__TCP_HDR (need more bytes), or FOLD_EINVAL when the header is
 * malformed (f->why says how). The payload length to skip after the header
 * is fold__tcp_frame_payload(f). */
int fold__tcp_frame_parse(const void *buf, size_t len, fold__tcp_frame *f);

/* Write the header for *f into out[FOLD__TCP_HDR]. Encoding a parsed header
 * gives back the same bytes. */
void fold__tcp_frame_encode(void *out, const fold__tcp_frame *f);

/* Bytes of payload that follow a valid header of this frame. */
static inline uint64_t fold__tcp_frame_payload(const fold__tcp_frame *f) {
  return (f->type == FOLD__TCP_EAGER || f->type == FOLD__TCP_RDATA) ? f->len : 0;
}

/* Name of a frame type for logs ("EAGER", ...; "?" if unknown). */
const char *fold__tcp_frame_name(int type);

#endif /* FOLD_TCP_WIRE_H */
