/* blame_rank.c — a rank of an allreduce loop that rank 2 leaves (killed, exiting or stopped): survivors print whom they blame. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fold.h"

/* Usage (under foldrun): blame_rank kill|exit|stop
 * Every rank runs allreduces; at iteration 20 rank 2 raises SIGKILL (kill),
 * exits with status 4 without destroying its communicator (exit), or stops
 * itself with SIGSTOP (stop: the others time out; foldrun's SIGKILL ends
 * it, since a stopped process cannot act on SIGTERM). Each
 * survivor prints "BLAME <status> <message>" for its first failure and exits
 * 3; blame_test.sh checks whom the messages name. SIGTERM is ignored, so
 * that foldrun's stop after rank 2's end does not cut a survivor off
 * before it reports (foldrun's SIGKILL after 3 s still bounds the job). */
int main(int argc, char **argv) {
  int kill_mode = argc > 1 && strcmp(argv[1], "kill") == 0;
  int stop_mode = argc > 1 && strcmp(argv[1], "stop") == 0;
  signal(SIGTERM, SIG_IGN);
  fold_comm *c;
  if (fold_init(&c) != FOLD_OK) {
    fprintf(stderr, "init: %s\n", fold_comm_last_error(NULL));
    return 10;
  }
  int rank = fold_comm_rank(c);
  for (int i = 0; i < 100000; i++) {
    if (rank == 2 && i == 20) {
      if (kill_mode) raise(SIGKILL);
      if (stop_mode) raise(SIGSTOP);
      _exit(4);
    }
    int v = rank + i, sum = 0;
    int rc = fold_allreduce(&v, &sum, 1, FOLD_INT32, FOLD_SUM, c);
    if (rc != FOLD_OK) {
      fprintf(stderr, "BLAME %s %s\n", fold_strerror(rc), fold_comm_last_error(c));
      fold_comm_destroy(c);
      return 3;
    }
  }
  fprintf(stderr, "BLAME none: rank %d finished every allreduce\n", rank);
  fold_comm_destroy(c);
  return 0;
}
