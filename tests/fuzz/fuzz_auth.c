/* fuzz_auth.c — libFuzzer target: arbitrary bytes as the client's PROOF to the auth server, and as the server's HELLO/OK to the client. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/auth.h"
#include "core/internal.h"

int fold__log_level_env(void) { return FOLD__LOG_NONE; }
void fold__log(int level, int rank, const char *fmt, ...) {}

static int64_t mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fold__auth_key key;
  static int init;
  if (!init) {
    fold__auth_key_derive(&key, "fuzz-token", NULL);
    init = 1;
  }
  if (size == 0 || size > 4096) /* stays within one socket buffer */
    return 0;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    return 0;
  fcntl(sv[0], F_SETFL, O_NONBLOCK);
  if (data[0] & 1) {
    /* server side: HELLO goes out, the input comes in, then EOF */
    fold__auth_srv a;
    if (fold__auth_srv_start(&a, mono() + 1000000000LL) == 0) {
      int rc = fold__auth_srv_step(&a, sv[0], &key, mono());
      if (write(sv[1], data + 1, size - 1) < 0) {
      }
      shutdown(sv[1], SHUT_WR);
      for (int i = 0; i < 8 && rc == 0; i++)
        rc = fold__auth_srv_step(&a, sv[0], &key, mono());
      /* without the key no input can be a valid proof */
      if (rc == 1)
        abort();
      if (rc == 0 && a.in_len > FOLD__AUTH_PROOF_MAX)
        abort();
    }
  } else {
    /* client side: the input is what the "server" says, then EOF */
    if (write(sv[0], data + 1, size - 1) < 0) {
    }
    shutdown(sv[0], SHUT_WR);
    int rc = fold__auth_client(sv[1], &key, "store rank 1", mono() + 1000000000LL);
    if (rc == 0) /* accepting needs the server's MAC over our fresh nonce */
      abort();
  }
  close(sv[0]);
  close(sv[1]);
  return 0;
}
