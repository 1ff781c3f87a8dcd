/* sim_model.c — textbook (Hockney alpha-beta plus gamma per byte reduced) costs of fold's collective algorithms. */
#include "sim_model.h"

#include <math.h>
#include <string.h>

static int is(const char *a, const char *b) { return strcmp(a, b) == 0; }

static double flog2(int n) { return floor(log2((double)n)); }
static double clog2(int n) { return ceil(log2((double)n)); }

static double allreduce(const char *algo, int n, double S, double a, double b, double g) {
  double pof2 = exp2(flog2(n)), L = flog2(n), extra = pof2 < n ? 1 : 0;
  if (is(algo, "ring") || is(algo, "ring_segmented")) {
    /* segmented: J segments per block (1 MiB each by default, at least two
     * once a block holds 2 x 64 KiB) pay J-1 extra latencies */
    double block = S / n, J = is(algo, "ring") ? 1 : fmax(ceil(block / (1 << 20)), 1);
    if (J < 2 && is(algo, "ring_segmented") && block >= 2 * 65536.0) J = 2;
    return (2 * (n - 1) + J - 1) * a + 2.0 * (n - 1) / n * S * b + (double)(n - 1) / n * S * g;
  }
  if (is(algo, "recursive_doubling")) /* the fold and unfold rounds when n is not a power of two */
    return (L + 2 * extra) * (a + S * b) + (L + extra) * S * g;
  if (is(algo, "rabenseifner"))
    return (2 * L + 2 * extra) * a + (2 * (pof2 - 1) / pof2 + 2 * extra) * S * b + ((pof2 - 1) / pof2 + extra) * S * g;
  if (is(algo, "reduce_bcast"))
    return 2 * flog2(n) * a + 2 * clog2(n) * S * b + clog2(n) * S * g;
  if (is(algo, "direct")) {
    /* P pieces of S/P bytes (4096 float32 elements), q = ceil(P/n) per
     * owner; each of the two stages is bound by the busiest link: an owner
     * takes q pieces from n-1 ranks (and gives them to n-1), a rank
     * gives/takes every piece it does not own */
    double P = ceil(S / (4096.0 * 4)), q = ceil(P / n), piece = S / P;
    double link = fmax((n - 1) * q * piece, S - q * piece);
    return 2 * (a + link * b) + (n - 1) * q * piece * g;
  }
  return NAN;
}

double fold__model_time(const char *coll, const char *algo, int n, double bytes, const fold_sim_params *p) {
  if (coll == NULL || algo == NULL || p == NULL || n < 1)
    return NAN;
  if (n == 1)
    return 0;
  const double a = p->latency, b = p->byte_time, g = p->op_time, B = bytes, N = n;
  if (is(coll, "allreduce"))
    return allreduce(algo, n, B, a, b, g);
  if (is(coll, "broadcast")) {
    if (is(algo, "binomial")) return flog2(n) * a + clog2(n) * B * b;
    if (is(algo, "scatter_allgather")) return (flog2(n) + N - 1) * a + 2 * (N - 1) / N * B * b;
    if (is(algo, "pipeline")) { /* segments of 256 KiB by default (FOLD_SEGMENT_BYTES) */
      double seg = fmin(B, 256.0 * 1024), nseg = seg > 0 ? ceil(B / seg) : 1;
      return (N - 1) * a + (nseg + N - 2) * seg * b;
    }
  } else if (is(coll, "reduce")) {
    if (is(algo, "binomial")) return flog2(n) * a + clog2(n) * (B * b + B * g);
    if (is(algo, "rabenseifner")) {
      double p2 = exp2(flog2(n)), x = p2 < N ? 1 : 0;
      return (2 * flog2(n) + x) * a + (2 * (p2 - 1) / p2 + x) * B * b + ((p2 - 1) / p2 + x) * B * g;
    }
  } else if (is(coll, "reduce_scatter")) { /* S = n*B bytes in sendbuf */
    if (is(algo, "ring") || is(algo, "pairwise") || (is(algo, "recursive_halving") && exp2(flog2(n)) == N)) {
      double lat = is(algo, "recursive_halving") ? flog2(n) : N - 1;
      return lat * a + (N - 1) * B * b + (N - 1) * B * g;
    }
  } else if (is(coll, "allgather")) { /* S = n*B gathered bytes */
    if (is(algo, "ring")) return (N - 1) * a + (N - 1) * B * b;
    if (is(algo, "bruck")) return clog2(n) * a + (N - 1) * B * b;
    if (is(algo, "recursive_doubling") && exp2(flog2(n)) == N) return flog2(n) * a + (N - 1) * B * b;
  } else if (is(coll, "gather") || is(coll, "scatter")) {
    if (is(algo, "linear")) return a + (N - 1) * B * b;
    if (is(algo, "binomial")) return flog2(n) * a + (N - 1) * B * b;
  } else if (is(coll, "alltoall")) {
    if (is(algo, "pairwise")) return (N - 1) * a + (N - 1) * B * b;
    if (is(algo, "bruck")) { /* step j sends the blocks whose index has bit j set */
      double blocks = 0;
      for (int j = 0; (1 << j) < n; j++)
        for (int i = 0; i < n; i++) blocks += (i >> j) & 1;
      return clog2(n) * a + blocks * B * b;
    }
  } else if (is(coll, "barrier")) {
    if (is(algo, "dissemination")) return clog2(n) * (a + b);
  }
  return NAN;
}

double fold__model_time_hosts(const char *coll, const char *algo, int hosts, int ppn, int roundrobin, double bytes,
                              const fold_sim_params *host, const fold_sim_params *net) {
  if (coll == NULL || algo == NULL || host == NULL || net == NULL || hosts < 1 || ppn < 1 || !is(coll, "allreduce"))
    return NAN;
  const int n = hosts * ppn;
  if (n == 1)
    return 0;
  const double S = bytes, ah = host->latency, bh = host->byte_time, an = net->latency, bn = net->byte_time;
  const double g = net->op_time;
  if (is(algo, "ring")) {
    /* Every step each rank sends S/n to rank r + 1 once its left
     * neighbour's block is in, so the critical path walks back around the
     * ring: 2(n-1) hops, of which the share f crosses between hosts
     * (contiguous: one hop per host, f = 1/ppn; round robin: all). A NIC
     * carries k such blocks per step (contiguous 1, round robin ppn): the
     * time is the longer of the path and the busiest NIC's bytes. */
    double blk = S / n, f = hosts == 1 ? 0 : roundrobin ? 1 : 1.0 / ppn, k = roundrobin ? ppn : 1;
    double path = 2 * (n - 1) * (f * (an + blk * bn) + (1 - f) * (ah + blk * bh));
    double nic = hosts == 1 ? 0 : an + 2 * (n - 1) * k * blk * bn;
    return fmax(path, nic) + (double)(n - 1) / n * S * g;
  }
  if (is(algo, "recursive_doubling")) {
    if ((hosts & (hosts - 1)) || (ppn & (ppn - 1)))
      return NAN;
    /* round d pairs r with r ^ d: inside the host for d < ppn (contiguous)
     * or d >= hosts (round robin); otherwise all ppn ranks of the host
     * cross at once. Either way log2 ppn rounds inside, log2 hosts across */
    double Lh = log2((double)ppn), Ln = log2((double)hosts);
    /* across hosts the rounds overlap: a rank whose partner's vector is in
     * sends its next round while the NIC still carries its host's others,
     * so the network part is the longer of the latency path and the NIC's
     * bytes (ppn vectors per round) */
    double across = Ln > 0 ? fmax(Ln * (an + S * bn), an + Ln * ppn * S * bn) : 0;
    return Lh * (ah + S * bh) + across + (Lh + Ln) * S * g;
  }
  return NAN;
}

double fold__model_time_hier(const char *coll, int hosts, int ppn, double bytes, const char *host_first,
                             const char *net_algo, const char *host_back, const fold_sim_params *host,
                             const fold_sim_params *net) {
  if (coll == NULL || host == NULL || net == NULL || hosts < 1 || ppn < 1)
    return NAN;
  /* The phases run one after the other, each a collective of its own
   * child: the host phases on ppn ranks of one host (their own links:
   * traffic inside a host leaves the NIC alone), the leaders' phase on one
   * rank per host, so each leader has its host's NIC to itself. Reductions
   * cost the ranks' op_time, which is the world's (net's) under hosts. */
  fold_sim_params h = *host;
  h.op_time = net->op_time;
  const char *first = coll, *mid = coll, *back = coll; /* the phases' collectives */
  if (is(coll, "allreduce"))
    first = "reduce", back = "broadcast";
  else if (!is(coll, "broadcast") && !is(coll, "reduce") && !is(coll, "barrier"))
    return NAN;
  double t = 0;
  if (ppn > 1)
    t += fold__model_time(first, host_first, ppn, bytes, &h) + fold__model_time(back, host_back, ppn, bytes, &h);
  if (hosts > 1)
    t += fold__model_time(mid, net_algo, hosts, bytes, net);
  return t;
}
