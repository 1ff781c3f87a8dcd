/* dist_server_key.c — a distributed store server's keys: their rounds, pieces and the replies to pulls. */
#include <stdlib.h>
#include <string.h>

#include "kv/dist_srv.h"

/* ---- replies -------------------------------------------------------------------- */

int fold__kvs_send_owned(fold_kv *kv, int to, int tag, void *buf, size_t bytes) {
  struct fold__kv_server *s = kv->s;
  fold_comm *c = kv->c;
  if (s->nsent == s->capsent) {
    size_t cap = s->capsent ? s->capsent * 2 : 64;
    kv_sent *p = realloc(s->sent, cap * sizeof *p);
    if (p == NULL) {
      free(buf);
      return fold__comm_fail(c, FOLD_ENOMEM, "fold_kv_serve: rank %d: out of memory", c->rank);
    }
    s->sent = p;
    s->capsent = cap;
  }
  fold_request *r = NULL;
  int rc = fold__isend_bytes(c, buf, bytes, to, fold__kv_ctx(), tag, &r);
  if (rc != FOLD_OK) {
    free(buf);
    return rc;
  }
  s->sent[s->nsent++] = (kv_sent){r, buf};
  return FOLD_OK;
}

void fold__kvs_reap_sent(struct fold__kv_server *s) {
  size_t j = 0;
  for (size_t i = 0; i < s->nsent; i++) {
    if (fold__req_done(s->sent[i].r)) {
      fold__req_unref(s->sent[i].r);
      free(s->sent[i].buf);
    } else {
      s->sent[j++] = s->sent[i];
    }
  }
  s->nsent = j;
}

/* A pull's answer: a snapshot of the value (it may change while the reply
 * is still being read by the transport). */
static int answer(fold_kv *kv, skey *k, const kv_pull *p) {
  size_t bytes = k->n * k->esize;
  void *snap = malloc(bytes ? bytes : 1);
  if (snap == NULL) return fold__comm_fail(kv->c, FOLD_ENOMEM, "fold_kv_serve: rank %d: out of memory", kv->c->rank);
  memcpy(snap, k->val, bytes);
  return fold__kvs_send_owned(kv, p->src, p->reply, snap, bytes);
}

/* ---- a key's rounds -------------------------------------------------------------- */

void fold__kvs_msg_free(kv_msg *m) {
  if (m == NULL) return;
  if (m->r) fold__req_unref(m->r);
  if (m->buf != m->small) free(m->buf);
  free(m);
}

static int merge(fold_kv *kv, skey *k, const void *data) {
  if (k->nmerged++ == 0) {
    memcpy(k->merged, data, k->n * k->esize);
    return FOLD_OK;
  }
  const void *srcs[2] = {k->merged, data};
  return fold__kv_sum(kv->pool, k->merged, srcs, 2, k->n, k->dtype, kv->bound);
}

/* dist_sync: is the round complete? Every worker pushed it, or left
 * without a push for it (a worker that ran out of batches: apache/mxnet#7888). */
static int round_done(const fold_kv *kv, const skey *k) {
  if (k->nmerged == 0) return 0;
  for (int w = 0; w < kv->nworkers; w++)
    if (!k->contrib[w] && !(kv->left[w] && k->pushes[w] <= k->rounds)) return 0;
  return 1;
}

/* dist_ssp: the slowest worker still in (its applied pushes). */
static uint64_t slowest(const fold_kv *kv, const skey *k, int self) {
  uint64_t m = UINT64_MAX;
  for (int w = 0; w < kv->nworkers; w++)
    if ((!kv->left[w] || w == self) && k->applied[w] < m) m = k->applied[w];
  return m;
}

static int pull_ready(const fold_kv *kv, const skey *k, const kv_pull *p) {
  if (k->val == NULL || k->applied[p->src] < p->need) return 0;
  if (kv->type == FOLD__KV_SSP && p->need > slowest(kv, k, p->src) + (uint64_t)kv->staleness) return 0;
  return 1;
}

/* Apply what can be applied, answer the pulls that can be answered. */
int fold__kvs_key_go(fold_kv *kv, skey *k) {
  int rc = FOLD_OK;
  if (k->val == NULL) return FOLD_OK; /* worker 0's INIT is still on its way */
  for (int again = 1; again && rc == FOLD_OK;) {
    again = 0;
    FOLD__LIST_FOR_EACH_SAFE(kv_msg, m, &k->queued, link) {
      if (rc != FOLD_OK) break;
      const char *data = m->buf + sizeof(fold__kv_hdr);
      if (kv->type == FOLD__KV_SYNC) {
        if (m->round != k->rounds || k->contrib[m->src]) continue; /* a later round's */
        rc = merge(kv, k, data);
        k->contrib[m->src] = 1;
      } else {
        fold__kv_apply(kv, k->key, k->off, data, k->val, k->n, k->dtype);
        k->applied[m->src]++;
      }
      fold__list_unlink(&m->link);
      fold__kvs_msg_free(m);
    }
    if (kv->type == FOLD__KV_SYNC && rc == FOLD_OK && round_done(kv, k)) {
      fold__kv_apply(kv, k->key, k->off, k->merged, k->val, k->n, k->dtype);
      for (int w = 0; w < kv->nworkers; w++)
        if (k->contrib[w]) k->applied[w]++;
      memset(k->contrib, 0, (size_t)kv->nworkers);
      k->nmerged = 0;
      k->rounds++;
      again = 1; /* the next round's pushes may be here already */
    }
  }
  FOLD__LIST_FOR_EACH_SAFE(kv_pull, p, &k->pulls, link) {
    if (rc != FOLD_OK) break;
    if (!pull_ready(kv, k, p)) continue;
    rc = answer(kv, k, p);
    fold__list_unlink(&p->link);
    free(p);
  }
  return rc;
}

void fold__kvs_piece_free(skey *k) {
  for (fold__list *n; (n = fold__list_pop_front(&k->queued)) != NULL;)
    fold__kvs_msg_free(FOLD__LIST_ENTRY(n, kv_msg, link));
  for (fold__list *n; (n = fold__list_pop_front(&k->pulls)) != NULL;)
    free(FOLD__LIST_ENTRY(n, kv_pull, link));
  free(k->val);
  free(k->merged);
  free(k->contrib);
  free(k->pushes);
  free(k->applied);
  free(k->part);
  free(k);
}

/* The table's value: the key's first piece, which owns the others. */
void fold__kvs_key_free(void *p) {
  skey *head = p;
  for (size_t i = 1; i < head->npart; i++) fold__kvs_piece_free(head->part[i]);
  fold__kvs_piece_free(head);
}

/* The piece of key starting at off (NULL: none). Pieces have the same
 * length but the last of a shard, so the index is a guess that is checked. */
skey *fold__kvs_piece_get(const struct fold__kv_server *s, int64_t key, uint64_t off) {
  skey *head = fold__kv_map_get(&s->keys, key);
  if (head == NULL) return NULL;
  skey *k0 = head->part[0];
  size_t i = off >= k0->off ? (size_t)((off - k0->off) / k0->n) : 0;
  if (i < head->npart && head->part[i]->off == off) return head->part[i];
  for (i = 0; i < head->npart; i++)
    if (head->part[i]->off == off) return head->part[i];
  return NULL;
}

/* Call fn on every piece of every key (until it fails). */
int fold__kvs_each_piece(fold_kv *kv, int (*fn)(fold_kv *, skey *)) {
  struct fold__kv_server *s = kv->s;
  int rc = FOLD_OK;
  for (size_t i = 0; i < s->keys.cap && rc == FOLD_OK; i++) {
    skey *head = s->keys.vals[i];
    for (size_t j = 0; head && j < head->npart && rc == FOLD_OK; j++) rc = fn(kv, head->part[j]);
  }
  return rc;
}
