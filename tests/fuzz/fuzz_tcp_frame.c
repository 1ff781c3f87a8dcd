/* fuzz_tcp_frame.c — libFuzzer target: a byte stream parsed as tcp transport frames must never crash or accept an invalid header. */
#include <stdint.h>
#include <string.h>

#include "transport/tcp/tcp_wire.h"

/* Walk the input as the receiver walks a stream: header, payload, header...
 * Every accepted header must satisfy the documented limits and re-encode to
 * the very bytes it came from (nothing ignored, nothing normalised). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t off = 0;
  while (off < size) {
    fold__tcp_frame f;
    int rc = fold__tcp_frame_parse(data + off, size - off, &f);
    if (rc == 0) {
      if (size - off >= FOLD__TCP_HDR)
        __builtin_trap(); /* asked for more with a whole header there */
      break;
    }
    if (rc < 0) {
      if (f.why == NULL)
        __builtin_trap(); /* refusals must say why */
      break;
    }
    if (rc != FOLD__TCP_HDR || f.tag < 0)
      __builtin_trap();
    switch (f.type) {
    case FOLD__TCP_EAGER:
      if (f.len > fold__tcp_eager_max(f.ctx) || !fold__ctx_valid(f.ctx) || f.cookie != 0)
        __builtin_trap();
      break;
    case FOLD__TCP_RTS:
      if (f.len == 0 || !fold__ctx_valid(f.ctx))
        __builtin_trap();
      break;
    case FOLD__TCP_CTS:
    case FOLD__TCP_NACK:
    case FOLD__TCP_RDATA:
      if (f.ctx != 0 || f.tag != 0 || (f.type != FOLD__TCP_NACK && f.len == 0))
        __builtin_trap();
      break;
    default:
      __builtin_trap();
    }
    uint8_t again[FOLD__TCP_HDR];
    fold__tcp_frame_encode(again, &f);
    if (memcmp(again, data + off, FOLD__TCP_HDR) != 0)
      __builtin_trap();
    off += FOLD__TCP_HDR;
    uint64_t pay = fold__tcp_frame_payload(&f);
    if (pay > size - off)
      break;
    off += (size_t)pay;
  }
  return 0;
}
