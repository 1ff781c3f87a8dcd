/* hier.c — the hierarchical collectives (`hier`): host phases on a host child, a network phase on the leaders' child, run as child collectives stepped from the call's own steps (docs/hierarchy.md).
 *
 * Per communicator (an extension slot): the exchange that makes the two
 * children, started by the first hier call (so every rank starts it at the
 * same point of its sequence; it never blocks), then the children, freed
 * with the communicator. Per call: its plan's phases, one child
 * collective at a time, or, where the plan marks a phase `ahead` (the
 * pipelined allreduce), up to HIER_SLOTS at once, each started in plan
 * order once the phase it waits for (`after`) is over. The call steps its
 * child collectives' tasks itself (they are on no engine list), so that
 * the next phase starts in the same pass as the last one ends: waiting a
 * pass could put a rank to sleep while every peer waits for its next phase.
 *
 * Order on the children: the calls of a communicator take tickets in call
 * order, and a call starts its phases only when it is served; it serves
 * the next call once it has started its last phase. So every member of a
 * child sees the child calls of the hier calls in one order, however
 * nonblocking calls interleave.
 *
 * Failures: the call's signature goes around the parent as the round
 * algorithms' does (coll_sig.c), so a rank that called something else is
 * FOLD_EMISMATCH on every rank. A child call that fails fails the parent
 * call and tells every rank of the parent: a lost rank is named in the
 * parent's numbering (fold__fail_for_lost), other causes with the child's
 * message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/hier.h"
#include "coll/shm_coll.h"
#include "engine/engine.h"
#include "engine/family.h"
#include "op/op.h"
#include "select/select.h"

typedef struct hier_call hier_call;

/* Child calls one hier call may have under way at once: the pipelined
 * allreduce runs a chunk's host reduce_scatter, the previous chunk's lane
 * allreduce and the one before's host allgather, and one more may start
 * as soon as a dependency ends. */
#define HIER_SLOTS 4

typedef struct hier_comm {
  fold_comm *c;
  fold__hier_split *split; /* the exchange making the children */
  fold__hier_kids *kids;   /* NULL until it is over */
  int split_rc;            /* <0: it failed */
  uint32_t kid_cid[3];     /* the host child's, the leaders' and the lane child's ids (0: none) */
  int leaders;             /* FOLD_HIER_LEADERS: 0 by size, 1 one per host, 2 every rank */
  int chunks;              /* FOLD_HIER_CHUNKS: 0 by size, else the pipeline's chunks */
  uint32_t next_ticket, serving;
  fold__list calls;        /* hier_call.link: calls not finished (a failed one stays until the communicator goes) */
  fold__timer wake;        /* armed at 0 s when a call serves the next: it steps in the next pass */
  fold__hier_layout lay;   /* the hosts' shapes, once the children are made */
  int *local_own;          /* lay.local when made here (not the simulator's) */
  void *scratch;           /* the plans' scratch (fold__hier_scratch), kept across calls */
  size_t scratch_cap;
} hier_comm;

struct hier_call {
  fold__list link;     /* hc->calls */
  hier_comm *hc;
  fold__coll *co;
  uint32_t ticket;
  int served;          /* this call passed the turn on */
  int phase;           /* the next phase to plan */
  int nphases;         /* phases started so far (for messages) */
  int busy;            /* slots in use */
  struct hier_slot {   /* the child calls under way, stepped here */
    fold_comm *k;      /* the child running the phase */
    fold_request *cur; /* its call (NULL: the slot is free) */
    const char *what;
    int idx;           /* the phase's index in the plan */
    int num;           /* its number among the child calls this rank started (for messages) */
  } slot[HIER_SLOTS];
  int pending;         /* a phase planned, not started yet: */
  fold__hier_phase plan;
  int next_idx;
  int ahead;           /* the last phase planned may be followed by the next plan before it ends */
  int sig_ok;
};

static const char hc_key;  /* the slot of the per-communicator state */
static const char kid_key; /* marks hier's own children */

/* ---- per communicator ---------------------------------------------------------------- */

static void call_drop(fold_comm *c, hier_call *h, int status);

static void hc_teardown(void *p) {
  hier_comm *hc = p;
  fold__timer_cancel(hc->c, &hc->wake);
  for (fold__list *n; (n = fold__list_pop_front(&hc->calls)) != NULL;) {
    hier_call *h = FOLD__LIST_ENTRY(n, hier_call, link);
    call_drop(hc->c, h, FOLD_EABORTED);
    free(h);
  }
  /* The children, if they are still members of the family: freeing a
   * whole family (fold_sim_destroy) frees them before this runs. Looked
   * up by cid, so a freed one is never touched. */
  struct fold__family *f = hc->c->fam;
  for (int i = 0; i < 3 && f; i++) {
    fold_comm *k = hc->kid_cid[i] ? fold__fam_kid(f, hc->kid_cid[i]) : NULL;
    if (k) fold_comm_destroy(k);
    f = hc->c->fam; /* the family may end with the last child */
  }
  fold__hier_split_free(hc->split);
  free(hc->local_own);
  free(hc->scratch);
  free(hc);
}

/* Nothing to do: the pass the timer fires in steps the tasks after it. */
static void wake_fired(fold_comm *c, fold__timer *t, void *arg) {
  (void)c;
  (void)t;
  (void)arg;
}

static hier_comm *hc_of(fold_comm *c) {
  hier_comm *hc = fold__ext_get(c, &hc_key);
  if (hc) return hc;
  if ((hc = calloc(1, sizeof *hc)) == NULL) return NULL;
  hc->c = c;
  fold__list_init(&hc->calls);
  hc->leaders = (int)fold__param_u64(FOLD__P_HIER_LEADERS);
  hc->chunks = (int)fold__param_u64(FOLD__P_HIER_CHUNKS);
  fold__timer_init(&hc->wake, wake_fired, hc);
  if (fold__ext_attach(c, &hc_key, hc, hc_teardown) != FOLD_OK) {
    free(hc);
    return NULL;
  }
  return hc;
}

const char *fold__hier_usable(const fold_comm *c) {
  return fold__ext_get(c, &kid_key) ? "it is one of hier's own children (a host's or the leaders')" : NULL;
}

/* The children choose their own algorithms: never hier (they are its
 * phases), else as their parent (FOLD_ALGO, set_algo and rules inherited). */
static int kids_setup(fold__hier_kids *kids) {
  fold_comm *ks[3] = {kids->host, kids->net, kids->lane};
  for (int i = 0; i < 3; i++) {
    if (ks[i] == NULL) continue;
    fold__selection *sel = fold__selection_of(ks[i]);
    for (int kind = 0; sel && kind < FOLD__COLL_COUNT; kind++)
      if (sel->coll_algo[kind] >= 0 && sel->coll_algo[kind] == fold__algo_index((fold__coll_kind)kind, "hier", 4))
        sel->coll_algo[kind] = -1;
    int rc = fold__ext_attach(ks[i], &kid_key, (void *)&kid_key, NULL);
    if (rc != FOLD_OK) return rc;
  }
  return FOLD_OK;
}

/* User ops made on the parent after the children were: the child learns them. */
static int sync_user_ops(fold_comm *c, fold_comm *k) {
  if (fold__op_table_sync(k, c) != FOLD_OK) return fold__error(c, FOLD_ENOMEM, "hier: rank %d: out of memory", c->rank);
  return FOLD_OK;
}

/* The hosts' shapes from the children (every rank computes the same). */
static int layout_make(hier_comm *hc, const fold__hier_kids *kids) {
  fold_comm *c = hc->c;
  if (kids->local) { /* the simulator's, shared by its ranks */
    hc->lay = (fold__hier_layout){kids->maxh, kids->even, kids->local};
    return FOLD_OK;
  }
  int n = c->size, nh = kids->nhosts;
  int *cnt = calloc((size_t)(nh > 0 ? nh : 1), sizeof *cnt);
  int *local = hc->local_own = malloc((size_t)(n > 0 ? n : 1) * sizeof *local);
  if (cnt == NULL || local == NULL) {
    free(cnt);
    return fold__error(c, FOLD_ENOMEM, "hier: rank %d: out of memory", c->rank);
  }
  hc->lay.local = local;
  hc->lay.maxh = 0;
  for (int r = 0; r < n; r++) {
    local[r] = cnt[kids->host_of[r]]++;
    if (cnt[kids->host_of[r]] > hc->lay.maxh) hc->lay.maxh = cnt[kids->host_of[r]];
  }
  hc->lay.even = 1;
  for (int r = 0; r < n; r++)
    if (kids->host_of[r] != r / hc->lay.maxh || cnt[kids->host_of[r]] != hc->lay.maxh) hc->lay.even = 0;
  free(cnt);
  return FOLD_OK;
}

const fold__hier_layout *fold__hier_layout_get(const fold__coll *co) {
  const hier_call *h = (const hier_call *)(uintptr_t)co->u[7];
  return &h->hc->lay;
}

void *fold__hier_scratch(fold__coll *co, size_t bytes) {
  hier_call *h = (hier_call *)(uintptr_t)co->u[7];
  hier_comm *hc = h->hc;
  if (bytes > hc->scratch_cap) {
    void *p = realloc(hc->scratch, bytes);
    if (p == NULL) {
      fold__error(co->comm, FOLD_ENOMEM, "%s: rank %d: hier: out of memory for %zu bytes of scratch",
                  fold__coll_name(co->kind), co->rank, bytes);
      return NULL;
    }
    hc->scratch = p;
    hc->scratch_cap = bytes;
  }
  return hc->scratch;
}

/* ---- a call ------------------------------------------------------------------------------ */

/* The parent's rank of child k's rank i. */
static int parent_rank(const fold_comm *c, const fold_comm *k, int i) {
  if (i < 0 || i >= k->size) return -1;
  return fold__kid_rank(c, fold__root_rank(k, i));
}

/* Give up the current child call: it cannot go on (the parent failed, or
 * the communicator goes). Failing the child completes its receives, so
 * nothing of it stays posted when its state is released. */
static void call_drop(fold_comm *c, hier_call *h, int status) {
  (void)c;
  for (int i = 0; i < HIER_SLOTS; i++) {
    struct hier_slot *s = &h->slot[i];
    if (s->cur == NULL) continue;
    if (!fold__req_done(s->cur)) {
      if (!fold__comm_failed(s->k))
        fold__comm_fail(s->k, status, "hier: its parent's call was abandoned (the parent failed or went)");
      if (!fold__req_done(s->cur)) fold__req_complete(s->cur, status);
    }
    fold__req_unref(s->cur);
    s->cur = NULL;
  }
  h->busy = 0;
  h->pending = 0;
}

static void call_end(hier_call *h) {
  fold__list_unlink(&h->link);
  h->co->u[7] = 0;
  free(h);
}

int fold__hier_init(fold__coll *co) {
  fold_comm *c = co->comm;
  const char *name = fold__coll_name(co->kind);
  if (co->op == FOLD_SUM_EXACT)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: hier does not run sum_exact (its phases would round)", name,
                       co->rank);
  hier_comm *hc = hc_of(c);
  hier_call *h = hc ? calloc(1, sizeof *h) : NULL;
  if (h == NULL) {
    free(h);
    return fold__error(c, FOLD_ENOMEM, "%s: rank %d: out of memory", name, co->rank);
  }
  h->hc = hc;
  h->co = co;
  h->ticket = hc->next_ticket++;
  fold__list_push_front(&hc->calls, &h->link);
  co->u[7] = (size_t)(uintptr_t)h;
  /* the mismatch check of the round algorithms (coll.c), done here */
  if (co->size > 1 && !fold__coll_state_of(c)->no_sig_check) {
    fold__shm_note_round_call(co);
    int right = (co->rank + 1) % co->size, left = (co->rank + co->size - 1) % co->size;
    int rc = fold__irecv_bytes(c, &co->left_sig, sizeof co->left_sig, left, FOLD__CTX_SIG, co->tag, &co->sig_recv);
    if (rc == FOLD_OK) rc = fold__isend_bytes(c, &co->sig, sizeof co->sig, right, FOLD__CTX_SIG, co->tag, &co->sig_send);
    if (rc != FOLD_OK) return rc; /* h stays on hc->calls: freed with the communicator */
  }
  /* the communicator's first hier call makes the children: its exchange
   * takes the next collective number on every rank alike */
  if (hc->split == NULL && hc->kids == NULL && hc->split_rc == 0) {
    int rc = fold__hier_split_start(c, &hc->split);
    if (rc != FOLD_OK) {
      hc->split_rc = rc;
      return rc;
    }
  }
  return FOLD_OK;
}

/* The child call of slot s finished with status st (<0): the parent call
 * fails on every rank, naming the cause in the parent's ranks. */
static int phase_failed(hier_call *h, const struct hier_slot *s, int st) {
  fold__coll *co = h->co;
  fold_comm *c = co->comm, *k = s->k;
  if (fold__comm_failed(c)) return fold__comm_failed(c);
  if (st == FOLD_EPEER)
    for (int i = 0; i < k->size; i++)
      if (k->lost[i] && parent_rank(c, k, i) >= 0) return fold__fail_for_lost(c, parent_rank(c, k, i), "needs");
  char msg[FOLD__ERRLEN];
  snprintf(msg, sizeof msg, "collective #%d: rank %d: %s (hier), its %s failed: %.300s", co->tag, co->rank,
           fold__coll_name(co->kind), s->what, k->last_error);
  return fold__comm_fail_and_tell(c, st, msg);
}

/* Step slot s's child call. 1 when it is done (the slot freed), 0 while
 * it runs, <0 when it failed. */
static int step_child(hier_call *h, struct hier_slot *s) {
  if (!fold__req_done(s->cur)) {
    fold__task *t = s->cur->task;
    int rc = t->step(t);
    int st = fold__comm_failed(s->k);
    if (rc == 0 && !st) return 0;
    fold__req_complete(s->cur, st ? st : rc > 0 ? FOLD_OK : rc);
  }
  int st = s->cur->status;
  fold__req_unref(s->cur);
  s->cur = NULL;
  h->busy--;
  return st < 0 ? phase_failed(h, s, st) : 1;
}

/* Step every child call under way: <0 when one failed, else how many run. */
static int step_children(hier_call *h) {
  for (int i = 0; i < HIER_SLOTS; i++) {
    if (h->slot[i].cur == NULL) continue;
    int rc = step_child(h, &h->slot[i]);
    if (rc < 0) return rc;
  }
  return h->busy;
}

/* The planned phase may start: a slot is free and the phase it waits for
 * is over (not under way: phases start in plan order, so one of a lower
 * index not under way has ended). */
static int can_start(const hier_call *h) {
  if (h->busy == HIER_SLOTS) return 0;
  for (int i = 0; i < HIER_SLOTS; i++)
    if (h->slot[i].cur && h->slot[i].idx == h->plan.after) return 0;
  return 1;
}

/* Start the planned phase's child call in a free slot and take its task
 * off the child's list (a phase that this rank sits out ends at once). */
static int start_child(hier_call *h) {
  const fold__hier_phase *p = &h->plan;
  h->pending = 0;
  if (p->k == NULL) return FOLD_OK;
  struct hier_slot *s = NULL;
  for (int i = 0; i < HIER_SLOTS && s == NULL; i++)
    if (h->slot[i].cur == NULL) s = &h->slot[i];
  fold_comm *c = h->co->comm;
  int rc = sync_user_ops(c, p->k);
  s->k = p->k;
  s->what = p->what;
  s->idx = h->next_idx;
  s->num = ++h->nphases;
  if (rc == FOLD_OK) rc = fold__coll_start(p->k, p->what, &p->a, &s->cur);
  if (rc != FOLD_OK) {
    s->cur = NULL;
    return phase_failed(h, s, rc);
  }
  h->busy++;
  fold__task_cancel(p->k, s->cur->task);
  return FOLD_OK;
}

/* The next call may start its phases. It was stepped before this one in
 * the pass (tasks are stepped newest first), and nothing may step it
 * again soon (the simulator steps a rank only on its events; a wait may
 * sleep): a timer due now makes the engine step the tasks once more. */
static void serve_next(hier_call *h) {
  if (h->served) return;
  h->served = 1;
  hier_comm *hc = h->hc;
  hc->serving++;
  if (hc->serving != hc->next_ticket && !fold__comm_failed(hc->c)) fold__timer_arm_in(hc->c, &hc->wake, 0);
}

int fold__hier_step(fold__coll *co, fold__hier_plan plan) {
  hier_call *h = (hier_call *)(uintptr_t)co->u[7];
  if (h == NULL) return FOLD_EINTERNAL;
  hier_comm *hc = h->hc;
  int rc;
  if (!h->sig_ok) {
    if ((rc = fold__coll_sig_check(co)) < 0) goto fail;
    h->sig_ok = rc;
  }
  for (;;) {
    int busy = step_children(h);
    if (busy < 0) {
      rc = busy;
      goto fail;
    }
    if (h->pending) { /* planned ahead: it starts when its dependency is over */
      if (!can_start(h)) return 0;
      if ((rc = start_child(h)) < 0) goto fail;
      continue;
    }
    if (busy && !h->ahead) return 0; /* the next plan waits for every phase under way */
    if (h->served && h->phase < 0) {
      if (busy) return 0;
      break; /* every phase done */
    }
    if (h->ticket != hc->serving) return 0; /* an earlier call has phases to start */
    if (hc->kids == NULL) { /* the first call: the children are being made */
      if (hc->split_rc < 0) {
        rc = hc->split_rc;
        goto fail;
      }
      fold__hier_kids *kids = NULL;
      if ((rc = fold__hier_split_step(hc->split, &kids)) == 0) return 0;
      if (rc < 0 || (rc = kids_setup(kids)) < 0 || (rc = layout_make(hc, kids)) < 0) {
        hc->split_rc = rc;
        goto fail;
      }
      hc->kids = kids;
      hc->kid_cid[0] = kids->host->cid;
      hc->kid_cid[1] = kids->net ? kids->net->cid : 0;
      hc->kid_cid[2] = kids->lane ? kids->lane->cid : 0;
    }
    fold__hier_phase p;
    memset(&p, 0, sizeof p);
    int pr = plan(co, hc->kids, h->phase, &p);
    if (pr < 0) { /* this rank cannot go on (out of memory): the others must not wait for it */
      char msg[FOLD__ERRLEN];
      snprintf(msg, sizeof msg, "collective #%d: rank %d: %s (hier) cannot go on: %.300s", co->tag, co->rank,
               fold__coll_name(co->kind), co->comm->last_error);
      rc = fold__comm_failed(co->comm) ? fold__comm_failed(co->comm) : fold__comm_fail_and_tell(co->comm, pr, msg);
      goto fail;
    }
    if (pr == 0) {
      h->phase = -1;
      serve_next(h);
      continue;
    }
    h->plan = p;
    h->next_idx = h->phase++;
    h->ahead = p.ahead;
    h->pending = 1;
  }
  if (!h->sig_ok || (co->sig_send && !fold__req_done(co->sig_send))) return 0;
  int outputs = co->kind == FOLD__COLL_ALLREDUCE || co->kind == FOLD__COLL_REDUCE_SCATTER ||
                (co->kind == FOLD__COLL_REDUCE && co->rank == co->root);
  if (co->op == FOLD_AVG && outputs) fold__op_finish(co->op, co->dtype, co->rbuf, co->count, co->size);
  call_end(h);
  return 1;
fail:
  serve_next(h); /* the parent failed (or will): later calls fail at their start */
  call_drop(co->comm, h, rc);
  return rc;
}

int fold__hier_describe(fold__coll *co, char *buf, size_t cap) {
  hier_call *h = (hier_call *)(uintptr_t)co->u[7];
  buf[0] = '\0';
  if (h == NULL) return -1;
  const struct hier_slot *s = NULL; /* the oldest phase under way */
  for (int i = 0; i < HIER_SLOTS; i++)
    if (h->slot[i].cur && (s == NULL || h->slot[i].idx < s->idx)) s = &h->slot[i];
  if (s && s->cur->task && s->cur->task->describe) {
    char inner[240];
    int w = s->cur->task->describe(s->cur->task, inner, sizeof inner);
    int p = parent_rank(co->comm, s->k, w);
    const fold__hier_kids *kids = h->hc->kids;
    snprintf(buf, cap, "rank %d in hier's %s (phase %d; ranks of the %s child: %s)", p, s->what, s->num,
             kids && s->k == kids->host ? "host" : kids && s->k == kids->lane ? "lane" : "leaders'", inner);
    return p;
  }
  if (h->ticket != h->hc->serving) {
    snprintf(buf, cap, "an earlier hier call on this communicator to start its phases");
    return -1;
  }
  if (h->hc->kids == NULL) {
    snprintf(buf, cap, "hier's host split (the exchange that makes its children)");
    return -1;
  }
  if (co->sig_recv && !fold__req_done(co->sig_recv)) {
    snprintf(buf, cap, "rank %d (the signature of its call, hier)", co->sig_recv->peer);
    return co->sig_recv->peer;
  }
  return -1;
}

/* The copies between rank order (rank r's block at r) and host order (at
 * host_of[r]'s host block, local[r] within it), one way or the other. */
static void blocks_move(const fold__coll *co, const fold__hier_kids *kids, char *byhost, char *byrank, int to_host) {
  const fold__hier_layout *L = fold__hier_layout_get(co);
  size_t blk = co->count * co->esize, hb = (size_t)L->maxh * blk;
  if (to_host) memset(byhost, 0, (size_t)kids->nhosts * hb); /* the smaller hosts' padding */
  for (int r = 0; r < co->size; r++) {
    char *h = byhost + (size_t)kids->host_of[r] * hb + (size_t)L->local[r] * blk, *k = byrank + (size_t)r * blk;
    memcpy(to_host ? h : k, to_host ? k : h, blk);
  }
}

void fold__hier_blocks_to_host(const fold__coll *co, const fold__hier_kids *kids, const void *byrank, void *byhost) {
  blocks_move(co, kids, byhost, (char *)(uintptr_t)byrank, 1);
}

void fold__hier_blocks_to_rank(const fold__coll *co, const fold__hier_kids *kids, const void *byhost, void *byrank) {
  blocks_move(co, kids, (char *)(uintptr_t)byhost, byrank, 0);
}

int fold__hier_leaders(const fold__coll *co) {
  const hier_call *h = (const hier_call *)(uintptr_t)co->u[7];
  return h->hc->leaders;
}

int fold__hier_chunks(const fold__coll *co) {
  const hier_call *h = (const hier_call *)(uintptr_t)co->u[7];
  return h->hc->chunks;
}

int fold__hier_local_of(const fold__coll *co, const fold__hier_kids *kids, int r) {
  if (kids->local) return kids->local[r];
  int l = 0;
  for (int q = 0; q < r; q++) l += kids->host_of[q] == kids->host_of[r];
  (void)co;
  return l;
}
