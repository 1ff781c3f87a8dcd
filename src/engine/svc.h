/* svc.h — the engine's per-communicator state (struct fold__svc) and the extension slots layers keep theirs in (engine/ext.c). */
#ifndef FOLD_ENGINE_SVC_H
#define FOLD_ENGINE_SVC_H

#include "engine/progress.h"
#include "engine/timer.h"
#include "engine/time.h"

/* ---- extension slots (engine/ext.c) ------------------------------------------------
 * Long-lived state of a layer (the collective cache, selection rules, an
 * asynchronous reduction, a store, a queue) hangs off a communicator
 * through a slot named by a key (the address of a static in the layer), not
 * through a field of struct fold_comm. When the communicator is destroyed,
 * the teardown hooks run in the reverse order of attachment, after the
 * user's pending requests are dropped and before the transports go (a hook
 * must not communicate). Few slots per communicator: a list. */
/* Attach ptr under key with teardown (may be NULL: nothing to free).
 * FOLD_EINVAL if key is NULL or already attached, FOLD_ENOMEM. */
int fold__ext_attach(fold_comm *c, const void *key, void *ptr, void (*teardown)(void *ptr));
/* The pointer attached under key, or NULL. */
void *fold__ext_get(const fold_comm *c, const void *key);
/* Remove key's slot without running its teardown; returns its pointer (or
 * NULL if key is not attached). */
void *fold__ext_detach(fold_comm *c, const void *key);
/* Run every teardown hook, newest first, and empty the slots (comm.c, when
 * the communicator is freed). */
void fold__ext_teardown(fold_comm *c);

/* Well-known slots: the state of the layers every communicator has and
 * every collective call reads (selection's choices, the collectives' state,
 * the user ops), found by index in one load instead of by a walk of the
 * list. They are slots like the others (the same teardown, newest first,
 * among the keyed ones); only the lookup differs. The engine knows their
 * numbers, not their types: each layer declares its own. */
typedef enum {
  FOLD__SLOT_SELECT, /* select/select.h: fold__selection */
  FOLD__SLOT_COLL,   /* coll/coll.h: fold__coll_state */
  FOLD__SLOT_OPS,    /* op/op.h: fold__op_table, attached by comm/comm.c */
  FOLD__SLOT_COUNT
} fold__slot_id;
/* fold__ext_attach/detach for slot id (FOLD_EINVAL if it is attached). */
int fold__slot_attach(fold_comm *c, fold__slot_id id, void *ptr, void (*teardown)(void *ptr));
/* A zeroed state of `size` bytes in slot id, to *out, freed by teardown
 * (which must free it) when the communicator goes. FOLD_OK, or FOLD_ENOMEM
 * ("rank R: out of memory for <what>") or the attach's error, *out NULL. */
int fold__slot_attach_new(fold_comm *c, fold__slot_id id, size_t size, void (*teardown)(void *ptr), const char *what,
                          void **out);
void *fold__slot_detach(fold_comm *c, fold__slot_id id);

/* ---- the engine's per-communicator state (engine/ext.c) ---------------------------- */
struct fold__ext_slot;
struct fold__handler;
struct fold__sink;
struct fold__svc {
  fold__list timers;              /* fold__timer.link: armed, sorted by (due, seq) */
  uint64_t timer_seq;             /* last arming number handed out */
  const fold__clock_hooks *hooks; /* NULL: real time */
  int64_t inject_delay_ns;        /* FOLD_INJECT_DELAY for this rank */
  fold__list slots;               /* struct fold__ext_slot: newest first */
  fold__list handlers;            /* struct fold__handler: few, a list */
  fold__list sinks;               /* struct fold__sink: dropped rendezvous messages being drained */
  const fold__unexp *cur;         /* the message a handler is being called for */
  int handlers_pending;           /* a handled message may be queued */
  int in_handlers;                /* fold__handlers_run is on the stack */
  /* idle polls (fold__idle_pause): when the current stretch of idle poll
   * passes began (0: the last pass did something), whether the last pass
   * yielded (a wait's spin then does not yield again), how many yields */
  int64_t idle_since;
  int idle_yielded;
  uint64_t idle_yields;
  /* the last progress pass left its tasks work they can do at once: its
   * flush wrote held sends (they completed after the tasks stepped), or a
   * receive posted in it took a message already here (fold__recv_post),
   * so a task returned waiting on a request that is complete. A wait must
   * not sleep before the next pass lets the tasks see them. */
  int pass_again;
  /* the task whose first step fold__task_start runs (not yet listed in
   * c->tasks): a failure report counts it among the pending calls */
  fold__task *starting;
  fold__list watchers;     /* fold__watch.link: started, newest first */
  fold__list *watch_next;  /* the node of the next one the running pass calls */
  /* 1 + a peer whose failure report fails this rank's collectives from
   * call number coll_told_from on (0: none; engine/fail.c) */
  int coll_told;
  uint32_t coll_told_from;
  /* the first call a peer's report of a mismatch (c->poison) failed
   * (engine/fail.c, fold__poison_due) */
  uint32_t poison_from;
  /* the communicator this one was split or duplicated from (NULL: a
   * family's root); a destroyed one's children take its parent
   * (fold__fam_reparent) */
  const fold_comm *parent;
  /* the next collective call's number (the start takes it; the failure
   * reports name the first failed one from it) */
  uint32_t coll_seq;
  void *slot[FOLD__SLOT_COUNT]; /* the well-known slots' pointers (NULL: not attached) */
};
/* The pointer attached in well-known slot id, or NULL. */
static inline void *fold__slot_get(const fold_comm *c, fold__slot_id id) { return c->svc->slot[id]; }
/* (declared in engine/time.h) */
static inline int fold__engine_virtual(const fold_comm *c) { return c->svc->hooks != NULL; }
/* fold_comm_abort reaches a communicator and everything split or
 * duplicated from it, at any depth: the engine's one rule for aborts. The
 * communicator whose abort c must act on (c itself, or the nearest of its
 * ancestors that was aborted), or NULL. Owner thread (the ancestors are
 * its family's, linked and unlinked by it); abort_req itself may be set by
 * any thread. */
static inline const fold_comm *fold__abort_asker(const fold_comm *c) {
  for (; c; c = c->svc->parent)
    if (atomic_load_explicit(&((fold_comm *)c)->abort_req, memory_order_acquire)) return c;
  return NULL;
}
/* fold__recv_post took u off the unexpected queue: if a handler is being
 * called for it, the handler consumed it. */
static inline void fold__handler_note_taken(fold_comm *c, const fold__unexp *u) {
  if (c->svc->cur == u) c->svc->cur = NULL;
}
/* Allocate c->svc and attach the engine layers every communicator has (the
 * failure reports' handler, FOLD_INJECT_DELAY).
 * FOLD_ENOMEM. */
int fold__svc_init(fold_comm *c);
/* The same for a sub-communicator k of parent (comm/comm_split.c): the
 * clock hooks and the failure reports' handler (the communicator layer
 * then gives it the parent's selection, fold__select_inherit).
 * FOLD_INJECT_DELAY is read once k knows its rank (fold__inject_delay_init). */
int fold__svc_init_child(fold_comm *k, const fold_comm *parent);
/* Free c->svc, after the transports are gone (drain buffers may be written
 * until then). */
void fold__svc_free(fold_comm *c);
/* The layers fold__svc_init attaches, and pieces of fold__svc_init/free. */
int fold__report_init(fold_comm *c);    /* engine/fail.c: the handler of FOLD__CTX_SYS */
void fold__inject_delay_init(fold_comm *c);
void fold__handlers_free(fold_comm *c);

#endif /* FOLD_ENGINE_SVC_H */
