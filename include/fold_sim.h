/* fold_sim.h — the simulated network (n ranks in one thread under a virtual
 * clock): part of fold.h (which includes it; include fold.h).
 * docs/simulator.md has the model and the experiments. */
#ifndef FOLD_PUBLIC_SIM_H
#define FOLD_PUBLIC_SIM_H

#include "fold.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- simulated network ------------------------------------------------- */
/* n ranks in one process and one thread under a virtual clock. A message of
 * b bytes posted at virtual time t leaves when the sender's outgoing link is
 * free, occupies it for b*byte_time (then the send completes), and arrives
 * latency + b*byte_time after it left, or b*byte_time after the previous
 * arrival at the receiver if that is later (Hockney / LogGP; full-duplex
 * links, each serialised on its own, a switch that buffers; docs/simulator.md).
 * Deterministic: the same program gives the same times.
 * Nonblocking calls started on every rank complete by running the simulator;
 * a blocking call (or fold_wait) on a simulated communicator runs the
 * simulator until that operation completes, and fold_test runs at most one
 * simulator event. */
typedef struct fold_sim fold_sim;

typedef struct fold_sim_params {
  double latency;    /* seconds per message (alpha), default 5e-6 */
  double byte_time;  /* seconds per byte (beta), default 8e-11 (12.5 GB/s) */
  double op_time;    /* seconds per byte reduced locally (gamma), default 0 */
  double op_overhead; /* seconds per local reduction call (the LuNA emulator's
                         T_op), on top of op_time * bytes; default 0 */
} fold_sim_params;

/* Fill *p with the defaults above. */
FOLD_API void fold_sim_params_default(fold_sim_params *p);

/* Create a simulated world of n ranks; comms[i] is rank i. params may be
 * NULL for the defaults. Returns FOLD_EINVAL for n < 1, a NULL sim or comms,
 * or params that are negative or not finite. */
FOLD_API int fold_sim_create(int n, const fold_sim_params *params, fold_sim **sim, fold_comm **comms);

/* Run the simulator until no event is left. Returns FOLD_OK, or
 * FOLD_ETIMEDOUT (with a message naming the stuck ranks) if operations are
 * still pending when nothing more can happen (a deadlock in the program);
 * FOLD_EINVAL for NULL or when called from inside a run (a user op). */
FOLD_API int fold_sim_run(fold_sim *sim);

/* Current virtual time in seconds. */
FOLD_API double fold_sim_time(const fold_sim *sim);

/* Destroy the simulator and all its communicators (callbacks not yet run
 * are dropped). NULL is ignored. Returns FOLD_OK, or FOLD_EINVAL (nothing
 * done) from inside a run. */
FOLD_API int fold_sim_destroy(fold_sim *sim);

/* This simulated rank computes for `seconds` of virtual time, from now or
 * from the end of the work it is already busy with:
 * busy = max(now, busy) + seconds. Meanwhile its sends (point-to-point and
 * a collective's) start no earlier than busy, its collectives' local
 * reductions are charged after it, and a blocking call on it returns no
 * earlier than busy. Messages to it still arrive (the NIC receives while the
 * CPU works): its receive requests complete at their arrival. Returns at
 * once without advancing the clock (the program goes on playing the other
 * ranks); fold_sim_run runs at least until busy. seconds = 0 does nothing.
 * Callable from a fold_sim_at callback. FOLD_EINVAL (with a message) for a
 * NULL or non-simulated comm, or seconds negative or not finite; the
 * communicator's failure status if it failed. */
FOLD_API int fold_sim_compute(fold_comm *comm, double seconds);

/* Call fn(arg) at virtual time t (seconds), as an event of the simulator:
 * fold_sim_run, or a blocking call that runs the simulator past t, calls it
 * after the events scheduled earlier for the same time. The callback may
 * start operations on any rank (nonblocking point-to-point and collectives,
 * fold_sim_compute, fold_sim_at, fold_sim_set_rank_params); they start at t.
 * It must not block (a blocking call from it fails its communicator with
 * FOLD_EINTERNAL). FOLD_EINVAL for a NULL sim or fn, or t earlier than
 * fold_sim_time(sim) or not finite ("in the past": time never goes back). */
FOLD_API int fold_sim_at(fold_sim *sim, double t, void (*fn)(void *arg), void *arg);

/* Give rank `rank` its own parameters (a slow node). A message from s to d
 * leaves over s's outgoing link at s's byte_time, enters d at d's
 * byte_time (and no sooner than its last byte left s plus the latency), and
 * its latency is the larger of s's and d's. op_time and op_overhead are
 * those of the rank that reduces. Applies to messages posted and reductions
 * charged from now on. FOLD_EINVAL for a NULL sim or p, a rank out of
 * range, or a parameter negative or not finite. */
FOLD_API int fold_sim_set_rank_params(fold_sim *sim, int rank, const fold_sim_params *p);

/* Group the ranks into `hosts` hosts, each with one network interface
 * (NIC) its ranks share. rank r is on host host_of_rank[r] (n entries, each
 * in [0, hosts), every host with at least one rank); host_of_rank NULL puts
 * them in contiguous blocks: rank r on host r * hosts / n (r / P for n =
 * hosts * P). From then on a message is timed by its class instead of the
 * ranks' parameters:
 *  - same host: host_link's latency and byte_time; it leaves over the
 *    sender's own link to the host and enters over the receiver's (each
 *    rank sends one host message at a time and receives one at a time);
 *  - other host: net_link's latency and byte_time; it leaves over the
 *    sending host's NIC and enters over the receiving host's NIC. Each NIC
 *    direction carries one message at a time, in the order they reach it
 *    (egress: posting order, ingress: arrival order): two ranks of a host
 *    sending b bytes each to other hosts at once finish after b*byte_time
 *    and 2*b*byte_time, twice the time of one sender in all. A host's
 *    messages inside the host do not use its NIC.
 * The arrival rule is the one above (the sender's link or NIC, latency,
 * the receiver's link or NIC). NULL host_link or net_link means the world's
 * parameters (fold_sim_create); their op_time and op_overhead are unused:
 * reductions keep each rank's own. fold_sim_set_rank_params then changes
 * only a rank's op_time and op_overhead. fold_comm_local_rank,
 * fold_comm_local_size and fold_comm_split_host of the world follow the
 * hosts. Call it once the world is made and before any operation starts
 * on it (again to regroup, before anything starts). FOLD_EINVAL (with a
 * message naming the rank or host) for a NULL sim, hosts < 1 or > n, a
 * host of a rank out of range, a host without ranks, parameters negative
 * or not finite, or a call after operations started or from inside a run;
 * FOLD_ENOMEM. */
FOLD_API int fold_sim_set_hosts(fold_sim *sim, int hosts, const int *host_of_rank, const fold_sim_params *host_link,
                                const fold_sim_params *net_link);

#ifdef __cplusplus
}
#endif
#endif /* FOLD_PUBLIC_SIM_H */
