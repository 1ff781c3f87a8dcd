/* dist_server.c — a server of a distributed store: takes the workers' messages in arrival order, merges rounds, applies updates, answers pulls. */
#include <stdlib.h>
#include <string.h>

#include "kv/dist_srv.h"

/* ---- the messages ------------------------------------------------------------------ */

static int protocol_error(fold_kv *kv, int src, const char *what) {
  return fold__comm_fail(kv->c, FOLD_EINTERNAL, "fold_kv_serve: rank %d: a malformed message from worker %d: %s",
                         kv->c->rank, src, what);
}

/* Remember a string key's name (sent with its INIT) for messages. */
static void keep_name(fold_kv *kv, int64_t key, const char *name, size_t len) {
  if (fold__kv_map_get(&kv->names, key) != NULL || len == 0 || len > sizeof ((fold__kv_name *)0)->name) return;
  fold__kv_name *nm = malloc(sizeof *nm);
  if (nm == NULL) return; /* only messages would miss it */
  nm->key = key;
  memcpy(nm->name, name, len);
  if (fold__kv_map_put(&kv->names, key, nm) != FOLD_OK) free(nm);
}

static skey *piece_new(fold_kv *kv, const fold__kv_hdr *h, size_t esize) {
  skey *k = calloc(1, sizeof *k);
  if (k) {
    fold__list_init(&k->queued);
    fold__list_init(&k->pulls);
  }
  if (k == NULL || (k->merged = malloc(h->n * esize)) == NULL || (k->contrib = calloc((size_t)kv->nworkers, 1)) == NULL ||
      (k->pushes = calloc((size_t)kv->nworkers, sizeof *k->pushes)) == NULL ||
      (k->applied = calloc((size_t)kv->nworkers, sizeof *k->applied)) == NULL) {
    if (k) fold__kvs_piece_free(k);
    return NULL;
  }
  k->key = h->key;
  k->total = h->total;
  k->off = h->off;
  k->n = h->n;
  k->dtype = (fold_dtype)h->dtype;
  k->esize = esize;
  return k;
}

/* Add piece k to head's list (head: the key's first piece, or k itself). */
static int piece_add(skey *head, skey *k) {
  if (head->npart == head->cappart) {
    size_t cap = head->cappart ? head->cappart * 2 : 4;
    skey **p = realloc(head->part, cap * sizeof *p);
    if (p == NULL) return FOLD_ENOMEM;
    head->part = p;
    head->cappart = cap;
  }
  head->part[head->npart++] = k;
  return FOLD_OK;
}

/* Worker m->src's init number h->idx is h's key: the same as every other
 * worker's init of that number, or the store fails on every rank. */
static int order_check(fold_kv *kv, const kv_msg *m, const fold__kv_hdr *h) {
  fold_comm *c = kv->c;
  struct fold__kv_server *s = kv->s;
  const kv_order *o = fold__kv_map_get(&s->order, (int64_t)h->idx);
  if (o == NULL) {
    kv_order *n = malloc(sizeof *n);
    if (n == NULL || fold__kv_map_put(&s->order, (int64_t)h->idx, n) != FOLD_OK) {
      free(n);
      return fold__comm_fail(c, FOLD_ENOMEM, "fold_kv_serve: rank %d: out of memory", c->rank);
    }
    *n = (kv_order){h->key, h->total, (fold_dtype)h->dtype, m->src};
    return FOLD_OK;
  }
  if (o->key == h->key && o->count == h->total && o->dtype == (fold_dtype)h->dtype) return FOLD_OK;
  char msg[FOLD__ERRLEN], ka[300], kb[300];
  snprintf(msg, sizeof msg,
           "fold_kv: server rank %d: the workers did not initialise the same keys in the same order: init #%u of "
           "worker %d is %s (%llu x %s), of worker %d %s (%llu x %s)",
           c->rank, h->idx + 1, m->src, fold__kv_keyname(kv, h->key, ka, sizeof ka), (unsigned long long)h->total,
           fold_dtype_name((fold_dtype)h->dtype), o->worker, fold__kv_keyname(kv, o->key, kb, sizeof kb),
           (unsigned long long)o->count, fold_dtype_name(o->dtype));
  return fold__comm_fail_and_tell(c, FOLD_EMISMATCH, msg);
}

static int on_init(fold_kv *kv, kv_msg *m, const fold__kv_hdr *h) {
  fold_comm *c = kv->c;
  struct fold__kv_server *s = kv->s;
  skey *head = fold__kv_map_get(&s->keys, h->key);
  skey *k = fold__kvs_piece_get(s, h->key, h->off);
  size_t esize = fold_dtype_size((fold_dtype)h->dtype);
  size_t vbytes = (h->flags & FOLD__KV_INIT_VALUE) ? h->n * esize : 0;
  int alone = h->n == 0 && (h->flags & FOLD__KV_INIT_ORDER) && !(h->flags & FOLD__KV_INIT_VALUE); /* the record only */
  if (esize == 0 || (h->n == 0 && !alone) || m->bytes < sizeof *h + vbytes) return protocol_error(kv, m->src, "INIT");
  const char *name = m->buf + sizeof *h + vbytes;
  size_t nlen = m->bytes - sizeof *h - vbytes;
  if ((h->flags & FOLD__KV_INIT_NAME) ? (nlen == 0 || name[nlen - 1] != '\0') : nlen != 0)
    return protocol_error(kv, m->src, "INIT's name");
  if (nlen) keep_name(kv, h->key, name, nlen);
  if (h->flags & FOLD__KV_INIT_ORDER) {
    int rc = order_check(kv, m, h);
    if (rc != FOLD_OK || alone) return rc;
  }
  const skey *ref = k ? k : head;
  if (ref && (ref->total != h->total || (k && k->n != h->n) || ref->dtype != (fold_dtype)h->dtype)) {
    char msg[FOLD__ERRLEN], kb[300];
    snprintf(msg, sizeof msg,
             "fold_kv: server rank %d: the workers initialised %s differently (or in a different order): worker %d "
             "gave %llu elements of %s, an earlier worker %llu elements of %s",
             c->rank, fold__kv_keyname(kv, h->key, kb, sizeof kb), m->src, (unsigned long long)h->total,
             fold_dtype_name((fold_dtype)h->dtype), (unsigned long long)ref->total, fold_dtype_name(ref->dtype));
    return fold__comm_fail_and_tell(c, FOLD_EMISMATCH, msg);
  }
  if (k == NULL) {
    if ((k = piece_new(kv, h, esize)) == NULL || piece_add(head ? head : k, k) != FOLD_OK ||
        (head == NULL && fold__kv_map_put(&s->keys, h->key, k) != FOLD_OK)) {
      if (k) fold__kvs_piece_free(k); /* not in head's list: piece_add failed, or head is k */
      return fold__comm_fail(c, FOLD_ENOMEM, "fold_kv_serve: rank %d: out of memory", c->rank);
    }
  }
  if ((h->flags & FOLD__KV_INIT_VALUE) && k->val == NULL) { /* worker 0's value */
    if ((k->val = malloc(k->n * esize)) == NULL)
      return fold__comm_fail(c, FOLD_ENOMEM, "fold_kv_serve: rank %d: out of memory", c->rank);
    memcpy(k->val, m->buf + sizeof *h, k->n * esize);
  }
  return fold__kvs_key_go(kv, k);
}

static int on_push(fold_kv *kv, kv_msg *m, const fold__kv_hdr *h, int *kept) {
  skey *k = fold__kvs_piece_get(kv->s, h->key, h->off);
  /* the sender's INIT came first on the same channel */
  if (k == NULL || h->n != k->n || m->bytes != sizeof *h + k->n * k->esize) return protocol_error(kv, m->src, "PUSH");
  m->round = k->pushes[m->src]++;
  fold__list_push_back(&k->queued, &m->link);
  *kept = 1;
  return fold__kvs_key_go(kv, k);
}

static int on_pull(fold_kv *kv, kv_msg *m, const fold__kv_hdr *h) {
  skey *k = fold__kvs_piece_get(kv->s, h->key, h->off);
  if (k == NULL || h->n != k->n || h->reply < FOLD__KV_REPLY_TAG0) return protocol_error(kv, m->src, "PULL");
  kv_pull *p = malloc(sizeof *p);
  if (p == NULL) return fold__comm_fail(kv->c, FOLD_ENOMEM, "fold_kv_serve: rank %d: out of memory", kv->c->rank);
  *p = (kv_pull){{NULL, NULL}, m->src, h->reply, k->pushes[m->src], fold__now(kv->c), 0};
  fold__list_push_back(&k->pulls, &p->link); /* in arrival order */
  return fold__kvs_key_go(kv, k);
}

/* Server 0: every worker still in is at the barrier: answer them all. */
static int barrier_go(fold_kv *kv) {
  struct fold__kv_server *s = kv->s;
  int first = -1;
  for (int w = 0; w < kv->nworkers; w++) {
    if (kv->left[w]) continue;
    if (!s->bar_in[w]) return FOLD_OK;
    if (first < 0) first = w;
  }
  if (first < 0) return FOLD_OK;
  int rc = FOLD_OK;
  for (int w = first; w < kv->nworkers && rc == FOLD_OK; w++) {
    if (kv->left[w] || !s->bar_in[w]) continue;
    fold__kv_hdr *a = calloc(1, sizeof *a);
    if (a == NULL) return fold__comm_fail(kv->c, FOLD_ENOMEM, "fold_kv_serve: out of memory");
    /* the workers' inits must agree: report the first that differs */
    for (int v = first; v < kv->nworkers; v++)
      if (s->bar_in[v] && !kv->left[v] && (s->bar_digest[v] != s->bar_digest[first] || s->bar_ninit[v] != s->bar_ninit[first])) {
        a->flags = 1;
        a->key = v;
        a->n = s->bar_ninit[v];
        a->total = s->bar_ninit[first];
        break;
      }
    rc = fold__kvs_send_owned(kv, w, s->bar_reply[w], a, sizeof *a);
  }
  memset(s->bar_in, 0, (size_t)kv->nworkers);
  return rc;
}

static int on_barrier(fold_kv *kv, kv_msg *m, const fold__kv_hdr *h) {
  struct fold__kv_server *s = kv->s;
  if (kv->c->rank != kv->nworkers || h->reply < FOLD__KV_REPLY_TAG0) return protocol_error(kv, m->src, "BARRIER");
  s->bar_in[m->src] = 1;
  s->bar_reply[m->src] = h->reply;
  s->bar_digest[m->src] = h->total;
  s->bar_ninit[m->src] = h->n;
  return barrier_go(kv);
}

static int on_bye(fold_kv *kv, kv_msg *m) {
  struct fold__kv_server *s = kv->s;
  if (kv->left[m->src]) return FOLD_OK;
  kv->left[m->src] = 1;
  s->nleft++;
  /* rounds and barriers stop waiting for it */
  int rc = fold__kvs_each_piece(kv, fold__kvs_key_go);
  if (rc == FOLD_OK && kv->c->rank == kv->nworkers) rc = barrier_go(kv);
  return rc;
}

static int on_opt(fold_kv *kv, kv_msg *m) {
  const char *spec = m->buf + sizeof(fold__kv_hdr);
  size_t len = m->bytes - sizeof(fold__kv_hdr);
  if (len == 0 || spec[len - 1] != '\0') return protocol_error(kv, m->src, "OPT");
  char why[200] = "";
  fold__kv_optim *o = NULL;
  if (fold__kv_optim_parse(spec, &o, why, sizeof why) != FOLD_OK)
    return protocol_error(kv, m->src, "an optimizer spec that does not parse"); /* the worker checked it */
  fold__kv_optim_free(kv->optim);
  kv->optim = o;
  kv->updater = NULL;
  return FOLD_OK;
}

static int dispatch(fold_kv *kv, kv_msg *m, int *kept) {
  fold__kv_hdr h;
  if (m->bytes < sizeof h) return protocol_error(kv, m->src, "too short");
  memcpy(&h, m->buf, sizeof h);
  switch (m->tag) {
  case FOLD__KV_MSG_INIT: return on_init(kv, m, &h);
  case FOLD__KV_MSG_PUSH: return on_push(kv, m, &h, kept);
  case FOLD__KV_MSG_PULL: return on_pull(kv, m, &h);
  case FOLD__KV_MSG_OPT: return on_opt(kv, m);
  case FOLD__KV_MSG_BARRIER: return on_barrier(kv, m, &h);
  case FOLD__KV_MSG_BYE: return on_bye(kv, m);
  default: return protocol_error(kv, m->src, "unknown type");
  }
}

/* Every message from a worker is received whole (eager ones at once, big
 * ones by the transport meanwhile) and then taken in arrival order by the
 * task, so that a pull after a push sees it. */
static void on_message(fold_comm *c, void *arg, int src, int tag, const void *data, size_t bytes) {
  fold_kv *kv = arg;
  struct fold__kv_server *s = kv->s;
  (void)data;
  if (tag == FOLD__KV_MSG_SDONE && src >= kv->nworkers && src < c->size) {
    kv->left[src] = 1; /* its going next is no loss */
    return;
  }
  if (src < 0 || src >= kv->nworkers || tag < FOLD__KV_MSG_INIT || tag > FOLD__KV_MSG_BYE) {
    FOLD__INFO(c, "fold_kv: rank %d: dropped a %zu-byte message (tag %d) from rank %d", c->rank, bytes, tag, src);
    return;
  }
  if (tag == FOLD__KV_MSG_BYE) s->bye[src] = 1; /* its going is no loss */
  kv_msg *m = calloc(1, sizeof *m);
  char *buf = m && bytes <= sizeof m->small ? m->small : malloc(bytes ? bytes : 1);
  if (m == NULL || buf == NULL || fold__irecv_bytes(c, buf, bytes, src, fold__kv_ctx(), tag, &m->r) != FOLD_OK) {
    if (m == NULL || buf != m->small) free(buf);
    free(m);
    fold__comm_fail(c, FOLD_ENOMEM, "fold_kv: rank %d: out of memory for a %zu-byte message from rank %d", c->rank,
                    bytes, src);
    return;
  }
  m->buf = buf;
  m->bytes = bytes;
  m->src = src;
  m->tag = tag;
  fold__list_push_back(&s->inbox, &m->link);
}

/* A worker lost without its BYE, or a server without its SDONE: tell the
 * workers (they do not watch each other, and may not be connected to a
 * dead server: fold_kv_dead_nodes lists it there too), then fail naming it.
 * A rank that failed on another one first (a worker whose wait timed out
 * on a stopped worker, then exited) is not the one lost: its report named
 * the culprit, and the notice passes that on, so that every worker names
 * the culprit too and counts only it as dead. */
static void peer_died(fold_kv *kv, int w) {
  fold_comm *c = kv->c;
  int st = 0;
  const char *cause = NULL;
  int q = fold__report_culprit(c, w, &st, &cause);
  if (q == c->rank) q = -1;
  kv->dead[q >= 0 ? q : w] = 1;
  size_t clen = q >= 0 && cause ? strlen(cause) + 1 : 0;
  for (int p = 0; p < kv->nworkers; p++) {
    if (p == w || p == q || c->lost[p] || kv->left[p] || kv->s->bye[p]) continue;
    fold__kv_hdr *h = calloc(1, sizeof *h + clen);
    if (h == NULL) break;
    h->key = w;
    if (clen) {
      h->total = (uint64_t)q + 1;
      h->n = (uint64_t)-(int64_t)st;
      memcpy(h + 1, cause, clen);
    }
    fold__kvs_send_owned(kv, p, FOLD__KV_MSG_DEAD, h, sizeof *h + clen);
  }
  /* out now, before the failure that die() ends with */
  fold__tx_batch_end(c);
  fold__tx_batch_begin(c);
  kv->s->dying = w + 1;
}

/* After a loss the server fails at once, its DEAD notices sent. A worker
 * that still sends to it then meets a closed or reset connection, and its
 * transport reads the server's last frames, the notice among them, before
 * it takes the server for lost (tcp: fold__tcp_peer_gone), so the worker
 * blames the rank that died, not this server. */
static int die(fold_kv *kv) {
  fold_comm *c = kv->c;
  int w = kv->s->dying - 1;
  return fold__fail_for_lost(c, w, w < kv->nworkers ? "fold_kv: the store lost its worker" : "fold_kv: the store lost its server");
}

static int serve_step(fold__task *t) {
  struct fold__kv_server *s = (struct fold__kv_server *)t;
  fold_kv *kv = s->kv;
  fold_comm *c = kv->c;
  int rc = FOLD_OK;
  if (!s->serving) return 0;
  if (s->dying) return die(kv); /* no more messages are taken: the store failed */
  for (kv_msg *m; rc == FOLD_OK && (m = FOLD__LIST_FIRST(&s->inbox, kv_msg, link)) != NULL && fold__req_done(m->r);) {
    fold__list_unlink(&m->link);
    if (m->r->status != FOLD_OK) rc = m->r->status;
    int kept = 0;
    if (rc == FOLD_OK) rc = dispatch(kv, m, &kept);
    if (!kept) fold__kvs_msg_free(m);
  }
  if (rc != FOLD_OK) return rc;
  fold__kvs_reap_sent(s);
  for (int w = 0; w < kv->nworkers; w++)
    if (c->lost[w] && !s->bye[w]) {
      peer_died(kv, w);
      return die(kv);
    }
  for (int p = kv->nworkers; p < c->size; p++)
    if (p != c->rank && c->lost[p] && !kv->left[p]) {
      peer_died(kv, p);
      return die(kv);
    }
  return s->nleft == kv->nworkers && fold__list_empty(&s->inbox) && s->nsent == 0;
}

static int serve_describe(fold__task *t, char *buf, size_t cap) {
  struct fold__kv_server *s = (struct fold__kv_server *)t;
  fold_kv *kv = s->kv;
  for (int w = 0; w < kv->nworkers; w++)
    if (!kv->left[w]) {
      snprintf(buf, cap, "worker rank %d (its fold_kv_destroy)", w);
      return w;
    }
  snprintf(buf, cap, "replies being sent");
  return -1;
}

static void serve_release(fold__task *t) { (void)t; }

int fold__kv_server_open(fold_kv *kv) {
  fold_comm *c = kv->c;
  struct fold__kv_server *s = calloc(1, sizeof *s);
  if (s) fold__list_init(&s->inbox);
  size_t nw = (size_t)kv->nworkers;
  kv->s = s;
  if (s == NULL || (kv->left = calloc((size_t)c->size, 1)) == NULL || (kv->dead = calloc((size_t)c->size, 1)) == NULL ||
      (s->bye = calloc(nw, 1)) == NULL || (s->bar_in = calloc(nw, 1)) == NULL ||
      (s->bar_reply = calloc(nw, sizeof *s->bar_reply)) == NULL ||
      (s->bar_digest = calloc(nw, sizeof *s->bar_digest)) == NULL ||
      (s->bar_ninit = calloc(nw, sizeof *s->bar_ninit)) == NULL ||
      (s->task.req = fold__req_new(c, FOLD__REQ_TASK)) == NULL) {
    fold__kv_server_close(kv);
    return fold__kv_err(kv, FOLD_ENOMEM, "fold_kv_create: out of memory");
  }
  s->kv = kv;
  s->task.step = serve_step;
  s->task.describe = serve_describe;
  s->task.release = serve_release;
  s->task.req->task = &s->task;
  if (fold__handler_set(c, fold__kv_ctx(), on_message, kv) != FOLD_OK) {
    fold__kv_server_close(kv);
    return fold__kv_err(kv, FOLD_ENOMEM, "fold_kv_create: out of memory");
  }
  fold__task_start(c, &s->task);
  return FOLD_OK;
}

void fold__kv_server_close(fold_kv *kv) {
  struct fold__kv_server *s = kv->s;
  if (s == NULL) return;
  fold_comm *c = kv->c;
  fold__task_cancel(c, &s->task);
  fold__timer_cancel(c, &s->stall);
  fold__handler_set(c, fold__kv_ctx(), NULL, NULL);
  for (fold__list *n; (n = fold__list_pop_front(&s->inbox)) != NULL;)
    fold__kvs_msg_free(FOLD__LIST_ENTRY(n, kv_msg, link));
  for (size_t i = 0; i < s->nsent; i++) {
    fold__req_unref(s->sent[i].r);
    free(s->sent[i].buf);
  }
  free(s->sent);
  fold__kv_map_free(&s->keys, fold__kvs_key_free);
  fold__kv_map_free(&s->order, free);
  if (s->task.req) fold__req_unref(s->task.req);
  free(s->bye);
  free(s->bar_in);
  free(s->bar_reply);
  free(s->bar_digest);
  free(s->bar_ninit);
  free(s);
  kv->s = NULL;
}

/* Which worker keeps pull p of key k waiting (-1: none known). */
static int blocker(const fold_kv *kv, const skey *k, const kv_pull *p) {
  if (k->val == NULL) return 0; /* worker 0's INIT */
  int best = -1;
  for (int w = 0; w < kv->nworkers; w++) {
    if (kv->left[w]) continue;
    if (kv->type == FOLD__KV_SYNC && !k->contrib[w] && k->applied[p->src] < p->need) return w;
    if (kv->type == FOLD__KV_SSP && (best < 0 || k->applied[w] < k->applied[best])) best = w;
  }
  return best;
}

static void stall_scan(fold_comm *c, fold__timer *t, void *arg) {
  fold_kv *kv = arg;
  struct fold__kv_server *s = kv->s;
  int64_t now = fold__now(c);
  for (size_t i = 0; i < s->keys.cap; i++) {
    skey *head = s->keys.vals[i];
    for (size_t j = 0; head && j < head->npart; j++) {
    skey *k = head->part[j];
    FOLD__LIST_FOR_EACH(kv_pull, p, &k->pulls, link) {
      if (p->stalled || now - p->since < s->stall_ns) continue;
      p->stalled = 1;
      int b = blocker(kv, k, p);
      fold__kv_hdr *h = calloc(1, sizeof *h);
      if (b < 0 || h == NULL) {
        free(h);
        continue;
      }
      h->key = b;
      h->total = (uint64_t)k->key;
      h->n = (uint64_t)((now - p->since) / 1000000); /* ms */
      fold__kvs_send_owned(kv, p->src, FOLD__KV_MSG_STALL, h, sizeof *h);
    }
    }
  }
  fold__timer_arm_in(c, t, s->stall_ns / 4);
}

int fold__kv_server_serve(fold_kv *kv) {
  fold_comm *c = kv->c;
  /* A server waits as long as its workers train: the store's deadline is
   * lifted meanwhile (a dead worker is still found at once, a silent live
   * one is waited for), and set back for the store's other waits. */
  int64_t t = c->timeout_ns;
  c->timeout_ns = INT64_MAX / 4;
  kv->s->stall_ns = t / 4; /* early: the notice must reach the worker well before its timeout */
  kv->s->serving = 1;
  fold__timer_init(&kv->s->stall, stall_scan, kv);
  fold__timer_arm_in(c, &kv->s->stall, kv->s->stall_ns / 4);
  int rc = fold__wait_req(c, kv->s->task.req, "fold_kv_serve");
  fold__timer_cancel(c, &kv->s->stall);
  c->timeout_ns = t;
  if (rc == FOLD_OK) rc = kv->s->task.req->status;
  if (rc != FOLD_OK) return rc;
  /* Tell the other servers that our going is no loss: each watches the
   * others for deaths, and a server may still be serving its last BYEs. */
  fold__tx_batch_begin(c);
  for (int p = kv->nworkers; p < c->size; p++) {
    if (p == c->rank || c->lost[p]) continue;
    fold__kv_hdr *h = calloc(1, sizeof *h);
    if (h) fold__kvs_send_owned(kv, p, FOLD__KV_MSG_SDONE, h, sizeof *h); /* it frees h on failure */
  }
  fold__tx_batch_end(c);
  /* a peer server may be gone already: its failure is not ours */
  for (size_t i = 0; i < kv->s->nsent && !fold__comm_failed(c); i++)
    fold__wait_req(c, kv->s->sent[i].r, "fold_kv_serve");
  return FOLD_OK;
}
