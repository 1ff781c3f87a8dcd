/* tcp_harness.h — N ranks as threads of one process, wired by the tcp
 * transport alone (no store, no launcher): the test drives
 * fold__tcp_prepare/connect itself and exchanges the cards in memory. */
#ifndef FOLD_TEST_TCP_HARNESS_H
#define FOLD_TEST_TCP_HARNESS_H

#include <stdint.h>

#include "comm/comm.h"
#include "net/auth.h"
#include "fold.h"
#include "transport/transport.h"

#define TCP_H_MAX 16

typedef struct tcp_world {
  int n;
  fold_comm *c[TCP_H_MAX];
  fold__card card[TCP_H_MAX];
  void *state[TCP_H_MAX];
  int rc[TCP_H_MAX];        /* fold__tcp_connect's result per rank */
  int connect_mask;         /* ranks that call connect (bit per rank; 0 = all) */
  int delay_ms[TCP_H_MAX];  /* per rank: sleep this long before connecting */
  int64_t deadline_ns;      /* absolute, CLOCK_MONOTONIC */
  fold__auth_key key;       /* the job key ("tcp-test-token") */
} tcp_world;

/* Phase 1 for n ranks: allocate the comms and open their listeners, choosing
 * the interface for store_host. Returns 0 or the first error. */
int tcp_world_prepare(tcp_world *w, int n, const char *store_host);

/* Phase 2: every rank in connect_mask runs fold__tcp_connect in its own
 * thread (deadline timeout_s from now); successful ranks get their
 * transport attached (fold__comm_add_tp, peer_tp). Returns the number of
 * ranks whose connect failed (their codes are in w->rc). */
int tcp_world_connect(tcp_world *w, double timeout_s);

/* prepare + connect; returns 0 when every rank is connected. */
int tcp_world_create(tcp_world *w, int n, const char *store_host);

/* Run fn(comm of rank i, i, arg) on every rank in its own thread. */
typedef void (*tcp_rank_fn)(fold_comm *c, int rank, void *arg);
void tcp_world_run(tcp_world *w, tcp_rank_fn fn, void *arg);

/* Destroy every comm that is still there (NULL entries are skipped). */
void tcp_world_destroy(tcp_world *w);

/* Monotonic seconds. */
double tcp_now(void);

#endif
