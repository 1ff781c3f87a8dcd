/* kv.c — the key-value store's public calls: creation (types, FOLD_KV_* agreement), argument checks, dispatch to local or distributed. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kv/kv.h"

int fold__kv_err(const fold_kv *kv, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = fold__verror(kv ? kv->user : NULL, status, fmt, ap);
  va_end(ap);
  return rc;
}

int fold__kv_failed(fold_kv *kv) {
  if (kv->c == NULL) return FOLD_OK;
  int st = fold__comm_failed(kv->c);
  /* the user reads fold_comm_last_error on the communicator they gave */
  if (st && kv->user) fold__error(kv->user, st, "%s", fold_comm_last_error(kv->c));
  return st;
}

int fold__kv_blamed(const fold_kv *kv, int p) {
  int q = fold__report_culprit(kv->c, p, NULL, NULL);
  return q >= 0 && q != kv->c->rank ? q : p;
}

/* The store whose updater this thread is running (NULL: none): a call on
 * it from inside its updater is refused (in_updater), not run: a local
 * store's push would sum into the buffer the updater is reading, and with
 * FOLD_PROGRESS_THREAD a server's call would wait for the lock its own
 * thread holds. */
static _Thread_local const fold_kv *applying;

static int in_updater(const fold_kv *kv, const char *op) {
  if (kv == NULL || applying != kv) return FOLD_OK;
  return fold__kv_err(kv, FOLD_EINVAL,
                      "%s: called from the store's own updater: an updater may not call into its own store (it runs "
                      "inside that store's push or fold_kv_serve)",
                      op);
}

void fold__kv_apply(fold_kv *kv, int64_t key, uint64_t off, const void *merged, void *stored, size_t count,
                    fold_dtype dtype) {
  if (kv->updater) {
    const fold_kv *outer = applying;
    applying = kv;
    kv->updater(key, merged, stored, count, dtype, kv->updater_ctx);
    applying = outer;
  } else if (kv->optim) {
    /* a failure (a dtype the optimizer does not take) was ruled out when
     * the key was initialised with the optimizer set, or is logged here */
    if (fold__kv_optim_apply_part(kv->optim, key, off, merged, stored, count, dtype) != FOLD_OK) {
      char kb[300];
      FOLD__WARN(kv->c, "fold_kv: the optimizer skipped %s: %s", fold__kv_keyname(kv, key, kb, sizeof kb),
                 fold_comm_last_error(NULL));
    }
  } else if (merged != stored) {
    memcpy(stored, merged, count * fold_dtype_size(dtype));
  }
}

/* ---- creation --------------------------------------------------------------- */

/* The store's slot on its communicator (engine/ext.c): its engine state
 * (the task and the handler of FOLD__EXT_KV) hangs off the communicator,
 * and the communicator's teardown would release it if the communicator
 * ever went first (fold_kv_destroy detaches it before it destroys the
 * communicator, so normally the hook never runs). */
static const char kv_slot;

static void slot_teardown(void *p) {
  fold_kv *kv = p;
  fold__kv_worker_close(kv);
  fold__kv_server_close(kv);
}

static int type_of(const char *s) {
  static const char *const names[] = {"local", "dist_sync", "dist_async", "dist_ssp"};
  for (int i = 0; i < 4; i++)
    if (strcmp(s, names[i]) == 0) return i;
  return -1;
}

/* The FOLD_KV_* variables: every rank of a store must agree on them. The
 * last entry is not a variable: each rank's eager limit, of which the store
 * takes the smallest (fold__kv_piece_bytes). */
enum { AG_TYPE, AG_SERVERS, AG_BOUND, AG_THREADS, AG_STALE, AG_EAGER, AG_N };
static const char *const ag_names[AG_N] = {"type", "FOLD_KV_SERVERS", "FOLD_KV_BIGARRAY_BOUND",
                                           "FOLD_KV_REDUCE_THREADS", "FOLD_KV_STALENESS", "eager limit"};

/* A message of the store carries one piece of a key's shard behind its
 * header, and a piece goes eagerly: a bigger message would go by
 * rendezvous, and over tcp its CTS then waits behind the data already
 * queued the other way (a worker's pushes, a server's replies: up to tbf's
 * 50 ms and the socket buffers), which left the links idle between
 * messages (60% of the link bound, docs/kvstore.md). So a piece is the
 * smallest eager limit of any rank's transports (eager_max, on the store's
 * context) less the header. Where no transport has a limit, pieces still
 * let a server answer a piece's pull while the key's later pieces stream
 * in: KV_PIECE_CAP bytes then. */
#define KV_PIECE_CAP ((size_t)65536)
static size_t piece_bytes(size_t eager) {
  size_t m = eager && eager < KV_PIECE_CAP ? eager : KV_PIECE_CAP;
  return m > 2 * sizeof(fold__kv_hdr) ? m - sizeof(fold__kv_hdr) : sizeof(fold__kv_hdr);
}

static int agree(fold_kv *kv, const int64_t mine[AG_N]) {
  fold_comm *c = kv->c;
  int64_t *all = malloc(sizeof(int64_t) * AG_N * (size_t)c->size);
  if (all == NULL) return fold__kv_err(kv, FOLD_ENOMEM, "fold_kv_create: out of memory");
  int rc = fold_allgather(mine, all, AG_N, FOLD_INT64, c);
  if (rc != FOLD_OK) {
    free(all);
    return fold__kv_failed(kv) ? fold__kv_failed(kv) : rc;
  }
  int64_t eager = all[AG_EAGER];
  for (int r = 1; r < c->size; r++)
    if (all[r * AG_N + AG_EAGER] && (eager == 0 || all[r * AG_N + AG_EAGER] < eager)) eager = all[r * AG_N + AG_EAGER];
  kv->piece_bytes = piece_bytes((size_t)eager);
  for (int r = 1; r < c->size && rc == FOLD_OK; r++)
    for (int i = 0; i < AG_EAGER; i++)
      if (all[r * AG_N + i] != all[i]) {
        rc = fold__kv_err(kv, FOLD_EMISMATCH, "fold_kv_create: rank %d: ranks disagree on %s: rank 0 has %lld, rank %d has %lld",
                          c->rank, ag_names[i], (long long)all[i], r, (long long)all[r * AG_N + i]);
        break;
      }
  free(all);
  return rc;
}

static int create(fold_comm *comm, const char *type, fold_kv **out) {
  fold_kv *kv = calloc(1, sizeof *kv);
  if (kv == NULL) return fold__error(comm, FOLD_ENOMEM, "fold_kv_create: out of memory");
  kv->user = comm;
  kv->type = type_of(type);
  /* bounded in core/params.h (all fit an int); out of range: a warning and the default */
  kv->bound = fold__param_u64(FOLD__P_KV_BIGARRAY_BOUND);
  kv->threads = (int)fold__param_u64(FOLD__P_KV_REDUCE_THREADS);
  kv->staleness = (int)fold__param_u64(FOLD__P_KV_STALENESS);
  kv->nservers = (int)fold__param_u64(FOLD__P_KV_SERVERS);
  int rc = FOLD_OK;
  if (comm) {
    /* the store's own channel: its tags never meet the caller's */
    if ((rc = fold_comm_dup(comm, &kv->c)) != FOLD_OK) {
      free(kv);
      return rc;
    }
    int64_t mine[AG_N] = {kv->type, kv->nservers, (int64_t)kv->bound, kv->threads, kv->staleness,
                          (int64_t)fold__eager_max(kv->c, fold__kv_ctx())};
    if ((rc = agree(kv, mine)) != FOLD_OK) goto fail;
  }
  if (kv->type != FOLD__KV_LOCAL) {
    int n = kv->c->size;
    if (n < 2 || kv->nservers < 1 || kv->nservers > n - 1) {
      rc = fold__kv_err(kv, FOLD_EINVAL,
                        "fold_kv_create: rank %d: a distributed store needs at least one worker and one server: "
                        "FOLD_KV_SERVERS=%d over %d ranks",
                        comm->rank, kv->nservers, n);
      goto fail;
    }
    kv->nworkers = n - kv->nservers;
    kv->role = kv->c->rank >= kv->nworkers ? FOLD_KV_SERVER : FOLD_KV_WORKER;
  }
  kv->pool = fold__kv_pool_create(kv->threads);
  if (kv->pool == NULL) {
    rc = fold__kv_err(kv, FOLD_ENOMEM, "fold_kv_create: %s", fold_comm_last_error(NULL));
    goto fail;
  }
  if (kv->type != FOLD__KV_LOCAL) {
    fold__enter(kv->c); /* the progress thread steps the tasks from now on */
    rc = fold__ext_attach(kv->c, &kv_slot, kv, slot_teardown);
    if (rc == FOLD_OK) {
      rc = kv->role == FOLD_KV_SERVER ? fold__kv_server_open(kv) : fold__kv_worker_open(kv);
      if (rc != FOLD_OK) fold__ext_detach(kv->c, &kv_slot);
    }
    fold__leave(kv->c);
    if (rc != FOLD_OK) goto fail;
  }
  *out = kv;
  return FOLD_OK;
fail:
  fold__kv_pool_destroy(kv->pool);
  if (kv->c) fold_comm_destroy(kv->c);
  free(kv->left);
  free(kv->dead);
  free(kv);
  return rc;
}

int fold_kv_create(fold_comm *comm, const char *type, fold_kv **kv) {
  if (kv) *kv = NULL;
  if (kv == NULL) return fold__error(comm, FOLD_EINVAL, "fold_kv_create: kv is NULL");
  if (type == NULL) return fold__error(comm, FOLD_EINVAL, "fold_kv_create: type is NULL");
  if (type_of(type) < 0)
    return fold__error(comm, FOLD_EINVAL,
                       "fold_kv_create: unknown type '%s' (local, dist_sync, dist_async or dist_ssp)", type);
  if (comm == NULL && type_of(type) != FOLD__KV_LOCAL)
    return fold__error(NULL, FOLD_EINVAL, "fold_kv_create: a '%s' store needs a communicator", type);
  if (comm) {
    int rc = fold__check_comm(comm);
    if (rc) return rc;
    if ((rc = fold__comm_failed(comm))) return rc;
  }
  return create(comm, type, kv);
}

int fold_kv_role(const fold_kv *kv) {
  if (kv == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_kv_role: kv is NULL");
  return kv->role;
}

static void ent_free(void *p) {
  fold__kv_ent *e = p;
  free(e->val);
  free(e);
}

int fold_kv_destroy(fold_kv *kv) {
  if (kv == NULL) return FOLD_OK;
  if (in_updater(kv, "fold_kv_destroy")) return FOLD_EINVAL;
  int rc = FOLD_OK;
  fold__enter(kv->c);
  if (kv->w) {
    rc = fold__kv_worker_leave(kv);
    fold__kv_worker_close(kv);
  }
  if (kv->s) fold__kv_server_close(kv);
  if (kv->c) fold__ext_detach(kv->c, &kv_slot);
  fold__leave(kv->c);
  if (kv->c) fold_comm_destroy(kv->c);
  fold__kv_map_free(&kv->ents, ent_free);
  fold__kv_map_free(&kv->names, free);
  fold__kv_optim_free(kv->optim);
  fold__kv_pool_destroy(kv->pool);
  free(kv->scratch);
  free(kv->left);
  free(kv->dead);
  free(kv);
  return rc;
}

/* ---- server calls --------------------------------------------------------------- */

int fold_kv_serve(fold_kv *kv) {
  if (kv == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_kv_serve: kv is NULL");
  if (in_updater(kv, "fold_kv_serve")) return FOLD_EINVAL;
  if (kv->s == NULL)
    return fold__kv_err(kv, FOLD_EINVAL, "fold_kv_serve: this rank is not a server of a distributed store");
  fold__enter(kv->c);
  int rc = fold__kv_server_serve(kv);
  fold__leave(kv->c);
  return rc ? (fold__kv_failed(kv) ? fold__kv_failed(kv) : rc) : FOLD_OK;
}

int fold_kv_set_updater(fold_kv *kv, fold_kv_updater fn, void *ctx) {
  if (kv == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_kv_set_updater: kv is NULL");
  if (in_updater(kv, "fold_kv_set_updater")) return FOLD_EINVAL;
  fold__enter(kv->c); /* a server's task may be applying an update (progress thread) */
  kv->updater = fn;
  kv->updater_ctx = ctx;
  if (fn) {
    fold__kv_optim_free(kv->optim);
    kv->optim = NULL;
  }
  fold__leave(kv->c);
  return FOLD_OK;
}

int fold_kv_set_optimizer(fold_kv *kv, const char *spec) {
  if (kv == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_kv_set_optimizer: kv is NULL");
  if (in_updater(kv, "fold_kv_set_optimizer")) return FOLD_EINVAL;
  if (spec == NULL) return fold__kv_err(kv, FOLD_EINVAL, "fold_kv_set_optimizer: spec is NULL");
  char why[200] = "";
  fold__kv_optim *o = NULL;
  int rc = fold__kv_optim_parse(spec, &o, why, sizeof why);
  if (rc != FOLD_OK)
    return fold__kv_err(kv, rc, "fold_kv_set_optimizer: the spec '%s' does not parse: %s", spec, why);
  if (kv->w) {
    fold__kv_optim_free(o);
    if (kv->c->rank != 0) return FOLD_OK; /* worker 0 speaks for the workers */
    fold__enter(kv->c);
    rc = fold__kv_worker_send_opt(kv, spec);
    fold__leave(kv->c);
    return rc;
  }
  fold__enter(kv->c);
  fold__kv_optim_free(kv->optim);
  kv->optim = o;
  kv->updater = NULL;
  fold__leave(kv->c);
  return FOLD_OK;
}

int fold_kv_dead_nodes(fold_kv *kv, int *ranks, int max) {
  if (kv == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_kv_dead_nodes: kv is NULL");
  if (in_updater(kv, "fold_kv_dead_nodes")) return FOLD_EINVAL;
  if (ranks == NULL && max > 0) return fold__kv_err(kv, FOLD_EINVAL, "fold_kv_dead_nodes: ranks is NULL, max %d", max);
  if (kv->dead == NULL) return 0; /* a local store */
  fold__enter(kv->c);
  if (!fold__comm_failed(kv->c)) fold__progress(kv->c); /* losses the transports know of */
  /* a lost rank that failed on another one first (and then exited) is
   * not counted: the one it blamed is */
  uint8_t *mark = calloc((size_t)kv->c->size, 1);
  if (mark == NULL) {
    fold__leave(kv->c);
    return fold__kv_err(kv, FOLD_ENOMEM, "fold_kv_dead_nodes: out of memory");
  }
  for (int p = 0; p < kv->c->size; p++) {
    if (kv->dead[p]) mark[p] = 1;
    if (kv->c->lost[p] && (p >= kv->nworkers || (kv->s && !kv->left[p]))) mark[fold__kv_blamed(kv, p)] = 1;
  }
  int n = 0;
  for (int p = 0; p < kv->c->size; p++)
    if (mark[p]) {
      if (n < max) ranks[n] = p;
      n++;
    }
  free(mark);
  fold__leave(kv->c);
  return n;
}

/* ---- workers' calls ---------------------------------------------------------------- */

static int summable(fold_dtype d) { return d < FOLD_FLOAT32_INT32; }

int fold_kv_init(fold_kv *kv, int64_t key, const void *value, size_t count, fold_dtype dtype) {
  if (kv == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_kv_init: kv is NULL");
  if (in_updater(kv, "fold_kv_init")) return FOLD_EINVAL;
  char kb[300];
  fold__kv_keyname(kv, key, kb, sizeof kb);
  if (kv->s) return fold__kv_err(kv, FOLD_EINVAL, "fold_kv_init: %s: rank %d is a server", kb, kv->c->rank);
  if (value == NULL) return fold__kv_err(kv, FOLD_EINVAL, "fold_kv_init: %s: value is NULL", kb);
  if (count == 0) return fold__kv_err(kv, FOLD_EINVAL, "fold_kv_init: %s: count is 0", kb);
  if (!summable(dtype))
    return fold__kv_err(kv, FOLD_EINVAL, "fold_kv_init: %s: dtype %d cannot be summed (a numeric type is needed)", kb,
                        (int)dtype);
  if (fold__kv_map_get(&kv->ents, key))
    return fold__kv_err(kv, FOLD_EINVAL, "fold_kv_init: %s is initialised already", kb);
  size_t esize = fold_dtype_size(dtype);
  if (count > SIZE_MAX / esize) return fold__kv_err(kv, FOLD_EINVAL, "fold_kv_init: %s: count %zu too large", kb, count);
  int rc = fold__kv_failed(kv);
  if (rc) return rc;
  fold__kv_ent *e = calloc(1, sizeof *e);
  if (e == NULL) return fold__kv_err(kv, FOLD_ENOMEM, "fold_kv_init: %s: out of memory", kb);
  e->key = key;
  e->count = count;
  e->dtype = dtype;
  e->esize = esize;
  if (kv->w) {
    fold__enter(kv->c);
    rc = fold__kv_worker_init(kv, e, value);
    fold__leave(kv->c);
  } else {
    rc = fold__kv_local_init(kv, e, value);
  }
  if (rc == FOLD_OK && (rc = fold__kv_map_put(&kv->ents, key, e)) != FOLD_OK)
    rc = fold__kv_err(kv, FOLD_ENOMEM, "fold_kv_init: %s: out of memory", kb);
  if (rc != FOLD_OK) ent_free(e);
  return rc;
}

/* The checks push and pull share: nothing is sent unless every pair is good. */
static int check_ops(fold_kv *kv, const char *op, int n, const int64_t *keys, const void *const *bufs,
                     const char *what) {
  if (kv->s) return fold__kv_err(kv, FOLD_EINVAL, "%s: rank %d is a server", op, kv->c->rank);
  if (n < 0) return fold__kv_err(kv, FOLD_EINVAL, "%s: n is %d", op, n);
  if (n > 0 && (keys == NULL || bufs == NULL))
    return fold__kv_err(kv, FOLD_EINVAL, "%s: %s is NULL with n = %d", op, keys ? what : "keys", n);
  for (int i = 0; i < n; i++) {
    char kb[300];
    if (fold__kv_map_get(&kv->ents, keys[i]) == NULL)
      return fold__kv_err(kv, FOLD_EINVAL, "%s: %s was never initialised (fold_kv_init)", op,
                          fold__kv_keyname(kv, keys[i], kb, sizeof kb));
    if (bufs[i] == NULL)
      return fold__kv_err(kv, FOLD_EINVAL, "%s: %s: %s[%d] is NULL", op, fold__kv_keyname(kv, keys[i], kb, sizeof kb),
                          what, i);
  }
  return fold__kv_failed(kv);
}

int fold_kv_push(fold_kv *kv, int n, const int64_t *keys, const void *const *values, int priority) {
  if (kv == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_kv_push: kv is NULL");
  if (in_updater(kv, "fold_kv_push")) return FOLD_EINVAL;
  int rc = check_ops(kv, "fold_kv_push", n, keys, values, "values");
  if (rc) return rc;
  if (kv->w == NULL) return fold__kv_local_push(kv, n, keys, values);
  fold__enter(kv->c);
  rc = fold__kv_worker_push(kv, n, keys, values, priority);
  fold__leave(kv->c);
  return rc ? rc : fold__kv_failed(kv);
}

int fold_kv_pull(fold_kv *kv, int n, const int64_t *keys, void *const *outs, int priority) {
  if (kv == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_kv_pull: kv is NULL");
  if (in_updater(kv, "fold_kv_pull")) return FOLD_EINVAL;
  int rc = check_ops(kv, "fold_kv_pull", n, keys, (const void *const *)outs, "outs");
  if (rc) return rc;
  if (kv->w == NULL) return fold__kv_local_pull(kv, n, keys, outs);
  fold__enter(kv->c);
  rc = fold__kv_worker_pull(kv, n, keys, outs, priority);
  fold__leave(kv->c);
  return rc ? rc : fold__kv_failed(kv);
}

int fold_kv_pushpull(fold_kv *kv, int n, const int64_t *keys, const void *const *values, void *const *outs,
                     int priority) {
  if (kv == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_kv_pushpull: kv is NULL");
  if (in_updater(kv, "fold_kv_pushpull")) return FOLD_EINVAL;
  int rc = check_ops(kv, "fold_kv_pushpull", n, keys, values, "values");
  if (rc == FOLD_OK) rc = check_ops(kv, "fold_kv_pushpull", n, keys, (const void *const *)outs, "outs");
  if (rc) return rc;
  if (kv->w == NULL) {
    if ((rc = fold__kv_local_push(kv, n, keys, values)) != FOLD_OK) return rc;
    return fold__kv_local_pull(kv, n, keys, outs);
  }
  fold__enter(kv->c);
  rc = fold__kv_worker_pushpull(kv, n, keys, values, outs, priority);
  fold__leave(kv->c);
  return rc ? rc : fold__kv_failed(kv);
}

int fold_kv_wait(fold_kv *kv) {
  if (kv == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_kv_wait: kv is NULL");
  if (in_updater(kv, "fold_kv_wait")) return FOLD_EINVAL;
  if (kv->s) return fold__kv_err(kv, FOLD_EINVAL, "fold_kv_wait: rank %d is a server", kv->c->rank);
  if (kv->w == NULL) return FOLD_OK; /* the local store completes every call at once */
  fold__enter(kv->c);
  int rc = fold__kv_worker_wait(kv, "fold_kv_wait");
  if (rc) rc = fold__kv_failed(kv) ? fold__kv_failed(kv) : rc;
  if (rc == FOLD_ETIMEDOUT) fold__kv_worker_stall_note(kv, "fold_kv_wait"); /* name the worker, not the server */
  fold__leave(kv->c);
  return rc;
}

int fold_kv_barrier(fold_kv *kv) {
  if (kv == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_kv_barrier: kv is NULL");
  if (in_updater(kv, "fold_kv_barrier")) return FOLD_EINVAL;
  if (kv->s) return fold__kv_err(kv, FOLD_EINVAL, "fold_kv_barrier: rank %d is a server", kv->c->rank);
  if (kv->w == NULL) return FOLD_OK;
  fold__enter(kv->c);
  int rc = fold__kv_worker_barrier(kv);
  fold__leave(kv->c);
  return rc ? (fold__kv_failed(kv) ? fold__kv_failed(kv) : rc) : FOLD_OK;
}
