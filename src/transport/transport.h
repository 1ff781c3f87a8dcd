/* transport.h — the transport vtable every transport implements, and the
 * bootstrap entry points of each transport. */
#ifndef FOLD_TRANSPORT_H
#define FOLD_TRANSPORT_H

#include "../core/internal.h"

/* (the transport kinds, FOLD__TP_KIND_*, are in core/internal.h: the
 * configuration names them) */

/* ---- collectives through a shared collective area ----------------------------
 * A transport whose ranks are processes sharing memory may give every rank
 * a collective area: flag words and two data slots that the rank writes and
 * every peer reads. The `shm` algorithms of the collective layer
 * (src/coll/shm_coll.c) run on it through this interface alone, knowing
 * nothing else of the transport: the transport owns the flags, the chunk
 * loop, waiting and peer loss; the algorithm says what goes into its slot
 * and what it takes out of everyone's (src/transport/shm/shm_area.c is the
 * one implementation).
 *
 * A call is cut into chunks of at most one slot; chunk i of a call uses
 * slot s (0 or 1, alternating, so the fill of chunk i + 1 overlaps the
 * reading of chunk i). Per chunk every rank fills its slot, waits for every
 * rank's, compares call signatures, optionally runs a mid phase (and waits
 * for everyone's), drains, and says it is done with the chunk. */
typedef struct fold__area fold__area;

/* What one call does with chunk i (arg is the call's fold__area_call.arg;
 * mine is this rank's slot for the chunk):
 *   fill(arg, a, i, mine)  put this rank's part of chunk i into its slot
 *   mid(arg, a, i, s)      only in calls with use_mid: runs once every rank
 *                          filled chunk i; may write this rank's slot s
 *   drain(arg, a, i, s)    runs once every rank filled (and mid-ed) chunk i:
 *                          read the slots, write the user's buffers
 * Any may be NULL. None may block. */
typedef struct fold__area_kind {
  void (*fill)(void *arg, const fold__area *a, size_t i, char *mine);
  void (*mid)(void *arg, const fold__area *a, size_t i, int s);
  void (*drain)(void *arg, const fold__area *a, size_t i, int s);
} fold__area_kind;

/* A call's signature as the area carries it, in words only the layer above
 * interprets: equal words mean the same call. A call that runs a round
 * algorithm instead leaves a note of NOTE_WORDS words (note_round). */
enum { FOLD__AREA_SIG_WORDS = 5, FOLD__AREA_NOTE_WORDS = 4 };

/* How the layer above judges and reports for a call; each returns what the
 * step returns. */
typedef struct fold__area_hooks {
  /* Every rank filled chunk i, before any work on it: 1 to wait (a
   * straggler: the hook armed a timer that brings the next step), 0 to go. */
  int (*gate)(void *arg);
  /* Rank p filled this chunk under other signature words (theirs);
   * other_sequence: p's chunk had another index within its call. Report
   * (to every rank) and return the error. */
  int (*mismatch)(void *arg, int p, const uint32_t *theirs, int other_sequence);
  /* Rank p, still missing, runs this call (the same sequence number) with a
   * round algorithm: its note (NULL if it overwrote it meanwhile). Report
   * and return the error. */
  int (*round_mismatch)(void *arg, int p, const uint64_t *theirs);
} fold__area_hooks;

/* One call on an area: the layer above sets the first part before start(),
 * the transport keeps the rest. Lives as long as the call, no allocation. */
typedef struct fold__area_call {
  void *arg;
  const fold__area_hooks *hooks;
  fold_comm *comm;    /* the communicator whose peers fail the call when lost */
  const char *name;   /* the collective, for messages */
  uint32_t seq;       /* the call's sequence number on its communicator */
  uint32_t sig[FOLD__AREA_SIG_WORDS];
  int use_mid;
  uint64_t base, nchunks, fill, done; /* first global chunk, chunks, filled, drained */
  int phase, wait;    /* of the chunk being drained; the peer missing last */
} fold__area_call;

typedef struct fold__area_ops {
  /* Hand out the call's nchunks chunks (>= 1) in call order: every rank
   * makes the same calls, so chunk indices agree. Returns 0, or <0 when
   * this rank's area could not be made (a sub-communicator's is made on
   * first use): the transport then failed the communicator and told every
   * peer (no peer waits for an area that never comes). */
  int (*start)(fold__area *a, fold__area_call *call, uint64_t nchunks);
  /* The call's task step: 1 done, 0 waiting, <0 failed (a lost peer: the
   * transport fails the communicator naming it; a mismatch: the hooks). */
  int (*step)(fold__area *a, fold__area_call *call, const fold__area_kind *k);
  /* For a timeout's message: what the call waits for, naming the ranks;
   * returns the first of them or -1. */
  int (*describe)(fold__area *a, const fold__area_call *call, char *buf, size_t cap);
  /* This rank runs call seq with a round algorithm: leave its note where
   * area-running peers of the same call find it (making this rank's area
   * first if it is not made yet). */
  void (*note_round)(fold__area *a, uint32_t seq, const uint64_t note[FOLD__AREA_NOTE_WORDS]);
} fold__area_ops;

/* What the collective layer sees of an area. */
struct fold__area {
  const fold__area_ops *ops;
  int rank, size;
  size_t slot_bytes;  /* bytes per data slot */
  char **data;        /* size entries: slot s of rank p is data[p] + s * slot_bytes */
};

/* Data slot s of rank p. */
static inline char *fold__area_slot(const fold__area *a, int p, int s) {
  return a->data[p] + (size_t)s * a->slot_bytes;
}

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
/* poll(): this pass found nothing to do (positive: not an error code) */
#define FOLD__POLL_IDLE 1

/* A link's measured figures (the vtable's link). */
typedef struct fold__link {
  double lat_ns;      /* one-way latency; 0 if below what the transport measures */
  double ns_per_byte; /* the inverse of the bandwidth; 0 if not measured */
} fold__link;

typedef struct fold__tp_ops {
  const char *name;
  int kind;
  /* 1: a large send completes only as the receiver drains it, whether or
   * not a receive is posted (shm's streamed rings), so a collective's
   * round gains by not waiting for it (fold__co_send_nowait, coll.h);
   * 0: a large send waits for the receive anyway (tcp's rendezvous). */
  int drain_sends;
  /* The largest payload a message on context ctx may have and still
   * travel eagerly: whole, behind its header, with no rendezvous round
   * trip. 0: any size does. NULL: the transport never uses a rendezvous.
   * Layers that cut data into messages size them by it (fold__eager_max). */
  size_t (*eager_max)(int ctx);
  /* Start sending r (FOLD__REQ_SEND) to r->peer. Either complete r before
   * returning, or take a reference (fold__req_ref) and complete it later
   * from poll()/another rank's progress. Returns 0, or a negative code when
   * the send cannot start (r is left incomplete; the caller reports). */
  int (*isend)(fold__tp *tp, fold_request *r);
  /* Non-blocking progress: move bytes, deliver arrivals, complete sends,
   * notice lost peers (then fold__peer_lost(), after delivering everything
   * the peer sent first).
   * Returns FOLD__POLL_IDLE when the pass found nothing to do (no bytes
   * moved, nothing left over that the next pass could move at once): the
   * engine then may give the CPU away (engine/progress.c, idle_pause).
   * Otherwise 0 (something moved, or the transport cannot tell: such a
   * pass never counts as idle), or the communicator's failure status. */
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
   * transport may hold them only then). Returns 1 if it held any (written
   * now, or queued for the socket), else 0. May be NULL: the transport
   * never holds sends. */
  int (*flush)(fold__tp *tp);
  /* Called once after the final bootstrap barrier (every rank connected):
   * e.g. unlink names that peers no longer need. May be NULL. */
  void (*joined)(fold__tp *tp);
  /* Free everything. Pending I/O is abandoned; peers see this rank lost. */
  void (*destroy)(fold__tp *tp);
  /* Collectives through a shared collective area (above): the area of
   * communicator c, or NULL when it has none (the transport shares no
   * memory, the area is off, the ranks disagree on it, or some peer of c
   * is not reached through tp). c is tp's communicator (the family's root)
   * or a sub-communicator of its family whose every peer tp reaches; a
   * sub-communicator's area is the transport's state kept in one of c's
   * extension slots (engine.h), made on first use and freed with c. Owner
   * thread only. May be NULL: the transport never has one. */
  fold__area *(*coll)(fold__tp *tp, fold_comm *c);
  /* The link to tpeer (a rank of tp's communicator, the family's root) as
   * this transport measured it so far: one-way latency and time per byte
   * (engine.h, fold__link_ns, says what uses it). Returns 0, or a negative
   * code when it has measured nothing yet. Owner thread only. May be NULL:
   * the transport measures nothing. */
  int (*link)(fold__tp *tp, int tpeer, fold__link *out);
  /* A receive from tpeer (a rank of tp's communicator, the family's root)
   * was posted: a transport that connects on first use connects now, so
   * that a receiver waiting on a peer it never talked to learns when that
   * peer is gone (fold__peer_lost). Owner thread only. May be NULL. */
  void (*want)(fold__tp *tp, int tpeer);
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
/* The transports of an in-process world of n ranks: tps[i] for rank i, not
 * attached to a communicator yet (the communicator layer makes the
 * communicators and attaches them: comm/comm_local.c). Returns 0 or
 * FOLD_ENOMEM (nothing is left allocated). */
int fold__inproc_create(int n, fold__tp **tps);

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
