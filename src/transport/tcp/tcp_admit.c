/* tcp_admit.c — the table of accepted data connections still proving themselves: its size, accept with eviction, its poll set. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/tcp/tcp.h"
#include "transport/tcp/tcp_admit.h"

int fold__tcp_admit_init(fold_comm *c, fold__tcp_admit *t) {
  int cap = FOLD__TCP_ADMIT_MAX;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 4 < (rlim_t)cap)
    cap = (int)(rl.rlim_cur / 4);
  if (cap < 16)
    cap = 16;
  t->n = 0;
  t->cap = cap;
  t->in = malloc((size_t)cap * sizeof *t->in);
  t->pf = malloc((size_t)(cap + 2) * sizeof *t->pf);
  if (t->in == NULL || t->pf == NULL) {
    free(t->in);
    free(t->pf);
    t->in = NULL;
    t->pf = NULL;
    return fold__error(c, FOLD_ENOMEM, "out of memory");
  }
  return 0;
}

void fold__tcp_admit_free(fold__tcp_admit *t) {
  while (t->n > 0)
    fold__tcp_admit_drop(t, 0);
  free(t->in);
  free(t->pf);
  t->in = NULL;
  t->pf = NULL;
}

void fold__tcp_admit_drop(fold__tcp_admit *t, int i) {
  close(t->in[i].fd);
  t->in[i] = t->in[--t->n];
}

void fold__tcp_admit_take(fold__tcp_admit *t, int i) { t->in[i] = t->in[--t->n]; }

int fold__tcp_admit_accept(fold_comm *c, fold__tcp_admit *t, int lfd, int64_t deadline) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    /* Out of descriptors or memory: the connection stays queued and the
     * listener readable; pause rather than spin on it. Else EAGAIN, or a
     * connection that died in the backlog. */
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
      fold__sleep_ns(10000000);
    return -1;
  }
  int64_t now = fold__clock_mono(NULL);
  if (t->n == t->cap) {
    int old = 0; /* in[] is not in accept order, hence the search */
    for (int i = 1; i < t->n; i++)
      if (t->in[i].since < t->in[old].since)
        old = i;
    if (now - t->in[old].since < FOLD__TCP_ADMIT_AGE_NS) {
      FOLD__TRACE(c, "tcp: rank %d: too many unproven data connections; refusing a new one", c->rank);
      close(fd);
      return -2;
    }
    FOLD__WARN(c, "tcp: rank %d: too many unproven data connections; dropping the oldest, from %s", c->rank,
               t->in[old].from);
    fold__tcp_admit_drop(t, old);
  }
  fold__tcp_unproven *h = &t->in[t->n];
  int64_t hd = now + FOLD__TCP_HANDSHAKE_NS < deadline ? now + FOLD__TCP_HANDSHAKE_NS : deadline;
  if (fold__auth_srv_start(&h->a, hd) < 0) {
    close(fd);
    return -2;
  }
  h->fd = fd;
  h->since = now;
  if (fold__tcp_addr_format((struct sockaddr *)&ss, h->from, sizeof h->from) < 0)
    snprintf(h->from, sizeof h->from, "?");
  return t->n++;
}

int fold__tcp_admit_pollset(fold__tcp_admit *t, int first) {
  for (int i = 0; i < t->n; i++)
    t->pf[first + i] = (struct pollfd){.fd = t->in[i].fd, .events = (short)fold__auth_srv_events(&t->in[i].a)};
  return first + t->n;
}
