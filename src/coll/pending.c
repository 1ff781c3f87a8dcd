/* pending.c — TEMPORARY weak placeholders for algorithms still being written; removed before landing. */
#include "coll/coll.h"

static int pending_init(fold__coll *co) {
  return fold__error(co->comm, FOLD_EINTERNAL, "%s: algorithm %s is not written yet", fold__coll_name(co->kind), co->algo->name);
}
static int pending_round(fold__coll *co, int k) { (void)co; (void)k; return 0; }
__attribute__((weak)) const fold__algo fold__broadcast_binomial = {"binomial", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__broadcast_scatter_allgather = {"scatter_allgather", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__broadcast_pipeline = {"pipeline", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__reduce_binomial = {"binomial", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__reduce_rabenseifner = {"rabenseifner", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__reduce_scatter_recursive_halving = {"recursive_halving", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__reduce_scatter_ring = {"ring", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__reduce_scatter_pairwise = {"pairwise", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__allgather_recursive_doubling = {"recursive_doubling", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__allgather_bruck = {"bruck", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__allgather_ring = {"ring", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__gather_binomial = {"binomial", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__gather_linear = {"linear", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__scatter_binomial = {"binomial", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__scatter_linear = {"linear", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__alltoall_pairwise = {"pairwise", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__alltoall_bruck = {"bruck", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__barrier_dissemination = {"dissemination", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__allreduce_reduce_bcast = {"reduce_bcast", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__allreduce_rabenseifner = {"rabenseifner", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__allreduce_ring_segmented = {"ring_segmented", pending_init, pending_round, 0};
__attribute__((weak)) const fold__algo fold__allreduce_direct = {"direct", pending_init, pending_round, 0};
