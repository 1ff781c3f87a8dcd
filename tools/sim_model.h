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

/* The same on hosts x ppn ranks (fold_sim_set_hosts: ranks contiguous, or
 * round robin: rank r on host r % hosts), host the link inside a host and
 * net the network between them, whose NIC a host's ranks share. Modelled:
 * allreduce ring (the longer of its critical path, 2(n-1) hops of their
 * class, and the busiest NIC's bytes) and recursive_doubling for powers of two (log2 ppn rounds
 * inside hosts, log2 hosts rounds where all ppn ranks of a host cross,
 * overlapping: the longer of their latencies and the NIC's bytes).
 * NAN otherwise. */
double fold__model_time_hosts(const char *coll, const char *algo, int hosts, int ppn, int roundrobin, double bytes,
                              const fold_sim_params *host, const fold_sim_params *net);

/* hier (docs/hierarchy.md) on hosts x ppn ranks: the sum of its phases,
 * each the model of its child's algorithm: for allreduce reduce
 * (host_first) on ppn ranks over the host link, allreduce (net_algo) on
 * the hosts' leaders over the network, one rank per NIC, and broadcast
 * (host_back) on ppn ranks; broadcast, reduce and barrier their own
 * collective in each phase. Any layout: a host's ranks share its host link
 * model whether contiguous or round robin. NAN where a phase has no model. */
double fold__model_time_hier(const char *coll, int hosts, int ppn, double bytes, const char *host_first,
                             const char *net_algo, const char *host_back, const fold_sim_params *host,
                             const fold_sim_params *net);

#endif /* FOLD_SIM_MODEL_H */
