/* store_cb.c — a rendezvous store made of the user's callbacks (fold_comm_init_store), e.g. torch's c10d::Store. */
#include <stdlib.h>
#include <string.h>

#include "bootstrap/store.h"
#include "core/internal.h"

typedef struct cb_store {
  fold__store base; /* first: the ops get a fold__store * */
  fold_store_callbacks cb;
  void *ctx;
} cb_store;

/* Seconds left until deadline_ns; 0 (look once) when it has passed. */
static double left_s(int64_t deadline_ns) {
  int64_t now = fold__clock_mono(NULL);
  return deadline_ns > now ? (double)(deadline_ns - now) / 1e9 : 0.0;
}

/* A callback's return value as a status: anything negative that is not one
 * of ours is an operating-system style failure; positive values are success
 * only when 0 (a callback must not report "sort of"). */
static int status_of(const char *what, const char *key, int rc) {
  if (rc == 0)
    return 0;
  int code = rc < 0 && rc >= FOLD_EINTERNAL ? rc : FOLD_ESYS;
  return fold__error(NULL, code, "store callback %s(\"%s\") failed: %d (%s)", what, key, rc, fold_strerror(code));
}

static int cb_set(fold__store *s, const char *key, const void *val, size_t len, int64_t dl) {
  cb_store *c = (cb_store *)s;
  (void)dl;
  return status_of("set", key, c->cb.set(c->ctx, key, val, len));
}

static int cb_get(fold__store *s, const char *key, void *buf, size_t cap, size_t *len, int64_t dl) {
  cb_store *c = (cb_store *)s;
  *len = 0;
  int rc = c->cb.get(c->ctx, key, buf, cap, len, left_s(dl));
  /* Reaching the deadline is the caller's to explain (it names the
   * missing ranks): no message, as the other stores do. */
  if (rc == FOLD_ETIMEDOUT)
    return rc;
  return status_of("get", key, rc);
}

static int cb_add(fold__store *s, const char *key, int64_t delta, int64_t *total, int64_t dl) {
  cb_store *c = (cb_store *)s;
  (void)dl;
  *total = 0;
  return status_of("add", key, c->cb.add(c->ctx, key, delta, total));
}

static int cb_del(fold__store *s, const char *key, int64_t dl) {
  cb_store *c = (cb_store *)s;
  (void)dl;
  return c->cb.del ? status_of("del", key, c->cb.del(c->ctx, key)) : 0;
}

static void cb_close(fold__store *s) { free(s); }

static const fold__store_ops cb_ops = {cb_set, cb_get, cb_add, cb_del, cb_close};

int fold__store_cb_open(const fold_store_callbacks *cb, void *ctx, fold__store **out) {
  *out = NULL;
  if (cb == NULL || cb->set == NULL || cb->get == NULL || cb->add == NULL)
    return fold__error(NULL, FOLD_EINVAL, "store callbacks: %s is NULL",
                       cb == NULL ? "cb" : cb->set == NULL ? "set" : cb->get == NULL ? "get" : "add");
  cb_store *c = calloc(1, sizeof *c);
  if (c == NULL)
    return fold__error(NULL, FOLD_ENOMEM, "out of memory opening a callback store");
  c->base.ops = &cb_ops;
  c->base.kind = FOLD__STORE_CB;
  c->cb = *cb;
  c->ctx = ctx;
  *out = &c->base;
  return 0;
}
