/* ext.c — the engine's per-communicator state, extension slots with teardown hooks, and the layers every communicator gets. */
#include <stdlib.h>

#include "engine/engine.h"

struct fold__ext_slot {
  fold__list link; /* svc->slots */
  const void *key;
  void *ptr;
  void (*teardown)(void *ptr);
};

/* The well-known slots are keyed slots whose keys are these bytes; the
 * array fold__svc.slot mirrors them for the lookup. */
static const char slot_keys[FOLD__SLOT_COUNT];

static void slot_forget(fold_comm *c, const void *key) {
  for (int i = 0; i < FOLD__SLOT_COUNT; i++)
    if (key == &slot_keys[i]) c->svc->slot[i] = NULL;
}

int fold__ext_attach(fold_comm *c, const void *key, void *ptr, void (*teardown)(void *ptr)) {
  if (key == NULL)
    return fold__error(c, FOLD_EINVAL, "rank %d: extension slot with a NULL key", c->rank);
  FOLD__LIST_FOR_EACH(struct fold__ext_slot, s, &c->svc->slots, link)
    if (s->key == key)
      return fold__error(c, FOLD_EINVAL, "rank %d: extension slot %p is already attached", c->rank, key);
  struct fold__ext_slot *s = malloc(sizeof *s);
  if (s == NULL) return fold__error(c, FOLD_ENOMEM, "rank %d: out of memory for an extension slot", c->rank);
  s->key = key;
  s->ptr = ptr;
  s->teardown = teardown;
  fold__list_push_front(&c->svc->slots, &s->link); /* newest first: teardown runs in reverse order of attachment */
  return FOLD_OK;
}

void *fold__ext_get(const fold_comm *c, const void *key) {
  FOLD__LIST_FOR_EACH(const struct fold__ext_slot, s, &c->svc->slots, link)
    if (s->key == key) return s->ptr;
  return NULL;
}

void *fold__ext_detach(fold_comm *c, const void *key) {
  slot_forget(c, key);
  FOLD__LIST_FOR_EACH(struct fold__ext_slot, s, &c->svc->slots, link) {
    if (s->key != key) continue;
    fold__list_unlink(&s->link);
    void *ptr = s->ptr;
    free(s);
    return ptr;
  }
  return NULL;
}

int fold__slot_attach(fold_comm *c, fold__slot_id id, void *ptr, void (*teardown)(void *ptr)) {
  int rc = fold__ext_attach(c, &slot_keys[id], ptr, teardown);
  if (rc == FOLD_OK) c->svc->slot[id] = ptr;
  return rc;
}

int fold__slot_attach_new(fold_comm *c, fold__slot_id id, size_t size, void (*teardown)(void *ptr), const char *what,
                          void **out) {
  *out = NULL;
  void *p = calloc(1, size);
  if (p == NULL) return fold__error(c, FOLD_ENOMEM, "rank %d: out of memory for %s", c->rank, what);
  int rc = fold__slot_attach(c, id, p, teardown);
  if (rc != FOLD_OK) {
    free(p);
    return rc;
  }
  *out = p;
  return FOLD_OK;
}

void *fold__slot_detach(fold_comm *c, fold__slot_id id) {
  c->svc->slot[id] = NULL;
  return fold__ext_detach(c, &slot_keys[id]);
}

void fold__ext_teardown(fold_comm *c) {
  if (c->svc == NULL) return;
  /* one at a time from the head: a hook may detach other slots */
  for (fold__list *n; (n = fold__list_pop_front(&c->svc->slots)) != NULL;) {
    struct fold__ext_slot *s = FOLD__LIST_ENTRY(n, struct fold__ext_slot, link);
    slot_forget(c, s->key); /* a later hook finds a torn-down well-known slot empty */
    if (s->teardown) s->teardown(s->ptr);
    free(s);
  }
}

/* ---- the engine state and the layers every communicator has ------------------------ */

/* The engine's own layers that every communicator carries from its
 * creation, in order (they attach their state to slots; their teardown
 * hooks free it): the failure reports' handler (engine/fail.c). Layers
 * above the engine attach theirs when the communicator layer makes a
 * communicator (selection: comm/comm.c), capabilities when they are
 * created. */
static int (*const layers[])(fold_comm *c) = {
    fold__report_init,
};

/* A zeroed fold__svc with empty lists, or NULL. */
static struct fold__svc *svc_new(void) {
  struct fold__svc *s = calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  fold__list_init(&s->timers);
  fold__list_init(&s->slots);
  fold__list_init(&s->handlers);
  fold__list_init(&s->sinks);
  fold__list_init(&s->watchers);
  return s;
}

int fold__svc_init(fold_comm *c) {
  c->svc = svc_new();
  if (c->svc == NULL) return fold__error(NULL, FOLD_ENOMEM, "out of memory allocating a communicator");
  fold__inject_delay_init(c);
  for (size_t i = 0; i < sizeof layers / sizeof *layers; i++) {
    int rc = layers[i](c);
    if (rc < 0) return rc;
  }
  return FOLD_OK;
}

int fold__svc_init_child(fold_comm *k, const fold_comm *parent) {
  k->svc = svc_new();
  if (k->svc == NULL) return fold__error(NULL, FOLD_ENOMEM, "out of memory allocating a communicator");
  k->svc->hooks = parent->svc->hooks; /* a simulated parent's child runs on virtual time too */
  k->svc->parent = parent;            /* its fold_comm_abort reaches k (fold__abort_asker) */
  return fold__report_init(k);
}

void fold__svc_free(fold_comm *c) {
  if (c->svc == NULL) return;
  fold__ext_teardown(c); /* normally done already, before the transports went */
  fold__handlers_free(c);
  free(c->svc);
  c->svc = NULL;
}
