/* comm_split.c — sub-communicators: fold_comm_split/dup/split_host, their creation and destruction (the family's routing is engine/family.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/coll.h"
#include "comm/comm.h"
#include "core/internal.h"
#include "core/queue.h"
#include "engine/family.h"
#include "select/select.h"
#include "transport/sim/sim.h"
#include "transport/transport.h"

/* What every rank of the parent contributes to a split (24 bytes, no padding). */
typedef struct split_rec {
  int32_t color, key;
  uint32_t next_cid;
  uint32_t flags;      /* SPLIT_NULL_OUT, SPLIT_BAD_COLOR */
  uint64_t host;
} split_rec;
_Static_assert(sizeof(split_rec) == 24, "split_rec has no padding");

enum { SPLIT_NULL_OUT = 1, SPLIT_BAD_COLOR = 2 };
enum { MODE_SPLIT, MODE_DUP, MODE_HOST };

/* This rank's host: the card host string the transports compare (threads
 * of one process share it); on the simulator its simulated host
 * (fold_sim_set_hosts; without hosts every rank is its own), as
 * fold_comm_local_rank says. */
static uint64_t host_id(const fold_comm *root) {
  if (fold__sim_is(root)) return 0x9e3779b97f4a7c15ull ^ (uint64_t)(fold__sim_host(root) + 1);
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

static struct fold__family *family_of(fold_comm *c) {
  if (c->fam) return c->fam;
  struct fold__family *f = calloc(1, sizeof *f);
  if (f == NULL) return NULL;
  f->root = c;
  f->next_cid = 1; /* the root is cid 0 */
  f->host = host_id(c);
  c->fam = f;
  return f;
}

/* ---- children --------------------------------------------------------------------- */


static void kid_free(fold_comm *k) {
  fold__comm_drop_queues(k);
  free(k->peer_tp);
  free(k->lost);
  free(k->to_root);
  free(k->from_root);
  fold__lost_notes_free(k);
  free(k->poison);
  free(k->user_ops);
  free(k->op_tmp);
  /* the layers' slots (collective cache, rules) go after the requests */
  fold__ext_teardown(k);
  fold__svc_free(k);
  if (k->wait_ep > 0) close(k->wait_ep - 1); /* its own epoll over the family's transports */
  free(k);
}

typedef struct member { int32_t key; int rank; } member;

static int member_cmp(const void *a, const void *b) {
  const member *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

/* A new child before its members are known: configured like its parent, and
 * failed with FOLD_EINVAL until the split completes (on the simulator, the
 * program gets it before the simulator has run the exchange). */
static fold_comm *kid_shell(fold_comm *c, const char *op) {
  fold_comm *k = calloc(1, sizeof *k);
  if (k == NULL) return NULL;
  k->fam = c->fam;
  k->size = 1;
  k->timeout_ns = c->timeout_ns;
  k->log_level = c->log_level;
  k->clock = c->clock;
  k->clock_ctx = c->clock_ctx;
  k->sim_drive = c->sim_drive;
  k->pthread = c->pthread; /* one helper (and lock) per family: the root's */
  memcpy(k->coll_algo, c->coll_algo, sizeof k->coll_algo);
  k->no_sig_check = c->no_sig_check;
  k->own_cpu = c->own_cpu;
  if (fold__svc_init_child(k, c) != FOLD_OK || fold__select_inherit(k, c) != FOLD_OK) {
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

/* Fill shell k as the child of parent c with the given members (parent
 * ranks, in the child's order), this rank being mem[me]. */
static int kid_fill(fold_comm *c, fold_comm *k, uint32_t cid, const member *mem, int n, int me,
                    const split_rec *recs) {
  struct fold__family *f = c->fam;
  fold_comm *root = f->root;
  k->rank = me;
  k->size = n;
  k->peer_tp = calloc((size_t)n, sizeof *k->peer_tp);
  k->lost = calloc((size_t)n, 1);
  k->to_root = malloc((size_t)n * sizeof *k->to_root);
  k->from_root = malloc((size_t)root->size * sizeof *k->from_root);
  if (c->nuser_ops > 0 && (k->user_ops = malloc((size_t)c->nuser_ops * sizeof *c->user_ops)) != NULL) {
    memcpy(k->user_ops, c->user_ops, (size_t)c->nuser_ops * sizeof *c->user_ops);
    k->nuser_ops = c->nuser_ops;
  }
  if (!k->peer_tp || !k->lost || !k->to_root || !k->from_root || (c->nuser_ops && !k->user_ops))
    return FOLD_ENOMEM;
  fold__inject_delay_init(k); /* FOLD_INJECT_DELAY names ranks of each communicator */
  for (int i = 0; i < root->size; i++) k->from_root[i] = -1;
  uint64_t host = recs[mem[me].rank].host;
  for (int i = 0; i < n; i++) {
    int rr = fold__root_rank(c, mem[i].rank);
    k->to_root[i] = rr;
    k->from_root[rr] = i;
    k->peer_tp[i] = fold__peer_tp(root, rr);
    k->lost[i] = root->lost[rr] || c->lost[mem[i].rank];
    if (recs[mem[i].rank].host == host) {
      if (i < me) k->local_rank++;
      k->local_size++;
    }
    /* the transports that reach its peers: selection's view (fold__comm_tp_kind) and waits */
    fold__tp *tp = k->peer_tp[i];
    int seen = i == me || tp == NULL;
    for (int j = 0; j < k->ntps && !seen; j++) seen = k->tps[j] == tp;
    if (!seen && k->ntps < FOLD__TP_MAX) k->tps[k->ntps++] = tp;
  }
  /* the child's layout from its members' host ids (selection's rules) */
  uint64_t *ids = malloc((size_t)n * sizeof *ids);
  for (int i = 0; ids && i < n; i++) ids[i] = recs[mem[i].rank].host;
  if (ids) fold__comm_set_layout(k, ids, n);
  free(ids);
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
  fold__unexp **pp = &f->early_head, *last = NULL;
  while (*pp) {
    fold__unexp *u = *pp;
    if (u->cid != cid) {
      last = u;
      pp = &u->next;
      continue;
    }
    *pp = u->next;
    u->next = NULL;
    fold__deliver_unexp(root, u); /* routes to k now */
  }
  f->early_tail = last;
  return FOLD_OK;
}

/* One split in progress: the exchange's request and what finishing needs. */
typedef struct pending {
  fold__task task;
  fold_comm *c;        /* the parent */
  fold_comm *k;        /* the shell, NULL for FOLD_UNDEFINED */
  fold_request *ag;    /* the allgather */
  int mode, color;
  split_rec mine;
  split_rec *recs;
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
  split_rec *recs = ps->recs;
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
  member *mem = malloc((size_t)c->size * sizeof *mem);
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
  rc = kid_fill(c, ps->k, cid, mem, n, me, recs);
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
  for (fold_request *r = f->done; r; r = r->next) {
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
  struct fold__family *f = family_of(c);
  if (f == NULL) return fold__error(c, FOLD_ENOMEM, "%s: rank %d: out of memory", op, c->rank);
  /* the simulator's finished splits: their requests were kept until now */
  for (fold_request **pp = &f->done; *pp;) {
    fold_request *r = *pp;
    if (!fold__req_done(r)) {
      pp = &r->next;
      continue;
    }
    *pp = r->next;
    fold__req_unref(r);
  }
  pending *ps = calloc(1, sizeof *ps);
  split_rec *recs = malloc((size_t)c->size * sizeof *recs);
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
  ps->mine = (split_rec){color, key, f->next_cid, 0, f->host};
  if (newcomm == NULL) ps->mine.flags |= SPLIT_NULL_OUT;
  if (mode == MODE_SPLIT && color < 0 && color != FOLD_UNDEFINED) ps->mine.flags |= SPLIT_BAD_COLOR;
  int joins = newcomm != NULL && !ps->mine.flags && !(mode == MODE_SPLIT && color == FOLD_UNDEFINED);
  if (joins && (ps->k = kid_shell(c, op)) == NULL) {
    pending_free(ps);
    return fold__error(c, FOLD_ENOMEM, "%s: rank %d: out of memory", op, c->rank);
  }
  uint16_t sig = mode == MODE_SPLIT ? FOLD__SIG_OP_SPLIT : mode == MODE_DUP ? FOLD__SIG_OP_DUP : FOLD__SIG_OP_SPLIT_HOST;
  fold__coll_args a = {FOLD__COLL_ALLGATHER, &ps->mine, recs, sizeof ps->mine, FOLD_UINT8, FOLD_SUM, -1, sig};
  rc = fold__coll_start(c, op, &a, &ps->ag);
  if (rc == FOLD_OK && c->sim_drive) {
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
      r->next = f->done; /* unreferenced at the next split or with the family */
      f->done = r;
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
  else if (ps->k) kid_free(ps->k);
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

/* ---- the children of the hierarchical collectives (coll/hier.c) ---------------------
 * One exchange makes both: the host child (split_host) and the leaders'
 * child (the lowest rank of each host, in rank order; a host's index is
 * its leader's rank there). It is the split's allgather with a signature
 * of its own, started inside a collective call (so at the same point of
 * every rank's sequence) and stepped by that collective's own steps: it
 * never blocks, on the simulator as elsewhere. */
struct fold__hier_split {
  fold_comm *c;
  fold_request *ag;    /* the exchange, stepped here (on no task list) */
  split_rec mine, *recs;
  fold_comm *host, *net; /* shells until the exchange is over */
  int done;
  fold__hier_kids kids;
};

int fold__hier_split_start(fold_comm *c, fold__hier_split **out) {
  *out = NULL;
  struct fold__family *f = family_of(c);
  fold__hier_split *s = f ? calloc(1, sizeof *s) : NULL;
  if (s) s->recs = malloc((size_t)c->size * sizeof *s->recs);
  if (s && s->recs) {
    s->host = kid_shell(c, "hier");
    s->net = kid_shell(c, "hier");
  }
  if (s == NULL || s->recs == NULL || s->host == NULL || s->net == NULL) {
    fold__hier_split_free(s);
    return fold__error(c, FOLD_ENOMEM, "hier: rank %d: out of memory for %d ranks", c->rank, c->size);
  }
  s->c = c;
  s->mine = (split_rec){0, 0, f->next_cid, 0, f->host};
  /* never hier's own allgather (forced, or from a FOLD_RULES line): that
   * call would start this exchange again. bruck serves any rank count in
   * ceil(log2 n) rounds, and the exchange runs once per communicator. */
  static const fold_coll_opts not_hier = {.size = sizeof(fold_coll_opts), .algo = "bruck"};
  fold__coll_args a = {FOLD__COLL_ALLGATHER, &s->mine, s->recs, sizeof s->mine, FOLD_UINT8, FOLD_SUM, -1,
                       FOLD__SIG_OP_HIER, &not_hier};
  int rc = fold__coll_start(c, "hier: the host split", &a, &s->ag);
  if (rc != FOLD_OK) {
    fold__hier_split_free(s);
    return rc;
  }
  /* off the engine's list: the caller's steps step it, so that the
   * collective goes on in the same pass as the exchange's last receive */
  fold__task_cancel(c, s->ag->task);
  *out = s;
  return FOLD_OK;
}

typedef struct hrank { uint64_t host; int rank; } hrank;

static int hrank_cmp(const void *a, const void *b) {
  const hrank *x = a, *y = b;
  if (x->host != y->host) return x->host < y->host ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

/* The exchange is over: both children filled (net freed on non-leaders). */
static int hier_finish(fold__hier_split *s) {
  fold_comm *c = s->c;
  int n = c->size, rc = s->ag->status;
  if (rc == FOLD_OK && fold__comm_failed(c)) rc = fold__comm_failed(c);
  if (rc != FOLD_OK) return rc;
  uint32_t cid = 0;
  for (int r = 0; r < n; r++)
    if (s->recs[r].next_cid > cid) cid = s->recs[r].next_cid;
  if (cid >= UINT32_MAX - 1) return fold__error(c, FOLD_EINTERNAL, "hier: rank %d: communicator ids exhausted", c->rank);
  c->fam->next_cid = cid + 2; /* the host children take cid, the leaders' cid + 1 */
  /* host groups: ranks sorted by (host identity, rank); a group's first
   * rank is its leader, and hosts are numbered in their leaders' order */
  size_t nn = n > 0 ? (size_t)n : 1;
  member *mem = calloc(nn, sizeof *mem), *lead = calloc(nn, sizeof *lead);
  hrank *by = malloc(nn * sizeof *by);
  s->kids.host_of = malloc(nn * sizeof *s->kids.host_of);
  if (mem == NULL || lead == NULL || by == NULL || s->kids.host_of == NULL) {
    free(mem);
    free(lead);
    free(by);
    return fold__error(c, FOLD_ENOMEM, "hier: rank %d: out of memory", c->rank);
  }
  for (int r = 0; r < n; r++) by[r] = (hrank){s->recs[r].host, r};
  qsort(by, (size_t)n, sizeof *by, hrank_cmp);
  int nl = 0, lme = -1, nm = 0, me = -1;
  for (int r = 0; r < n; r++) s->kids.host_of[r] = -1;
  for (int i = 0; i < n; i++) /* leaders: -2 marks them, in rank order below */
    if (i == 0 || by[i].host != by[i - 1].host) s->kids.host_of[by[i].rank] = -2;
  for (int r = 0; r < n; r++)
    if (s->kids.host_of[r] == -2) {
      if (r == c->rank) lme = nl;
      s->kids.host_of[r] = nl;
      lead[nl++] = (member){0, r};
    }
  for (int i = 1; i < n; i++) /* the others take their group's leader's index */
    if (by[i].host == by[i - 1].host) s->kids.host_of[by[i].rank] = s->kids.host_of[by[i - 1].rank];
  free(by);
  for (int r = 0; r < n; r++)
    if (s->recs[r].host == s->mine.host) {
      if (r == c->rank) me = nm;
      mem[nm++] = (member){0, r};
    }
  int nh = nl;
  s->kids.nhosts = nh;
  rc = kid_fill(c, s->host, cid, mem, nm, me, s->recs);
  if (rc == FOLD_OK && lme >= 0) rc = kid_fill(c, s->net, cid + 1, lead, nl, lme, s->recs);
  free(mem);
  free(lead);
  if (rc != FOLD_OK) return fold__error(c, rc, "hier: rank %d: out of memory creating its children", c->rank);
  s->kids.host = s->host;
  s->kids.net = lme >= 0 ? s->net : NULL;
  if (lme < 0) kid_free(s->net);
  s->host = s->net = NULL; /* members of the family now */
  return FOLD_OK;
}

int fold__hier_split_step(fold__hier_split *s, fold__hier_kids **kids) {
  *kids = NULL;
  if (!s->done) {
    if (!fold__req_done(s->ag)) {
      fold__task *at = s->ag->task;
      int rc = at->step(at);
      if (rc == 0 && !fold__comm_failed(s->c)) return 0;
      int st = fold__comm_failed(s->c);
      fold__req_complete(s->ag, st ? st : rc > 0 ? FOLD_OK : rc);
    }
    s->done = 1;
    int rc = hier_finish(s);
    fold__req_unref(s->ag);
    s->ag = NULL;
    if (rc != FOLD_OK) return rc;
  }
  if (s->kids.host == NULL) return fold__comm_failed(s->c) ? fold__comm_failed(s->c) : FOLD_EINTERNAL;
  *kids = &s->kids;
  return 1;
}

void fold__hier_split_free(fold__hier_split *s) {
  if (s == NULL) return;
  if (s->ag) {
    if (!fold__req_done(s->ag)) fold__req_complete(s->ag, FOLD_EABORTED);
    fold__req_unref(s->ag);
  }
  if (s->host) kid_free(s->host);
  if (s->net) kid_free(s->net);
  free(s->recs);
  free(s->kids.host_of);
  free(s);
}

/* ---- destruction ------------------------------------------------------------------- */

static void family_free(struct fold__family *f) {
  while (f->done) { /* first: an unfinished one still refers to its parent */
    fold_request *r = f->done;
    f->done = r->next;
    fold__req_unref(r);
  }
  while (f->nkids > 0) kid_free(f->kids[--f->nkids]);
  fold__unexp *u = f->early_head;
  while (u) {
    fold__unexp *next = u->next;
    fold__unexp_drop(u);
    u = next;
  }
  free(f->kids);
  free(f);
}

void fold__fam_free(fold_comm *root) {
  if (root->fam == NULL || root->to_root != NULL) return;
  family_free(root->fam);
  root->fam = NULL;
}

static int fam_destroy(fold_comm *c);

int fold__fam_destroy(fold_comm *c) {
  /* the family's helper (FOLD_PROGRESS_THREAD) steps every member: hold its
   * lock while the members change; it is stopped before the root goes */
  fold_comm *root = c->fam->root;
  fold__enter(root);
  if (fold__sim_is(c) && ((struct fold_sim *)c->clock_ctx)->running) {
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
  if (fold__sim_is(c) && ((struct fold_sim *)c->clock_ctx)->running)
    return fold__error(c, FOLD_EINVAL, "fold_comm_destroy: rank %d: called while the simulator is running", c->rank);
  pending_forget(f, c);
  if (c != root) {
    for (int i = 0; i < f->nkids; i++)
      if (f->kids[i] == c) {
        f->kids[i] = f->kids[--f->nkids];
        break;
      }
    kid_free(c);
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
  if (root->sim_drive) return fold__sim_comm_destroy(root);
  fold__comm_free(root);
  return FOLD_OK;
}
