/* sigterm_rank.c — a rank that a signal ends inside fold_init, with or without a SIGTERM handler of its own. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fold.h"

/* Usage (under foldrun): sigterm_rank plain|chain
 * The last rank never calls fold_init (it sleeps, or exits 3 after 2 s
 * when FOLD_TEST_LAST_EXITS is set), so the others wait in the rendezvous
 * with their shm segments made until foldrun ends them with SIGTERM (or
 * forwards a SIGINT). chain: the program installs its own SIGTERM and
 * SIGINT handler before fold_init, which fold must call (it prints
 * "CHAINED <sig>" and exits 7). */
static void handler(int sig) {
  char msg[32];
  int n = snprintf(msg, sizeof msg, "CHAINED %d\n", sig);
  if (n > 0) (void)!write(2, msg, (size_t)n);
  _exit(7);
}

int main(int argc, char **argv) {
  int chain = argc > 1 && strcmp(argv[1], "chain") == 0;
  const char *r = getenv("FOLD_RANK"), *n = getenv("FOLD_SIZE");
  if (r && n && atoi(r) == atoi(n) - 1) {
    if (getenv("FOLD_TEST_LAST_EXITS")) {
      sleep(2);
      return 3;
    }
    sleep(60);
    return 0;
  }
  if (chain) {
    signal(SIGTERM, handler);
    signal(SIGINT, handler);
  }
  fold_comm *c;
  int rc = fold_init(&c);
  fprintf(stderr, "fold_init returned %s\n", fold_strerror(rc));
  if (rc == FOLD_OK) fold_comm_destroy(c);
  return 5;
}
