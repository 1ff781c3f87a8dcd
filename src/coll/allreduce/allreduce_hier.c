/* allreduce_hier.c — allreduce in three phases, with one leader per host (reduce, leaders' allreduce, broadcast) or every rank leading a slice (reduce_scatter, lanes' allreduce, allgather; pipelined over chunks for large vectors) (docs/hierarchy.md).
 *
 * One leader:
 *   host phase     reduce on the host child to its rank 0 (the leader),
 *                  into the leader's recvbuf
 *   network phase  the leaders' allreduce, in place on recvbuf
 *   host phase     broadcast on the host child from the leader
 *
 * Every rank a leader (hosts of one size P > 1 on several hosts; the
 * vector cut in P slices of b = ceil(count / P) elements, slice l owned by
 * the host's rank l):
 *   host phase     reduce_scatter on the host child: rank l gets slice l
 *                  of its host's partial
 *   network phase  the lane child's allreduce of slice l (the ranks of
 *                  local rank l on every host): the P lanes of a host run
 *                  at once, each on 1/P of the bytes
 *   host phase     allgather of the slices on the host child, in place
 * When P does not divide count the vector is padded to P b elements in
 * scratch (zeros past count, whose results are dropped) and copied to
 * recvbuf at the end; else it runs in recvbuf, no copy. From
 * FOLD__HIER_PIPE_BYTES the three phases run per chunk of the vector,
 * pipelined (chunk t's reduce_scatter, chunk t-1's lane allreduce and
 * chunk t-2's allgather at once; below, ar_plan_pipe), only the last
 * chunk padded in scratch.
 *
 * Which one: FOLD_HIER_LEADERS (one, all), else by size: every rank leads
 * from FOLD__HIER_MULTI_BYTES on (below). A host of one rank skips its
 * host phases (a copy if not in place); one host (threads, a single
 * machine) runs the host child's allreduce alone. Every contribution
 * enters once: in its host's reduce (or reduce_scatter), whose result
 * enters the network phase once. The op must be commutative (hosts need
 * not hold consecutive ranks); FOLD_AVG sums and divides at the end. */
#include <string.h>

#include "coll/hier.h"

/* From this many bytes on (and with at least one element per slice),
 * every rank of a host leads its slice (when hosts are of one size).
 * Derived from the closed forms (docs/hierarchy.md, bench/hier_sim.sh):
 * at 64 x 8 every rank leading is ahead of one leader from 64 B on (at
 * 8 B, 2 elements in 8 slices, it is 0.05% behind: the lanes move padding)
 * and the gap is under 1.3% up to 1 KiB, 2.5% at 2 KiB, 1.9x at 4 KiB;
 * below 1 KiB the model's gain is smaller than what it does not count:
 * P times as many messages through each NIC. */
#define FOLD__HIER_MULTI_BYTES ((size_t)1024)

static int ar_multi(const fold__coll *co, const fold__hier_kids *kids) {
  if (kids->lane == NULL) return 0;
  int forced = fold__hier_leaders(co);
  if (forced) return forced == 2;
  return co->count * co->esize >= FOLD__HIER_MULTI_BYTES && co->count >= (size_t)kids->ppn;
}

/* Every rank leads slice l (its host rank) of b = ceil(count / P) elements. */
static int ar_plan_multi(fold__coll *co, const fold__hier_kids *kids, int i, fold__hier_phase *p) {
  fold_op op = fold__hier_op(co);
  size_t P = (size_t)kids->ppn, l = (size_t)kids->host->rank, es = co->esize;
  size_t b = (co->count + P - 1) / P, pad = P * b - co->count;
  char *v = co->rbuf; /* the P b elements the phases run in */
  if (pad && (v = fold__hier_scratch(co, P * b * es)) == NULL) return FOLD_ENOMEM;
  char *mine = v + l * b * es;
  switch (i) {
  case 0: {
    const void *src = co->sbuf; /* recvbuf when in place */
    if (pad) { /* in place in the padded vector */
      memcpy(v, src, co->count * es);
      memset(v + co->count * es, 0, pad * es);
      src = v;
    }
    *p = (fold__hier_phase){kids->host, {FOLD__COLL_REDUCE_SCATTER, src, mine, b, co->dtype, op, -1, 0, NULL},
                            "host reduce_scatter", 0, 0};
    return 1;
  }
  case 1:
    *p = (fold__hier_phase){kids->lane, {FOLD__COLL_ALLREDUCE, mine, mine, b, co->dtype, op, -1, 0, NULL},
                            "lane allreduce"};
    return 1;
  case 2:
    *p = (fold__hier_phase){kids->host, {FOLD__COLL_ALLGATHER, mine, v, b, co->dtype, FOLD_SUM, -1, 0, NULL},
                            "host allgather"};
    return 1;
  default:
    if (pad) memcpy(co->rbuf, v, co->count * es);
    return 0;
  }
}

/* ---- every rank leading, pipelined over chunks ---------------------------------------- */

/* From FOLD__HIER_PIPE_BYTES on, every rank leading runs its phases over
 * K chunks of the vector, pipelined: chunk j+1's host reduce_scatter and
 * chunk j-1's host allgather run while chunk j's lanes allreduce it, so
 * the host link's time hides under the NIC's instead of adding to it.
 * Each chunk costs its lanes a chain of latencies (rabenseifner: 2 log2 H)
 * and saves about 1/K of the host phases' time, so the best K grows as the
 * square root of the bytes over the lane's latency rounds:
 *   K = floor(sqrt(bytes / (FOLD__HIER_PIPE_UNIT ceil(log2 H)))).
 * Fitted in the simulator (network 5 us and 12.5 GB/s per NIC, 0.5 us and
 * 50 GB/s inside a host; docs/hierarchy.md, "Large sizes"): it picks the
 * best K of 1-16 tried, or one within 2%, at 64 x 8 (1, 2, 4 MiB: K 2, 4,
 * 5) and at 8 x 8 (1, 4, 16 MiB: K 4, 8, 16). The floor, 4 MiB, is above
 * the sizes the built-in rule picks hier for (tcp, 256 KiB-2 MiB), whose
 * loopback gains were measured unpipelined: there (2 x 2 processes, tcp
 * between) a lane's latency is far above the simulator's 5 us, and the
 * rule's 14 and 28 chunks at 4 and 16 MiB took 2-7x as long as none
 * (docs/hierarchy.md, "Measured"). The simulator's 4-7% at 1-2 MiB
 * (64 x 8) is left for forced calls (FOLD_HIER_CHUNKS). */
#define FOLD__HIER_PIPE_BYTES ((size_t)4 << 20)
#define FOLD__HIER_PIPE_UNIT 20480.0
#define FOLD__HIER_PIPE_MAX 64 /* chunks chosen by size at most */

/* The pipeline's chunks: K of C elements (C a multiple of P; the last
 * chunk holds the rest). K 1: not pipelined. */
static size_t ar_chunks(const fold__coll *co, const fold__hier_kids *kids, size_t *C) {
  size_t P = (size_t)kids->ppn, bytes = co->count * co->esize, K = (size_t)fold__hier_chunks(co);
  if (K == 0) {
    double rounds = 0; /* ceil(log2 H) */
    while ((1 << (int)rounds) < kids->nhosts) rounds++;
    double per = FOLD__HIER_PIPE_UNIT * (rounds > 0 ? rounds : 1);
    K = 1;
    if (bytes >= FOLD__HIER_PIPE_BYTES)
      while (K < FOLD__HIER_PIPE_MAX && (double)(K + 1) * (double)(K + 1) * per <= (double)bytes) K++;
  }
  if (K > co->count / P) K = co->count / P; /* a chunk holds at least one element per rank */
  if (K <= 1) return 1;
  size_t c = (co->count + K - 1) / K;
  *C = (c + P - 1) / P * P;
  return (co->count + *C - 1) / *C;
}

/* Phases in the steps before step t: kind q runs at steps q ... q+K-1. */
static size_t pipe_before(size_t K, size_t t) {
  size_t n = 0;
  for (size_t q = 0; q < 3; q++) n += t <= q ? 0 : t - q < K ? t - q : K;
  return n;
}

/* The schedule: at step t, chunk t's reduce_scatter, chunk t-1's lanes'
 * allreduce and chunk t-2's allgather, in that order on every rank (so
 * every child sees its calls in one order). Phase i's kind (0 reduce_scatter,
 * 1 lane allreduce, 2 allgather) and chunk; 0 past the end. */
static int pipe_phase(size_t K, int i, int *kind, size_t *j) {
  size_t lo = 0, hi = K + 2; /* the step of phase i: the last t with pipe_before(t) <= i */
  if (i < 0 || (size_t)i >= 3 * K) return 0;
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (pipe_before(K, mid) <= (size_t)i) lo = mid;
    else hi = mid;
  }
  size_t left = (size_t)i - pipe_before(K, lo);
  for (size_t q = 0; q < 3; q++) {
    if (lo < q || lo - q >= K) continue;
    if (left-- == 0) {
      *kind = (int)q;
      *j = lo - q;
      return 1;
    }
  }
  return 0;
}

static int pipe_index(size_t K, int kind, size_t j) {
  size_t t = j + (size_t)kind, i = pipe_before(K, t);
  for (size_t q = 0; q < (size_t)kind; q++) i += t >= q && t - q < K;
  return (int)i;
}

static int ar_plan_pipe(fold__coll *co, const fold__hier_kids *kids, int i, size_t K, size_t C, fold__hier_phase *p) {
  fold_op op = fold__hier_op(co);
  size_t P = (size_t)kids->ppn, l = (size_t)kids->host->rank, es = co->esize;
  size_t rest = co->count - (K - 1) * C, bl = (rest + P - 1) / P, pad = P * bl - rest;
  int kind;
  size_t j;
  if (!pipe_phase(K, i, &kind, &j)) { /* every phase is over */
    const char *v = pad ? fold__hier_scratch(co, P * bl * es) : NULL; /* allocated already: never NULL here */
    if (pad && v == NULL) return FOLD_ENOMEM;
    if (pad) memcpy((char *)co->rbuf + (K - 1) * C * es, v, rest * es);
    return 0;
  }
  size_t cnt = j + 1 < K ? C : rest, b = (cnt + P - 1) / P;
  const char *src = (const char *)co->sbuf + j * C * es; /* recvbuf when in place */
  char *v = (char *)co->rbuf + j * C * es;               /* the P b elements chunk j's phases run in */
  if (j + 1 == K && pad) { /* the last chunk, padded in scratch (touched by no other chunk's phase) */
    if ((v = fold__hier_scratch(co, P * b * es)) == NULL) return FOLD_ENOMEM;
    if (kind == 0) {
      memcpy(v, src, cnt * es);
      memset(v + cnt * es, 0, pad * es);
    }
    src = v;
  }
  char *mine = v + l * b * es;
  switch (kind) {
  case 0:
    *p = (fold__hier_phase){kids->host, {FOLD__COLL_REDUCE_SCATTER, src, mine, b, co->dtype, op, -1, 0, NULL},
                            "host reduce_scatter (a chunk)", 1, -1};
    break;
  case 1:
    *p = (fold__hier_phase){kids->lane, {FOLD__COLL_ALLREDUCE, mine, mine, b, co->dtype, op, -1, 0, NULL},
                            "lane allreduce (a chunk)", 1, pipe_index(K, 0, j)};
    break;
  default:
    *p = (fold__hier_phase){kids->host, {FOLD__COLL_ALLGATHER, mine, v, b, co->dtype, FOLD_SUM, -1, 0, NULL},
                            "host allgather (a chunk)", j + 1 < K, pipe_index(K, 1, j)};
  }
  return 1;
}

static int ar_plan(fold__coll *co, const fold__hier_kids *kids, int i, fold__hier_phase *p) {
  fold_comm *host = kids->host;
  fold_op op = fold__hier_op(co);
  if (co->count == 0) return 0;
  if (ar_multi(co, kids)) {
    size_t C = 0, K = ar_chunks(co, kids, &C);
    return K > 1 ? ar_plan_pipe(co, kids, i, K, C, p) : ar_plan_multi(co, kids, i, p);
  }
  if (kids->nhosts == 1) { /* the host phase alone */
    if (i > 0) return 0;
    *p = (fold__hier_phase){host, {FOLD__COLL_ALLREDUCE, co->sbuf, co->rbuf, co->count, co->dtype, op, -1, 0, NULL},
                            "host allreduce"};
    return 1;
  }
  int leader = kids->net != NULL;
  switch (i) {
  case 0:
    if (host->size > 1)
      *p = (fold__hier_phase){host, {FOLD__COLL_REDUCE, co->sbuf, leader ? co->rbuf : NULL, co->count, co->dtype, op, 0, 0, NULL},
                              "host reduce"};
    else if (!co->in_place)
      memcpy(co->rbuf, co->sbuf, co->count * co->esize);
    return 1;
  case 1:
    if (leader)
      *p = (fold__hier_phase){kids->net, {FOLD__COLL_ALLREDUCE, co->rbuf, co->rbuf, co->count, co->dtype, op, -1, 0, NULL},
                              "network allreduce"};
    return 1;
  case 2:
    if (host->size > 1)
      *p = (fold__hier_phase){host, {FOLD__COLL_BROADCAST, NULL, co->rbuf, co->count, co->dtype, FOLD_SUM, 0, 0, NULL},
                              "host broadcast"};
    return 1;
  default: return 0;
  }
}

static int ar_step(fold__coll *co) { return fold__hier_step(co, ar_plan); }

const fold__algo fold__allreduce_hier = {"hier", fold__hier_init, NULL, 0, fold__hier_usable, ar_step, NULL,
                                         fold__hier_describe};
