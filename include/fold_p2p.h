/* fold_p2p.h — point-to-point messages: sends, receives, requests, statuses, probe and progress: part of
 * fold.h (which includes it; include fold.h). */
#ifndef FOLD_PUBLIC_P2P_H
#define FOLD_PUBLIC_P2P_H

#include "fold.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- point-to-point ---------------------------------------------------- */
/* Messages between one pair of ranks with one tag never overtake each other.
 * tag must be >= 0 (receives and probes also take FOLD_ANY_TAG, and
 * FOLD_ANY_SOURCE as peer; sends take neither: FOLD_EINVAL). A peer
 * outside [0, size) is FOLD_EINVAL with a message. A message may be shorter than the receive buffer (the
 * rest of the buffer is untouched); a message longer than the receive buffer
 * fails the receive with FOLD_EMISMATCH (nothing is written past the buffer,
 * the message is discarded) and leaves the communicator usable. What the
 * sender of such a message gets depends on its size:
 *  - over 64 KiB, the send waits for the receiver's answer on tcp, shm and
 *    inproc (rendezvous on tcp and inproc; on shm the receiver answers once
 *    it matches the streamed message to a receive) and fails with
 *    FOLD_EMISMATCH too, with a message naming the receiver;
 *  - up to 64 KiB (buffered on every transport) and every simulated
 *    message: the send returns FOLD_OK.
 * Sending to oneself is allowed (post the receive or use the nonblocking
 * calls to avoid waiting on yourself); it never fails the send. */

/* Wildcards for receives and probes (docs/p2p.md). A wildcard receive takes
 * the earliest arrived message it matches; among posted receives, the
 * oldest one that matches an arriving message gets it (a specific or a
 * wildcard one, in the order they were posted), so the order per pair and
 * tag holds as without wildcards. A receive from FOLD_ANY_SOURCE is not
 * failed by a lost peer while another rank is left that could send; once
 * every other rank is lost (and nothing it sent matches) it fails with
 * FOLD_EPEER naming them all. */
#define FOLD_ANY_SOURCE (-1)
#define FOLD_ANY_TAG (-1)

/* What a finished operation was. For a receive: the message's source and
 * tag (the ones a wildcard matched) and count, the elements received (the
 * message's bytes / the dtype's size); after a failure source and tag are
 * as far as known (-1 before a wildcard matched) and count is 0. For a send:
 * source is this rank, tag the send's tag, count the elements sent (0 after
 * a failure). For a nonblocking collective: -1, -1, 0. From fold_iprobe,
 * count is the message's length in BYTES (a probe names no dtype). */
typedef struct fold_status {
  int source;
  int tag;
  size_t count;
} fold_status;

/* Send count elements of dtype to rank peer. Blocks until buf may be reused:
 * a message up to 64 KiB once it is copied into the transport's buffers
 * (socket, shared-memory ring; a wait only while they are full); a larger
 * one once the receiver has matched it to a receive: over tcp and inproc
 * once the receiver has posted the receive and taken the data, over shm
 * once the last byte is in shared memory and the receiver's answer is back
 * (so two ranks that both fold_send a large message to each other before
 * receiving wait for each other, on every transport); on the simulator
 * once the bytes have left the sender's link. */
FOLD_API int fold_send(const void *buf, size_t count, fold_dtype dtype, int peer, int tag, fold_comm *comm);

/* Receive up to count elements of dtype from rank peer with tag. Blocks
 * until the message has arrived in buf. */
FOLD_API int fold_recv(void *buf, size_t count, fold_dtype dtype, int peer, int tag, fold_comm *comm);

/* fold_recv that also fills *st (may be NULL) with the message's source, tag
 * and element count; with wildcards, how to learn what arrived. */
FOLD_API int fold_recv_status(void *buf, size_t count, fold_dtype dtype, int peer, int tag, fold_comm *comm,
                              fold_status *st);

/* Start a send; *req completes when buf may be reused. Does not block.
 * On failure *req is NULL. */
FOLD_API int fold_isend(const void *buf, size_t count, fold_dtype dtype, int peer, int tag,
               fold_comm *comm, fold_request **req);

/* Start a receive; *req completes when the message is in buf. Does not
 * block. On failure *req is NULL. */
FOLD_API int fold_irecv(void *buf, size_t count, fold_dtype dtype, int peer, int tag,
               fold_comm *comm, fold_request **req);

/* Drive progress once without blocking. *done becomes 1 when req completed;
 * then req is freed and the return value is the operation's status. While
 * not done, returns FOLD_OK with *done = 0 (or the communicator's failure
 * code, with *done = 1 and req freed, once the communicator failed). */
FOLD_API int fold_test(fold_request *req, int *done);

/* Block until req completes (bounded by FOLD_TIMEOUT), free it, and return
 * the operation's status. */
FOLD_API int fold_wait(fold_request *req);

/* fold_test and fold_wait that also fill *st (may be NULL; see fold_status)
 * once the request is done; fold_test_status leaves *st alone while
 * *done is 0. */
FOLD_API int fold_test_status(fold_request *req, int *done, fold_status *st);
FOLD_API int fold_wait_status(fold_request *req, fold_status *st);

/* fold_wait_status for at most `seconds` (wall time): once req completed,
 * *done = 1, req is freed and the operation's status returned (*st filled,
 * may be NULL); if `seconds` pass first, FOLD_OK with *done = 0 and req still
 * pending (call it again, fold_test or fold_wait). Waits as fold_wait does
 * (spins briefly, then sleeps until traffic arrives). FOLD_TIMEOUT counts
 * from the first fold_wait_for on req, so a loop of short waits (a language
 * binding that looks for Ctrl-C between them, python/) times out as one
 * fold_wait would, with the same message. On a simulated communicator it
 * runs the simulator until req completes, as fold_wait. Returns FOLD_EINVAL
 * for a NULL req or done, or seconds negative or NaN (req untouched). */
FOLD_API int fold_wait_for(fold_request *req, double seconds, int *done, fold_status *st);

/* Is a message matching (peer, tag) here? Does not consume it and does not
 * block: looks at the arrived messages, moves traffic once (fold_progress)
 * and looks again. *found = 1 and *st (may be NULL) = the earliest matching
 * message's source, tag and length in bytes (a fold_recv with the same
 * peer and tag, or with that source and tag, then gets that message unless
 * another receive posted before takes it); *found = 0 if none arrived yet.
 * A message still arriving (a large one over shm, a rendezvous whose
 * sender's announcement has not come) is not found until it has. peer
 * may be FOLD_ANY_SOURCE and tag FOLD_ANY_TAG. Returns FOLD_OK, FOLD_EINVAL
 * (NULL comm or found, a peer out of range, a negative tag other than
 * FOLD_ANY_TAG), or the communicator's failure status. */
FOLD_API int fold_iprobe(int peer, int tag, fold_comm *comm, int *found, fold_status *st);

/* Move pending traffic along once and never block: poll every transport
 * (deliver arrivals, write queued sends, answer rendezvous), run the
 * library's timers that are due (e.g. a FOLD_INJECT_DELAY straggler's
 * delay) and step the nonblocking collectives of comm. For programs that compute between calls:
 * calling it now and then lets isends, irecvs and nonblocking collectives
 * advance without fold_test/fold_wait on them (they still need one of
 * those to be freed). On a simulated communicator it runs one simulator
 * event. Returns FOLD_OK, FOLD_EINVAL for NULL, or the communicator's
 * failure status. */
FOLD_API int fold_progress(fold_comm *comm);

/* The progress thread. With FOLD_PROGRESS_THREAD=1 in the environment
 * when a communicator is created (fold_init, fold_comm_init,
 * fold_comm_init_threads: one per rank), a helper thread drives its
 * progress while no fold call runs on it, so that nonblocking operations
 * (isend, irecv, i<collective>) move while the program computes: an
 * fold_iallreduce started before a long computation is usually complete
 * when fold_wait comes. It is invisible to the API: the communicator is
 * still used by one thread at a time, and every call works as without it
 * (a call may wait for the helper's current progress pass, usually
 * under a millisecond: the pass's share of transfers and reductions).
 * The helper sleeps in the transports while operations are pending and
 * waits on a condition variable while none are; FOLD_TIMEOUT still counts
 * in fold_wait and the blocking calls, and a failure the helper meets (a
 * lost peer) is returned by the next call, as without it. With the helper,
 * a buffer of a pending operation may be written (receive) or read (send)
 * at any time until fold_test/fold_wait reports the operation done: do not
 * look at it or change it before (the same rule as MPI). fold_comm_destroy
 * stops and joins the helper. Unset, empty or 0: no thread, no cost (each
 * call tests one pointer). Another value is warned about and means 0.
 * Simulated communicators (fold_sim_create) never have one: their ranks
 * live in the simulator's thread. */

#ifdef __cplusplus
}
#endif
#endif /* FOLD_PUBLIC_P2P_H */
