/* select.c — the automatic selection table (data), FOLD_RULES and forced choices, and the FOLD_ALGO grammar. */
#include <stdlib.h>
#include <pthread.h>
#include <string.h>

#include "engine/engine.h"
#include "select/select.h"
#include "transport/transport.h"

/* Shorthands for the table's open ends. */
#define ANY_N FOLD__RULE_ANY_RANKS
#define ANY_B FOLD__RULE_ANY_BYTES

#define SHM FOLD__TP_KIND_SHM
#define TCP FOLD__TP_KIND_TCP

/* The built-in table, first match wins, consulted after a FOLD_RULES file.
 * Columns: collective, transport (0 = any), ranks min-max, bytes min-max,
 * commutative only, powers of two only, algorithm.
 *
 * shm and tcp: measured with fold-bench --tune on the 2-core development
 * machine (shared with other benchmarks, so noisy), 2026-11-22: n = 2, 3, 4
 * over 8 B..256 MiB, n = 8 over 8 B..64 MiB, two repeats for shm and for
 * tcp n = 2, one for tcp n = 3, 4, 8, merged into few ranges by
 * scripts/tune_merge.py --penalty 1.5
 * (docs/tuning.md). Measured n stands for a range: 2 for 1-2, 4 for 4-7,
 * 8 for 8 and up. A winner that cannot serve a call (an order-breaking
 * algorithm and a non-commutative op) is passed over to the generic rules.
 * Shared-segment algorithms, when usable, belong above these.
 *
 * Generic (every transport, and what the measured rules do not serve):
 * the MPICH and Open MPI decision rules (few steps for small messages,
 * little data per rank for large ones). */
static const fold__rule default_rules[] = {
  /* Shared-memory collectives first, wherever they are usable (one host,
   * every peer over shm; see src/coll/shm_coll.c): their usable() check
   * passes them over elsewhere. */
  {FOLD__COLL_BROADCAST, 0, 1, ANY_N, 0, ANY_B, 0, 0, "shm", 0},
  {FOLD__COLL_REDUCE, 0, 1, ANY_N, 0, ANY_B, 0, 0, "shm", 0},
  {FOLD__COLL_ALLREDUCE, 0, 1, ANY_N, 0, ANY_B, 0, 0, "shm", 0},
  {FOLD__COLL_REDUCE_SCATTER, 0, 1, ANY_N, 0, ANY_B, 0, 0, "shm", 0},
  {FOLD__COLL_ALLGATHER, 0, 1, ANY_N, 0, ANY_B, 0, 0, "shm", 0},
  {FOLD__COLL_GATHER, 0, 1, ANY_N, 0, ANY_B, 0, 0, "shm", 0},
  {FOLD__COLL_SCATTER, 0, 1, ANY_N, 0, ANY_B, 0, 0, "shm", 0},
  {FOLD__COLL_ALLTOALL, 0, 1, ANY_N, 0, ANY_B, 0, 0, "shm", 0},
  {FOLD__COLL_BARRIER, 0, 1, ANY_N, 0, ANY_B, 0, 0, "shm", 0},
  /* hier (docs/hierarchy.md) where the communicator spans hosts and some
   * host holds more than one rank (multihost; one host or a rank per host
   * leaves it the flat call plus its overhead), over tcp, in the sizes
   * where both the simulator (fold-sim, bench/hier_sim.sh: against the
   * ring family the tcp rules pick from 128-256 KiB on) and processes on
   * 2 x 2 loopback test hosts (contiguous and round robin) found it
   * faster. From about 3 MiB the simulator has the flat ring ahead at
   * 64 x 8 contiguous (its NIC carries 2S either way, and hier adds two
   * host phases and its leaders' 2(H-1) latencies). */
  {FOLD__COLL_ALLREDUCE, TCP, 3, ANY_N, 262144, 2097152, 1, 0, "hier", 0, 1},
  {FOLD__COLL_BROADCAST, SHM, 1, 2, 0, 255, 0, 0, "pipeline", 0},
  {FOLD__COLL_BROADCAST, SHM, 1, 2, 256, ANY_B, 0, 0, "binomial", 0},
  {FOLD__COLL_BROADCAST, SHM, 3, 3, 0, 511, 0, 0, "scatter_allgather", 0},
  {FOLD__COLL_BROADCAST, SHM, 3, 3, 512, 1048575, 0, 0, "pipeline", 0},
  {FOLD__COLL_BROADCAST, SHM, 3, 3, 1048576, ANY_B, 0, 0, "binomial", 0},
  {FOLD__COLL_BROADCAST, SHM, 4, 7, 0, 31, 0, 0, "pipeline", 0},
  {FOLD__COLL_BROADCAST, SHM, 4, 7, 32, ANY_B, 0, 0, "binomial", 0},
  {FOLD__COLL_BROADCAST, SHM, 8, ANY_N, 0, 1048575, 0, 0, "pipeline", 0},
  {FOLD__COLL_BROADCAST, SHM, 8, ANY_N, 1048576, ANY_B, 0, 0, "binomial", 0},
  {FOLD__COLL_BROADCAST, TCP, 1, 2, 0, 255, 0, 0, "scatter_allgather", 0},
  {FOLD__COLL_BROADCAST, TCP, 1, 2, 256, 1023, 0, 0, "binomial", 0},
  {FOLD__COLL_BROADCAST, TCP, 1, 2, 1024, 8191, 0, 0, "scatter_allgather", 0},
  {FOLD__COLL_BROADCAST, TCP, 1, 2, 8192, 16383, 0, 0, "binomial", 0},
  {FOLD__COLL_BROADCAST, TCP, 1, 2, 16384, ANY_B, 0, 0, "pipeline", 0},
  {FOLD__COLL_BROADCAST, TCP, 3, 3, 0, ANY_B, 0, 0, "binomial", 0},
  {FOLD__COLL_BROADCAST, TCP, 4, 7, 0, 31, 0, 0, "binomial", 0},
  {FOLD__COLL_BROADCAST, TCP, 4, 7, 32, ANY_B, 0, 0, "pipeline", 0},
  {FOLD__COLL_BROADCAST, TCP, 8, ANY_N, 0, 127, 0, 0, "scatter_allgather", 0},
  {FOLD__COLL_BROADCAST, TCP, 8, ANY_N, 128, ANY_B, 0, 0, "binomial", 0},
  {FOLD__COLL_REDUCE, SHM, 1, 2, 0, 33554431, 0, 0, "binomial", 0},
  {FOLD__COLL_REDUCE, SHM, 1, 2, 33554432, ANY_B, 0, 0, "rabenseifner", 0},
  {FOLD__COLL_REDUCE, SHM, 3, 3, 0, 1048575, 0, 0, "binomial", 0},
  {FOLD__COLL_REDUCE, SHM, 3, 3, 1048576, ANY_B, 0, 0, "rabenseifner", 0},
  {FOLD__COLL_REDUCE, SHM, 4, 7, 0, ANY_B, 0, 0, "binomial", 0},
  {FOLD__COLL_REDUCE, SHM, 8, ANY_N, 0, 63, 0, 0, "rabenseifner", 0},
  {FOLD__COLL_REDUCE, SHM, 8, ANY_N, 64, ANY_B, 0, 0, "binomial", 0},
  {FOLD__COLL_REDUCE, TCP, 1, 2, 0, 63, 0, 0, "binomial", 0},
  {FOLD__COLL_REDUCE, TCP, 1, 2, 64, 1023, 0, 0, "rabenseifner", 0},
  {FOLD__COLL_REDUCE, TCP, 1, 2, 1024, ANY_B, 0, 0, "binomial", 0},
  {FOLD__COLL_REDUCE, TCP, 3, 3, 0, 8388607, 0, 0, "binomial", 0},
  {FOLD__COLL_REDUCE, TCP, 3, 3, 8388608, ANY_B, 0, 0, "rabenseifner", 0},
  {FOLD__COLL_REDUCE, TCP, 4, 7, 0, 15, 0, 0, "rabenseifner", 0},
  {FOLD__COLL_REDUCE, TCP, 4, 7, 16, ANY_B, 0, 0, "binomial", 0},
  {FOLD__COLL_REDUCE, TCP, 8, ANY_N, 0, ANY_B, 0, 0, "rabenseifner", 0},
  {FOLD__COLL_ALLREDUCE, SHM, 1, 2, 0, 255, 0, 0, "ring", 0},
  {FOLD__COLL_ALLREDUCE, SHM, 1, 2, 256, 2097151, 0, 0, "rabenseifner", 0},
  {FOLD__COLL_ALLREDUCE, SHM, 1, 2, 2097152, ANY_B, 0, 0, "ring_segmented", 0},
  {FOLD__COLL_ALLREDUCE, SHM, 3, 3, 0, 1048575, 0, 0, "direct", 0},
  {FOLD__COLL_ALLREDUCE, SHM, 3, 3, 1048576, ANY_B, 0, 0, "ring_segmented", 0},
  {FOLD__COLL_ALLREDUCE, SHM, 4, 7, 0, 1048575, 0, 0, "direct", 0},
  {FOLD__COLL_ALLREDUCE, SHM, 4, 7, 1048576, ANY_B, 0, 0, "ring_segmented", 0},
  {FOLD__COLL_ALLREDUCE, SHM, 8, ANY_N, 0, 131071, 0, 0, "direct", 0},
  {FOLD__COLL_ALLREDUCE, SHM, 8, ANY_N, 131072, ANY_B, 0, 0, "ring", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 1, 2, 0, 15, 0, 0, "direct", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 1, 2, 16, 63, 0, 0, "reduce_bcast", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 1, 2, 64, 127, 0, 0, "direct", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 1, 2, 128, 2047, 0, 0, "recursive_doubling", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 1, 2, 2048, 16383, 0, 0, "ring", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 1, 2, 16384, 131071, 0, 0, "reduce_bcast", 0},
  /* From 64-128 KiB on, tcp takes the algorithms that move the least data
   * per link (direct, ring, ring_segmented). The loopback tuning, memory
   * bound and oversubscribed, had picked reduce_bcast in places; on the
   * 1 Gbit/s links of bench/compare it sends twice the data and took twice
   * the time of every peer (n = 2: 16 MiB 280 ms against 140-211; n = 4:
   * 256 KiB 5.0 ms against 3.3). */
  {FOLD__COLL_ALLREDUCE, TCP, 1, 2, 131072, ANY_B, 0, 0, "direct", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 3, 3, 0, 31, 0, 0, "direct", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 3, 3, 32, 63, 0, 0, "reduce_bcast", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 3, 3, 64, 127, 0, 0, "direct", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 3, 3, 128, 65535, 0, 0, "reduce_bcast", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 3, 3, 65536, ANY_B, 0, 0, "ring", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 4, 7, 0, 15, 0, 0, "rabenseifner", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 4, 7, 16, 511, 0, 0, "recursive_doubling", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 4, 7, 512, 16383, 0, 0, "direct", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 4, 7, 16384, 32767, 0, 0, "recursive_doubling", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 4, 7, 32768, 131071, 0, 0, "direct", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 4, 7, 131072, ANY_B, 0, 0, "ring_segmented", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 8, ANY_N, 0, 511, 0, 0, "direct", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 8, ANY_N, 512, 262143, 0, 0, "recursive_doubling", 0},
  {FOLD__COLL_ALLREDUCE, TCP, 8, ANY_N, 262144, ANY_B, 0, 0, "ring", 0},
  {FOLD__COLL_REDUCE_SCATTER, SHM, 1, 2, 0, ANY_B, 0, 0, "ring", 0},
  {FOLD__COLL_REDUCE_SCATTER, SHM, 3, 3, 0, ANY_B, 0, 0, "pairwise", 0},
  {FOLD__COLL_REDUCE_SCATTER, SHM, 4, 7, 0, 4095, 0, 0, "recursive_halving", 0},
  {FOLD__COLL_REDUCE_SCATTER, SHM, 4, 7, 4096, 8191, 0, 0, "pairwise", 0},
  {FOLD__COLL_REDUCE_SCATTER, SHM, 4, 7, 8192, 2097151, 0, 0, "recursive_halving", 0},
  {FOLD__COLL_REDUCE_SCATTER, SHM, 4, 7, 2097152, ANY_B, 0, 0, "ring", 0},
  {FOLD__COLL_REDUCE_SCATTER, SHM, 8, ANY_N, 0, 7, 0, 0, "pairwise", 0},
  {FOLD__COLL_REDUCE_SCATTER, SHM, 8, ANY_N, 8, ANY_B, 0, 0, "ring", 0},
  {FOLD__COLL_REDUCE_SCATTER, TCP, 1, 2, 0, 31, 0, 0, "pairwise", 0},
  {FOLD__COLL_REDUCE_SCATTER, TCP, 1, 2, 32, ANY_B, 0, 0, "ring", 0},
  {FOLD__COLL_REDUCE_SCATTER, TCP, 3, 3, 0, ANY_B, 0, 0, "pairwise", 0},
  {FOLD__COLL_REDUCE_SCATTER, TCP, 4, 7, 0, 7, 0, 0, "ring", 0},
  {FOLD__COLL_REDUCE_SCATTER, TCP, 4, 7, 8, 63, 0, 0, "recursive_halving", 0},
  {FOLD__COLL_REDUCE_SCATTER, TCP, 4, 7, 64, ANY_B, 0, 0, "pairwise", 0},
  {FOLD__COLL_REDUCE_SCATTER, TCP, 8, ANY_N, 0, 7, 0, 0, "ring", 0},
  {FOLD__COLL_REDUCE_SCATTER, TCP, 8, ANY_N, 8, 2097151, 0, 0, "recursive_halving", 0},
  {FOLD__COLL_REDUCE_SCATTER, TCP, 8, ANY_N, 2097152, ANY_B, 0, 0, "pairwise", 0},
  {FOLD__COLL_ALLGATHER, SHM, 1, 2, 0, ANY_B, 0, 0, "ring", 0},
  {FOLD__COLL_ALLGATHER, SHM, 3, 3, 0, 39, 0, 0, "ring", 0},
  {FOLD__COLL_ALLGATHER, SHM, 3, 3, 40, 43687, 0, 0, "bruck", 0},
  {FOLD__COLL_ALLGATHER, SHM, 3, 3, 43688, 87379, 0, 0, "recursive_doubling", 0},
  {FOLD__COLL_ALLGATHER, SHM, 3, 3, 87380, ANY_B, 0, 0, "ring", 0},
  {FOLD__COLL_ALLGATHER, SHM, 4, 7, 0, 511, 0, 0, "recursive_doubling", 0},
  {FOLD__COLL_ALLGATHER, SHM, 4, 7, 512, 1023, 0, 0, "ring", 0},
  {FOLD__COLL_ALLGATHER, SHM, 4, 7, 1024, ANY_B, 0, 0, "recursive_doubling", 0},
  {FOLD__COLL_ALLGATHER, SHM, 8, ANY_N, 0, 32767, 0, 0, "bruck", 0},
  {FOLD__COLL_ALLGATHER, SHM, 8, ANY_N, 32768, ANY_B, 0, 0, "ring", 0},
  {FOLD__COLL_ALLGATHER, TCP, 1, 2, 0, 15, 0, 0, "bruck", 0},
  {FOLD__COLL_ALLGATHER, TCP, 1, 2, 16, 1048575, 0, 0, "ring", 0},
  {FOLD__COLL_ALLGATHER, TCP, 1, 2, 1048576, ANY_B, 0, 0, "recursive_doubling", 0},
  {FOLD__COLL_ALLGATHER, TCP, 3, 3, 0, 1363, 0, 0, "bruck", 0},
  {FOLD__COLL_ALLGATHER, TCP, 3, 3, 1364, 699047, 0, 0, "recursive_doubling", 0},
  {FOLD__COLL_ALLGATHER, TCP, 3, 3, 699048, ANY_B, 0, 0, "ring", 0},
  {FOLD__COLL_ALLGATHER, TCP, 4, 7, 0, 63, 0, 0, "ring", 0},
  {FOLD__COLL_ALLGATHER, TCP, 4, 7, 64, 511, 0, 0, "recursive_doubling", 0},
  {FOLD__COLL_ALLGATHER, TCP, 4, 7, 512, ANY_B, 0, 0, "ring", 0},
  {FOLD__COLL_ALLGATHER, TCP, 8, ANY_N, 0, 8191, 0, 0, "bruck", 0},
  {FOLD__COLL_ALLGATHER, TCP, 8, ANY_N, 8192, ANY_B, 0, 0, "recursive_doubling", 0},
  {FOLD__COLL_GATHER, SHM, 1, 2, 0, ANY_B, 0, 0, "binomial", 0},
  {FOLD__COLL_GATHER, SHM, 3, 3, 0, ANY_B, 0, 0, "linear", 0},
  {FOLD__COLL_GATHER, SHM, 4, 7, 0, 7, 0, 0, "binomial", 0},
  {FOLD__COLL_GATHER, SHM, 4, 7, 8, ANY_B, 0, 0, "linear", 0},
  {FOLD__COLL_GATHER, SHM, 8, ANY_N, 0, ANY_B, 0, 0, "linear", 0},
  {FOLD__COLL_GATHER, TCP, 1, 2, 0, 4194303, 0, 0, "linear", 0},
  {FOLD__COLL_GATHER, TCP, 1, 2, 4194304, ANY_B, 0, 0, "binomial", 0},
  {FOLD__COLL_GATHER, TCP, 3, 3, 0, 339, 0, 0, "binomial", 0},
  {FOLD__COLL_GATHER, TCP, 3, 3, 340, ANY_B, 0, 0, "linear", 0},
  {FOLD__COLL_GATHER, TCP, 4, 7, 0, ANY_B, 0, 0, "linear", 0},
  {FOLD__COLL_GATHER, TCP, 8, ANY_N, 0, 63, 0, 0, "linear", 0},
  {FOLD__COLL_GATHER, TCP, 8, ANY_N, 64, 262143, 0, 0, "binomial", 0},
  {FOLD__COLL_GATHER, TCP, 8, ANY_N, 262144, ANY_B, 0, 0, "linear", 0},
  {FOLD__COLL_SCATTER, SHM, 1, 2, 0, ANY_B, 0, 0, "linear", 0},
  {FOLD__COLL_SCATTER, SHM, 3, 3, 0, ANY_B, 0, 0, "linear", 0},
  {FOLD__COLL_SCATTER, SHM, 4, 7, 0, ANY_B, 0, 0, "linear", 0},
  {FOLD__COLL_SCATTER, SHM, 8, ANY_N, 0, ANY_B, 0, 0, "linear", 0},
  {FOLD__COLL_SCATTER, TCP, 1, 2, 0, 262143, 0, 0, "binomial", 0},
  {FOLD__COLL_SCATTER, TCP, 1, 2, 262144, ANY_B, 0, 0, "linear", 0},
  {FOLD__COLL_SCATTER, TCP, 3, 3, 0, 19, 0, 0, "linear", 0},
  {FOLD__COLL_SCATTER, TCP, 3, 3, 20, 10919, 0, 0, "binomial", 0},
  {FOLD__COLL_SCATTER, TCP, 3, 3, 10920, ANY_B, 0, 0, "linear", 0},
  {FOLD__COLL_SCATTER, TCP, 4, 7, 0, ANY_B, 0, 0, "linear", 0},
  {FOLD__COLL_SCATTER, TCP, 8, ANY_N, 0, 511, 0, 0, "binomial", 0},
  {FOLD__COLL_SCATTER, TCP, 8, ANY_N, 512, ANY_B, 0, 0, "linear", 0},
  {FOLD__COLL_ALLTOALL, SHM, 1, 2, 0, ANY_B, 0, 0, "pairwise", 0},
  {FOLD__COLL_ALLTOALL, SHM, 3, 3, 0, ANY_B, 0, 0, "pairwise", 0},
  {FOLD__COLL_ALLTOALL, SHM, 4, 7, 0, 32767, 0, 0, "bruck", 0},
  {FOLD__COLL_ALLTOALL, SHM, 4, 7, 32768, ANY_B, 0, 0, "pairwise", 0},
  {FOLD__COLL_ALLTOALL, SHM, 8, ANY_N, 0, 32767, 0, 0, "bruck", 0},
  {FOLD__COLL_ALLTOALL, SHM, 8, ANY_N, 32768, ANY_B, 0, 0, "pairwise", 0},
  {FOLD__COLL_ALLTOALL, TCP, 1, 2, 0, 32767, 0, 0, "bruck", 0},
  {FOLD__COLL_ALLTOALL, TCP, 1, 2, 32768, ANY_B, 0, 0, "pairwise", 0},
  {FOLD__COLL_ALLTOALL, TCP, 3, 3, 0, 679, 0, 0, "bruck", 0},
  {FOLD__COLL_ALLTOALL, TCP, 3, 3, 680, 2727, 0, 0, "pairwise", 0},
  {FOLD__COLL_ALLTOALL, TCP, 3, 3, 2728, 21843, 0, 0, "bruck", 0},
  {FOLD__COLL_ALLTOALL, TCP, 3, 3, 21844, ANY_B, 0, 0, "pairwise", 0},
  {FOLD__COLL_ALLTOALL, TCP, 4, 7, 0, 32767, 0, 0, "bruck", 0},
  {FOLD__COLL_ALLTOALL, TCP, 4, 7, 32768, ANY_B, 0, 0, "pairwise", 0},
  {FOLD__COLL_ALLTOALL, TCP, 8, ANY_N, 0, 16383, 0, 0, "bruck", 0},
  {FOLD__COLL_ALLTOALL, TCP, 8, ANY_N, 16384, ANY_B, 0, 0, "pairwise", 0},

  {FOLD__COLL_BROADCAST, 0, 1, ANY_N, 0, 12288, 0, 0, "binomial", 0},
  {FOLD__COLL_BROADCAST, 0, 1, 7, 0, ANY_B, 0, 0, "binomial", 0},
  {FOLD__COLL_BROADCAST, 0, 1, ANY_N, 0, 524288, 0, 0, "scatter_allgather", 0},
  {FOLD__COLL_BROADCAST, 0, 1, ANY_N, 0, ANY_B, 0, 0, "pipeline", 0},
  {FOLD__COLL_REDUCE, 0, 1, ANY_N, 0, 2048, 0, 0, "binomial", 0},
  {FOLD__COLL_REDUCE, 0, 1, ANY_N, 0, ANY_B, 1, 0, "rabenseifner", 0},
  {FOLD__COLL_REDUCE, 0, 1, ANY_N, 0, ANY_B, 0, 0, "binomial", 0},
  {FOLD__COLL_ALLREDUCE, 0, 1, ANY_N, 0, 2048, 0, 0, "recursive_doubling", 0},
  {FOLD__COLL_ALLREDUCE, 0, 1, ANY_N, 0, 524288, 1, 0, "rabenseifner", 0},
  {FOLD__COLL_ALLREDUCE, 0, 1, ANY_N, 0, ANY_B, 1, 0, "ring_segmented", 0},
  {FOLD__COLL_ALLREDUCE, 0, 1, ANY_N, 0, ANY_B, 0, 0, "recursive_doubling", 0},
  {FOLD__COLL_REDUCE_SCATTER, 0, 1, ANY_N, 0, 524288, 1, 0, "recursive_halving", 0},
  {FOLD__COLL_REDUCE_SCATTER, 0, 1, ANY_N, 0, ANY_B, 1, 0, "ring", 0},
  {FOLD__COLL_REDUCE_SCATTER, 0, 1, ANY_N, 0, ANY_B, 0, 0, "pairwise", 0},
  {FOLD__COLL_ALLGATHER, 0, 1, ANY_N, 0, 8192, 0, 1, "recursive_doubling", 0},
  {FOLD__COLL_ALLGATHER, 0, 1, ANY_N, 0, 65536, 0, 0, "bruck", 0},
  {FOLD__COLL_ALLGATHER, 0, 1, ANY_N, 0, ANY_B, 0, 0, "ring", 0},
  {FOLD__COLL_GATHER, 0, 1, ANY_N, 0, ANY_B, 0, 0, "binomial", 0},
  {FOLD__COLL_SCATTER, 0, 1, ANY_N, 0, ANY_B, 0, 0, "binomial", 0},
  {FOLD__COLL_ALLTOALL, 0, 8, ANY_N, 0, 256, 0, 0, "bruck", 0},
  {FOLD__COLL_ALLTOALL, 0, 1, ANY_N, 0, ANY_B, 0, 0, "pairwise", 0},
  {FOLD__COLL_BARRIER, 0, 1, ANY_N, 0, ANY_B, 0, 0, "dissemination", 0},
};
#define NDEFAULT (sizeof default_rules / sizeof *default_rules)

/* The built-in table with each rule's algorithm index resolved (algo_idx),
 * made once per process (pthread_once: its fast path is a load): a call
 * then finds its algorithm without comparing names (about 180 instructions
 * of an 8 B allreduce's path, by callgrind). */
static fold__rule builtin[NDEFAULT];
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;
/* The same rules grouped by collective, in table order within each
 * (by_kind[kind_from[k], kind_from[k + 1]) are collective k's; by_kind_at
 * their rows in the table, for the trace): a call scans its collective's
 * rules only, which picks what a scan of the whole table picks, since a
 * rule of another collective never fits (about 1,000 instructions of a
 * call on the simulator, which passes the shm and tcp rows over). */
static fold__rule by_kind[NDEFAULT];
static int by_kind_at[NDEFAULT];
static int kind_from[FOLD__COLL_COUNT + 1];

static void builtin_resolve(void) {
  for (size_t i = 0; i < NDEFAULT; i++) {
    builtin[i] = default_rules[i];
    int k = fold__algo_index(builtin[i].coll, builtin[i].algo, strlen(builtin[i].algo));
    builtin[i].algo_idx = k >= 0 ? k + 1 : 0; /* an unknown name is passed over by scan, as before */
  }
  int n = 0;
  for (int k = 0; k < FOLD__COLL_COUNT; k++) {
    kind_from[k] = n;
    for (size_t i = 0; i < NDEFAULT; i++)
      if ((int)builtin[i].coll == k) {
        by_kind_at[n] = (int)i;
        by_kind[n++] = builtin[i];
      }
  }
  kind_from[FOLD__COLL_COUNT] = n;
}

const fold__rule *fold__builtin_rules(int *count) {
  pthread_once(&builtin_once, builtin_resolve);
  *count = (int)NDEFAULT;
  return builtin;
}

int fold__comm_tp_kind(const fold_comm *c) {
  /* The kinds are numbered from fastest to slowest (inproc < shm < tcp);
   * sim never shares a communicator with another. Every rank sees the same
   * answer: if any pair of ranks talks tcp there are two host groups, so
   * every rank has a peer in another group. */
  int kind = 0;
  for (int i = 0; i < c->ntps; i++)
    if (c->tps[i]->ops->kind > kind) kind = c->tps[i]->ops->kind;
  return kind ? kind : FOLD__TP_KIND_INPROC;
}

const char *fold_comm_transport(const fold_comm *comm) {
  return comm ? fold__tp_kind_name(fold__comm_tp_kind(comm)) : NULL;
}

/* Whether algorithm a can serve the call on c. Rules name algorithms
 * without knowing the op or the communicator, so a rule whose algorithm
 * cannot serve is passed over, never an error. An algorithm with a
 * communicator-level condition (e.g. a shared segment) adds it here. */
static int algo_serves(const fold_comm *c, const fold__algo *a, fold__coll_kind kind, size_t esize, int commutative) {
  if (a->usable && a->usable(c) != NULL) return 0; /* e.g. shm on threads or across hosts */
  if (a->fits && a->fits(c, kind, esize) != NULL) return 0; /* e.g. a record larger than a shm slot */
  return commutative || a->noncommutative_ok;
}

/* Whether c's ranks are on more than one host with some host holding more
 * than one: where a hierarchical algorithm has host phases to gain from
 * (one host, or a rank per host, leaves hier the flat call plus overhead). */
static int multihost(const fold_comm *c) { return c->nhosts > 1 && c->max_ppn > 1; }

static int rule_fits(const fold_comm *c, const fold__rule *r, fold__coll_kind kind, int tp, size_t bytes,
                     int commutative) {
  int size = c->size;
  return r->coll == kind && (r->transport == 0 || r->transport == tp) && size >= r->min_ranks &&
         size <= r->max_ranks && bytes >= r->min_bytes && bytes <= r->max_bytes &&
         (!r->commutative_only || commutative) && (!r->pof2_only || (size & (size - 1)) == 0) &&
         (!r->multihost_only || multihost(c));
}

/* The first rule of rules[0, n) that fits and whose algorithm serves the
 * call; *at is its index, *idx its algorithm's. */
static const fold__algo *scan(const fold_comm *c, const fold__rule *rules, int n, fold__coll_kind kind, int tp,
                              size_t bytes, size_t esize, int commutative, int *at, int *idx) {
  const fold__algo *const *algos = fold__algo_tables[kind].algos;
  for (int i = 0; i < n; i++) {
    const fold__rule *r = &rules[i];
    if (!rule_fits(c, r, kind, tp, bytes, commutative)) continue;
    int k = r->algo_idx ? r->algo_idx - 1 : fold__algo_index(kind, r->algo, strlen(r->algo));
    if (k >= 0 && algo_serves(c, algos[k], kind, esize, commutative)) {
      *at = i;
      *idx = k;
      return algos[k];
    }
  }
  return NULL;
}

/* FOLD_RULES first, then the built-in table, then (e.g. a table without a
 * non-commutative entry) the first algorithm that can serve the call. */
static const fold__algo *rule_pick(const fold_comm *c, fold__coll_kind kind, size_t bytes, size_t esize,
                                   int commutative, const char *opname, int *idx) {
  int tp = fold__comm_tp_kind(c), at = -1;
  const fold__algo *a = NULL;
  const fold__selection *sel = fold__selection_of(c);
  const fold__rules *rs = sel ? sel->rules : NULL;
  if (rs && (a = scan(c, rs->rule, rs->count, kind, tp, bytes, esize, commutative, &at, idx))) {
    FOLD__TRACE(c, "%s: %zu B, %d ranks, %s: %s (%s:%d)", opname, bytes, c->size, fold__tp_kind_name(tp), a->name,
                rs->path, rs->rule[at].line);
    return a;
  }
  pthread_once(&builtin_once, builtin_resolve);
  const fold__rule *mine = by_kind + kind_from[kind];
  if ((a = scan(c, mine, kind_from[kind + 1] - kind_from[kind], kind, tp, bytes, esize, commutative, &at, idx))) {
    FOLD__TRACE(c, "%s: %zu B, %d ranks, %s: %s (built-in rule %d)", opname, bytes, c->size, fold__tp_kind_name(tp),
                a->name, by_kind_at[kind_from[kind] + at] + 1);
    return a;
  }
  const fold__algo *const *algos = fold__algo_tables[kind].algos;
  for (int k = 0; algos[k]; k++)
    if (algo_serves(c, algos[k], kind, esize, commutative)) {
      FOLD__TRACE(c, "%s: %zu B, %d ranks, %s: %s (no rule; first that serves)", opname, bytes, c->size,
                  fold__tp_kind_name(tp), algos[k]->name);
      *idx = k;
      return algos[k];
    }
  return NULL;
}

int fold__select_forced(const fold_comm *c, fold__coll_kind kind) {
  const fold__selection *sel = fold__selection_of(c);
  return sel ? sel->coll_algo[kind] : -1;
}

int fold__select_call(fold_comm *c, fold__call *call, const char *opname) {
  fold__coll_kind kind = call->kind;
  size_t bytes = call->bytes, esize = call->wsize;
  int commutative = call->commutative, force = call->opt.force;
  const char *by = "the call's options";
  if (force == FOLD__SELECT_COMM) {
    force = fold__select_forced(c, kind);
    by = "FOLD_ALGO or fold_comm_set_algo";
  }
  if (force >= 0) {
    const fold__algo *a = fold__algo_tables[kind].algos[force];
    const char *why = a->usable ? a->usable(c) : NULL;
    if (why)
      return fold__error(c, FOLD_EINVAL, "%s: rank %d: algorithm %s (forced by %s) cannot run on this communicator: %s",
                         opname, c->rank, a->name, by, why);
    if (a->fits && (why = a->fits(c, kind, esize)) != NULL)
      return fold__error(c, FOLD_EINVAL, "%s: rank %d: algorithm %s (forced by %s) cannot keep %zu-byte elements "
                         "whole: %s", opname, c->rank, a->name, by, esize, why);
    if (!commutative && !a->noncommutative_ok)
      return fold__error(c, FOLD_EINVAL,
                         "%s: rank %d: algorithm %s (forced by %s) cannot keep the rank order a non-commutative op "
                         "needs",
                         opname, c->rank, a->name, by);
    FOLD__TRACE(c, "%s: %zu B, %d ranks: %s (forced by %s)", opname, bytes, c->size, a->name, by);
    call->algo = a;
    call->algo_idx = force;
    return FOLD_OK;
  }
  call->algo = rule_pick(c, kind, bytes, esize, commutative, opname, &call->algo_idx);
  if (call->algo == NULL) return fold__error(c, FOLD_EINTERNAL, "%s: rank %d: no algorithm fits", opname, c->rank);
  return FOLD_OK;
}

int fold__select(fold_comm *c, fold__coll_kind kind, size_t bytes, size_t esize, int commutative,
                 const fold__algo **out, const char *opname) {
  fold__call call = {.kind = kind, .bytes = bytes, .esize = esize, .wsize = esize, .commutative = commutative,
                     .opt = {.force = FOLD__SELECT_COMM}};
  int rc = fold__select_call(c, &call, opname);
  *out = call.algo;
  return rc;
}

#define SPEC_FORM "collective=algorithm[,collective=algorithm...]"

int fold__algo_spec_apply(fold_comm *c, const char *spec, const char *source) {
  fold__selection *sel = fold__selection_of(c);
  if (sel == NULL) return fold__error(c, FOLD_EINTERNAL, "%s: rank %d: this communicator has no selection state", source, c->rank);
  signed char next[sizeof sel->coll_algo];
  memcpy(next, sel->coll_algo, sizeof next);
  /* Every item must name something: "", "a=b," or ",," are typos (a lost
   * word), and accepting them would hide which choice the author meant. */
  if (*spec == '\0') return fold__error(c, FOLD_EINVAL, "%s: empty spec (want " SPEC_FORM ")", source);
  const char *p = spec;
  for (int item = 1; p; item++) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == 0)
      return fold__error(c, FOLD_EINVAL, "%s: item %d of \"%s\" is empty (want " SPEC_FORM "; no leading, trailing or "
                         "doubled commas)", source, item, spec);
    const char *eq = memchr(p, '=', len);
    if (eq == NULL)
      return fold__error(c, FOLD_EINVAL, "%s: \"%.*s\" is not collective=algorithm", source, (int)len, p);
    size_t klen = (size_t)(eq - p), vlen = len - klen - 1;
    if (klen == 0)
      return fold__error(c, FOLD_EINVAL, "%s: \"%.*s\" names no collective (want collective=algorithm)", source,
                         (int)len, p);
    int kind = fold__coll_index(p, klen);
    if (kind < 0) {
      char known[128];
      fold__coll_names(known, sizeof known);
      return fold__error(c, FOLD_EINVAL, "%s: unknown collective \"%.*s\" (known: %s)", source, (int)klen, p, known);
    }
    if (vlen == 4 && strncmp(eq + 1, "auto", 4) == 0) {
      next[kind] = -1;
    } else {
      int idx = vlen ? fold__algo_index((fold__coll_kind)kind, eq + 1, vlen) : -1;
      if (idx < 0) {
        char known[256];
        fold__algo_names((fold__coll_kind)kind, known, sizeof known);
        if (vlen == 0)
          return fold__error(c, FOLD_EINVAL, "%s: \"%.*s\" names no algorithm (known: %s auto)", source, (int)len, p,
                             known);
        return fold__error(c, FOLD_EINVAL, "%s: %s has no algorithm \"%.*s\" (known: %s auto)", source,
                           fold__coll_name((fold__coll_kind)kind), (int)vlen, eq + 1, known);
      }
      next[kind] = (signed char)idx;
    }
    p = end ? end + 1 : NULL;
  }
  memcpy(sel->coll_algo, next, sizeof next);
  return FOLD_OK;
}

int fold_comm_set_algo(fold_comm *comm, const char *spec) {
  if (comm == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_comm_set_algo: communicator is NULL");
  if (spec == NULL) return fold__error(comm, FOLD_EINVAL, "fold_comm_set_algo: spec is NULL");
  fold__enter(comm); /* collectives the progress thread steps read the choice */
  int rc = fold__algo_spec_apply(comm, spec, "fold_comm_set_algo");
  fold__leave(comm);
  return rc;
}

static void selection_teardown(void *p) {
  fold__selection *sel = p;
  fold__rules_free(sel->rules);
  free(sel);
}

/* A fresh state in c's slot: nothing forced, no rules file. */
static fold__selection *selection_attach(fold_comm *c) {
  void *p;
  if (fold__slot_attach_new(c, FOLD__SLOT_SELECT, sizeof(fold__selection), selection_teardown, "the selection state",
                            &p) != FOLD_OK)
    return NULL;
  fold__selection *sel = p;
  memset(sel->coll_algo, -1, sizeof sel->coll_algo);
  return sel;
}

/* Called when a communicator is made (comm/comm.c): FOLD_ALGO and
 * FOLD_RULES apply to every communicator. Bad values are reported and
 * ignored, as FOLD_ALGO's always were: a tuning file is an optimisation,
 * and a job that ran before the file was edited should still run (with the
 * built-in rules). The state (forced algorithms, the rules file's table)
 * hangs in the well-known slot FOLD__SLOT_SELECT, freed by its teardown. */
int fold__select_init(fold_comm *c) {
  fold__selection *sel = selection_attach(c);
  if (sel == NULL) return FOLD_ENOMEM;
  const char *v = fold__param_str(FOLD__P_ALGO);
  if (v && *v && fold__algo_spec_apply(c, v, "FOLD_ALGO") != FOLD_OK)
    FOLD__WARN(c, "%s (FOLD_ALGO ignored)", c->last_error);
  const char *path = fold__param_str(FOLD__P_RULES);
  if (path && *path) {
    char err[FOLD__ERRLEN - 64];
    fold__rules *rules = NULL;
    int rc = fold__rules_load(path, &rules, err, sizeof err);
    if (rc != FOLD_OK) {
      fold__error(c, rc, "FOLD_RULES: %s", err);
      FOLD__WARN(c, "%s (FOLD_RULES ignored: using the built-in rules)", c->last_error);
    } else {
      sel->rules = rules;
    }
  }
  return FOLD_OK;
}

/* A sub-communicator chooses as its parent does: the algorithms forced on
 * the parent (FOLD_ALGO or fold_comm_set_algo) and a copy of its rules
 * file's table, in k's own state (the parent may go first). */
int fold__select_inherit(fold_comm *k, const fold_comm *parent) {
  fold__selection *sel = selection_attach(k);
  if (sel == NULL) return FOLD_ENOMEM;
  const fold__selection *ps = fold__selection_of(parent);
  if (ps == NULL) return FOLD_OK;
  memcpy(sel->coll_algo, ps->coll_algo, sizeof sel->coll_algo);
  const fold__rules *rs = ps->rules;
  if (rs == NULL) return FOLD_OK;
  size_t bytes = sizeof *rs + (size_t)rs->count * sizeof rs->rule[0];
  fold__rules *copy = malloc(bytes);
  if (copy == NULL) return fold__error(k, FOLD_ENOMEM, "out of memory copying the selection rules");
  memcpy(copy, rs, bytes);
  copy->path = rs->path ? strdup(rs->path) : NULL;
  sel->rules = copy;
  return FOLD_OK;
}
