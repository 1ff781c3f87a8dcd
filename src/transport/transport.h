/* transport.h — the transport vtable every transport implements, and the
 * bootstrap entry points of each transport. */
#ifndef FOLD_TRANSPORT_H
#define FOLD_TRANSPORT_H

#include "../core/internal.h"

/* (the transport kinds, FOLD__TP_KIND_*, are in core/internal.h: the
 * configuration names them) */

/* The vtable. All calls are made by the owner thread of the communicator
 * (inproc peers touch each other only through the inproc world's locks).
 *
 * Delivery contract: when a message header (src, ctx, tag, bytes) arrives,
 * the transport calls fold__match_posted(). On a match it writes the payload
 * into r->buf (at most r->bytes; a longer message completes r with
 * fold__recv_too_small() and its payload is discarded) and completes r with
 * fold__req_complete() once the last byte is in. Without a match it creates
 * an unexpected record (fold__unexp_new) and, once the whole payload is in
 * (eager) or at once (rendezvous, tp/cookie set), hands it over with
 * fold__deliver_unexp(). Messages of one (src, ctx, tag) are delivered in
 * the order they were sent. */
typedef struct fold__tp_ops {
  const char *name;
  int kind;
  /* Start sending r (FOLD__REQ_SEND) to r->peer. Either complete r before
   * returning, or take a reference (fold__req_ref) and complete it later
   * from poll()/another rank's progress. Returns 0, or a negative code when
   * the send cannot start (r is left incomplete; the caller reports). */
  int (*isend)(fold__tp *tp, fold_request *r);
  /* Non-blocking progress: move bytes, deliver arrivals, complete sends,
   * notice lost peers (then fold__peer_lost(), after delivering everything
   * the peer sent first).
   * Returns 0 or the communicator's failure status. */
  int (*poll)(fold__tp *tp);
  /* Sleep until this transport may have something new, or timeout_ns
   * passes. Must not lose a wake-up that happened after the last poll()
   * (use a sequence word read before polling). Returns 0. */
  int (*wait)(fold__tp *tp, int64_t timeout_ns);
  /* One sleep for several transports (engine/progress.c: a communicator
   * that mixes transports, and the progress thread). wait_fd returns a file
   * descriptor that is readable (level-triggered) while this transport may
   * have news for a sleeper that armed it, or -1 if it has none (the engine
   * then falls back to giving each transport a turn). wait_arm, called
   * after a poll() and before sleeping on the fd, announces the sleeper to
   * whoever must wake it; it returns 1 (nothing armed: do not sleep) when
   * news came since that poll (the same no-lost-wake-up rule as wait()),
   * else 0. Every wait_arm that returned 0 is followed by one wait_disarm
   * after the sleep, which also drains the fd. Sleepers may overlap (the
   * owner thread and the progress thread): the announcement counts them.
   * wait_fd and wait_arm are called by a thread holding the communicator;
   * the fd is polled, and wait_disarm called, without it (the progress
   * thread), so disarm may touch only atomics and the fd. All three may be
   * NULL (no fd). */
  int (*wait_fd)(fold__tp *tp);
  int (*wait_arm)(fold__tp *tp);
  void (*wait_disarm)(fold__tp *tp);
  /* Rendezvous: receive r was posted for unexpected record u created by this
   * transport. Move the data into r (now or from later polls), complete r,
   * and free u. Returns 0 or a negative code. With r == NULL the
   * communicator is being freed: discard u (release what it holds). */
  int (*pull)(fold__tp *tp, fold__unexp *u, fold_request *r);
  /* Fail-stop: stop all I/O at once, complete every request the transport
   * holds with `status` and drop its references. Idempotent. */
  void (*shutdown)(fold__tp *tp, int status);
  /* Write out the sends isend held back while c->tx_batch > 0 (the
   * transport may hold them only then). May be NULL: the transport never
   * holds sends. */
  void (*flush)(fold__tp *tp);
  /* Called once after the final bootstrap barrier (every rank connected):
   * e.g. unlink names that peers no longer need. May be NULL. */
  void (*joined)(fold__tp *tp);
  /* Free everything. Pending I/O is abandoned; peers see this rank lost. */
  void (*destroy)(fold__tp *tp);
} fold__tp_ops;

/* Every transport instance starts with this header. */
struct fold__tp {
  const fold__tp_ops *ops;
  fold_comm *comm;
};

/* ---- business cards -------------------------------------------------------
 * What each rank publishes in the store during bootstrap. */
typedef struct fold__card {
  char host[192];  /* hostname|boot_id|netns inode|pidns inode|ipcns inode:
                      equal strings mean shared memory between the two works */
  int32_t pid;
  char tcp[128];   /* data listener: "a.b.c.d:port" or "[v6]:port"; "" if none */
  char shm[64];    /* shared-memory segment name; "" if none */
} fold__card;

/* Fill host and pid for this process. */
int fold__card_self(fold__card *card);
/* Text form "host=..;pid=..;tcp=..;shm=.." (no field contains ';').
 * encode returns the length written (< cap) or -1; decode returns 0 or
 * FOLD_EINVAL for a malformed card. */
int fold__card_encode(const fold__card *card, char *buf, size_t cap);
int fold__card_decode(fold__card *card, const char *buf, size_t len);

/* ---- inproc: ranks are threads ----------------------------------------------- */
/* Create n communicators sharing one in-process world. */
int fold__inproc_create(int n, fold_comm **comms);

/* ---- shm: processes on one host ------------------------------------------------ */
/* Phase 1 (before publishing the card): create this rank's segment (sized
 * for `size` peers; tmpfs is sparse so unused rings cost nothing) and write
 * its name into card->shm. *state is passed to phase 2. */
int fold__shm_prepare(fold_comm *c, const char *job_id, fold__card *card, void **state);
/* Phase 2: map the segments of every peer p with use[p] != 0, watch their
 * pids for liveness, and return the transport. Frees state (also on error). */
int fold__shm_connect(fold_comm *c, void *state, const fold__card *cards, const uint8_t *use,
                      int64_t deadline, fold__tp **out);
/* Discard a phase-1 state without connecting (bootstrap failed). */
void fold__shm_abandon(void *state);

/* ---- tcp: hosts ----------------------------------------------------------------- */
struct fold__auth_key;
/* Phase 1: open the data listener on the interface FOLD_SOCKET_IFNAME selects
 * (default: the one whose address family/route reaches store_host, falling
 * back to loopback), write "addr:port" into card->tcp. */
int fold__tcp_prepare(fold_comm *c, const char *store_host, fold__card *card, void **state);
/* Phase 2: make one authenticated connection to every peer p with use[p]
 * (the higher rank connects to the lower), then close the listener.
 * Strangers that connect meanwhile are refused and logged. */
int fold__tcp_connect(fold_comm *c, void *state, const fold__card *cards, const uint8_t *use,
                      const struct fold__auth_key *key, int64_t deadline, fold__tp **out);
void fold__tcp_abandon(void *state);

/* ---- sim: simulated network ------------------------------------------------------- */
/* (public API in fold.h: fold_sim_create and friends) */

#endif /* FOLD_TRANSPORT_H */
