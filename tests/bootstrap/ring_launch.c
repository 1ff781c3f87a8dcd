/* ring_launch.c — a rank started by a launcher: fold_init, check the transport chosen for every peer, pass a token around the ring. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "transport/transport.h"

/* Usage: ring_launch EXPECTED_KIND (shm|tcp) */
int main(int argc, char **argv) {
  int want = argc > 1 && strcmp(argv[1], "tcp") == 0 ? FOLD__TP_KIND_TCP : FOLD__TP_KIND_SHM;
  fold_comm *c = NULL;
  int rc = fold_init(&c);
  if (rc != FOLD_OK) {
    fprintf(stderr, "fold_init: %s: %s\n", fold_strerror(rc), fold_comm_last_error(NULL));
    return 10;
  }
  int r = fold_comm_rank(c), n = fold_comm_size(c), bad = 0;
  for (int p = 0; p < n; p++) {
    if (p == r)
      continue;
    if (c->peer_tp[p] == NULL || c->peer_tp[p]->ops->kind != want) {
      fprintf(stderr, "rank %d: peer %d uses %s, wanted kind %d\n", r, p,
              c->peer_tp[p] ? c->peer_tp[p]->ops->name : "nothing", want);
      bad = 1;
    }
  }
  /* two laps with a growing token: every hop is checked by the next rank */
  long tok = 0;
  for (int lap = 0; lap < 2 && rc == FOLD_OK; lap++) {
    if (r == 0) {
      rc = fold_send(&tok, 1, FOLD_INT64, 1 % n, lap, c);
      if (rc == FOLD_OK)
        rc = fold_recv(&tok, 1, FOLD_INT64, n - 1, lap, c);
      long expect = (long)(lap + 1) * n * (n - 1) / 2;
      if (rc == FOLD_OK && tok != expect) {
        fprintf(stderr, "lap %d: token %ld, expected %ld\n", lap, tok, expect);
        bad = 1;
      }
    } else {
      rc = fold_recv(&tok, 1, FOLD_INT64, r - 1, lap, c);
      tok += r;
      if (rc == FOLD_OK)
        rc = fold_send(&tok, 1, FOLD_INT64, (r + 1) % n, lap, c);
    }
  }
  if (rc != FOLD_OK)
    fprintf(stderr, "rank %d: %s\n", r, fold_comm_last_error(c));
  else if (r == 0 && !bad)
    printf("ring of %d ranks: token %ld after 2 laps\n", n, tok);
  fold_comm_destroy(c);
  return rc != FOLD_OK ? 11 : bad ? 12 : 0;
}
