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
  fold_request *r = c->posted_head;
  c->posted_head = c->posted_tail = NULL;
  while (r) {
    fold_request *next = r->next;
    r->next = NULL;
    fold__req_complete(r, status);
    r = next;
  }
  fold__task *t = c->tasks;
  c->tasks = NULL;
  while (t) {
    fold__task *next = t->next;
    fold_request *req = t->req;
    t->next = NULL;
    fold__req_complete(req, status);
    t = next;
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

/* Tell every live peer `msg` with `status`, flush for a bounded time, then
 * fail with `self_msg`. The report is [status][culprit][text] (int32s):
 * culprit -1 is a cause all must fail on (a mismatch); a rank number says
 * that rank was lost or silent, so that a receiver that sees this rank go
 * next names the culprit instead of this rank (the closing cascade). */
static int tell_then_fail(fold_comm *c, int status, int culprit, const char *msg, const char *self_msg) {
  if (fold__comm_failed(c))
    return c->fail_status;
  size_t len = strlen(msg);
  if (len > 400) len = 400;
  char buf[408];
  int32_t st = status, cu = culprit;
  memcpy(buf, &st, 4);
  memcpy(buf + 4, &cu, 4);
  memcpy(buf + 8, msg, len);
  /* One report per live peer; then flush for a bounded time, so that the
   * reports leave before the shutdown closes the transports. */
  /* from the first report on, a peer going away must not override our cause */
  c->telling = 1;
  fold_request **reqs = calloc((size_t)c->size, sizeof *reqs);
  for (int p = 0; reqs && p < c->size; p++)
    if (p != c->rank && !c->lost[p])
      fold__isend_bytes(c, buf, len + 8, p, FOLD__CTX_SYS, 0, &reqs[p]);
  int64_t deadline = fold__now(c) + 500000000;
  for (int pending = 1; pending && reqs && !fold__comm_failed(c) && !c->sim_drive && fold__now(c) < deadline;) {
    fold__poll_transports(c);
    pending = 0;
    for (int p = 0; p < c->size; p++) pending |= reqs[p] && !fold__req_done(reqs[p]);
  }
  c->telling = 0;
  fold__comm_fail(c, status, "%s", self_msg);
  for (int p = 0; reqs && p < c->size; p++) fold__req_unref(reqs[p]);
  free(reqs);
  return status;
}

int fold__comm_fail_and_tell(fold_comm *c, int status, const char *msg) {
  return tell_then_fail(c, status, -1, msg, msg);
}

int fold__comm_fail_blaming(fold_comm *c, int status, int culprit, const char *cause, const char *self_msg) {
  return tell_then_fail(c, status, culprit, cause, self_msg);
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

/* A peer's failure report on FOLD__CTX_SYS: [status][culprit][text]
 * (tell_then_fail). Run by the engine outside the transports' polls; acted
 * on by fold__progress (c->poison), since failing shuts transports down. */
static void report_handler(fold_comm *c, void *arg, int src, int tag, const void *data, size_t bytes) {
  if (data == NULL || bytes <= 8) return; /* not a report we sent: dropped */
  int32_t st, culprit;
  memcpy(&st, data, 4);
  memcpy(&culprit, (const char *)data + 4, 4);
  size_t len = bytes - 8 > 400 ? 400 : bytes - 8;
  char text[401];
  memcpy(text, (const char *)data + 8, len);
  text[len] = '\0';
  if (culprit >= 0 && culprit < c->size) {
    /* the sender lost (or waited in vain for) another rank: noted for
     * when the sender goes next, but no reason to fail here */
    fold__note_report(c, src, st, culprit, text);
  } else if (c->poison == NULL && (c->poison = malloc(len + 5)) != NULL) {
    memcpy(c->poison, &st, 4);
    memcpy(c->poison + 4, text, len + 1);
  }
}

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
     * one, as p did, and pass the same cause on */
    snprintf(self, sizeof self, "rank %d: %s (reported by rank %d, which failed on it)", c->rank, n->cause, p);
    return tell_then_fail(c, n->cause_status, n->culprit, n->cause, self);
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
  if (c->fam && c->to_root == NULL && p >= 0 && p < c->size && fold__fam_peer_lost(c, p, pending, why))
    return;
  if (p < 0 || p >= c->size || fold__comm_failed(c))
    return;
  if (!c->lost[p]) {
    c->lost[p] = 1;
    struct fold__lost_note *note = note_get(c, p);
    if (note)
      snprintf(note->why, sizeof note->why, "%s", why ? why : "gone");
    FOLD__INFO(c, "peer rank %d gone (%s)", p, why ? why : "gone");
  }
  int needed = pending, any = 0;
  for (fold_request *r = c->posted_head; r && !needed; r = r->next) {
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
