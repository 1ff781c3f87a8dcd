/* engine_handler_mp.c — a handler on rank 0 receives unsolicited messages
 * from every other rank, eager and rendezvous (over tcp past 64 KiB), in
 * order, with real processes: run under foldrun -n N over shm and tcp. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/engine.h"
#include "fold.h"

#define K 20                 /* eager messages per sender */
#define BIG (200 * 1024)     /* rendezvous on tcp */
#define NMAX 16

typedef struct state {
  int n, bad, next[NMAX];
  int nbig;
  fold_request *big_req[NMAX];
  unsigned char *big_buf[NMAX];
} state;

static int ctx(void) { return fold__ctx_ext(3); }

static unsigned char pattern(int src, size_t i) { return (unsigned char)(src * 31 + i * 7 + (i >> 9)); }

/* tag k < K: payload (src, k); tag 1000: BIG bytes, taken with a receive. */
static void handler(fold_comm *c, void *arg, int src, int tag, const void *data, size_t bytes) {
  state *s = arg;
  if (src <= 0 || src >= NMAX) {
    s->bad++;
    return;
  }
  if (tag == 1000) {
    CHECK(bytes == BIG, "rank 0: big message of %zu bytes from rank %d", bytes, src);
    /* tcp sends it rendezvous: the data waits at the sender for a receive */
    if (strcmp(fold_comm_transport(c), "tcp") == 0) CHECK(data == NULL, "rank 0: rank %d's big message came eager over tcp", src);
    s->big_buf[src] = malloc(BIG);
    CHECK(fold__irecv_bytes(c, s->big_buf[src], BIG, src, ctx(), tag, &s->big_req[src]) == FOLD_OK,
          "rank 0: receive for rank %d's big message", src);
    s->nbig++;
    /* every eager message a rank sent before its big one came first */
    CHECK(s->next[src] == K, "rank 0: rank %d's big message after %d of its %d eager ones", src, s->next[src], K);
    return;
  }
  int32_t v[2];
  if (data == NULL || bytes != sizeof v) {
    s->bad++;
    return;
  }
  memcpy(v, data, sizeof v);
  if (v[0] != src || v[1] != tag || tag != s->next[src]) s->bad++;
  s->next[src] = tag + 1;
  s->n++;
}

int main(void) {
  fold_comm *c;
  int rc = fold_init(&c);
  if (rc != FOLD_OK) {
    fprintf(stderr, "fold_init: %s\n", fold_comm_last_error(NULL));
    return 1;
  }
  int me = fold_comm_rank(c), n = fold_comm_size(c);
  CHECK(n <= NMAX, "too many ranks");
  state s;
  memset(&s, 0, sizeof s);
  if (me == 0) CHECK_OK(fold__handler_set(c, ctx(), handler, &s), c);
  CHECK_OK(fold_barrier(c), c); /* the handler is in place before anyone sends */
  if (me == 0) {
    int64_t end = fold__now(c) + 30000000000LL;
    int done = 0;
    while (!done && fold__now(c) < end) {
      CHECK_OK(fold_progress(c), c);
      done = s.n == K * (n - 1) && s.nbig == n - 1;
      for (int p = 1; p < n && done; p++) done = fold__req_done(s.big_req[p]);
    }
    CHECK(done, "rank 0: %d of %d eager and %d of %d big messages", s.n, K * (n - 1), s.nbig, n - 1);
    CHECK(s.bad == 0, "rank 0: %d messages out of order or wrong", s.bad);
    for (int p = 1; p < n; p++) {
      if (!s.big_req[p]) continue;
      CHECK_OK(fold_wait(s.big_req[p]), c);
      int wrong = 0;
      for (size_t i = 0; i < BIG; i++) wrong += s.big_buf[p][i] != pattern(p, i);
      CHECK(wrong == 0, "rank 0: %d wrong bytes in rank %d's big message", wrong, p);
      free(s.big_buf[p]);
    }
  } else {
    int32_t v[K][2];
    unsigned char *big = malloc(BIG);
    for (size_t i = 0; i < BIG; i++) big[i] = pattern(me, i);
    fold_request *r[K + 1];
    for (int k = 0; k < K; k++) {
      v[k][0] = me;
      v[k][1] = k;
      CHECK_OK(fold__isend_bytes(c, v[k], sizeof v[k], 0, ctx(), k, &r[k]), c);
    }
    CHECK_OK(fold__isend_bytes(c, big, BIG, 0, ctx(), 1000, &r[K]), c);
    for (int k = 0; k <= K; k++) CHECK_OK(fold_wait(r[k]), c);
    free(big);
  }
  CHECK_OK(fold_barrier(c), c);
  fold_comm_destroy(c);
  return check_report("engine_handler_mp");
}
