/* log_probe.c — a rank for the log tests: fold_init, an allreduce, optionally strangers at the store, then an abort whose error it prints once. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fold.h"

/* Usage: log_probe [N]: with N, rank 0 sends N strangers (junk, then close)
 * to the tcp store named by FOLD_STORE before the final barrier. */
int main(int argc, char **argv) {
  int strangers = argc > 1 ? atoi(argv[1]) : 0;
  fold_comm *c = NULL;
  int rc = fold_init(&c);
  if (rc != FOLD_OK) {
    fprintf(stderr, "log_probe: fold_init: %s\n", fold_comm_last_error(NULL));
    return 10;
  }
  int r = fold_comm_rank(c), n = fold_comm_size(c), x = 1, y = 0;
  rc = fold_allreduce(&x, &y, 1, FOLD_INT32, FOLD_SUM, c);
  if (rc != FOLD_OK || y != n) {
    fprintf(stderr, "log_probe: rank %d: allreduce: %d (%s)\n", r, y, fold_comm_last_error(c));
    return 11;
  }
  const char *store = getenv("FOLD_STORE");
  const char *colon = store ? strrchr(store, ':') : NULL;
  if (strangers > 0 && r == 0 && colon && strncmp(store, "tcp://127.0.0.1:", 16) == 0) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1)),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    char junk[40];
    memset(junk, 'x', sizeof junk);
    for (int i = 0; i < strangers; i++) {
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
          send(fd, junk, sizeof junk, MSG_NOSIGNAL) < 0) {
        /* a refused stranger is what we want; nothing to do */
      }
      if (fd >= 0)
        close(fd);
    }
  }
  if ((rc = fold_barrier(c)) != FOLD_OK) {
    fprintf(stderr, "log_probe: rank %d: barrier: %s\n", r, fold_comm_last_error(c));
    return 12;
  }
  /* A returned failure: the program prints it; fold must not print it too
   * (at the default level). */
  fold_comm_abort(c);
  rc = fold_barrier(c);
  fprintf(stderr, "log_probe: rank %d: %s: %s\n", r, fold_strerror(rc), fold_comm_last_error(c));
  fold_comm_destroy(c);
  return rc == FOLD_EABORTED ? 0 : 13;
}
