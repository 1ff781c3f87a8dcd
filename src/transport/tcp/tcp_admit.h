/* tcp_admit.h — the table of accepted data connections still proving themselves, and who gets a place in it under a flood; shared by the connects at init (tcp_conn.c) and on first use (tcp_accept.c). */
#ifndef FOLD_TCP_ADMIT_H
#define FOLD_TCP_ADMIT_H

#include <poll.h>
#include <stdint.h>

#include "core/internal.h"
#include "net/auth.h"

/* The policy. Anyone can connect to a listener, and a stranger that sends
 * nothing holds its place until it is dropped; a real peer proves itself
 * within a round trip of the HELLO, which goes out at accept. So every
 * connection gets a place, and when the table is full the oldest goes,
 * but only once it has been there FOLD__TCP_ADMIT_AGE_NS: a burst of
 * accepts cannot flush out a real peer before its proof is read (the
 * newcomer is closed instead, and a real one connects again).
 *
 * The table admits up to cap / AGE connections a second whatever the
 * flood: with 1,024 places and 50 ms, 20,000 a second. It had 64 places
 * and 200 ms (320 a second): under a flood of a few thousand a second a
 * real peer's attempt got a place about one time in ten, and a rendezvous
 * under ASan once took 18 s; under 37,000 a second it did not finish in
 * 20 s. */
#define FOLD__TCP_ADMIT_MAX 1024            /* places, fewer when the descriptor limit is low */
#define FOLD__TCP_ADMIT_AGE_NS 50000000LL   /* a place younger than this is not taken from it */
#define FOLD__TCP_HANDSHAKE_NS 2000000000LL /* one proof, from accept: a real peer needs a round trip */

typedef struct fold__tcp_unproven {
  int fd;
  int64_t since; /* accept time, CLOCK_MONOTONIC ns */
  char from[64];
  fold__auth_srv a;
} fold__tcp_unproven;

typedef struct fold__tcp_admit {
  fold__tcp_unproven *in; /* [cap], the first n in use, in no order */
  struct pollfd *pf;      /* [cap + 2]: the callers' poll sets, the table's fds from index `first` */
  int n, cap;
} fold__tcp_admit;

/* Size the table (FOLD__TCP_ADMIT_MAX places, at most a quarter of the
 * descriptor limit, at least 16). 0 or FOLD_ENOMEM (message on c). */
int fold__tcp_admit_init(fold_comm *c, fold__tcp_admit *t);
/* Close every connection left and free the table. */
void fold__tcp_admit_free(fold__tcp_admit *t);
/* Close and forget place i (the last one moves into it). */
void fold__tcp_admit_drop(fold__tcp_admit *t, int i);
/* Forget place i without closing its fd (its connection was taken). */
void fold__tcp_admit_take(fold__tcp_admit *t, int i);
/* Accept one waiting connection on lfd and give it a place, evicting or
 * refusing by the policy above; its proof starts with a deadline of
 * min(now + FOLD__TCP_HANDSHAKE_NS, deadline). Returns the new place's
 * index (step it at once: HELLO), -1 when no connection is waiting (or
 * accept failed: a pause was taken when out of descriptors), or -2 when
 * the connection was closed instead (go on accepting). */
int fold__tcp_admit_accept(fold_comm *c, fold__tcp_admit *t, int lfd, int64_t deadline);
/* The poll entries of the table's connections, from t->pf[first]; returns
 * first + t->n. */
int fold__tcp_admit_pollset(fold__tcp_admit *t, int first);
/* How many connections to accept in one pass before the proofs that came
 * in meanwhile are read: a quarter of the table. */
static inline int fold__tcp_admit_burst(const fold__tcp_admit *t) { return t->cap / 4; }

#endif /* FOLD_TCP_ADMIT_H */
