/* fail.h — fail-stop: failing a communicator, lost peers, failure reports and the timeout verdict (engine/fail.c). */
#ifndef FOLD_ENGINE_FAIL_H
#define FOLD_ENGINE_FAIL_H

#include "engine/svc.h"

/* ---- fail-stop (engine/fail.c) --------------------------------------------------------- */
/* Fail comm (fail-stop): record the message, mark it failed, shut the
 * transports' I/O down and complete every pending request with status.
 * Idempotent: the first failure wins. Returns the failure status. */
int fold__comm_fail(fold_comm *comm, int status, const char *fmt, ...) FOLD__PRINTF(3, 4);
/* A transport saw peer p go away (EOF, reset, process exit, destroyed),
 * after delivering everything p had sent. Operations that need p — a posted
 * receive from p, a send to p (the transport reports that by passing
 * pending != 0), or any later one — fail the communicator with FOLD_EPEER
 * naming p; operations with other peers go on, so a peer that finished and
 * left early does not break the rest. Owner thread only. */
void fold__peer_lost(fold_comm *c, int p, int pending, const char *why);
/* Peer src reported that it failed because of rank culprit (lost, or
 * silent past FOLD_TIMEOUT) with status and text (naming culprit): kept
 * for the message when src goes, so that the cascade of closing ranks
 * does not blame src. The first report per peer counts. */
void fold__note_report(fold_comm *c, int src, int status, int culprit, const char *text);
/* The rank peer p's failure report blamed (fold__note_report), with its
 * status and text (kept by c), or -1 if p reported none: a capability
 * that lists lost ranks names that culprit, not p, which only failed on it. */
int fold__report_culprit(const fold_comm *c, int p, int *status, const char **cause);
/* A peer's report says it failed with its collectives from call number
 * coll_told_from on (and every later one) pending: a collective of this
 * rank numbered seq must not complete, since it failed elsewhere. One
 * test of an int on the fast path; called by the collective executor at
 * every step (the engine runs the reports' handler after each poll and
 * before the tasks step, so a report that arrived behind a call's data
 * is seen before the call completes). */
static inline int fold__coll_told(const fold_comm *c, uint32_t seq) {
  return c->svc->coll_told && (int32_t)(seq - c->svc->coll_told_from) >= 0;
}
/* Fail comm for collective t (numbered seq), which failed on the peer that
 * reported it (fold__coll_told): naming that peer and its cause; for a
 * timeout, the rank the chain of waiting ranks ends at (see
 * fold__timeout_fail). Returns the status. */
int fold__coll_told_fail(fold_comm *c, fold__task *t, uint32_t seq);
/* This rank timed out (or its collective failed on a peer's timeout)
 * waiting for rank who: tell every peer "this rank waits for who", keep
 * collecting their reports for a short, bounded time (until every rank
 * but the one the chain of waits ends at has reported, that rank is lost,
 * or at most 1 s; reports read while telling are handled before the
 * chain is first judged, so a reporter that closed meanwhile is not
 * taken for its end), then fail with FOLD_ETIMEDOUT and self_msg naming the
 * rank the chain ends at: the silent one, not a rank that only waited
 * like us. cause: the text peers keep (names who). */
int fold__timeout_fail(fold_comm *c, int who, const char *cause, const char *self_msg);
/* Why peer p was lost ("gone" if it is not known). */
const char *fold__lost_why(const fold_comm *c, int p);
void fold__lost_notes_free(fold_comm *c);
/* Fail with the status and text a peer reported (c->poison). */
void fold__comm_act_on_poison(fold_comm *c);
/* Whether c->poison is to be acted on now: a report of a cause all fail
 * on (a mismatch) says that the sender's collectives from call number
 * c->svc->poison_from on failed; a collective of ours numbered below it is not
 * part of that and may still complete (its data here or on the way), so
 * the report waits until none is pending. Those from poison_from on fail
 * at their next step (fold__coll_told); a peer lost meanwhile acts on it
 * at once (fold__fail_for_lost). */
int fold__poison_due(const fold_comm *c);
/* Fail comm like fold__comm_fail, but first tell every peer (a message on
 * FOLD__CTX_SYS carrying `msg`, flushed for a bounded time) so that they
 * fail with the same status and text instead of waiting: used when this
 * rank discovers that the ranks disagree. Returns status. */
int fold__comm_fail_and_tell(fold_comm *c, int status, const char *msg);
/* An operation needs lost peer p: fail comm, giving a peer's report of why
 * it failed if one came (after collecting what the transports hold); if p
 * itself reported another rank as the cause before it went, that rank and
 * cause; else FOLD_EPEER "<what> peer rank p". Tells every peer the cause
 * before failing. Never inside a transport's poll.
 * p outside [0, size) means a receive from FOLD_ANY_SOURCE that no rank is
 * left to answer: the message then names every lost rank. */
int fold__fail_for_lost(fold_comm *c, int p, const char *what);

#endif /* FOLD_ENGINE_FAIL_H */
