/* comm_hier_split.c — the one exchange that makes the hierarchical collectives' children (coll/hier.c): the host child, the leaders' child and the lane child. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "comm/comm.h"
#include "core/internal.h"
#include "engine/family.h"
#include "transport/sim/sim.h"

/* One exchange makes them all: the host child (split_host), the leaders'
 * child (the lowest rank of each host, in rank order; a host's index is
 * its leader's rank there) and, when every host holds the same number of
 * ranks P > 1 on several hosts, the lane child: the ranks of the same
 * local rank l on every host, in host order (P of them, disjoint, one
 * cid). It is the split's allgather with a signature
 * of its own, started inside a collective call (so at the same point of
 * every rank's sequence) and stepped by that collective's own steps: it
 * never blocks, on the simulator as elsewhere. On a simulated world (not
 * a child of one) the simulator knows every rank's host, so the exchange
 * is an allreduce of the next free cid alone and the members come from
 * the simulator's shared layout: O(log n) messages and no table of the
 * world's size per rank (n records per rank were 24 n^2 bytes in all). */
struct fold__hier_split {
  fold_comm *c;
  fold_request *ag;    /* the exchange, stepped here (on no task list) */
  fold__split_rec mine, *recs;
  fold_comm *host, *net, *lane; /* shells until the exchange is over */
  int done;
  fold__hier_kids kids;
  int *own_host_of;    /* kids.host_of when made here (not the simulator's) */
  /* A simulated world knows every rank's host (fold_sim_set_hosts): the
   * exchange is then only an allreduce of the next free cid (the largest),
   * and the children come from the simulator's one shared layout: no
   * table of the world's size per rank. */
  const fold__sim_layout *lay;
  uint32_t cid_mine, cid_max;
};

int fold__hier_split_start(fold_comm *c, fold__hier_split **out) {
  *out = NULL;
  struct fold__family *f = fold__family_of(c);
  fold__hier_split *s = f ? calloc(1, sizeof *s) : NULL;
  if (s && !c->kid) s->lay = fold__sim_layout_get(c);
  if (s && !s->lay) s->recs = malloc((size_t)c->size * sizeof *s->recs);
  if (s && (s->recs || s->lay)) {
    s->host = fold__kid_shell(c, "hier");
    s->net = fold__kid_shell(c, "hier");
    s->lane = fold__kid_shell(c, "hier");
  }
  if (s == NULL || (s->recs == NULL && s->lay == NULL) || s->host == NULL || s->net == NULL || s->lane == NULL) {
    fold__hier_split_free(s);
    return fold__error(c, FOLD_ENOMEM, "hier: rank %d: out of memory for %d ranks", c->rank, c->size);
  }
  s->c = c;
  s->mine = (fold__split_rec){0, 0, f->next_cid, 0, f->host};
  /* never hier's own allgather (forced, or from a FOLD_RULES line): that
   * call would start this exchange again. bruck serves any rank count in
   * ceil(log2 n) rounds, and the exchange runs once per communicator. */
  static const fold_coll_opts not_hier = {.size = sizeof(fold_coll_opts), .algo = "bruck"};
  fold__coll_args a = {FOLD__COLL_ALLGATHER, &s->mine, s->recs, sizeof s->mine, FOLD_UINT8, FOLD_SUM, -1,
                       FOLD__SIG_OP_HIER, &not_hier};
  /* the simulator's: recursive doubling (any rank count, log2 n rounds) */
  static const fold_coll_opts rd = {.size = sizeof(fold_coll_opts), .algo = "recursive_doubling"};
  s->cid_mine = f->next_cid;
  if (s->lay)
    a = (fold__coll_args){FOLD__COLL_ALLREDUCE, &s->cid_mine, &s->cid_max, 1, FOLD_UINT32, FOLD_MAX, -1,
                          FOLD__SIG_OP_HIER, &rd};
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

/* The lane child's members (this rank's local rank l on every host, in
 * host order) into mem; its size, or 0 when hosts differ in size (or
 * there is one host, or a rank per host): no lane child then. */
static int lane_members(const fold__hier_kids *kids, int n, int me_rank, fold__member *mem, int *me) {
  int nh = kids->nhosts, ppn = nh > 0 ? n / nh : 0;
  if (nh < 2 || ppn < 2 || ppn * nh != n) return 0;
  int *cnt = calloc((size_t)nh, sizeof *cnt);
  if (cnt == NULL) return -1;
  int l = -1, ok = 1;
  for (int r = 0; r <= me_rank; r++) l = cnt[kids->host_of[r]]++; /* this rank's local rank */
  for (int h = 0; h < nh; h++) cnt[h] = 0;
  for (int r = 0; r < n; r++) {
    int h = kids->host_of[r];
    if (cnt[h] == l) {
      if (r == me_rank) *me = h;
      mem[h] = (fold__member){0, r};
    }
    cnt[h]++;
  }
  for (int h = 0; h < nh; h++) ok &= cnt[h] == ppn;
  free(cnt);
  return ok ? nh : 0;
}

/* The end of both finishers: an error names this rank, else the shells
 * this rank has no use for (net on non-leaders, lane where there is none)
 * are freed. */
static int children_made(fold__hier_split *s, int rc) {
  if (rc != FOLD_OK) return fold__error(s->c, rc, "hier: rank %d: out of memory creating its children", s->c->rank);
  if (s->net) fold__kid_free(s->net);
  if (s->lane) fold__kid_free(s->lane);
  s->net = s->lane = NULL;
  return FOLD_OK;
}

/* The simulator's children, from its layout L (the same choices as
 * hier_finish below makes from the records). */
static int sim_finish(fold__hier_split *s, uint32_t cid) {
  fold_comm *c = s->c;
  const fold__sim_layout *L = s->lay;
  int h = L->host_of[c->rank], l = L->local[c->rank], nh = L->nhosts;
  int m = L->start[h + 1] - L->start[h];
  fold__member *mem = malloc((size_t)(m > nh ? m : nh) * sizeof *mem);
  if (mem == NULL) return fold__error(c, FOLD_ENOMEM, "hier: rank %d: out of memory", c->rank);
  s->kids.host_of = L->host_of;
  s->kids.local = L->local;
  s->kids.maxh = L->maxh;
  s->kids.even = L->even;
  s->kids.nhosts = nh;
  for (int i = 0; i < m; i++) mem[i] = (fold__member){0, L->members[L->start[h] + i]};
  fold__kid_hosts on_host = {NULL, 1, m, l, m}, apart = {NULL, nh, 1, 0, 1};
  int rc = fold__kid_fill(c, s->host, cid, mem, m, l, &on_host);
  if (rc == FOLD_OK) {
    s->kids.host = s->host;
    s->host = NULL;
  }
  if (rc == FOLD_OK && l == 0) { /* a leader: every host's first rank */
    for (int j = 0; j < nh; j++) mem[j] = (fold__member){0, L->members[L->start[j]]};
    if ((rc = fold__kid_fill(c, s->net, cid + 1, mem, nh, h, &apart)) == FOLD_OK) {
      s->kids.net = s->net;
      s->net = NULL;
    }
  }
  if (rc == FOLD_OK && nh > 1 && L->ppn > 1) { /* the lane: local rank l of every host */
    for (int j = 0; j < nh; j++) mem[j] = (fold__member){0, L->members[L->start[j] + l]};
    if ((rc = fold__kid_fill(c, s->lane, cid + 2, mem, nh, h, &apart)) == FOLD_OK) {
      s->kids.lane = s->lane;
      s->kids.ppn = L->ppn;
      s->lane = NULL;
    }
  }
  free(mem);
  return children_made(s, rc);
}

/* The exchange is over: the children filled (net freed on non-leaders,
 * lane where there is none). A filled child is the family's (freed with it
 * if a later one fails). */
static int hier_finish(fold__hier_split *s) {
  fold_comm *c = s->c;
  int n = c->size, rc = s->ag->status;
  if (rc == FOLD_OK && fold__comm_failed(c)) rc = fold__comm_failed(c);
  if (rc != FOLD_OK) return rc;
  uint32_t cid = s->lay ? s->cid_max : 0;
  for (int r = 0; s->recs && r < n; r++)
    if (s->recs[r].next_cid > cid) cid = s->recs[r].next_cid;
  if (cid >= UINT32_MAX - 3) return fold__error(c, FOLD_EINTERNAL, "hier: rank %d: communicator ids exhausted", c->rank);
  c->fam->next_cid = cid + 3; /* the host children take cid, the leaders' cid + 1, the lanes cid + 2 */
  if (s->lay) return sim_finish(s, cid);
  /* host groups: ranks sorted by (host identity, rank); a group's first
   * rank is its leader, and hosts are numbered in their leaders' order */
  size_t nn = n > 0 ? (size_t)n : 1;
  fold__member *mem = calloc(nn, sizeof *mem), *lead = calloc(nn, sizeof *lead);
  hrank *by = malloc(nn * sizeof *by);
  int *host_of = s->own_host_of = malloc(nn * sizeof *host_of);
  s->kids.host_of = host_of;
  if (mem == NULL || lead == NULL || by == NULL || host_of == NULL) {
    free(mem);
    free(lead);
    free(by);
    return fold__error(c, FOLD_ENOMEM, "hier: rank %d: out of memory", c->rank);
  }
  for (int r = 0; r < n; r++) by[r] = (hrank){s->recs[r].host, r};
  qsort(by, (size_t)n, sizeof *by, hrank_cmp);
  int nl = 0, lme = -1, nm = 0, me = -1;
  for (int r = 0; r < n; r++) host_of[r] = -1;
  for (int i = 0; i < n; i++) /* leaders: -2 marks them, in rank order below */
    if (i == 0 || by[i].host != by[i - 1].host) host_of[by[i].rank] = -2;
  for (int r = 0; r < n; r++)
    if (host_of[r] == -2) {
      if (r == c->rank) lme = nl;
      host_of[r] = nl;
      lead[nl++] = (fold__member){0, r};
    }
  for (int i = 1; i < n; i++) /* the others take their group's leader's index */
    if (by[i].host == by[i - 1].host) host_of[by[i].rank] = host_of[by[i - 1].rank];
  free(by);
  for (int r = 0; r < n; r++)
    if (s->recs[r].host == s->mine.host) {
      if (r == c->rank) me = nm;
      mem[nm++] = (fold__member){0, r};
    }
  int nh = nl;
  s->kids.nhosts = nh;
  rc = fold__kid_fill_recs(c, s->host, cid, mem, nm, me, s->recs);
  if (rc == FOLD_OK) {
    s->kids.host = s->host;
    s->host = NULL;
  }
  if (rc == FOLD_OK && lme >= 0 && (rc = fold__kid_fill_recs(c, s->net, cid + 1, lead, nl, lme, s->recs)) == FOLD_OK) {
    s->kids.net = s->net;
    s->net = NULL;
  }
  int lsize = rc == FOLD_OK ? lane_members(&s->kids, n, c->rank, lead, &lme) : 0;
  if (lsize < 0) rc = FOLD_ENOMEM;
  if (lsize > 0 && (rc = fold__kid_fill_recs(c, s->lane, cid + 2, lead, lsize, lme, s->recs)) == FOLD_OK) {
    s->kids.lane = s->lane;
    s->kids.ppn = n / nh;
    s->lane = NULL;
  }
  free(mem);
  free(lead);
  return children_made(s, rc);
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
  if (s->host) fold__kid_free(s->host);
  if (s->net) fold__kid_free(s->net);
  if (s->lane) fold__kid_free(s->lane);
  free(s->recs);
  free(s->own_host_of);
  free(s);
}

