/* time.h — the engine clock and cost interface, injected delays, CPU sharing and link measurements (engine/time.c). */
#ifndef FOLD_ENGINE_TIME_H
#define FOLD_ENGINE_TIME_H

#include "core/internal.h"

/* ---- the clock and cost interface (engine/time.c) ------------------------------
 * Local work is charged to the engine, not to a transport: on real
 * transports the time passed because the work was really done, so charging
 * does nothing; in the simulator the rank is busy that long in virtual time
 * (its later sends start no earlier, a blocking call returns no earlier).
 * A communicator whose clock is not real time (the simulator) installs
 * hooks with fold__engine_hooks_set; without hooks the clock is real. */
typedef struct fold__clock_hooks {
  void (*charge)(fold_comm *c, double seconds);
  double (*reduce_cost)(const fold_comm *c, size_t bytes); /* virtual seconds of one reduction call */
  int (*wake_at)(fold_comm *c, int64_t t_ns); /* make the clock reach t_ns and run fold__progress(c) there */
  /* waits call this instead of sleeping: run the world until `until`
   * completes (NULL: one step, never blocking); < 0: c failed */
  int (*drive)(fold_comm *c, fold_request *until);
} fold__clock_hooks;
void fold__engine_hooks_set(fold_comm *c, const fold__clock_hooks *hooks);
/* Is c simulated? 1 if its clock is not real time (hooks installed: the
 * simulator), where costs are modelled, not measured, and waits drive the
 * simulator (fold__engine_drive) instead of sleeping. The one test of
 * "is this communicator simulated" (defined in engine/svc.h). */
static inline int fold__engine_virtual(const fold_comm *c);
/* c's rank works `seconds` (seconds <= 0: nothing). */
void fold__engine_charge(fold_comm *c, double seconds);
/* What one local reduction call over `bytes` costs in the clock's time: 0 on
 * real transports (the work takes the time it takes), op_overhead + bytes *
 * op_time of the rank in the simulator. The collective executor sums this
 * over a round's reductions and charges the sum. */
double fold__engine_reduce_cost(const fold_comm *c, size_t bytes);
/* Drive a simulated communicator (fold__engine_virtual) until `until`
 * completes, or one step when until is NULL (fold_test, fold_progress).
 * Returns 0 or c's failure status. */
int fold__engine_drive(fold_comm *c, fold_request *until);
/* Ask the clock to reach t_ns (used by the timers; real time: nothing to
 * do, waits are clamped instead). Returns 0 or a negative FOLD_E* code. */
int fold__engine_wake_at(fold_comm *c, int64_t t_ns);

/* FOLD_INJECT_DELAY=RANK:SECONDS[,RANK:SECONDS...]: a test and benchmark
 * knob that makes the named ranks stragglers. It is parsed once per
 * communicator, when it is created; a malformed value is warned about once
 * per process and ignored, a valid one logged once per process at WARN.
 * Returns this rank's delay before each local reduction step of a
 * collective, in ns (0: none). The collective executor waits for it on an
 * engine timer (the task returns "waiting" meanwhile), so the delay is
 * real time on real transports and virtual time in the simulator. */
int64_t fold__engine_inject_delay(const fold_comm *c);

/* The CPUs this process may run on (its affinity mask; a process pinned
 * to a single CPU counts the host's online CPUs: launchers pin only when
 * the ranks fit the CPUs, each rank to its own). engine/progress.c. */
int fold__engine_ncpu(void);
/* 1 if c's ranks on this host outnumber those CPUs (real transports only):
 * then ranks take turns on the cores, and a wait for a peer may last a
 * time slice of the OS scheduler (milliseconds) with nobody slow. */
int fold__engine_shares_cpu(const fold_comm *c);

/* ---- link measurements (engine/time.c) ----------------------------------------------
 * How long a message of `bytes` takes to reach `peer` (a rank of c), from
 * what the transport that reaches it measured of that link as a sender:
 * its one-way latency plus bytes times its time per byte (transport.h,
 * the vtable's link). The simulator gives its model; tcp the kernel's
 * minimum RTT / 2 and the median recent timed delivery of a large send (from
 * its write to the acknowledgement of everything then unacknowledged;
 * latency only before the first is delivered); shm
 * the best recent rate at which messages of 64 KiB and more went into the
 * peer's ring, with latency counted as 0 (under a microsecond). -1 when
 * nothing is measured yet (no large message sent to peer, tcp's kernel
 * without a rate) or never (inproc, peer = self). Owner thread. Used by
 * ring_skip for T_trans. */
int64_t fold__link_ns(fold_comm *c, int peer, size_t bytes);
/* A transport's record of one link's time per byte over its last
 * FOLD__METER samples. A timed transfer is slowed by noise (a descheduled
 * receiver, other traffic), never sped up, so the best recent one is the
 * link's own rate (fold__meter_min); a rate the kernel reports can also be
 * too fast (a token bucket's burst), so for those the median. The window
 * follows a link that changed for good. */
#define FOLD__METER 8
typedef struct fold__meter {
  float v[FOLD__METER];
  uint32_t n;
} fold__meter;
/* Record a sample (v > 0, else ignored). */
void fold__meter_add(fold__meter *m, double v);
/* The smallest recent sample, or 0 if none. */
double fold__meter_min(const fold__meter *m);
/* The median of the recent samples (the lower middle one of an even
 * count), or 0 if none: for samples that noise moves both ways. */
double fold__meter_median(const fold__meter *m);

#endif /* FOLD_ENGINE_TIME_H */
