/* ring_skip_comm.c — ring_skip's per-communicator state: the online estimate of T, T_trans from the link, and the threshold. */
#include <stdlib.h>

#include "coll/ring_skip_int.h"

const char fold__rs_key = 0; /* its address is the key */

/* The default alpha, measured (docs/straggler.md): the noise-free
 * simulator favours a small alpha (it skips sooner), but T is the
 * smallest recent step, and on a loaded machine alpha = 2 skipped on
 * noise (+50% at 1 MiB on shm without a straggler); 4 and 8 recovered
 * alike from a 2 ms straggler. (It is FOLD_SKIP_ALPHA's default in
 * core/params.h.) */

/* The least threshold, with T estimated, when this host's ranks outnumber
 * its CPUs (fold__engine_shares_cpu): ranks then take turns on the cores,
 * and a neighbour that waits for a core for a time slice of the scheduler
 * (Linux's EEVDF: 0.75 ms times 1 + log2 of the CPUs up to 8, so 1.5 ms on
 * 2 CPUs) is not a straggler. Without the floor, 4 ranks on 2 cores
 * routed around such turns in most calls at 1 MiB (T there is ~50 us, so
 * alpha*T ~200 us), and each skip costs a copy, a message and a reduction
 * on a machine with no CPU to spare: +28% over ring on tcp at 1 MiB,
 * against +4-18% with a floor of 0.5-2 ms (docs/straggler.md). A
 * straggler late by 2 ms per step is still routed around. */
#define SLICE_FLOOR_NS 1000000

/* The noise margin (MARGIN_Q, MARGIN_K: ring_skip_int.h): the threshold is alpha*T + T_trans + MARGIN_K times
 * the spread of this rank's normal steps in the call's class (the window's
 * MARGIN_Q-th percentile less its smallest). T, the smallest recent step,
 * is the step without noise; a loaded host's steps spread several-fold
 * above it, and alpha*T alone was crossed by that spread in most calls
 * (without a straggler, ring_skip took 2.3x ring's time on shm and 5.7x on
 * tcp at 1 MiB / 64 KiB, skipping normal neighbours). Without noise (the
 * simulator, a quiet host) the spread is 0 and the threshold what it was.
 * A straggler's slow steps do not count: a skipped step is not sampled,
 * and the rank after a straggler in late mode waits normal steps.
 *
 * Confirmation: the margin covers a normal step's spread, not a loaded
 * host's preemptions of several milliseconds (a 1 MiB step on shm and tcp
 * here took 0.1 ms mostly and 1-10 ms now and then). A straggler is late
 * at every call, noise now and then, so on a host with noise (a margin
 * above 0) a left neighbour that was not late in the last call is waited
 * for CONFIRM thresholds at its first late step, and one threshold after
 * that (in this call and the next). A neighbour late once by more than
 * CONFIRM thresholds is still routed around; without noise (margin 0)
 * one threshold, as the paper's rule says. */

static void rs_teardown(void *p) {
  rs_comm *rc = p;
  /* The communicator is going, its timers and posted receives with it
   * (fold__rs_call_free takes ours off). */
  for (fold__list *n; (n = fold__list_pop_front(&rc->calls)) != NULL;) {
    rs_call *s = FOLD__LIST_ENTRY(n, rs_call, link);
    fold__rs_call_free(rc->comm, s);
  }
  while (rc->npool) free(rc->pool[--rc->npool]);
  free(rc);
}

rs_comm *fold__rs_comm_state(fold_comm *c) {
  rs_comm *rc = fold__ext_get(c, &fold__rs_key);
  if (rc) return rc;
  rc = calloc(1, sizeof *rc);
  if (rc == NULL) return NULL;
  /* bad values are warned about and the defaults used (core/params.c):
   * alpha 4, T estimated (0), T_trans measured (-1) */
  rc->alpha = fold__param_real(FOLD__P_SKIP_ALPHA);
  rc->t_env_ns = fold__param_real(FOLD__P_SKIP_T) * 1e9;
  rc->ttrans_env_ns = fold__param_real(FOLD__P_SKIP_TTRANS);
  if (rc->ttrans_env_ns > 0) rc->ttrans_env_ns *= 1e9;
  rc->floor_ns = fold__engine_shares_cpu(c) ? SLICE_FLOOR_NS : 0;
  rc->last_tag = -1;
  rc->comm = c;
  fold__list_init(&rc->calls);
  if (fold__ext_attach(c, &fold__rs_key, rc, rs_teardown) != FOLD_OK) {
    free(rc);
    return NULL;
  }
  return rc;
}

/* The estimator of T, per size class (block sizes of one bit length:
 * every size a training loop interleaves, its gradient buckets and its
 * 8-byte loss, keeps an estimate of its own; one estimate for the last
 * size only, restarted when the size changed, never existed in such a
 * loop). In a class, T is the smallest of the last TWIN steps this rank
 * finished without a skip that waited for their partial (a step whose
 * partial was already here is only a reduction).
 *
 * Why the minimum and not a mean: in a ring every rank's steps run at the
 * pace of the slowest one, so a mean learns the straggler's pace as
 * "normal" and never skips it (with a rank 2 ms late per step, every rank
 * estimated T at about 2 ms). A step can only be slowed by waiting and
 * noise, never sped up, so the smallest recent one is the normal step:
 * slow steps are ignored as long as one normal step is in the window.
 * alpha covers the noise above it. How it adapts: a faster machine lowers
 * the class's T at its first faster step; a slower one (a loaded host, a
 * slower link) raises it once TWIN slower steps have pushed the fast ones
 * out, i.e. after about TWIN/(n-1) calls of that class (n - 1 samples per
 * call at most). Until then the threshold is too low by the slowdown, so
 * a machine more than alpha times slower skips on every step for those
 * calls (correct results, a copy and a message more per skip).
 *
 * A size with no estimate yet (a new bucket size) takes the model of a
 * step T(b) = L + b*beta (latency, and time per byte of the transfer and
 * the reduction together) through its two nearest measured classes, one
 * smaller and one larger (interpolated). With only larger ones, the
 * nearest one's T (a step is no slower for fewer bytes); with only smaller
 * ones, the nearest one's T, its bytes' part left to T_trans (the link's
 * measured transfer time of this size, added to the threshold; with the
 * link not measured yet, no estimate: that call skips nothing): a line
 * extrapolated from two small classes (8 and 4 bytes, a few us apart in
 * noise) put T at a 1 MiB block at 330 ms on shm.
 *
 * A straggler's own steps are all slow, so its window cannot tell it is
 * late: each header carries the sender's own estimate for the call's
 * class, and the threshold uses the smaller of ours and our left
 * neighbour's (not fed back into the window, so a low value does not
 * circulate for ever). */
rs_class *fold__rs_class(rs_comm *rc, size_t bytes) {
  int k = 0;
  while (bytes && k < NCLASS - 1) {
    bytes >>= 1;
    k++;
  }
  return &rc->cls[k];
}

void fold__rs_t_sample(rs_comm *rc, size_t bytes, double ns) {
  if (ns <= 0) return;
  rs_class *k = fold__rs_class(rc, bytes);
  k->twin[k->tn++ % TWIN] = ns;
  k->bytes = (double)bytes;
  int w = k->tn < TWIN ? k->tn : TWIN;
  double v[TWIN];
  for (int i = 0; i < w; i++) { /* insertion sort of at most TWIN */
    int j = i;
    for (; j > 0 && v[j - 1] > k->twin[i]; j--) v[j] = v[j - 1];
    v[j] = k->twin[i];
  }
  k->t_ns = v[0] > 1 ? v[0] : 1;
  k->q_ns = v[(w - 1) * MARGIN_Q / 100];
  if (k->q_ns < k->t_ns) k->q_ns = k->t_ns;
}

double fold__rs_r_sample(rs_comm *rc, size_t bytes, double ns) {
  rs_class *k = fold__rs_class(rc, bytes);
  k->rwin[k->rn++ % TWIN] = ns > 0 ? ns : 0;
  int w = k->rn < TWIN ? k->rn : TWIN;
  double least = k->rwin[0];
  for (int i = 1; i < w; i++)
    if (k->rwin[i] < least) least = k->rwin[i];
  k->r_ns = least;
  return least;
}

double fold__rs_t_of(const rs_comm *rc, size_t bytes, int *small) {
  *small = 0;
  int k = (int)(fold__rs_class((rs_comm *)rc, bytes) - rc->cls);
  if (rc->cls[k].t_ns > 0) return rc->cls[k].t_ns;
  int lo = k - 1, hi = k + 1;
  while (lo >= 0 && rc->cls[lo].t_ns == 0) lo--;
  while (hi < NCLASS && rc->cls[hi].t_ns == 0) hi++;
  if (lo < 0) return hi < NCLASS ? rc->cls[hi].t_ns : 0; /* a step is no slower for fewer bytes */
  if (hi >= NCLASS) { /* the bytes' part: T_trans, in the threshold */
    *small = 1;
    return rc->cls[lo].t_ns;
  }
  const rs_class *a = &rc->cls[lo], *b = &rc->cls[hi];
  double beta = b->bytes > a->bytes ? (b->t_ns - a->t_ns) / (b->bytes - a->bytes) : 0;
  if (beta < 0) beta = 0;
  double t = a->t_ns + beta * ((double)bytes - a->bytes);
  return t > a->t_ns ? t : a->t_ns;
}

void fold__rs_threshold(rs_call *s) {
  rs_comm *rc = s->rc;
  fold_comm *c = s->co->comm;
  rs_class *k = fold__rs_class(rc, s->maxb);
  double t = 0;
  int small = 0;
  if (rc->t_env_ns > 0) {
    t = rc->t_env_ns;
  } else {
    t = fold__rs_t_of(rc, s->maxb, &small);
    if (k->left_t_ns > 0 && (t == 0 || small || k->left_t_ns < t)) {
      t = k->left_t_ns;
      small = 0;
    }
  }
  /* T_trans: the environment's; else what the left neighbour measured of
   * its link to us (its last header in this class); else our own link to
   * the right as a stand-in (the same kind of link on a uniform network);
   * else 0 (nothing measured yet: T, a waited step, includes a transfer). */
  int64_t mine = fold__link_ns(c, s->right, HDR + s->maxb);
  s->out_ttrans_us = mine > 0 ? (float)(mine / 1e3) : 0;
  if (rc->ttrans_env_ns >= 0)
    s->ttrans_ns = (int64_t)rc->ttrans_env_ns;
  else if (k->left_ttrans_ns > 0)
    s->ttrans_ns = (int64_t)k->left_ttrans_ns;
  else
    s->ttrans_ns = mine > 0 ? mine : 0;
  if (small && s->ttrans_ns == 0) t = 0; /* larger than all we measured, and the link not measured: no estimate */
  double margin = rc->t_env_ns == 0 && k->t_ns > 0 ? MARGIN_K * (k->q_ns - k->t_ns) : 0;
  s->threshold_ns = t > 0 ? (int64_t)(rc->alpha * t + margin) + s->ttrans_ns : 0;
  s->margin_ns = (int64_t)margin;
  if (s->threshold_ns > 0 && rc->t_env_ns == 0 && s->threshold_ns < rc->floor_ns) s->threshold_ns = rc->floor_ns;
  if (s->threshold_ns == 0 && t > 0) s->threshold_ns = 1;
  s->t_ns = t;
  /* Late mode. The noise level of our measure of lateness (note_late in
   * ring_skip.c): a normal reduction of the class, and when the host's
   * ranks share its CPUs, a time slice. The bar: what handing our
   * reductions on costs at this block size. Our link to the right then
   * carries two blocks a step (our raw contribution and the partial
   * passed through) and the rank after us does two reductions: measured
   * in the simulator (tests/coll/ring_skip_mix_test.c, one size, n = 4),
   * late mode at 6.25 MiB blocks cost 2 T_trans per call (13.39 against
   * 10.35 ms) where waiting for a 1.95 ms straggler cost 2.0 ms, and at
   * 256 KiB-1.5 MiB blocks it recovered all but one delay. So the bar is
   * 2 T_trans + a normal reduction, T_trans the larger of our link's
   * figure and the left neighbour's, and not less than the noise level.
   * The larger: a link's figure is its best recent rate (shm: the best of
   * 8 sends), which can understate a large block's transfer many times
   * (on shm here 0.3 ms for a 6.25 MiB block, whose transfer takes 2-6
   * ms), and a bar understated there put a 2 ms straggler into late mode
   * at 25 MiB, where it cost ring_skip 20-25 ms per call against ring. An
   * outlier the other way (a first send into cold pages) only delays late
   * mode: the count of late calls goes on under it. */
  int64_t noise = (int64_t)k->r_ns;
  if (noise < rc->floor_ns) noise = rc->floor_ns;
  s->noise_ns = noise > 0 ? noise : 1;
  int64_t tt = s->ttrans_ns;
  if (mine > tt) tt = mine;
  int64_t bar = 2 * tt + (int64_t)k->r_ns;
  s->bar_ns = bar > s->noise_ns ? bar : s->noise_ns;
  /* Enter it when our lateness, as last measured, is more than this
   * call's neighbours would wait for us (the paper's rule, from our side),
   * or when it has been above the noise level in LATE_CALLS measuring
   * calls in a row and is above this call's bar. The second rule is the
   * persistence of a straggler: late by less than alpha*T, it is never
   * routed around, yet at every step of every call it holds up everyone
   * after it (at 4 MiB on 4 ranks of this machine a normal step is 2-3 ms,
   * so alpha*T is 8-12 ms and a 2 ms straggler was named in 1 call of 45).
   * A rank late once (preempted, a one-off delay) is not: it needs
   * LATE_CALLS calls in a row. Each call in late mode measures us again
   * at its one remaining reduction, and one normal measure ends it. */
  s->late = s->threshold_ns > 0 && (rc->late_ns > s->threshold_ns ||
                                    (rc->late_calls >= LATE_CALLS && rc->late_ns > s->bar_ns));
  s->suspect = rc->left_suspect;
}

void fold__rs_report(rs_call *s) {
  fold_comm *c = s->co->comm;
  fold__coll *co = s->co;
  int around = s->skips || s->left_late;
  s->rc->last_nskip = around ? 1 : 0;
  s->rc->last_skip = around ? s->left : -1;
  if (s->skips)
    FOLD__INFO(c,
               "ring_skip: %s #%d: rank %d routed around rank %d at %d of %d steps (threshold %.1f us, "
               "T_trans %.1f us, noise margin %.1f us)",
               fold__coll_name(co->kind), co->tag, s->r, s->left, s->skips, s->n - 2, (double)s->threshold_ns / 1e3,
               (double)s->ttrans_ns / 1e3, (double)s->margin_ns / 1e3);
  else if (s->left_late)
    FOLD__INFO(c, "ring_skip: %s #%d: rank %d did the reductions of late rank %d (threshold %.1f us, T_trans %.1f us)",
               fold__coll_name(co->kind), co->tag, s->r, s->left, (double)s->threshold_ns / 1e3,
               (double)s->ttrans_ns / 1e3);
  if (s->self_skips)
    FOLD__INFO(c,
               "ring_skip: %s #%d: rank %d was late and passed %d of its %d reductions on (threshold %.1f us, "
               "T_trans %.1f us)",
               fold__coll_name(co->kind), co->tag, s->r, s->self_skips, s->n - 2, (double)s->threshold_ns / 1e3,
               (double)s->ttrans_ns / 1e3);
}

int fold_comm_last_skips(const fold_comm *comm, int *ranks, int max) {
  if (comm == NULL || max < 0) return FOLD_EINVAL;
  rs_comm *rc = fold__ext_get(comm, &fold__rs_key);
  /* "the last completed collective": a later call of another algorithm
   * took a newer sequence number */
  if (rc == NULL || rc->last_tag < 0 || (uint32_t)rc->last_tag != (uint32_t)((comm->svc->coll_seq - 1) & 0x7fffffff)) return 0;
  if (ranks && max > 0 && rc->last_nskip) ranks[0] = rc->last_skip;
  return rc->last_nskip;
}
