/* tcp_lazy.c — tcp connections on first use: sockets follow the peers talked to, simultaneous connects, a never-contacted dead rank is named. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/internal.h"
#include "fold.h"
#include "transport/tcp/tcp.h"

/* Usage: tcp_lazy CASE N MODE   (MODE: lazy or eager, FOLD_TCP_CONNECT)
 * Forks N ranks over tcp meeting at a file store.
 *   ring   each rank sends to its right neighbour and receives from its
 *          left one, small (eager) and large (rendezvous) messages, in
 *          order; then counts its data connections: 2 when lazy (N >= 3),
 *          N - 1 when eager. Every pair dials at once from both ends (the
 *          send on one side, the posted receive on the other).
 *   all    every rank sends 50 numbered messages to every other rank at
 *          once, then receives every peer's 50: none lost, duplicated or
 *          out of order whatever connection won each pair; N - 1 connections.
 *   kill   rank N-1 never talks to anyone and is SIGKILLed after init;
 *          every other rank posts a receive from it: FOLD_EPEER naming rank
 *          N-1 (and no other rank as lost) within 10 s (FOLD_TIMEOUT 30). */

static int conns(fold_comm *c) {
  for (int i = 0; i < c->ntps; i++)
    if (c->tps[i]->ops->kind == FOLD__TP_KIND_TCP)
      return fold__tcp_conn_count(c->tps[i]);
  return -1;
}

static int ring(fold_comm *c, int lazy) {
  int n = c->size, r = c->rank, right = (r + 1) % n, left = (r + n - 1) % n;
  enum { BIG = 1 << 20 };
  int *big = malloc(BIG * sizeof *big), *got = malloc(BIG * sizeof *got);
  if (!big || !got)
    return 20;
  int bad = 0;
  for (int it = 0; it < 3 && !bad; it++) {
    for (int i = 0; i < BIG; i++)
      big[i] = r * 7 + i + it;
    int v = r * 100 + it, w = -1;
    fold_request *rq[4];
    if (fold_irecv(&w, 1, FOLD_INT32, left, it, c, &rq[0]) || fold_irecv(got, BIG, FOLD_INT32, left, 100 + it, c, &rq[1]) ||
        fold_isend(&v, 1, FOLD_INT32, right, it, c, &rq[2]) || fold_isend(big, BIG, FOLD_INT32, right, 100 + it, c, &rq[3]))
      return 21;
    for (int k = 0; k < 4; k++)
      if (fold_wait(rq[k]) != FOLD_OK) {
        printf("rank %d: iteration %d request %d: %s\n", r, it, k, fold_comm_last_error(c));
        return 22;
      }
    if (w != left * 100 + it)
      bad = 1;
    for (int i = 0; i < BIG && !bad; i++)
      bad = got[i] != left * 7 + i + it;
  }
  free(big);
  free(got);
  int k = conns(c), want = lazy ? (n > 2 ? 2 : 1) : n - 1;
  printf("rank %d: %d data connections (want %d)%s\n", r, k, want, bad ? "; WRONG DATA" : "");
  return bad || k != want ? 1 : 0;
}

static int all(fold_comm *c) {
  int n = c->size, r = c->rank;
  enum { M = 50 };
  fold_request **rq = calloc((size_t)n * M, sizeof *rq);
  int *out = calloc((size_t)n * M, sizeof *out), *in = calloc((size_t)n * M, sizeof *in);
  if (!rq || !out || !in)
    return 20;
  int nr = 0;
  for (int i = 0; i < M; i++)
    for (int q = 0; q < n; q++) {
      if (q == r)
        continue;
      out[q * M + i] = r * 1000 + i;
      if (fold_isend(&out[q * M + i], 1, FOLD_INT32, q, 5, c, &rq[nr++]))
        return 21;
    }
  for (int i = 0; i < nr; i++)
    if (fold_wait(rq[i]) != FOLD_OK)
      return 22;
  int bad = 0;
  for (int q = 0; q < n; q++)
    for (int i = 0; q != r && i < M; i++) {
      if (fold_recv(&in[q * M + i], 1, FOLD_INT32, q, 5, c) != FOLD_OK)
        return 23;
      if (in[q * M + i] != q * 1000 + i) /* same tag: arrival order is send order */
        bad = 1;
    }
  int k = conns(c);
  printf("rank %d: %d data connections (want %d)%s\n", r, k, n - 1, bad ? "; WRONG ORDER" : "");
  free(rq);
  free(out);
  free(in);
  return bad || k != n - 1 ? 1 : 0;
}

static int kill_case(fold_comm *c) {
  int n = c->size, victim = n - 1, v = 0;
  if (c->rank == victim) {
    usleep(300000);
    raise(SIGKILL);
  }
  double t0 = check_now_s();
  int rc = fold_recv(&v, 1, FOLD_INT32, victim, 9, c);
  double dt = check_now_s() - t0;
  const char *msg = fold_comm_last_error(c);
  int ok = rc == FOLD_EPEER && dt < 10.0 && check_names_only(msg, victim);
  printf("rank %d waiting on never-contacted rank %d: %s after %.3f s: %s\n", c->rank, victim, fold_strerror(rc),
         dt, msg);
  return ok ? 0 : 1;
}

typedef struct lazy_case {
  const char *cs;
  int lazy;
} lazy_case;

static int child(int rank, int n, const char *store, void *arg) {
  const char *cs = ((const lazy_case *)arg)->cs;
  int lazy = ((const lazy_case *)arg)->lazy;
  fold_comm *c;
  if (fold_comm_init(&c, rank, n, store)) {
    fprintf(stderr, "rank %d: init: %s\n", rank, fold_comm_last_error(NULL));
    return 10;
  }
  int k0 = conns(c), rc;
  if (lazy && k0 != 0) {
    printf("rank %d: %d data connections right after init (want 0)\n", rank, k0);
    return 11;
  }
  if (!strcmp(cs, "ring"))
    rc = ring(c, lazy);
  else if (!strcmp(cs, "all"))
    rc = all(c);
  else
    rc = kill_case(c);
  double t1 = check_now_s();
  fold_comm_destroy(c);
  if (check_now_s() - t1 > 5.0) {
    printf("rank %d: destroy took %.2f s\n", rank, check_now_s() - t1);
    rc = 12;
  }
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 4)
    return 2;
  const char *cs = argv[1];
  int n = atoi(argv[2]), lazy = !strcmp(argv[3], "lazy");
  if (n < 2 || n > 64)
    return 2;
  setenv("FOLD_TRANSPORT", "tcp", 1);
  setenv("FOLD_TCP_CONNECT", argv[3], 1);
  setenv("FOLD_TIMEOUT", "30", 1);
  lazy_case lc = {cs, lazy};
  check_ranks k;
  if (check_ranks_fork(&k, n, "lazy", child, &lc))
    return 2;
  int fails = check_ranks_wait(&k, !strcmp(cs, "kill") ? n - 1 : -1, 100);
  printf("%s\n", fails ? "FAIL" : "PASS");
  return fails ? 1 : 0;
}
