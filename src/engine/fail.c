/* fail.c — fail-stop: failing a communicator, telling peers why, acting on their reports, lost peers (docs/design.md §8). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "engine/engine.h"
#include "transport/transport.h"

/* Complete every posted receive and every active task with status (the
 * queues hold no reference: the waiter's reference keeps them alive). */
static void fail_pending(fold_comm *c, int status) {
  FOLD__LIST_FOR_EACH_SAFE(fold_request, r, &c->posted, link) {
    fold__list_unlink(&r->link);
    fold__req_complete(r, status);
  }
  FOLD__LIST_FOR_EACH_SAFE(fold__task, t, &c->tasks, link) {
    fold__list_unlink(&t->link);
    fold__req_complete(t->req, status);
  }
}

int fold__comm_fail(fold_comm *c, int status, const char *fmt, ...) {
  if (atomic_load(&c->failed))
    return c->fail_status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->last_error, FOLD__ERRLEN, fmt, ap);
  va_end(ap);
  c->fail_status = status;
  atomic_store_explicit(&c->failed, 1, memory_order_release);
  /* INFO: every pending and later call returns the failure with this
   * message, and a program that prints its errors would show it twice. */
  FOLD__INFO(c, "communicator failed: %s (%s)", c->last_error, fold_strerror(status));
  /* the transports go down with the last healthy comm that uses them (a
   * child's mismatch must not cut its parent off) */
  fold_comm *owner = c->fam ? fold__fam_shutdown_owner(c) : c;
  for (int i = 0; owner && i < owner->ntps; i++)
    owner->tps[i]->ops->shutdown(owner->tps[i], status);
  fail_pending(c, status);
  return status;
}

/* One note per lost or reporting peer: a list, because few peers are ever
 * lost and a table per rank would cost O(n) on each of n simulated ranks. */
struct fold__lost_note {
  struct fold__lost_note *next;
  int peer;
  char why[96];     /* why it went ("" until it did) */
  int culprit;      /* -1, or the rank its failure report blamed */
  int cause_status; /* ... with this status */
  char cause[200];  /* ... and this text, naming the culprit */
};

static struct fold__lost_note *note_get(fold_comm *c, int p) {
  for (struct fold__lost_note *n = c->lost_notes; n; n = n->next)
    if (n->peer == p) return n;
  struct fold__lost_note *n = calloc(1, sizeof *n);
  if (n) {
    n->peer = p;
    n->culprit = -1;
    n->next = c->lost_notes;
    c->lost_notes = n;
  }
  return n;
}

static const struct fold__lost_note *note_find(const fold_comm *c, int p) {
  for (const struct fold__lost_note *n = c->lost_notes; n; n = n->next)
    if (n->peer == p) return n;
  return NULL;
}

/* Follow the reports' "waits for" edges from rank start (a rank that
 * reported failing because of rank X points at X) to the first rank that
 * reported nothing, or to this rank; bounded by the rank count (a cycle
 * among others stops anywhere on it). *via: the last reporter on the way
 * (-1 if start reported nothing), whose text names the end. */
static int wait_chain(const fold_comm *c, int start, int *via) {
  int y = start;
  *via = -1;
  for (int k = 0; k < c->size && y != c->rank; k++) {
    const struct fold__lost_note *n = note_find(c, y);
    if (n == NULL || n->culprit < 0 || n->culprit == y) break;
    *via = y;
    y = n->culprit;
  }
  return y;
}

/* Has every rank but this one and y reported (or gone)? Then y is the one
 * that stays silent. */
static int all_reported_but(const fold_comm *c, int y) {
  for (int q = 0; q < c->size; q++) {
    if (q == c->rank || q == y || c->lost[q]) continue;
    const struct fold__lost_note *n = note_find(c, q);
    if (n == NULL || n->culprit < 0) return 0;
  }
  return 1;
}

const char *fold__lost_why(const fold_comm *c, int p) {
  for (const struct fold__lost_note *n = c->lost_notes; n; n = n->next)
    if (n->peer == p && n->why[0]) return n->why;
  return "gone";
}

void fold__note_report(fold_comm *c, int src, int status, int culprit, const char *text) {
  struct fold__lost_note *n = note_get(c, src);
  if (n == NULL || n->culprit >= 0) return; /* the first report of a rank is its cause */
  n->culprit = culprit;
  n->cause_status = status;
  /* a report's text may be longer than the note keeps: cut, deliberately */
  size_t len = strnlen(text, sizeof n->cause - 1);
  memcpy(n->cause, text, len);
  n->cause[len] = '\0';
}

int fold__report_culprit(const fold_comm *c, int p, int *status, const char **cause) {
  for (const struct fold__lost_note *n = c->lost_notes; n; n = n->next)
    if (n->peer == p && n->culprit >= 0) {
      if (status) *status = n->cause_status;
      if (cause) *cause = n->cause;
      return n->culprit;
    }
  return -1;
}

void fold__lost_notes_free(fold_comm *c) {
  while (c->lost_notes) {
    struct fold__lost_note *n = c->lost_notes;
    c->lost_notes = n->next;
    free(n);
  }
}

void fold__poll_transports(fold_comm *c) {
  if (c->fam) {
    fold__idle_pause(c, fold__fam_poll(c));
    return;
  }
  c->in_poll++;
  int idle = 1;
  for (int i = 0; i < c->ntps && !fold__comm_failed(c); i++)
    idle &= c->tps[i]->ops->poll(c->tps[i]) == FOLD__POLL_IDLE;
  c->in_poll--;
  fold__idle_pause(c, idle && c->ntps > 0);
}

/* The lowest call number among this rank's pending collectives (the one
 * being started included), or the next call's number when none is
 * pending: a report says that this call and every later one failed here. */
static uint32_t first_failed_coll(const fold_comm *c) {
  uint32_t f = c->svc->coll_seq;
  const fold__task *st = c->svc->starting;
  if (st && st->is_coll && (int32_t)(st->coll_seq - f) < 0) f = st->coll_seq;
  FOLD__LIST_FOR_EACH(const fold__task, t, &c->tasks, link)
    if (t->is_coll && (int32_t)(t->coll_seq - f) < 0) f = t->coll_seq;
  return f;
}

/* Tell every live peer `msg` with `status` and flush for a bounded time.
 * The report is [status][culprit][first failed collective][text] (32-bit
 * words): culprit -1 is a cause all must fail on (a mismatch); a rank
 * number says that rank was lost or silent, so that a receiver that sees
 * this rank go next names the culprit instead of this rank (the closing
 * cascade), and a receiver's collectives numbered from the third word on
 * fail (they failed here: fold__coll_told). */
static void tell_all(fold_comm *c, int status, int culprit, const char *msg) {
  size_t len = strlen(msg);
  if (len > 400) len = 400;
  char buf[412];
  int32_t st = status, cu = culprit;
  uint32_t f = first_failed_coll(c);
  /* passing a peer's report on: what failed there fails here too */
  if (culprit < 0 && c->poison && (int32_t)(c->svc->poison_from - f) < 0) f = c->svc->poison_from;
  memcpy(buf, &st, 4);
  memcpy(buf + 4, &cu, 4);
  memcpy(buf + 8, &f, 4);
  memcpy(buf + 12, msg, len);
  /* One report per live peer; then flush for a bounded time, so that the
   * reports leave before the shutdown closes the transports. */
  /* from the first report on, a peer going away must not override our cause */
  c->telling = 1;
  fold_request **reqs = calloc((size_t)c->size, sizeof *reqs);
  for (int p = 0; reqs && p < c->size; p++)
    if (p != c->rank && !c->lost[p])
      fold__isend_bytes(c, buf, len + 12, p, FOLD__CTX_SYS, 0, &reqs[p]);
  int64_t deadline = fold__now(c) + 500000000;
  for (int pending = 1; pending && reqs && !fold__comm_failed(c) && !fold__engine_virtual(c) && fold__now(c) < deadline;) {
    fold__poll_transports(c);
    pending = 0;
    for (int p = 0; p < c->size; p++) pending |= reqs[p] && !fold__req_done(reqs[p]);
  }
  c->telling = 0;
  for (int p = 0; reqs && p < c->size; p++) fold__req_unref(reqs[p]);
  free(reqs);
}

/* Tell every live peer (tell_all), then fail with `self_msg`. */
static int tell_then_fail(fold_comm *c, int status, int culprit, const char *msg, const char *self_msg) {
  if (fold__comm_failed(c))
    return c->fail_status;
  tell_all(c, status, culprit, msg);
  return fold__comm_fail(c, status, "%s", self_msg);
}

int fold__comm_fail_and_tell(fold_comm *c, int status, const char *msg) {
  return tell_then_fail(c, status, -1, msg, msg);
}


void fold__comm_act_on_poison(fold_comm *c) {
  int32_t st;
  memcpy(&st, c->poison, 4);
  if (st >= 0 || st < FOLD_EINTERNAL) st = FOLD_EMISMATCH;
  char self[FOLD__ERRLEN];
  snprintf(self, sizeof self, "rank %d: told by a peer: %s", c->rank, c->poison + 4);
  /* Pass the report on before failing: whoever sees this rank go then has
   * the report first (messages between a pair stay in order), so the cause
   * reaches every rank even when failures cascade faster than the
   * reporter's own messages. Inside a transport's poll nothing may be sent. */
  if (c->in_poll)
    fold__comm_fail(c, st, "%s", self);
  else
    tell_then_fail(c, st, -1, c->poison + 4, self);
}

/* A peer's report fails this rank's collectives from call number f on
 * (fold__coll_told): the earliest reported number counts, with the peer
 * that reported it. */
static void told_from(fold_comm *c, int src, uint32_t f) {
  if (!c->svc->coll_told || (int32_t)(f - c->svc->coll_told_from) < 0) {
    c->svc->coll_told = 1 + src;
    c->svc->coll_told_from = f;
  }
}

/* A peer's failure report on FOLD__CTX_SYS: [status][culprit][first failed
 * collective][text] (tell_all). Run by the engine outside the transports'
 * polls; acted on by fold__progress (c->poison), since failing shuts
 * transports down, or by the collectives' steps (fold__coll_told). */
static void report_handler(fold_comm *c, void *arg, int src, int tag, const void *data, size_t bytes) {
  if (data == NULL || bytes <= 12) return; /* not a report we sent: dropped */
  int32_t st, culprit;
  uint32_t f;
  memcpy(&st, data, 4);
  memcpy(&culprit, (const char *)data + 4, 4);
  memcpy(&f, (const char *)data + 8, 4);
  size_t len = bytes - 12 > 400 ? 400 : bytes - 12;
  char text[401];
  memcpy(text, (const char *)data + 12, len);
  text[len] = '\0';
  if (culprit >= 0 && culprit < c->size) {
    /* the sender lost (or waited in vain for) another rank: noted for
     * when the sender goes next; no reason to fail but for the
     * collectives that failed on the sender (numbered f and on) */
    fold__note_report(c, src, st, culprit, text);
    told_from(c, src, f);
  } else if (c->poison == NULL && (c->poison = malloc(len + 5)) != NULL) {
    /* a cause all fail on (a mismatch) in the sender's collective f or
     * later: ours from f on fail at their next step, the rest of the
     * communicator once no earlier one is pending (fold__poison_due) */
    memcpy(c->poison, &st, 4);
    memcpy(c->poison + 4, text, len + 1);
    c->svc->poison_from = f;
    told_from(c, src, f);
  } else if (c->poison && (int32_t)(f - c->svc->poison_from) < 0) {
    c->svc->poison_from = f; /* another peer's report of it: the earliest counts */
    told_from(c, src, f);
  }
}

int fold__poison_due(const fold_comm *c) { return c->poison && (int32_t)(first_failed_coll(c) - c->svc->poison_from) >= 0; }

int fold__report_init(fold_comm *c) { return fold__handler_set(c, FOLD__CTX_SYS, report_handler, NULL); }

int fold__fail_for_lost(fold_comm *c, int p, const char *what) {
  if (!c->poison && !fold__comm_failed(c)) {
    fold__poll_transports(c);
    fold__handlers_run(c); /* a report that came in names the cause */
  }
  if (c->poison && !fold__comm_failed(c))
    fold__comm_act_on_poison(c);
  if (fold__comm_failed(c))
    return c->fail_status;
  if (p < 0 || p >= c->size) {
    /* a receive from any source with nobody left to send: name them all */
    char list[FOLD__ERRLEN / 2];
    size_t n = 0;
    list[0] = '\0';
    for (int q = 0; q < c->size && n < sizeof list - 1; q++) {
      if (q == c->rank || !c->lost[q]) continue;
      int k = snprintf(list + n, sizeof list - n, "%s%d (%s)", n ? ", " : "", q, fold__lost_why(c, q));
      n = k < 0 ? n : n + (size_t)k < sizeof list ? n + (size_t)k : sizeof list - 1;
    }
    return fold__comm_fail(c, FOLD_EPEER, "rank %d: receive from any source, but every other rank is lost: ranks %s",
                           c->rank, list);
  }
  char self[FOLD__ERRLEN], cause[200];
  const struct fold__lost_note *n = note_get(c, p);
  if (n && n->culprit >= 0 && n->culprit != c->rank) {
    /* p failed on another rank and said so before it closed: blame that
     * one, as p did (or the rank the chain of waiting ranks p named ends
     * at), and pass the same cause on */
    int via, y = wait_chain(c, n->culprit, &via);
    const struct fold__lost_note *v = via >= 0 && y != c->rank ? note_find(c, via) : NULL;
    if (v == NULL) v = n, y = n->culprit;
    snprintf(self, sizeof self, "rank %d: %s (reported by rank %d, which failed on it)", c->rank, v->cause, via >= 0 && v != n ? via : p);
    return tell_then_fail(c, v->cause_status, y, v->cause, self);
  }
  if (n && n->culprit == c->rank) {
    /* p failed waiting for this rank, and said so */
    snprintf(self, sizeof self, "rank %d: %s peer rank %d, which failed waiting for this rank: %s", c->rank, what, p,
             n->cause);
    return tell_then_fail(c, FOLD_EPEER, c->rank, n->cause, self); /* the peer is lost, as before */
  }
  const char *why = fold__lost_why(c, p);
  char world[48], me[48]; /* a child names the ranks in the world's numbering too */
  fold__world_note(c, p, world, sizeof world);
  fold__world_note(c, c->rank, me, sizeof me);
  snprintf(self, sizeof self, "rank %d%s: %s peer rank %d%s, which is lost (%s)", c->rank, me, what, p, world, why);
  snprintf(cause, sizeof cause, "peer rank %d%s is lost (%s)", p, world, why);
  return tell_then_fail(c, FOLD_EPEER, p, cause, self);
}

void fold__peer_lost(fold_comm *c, int p, int pending, const char *why) {
  /* a root passes the loss on to the children that contain p */
  if (c->fam && !c->kid && p >= 0 && p < c->size && fold__fam_peer_lost(c, p, pending, why))
    return;
  if (p < 0 || p >= c->size || fold__comm_failed(c))
    return;
  if (!c->lost[p]) {
    if (fold__lost_own(c) != 0) {
      fold__comm_fail(c, FOLD_ENOMEM, "rank %d: out of memory noting that peer rank %d is lost", c->rank, p);
      return;
    }
    c->lost[p] = 1;
    struct fold__lost_note *note = note_get(c, p);
    if (note)
      snprintf(note->why, sizeof note->why, "%s", why ? why : "gone");
    FOLD__INFO(c, "peer rank %d gone (%s)", p, why ? why : "gone");
  }
  int needed = pending, any = 0;
  FOLD__LIST_FOR_EACH(const fold_request, r, &c->posted, link) {
    if (needed) break;
    needed = r->peer == p;
    any |= r->peer == FOLD_ANY_SOURCE;
  }
  /* a receive from any source needs p only once p was the last sender left */
  int who = needed ? p : c->size;
  if ((!needed && !(any && fold__all_others_lost(c))) || c->telling)
    return;
  if (c->in_poll) { /* decided by fold__progress once the poll is over */
    c->lost_fail_pending = 1 + who;
    return;
  }
  fold__fail_for_lost(c, who, "needs");
}

/* ---- timeouts: name the silent rank, not one that only waited ---------------------
 * Ranks that wait for each other time out together: rank 1 waits for rank
 * 0, which waits for rank 2, which sleeps. Each rank that times out (or
 * whose collective fails on a peer's timeout report) tells every peer
 * whom it waits for (its report's culprit), then keeps reading the others'
 * reports for a short time: the chain of "waits for" edges ends at the
 * rank that reported nothing, and that is the rank every waiting rank
 * names. The collection stops once every rank but the chain's end has
 * reported (or gone), when the chain comes back to this rank (the others
 * waited for it), or after at most 1 s (never past FOLD_TIMEOUT). */

#define FOLD__CHAIN_WAIT_NS 1000000000

/* Append to msg how the chain from who ends (nothing when who is the end). */
static void chain_text(const fold_comm *c, int who, char *msg, size_t cap) {
  int via, y = wait_chain(c, who, &via);
  size_t len = strlen(msg);
  if (y == who || len >= cap - 1) return;
  if (y == c->rank) {
    const struct fold__lost_note *v = note_find(c, via);
    snprintf(msg + len, cap - len, "; rank %d waited in turn for this rank: %.200s", via, v ? v->cause : "");
    return;
  }
  int w = snprintf(msg + len, cap - len, "; rank %d waited in turn for rank", who);
  int q = who; /* the chain's ranks in order (bounded like wait_chain) */
  for (int k = 0; k <= c->size && w > 0; k++) {
    len += (size_t)w;
    if (len >= cap - 1 || q == y) break;
    const struct fold__lost_note *n = note_find(c, q);
    if (n == NULL || n->culprit < 0) break;
    q = n->culprit;
    w = snprintf(msg + len, cap - len, q == y ? " %d, which was silent" : " %d, which waited for rank", q);
  }
}

int fold__timeout_fail(fold_comm *c, int who, const char *cause, const char *self_msg) {
  /* a mismatch reported for a later call (fold__poison_due) and this call
   * left waiting: the mismatch is the cause to name */
  if (c->poison && !fold__comm_failed(c)) fold__comm_act_on_poison(c);
  if (fold__comm_failed(c)) return c->fail_status;
  if (who < 0 || who >= c->size || who == c->rank) return fold__comm_fail(c, FOLD_ETIMEDOUT, "%s", self_msg);
  tell_all(c, FOLD_ETIMEDOUT, who, cause);
  c->telling = 1; /* peers that go meanwhile must not override the cause */
  /* Reports first, then the verdict: tell_all polls for up to 500 ms (with
   * lazy tcp, while it connects to peers it had not talked to), and the
   * reports it reads wait in the unexpected queue. A report's sender may
   * have closed meanwhile: judged before its report ran, it would end the
   * chain as a lost rank that named nobody, and this rank would blame it
   * instead of the silent rank its report names. */
  fold__handlers_run(c);
  int64_t now = fold__now(c), left = c->timeout_ns < FOLD__CHAIN_WAIT_NS ? c->timeout_ns : FOLD__CHAIN_WAIT_NS;
  for (int64_t end = now + left; !fold__engine_virtual(c) && !fold__comm_failed(c) && now < end; now = fold__now(c)) {
    int via, y = wait_chain(c, who, &via);
    if (y == c->rank || c->lost[y] || all_reported_but(c, y)) break;
    fold__poll_transports(c);
    fold__handlers_run(c);
  }
  c->telling = 0;
  char self[FOLD__ERRLEN];
  snprintf(self, sizeof self, "%s", self_msg);
  chain_text(c, who, self, sizeof self);
  return fold__comm_fail(c, FOLD_ETIMEDOUT, "%s", self);
}

int fold__coll_told_fail(fold_comm *c, fold__task *t, uint32_t seq) {
  if (fold__comm_failed(c)) return c->fail_status;
  if (c->poison && (int32_t)(seq - c->svc->poison_from) >= 0) { /* a mismatch reported from seq or before */
    fold__comm_act_on_poison(c);
    if (fold__comm_failed(c)) return c->fail_status;
  }
  int src = c->svc->coll_told - 1;
  const struct fold__lost_note *n = note_find(c, src);
  char self[FOLD__ERRLEN], wait[300], cause[300];
  if (n == NULL || n->culprit < 0) /* cannot be: the report made a note */
    return fold__comm_fail(c, FOLD_EINTERNAL, "rank %d: collective #%u failed on rank %d", c->rank, (unsigned)seq, src);
  if (n->cause_status != FOLD_ETIMEDOUT) {
    /* e.g. src lost a peer: that peer is the cause here too */
    snprintf(self, sizeof self, "rank %d: collective #%u failed on rank %d: %s", c->rank, (unsigned)seq, src, n->cause);
    return tell_then_fail(c, n->cause_status, n->culprit, n->cause, self);
  }
  /* a timeout: what this rank itself waits for joins the chain */
  wait[0] = '\0';
  int w = t && t->describe ? t->describe(t, wait, sizeof wait) : -1;
  int who = w >= 0 && w != c->rank && w < c->size ? w : n->culprit != c->rank ? n->culprit : src;
  snprintf(self, sizeof self, "rank %d: collective #%u failed on rank %d, which timed out (FOLD_TIMEOUT)%s%s", c->rank,
           (unsigned)seq, src, wait[0] ? "; this rank was waiting for " : "", wait);
  if (n->culprit == c->rank && (w < 0 || w == c->rank)) { /* it waited for this rank, which waits for nobody */
    size_t len = strlen(self);
    snprintf(self + len, sizeof self - len, ": %s", n->cause);
    return tell_then_fail(c, FOLD_ETIMEDOUT, c->rank, n->cause, self);
  }
  snprintf(cause, sizeof cause, "rank %d waited for rank %d in collective #%u", c->rank, who, (unsigned)seq);
  return fold__timeout_fail(c, who, cause, self);
}
