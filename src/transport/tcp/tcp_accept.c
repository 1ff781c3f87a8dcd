/* tcp_accept.c — the acceptor thread of connections on first use: accepts, authenticates and decides every data connection to this rank, whatever the rank's own thread is doing. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/tcp/tcp_admit.h"
#include "transport/tcp/tcp_lazy.h"

/* Why a thread: a connection needs the acceptor's part (accept, HELLO, the
 * check of the proof, the decision byte). Done by the transport's poll, a
 * peer's first send to a rank that makes no call (it computes, or waits
 * for something else) could not complete, where over a connection made at
 * init it goes into the socket buffers at once. The thread keeps that:
 * it answers at once, and the rank's own thread takes the connection at
 * its next call (tcp_lazy.c, fold__tcp_lazy_adopt). It touches nothing of
 * the transport but the listener, its own handshakes and, under z->mu, the
 * pairs' states and the handed-over connections. */

#define TCP_SLICE_MS 100 /* longest sleep between deadline checks */

typedef struct acc {
  fold__tcp_lazy *z;
  fold__tcp_admit t; /* the connections proving themselves (tcp_admit.h) */
} acc;

static void in_drop(acc *s, int i) { fold__tcp_admit_drop(&s->t, i); }

/* Handshake i proved itself as a.claim: keep it ('Y', handed over), refuse
 * it ('N': the pair's connection is another), or close it (not a peer). */
static void in_decide(acc *s, int i) {
  fold__tcp_lazy *z = s->z;
  fold_comm *c = z->c;
  fold__tcp_unproven *h = &s->t.in[i];
  int q = fold__tcp_parse_claim(h->a.claim, c->size);
  const char *bad = NULL;
  if (q < 0 || q == c->rank)
    bad = "claim is not a peer rank of this communicator";
  else if (!z->use[q])
    bad = "that rank does not use tcp with this rank";
  if (bad == NULL) {
    pthread_mutex_lock(&z->mu);
    int st = z->st[q];
    /* the higher rank's attempt wins a simultaneous connect (tcp_lazy.c) */
    int refuse = st == FOLD__LZ_UP || (st == FOLD__LZ_DIALING && c->rank > q);
    if (st == FOLD__LZ_GONE) {
      bad = "that rank was lost already";
    } else {
      char yes = refuse ? 'N' : 'Y';
      ssize_t n = send(h->fd, &yes, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (!refuse && n == 1) {
        z->st[q] = FOLD__LZ_UP;
        z->handed[q] = h->fd;
        z->nhanded++;
        uint64_t one = 1;
        ssize_t w = write(z->ready_fd, &one, sizeof one);
        (void)w;
        pthread_mutex_unlock(&z->mu);
        fold__tcp_admit_take(&s->t, i); /* the fd is the transport's now */
        return;
      }
      FOLD__TRACE(c, "tcp: rank %d: %s rank %d's connection", c->rank, refuse ? "refused (ours wins)" : "lost", q);
    }
    pthread_mutex_unlock(&z->mu);
  }
  if (bad)
    FOLD__WARN(c, "tcp: rank %d: refused a data connection from %s claiming \"%s\": %s", c->rank, h->from,
               h->a.claim, bad);
  in_drop(s, i);
}

/* Advance handshake i; returns 1 if it left in[] (decided or dropped). */
static int in_step(acc *s, int i, int64_t now) {
  fold__tcp_lazy *z = s->z;
  fold_comm *c = z->c;
  fold__tcp_unproven *h = &s->t.in[i];
  int rc = fold__auth_srv_step(&h->a, h->fd, &z->key, now);
  if (rc == 0)
    return 0;
  if (rc < 0) {
    /* A peer that closed mid-handshake (it failed, or gave up on us) is
     * no stranger; nor, often, is one whose proof is late: a peer that
     * dialed and then made no call for 2 s (it computes) dials again. */
    if (rc == FOLD_EPEER)
      FOLD__TRACE(c, "tcp: rank %d: a data connection from %s closed before its proof", c->rank, h->from);
    else if (rc == FOLD_ETIMEDOUT)
      FOLD__INFO(c, "tcp: rank %d: closed a data connection from %s that sent no proof within 2 s (a stranger, or a "
                 "rank that made no call since it dialed: it dials again)", c->rank, h->from);
    else
      FOLD__WARN(c, "tcp: rank %d: refused a data connection from %s (%s)", c->rank, h->from, fold_strerror(rc));
    in_drop(s, i);
    return 1;
  }
  in_decide(s, i);
  return 1;
}

/* Accept the waiting connections, a burst at most, each proof started at
 * once (HELLO), by the table's policy (tcp_admit.h). */
static void accept_all(acc *s) {
  for (int k = 0; k < fold__tcp_admit_burst(&s->t); k++) {
    int i = fold__tcp_admit_accept(s->z->c, &s->t, s->z->lfd, INT64_MAX);
    if (i == -1)
      return;
    if (i >= 0)
      in_step(s, i, fold__clock_mono(NULL));
  }
}

static void *acc_main(void *arg) {
  acc *s = arg;
  fold__tcp_lazy *z = s->z;
  fold__tcp_admit *t = &s->t;
  for (;;) {
    struct pollfd *pf = t->pf;
    pf[0] = (struct pollfd){.fd = z->stop_fd, .events = POLLIN};
    pf[1] = (struct pollfd){.fd = z->lfd, .events = POLLIN};
    int np = fold__tcp_admit_pollset(t, 2);
    int n = poll(pf, (nfds_t)np, TCP_SLICE_MS);
    if (n < 0 && errno != EINTR)
      break;
    if (n > 0 && (pf[0].revents & POLLIN))
      break;
    int64_t now = fold__clock_mono(NULL);
    /* Going down keeps pf[] valid: a removal moves only the last entry,
     * which was stepped already, into the freed slot. */
    for (int i = t->n - 1; i >= 0; i--)
      if ((n > 0 && pf[2 + i].revents) || now >= t->in[i].a.deadline_ns)
        in_step(s, i, now);
    if (n > 0 && (pf[1].revents & POLLIN))
      accept_all(s);
  }
  fold__tcp_admit_free(t);
  free(s);
  return NULL;
}

int fold__tcp_accept_start(fold__tcp_lazy *z) {
  acc *s = calloc(1, sizeof *s);
  if (s == NULL)
    return fold__error(z->c, FOLD_ENOMEM, "out of memory");
  s->z = z;
  int rc = fold__tcp_admit_init(z->c, &s->t);
  if (rc < 0) {
    free(s);
    return rc;
  }
  if (pthread_create(&z->th, NULL, acc_main, s) != 0) {
    fold__tcp_admit_free(&s->t);
    free(s);
    return fold__error(z->c, FOLD_ESYS, "tcp: cannot start the acceptor thread");
  }
  z->th_started = 1;
  return 0;
}

void fold__tcp_accept_stop(fold__tcp_lazy *z) {
  if (!z->th_started)
    return;
  uint64_t one = 1;
  ssize_t w = write(z->stop_fd, &one, sizeof one);
  (void)w;
  pthread_join(z->th, NULL);
  z->th_started = 0;
}
