/* comm.c — communicator allocation, destruction, abort and accessors; user ops (fold_op_create) on a communicator. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll/coll.h"
#include "comm/comm.h"
#include "core/internal.h"
#include "engine/engine.h"
#include "engine/family.h"
#include "op/op.h"
#include "select/select.h"
#include "transport/transport.h"
#include "transport/sim/sim.h"

static int comm_alloc(int rank, int size, int peer_table, uint8_t *zero_lost, fold_comm **out) {
  *out = NULL;
  if (size < 1 || rank < 0 || rank >= size)
    return fold__error(NULL, FOLD_EINVAL, "rank %d is not in [0, %d)", rank, size);
  fold_comm *c = calloc(1, sizeof *c);
  if (c == NULL)
    return fold__error(NULL, FOLD_ENOMEM, "out of memory allocating a communicator");
  c->rank = rank;
  c->size = size;
  fold__comm_queues_init(c);
  /* Threads of one process share a host; fold_comm_init and the simulator
   * set their own view. */
  c->local_rank = rank;
  c->local_size = size;
  c->nhosts = 1;
  c->max_ppn = size;
  c->peer_tp = peer_table ? calloc((size_t)size, sizeof *c->peer_tp) : NULL;
  c->lost = zero_lost ? zero_lost : calloc((size_t)size, 1);
  c->lost_shared = zero_lost != NULL;
  if ((peer_table && c->peer_tp == NULL) || c->lost == NULL) {
    free(c->peer_tp);
    if (!c->lost_shared) free(c->lost);
    free(c);
    return fold__error(NULL, FOLD_ENOMEM, "out of memory allocating a communicator of %d ranks", size);
  }
  c->timeout_ns = fold__env_timeout_ns();
  c->log_level = fold__log_level_env();
  c->clock = fold__clock_mono;
  /* the engine's services (failure reports among them), then selection
   * and the collectives' state: each layer registers its teardown */
  int rc = fold__svc_init(c);
  if (rc == FOLD_OK) rc = fold__select_init(c);
  if (rc == FOLD_OK) rc = fold__coll_state_init(c);
  if (rc == FOLD_OK) rc = fold__op_table_attach(c);
  if (rc < 0) {
    fold__comm_free(c);
    return rc;
  }
  *out = c;
  return FOLD_OK;
}

int fold__comm_alloc(int rank, int size, fold_comm **out) { return comm_alloc(rank, size, 1, NULL, out); }

int fold__comm_alloc_one_tp(int rank, int size, uint8_t *zero_lost, fold_comm **out) {
  return comm_alloc(rank, size, 0, zero_lost, out);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

void fold__comm_set_layout(fold_comm *c, const uint64_t *host, int n) {
  int same = 1; /* the usual case first: one host */
  for (int i = 1; i < n && same; i++) same = host[i] == host[0];
  if (same) {
    c->nhosts = 1, c->max_ppn = n;
    return;
  }
  uint64_t *s = malloc((size_t)n * sizeof *s);
  if (s == NULL) return;
  memcpy(s, host, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_u64);
  int hosts = 0, most = 0;
  for (int i = 0, run = 0; i < n; i++) {
    run = i > 0 && s[i] == s[i - 1] ? run + 1 : 1;
    hosts += run == 1;
    if (run > most) most = run;
  }
  free(s);
  c->nhosts = hosts, c->max_ppn = most;
}

int fold__comm_add_tp(fold_comm *c, fold__tp *tp) {
  if (c->ntps >= FOLD__TP_MAX)
    return fold__error(c, FOLD_EINTERNAL, "too many transports on one communicator");
  tp->comm = c;
  c->tps[c->ntps++] = tp;
  return FOLD_OK;
}

void fold__comm_free(fold_comm *c) {
  if (c == NULL)
    return;
  if (c->fam)
    fold__fam_free(c);
  fold__comm_drop_queues(c);
  /* layers' state (the collective cache, selection rules, extensions),
   * newest first, while the transports are still there */
  fold__ext_teardown(c);
  if (c->wait_ep > 0)
    close(c->wait_ep - 1);
  for (int i = c->ntps - 1; i >= 0; i--)
    c->tps[i]->ops->destroy(c->tps[i]);
  free(c->peer_tp);
  if (!c->lost_shared) free(c->lost);
  fold__lost_notes_free(c);
  free(c->poison);
  fold__svc_free(c);
  free(c);
}

int fold_comm_destroy(fold_comm *comm) {
  if (comm == NULL)
    return FOLD_OK;
  fold__log_flush(); /* no repeat count held back goes unsaid */
  if (comm->fam) /* a comm with sub-communicators, or one of them (comm/comm_split.c) */
    return fold__fam_destroy(comm);
  if (fold__engine_virtual(comm)) /* the simulator owns its communicators */
    return fold__sim_comm_destroy(comm);
  fold__pthread_stop(comm); /* joined: nothing touches comm any more */
  fold__comm_free(comm);
  return FOLD_OK;
}

int fold_comm_abort(fold_comm *comm) {
  if (comm == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_comm_abort: communicator is NULL");
  /* Any thread may call this; the owner thread turns it into a failure at
   * its next progress (waits sleep at most a few tens of ms at a time). */
  atomic_store_explicit(&comm->abort_req, 1, memory_order_release);
  return FOLD_OK;
}

const char *fold_comm_last_error(const fold_comm *comm) {
  /* the progress thread may record an error (a lost peer): read after it */
  fold__enter(comm);
  fold__leave(comm);
  return comm ? comm->last_error : fold__pre_comm_error();
}

int fold_comm_rank(const fold_comm *comm) { return comm ? comm->rank : FOLD_EINVAL; }

int fold_comm_size(const fold_comm *comm) { return comm ? comm->size : FOLD_EINVAL; }

int fold_comm_local_rank(const fold_comm *comm) { return comm ? comm->local_rank : FOLD_EINVAL; }

int fold_comm_local_size(const fold_comm *comm) { return comm ? comm->local_size : FOLD_EINVAL; }

static void op_table_teardown(void *p) {
  fold__op_table *t = p;
  free(t->ops);
  free(t->tmp);
  free(t);
}

int fold__op_table_attach(fold_comm *c) {
  void *t;
  return fold__slot_attach_new(c, FOLD__SLOT_OPS, sizeof(fold__op_table), op_table_teardown, "the user op table", &t);
}

int fold__op_table_sync(fold_comm *k, const fold_comm *c) {
  fold__op_table *kt = fold__op_table_of(k);
  const fold__op_table *ct = fold__op_table_of(c);
  if (ct == NULL || ct->n == 0 || (kt && kt->n >= ct->n)) return FOLD_OK;
  if (kt == NULL) return FOLD_ENOMEM; /* k was made without one: out of memory then */
  fold__user_op *ops = realloc(kt->ops, (size_t)ct->n * sizeof *ops);
  if (ops == NULL) return FOLD_ENOMEM;
  memcpy(ops, ct->ops, (size_t)ct->n * sizeof *ops);
  kt->ops = ops;
  kt->n = ct->n;
  return FOLD_OK;
}

static int op_create(fold_op *op, void (*fn)(void *, const void *, size_t, fold_dtype, void *), void *ctx,
                     int commutative, fold_comm *comm) {
  if (comm == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_op_create: communicator is NULL");
  if (op == NULL || fn == NULL)
    return fold__error(comm, FOLD_EINVAL, "fold_op_create: rank %d: %s is NULL", comm->rank, op ? "fn" : "op");
  fold__op_table *t = fold__op_table_of(comm);
  fold__user_op *ops = t ? realloc(t->ops, (size_t)(t->n + 1) * sizeof *ops) : NULL;
  if (ops == NULL) return fold__error(comm, FOLD_ENOMEM, "fold_op_create: out of memory");
  t->ops = ops;
  ops[t->n] = (fold__user_op){fn, ctx, commutative != 0};
  *op = (fold_op)(FOLD_OP_BUILTIN_COUNT + t->n++);
  return FOLD_OK;
}

/* fold_op_create (include/fold.h): a user op lives on its communicator, so the
 * call is the communicator layer's (op.c, below the engine, only runs the ops).
 * The progress thread's reductions read the table: held against it. */
int fold_op_create(fold_op *op, void (*fn)(void *, const void *, size_t, fold_dtype, void *), void *ctx,
                   int commutative, fold_comm *comm) {
  fold__enter(comm);
  int rc = op_create(op, fn, ctx, commutative, comm);
  fold__leave(comm);
  return rc;
}
