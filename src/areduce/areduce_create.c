/* areduce_create.c — fold_areduce_create: argument checks, the new reduction, the ranks' agreement check. */
#include "areduce/areduce.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "comm/comm.h"
#include "op/op.h"

/* ---- the agreement check ----------------------------------------------------- */

enum { F_BAD, F_COUNT, F_DTYPE, F_OP, F_TARGET, F_DEGREE, F_MODE, F_N };
static const char *const field_name[F_N] = {"", "count", "dtype", "op", "target", "degree", "mode"};

int fold__ar_check_verdict(fold_comm *c, const int64_t *sig, int bad_here) {
  if (sig[2 * F_BAD] > 0) {
    if (bad_here)
      return FOLD_EINVAL; /* the message naming the argument is set already */
    return fold__error(c, FOLD_EINVAL, "fold_areduce_create: rank %d: rank %lld passed an invalid argument", c->rank,
                       (long long)(INT64_MAX - sig[2 * F_BAD]));
  }
  for (int f = 1; f < F_N; f++)
    if (sig[2 * f] != -sig[2 * f + 1])
      return fold__error(c, FOLD_EMISMATCH, "fold_areduce_create: rank %d: ranks disagree on %s (from %lld to %lld)",
                         c->rank, field_name[f], (long long)-sig[2 * f + 1], (long long)sig[2 * f]);
  return FOLD_OK;
}

/* ---- creation --------------------------------------------------------------- */

static int check_args(fold_comm *c, size_t count, fold_dtype dtype, fold_op op, int target, int degree,
                      fold_areduce_mode mode, double t_wait, fold_areduce **ar) {
  const char *fn = "fold_areduce_create";
  if (ar == NULL)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: ar is NULL", fn, c->rank);
  if (fold_dtype_size(dtype) == 0)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: dtype %d is not a valid type", fn, c->rank, (int)dtype);
  if (count > SIZE_MAX / 2 / fold_dtype_size(dtype))
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: count %zu is too large", fn, c->rank, count);
  int rc = fold__op_check(c, fold__op_table_of(c), fn, op, dtype);
  if (rc)
    return rc;
  if (op == FOLD_SUM_EXACT && count > SIZE_MAX / 2 / fold__exact_acc_size(dtype))
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: count %zu is too large for sum_exact's accumulators", fn, c->rank,
                       count);
  if (!fold__op_commutative(fold__op_table_of(c), op))
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: the op is not commutative (fragments combine in arrival order)",
                       fn, c->rank);
  if (target < 0 || target >= c->size)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: target %d is not a rank of %d", fn, c->rank, target, c->size);
  if (degree < 1)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: degree is %d (at least 1)", fn, c->rank, degree);
  if (mode != FOLD_AREDUCE_FULL && mode != FOLD_AREDUCE_PARTIAL)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: mode %d is neither FOLD_AREDUCE_FULL nor FOLD_AREDUCE_PARTIAL",
                       fn, c->rank, (int)mode);
  if (mode == FOLD_AREDUCE_PARTIAL && !(isfinite(t_wait) && t_wait > 0 && t_wait < 9e9))
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: t_wait %g s is not a positive number of seconds (partial mode)",
                       fn, c->rank, t_wait);
  return FOLD_OK;
}

static fold_areduce *ar_new(fold_comm *c, fold__ar_reg *reg, size_t count, fold_dtype dtype, fold_op op, int target,
                            int degree, fold_areduce_mode mode, double t_wait) {
  fold_areduce *ar = calloc(1, sizeof *ar);
  if (ar == NULL)
    return NULL;
  ar->c = c;
  ar->reg = reg;
  ar->count = count;
  ar->dtype = dtype;
  ar->op = op;
  /* FOLD_SUM_EXACT: the local result, and what travels, are accumulators;
   * each fragment converts on contribute, the target rounds on reading */
  ar->bytes = count * (op == FOLD_SUM_EXACT ? fold__exact_acc_size(dtype) : fold_dtype_size(dtype));
  ar->target = target;
  ar->degree = degree;
  ar->mode = mode;
  ar->t_wait_ns = mode == FOLD_AREDUCE_PARTIAL ? (int64_t)(t_wait * 1e9 + 0.5) : 0;
  if (ar->t_wait_ns < 1 && mode == FOLD_AREDUCE_PARTIAL)
    ar->t_wait_ns = 1;
  int maxch = degree < c->size - 1 ? degree : c->size - 1;
  ar->children = malloc((size_t)(maxch > 0 ? maxch : 1) * sizeof *ar->children);
  ar->child_done = calloc((size_t)(maxch > 0 ? maxch : 1), 1);
  ar->local = malloc(ar->bytes ? ar->bytes : 1);
  if (op == FOLD_SUM_EXACT) ar->exact_tmp = malloc(ar->bytes ? ar->bytes : 1);
  ar->task.req = fold__req_new(c, FOLD__REQ_TASK);
  if (!ar->children || !ar->child_done || !ar->local || !ar->task.req || (op == FOLD_SUM_EXACT && !ar->exact_tmp)) {
    fold__ar_free(ar);
    return NULL;
  }
  fold__areduce_tree(c->size, target, degree, c->rank, &ar->parent, ar->children, &ar->nchildren);
  fold__ar_hook(ar);
  return ar;
}

static int create(fold_comm *c, size_t count, fold_dtype dtype, fold_op op, int target, int degree,
                  fold_areduce_mode mode, double t_wait, fold_areduce **out) {
  int bad = check_args(c, count, dtype, op, target, degree, mode, t_wait, out) != FOLD_OK;
  if (out) *out = NULL;
  fold__ar_reg *reg = fold__ar_reg_get(c);
  if (reg == NULL)
    return fold__error(c, FOLD_ENOMEM, "fold_areduce_create: rank %d: out of memory", c->rank);
  uint32_t id = reg->next_id++ & 0x3fffffff; /* every rank counts every call alike */
  fold_areduce *ar = NULL;
  if (!bad) {
    if ((ar = ar_new(c, reg, count, dtype, op, target, degree, mode, t_wait)) == NULL)
      return fold__error(c, FOLD_ENOMEM, "fold_areduce_create: rank %d: out of memory", c->rank);
    ar->id = id;
    /* live before the check: a child that passed it may send at once */
    fold__list_push_front(&reg->live, &ar->link);
  }
  int64_t *mine = ar ? ar->mine : reg->sink_mine;
  int64_t v[F_N] = {bad ? INT64_MAX - c->rank : 0, (int64_t)count, (int64_t)dtype, (int64_t)op, target, degree, mode};
  for (int f = 0; f < F_N; f++) {
    mine[2 * f] = v[f];
    mine[2 * f + 1] = -v[f];
  }
  int64_t *sig = ar ? ar->sig : reg->sink_sig;
  fold_request *chk = NULL;
  int rc = fold_iallreduce(mine, sig, 14, FOLD_INT64, FOLD_MAX, c, &chk);
  if (rc == FOLD_OK && bad && fold__engine_virtual(c))
    return FOLD_EINVAL; /* the others learn it from the check; its request goes with the communicator */
  if (rc == FOLD_OK && !fold__engine_virtual(c)) {
    /* real transports (or a bad argument here): the answer now */
    rc = fold_wait(chk);
    chk = NULL;
    if (rc == FOLD_OK)
      rc = fold__ar_check_verdict(c, sig, bad);
  }
  if (rc != FOLD_OK) {
    if (chk) fold_wait(chk);
    if (ar) {
      fold__list_unlink(&ar->link);
      fold__ar_free(ar);
    }
    return rc;
  }
  /* the simulator: ranks live in one thread, so the check completes
   * later; the task gives its verdict (fold_areduce_wait returns it) */
  ar->check = chk;
  /* Step the check from this task instead of the engine's list: in the
   * simulator nothing would step this task again after the check
   * completes in a pass that stepped this task first. */
  if (chk)
    fold__task_cancel(c, chk->task);
  if (mode == FOLD_AREDUCE_PARTIAL && ar->parent >= 0)
    fold__timer_arm_in(c, &ar->timer, ar->t_wait_ns);
  fold__task_start(c, &ar->task);
  *out = ar;
  return FOLD_OK;
}

int fold_areduce_create(fold_comm *comm, size_t count, fold_dtype dtype, fold_op op, int target, int degree,
                        fold_areduce_mode mode, double t_wait, fold_areduce **ar) {
  if (ar) *ar = NULL;
  int rc = fold__check_comm(comm);
  if (rc)
    return rc;
  if ((rc = fold__comm_failed(comm)))
    return rc;
  fold__enter(comm);
  rc = create(comm, count, dtype, op, target, degree, mode, t_wait, ar);
  fold__leave(comm);
  return rc;
}
