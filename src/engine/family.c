/* family.c — routing within a family of communicators: messages by communicator id, progress, lost peers, and shutdown (docs/comm.md). */
#include <stdio.h>
#include <stdlib.h>

#include "engine/engine.h"
#include "engine/family.h"
#include "transport/transport.h"

fold_comm *fold__fam_kid(const struct fold__family *f, uint32_t cid) {
  for (int i = 0; i < f->nkids; i++)
    if (f->kids[i]->cid == cid) return f->kids[i];
  return NULL;
}

void fold__fam_reparent(struct fold__family *f, const fold_comm *c) {
  for (int i = 0; i < f->nkids; i++)
    if (f->kids[i]->svc->parent == c) f->kids[i]->svc->parent = c->svc->parent;
}

/* Release an unexpected record nobody will take. */
void fold__unexp_drop(fold__unexp *u) {
  if (u->tp) u->tp->ops->pull(u->tp, u, NULL);
  else fold__unexp_free(u);
}

/* ---- routing (called by the transports through the engine) ---------------------- */

fold_request *fold__fam_match(fold_comm *root, uint32_t cid, int src, int ctx, int tag) {
  if (root->fam == NULL) return NULL;
  fold_comm *k = fold__fam_kid(root->fam, cid);
  int s = k && src >= 0 && src < root->size ? fold__kid_rank(k, src) : -1;
  return s < 0 ? NULL : fold__match_posted(k, s, ctx, tag);
}

int fold__fam_deliver(fold_comm *root, fold__unexp *u) {
  struct fold__family *f = root->fam;
  if (u->cid == 0) {
    if (!f->root_gone) return 0;
    fold__unexp_drop(u); /* the world was destroyed here: nobody receives on it */
    return 1;
  }
  fold_comm *k = fold__fam_kid(f, u->cid);
  if (k) {
    int s = (u->src >= 0 && u->src < root->size) ? fold__kid_rank(k, u->src) : -1;
    if (s < 0) {
      fold__unexp_drop(u);
      return 1;
    }
    u->src = s;
    fold__deliver_unexp(k, u);
    return 1;
  }
  if (u->cid >= f->next_cid) {
    /* a peer finished the split first: keep it for the child */
    fold__list_push_back(&f->early, &u->link);
    return 1;
  }
  FOLD__TRACE(root, "dropping a message for destroyed communicator %u from rank %d", (unsigned)u->cid, u->src);
  fold__unexp_drop(u);
  return 1;
}

int fold__fam_peer_lost(fold_comm *root, int p, int pending, const char *why) {
  struct fold__family *f = root->fam;
  for (int i = 0; i < f->nkids; i++) {
    fold_comm *k = f->kids[i];
    int s = fold__kid_rank(k, p);
    if (s >= 0) fold__peer_lost(k, s, pending, why);
  }
  if (f->root_gone && fold__lost_own(root) == 0) root->lost[p] = 1; /* children created later start with it lost */
  return f->root_gone;
}

int fold__fam_poll(fold_comm *c) {
  struct fold__family *f = c->fam;
  fold_comm *root = f->root;
  if (f->down) return 0;
  /* every member counts as in a poll: failures are deferred to the top */
  root->in_poll++;
  for (int i = 0; i < f->nkids; i++) f->kids[i]->in_poll++;
  int idle = 1;
  for (int i = 0; i < root->ntps; i++) idle &= root->tps[i]->ops->poll(root->tps[i]) == FOLD__POLL_IDLE;
  root->in_poll--;
  for (int i = 0; i < f->nkids; i++) f->kids[i]->in_poll--;
  return idle;
}

int fold__fam_progress(fold_comm *c) {
  struct fold__family *f = c->fam;
  fold_comm *root = f->root;
  int st = fold__comm_failed(c);
  if (st) return st;
  fold__idle_pause(c, fold__fam_poll(c));
  /* Each member batches its own steps' sends; a child's are not held by the
   * transports (they look at the root's bracket), which keeps a child's
   * failure reports from waiting behind a bracket they cannot close. */
  if (!f->root_gone) fold__progress_one(root, 0);
  for (int i = 0; i < f->nkids; i++) fold__progress_one(f->kids[i], 0);
  return fold__comm_failed(c);
}

int fold__fam_busy(const fold_comm *root) {
  const struct fold__family *f = root->fam;
  for (int i = 0; f && i < f->nkids; i++)
    if (!fold__comm_failed(f->kids[i]) && fold__comm_waits(f->kids[i])) return 1;
  return 0;
}

fold_comm *fold__fam_shutdown_owner(fold_comm *c) {
  struct fold__family *f = c->fam;
  if (!f->root_gone && f->root != c && !fold__comm_failed(f->root)) return NULL;
  for (int i = 0; i < f->nkids; i++)
    if (f->kids[i] != c && !fold__comm_failed(f->kids[i])) return NULL;
  f->down = 1;
  return f->root;
}

const char *fold__world_note(const fold_comm *c, int p, char *buf, size_t cap) {
  if (!c->kid || p < 0 || p >= c->size) snprintf(buf, cap, "%s", "");
  else snprintf(buf, cap, " (rank %d of the world)", fold__root_rank(c, p));
  return buf;
}

fold_comm *fold__fam_find(fold_comm *root, int (*pred)(const fold_comm *c)) {
  struct fold__family *f = root->fam;
  if (f == NULL) return pred(root) ? root : NULL;
  if (!f->root_gone && pred(root)) return root;
  for (int i = 0; i < f->nkids; i++)
    if (pred(f->kids[i])) return f->kids[i];
  return NULL;
}

