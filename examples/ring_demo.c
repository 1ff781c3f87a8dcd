/* ring_demo.c — the demo: every rank passes a growing token around a ring and reports. */
#include <stdio.h>

#include "fold.h"

int main(void) {
  fold_comm *comm;
  int rc = fold_init(&comm);
  if (rc != FOLD_OK) {
    fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
    return 1;
  }
  int rank = fold_comm_rank(comm), size = fold_comm_size(comm);
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  /* The token starts at rank 0; each rank adds its rank number and passes it on. */
  long token = 0;
  if (rank == 0) {
    rc = fold_send(&token, 1, FOLD_INT64, right, 0, comm);
    if (rc == FOLD_OK) rc = fold_recv(&token, 1, FOLD_INT64, left, 0, comm);
    if (rc == FOLD_OK)
      printf("token came back to rank 0 with value %ld (expected %ld) after %d hops\n", token,
             (long)size * (size - 1) / 2, size);
  } else {
    rc = fold_recv(&token, 1, FOLD_INT64, left, 0, comm);
    token += rank;
    if (rc == FOLD_OK) rc = fold_send(&token, 1, FOLD_INT64, right, 0, comm);
    if (rc == FOLD_OK) printf("rank %d of %d passed the token on\n", rank, size);
  }
  if (rc != FOLD_OK) fprintf(stderr, "rank %d: %s\n", rank, fold_comm_last_error(comm));
  fold_comm_destroy(comm);
  return rc == FOLD_OK ? 0 : 1;
}
