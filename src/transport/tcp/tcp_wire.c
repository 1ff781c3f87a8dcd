/* tcp_wire.c — encoding and strict validation of TCP transport frame headers. */
#include "transport/tcp/tcp_wire.h"

#include "fold.h"

/* Explicit little-endian accessors: the wire format must not depend on the
 * host's byte order or on struct layout. */
static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

static void put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static void put64(uint8_t *p, uint64_t v) {
  put32(p, (uint32_t)v);
  put32(p + 4, (uint32_t)(v >> 32));
}

static int bad(fold__tcp_frame *f, const char *why) {
  f->why = why;
  return FOLD_EINVAL;
}

int fold__tcp_frame_parse(const void *buf, size_t len, fold__tcp_frame *f) {
  const uint8_t *p = buf;
  f->why = NULL;
  if (len < FOLD__TCP_HDR)
    return 0;
  if (get32(p) != FOLD__TCP_MAGIC)
    return bad(f, "bad magic");
  if (p[5] != 0 || p[6] != 0 || p[7] != 0)
    return bad(f, "reserved header bytes are not zero");
  f->type = p[4];
  f->ctx = get32(p + 8);
  uint32_t tag = get32(p + 12);
  f->len = get64(p + 16);
  f->cookie = get64(p + 24);
  f->cid = get32(p + 32);
  if (get32(p + 36) != 0)
    return bad(f, "reserved header bytes are not zero");
  if (tag > INT32_MAX)
    return bad(f, "negative tag");
  f->tag = (int32_t)tag;
  switch (f->type) {
  case FOLD__TCP_EAGER:
    if (!fold__ctx_valid(f->ctx))
      return bad(f, "unknown message context");
    if (f->len > fold__tcp_eager_max(f->ctx))
      return bad(f, (f->ctx & 3) == FOLD__CTX_COLL ? "eager payload longer than 1 MiB" : "eager payload longer than 64 KiB");
    if (f->cookie != 0)
      return bad(f, "eager frame with a cookie");
    break;
  case FOLD__TCP_RTS:
    if (!fold__ctx_valid(f->ctx))
      return bad(f, "unknown message context");
    if (f->len == 0)
      return bad(f, "rendezvous of 0 bytes");
    break;
  case FOLD__TCP_CTS:
  case FOLD__TCP_NACK:
  case FOLD__TCP_RDATA:
    if (f->ctx != 0 || f->tag != 0 || f->cid != 0)
      return bad(f, "control frame with a context, tag or communicator id");
    if (f->type != FOLD__TCP_NACK && f->len == 0)
      return bad(f, "rendezvous of 0 bytes");
    break;
  default:
    return bad(f, "unknown frame type");
  }
  return FOLD__TCP_HDR;
}

void fold__tcp_frame_encode(void *out, const fold__tcp_frame *f) {
  uint8_t *p = out;
  put32(p, FOLD__TCP_MAGIC);
  p[4] = (uint8_t)f->type;
  p[5] = p[6] = p[7] = 0;
  put32(p + 8, f->ctx);
  put32(p + 12, (uint32_t)f->tag);
  put64(p + 16, f->len);
  put64(p + 24, f->cookie);
  put32(p + 32, f->cid);
  put32(p + 36, 0);
}

const char *fold__tcp_frame_name(int type) {
  switch (type) {
  case FOLD__TCP_EAGER: return "EAGER";
  case FOLD__TCP_RTS: return "RTS";
  case FOLD__TCP_CTS: return "CTS";
  case FOLD__TCP_NACK: return "NACK";
  case FOLD__TCP_RDATA: return "RDATA";
  default: return "?";
  }
}
