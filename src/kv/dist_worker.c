/* dist_worker.c — a worker of a distributed store: sends inits, pushes and pulls to the keys' servers, waits, leaves. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "kv/dist_wrk.h"

/* ---- the watchdog and the handler ---------------------------------------------- */

/* A server lost (killed, crashed: servers never leave before the
 * workers), or a worker that a server found lost without its BYE: fail,
 * naming it, so that no pull waits for it and the user learns who.
 * Workers do not watch each other (a worker that left and exited looks
 * lost too): the servers, which hear every worker's BYE, tell them. */
static void watch(fold_comm *c, fold__watch *wd, void *arg) {
  (void)wd;
  fold_kv *kv = arg;
  struct fold__kv_worker *w = kv->w;
  if (w->leaving) return;
  if (fold__kvw_out_size(&w->out)) fold__kvw_pump(kv); /* sends completed: the window has room */
  for (int p = kv->nworkers; p < c->size && !w->fail_on; p++)
    if (c->lost[p]) {
      kv->dead[fold__kv_blamed(kv, p)] = 1; /* a server that failed on another rank: that one */
      w->fail_on = p + 1;
    }
  if (w->fail_on) {
    /* fold__fail_for_lost names the rank p blamed, if it failed on one */
    int p = w->fail_on - 1;
    fold__fail_for_lost(c, p, p < kv->nworkers ? "fold_kv: the store lost its worker" : "fold_kv: the store lost its server");
  }
}

/* Unsolicited messages to a worker: a server's notice that a worker died
 * (the watchdog fails on it at once). */
static void on_message(fold_comm *c, void *arg, int src, int tag, const void *data, size_t bytes) {
  fold_kv *kv = arg;
  struct fold__kv_worker *w = kv->w;
  if ((tag != FOLD__KV_MSG_DEAD && tag != FOLD__KV_MSG_STALL) || data == NULL || bytes < sizeof(fold__kv_hdr)) return;
  fold__kv_hdr h;
  memcpy(&h, data, sizeof h);
  if (h.key < 0 || h.key >= c->size || h.key == c->rank) return;
  if (tag == FOLD__KV_MSG_STALL) {
    w->stall_worker = (int)h.key;
    w->stall_key = (int64_t)h.total;
    w->stall_ms = h.n;
    w->stall_server = src;
    return;
  }
  /* DEAD: rank h.key went without a BYE; if it failed on rank q first,
   * q is the one lost, and the cause is kept for when we fail on h.key
   * (the first report of a rank counts: h.key's own, if it came) */
  int q = h.total > 0 && h.total <= (uint64_t)c->size ? (int)h.total - 1 : -1;
  if (q >= 0 && q != c->rank && bytes > sizeof h) {
    char cause[201];
    size_t len = bytes - sizeof h < sizeof cause - 1 ? bytes - sizeof h : sizeof cause - 1;
    memcpy(cause, (const char *)data + sizeof h, len);
    cause[len] = '\0';
    fold__note_report(c, (int)h.key, -(int)h.n, q, cause);
  }
  kv->dead[fold__kv_blamed(kv, (int)h.key)] = 1;
  if (!w->fail_on) w->fail_on = (int)h.key + 1;
}

void fold__kv_worker_stall_note(fold_kv *kv, const char *op) {
  struct fold__kv_worker *w = kv->w;
  if (w == NULL || w->stall_worker < 0 || !w->timed_out) return; /* else the engine's message says it better */
  char kb[300];
  fold__kv_err(kv, FOLD_ETIMEDOUT,
               "%s: rank %d: not complete within FOLD_TIMEOUT: a pull of %s waits for worker rank %d, which has "
               "not pushed its round (reported by server rank %d, %.3g s into the wait)",
               op, kv->c->rank, fold__kv_keyname(kv, w->stall_key, kb, sizeof kb), w->stall_worker, w->stall_server,
               (double)w->stall_ms / 1e3);
}

int fold__kv_worker_open(fold_kv *kv) {
  struct fold__kv_worker *w = calloc(1, sizeof *w);
  fold_comm *c = kv->c;
  if (w == NULL || (kv->dead = calloc((size_t)c->size, 1)) == NULL ||
      fold__kv_place_init(&w->place, kv->nservers, kv->bound) != FOLD_OK) {
    free(w);
    return fold__kv_err(kv, FOLD_ENOMEM, "fold_kv_create: out of memory");
  }
  w->kv = kv;
  fold__kvw_out_init(&w->out);
  w->stall_worker = -1;
  w->stall_server = -1;
  w->next_tag = FOLD__KV_REPLY_TAG0;
  w->digest = 0xcbf29ce484222325ULL;
  kv->w = w;
  fold__watch_init(&w->watchdog, watch, kv);
  if (fold__handler_set(c, fold__kv_ctx(), on_message, kv) != FOLD_OK) {
    fold__kv_worker_close(kv);
    return fold__kv_err(kv, FOLD_ENOMEM, "fold_kv_create: out of memory");
  }
  fold__watch_start(c, &w->watchdog);
  return FOLD_OK;
}

void fold__kv_worker_close(fold_kv *kv) {
  struct fold__kv_worker *w = kv->w;
  if (w == NULL) return;
  fold_comm *c = kv->c;
  fold__watch_stop(c, &w->watchdog);
  fold__handler_set(c, fold__kv_ctx(), NULL, NULL);
  /* requests still pending belong to a failed store: the transports drop
   * theirs when the communicator goes; ours are released here */
  fold__kvw_pend_free(w);
  fold__kvw_out_free(&w->out);
  free(w->copies);
  fold__kv_place_free(&w->place);
  free(w);
  kv->w = NULL;
}

double fold__kv_worker_imbalance(const fold_kv *kv) { return kv->w ? fold__kv_place_imbalance(&kv->w->place) : 0.0; }

/* ---- init, push, pull ---------------------------------------------------------------- */

static void digest_add(struct fold__kv_worker *w, uint64_t v) {
  for (int i = 0; i < 8; i++) {
    w->digest ^= (v >> (8 * i)) & 0xff;
    w->digest *= 0x100000001b3ULL;
  }
}

/* The shards of e: servers s0 .. s1-1, shard i's range by fold__kv_shard. */
static void shard_of(const fold_kv *kv, const fold__kv_ent *e, int i, int *server, size_t *off, size_t *len) {
  if (e->server >= 0) {
    *server = kv->nworkers + e->server;
    *off = 0;
    *len = e->count;
    return;
  }
  fold__kv_shard(e->count, kv->nservers, i, off, len);
  *server = kv->nworkers + i;
}
static int nshards(const fold_kv *kv, const fold__kv_ent *e) { return e->server >= 0 ? 1 : kv->nservers; }

/* Every message of a key carries one piece of a shard, small enough to go
 * eagerly with its header (kv->piece_bytes, kv.c says why). A server keeps
 * rounds per piece, so a piece's pull is answered while the key's later
 * pieces still stream in. */

typedef struct kv_piece {
  int server;
  size_t off, len;
} kv_piece;

/* The pieces of e in sending order: piece r of every shard before piece
 * r+1, so that a split key keeps every server busy. Calls fn on each. */
typedef int (*piece_fn)(fold_kv *kv, const fold__kv_ent *e, const kv_piece *p, void *arg);
static int each_piece(fold_kv *kv, const fold__kv_ent *e, piece_fn fn, void *arg) {
  size_t per = kv->piece_bytes / e->esize, biggest = 0;
  if (per == 0) per = 1;
  for (int i = 0; i < nshards(kv, e); i++) {
    kv_piece p;
    shard_of(kv, e, i, &p.server, &p.off, &p.len);
    if (p.len > biggest) biggest = p.len;
  }
  int rc = FOLD_OK;
  for (size_t r = 0; r * per < biggest && rc == FOLD_OK; r++)
    for (int i = 0; i < nshards(kv, e) && rc == FOLD_OK; i++) {
      kv_piece p;
      shard_of(kv, e, i, &p.server, &p.off, &p.len);
      if (r * per >= p.len) continue;
      p.off += r * per;
      p.len = p.len - r * per < per ? p.len - r * per : per;
      rc = fn(kv, e, &p, arg);
    }
  return rc;
}

/* An init's pieces: the value, and where its order record goes. */
typedef struct kv_init {
  const void *value;
  int order_to; /* the server that checks this init number */
  int recorded; /* a piece for it carried the record */
  uint32_t idx;
} kv_init;

/* One INIT: p NULL is the order record alone (no piece, no value). */
static int init_msg(fold_kv *kv, const fold__kv_ent *e, const kv_piece *p, kv_init *in) {
  int with_value = p && kv->c->rank == 0; /* worker 0's values are the ones stored */
  int order = p == NULL || (p->server == in->order_to && !in->recorded);
  /* a string key's name travels too: the server's messages name it */
  const fold__kv_name *nm = fold__kv_map_get(&kv->names, e->key);
  size_t vbytes = with_value ? p->len * e->esize : 0, nbytes = nm ? strlen(nm->name) + 1 : 0;
  fold__kv_hdr h = {e->key,
                    e->count,
                    p ? p->off : 0,
                    p ? p->len : 0,
                    (uint32_t)e->dtype,
                    (uint32_t)(with_value ? FOLD__KV_INIT_VALUE : 0) | (nm ? FOLD__KV_INIT_NAME : 0) |
                        (order ? FOLD__KV_INIT_ORDER : 0),
                    0,
                    in->idx};
  char *msg = fold__kvw_msg_new(kv, &h, vbytes + nbytes);
  if (msg == NULL) return fold__comm_failed(kv->c);
  if (with_value) memcpy(msg + sizeof h, (const char *)in->value + p->off * e->esize, vbytes);
  if (nm) memcpy(msg + sizeof h + vbytes, nm->name, nbytes);
  if (order) in->recorded = 1;
  return fold__kvw_msg_queue(kv, p ? p->server : in->order_to, FOLD__KV_MSG_INIT, msg, vbytes + nbytes, INT_MAX,
                   (fold__kv_ent *)e);
}

static int init_piece(fold_kv *kv, const fold__kv_ent *e, const kv_piece *p, void *arg) {
  return init_msg(kv, e, p, arg);
}

int fold__kv_worker_init(fold_kv *kv, fold__kv_ent *e, const void *value) {
  struct fold__kv_worker *w = kv->w;
  e->server = fold__kv_place_key(&w->place, e->count, e->esize);
  digest_add(w, (uint64_t)e->key);
  digest_add(w, e->count);
  digest_add(w, (uint64_t)e->dtype);
  kv_init in = {value, kv->nworkers + (int)(w->ninit % (uint64_t)kv->nservers), 0, (uint32_t)w->ninit};
  w->ninit++;
  fold__tx_batch_begin(kv->c);
  int rc = each_piece(kv, e, init_piece, &in);
  if (rc == FOLD_OK && !in.recorded) rc = init_msg(kv, e, NULL, &in);
  if (rc == FOLD_OK) rc = fold__kvw_pump(kv);
  fold__tx_batch_end(kv->c);
  return rc;
}

static int copy_add(fold_kv *kv, void *dst, const void *src, size_t bytes) {
  struct fold__kv_worker *w = kv->w;
  if (w->ncopy == w->capcopy) {
    size_t cap = w->capcopy ? w->capcopy * 2 : 16;
    kv_copy *p = realloc(w->copies, cap * sizeof *p);
    if (p == NULL) return fold__comm_fail(kv->c, FOLD_ENOMEM, "fold_kv_pull: rank %d: out of memory", kv->c->rank);
    w->copies = p;
    w->capcopy = cap;
  }
  w->copies[w->ncopy++] = (kv_copy){dst, src, bytes};
  return FOLD_OK;
}

/* One key's push and/or pull (srcs or out NULL: that half is skipped),
 * piece by piece, each piece's pull right behind its push. */
typedef struct kv_ops {
  const void *const *srcs; /* the devices' values, ns of them */
  int ns;
  void *out; /* the key's first output */
  int priority;
} kv_ops;

static int ops_piece(fold_kv *kv, const fold__kv_ent *e, const kv_piece *p, void *arg) {
  struct fold__kv_worker *w = kv->w;
  fold_comm *c = kv->c;
  const kv_ops *o = arg;
  int rc = FOLD_OK;
  if (o->srcs) { /* the devices' values summed straight into the message */
    fold__kv_hdr h = {e->key, e->count, p->off, p->len, (uint32_t)e->dtype, 0, 0, 0};
    char *msg = fold__kvw_msg_new(kv, &h, p->len * e->esize);
    if (msg == NULL) return fold__comm_failed(c);
    const void *part[64] = {0};
    const void **ps = o->ns <= 64 ? part : malloc(sizeof *ps * (size_t)o->ns);
    if (ps == NULL) {
      free(msg);
      return fold__comm_fail(c, FOLD_ENOMEM, "fold_kv_push: rank %d: out of memory", c->rank);
    }
    for (int k = 0; k < o->ns; k++) ps[k] = (const char *)o->srcs[k] + p->off * e->esize;
    rc = fold__kv_sum(kv->pool, msg + sizeof h, ps, o->ns, p->len, e->dtype, kv->bound);
    if (ps != part) free((void *)ps);
    if (rc != FOLD_OK) {
      free(msg);
      return rc;
    }
    rc = fold__kvw_msg_queue(kv, p->server, FOLD__KV_MSG_PUSH, msg, p->len * e->esize, o->priority, (fold__kv_ent *)e);
  }
  if (o->out && rc == FOLD_OK) {
    /* the reply lands in the output itself: post its receive first */
    int32_t tag = fold__kvw_reply_tag(w);
    fold_request *r = NULL;
    rc = fold__irecv_bytes(c, (char *)o->out + p->off * e->esize, p->len * e->esize, p->server, fold__kv_ctx(), tag, &r);
    if (rc == FOLD_OK) rc = fold__kvw_pend_add(kv, r, NULL, 0);
    if (rc != FOLD_OK) return rc;
    fold__kv_hdr h = {e->key, e->count, p->off, p->len, (uint32_t)e->dtype, 0, tag, 0};
    char *msg = fold__kvw_msg_new(kv, &h, 0);
    rc = msg ? fold__kvw_msg_queue(kv, p->server, FOLD__KV_MSG_PULL, msg, 0, o->priority, (fold__kv_ent *)e) : fold__comm_failed(c);
  }
  return rc;
}

typedef struct kv_run {
  int first; /* the key's first position in the call */
  int a, b;  /* its positions are order[a..b) */
} kv_run;

static int run_cmp(const void *x, const void *y) {
  const kv_run *p = x, *q = y;
  return (p->first > q->first) - (p->first < q->first);
}

/* Push and/or pull n keys (values or outs NULL: that half is skipped), key
 * by key in the order of their first appearance in the call; with both,
 * each key's pull is queued right behind its push, so that its reply can
 * flow while the later keys' pushes are still going out (MXNet gets this
 * from one pushpull per key). */
static int pushpull(fold_kv *kv, int n, const int64_t *keys, const void *const *values, void *const *outs,
                    int priority) {
  struct fold__kv_worker *w = kv->w;
  fold__kvw_reap_some(w);
  size_t cap = (size_t)(n ? n : 1);
  int *order = fold__kv_group(n, keys);
  kv_run *runs = malloc(sizeof *runs * cap);
  const void **srcs = malloc(sizeof *srcs * cap);
  void **others = malloc(sizeof *others * cap);
  int rc = FOLD_OK, nruns = 0;
  if (order == NULL || runs == NULL || srcs == NULL || others == NULL) {
    rc = fold__kv_err(kv, FOLD_ENOMEM, "%s: out of memory", values ? "fold_kv_push" : "fold_kv_pull");
    goto out;
  }
  for (int a = 0, b; a < n; a = b) {
    for (b = a; b < n && keys[order[b]] == keys[order[a]];) b++;
    runs[nruns++] = (kv_run){order[a], a, b};
  }
  qsort(runs, (size_t)nruns, sizeof *runs, run_cmp);
  fold__tx_batch_begin(kv->c);
  for (int r = 0; r < nruns && rc == FOLD_OK; r++) {
    const fold__kv_ent *e = fold__kv_map_get(&kv->ents, keys[runs[r].first]);
    int ns = 0;
    for (int j = runs[r].a; j < runs[r].b; j++) {
      if (values) srcs[ns] = values[order[j]];
      if (outs && j > runs[r].a) others[ns - 1] = outs[order[j]];
      ns++;
    }
    /* a pull's extra outputs of the key get copies after the wait */
    for (int j = 0; outs && j < ns - 1 && rc == FOLD_OK; j++)
      if (others[j] != outs[runs[r].first]) rc = copy_add(kv, others[j], outs[runs[r].first], e->count * e->esize);
    kv_ops o = {values ? srcs : NULL, ns, outs ? outs[runs[r].first] : NULL, priority};
    if (rc == FOLD_OK) rc = each_piece(kv, e, ops_piece, &o);
  }
  if (rc == FOLD_OK) rc = fold__kvw_pump(kv);
  fold__tx_batch_end(kv->c);
  if (rc == FOLD_OK) fold__progress(kv->c); /* move what is sent along */
out:
  free(order);
  free(runs);
  free(srcs);
  free(others);
  return rc;
}

int fold__kv_worker_push(fold_kv *kv, int n, const int64_t *keys, const void *const *values, int priority) {
  return pushpull(kv, n, keys, values, NULL, priority);
}

int fold__kv_worker_pull(fold_kv *kv, int n, const int64_t *keys, void *const *outs, int priority) {
  return pushpull(kv, n, keys, NULL, outs, priority);
}

int fold__kv_worker_pushpull(fold_kv *kv, int n, const int64_t *keys, const void *const *values, void *const *outs,
                             int priority) {
  return pushpull(kv, n, keys, values, outs, priority);
}

/* A wait for one request (a pull's reply from a server, a send to one)
 * runs as a task of its own, so that a timeout names the rank the wait is
 * really for (its describe): the worker whose push a server's round still
 * lacks (the server's STALL said so), not that live server. The report a
 * timeout sends every peer then names that worker too, and so do the
 * ranks that fail next when this one goes. */
typedef struct kv_waiter {
  fold__task task;
  fold_kv *kv;
  fold_request *r;
  int blamed; /* what describe last named (-1: nobody) */
} kv_waiter;

static int waiter_step(fold__task *t) {
  kv_waiter *x = (kv_waiter *)t;
  if (!fold__req_done(x->r)) return 0;
  return x->r->status != FOLD_OK ? x->r->status : 1;
}

static int waiter_describe(fold__task *t, char *buf, size_t cap) {
  kv_waiter *x = (kv_waiter *)t;
  struct fold__kv_worker *w = x->kv->w;
  char kb[300];
  if (w->stall_worker >= 0) {
    snprintf(buf, cap, "worker rank %d, which has not pushed its round (reported by server rank %d, which holds the pull of %s)",
             w->stall_worker, w->stall_server, fold__kv_keyname(x->kv, w->stall_key, kb, sizeof kb));
    return x->blamed = w->stall_worker;
  }
  snprintf(buf, cap, "server rank %d (%s)", x->r->peer, x->r->kind == FOLD__REQ_SEND ? "a message to it" : "its reply");
  return x->blamed = x->r->peer;
}

static void waiter_release(fold__task *t) { free(t); }

/* Wait for r, holding a reference of our own: the watchdog's fold__kvw_pump reaps
 * (and drops) completed requests while we wait. */
static int wait_one(fold_kv *kv, fold_request *r, const char *op) {
  fold_comm *c = kv->c;
  kv_waiter *x = calloc(1, sizeof *x);
  if (x == NULL || (x->task.req = fold__req_new(c, FOLD__REQ_TASK)) == NULL) {
    free(x);
    return fold__comm_fail(c, FOLD_ENOMEM, "%s: rank %d: out of memory", op, c->rank);
  }
  fold__req_ref(r);
  x->kv = kv;
  x->r = r;
  x->blamed = -1;
  x->task.step = waiter_step;
  x->task.describe = waiter_describe;
  x->task.release = waiter_release;
  x->task.req->task = &x->task;
  fold_request *tr = x->task.req;
  fold__task_start(c, &x->task);
  int rc = fold__wait_req(c, tr, op);
  if (rc == FOLD_OK) rc = tr->status;
  if (rc == FOLD_OK) rc = r->status;
  /* a rank silent past FOLD_TIMEOUT counts as lost (fold_kv_dead_nodes) */
  if (rc == FOLD_ETIMEDOUT && x->blamed >= 0 && x->blamed < c->size) {
    kv->dead[x->blamed] = 1;
    kv->w->timed_out = 1;
  }
  fold__task_cancel(c, &x->task); /* it left, unless another comm's failure ended the wait */
  fold__req_unref(r);
  fold__req_unref(tr); /* frees x */
  return rc;
}

int fold__kv_worker_wait(fold_kv *kv, const char *op) {
  struct fold__kv_worker *w = kv->w;
  int rc = fold__comm_failed(kv->c);
  /* until the outbox is empty and nothing is in flight; the outbox empties
   * as sends complete (the watchdog pumps it every pass) */
  size_t is = 0, ir = 0; /* the fifos' entries before these are done */
  uint64_t rs = w->reaps - 1, rr = w->reaps - 1;
  while (rc == FOLD_OK && (rc = fold__kvw_pump(kv)) == FOLD_OK) {
    fold_request *r = fold__kvw_first_pending(w, &w->sends, &is, &rs);
    if (r == NULL) r = fold__kvw_first_pending(w, &w->recvs, &ir, &rr);
    if (r == NULL) {
      if (fold__kvw_out_size(&w->out) == 0) break;
      continue; /* nothing in flight: fold__kvw_pump sends at once */
    }
    rc = wait_one(kv, r, op);
  }
  if (rc == FOLD_OK) rc = fold__comm_failed(kv->c);
  if (rc != FOLD_OK) return rc;
  fold__kvw_reap(w);
  for (size_t k = 0; k < w->ncopy; k++) memcpy(w->copies[k].dst, w->copies[k].src, w->copies[k].bytes);
  w->ncopy = 0;
  w->stall_worker = -1; /* the pulls it was about are answered */
  return rc;
}

/* ---- optimizer, barrier, leaving ---------------------------------------------------- */

int fold__kv_worker_send_opt(fold_kv *kv, const char *spec) {
  size_t len = strlen(spec) + 1;
  int rc = fold__comm_failed(kv->c);
  fold__kv_hdr h = {0, 0, 0, len, 0, 0, 0, 0};
  for (int s = 0; s < kv->nservers && rc == FOLD_OK; s++) {
    char *msg = fold__kvw_msg_new(kv, &h, len);
    if (msg == NULL) return fold__comm_failed(kv->c);
    memcpy(msg + sizeof h, spec, len);
    rc = fold__kvw_msg_queue(kv, kv->nworkers + s, FOLD__KV_MSG_OPT, msg, len, INT_MAX, NULL);
  }
  if (rc == FOLD_OK) rc = fold__kvw_pump(kv);
  return rc ? rc : fold__kv_failed(kv);
}

int fold__kv_worker_barrier(fold_kv *kv) {
  struct fold__kv_worker *w = kv->w;
  fold_comm *c = kv->c;
  int rc = fold__kv_worker_wait(kv, "fold_kv_barrier");
  if (rc != FOLD_OK) return rc;
  /* server 0 answers once every worker still in arrived */
  fold__kv_hdr h = {0, w->digest, w->barriers++, w->ninit, 0, 0, fold__kvw_reply_tag(w), 0}, ans;
  fold_request *r = NULL;
  rc = fold__irecv_bytes(c, &ans, sizeof ans, kv->nworkers, fold__kv_ctx(), h.reply, &r);
  if (rc != FOLD_OK) return rc;
  char *msg = fold__kvw_msg_new(kv, &h, 0);
  rc = msg ? fold__kvw_msg_send(kv, kv->nworkers, FOLD__KV_MSG_BARRIER, msg, 0) : fold__comm_failed(c);
  if (rc == FOLD_OK) rc = wait_one(kv, r, "fold_kv_barrier");
  fold__req_unref(r);
  if (rc == FOLD_OK) rc = fold__kv_worker_wait(kv, "fold_kv_barrier");
  if (rc == FOLD_OK && ans.flags)
    rc = fold__kv_err(kv, FOLD_EMISMATCH,
                      "fold_kv_barrier: rank %d: the workers did not initialise the same keys in the same order "
                      "(worker %lld made %llu inits, worker 0 %llu, or their keys, counts or dtypes differ)",
                      c->rank, (long long)ans.key, (unsigned long long)ans.n, (unsigned long long)ans.total);
  return rc;
}

int fold__kv_worker_leave(fold_kv *kv) {
  fold_comm *c = kv->c;
  int rc = fold__kv_worker_wait(kv, "fold_kv_destroy");
  if (rc != FOLD_OK || fold__comm_failed(c)) return rc ? rc : fold__comm_failed(c);
  /* BYE to every server: later rounds stop waiting for us, the last BYE
   * ends fold_kv_serve, and our going is no loss */
  fold__kv_hdr h = {0};
  kv->w->leaving = 1;
  fold__tx_batch_begin(c);
  for (int p = kv->nworkers; p < c->size && rc == FOLD_OK; p++) {
    char *msg = fold__kvw_msg_new(kv, &h, 0);
    rc = msg ? fold__kvw_msg_send(kv, p, FOLD__KV_MSG_BYE, msg, 0) : fold__comm_failed(c);
  }
  fold__tx_batch_end(c);
  if (rc == FOLD_OK) rc = fold__kv_worker_wait(kv, "fold_kv_destroy");
  return rc;
}
