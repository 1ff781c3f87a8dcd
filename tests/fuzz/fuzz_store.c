/* fuzz_store.c — libFuzzer target: the store's frame parser (both directions), store URLs and business cards on arbitrary bytes. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/store.h"
#include "core/internal.h"
#include "transport/transport.h"

/* The few core functions the parsers report through, without the engine. */
int fold__error(fold_comm *comm, int status, const char *fmt, ...) { return status; }
int fold__log_level_env(void) { return FOLD__LOG_NONE; }
void fold__log(int level, int rank, const char *fmt, ...) {}
/* store.c dispatches to the clients; they are not fuzzed here (no I/O). */
int fold__store_tcp_open(const fold__store_url *u, const fold__auth_key *key, const char *claim, int64_t deadline_ns,
                         fold__store **out) { return FOLD_EINVAL; }
int fold__store_file_open(const fold__store_url *u, fold__store **out) { return FOLD_EINVAL; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  int mode = data[0] % 4;
  const uint8_t *p = data + 1;
  size_t n = size - 1;
  if (mode <= 1) {
    /* A stream of frames, as the server (mode 0) or the client (mode 1)
     * reads it: every accepted frame must lie inside the input and obey
     * the limits; a refusal must say why. */
    size_t off = 0;
    while (off < n) {
      fold__store_frame f;
      int r = fold__store_parse_frame(p + off, n - off, mode, &f);
      if (r < 0) {
        if (f.why == NULL)
          abort();
        break;
      }
      if (r == 0)
        break;
      if ((size_t)r > n - off || f.klen > FOLD__STORE_KEY_MAX || f.vlen > FOLD__STORE_VAL_MAX ||
          (size_t)r != FOLD__STORE_HDR + f.klen + f.vlen || f.key != p + off + FOLD__STORE_HDR)
        abort();
      if (mode == 0 && !fold__store_key_ok((const char *)f.key, f.klen))
        abort();
      /* any prefix of a valid frame is "incomplete", never an error */
      fold__store_frame g;
      if (fold__store_parse_frame(p + off, (size_t)r - 1, mode, &g) != 0)
        abort();
      off += (size_t)r;
    }
  } else if (mode == 2) {
    char *s = malloc(n + 1);
    memcpy(s, p, n);
    s[n] = '\0';
    fold__store_url u;
    if (fold__store_url_parse(s, &u) == 0) {
      if (u.kind == FOLD__STORE_TCP && (u.port < 1 || u.port > 65535 || u.host[0] == '\0'))
        abort();
      if (u.kind == FOLD__STORE_FILE && u.path[0] != '/')
        abort();
    }
    free(s);
  } else {
    fold__card c, d;
    if (fold__card_decode(&c, (const char *)p, n) == 0) {
      /* a card that decodes re-encodes to the same text */
      char text[512];
      int m = fold__card_encode(&c, text, sizeof text);
      if (m < 0 || (size_t)m != n || memcmp(text, p, n) != 0 || fold__card_decode(&d, text, (size_t)m) != 0 ||
          memcmp(&c, &d, sizeof c) != 0)
        abort();
    }
  }
  return 0;
}
