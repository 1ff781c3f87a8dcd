/* coll_query.c — fold_comm_get_algo: the algorithm a collective call would run, chosen as fold__coll_start chooses. */
#include <string.h>

#include "coll/coll.h"
#include "comm/comm.h"
#include "op/op.h"
#include "select/select.h"

const char *fold_comm_get_algo(fold_comm *comm, const char *coll, size_t count, fold_dtype dtype, fold_op op) {
  if (fold__check_comm(comm)) return NULL;
  if (coll == NULL) {
    fold__error(comm, FOLD_EINVAL, "fold_comm_get_algo: rank %d: coll is NULL", comm->rank);
    return NULL;
  }
  int kind = fold__coll_index(coll, strlen(coll));
  if (kind < 0) {
    char known[128];
    fold__coll_names(known, sizeof known);
    fold__error(comm, FOLD_EINVAL, "fold_comm_get_algo: rank %d: unknown collective \"%s\" (known: %s)", comm->rank,
                coll, known);
    return NULL;
  }
  /* The same arguments fold__select gets from fold__coll_start (coll.c). */
  if (kind == FOLD__COLL_BARRIER) dtype = FOLD_UINT8, count = 0;
  size_t esize = fold_dtype_size(dtype);
  if (esize == 0) {
    fold__error(comm, FOLD_EINVAL, "fold_comm_get_algo: rank %d: invalid dtype %d", comm->rank, (int)dtype);
    return NULL;
  }
  int reduces = kind == FOLD__COLL_REDUCE || kind == FOLD__COLL_ALLREDUCE || kind == FOLD__COLL_REDUCE_SCATTER;
  int commutative = reduces ? fold__op_commutative(fold__op_table_of(comm), op) : 1;
  size_t wsize = reduces && op == FOLD_SUM_EXACT ? fold__exact_acc_size(dtype) : esize;
  if (wsize == 0) {
    fold__error(comm, FOLD_EINVAL, "fold_comm_get_algo: rank %d: sum_exact needs float32 or float64", comm->rank);
    return NULL;
  }
  if (count > SIZE_MAX / wsize) {
    fold__error(comm, FOLD_EINVAL, "fold_comm_get_algo: rank %d: count %zu overflows", comm->rank, count);
    return NULL;
  }
  const fold__algo *a = NULL;
  if (fold__select(comm, (fold__coll_kind)kind, count * wsize, wsize, commutative, &a, "fold_comm_get_algo")) return NULL;
  return a->name;
}
