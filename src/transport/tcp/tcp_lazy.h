/* tcp_lazy.h — connections on first use: the state shared by the transport's own calls (tcp_lazy.c) and the acceptor thread (tcp_accept.c); private to src/transport/tcp/. */
#ifndef FOLD_TCP_LAZY_H
#define FOLD_TCP_LAZY_H

#include <pthread.h>
#include <sys/socket.h>

#include "net/auth.h"
#include "transport/tcp/tcp_tp.h"

/* A pair's state, as the decisions on both threads see it (st[], under mu). */
enum {
  FOLD__LZ_IDLE = 0, /* no connection, no attempt */
  FOLD__LZ_DIALING,  /* our attempt is in progress (connecting, proving, waiting for the decision, pausing) */
  FOLD__LZ_WAITIN,   /* our attempt was refused: the peer's own is on its way */
  FOLD__LZ_UP,       /* the pair's connection is decided (it may be handed over but not taken yet) */
  FOLD__LZ_GONE      /* the peer refused our connect: it is lost */
};

typedef struct fold__tcp_lazy {
  fold_comm *c; /* the acceptor reads only rank, size and the log level */
  fold__auth_key key;
  struct sockaddr_storage *addr; /* [size] the peers' listeners */
  socklen_t *alen;
  uint8_t *use; /* [size] the peers this rank reaches over tcp; read-only once made */
  int ndial;    /* attempts in progress (the transport's thread only) */
  char claim[FOLD__AUTH_CLAIM_MAX + 1];
  /* shared with the acceptor thread, under mu */
  pthread_mutex_t mu;
  uint8_t *st;  /* [size] FOLD__LZ_* */
  int *handed;  /* [size] a connection the acceptor decided for, not yet taken by the transport, or -1 */
  int nhanded;
  /* the acceptor thread */
  int lfd;      /* the data listener: the acceptor's alone while it runs */
  int stop_fd;  /* eventfd: the acceptor stops */
  int ready_fd; /* eventfd in the transport's epoll: a connection was handed over */
  pthread_t th;
  int th_started;
} fold__tcp_lazy;

/* ---- tcp_accept.c ---- */
/* Start the acceptor thread on z->lfd: it accepts, authenticates and
 * decides every connection to this rank (strangers refused), so a peer's
 * first send needs no call of this rank; each connection it keeps is put
 * in z->handed and announced on z->ready_fd. Returns 0 or a negative code
 * (message on z->c). */
int fold__tcp_accept_start(fold__tcp_lazy *z);
/* Stop and join it; closes the handshakes it had in progress. */
void fold__tcp_accept_stop(fold__tcp_lazy *z);

#endif /* FOLD_TCP_LAZY_H */
