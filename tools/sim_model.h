/* sim_model.h — the alpha-beta-gamma cost of each collective algorithm, as fold-sim
 * prints it next to the simulated time and tests/sim/sim_coll.c checks it. */
#ifndef FOLD_SIM_MODEL_H
#define FOLD_SIM_MODEL_H

#include "fold.h"

/* Predicted seconds of collective `coll` ("allreduce", ...) with algorithm
 * `algo` on n ranks, `bytes` being the call's count in bytes (a rank's
 * block for allgather, gather, scatter, reduce_scatter and alltoall; the
 * whole vector otherwise), under p's latency (alpha), byte_time (beta) and
 * op_time (gamma). The formulas are those of the algorithms' "Cost:"
 * comments (src/coll/<coll>/<coll>_<algo>.c), in the simulator's variant
 * where a rank's back-to-back sends overlap their latencies. op_overhead,
 * the mismatch check's signature message and per-rank parameters are not
 * modelled. NAN when there is no model (an unknown or "auto" algorithm). */
double fold__model_time(const char *coll, const char *algo, int n, double bytes, const fold_sim_params *p);

#endif /* FOLD_SIM_MODEL_H */
