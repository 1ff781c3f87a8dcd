/* tcp_tp.h — the TCP transport's state and the calls its files share (private to src/transport/tcp/).
 *
 * tcp.c holds the vtable, the lifecycle, waiting and peer loss; tcp_send.c
 * frames and writes sends (eager frames, RTS, control frames); tcp_recv.c
 * reads frames and delivers them (eager, rendezvous CTS/NACK/RDATA);
 * tcp_lazy.c makes connections on first use (FOLD_TCP_CONNECT=lazy), whose
 * acceptor thread is tcp_accept.c (their shared state: tcp_lazy.h). */
#ifndef FOLD_TCP_TP_H
#define FOLD_TCP_TP_H

#include <stdatomic.h>
#include <sys/epoll.h>

#include "engine/engine.h"
#include "transport/tcp/tcp.h"
#include "transport/tcp/tcp_wire.h"


#define TCP_SCRATCH (256 * 1024)        /* read staging, shared by all peers of a rank */
#define TCP_DIRECT_MIN (16 * 1024)      /* payload rests this big are read straight into place */
#define TCP_IO_CHUNK ((size_t)1 << 30)  /* largest iovec: stays below Linux's 0x7ffff000 per call */
#define TCP_TX_ITEMS 32                 /* frames gathered into one sendmsg */
#define TCP_EVENTS 64
#define TCP_RX_ROUNDS 16                /* reads per peer per poll: one fast sender cannot starve the rest */
#define TCP_LINK_MIN (64 * 1024)        /* a send this big, once written, samples the kernel's delivery rate */

/* What a send request is doing, kept in r->rdv (the transport owns it). */
enum { TX_EAGER = 1, TX_RTS = 2, TX_RDATA = 3 };
/* Which queue's head holds a frame that is partly written (tx_cur). */
enum { TX_CUR_NONE = 0, TX_CUR_CTL = 1, TX_CUR_REQ = 2 };

/* A control frame (CTS or NACK) waiting to be written. */
typedef struct fold__tcp_ctl {
  fold__list link; /* the peer's ctl queue */
  size_t off; /* bytes already written */
  uint8_t hdr[FOLD__TCP_HDR];
} fold__tcp_ctl;

/* An RTS that matched no posted receive: the cookie of its fold__unexp
 * record until the receive is posted (pull) or the comm is freed. */
typedef struct fold__tcp_rdv_in {
  fold__list link; /* the transport's rdv_in */
  int peer;
  uint64_t cookie;
} fold__tcp_rdv_in;

typedef struct fold__tcp_peer {
  int fd;   /* -1: no connection (self, other transport, gone, shut down) */
  int rank;
  int gone; /* the connection broke or the peer left */
  int reading_last; /* fold__tcp_peer_gone is reading what p sent before it went */
  int made; /* a connection to this peer was made (it may have closed since) */
  /* sending: data frames (requests, by their link) and control frames;
   * frames go out back to back, so a partly written one is finished first */
  fold__list txq;
  fold__list ctl;
  int tx_cur;
  int pollout; /* EPOLLOUT is registered */
  int dirty;   /* on the transport's flush list */
  fold__list cts_wait;  /* requests: RTS written, waiting for CTS/NACK (cookie in tp_data) */
  uintptr_t next_cookie;
  /* receiving */
  uint8_t part[FOLD__TCP_HDR]; /* a header split across reads */
  size_t part_len;
  int rx_body;                 /* a payload is arriving */
  fold__tcp_frame rx;          /* ... with this header */
  char *rx_dst;                /* where its bytes go; NULL: discard */
  uint64_t rx_left;
  fold_request *rx_req;        /* receive being filled (we hold a reference) */
  fold__unexp *rx_unexp;       /* or unexpected record being filled */
  fold__list rdata_wait;       /* receives: CTS sent, waiting for RDATA (cookie in tp_off, length in got) */
  fold__meter rate;            /* ns per byte from the kernel's delivery rates (the vtable's link) */
  int rate_due;                /* a large send was written: time its delivery (fold__tcp_link_check) */
  int64_t rate_t0;             /* ... from when it was written */
  long rate_bytes;             /* ... the bytes then still to deliver, plus large sends written since */
  struct fold__tcp_dial *dial; /* lazy: our connection attempt to this peer, until it is up (tcp_lazy.c) */
} fold__tcp_peer;

/* epoll data: a peer's data socket is its rank; the lazy connection
 * machinery's sockets carry a kind in the high word (tcp_lazy.c). */
#define FOLD__TCP_EV_KIND(d) ((uint32_t)((d) >> 32))
#define FOLD__TCP_EV_ID(d) ((uint32_t)(d))

typedef struct fold__tcp_tp {
  fold__tp base;
  int epfd;
  int down;            /* shut down: no more I/O */
  fold__tcp_peer *peers;     /* [comm size] */
  int *flush;          /* peers with frames queued during a poll */
  int nflush;
  fold__list rdv_in;   /* fold__tcp_rdv_in */
  uint8_t *scratch;
  struct epoll_event ev[TCP_EVENTS]; /* events seen by wait(), used by the next poll() */
  int nev;
  int rate_due;        /* peers with rate_due set */
  struct fold__tcp_lazy *lazy; /* connections on first use (tcp_lazy.c); NULL: all made at init */
  int lazy_busy;       /* attempts pending: poll then runs fold__tcp_lazy_tick */
} fold__tcp_tp;

static inline int fold__tcp_tx_state(const fold_request *r) {
  return atomic_load_explicit(&((fold_request *)r)->rdv, memory_order_relaxed);
}

static inline void fold__tcp_set_tx_state(fold_request *r, int s) { atomic_store_explicit(&r->rdv, s, memory_order_relaxed); }

static inline uint64_t fold__tcp_send_cookie(const fold_request *r) { return (uint64_t)(uintptr_t)r->tp_data; }

/* ---- tcp.c ---- */
/* Register or drop EPOLLOUT for p's socket. */
void fold__tcp_set_pollout(fold__tcp_tp *t, fold__tcp_peer *p, int on);
/* Put p on the flush list (frames queued during a batch or a poll). */
void fold__tcp_mark_dirty(fold__tcp_tp *t, fold__tcp_peer *p);
/* The connection to p broke (err: errno, 0 for an orderly close) or p left.
 * A send that found it broken calls this too: the frames p sent before it
 * went (a failure report naming the rank it failed on) are read and
 * delivered first, so that they decide who is blamed. */
void fold__tcp_peer_gone(fold__tcp_tp *t, fold__tcp_peer *p, int err);
/* A large send of `bytes` to p was written: time its delivery. Once
 * everything written to p is acknowledged (fold__tcp_link_check, from
 * every poll while one is due), the time per byte goes into p->rate (the
 * vtable's link). */
void fold__tcp_link_sample(fold__tcp_tp *t, fold__tcp_peer *p, uint64_t bytes);
void fold__tcp_link_check(fold__tcp_tp *t);
/* An authenticated peer broke the protocol: it counts as lost. */
void fold__tcp_proto_error(fold__tcp_tp *t, fold__tcp_peer *p, const char *what);

/* ---- tcp_send.c ---- */
/* The vtable's isend. */
int fold__tcp_isend(fold__tp *tp, fold_request *r);
/* Write as much of p's queued frames as the socket takes. */
void fold__tcp_tx_flush(fold__tcp_tp *t, fold__tcp_peer *p);
/* Queue a control frame (CTS or NACK) to p; 0 or a negative code. */
int fold__tcp_ctl_queue(fold__tcp_tp *t, fold__tcp_peer *p, int type, uint64_t len, uint64_t cookie);
/* Flush every peer on the flush list. */
void fold__tcp_flush_dirty(fold__tcp_tp *t);

/* ---- tcp_recv.c ---- */
/* Receive r was posted for p's RTS (len bytes, cookie): answer CTS, or NACK
 * if r is too small. 0 or a negative code. */
int fold__tcp_rdv_accept(fold__tcp_tp *t, fold__tcp_peer *p, fold_request *r, uint64_t len, uint64_t cookie);
/* Read and deliver what p's socket holds (a bounded number of reads). */
void fold__tcp_rx_drain(fold__tcp_tp *t, fold__tcp_peer *p);

/* tcp_conn.c: */
/* "data rank <r>" (a handshake claim) with r a plain decimal in [0, size): r; else -1. */
int fold__tcp_parse_claim(const char *s, int size);

/* ---- tcp_lazy.c ---- */
/* Peer p is needed (a send queued, a receive posted): connect if no
 * connection or attempt exists. No-op when the transport is not lazy. */
void fold__tcp_lazy_want(fold__tcp_tp *t, fold__tcp_peer *p);
/* An epoll event on one of the lazy machinery's descriptors (kind != 0):
 * an attempt's socket, or the acceptor's hand-over eventfd. */
void fold__tcp_lazy_event(fold__tcp_tp *t, uint64_t data, uint32_t events);
/* Deadlines and retry pauses of attempts (every poll while any is
 * pending: one counter test otherwise). */
void fold__tcp_lazy_tick(fold__tcp_tp *t);
/* Stop the acceptor thread; close the listener and the attempts; free the state. */
void fold__tcp_lazy_free(fold__tcp_tp *t);

#endif /* FOLD_TCP_TP_H */
