/* place.c — where keys live: greedy by bytes over the servers, arrays above the big-array bound split over all. */
#include <stdlib.h>

#include "kv/kv.h"

int fold__kv_place_init(fold__kv_place *p, int nservers, size_t bound) {
  p->nservers = nservers;
  p->bound = bound;
  p->bytes = calloc((size_t)nservers, sizeof *p->bytes);
  return p->bytes ? FOLD_OK : FOLD_ENOMEM;
}

void fold__kv_place_free(fold__kv_place *p) {
  free(p->bytes);
  p->bytes = NULL;
}

void fold__kv_shard(size_t count, int n, int i, size_t *off, size_t *len) {
  /* the first count % n shards get one element more: sizes differ by at most one */
  size_t base = count / (size_t)n, rem = count % (size_t)n, ui = (size_t)i;
  *off = ui * base + (ui < rem ? ui : rem);
  *len = base + (ui < rem ? 1 : 0);
}

/* Greedy in the order keys are initialised (every worker initialises the
 * same keys in the same order, so every worker computes the same answer
 * without talking): a key goes to the server holding the fewest bytes so
 * far, ties to the lowest. MXNet's hash placement instead left one of
 * four servers with far more bytes (apache/mxnet#8290). A key above the
 * bound is split evenly: every server gets its shard. */
int fold__kv_place_key(fold__kv_place *p, size_t count, size_t esize) {
  if (count > p->bound && p->nservers > 1) {
    for (int i = 0; i < p->nservers; i++) {
      size_t off, len;
      fold__kv_shard(count, p->nservers, i, &off, &len);
      p->bytes[i] += (uint64_t)len * esize;
    }
    return -1;
  }
  int best = 0;
  for (int i = 1; i < p->nservers; i++)
    if (p->bytes[i] < p->bytes[best]) best = i;
  p->bytes[best] += (uint64_t)count * esize;
  return best;
}

double fold__kv_place_imbalance(const fold__kv_place *p) {
  uint64_t max = 0, sum = 0;
  for (int i = 0; i < p->nservers; i++) {
    sum += p->bytes[i];
    if (p->bytes[i] > max) max = p->bytes[i];
  }
  if (sum == 0) return 0.0;
  return (double)max / ((double)sum / p->nservers);
}
