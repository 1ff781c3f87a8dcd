/* comm_split.c — sub-communicators: fold_comm_split/dup/split_host, their creation and destruction (the family's routing is engine/family.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/coll.h"
#include "comm/comm.h"
#include "core/internal.h"
#include "engine/family.h"
#include "select/select.h"
#include "transport/sim/sim.h"
#include "transport/transport.h"

enum { SPLIT_NULL_OUT = 1, SPLIT_BAD_COLOR = 2 };
enum { MODE_SPLIT, MODE_DUP, MODE_HOST };

/* This rank's host: the card host string the transports compare (threads
 * of one process share it); on the simulator its simulated host
 * (fold_sim_set_hosts; without hosts every rank is its own), as
 * fold_comm_local_rank says. */
static uint64_t host_id(const fold_comm *root) {
  if (fold__engine_virtual(root)) return 0x9e3779b97f4a7c15ull ^ (uint64_t)(fold__sim_host(root) + 1);
  fold__card card;
  memset(&card, 0, sizeof card);
  if (fold__card_self(&card) != FOLD_OK) return 1;
  /* The test knob FOLD_TEST_HOSTS=k makes k-rank "hosts" of the world's
   * processes (bootstrap/init.c, which the transports' choice follows):
   * the same here, so that split_host agrees with shm versus tcp. Threads
   * of one process stay one host, except under FOLD_TEST_HOST_MAP, which
   * splits them too (for split_host and hier; they still talk inproc). */
  int inproc = root->ntps > 0 && root->tps[0]->ops->kind == FOLD__TP_KIND_INPROC;
  int th = inproc && fold__param_str(FOLD__P_TEST_HOST_MAP) == NULL ? -1 : fold__test_host(root->rank);
  if (th >= 0) {
    size_t len = strlen(card.host);
    snprintf(card.host + len, sizeof card.host - len, "|test-host-%d", th);
  }
  uint64_t h = 1469598103934665603ull; /* FNV-1a over the host string */
  for (const char *p = card.host; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
  return h;
}

struct fold__family *fold__family_of(fold_comm *c) {
  if (c->fam) return c->fam;
  struct fold__family *f = calloc(1, sizeof *f);
  if (f == NULL) return NULL;
  f->root = c;
  fold__list_init(&f->early);
  fold__list_init(&f->done);
  f->next_cid = 1; /* the root is cid 0 */
  f->host = host_id(c);
  c->fam = f;
  return f;
}

/* ---- children --------------------------------------------------------------------- */


void fold__kid_free(fold_comm *k) {
  fold__comm_drop_queues(k);
  free(k->peer_tp);
  if (!k->lost_shared) free(k->lost);
  free(k->to_root);
  free(k->by_root);
  fold__lost_notes_free(k);
  free(k->poison);
  /* the layers' slots (collective cache, rules) go after the requests */
  fold__ext_teardown(k);
  fold__svc_free(k);
  if (k->wait_ep > 0) close(k->wait_ep - 1); /* its own epoll over the family's transports */
  free(k);
}

static int member_cmp(const void *a, const void *b) {
  const fold__member *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

/* A new child before its members are known: configured like its parent, and
 * failed with FOLD_EINVAL until the split completes (on the simulator, the
 * program gets it before the simulator has run the exchange). */
fold_comm *fold__kid_shell(fold_comm *c, const char *op) {
  fold_comm *k = calloc(1, sizeof *k);
  if (k == NULL) return NULL;
  fold__comm_queues_init(k);
  k->fam = c->fam;
  k->size = 1;
  k->timeout_ns = c->timeout_ns;
  k->log_level = c->log_level;
  k->clock = c->clock;
  k->clock_ctx = c->clock_ctx;
  k->pthread = c->pthread; /* one helper (and lock) per family: the root's */
  k->own_cpu = c->own_cpu;
  if (fold__svc_init_child(k, c) != FOLD_OK || fold__select_inherit(k, c) != FOLD_OK ||
      fold__coll_state_inherit(k, c) != FOLD_OK || fold__op_table_attach(k) != FOLD_OK) {
    fold__svc_free(k);
    free(k);
    return NULL;
  }
  k->fail_status = FOLD_EINVAL;
  snprintf(k->last_error, sizeof k->last_error,
           "%s: this communicator is not complete yet: run the simulator (fold_sim_run) first", op);
  atomic_store(&k->failed, 1);
  return k;
}

/* The child's map to the root's ranks: evenly spaced (to_base, to_step,
 * no table) when it is, else to_root and by_root, of the child's size. */
static int map_fill(fold_comm *c, fold_comm *k, const fold__member *mem, int n) {
  int base = fold__root_rank(c, mem[0].rank), step = n > 1 ? fold__root_rank(c, mem[1].rank) - base : 1;
  int even = step > 0;
  for (int i = 2; i < n && even; i++) even = fold__root_rank(c, mem[i].rank) == base + i * step;
  k->kid = 1;
  if (even) {
    k->to_base = base;
    k->to_step = step;
    return FOLD_OK;
  }
  k->to_root = malloc((size_t)n * sizeof *k->to_root);
  k->by_root = malloc((size_t)n * sizeof *k->by_root);
  fold__member *by = malloc((size_t)n * sizeof *by); /* (root rank, child rank), sorted: by_root */
  if (k->to_root == NULL || k->by_root == NULL || by == NULL) {
    free(by);
    return FOLD_ENOMEM;
  }
  for (int i = 0; i < n; i++) {
    k->to_root[i] = fold__root_rank(c, mem[i].rank);
    by[i] = (fold__member){k->to_root[i], i};
  }
  qsort(by, (size_t)n, sizeof *by, member_cmp);
  for (int i = 0; i < n; i++) k->by_root[i] = by[i].rank;
  free(by);
  return FOLD_OK;
}

/* Fill shell k as the child of parent c with the members mem[0..n) (parent
 * ranks, in the child's order), this rank being mem[me], on the hosts h
 * says. */
int fold__kid_fill(fold_comm *c, fold_comm *k, uint32_t cid, const fold__member *mem, int n, int me,
                   const fold__kid_hosts *h) {
  struct fold__family *f = c->fam;
  fold_comm *root = f->root;
  k->rank = me;
  k->size = n;
  /* a root without a peer table (the simulator's) reaches every peer
   * through its one transport: so does its child */
  int table = root->peer_tp != NULL;
  k->peer_tp = table ? calloc((size_t)n, sizeof *k->peer_tp) : NULL;
  int lost_any = 0;
  for (int i = 0; i < n && !lost_any; i++) lost_any = root->lost[fold__root_rank(c, mem[i].rank)] || c->lost[mem[i].rank];
  /* no member lost and the root's array shared (all zeros, of the root's
   * size): the child shares it too, copied on its first write */
  k->lost_shared = !lost_any && root->lost_shared;
  k->lost = k->lost_shared ? root->lost : calloc((size_t)n, 1);
  if ((table && !k->peer_tp) || !k->lost || fold__op_table_sync(k, c) != FOLD_OK || map_fill(c, k, mem, n) != FOLD_OK)
    return FOLD_ENOMEM;
  fold__inject_delay_init(k); /* FOLD_INJECT_DELAY names ranks of each communicator */
  if (!table && n > 1) k->tps[k->ntps++] = root->tps[0];
  for (int i = 0; i < n; i++) {
    int rr = fold__root_rank(c, mem[i].rank);
    if (!k->lost_shared) k->lost[i] = root->lost[rr] || c->lost[mem[i].rank];
    if (h->id && h->id[i] == h->id[me]) {
      if (i < me) k->local_rank++;
      k->local_size++;
    }
    if (!table) continue;
    k->peer_tp[i] = fold__peer_tp(root, rr);
    /* the transports that reach its peers: selection's view (fold__comm_tp_kind) and waits */
    fold__tp *tp = k->peer_tp[i];
    int seen = i == me || tp == NULL;
    for (int j = 0; j < k->ntps && !seen; j++) seen = k->tps[j] == tp;
    if (!seen && k->ntps < FOLD__TP_MAX) k->tps[k->ntps++] = tp;
  }
  /* the child's layout (selection's rules): from its members' host ids,
   * or as the caller knows it */
  if (h->id) {
    fold__comm_set_layout(k, h->id, n);
  } else {
    k->nhosts = h->nhosts, k->max_ppn = h->max_ppn;
    k->local_rank = h->local_rank, k->local_size = h->local_size;
  }
  k->cid = cid;
  if (f->nkids == f->capkids) {
    int cap = f->capkids ? 2 * f->capkids : 4;
    fold_comm **kids = realloc(f->kids, (size_t)cap * sizeof *kids);
    if (kids == NULL) return FOLD_ENOMEM;
    f->kids = kids;
    f->capkids = cap;
  }
  f->kids[f->nkids++] = k;
  k->last_error[0] = '\0';
  k->fail_status = 0;
  atomic_store(&k->failed, 0);
  /* what peers sent before this rank got here: in arrival order */
  FOLD__LIST_FOR_EACH_SAFE(fold__unexp, u, &f->early, link) {
    if (u->cid != cid) continue;
    fold__list_unlink(&u->link);
    fold__deliver_unexp(root, u); /* routes to k now */
  }
  return FOLD_OK;
}

int fold__kid_fill_recs(fold_comm *c, fold_comm *k, uint32_t cid, const fold__member *mem, int n, int me,
                        const fold__split_rec *recs) {
  uint64_t *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
  if (ids == NULL) return FOLD_ENOMEM;
  for (int i = 0; i < n; i++) ids[i] = recs[mem[i].rank].host;
  fold__kid_hosts h = {ids, 0, 0, 0, 0};
  int rc = fold__kid_fill(c, k, cid, mem, n, me, &h);
  free(ids);
  return rc;
}

/* One split in progress: the exchange's request and what finishing needs. */
typedef struct pending {
  fold__task task;
  fold_comm *c;        /* the parent */
  fold_comm *k;        /* the shell, NULL for FOLD_UNDEFINED */
  fold_request *ag;    /* the allgather */
  int mode, color;
  fold__split_rec mine;
  fold__split_rec *recs;
  const char *op;
} pending;

static void pending_free(pending *ps) {
  fold__req_unref(ps->ag);
  free(ps->recs);
  free(ps);
}

/* The exchange is over: check every rank's arguments, agree on the cid and
 * fill the shell. Returns 0 or the error (every rank returns the same). */
static int finish(pending *ps) {
  fold_comm *c = ps->c;
  const char *op = ps->op;
  fold__split_rec *recs = ps->recs;
  int rc = ps->ag->status;
  if (rc == FOLD_OK && fold__comm_failed(c)) rc = fold__comm_failed(c);
  /* bad arguments anywhere: every rank returns FOLD_EINVAL naming the rank */
  uint32_t cid = 0;
  for (int r = 0; rc == FOLD_OK && r < c->size; r++) {
    if (recs[r].flags & SPLIT_NULL_OUT)
      rc = fold__error(c, FOLD_EINVAL, "%s: rank %d: newcomm is NULL", op, r);
    else if (recs[r].flags & SPLIT_BAD_COLOR)
      rc = fold__error(c, FOLD_EINVAL, "%s: rank %d: color %d is negative (only FOLD_UNDEFINED is allowed)", op, r,
                       (int)recs[r].color);
    if (recs[r].next_cid > cid) cid = recs[r].next_cid;
  }
  if (rc == FOLD_OK && cid == UINT32_MAX)
    rc = fold__error(c, FOLD_EINTERNAL, "%s: rank %d: communicator ids exhausted", op, c->rank);
  if (rc != FOLD_OK) return rc;
  /* Every rank of the parent moves past cid, so no process reuses it; the
   * color groups may all take it, as they have no member in common. */
  c->fam->next_cid = cid + 1;
  if (ps->k == NULL) return FOLD_OK; /* FOLD_UNDEFINED */
  fold__member *mem = malloc((size_t)c->size * sizeof *mem);
  if (mem == NULL) return fold__error(c, FOLD_ENOMEM, "%s: rank %d: out of memory", op, c->rank);
  int n = 0, me = -1;
  for (int r = 0; r < c->size; r++) {
    int in = ps->mode == MODE_HOST ? recs[r].host == ps->mine.host
             : ps->mode == MODE_DUP ? 1 : recs[r].color == ps->color;
    if (!in) continue;
    mem[n].key = ps->mode == MODE_SPLIT ? recs[r].key : 0;
    mem[n].rank = r;
    n++;
  }
  qsort(mem, (size_t)n, sizeof *mem, member_cmp);
  for (int i = 0; i < n; i++)
    if (mem[i].rank == c->rank) me = i;
  rc = fold__kid_fill_recs(c, ps->k, cid, mem, n, me, recs);
  free(mem);
  if (rc != FOLD_OK)
    return fold__error(c, rc, "%s: rank %d: out of memory creating a communicator of %d ranks", op, c->rank, n);
  FOLD__TRACE(c, "%s: rank %d is rank %d of %d in communicator %u", op, c->rank, me, n, (unsigned)cid);
  return FOLD_OK;
}

/* On the simulator the split finishes in a task of the parent, when the
 * simulator has run the exchange. */
static int pending_step(fold__task *t) {
  pending *ps = (pending *)t;
  if (!fold__req_done(ps->ag)) {
    /* the exchange is this task's own (see split): stepped here, so that
     * the split finishes in the same pass as its last receive */
    fold__task *at = ps->ag->task;
    int rc = at->step(at);
    if (rc == 0) return 0;
    int st = fold__comm_failed(ps->c);
    fold__req_complete(ps->ag, st ? st : rc > 0 ? FOLD_OK : rc);
  }
  int rc = finish(ps);
  /* the exchange's state goes back to the parent's cache now, while the
   * parent surely lives (this task's request is dropped later) */
  fold__req_unref(ps->ag);
  ps->ag = NULL;
  if (rc != FOLD_OK && ps->k) {
    /* the program holds the shell: it stays failed with the reason */
    ps->k->fail_status = rc;
    snprintf(ps->k->last_error, sizeof ps->k->last_error, "%s", fold_comm_last_error(ps->c));
  }
  return 1;
}

static void pending_release(fold__task *t) { pending_free((pending *)t); }

/* Comm c goes: simulator splits not finished yet must not touch it later
 * (as their parent: its tasks are dropped; as their new comm: they then
 * finish as if FOLD_UNDEFINED). */
static void pending_forget(struct fold__family *f, fold_comm *c) {
  FOLD__LIST_FOR_EACH(fold_request, r, &f->done, link) {
    pending *ps = (pending *)r->task;
    if (ps->k == c) ps->k = NULL;
    if (r->comm == c && ps->ag) {
      fold__req_unref(ps->ag);
      ps->ag = NULL;
    }
  }
}

/* The one exchange behind split, dup and split_host: an allgather over the
 * parent whose signature is its own (a rank calling another collective
 * meanwhile gets FOLD_EMISMATCH, as do its peers). */
static int split(fold_comm *c, int mode, int color, int key, fold_comm **newcomm, const char *op) {
  int rc;
  if (newcomm) *newcomm = NULL;
  if (c == NULL) return fold__error(NULL, FOLD_EINVAL, "%s: communicator is NULL", op);
  if ((rc = fold__comm_failed(c))) return rc;
  struct fold__family *f = fold__family_of(c);
  if (f == NULL) return fold__error(c, FOLD_ENOMEM, "%s: rank %d: out of memory", op, c->rank);
  /* the simulator's finished splits: their requests were kept until now */
  FOLD__LIST_FOR_EACH_SAFE(fold_request, r, &f->done, link) {
    if (!fold__req_done(r)) continue;
    fold__list_unlink(&r->link);
    fold__req_unref(r);
  }
  pending *ps = calloc(1, sizeof *ps);
  fold__split_rec *recs = malloc((size_t)c->size * sizeof *recs);
  if (ps == NULL || recs == NULL) {
    free(ps);
    free(recs);
    return fold__error(c, FOLD_ENOMEM, "%s: rank %d: out of memory for %d ranks", op, c->rank, c->size);
  }
  ps->c = c;
  ps->mode = mode;
  ps->color = color;
  ps->recs = recs;
  ps->op = op;
  ps->mine = (fold__split_rec){color, key, f->next_cid, 0, f->host};
  if (newcomm == NULL) ps->mine.flags |= SPLIT_NULL_OUT;
  if (mode == MODE_SPLIT && color < 0 && color != FOLD_UNDEFINED) ps->mine.flags |= SPLIT_BAD_COLOR;
  int joins = newcomm != NULL && !ps->mine.flags && !(mode == MODE_SPLIT && color == FOLD_UNDEFINED);
  if (joins && (ps->k = fold__kid_shell(c, op)) == NULL) {
    pending_free(ps);
    return fold__error(c, FOLD_ENOMEM, "%s: rank %d: out of memory", op, c->rank);
  }
  uint16_t sig = mode == MODE_SPLIT ? FOLD__SIG_OP_SPLIT : mode == MODE_DUP ? FOLD__SIG_OP_DUP : FOLD__SIG_OP_SPLIT_HOST;
  fold__coll_args a = {FOLD__COLL_ALLGATHER, &ps->mine, recs, sizeof ps->mine, FOLD_UINT8, FOLD_SUM, -1, sig};
  rc = fold__coll_start(c, op, &a, &ps->ag);
  if (rc == FOLD_OK && fold__engine_virtual(c)) {
    fold_request *r = fold__req_new(c, FOLD__REQ_TASK);
    if (r == NULL) {
      rc = fold__error(c, FOLD_ENOMEM, "%s: rank %d: out of memory", op, c->rank);
    } else {
      ps->task.step = pending_step;
      ps->task.release = pending_release;
      ps->task.req = r;
      r->task = &ps->task;
      if (newcomm) *newcomm = ps->k;
      /* take the exchange's task off the engine's list: the split task
       * steps it, then finishes at once */
      fold__task_cancel(c, ps->ag->task);
      fold__task_start(c, &ps->task);
      fold__list_push_front(&f->done, &r->link); /* unreferenced at the next split or with the family */
      /* this rank's own bad argument is known now (its peers learn it from
       * the exchange) */
      if (ps->mine.flags & SPLIT_NULL_OUT)
        return fold__error(c, FOLD_EINVAL, "%s: rank %d: newcomm is NULL", op, c->rank);
      if (ps->mine.flags & SPLIT_BAD_COLOR)
        return fold__error(c, FOLD_EINVAL, "%s: rank %d: color %d is negative (only FOLD_UNDEFINED is allowed)",
                           op, c->rank, color);
      return FOLD_OK;
    }
  }
  if (rc == FOLD_OK) rc = fold__wait_req(c, ps->ag, op);
  if (rc == FOLD_OK) rc = finish(ps);
  if (rc == FOLD_OK && newcomm) *newcomm = ps->k;
  else if (ps->k) fold__kid_free(ps->k);
  pending_free(ps);
  return rc;
}

/* The public calls hold the family's lock (FOLD_PROGRESS_THREAD: the
 * helper steps every member, so the children table must not change under it). */
static int split_locked(fold_comm *c, int mode, int color, int key, fold_comm **newcomm, const char *op) {
  fold__enter(c);
  int rc = split(c, mode, color, key, newcomm, op);
  fold__leave(c);
  return rc;
}

int fold_comm_split(fold_comm *comm, int color, int key, fold_comm **newcomm) {
  return split_locked(comm, MODE_SPLIT, color, key, newcomm, "fold_comm_split");
}

int fold_comm_dup(fold_comm *comm, fold_comm **newcomm) {
  return split_locked(comm, MODE_DUP, 0, 0, newcomm, "fold_comm_dup");
}

int fold_comm_split_host(fold_comm *comm, fold_comm **hostcomm) {
  return split_locked(comm, MODE_HOST, 0, 0, hostcomm, "fold_comm_split_host");
}

/* ---- destruction ------------------------------------------------------------------- */

static void family_free(struct fold__family *f) {
  FOLD__LIST_FOR_EACH_SAFE(fold_request, r, &f->done, link) { /* first: an unfinished one still refers to its parent */
    fold__list_unlink(&r->link);
    fold__req_unref(r);
  }
  while (f->nkids > 0) fold__kid_free(f->kids[--f->nkids]);
  FOLD__LIST_FOR_EACH_SAFE(fold__unexp, u, &f->early, link) {
    fold__list_unlink(&u->link);
    fold__unexp_drop(u);
  }
  free(f->kids);
  free(f);
}

void fold__fam_free(fold_comm *root) {
  if (root->fam == NULL || root->kid) return;
  family_free(root->fam);
  root->fam = NULL;
}

static int fam_destroy(fold_comm *c);

int fold__fam_destroy(fold_comm *c) {
  /* the family's helper (FOLD_PROGRESS_THREAD) steps every member: hold its
   * lock while the members change; it is stopped before the root goes */
  fold_comm *root = c->fam->root;
  fold__enter(root);
  if (fold__engine_virtual(c) && ((struct fold_sim *)c->clock_ctx)->running) {
    fold__leave(root);
    return fold__error(c, FOLD_EINVAL, "fold_comm_destroy: rank %d: called while the simulator is running", c->rank);
  }
  /* The user's requests, then the layers' state, go first, while c is still
   * a member (a root's used to wait for its last child): a layer may own
   * children of c (hier's host and leaders' children, coll/hier.c), which
   * its teardown destroys now, so they neither outlive c nor keep its
   * family alive. */
  fold__comm_drop_queues(c);
  fold__ext_teardown(c);
  /* the family ends with this destroy when the root is (or now goes) and no
   * child is left after it */
  int root_goes = c->fam->root_gone || c == root;
  int kids_after = c->fam->nkids - (c != root);
  int last = root_goes && kids_after == 0;
  if (last) {
    fold__leave(root);
    fold__pthread_stop(root); /* joined: nothing else touches the family */
    return fam_destroy(c);
  }
  int rc = fam_destroy(c);
  fold__leave(root);
  return rc;
}

static int fam_destroy(fold_comm *c) {
  struct fold__family *f = c->fam;
  fold_comm *root = f->root;
  if (fold__engine_virtual(c) && ((struct fold_sim *)c->clock_ctx)->running)
    return fold__error(c, FOLD_EINVAL, "fold_comm_destroy: rank %d: called while the simulator is running", c->rank);
  pending_forget(f, c);
  if (c != root) {
    fold__fam_reparent(f, c);
    for (int i = 0; i < f->nkids; i++)
      if (f->kids[i] == c) {
        f->kids[i] = f->kids[--f->nkids];
        break;
      }
    fold__kid_free(c);
  } else {
    /* The world goes first: the children keep its transports (docs/comm.md);
     * the root stays allocated, without its user's state, until the last
     * child goes. */
    f->root_gone = 1;
    fold__comm_drop_queues(root);
  }
  if (!f->root_gone || f->nkids > 0) return FOLD_OK;
  root->fam = NULL;
  family_free(f);
  if (fold__engine_virtual(root)) return fold__sim_comm_destroy(root);
  fold__comm_free(root);
  return FOLD_OK;
}
