/* areduce.c — asynchronous tree reduction of fragments that appear at unknown times (fold_areduce_*). */
#include "areduce/areduce.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "engine/engine.h"
#include "op/op.h"

/* The extension context of every reduction of a communicator (engine.h's
 * table of them). The tag is the reduction's id, the same on every rank
 * because creation is collective. */
static int ar_ctx(void) { return fold__ctx_ext(FOLD__EXT_AREDUCE); }

/* What a message to the parent carries: a header, then the partial result
 * (count elements) when nfrag > 0. DONE: the sender's subtree is complete;
 * the message carries the last of its data, so a done never overtakes data. */
enum { AR_DATA = 1, AR_DONE = 2 };
typedef struct ar_hdr {
  uint64_t nfrag;
  uint32_t flags;
  uint32_t pad;
} ar_hdr;

static const char ar_key; /* the slot's key */

/* ---- combining and sending ---------------------------------------------- */

/* Fold n fragments (data) into the local result. Each combine costs the
 * rank one reduction call of the clock's cost model (nothing on real
 * transports: the work took its time). */
static void combine(fold_areduce *ar, const void *data, uint64_t n) {
  if (n == 0)
    return;
  if (ar->nfrag == 0)
    memcpy(ar->local, data, ar->bytes);
  else if (ar->count)
    fold__op_reduce3(fold__op_table_of(ar->c), ar->op, ar->dtype, ar->local, ar->local, data, ar->count);
  if (fold__engine_virtual(ar->c))
    fold__engine_charge(ar->c, fold__engine_reduce_cost(ar->c, ar->bytes));
  ar->nfrag += n;
}

static int pend_push(fold_areduce *ar, fold_request *r, void *buf, int recv) {
  if (ar->npend == ar->cap_pend) {
    int cap = ar->cap_pend ? 2 * ar->cap_pend : 4;
    fold__ar_pend *p = realloc(ar->pend, (size_t)cap * sizeof *p);
    if (p == NULL)
      return FOLD_ENOMEM;
    ar->pend = p;
    ar->cap_pend = cap;
  }
  ar->pend[ar->npend++] = (fold__ar_pend){r, buf, recv};
  return FOLD_OK;
}

/* Hand the local result (if any) to the parent with `flags`, and clear it. */
static int send_local(fold_areduce *ar, uint32_t flags) {
  fold_comm *c = ar->c;
  size_t len = sizeof(ar_hdr) + (ar->nfrag ? ar->bytes : 0);
  char *buf = malloc(len);
  if (buf == NULL)
    return fold__comm_fail(c, FOLD_ENOMEM, "fold_areduce: rank %d: out of memory for a %zu-byte message", c->rank, len);
  ar_hdr h = {ar->nfrag, flags | (ar->nfrag ? AR_DATA : 0), 0};
  memcpy(buf, &h, sizeof h);
  if (ar->nfrag)
    memcpy(buf + sizeof h, ar->local, ar->bytes);
  fold_request *r = NULL;
  int rc = fold__isend_bytes(c, buf, len, ar->parent, ar_ctx(), (int)ar->id, &r);
  if (rc == FOLD_OK && (rc = pend_push(ar, r, buf, 0)) != FOLD_OK) {
    fold__wait_req(c, r, "fold_areduce");
    fold__req_unref(r);
    rc = fold__comm_fail(c, FOLD_ENOMEM, "fold_areduce: rank %d: out of memory", c->rank);
  }
  if (rc != FOLD_OK) {
    free(buf);
    return rc;
  }
  ar->handed += ar->nfrag;
  ar->nfrag = 0;
  return FOLD_OK;
}

/* Every done is in (this rank's and each child's) and no child's data is
 * still arriving: the target's result is final; another rank hands its
 * part on with its done, in one message. */
static int check_complete(fold_areduce *ar) {
  if (ar->ndone > 0 && fold__timer_armed(&ar->timer))
    fold__timer_cancel(ar->c, &ar->timer); /* partial sends stop at the first done (the thesis) */
  if (ar->ndone < ar->nchildren + 1 || ar->npend_recv > 0)
    return FOLD_OK;
  if (ar->parent < 0) {
    ar->final = 1;
    return FOLD_OK;
  }
  if (ar->sent_final)
    return FOLD_OK;
  ar->sent_final = 1;
  return send_local(ar, AR_DONE);
}

static int child_index(const fold_areduce *ar, int src) {
  for (int i = 0; i < ar->nchildren; i++)
    if (ar->children[i] == src)
      return i;
  return -1;
}

/* A child's message, whole: header then data. */
static int take_msg(fold_areduce *ar, int ci, const char *msg) {
  ar_hdr h;
  memcpy(&h, msg, sizeof h);
  if (h.flags & AR_DATA)
    combine(ar, msg + sizeof h, h.nfrag);
  if ((h.flags & AR_DONE) && !ar->child_done[ci]) {
    ar->child_done[ci] = 1;
    ar->ndone++;
  }
  return check_complete(ar);
}

/* Partial mode: every t_wait, a rank that has seen no done hands its
 * local result on. The target has no timer. */
static void on_timer(fold_comm *c, fold__timer *t, void *arg) {
  fold_areduce *ar = arg;
  if (ar->ndone > 0 || ar->sent_final || ar->status)
    return;
  if (ar->nfrag > 0 && send_local(ar, 0) != FOLD_OK)
    return;
  fold__timer_arm_in(c, t, ar->t_wait_ns);
}

/* The simulator's nudge (see pass): firing is all it does. */
static void on_kick(fold_comm *c, fold__timer *t, void *arg) { (void)c, (void)t, (void)arg; }

/* ---- the engine's side: task, handler, teardown ------------------------- */

static int reap(fold_areduce *ar) {
  for (int i = 0; i < ar->npend;) {
    fold__ar_pend p = ar->pend[i];
    if (!fold__req_done(p.r)) {
      i++;
      continue;
    }
    ar->pend[i] = ar->pend[--ar->npend]; /* order does not matter: the op commutes */
    int st = p.r->status;
    int ci = p.recv ? child_index(ar, p.r->peer) : -1;
    fold__req_unref(p.r);
    if (p.recv) {
      ar->npend_recv--;
      if (st == FOLD_OK && ci >= 0)
        st = take_msg(ar, ci, p.buf);
    }
    free(p.buf);
    if (st != FOLD_OK)
      return st;
  }
  return FOLD_OK;
}

static int ar_step(fold__task *t) {
  fold_areduce *ar = (fold_areduce *)t;
  fold_comm *c = ar->c;
  if (ar->status)
    return ar->status;
  if (ar->check) {
    if (!fold__req_done(ar->check)) {
      /* the check's task is ours to step (see create): so the verdict is
       * seen in the same pass as the check completes */
      if (fold__task_step(c, ar->check->task) == 0 || fold__comm_failed(c))
        return fold__comm_failed(c);
    }
    int st = ar->check->status ? ar->check->status : fold__ar_check_verdict(c, ar->sig, 0);
    if (st) {
      ar->status = st;
      fold__timer_cancel(c, &ar->timer);
      return st;
    }
  }
  int rc = reap(ar);
  if (rc)
    return rc;
  /* a child not done that is lost will never be: fail, naming it (and
   * telling every peer, so that the ranks above name it too) */
  for (int i = 0; i < ar->nchildren; i++)
    if (!ar->child_done[i] && c->lost[ar->children[i]])
      return fold__fail_for_lost(c, ar->children[i], "fold_areduce: waits for its subtree from");
  /* a lost parent will never pass this subtree's part on: fail now, not
   * at this rank's done (which may be much later) */
  if (ar->parent >= 0 && !ar->sent_final && c->lost[ar->parent])
    return fold__fail_for_lost(c, ar->parent, "fold_areduce: hands its subtree's part to");
  if (ar->parent < 0)
    return ar->final;
  /* handed on once the last send is posted: nothing would step the task
   * when it completes in the simulator; fold_areduce_destroy waits for it */
  return ar->sent_final;
}

/* For a timeout's message: what the reduction still waits for. */
static int ar_describe(fold__task *t, char *buf, size_t cap) {
  fold_areduce *ar = (fold_areduce *)t;
  if (ar->check && !fold__req_done(ar->check)) {
    snprintf(buf, cap, "the agreement check of fold_areduce_create");
    return -1;
  }
  for (int i = 0; i < ar->nchildren; i++)
    if (!ar->child_done[i]) {
      snprintf(buf, cap, "rank %d (the done of its subtree in tree reduction %u)", ar->children[i], ar->id);
      return ar->children[i];
    }
  if (!ar->my_done) {
    snprintf(buf, cap, "this rank's own fold_areduce_done (tree reduction %u)", ar->id);
    return -1;
  }
  snprintf(buf, cap, "rank %d (sending it this rank's part of tree reduction %u)", ar->parent, ar->id);
  return ar->parent;
}

static void ar_release(fold__task *t) { (void)t; /* the reduction owns its memory */ }

static void on_message(fold_comm *c, void *arg, int src, int tag, const void *data, size_t bytes) {
  fold__ar_reg *reg = arg;
  fold_areduce *ar = NULL;
  FOLD__LIST_FOR_EACH(fold_areduce, a, &reg->live, link) {
    if (a->id == (uint32_t)tag) {
      ar = a;
      break;
    }
  }
  if (ar == NULL)
    return; /* a destroyed reduction's: dropped */
  int ci = child_index(ar, src);
  if (ci < 0 || ar->child_done[ci] || (bytes != sizeof(ar_hdr) && bytes != sizeof(ar_hdr) + ar->bytes)) {
    FOLD__INFO(c, "fold_areduce: rank %d: dropped a %zu-byte message from rank %d for reduction %d", c->rank, bytes,
               src, tag);
    return;
  }
  if (data) {
    int rc = take_msg(ar, ci, data);
    if (rc && !ar->status)
      ar->status = rc;
    return;
  }
  /* rendezvous: take it into a buffer of its own; the task combines it */
  void *buf = malloc(bytes);
  fold_request *r = NULL;
  if (buf == NULL || fold__irecv_bytes(c, buf, bytes, src, ar_ctx(), tag, &r) != FOLD_OK ||
      pend_push(ar, r, buf, 1) != FOLD_OK) {
    if (r) fold__req_unref(r);
    free(buf);
    fold__comm_fail(c, FOLD_ENOMEM, "fold_areduce: rank %d: out of memory for a %zu-byte message from rank %d",
                    c->rank, bytes, src);
    return;
  }
  ar->npend_recv++;
}

void fold__ar_free(fold_areduce *ar) {
  for (int i = 0; i < ar->npend; i++) {
    fold__req_unref(ar->pend[i].r);
    free(ar->pend[i].buf);
  }
  free(ar->pend);
  if (ar->task.req)
    fold__req_unref(ar->task.req);
  free(ar->children);
  free(ar->child_done);
  free(ar->local);
  free(ar->exact_tmp);
  free(ar);
}

/* fold_comm_destroy: the reductions the user left (must not communicate). */
static void reg_teardown(void *p) {
  fold__ar_reg *reg = p;
  for (fold__list *n; (n = fold__list_pop_front(&reg->live)) != NULL;) {
    fold_areduce *ar = FOLD__LIST_ENTRY(n, fold_areduce, link);
    fold__timer_cancel(reg->c, &ar->timer);
    fold__timer_cancel(reg->c, &ar->kick);
    fold__task_cancel(reg->c, &ar->task);
    ar->check = NULL; /* a user request: fold_comm_destroy dropped it */
    fold__ar_free(ar);
  }
  free(reg);
}

fold__ar_reg *fold__ar_reg_get(fold_comm *c) {
  fold__ar_reg *reg = fold__ext_get(c, &ar_key);
  if (reg)
    return reg;
  if ((reg = calloc(1, sizeof *reg)) == NULL)
    return NULL;
  reg->c = c;
  fold__list_init(&reg->live);
  if (fold__ext_attach(c, &ar_key, reg, reg_teardown) != FOLD_OK) {
    free(reg);
    return NULL;
  }
  if (fold__handler_set(c, ar_ctx(), on_message, reg) != FOLD_OK) {
    free(fold__ext_detach(c, &ar_key));
    return NULL;
  }
  return reg;
}

/* ---- the public calls ----------------------------------------------------- */

void fold__ar_hook(fold_areduce *ar) {
  ar->task.step = ar_step;
  ar->task.release = ar_release;
  ar->task.describe = ar_describe;
  ar->task.req->task = &ar->task;
  fold__timer_init(&ar->timer, on_timer, ar);
  fold__timer_init(&ar->kick, on_kick, ar);
}

/* ---- the public calls (fold_areduce_create: areduce_create.c) -------------- */

/* The reduction's status: its own failure, the communicator's, or 0. */
static int ar_status(const fold_areduce *ar) {
  if (ar->status)
    return ar->status;
  if (fold__req_done(ar->task.req) && ar->task.req->status)
    return ar->task.req->status;
  return fold__comm_failed(ar->c);
}

/* One nonblocking progress pass. The simulator's ranks are driven by its
 * events instead (a call from a fold_sim_at callback must not run them):
 * a timer due now is an event there, whose progress pass steps the task. */
static int pass(fold_areduce *ar) {
  if (!fold__engine_virtual(ar->c))
    fold__progress(ar->c);
  else if (!fold__timer_armed(&ar->kick) && !fold__req_done(ar->task.req))
    fold__timer_arm(ar->c, &ar->kick, fold__now(ar->c));
  return ar_status(ar);
}

int fold_areduce_contribute(fold_areduce *ar, const void *fragment) {
  if (ar == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_areduce_contribute: ar is NULL");
  fold_comm *c = ar->c;
  if (fragment == NULL && ar->count > 0)
    return fold__error(c, FOLD_EINVAL, "fold_areduce_contribute: rank %d: fragment is NULL", c->rank);
  if (ar->my_done)
    return fold__error(c, FOLD_EINVAL, "fold_areduce_contribute: rank %d: contribute after fold_areduce_done",
                       c->rank);
  fold__enter(c);
  int rc = ar_status(ar);
  if (rc == FOLD_OK) {
    if (ar->exact_tmp) {
      fold__exact_load(ar->dtype, ar->exact_tmp, fragment, ar->count);
      fragment = ar->exact_tmp;
    }
    combine(ar, fragment, 1);
    rc = pass(ar);
  }
  fold__leave(c);
  return rc;
}

int fold_areduce_done(fold_areduce *ar) {
  if (ar == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_areduce_done: ar is NULL");
  fold_comm *c = ar->c;
  if (ar->my_done)
    return fold__error(c, FOLD_EINVAL, "fold_areduce_done: rank %d: done twice", c->rank);
  fold__enter(c);
  int rc = ar_status(ar);
  if (rc == FOLD_OK) {
    ar->my_done = 1;
    ar->ndone++;
    rc = check_complete(ar);
    if (rc == FOLD_OK)
      rc = pass(ar);
  }
  fold__leave(c);
  return rc;
}

static void copy_result(const fold_areduce *ar, void *out, uint64_t *nfragments) {
  if (nfragments)
    *nfragments = ar->parent < 0 ? ar->nfrag : ar->handed;
  if (ar->parent < 0 && out && ar->nfrag && ar->bytes && ar->exact_tmp) {
    fold__exact_round(ar->dtype, out, ar->local, ar->count);
  } else if (ar->parent < 0 && out && ar->nfrag && ar->bytes) {
    memcpy(out, ar->local, ar->bytes);
    fold__op_finish(ar->op, ar->dtype, out, ar->count, (int)(ar->nfrag > INT32_MAX ? INT32_MAX : ar->nfrag));
  }
}

int fold_areduce_result(fold_areduce *ar, void *out, uint64_t *nfragments, int *final) {
  if (ar == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_areduce_result: ar is NULL");
  fold_comm *c = ar->c;
  if (ar->parent >= 0)
    return fold__error(c, FOLD_EINVAL, "fold_areduce_result: rank %d is not the target (rank %d)", c->rank, ar->target);
  if (out == NULL && ar->count > 0)
    return fold__error(c, FOLD_EINVAL, "fold_areduce_result: rank %d: out is NULL", c->rank);
  fold__enter(c);
  int rc = pass(ar);
  copy_result(ar, out, nfragments);
  if (final)
    *final = rc == FOLD_OK && ar->final;
  fold__leave(c);
  return rc;
}

int fold_areduce_wait(fold_areduce *ar, void *out, uint64_t *nfragments) {
  if (ar == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_areduce_wait: ar is NULL");
  fold_comm *c = ar->c;
  fold__enter(c);
  int rc = ar_status(ar); /* a failure first: it is the answer with or without done */
  if (rc == FOLD_OK && !ar->my_done) {
    fold__leave(c);
    return fold__error(c, FOLD_EINVAL, "fold_areduce_wait: rank %d: call fold_areduce_done first", c->rank);
  }
  if (rc == FOLD_OK)
    rc = fold__wait_req(c, ar->task.req, "fold_areduce_wait");
  if (rc == FOLD_OK)
    rc = ar_status(ar);
  copy_result(ar, out, nfragments);
  fold__leave(c);
  return rc;
}

int fold_areduce_destroy(fold_areduce *ar) {
  if (ar == NULL)
    return FOLD_OK;
  fold_comm *c = ar->c;
  fold__enter(c);
  fold__list_unlink(&ar->link);
  fold__timer_cancel(c, &ar->timer);
  fold__timer_cancel(c, &ar->kick);
  fold__task_cancel(c, &ar->task);
  int rc = FOLD_OK;
  if (ar->check) {
    if (!fold__req_done(ar->check)) /* back to the engine, which finishes it */
      fold__task_resume(c, ar->check->task);
    fold_wait(ar->check); /* it frees it */
  }
  for (int i = 0; i < ar->npend; i++) {
    fold_request *r = ar->pend[i].r;
    if (fold__req_done(r) || (ar->pend[i].recv && fold__unpost(c, r)))
      continue;
    int st = fold__wait_req(c, r, "fold_areduce_destroy");
    if (st && !rc) rc = st;
  }
  fold__ar_free(ar);
  fold__leave(c);
  return rc;
}
