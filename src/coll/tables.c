/* tables.c — every collective's algorithm table, indexed by fold__coll_kind. */
#include "coll/coll.h"

extern const fold__algo *const fold__broadcast_algos[],
    *const fold__reduce_algos[],
    *const fold__allreduce_algos[],
    *const fold__reduce_scatter_algos[],
    *const fold__allgather_algos[],
    *const fold__gather_algos[],
    *const fold__scatter_algos[],
    *const fold__alltoall_algos[],
    *const fold__barrier_algos[];

const fold__algo_table fold__algo_tables[FOLD__COLL_COUNT] = {
  {"broadcast", fold__broadcast_algos},
  {"reduce", fold__reduce_algos},
  {"allreduce", fold__allreduce_algos},
  {"reduce_scatter", fold__reduce_scatter_algos},
  {"allgather", fold__allgather_algos},
  {"gather", fold__gather_algos},
  {"scatter", fold__scatter_algos},
  {"alltoall", fold__alltoall_algos},
  {"barrier", fold__barrier_algos},
};
