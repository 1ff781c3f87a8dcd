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

static void rs_teardown(void *p) {
  rs_comm *rc = p;
  /* The communicator is going, its timers and posted receives with it
   * (fold__rs_call_free takes ours off). */
  while (rc->calls) {
    rs_call *s = rc->calls;
    rc->calls = s->next;
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
  if (fold__ext_attach(c, &fold__rs_key, rc, rs_teardown) != FOLD_OK) {
    free(rc);
    return NULL;
  }
  return rc;
}

/* The estimator of T: the smallest of the last TWIN steps this rank
 * finished without a skip, for one block size (a new size starts afresh).
 * Why the minimum and not a mean: in a ring every rank's steps run at the
 * pace of the slowest one, so a mean learns the straggler's pace as
 * "normal" and never skips it (the first version did exactly that: with a
 * rank 2 ms late per step, every rank estimated T at about 2 ms). A step
 * can only be slowed by waiting and noise, never sped up, so the smallest
 * recent one is the normal step; the window lets the estimate follow a
 * machine that got slower for good. alpha covers the noise above it.
 * Samples are steps that waited for their partial (so they include a
 * transfer): a step whose partial was already here is only a reduction.
 * A straggler's own steps are all slow, so its window cannot tell it is
 * late: each header carries the sender's own estimate, and the threshold
 * uses the smaller of ours and our left neighbour's (not fed back into
 * the window, so a low value does not circulate for ever). */
void fold__rs_t_sample(rs_comm *rc, size_t bytes, double ns) {
  if (rc->t_bytes != bytes) {
    rc->t_bytes = bytes;
    rc->tn = 0;
    rc->left_t_ns = 0;
    rc->left_ttrans_ns = 0;
    rc->t_ns = 0;
  }
  if (ns <= 0) return;
  rc->twin[rc->tn++ % TWIN] = ns;
  int k = rc->tn < TWIN ? rc->tn : TWIN;
  double m = rc->twin[0];
  for (int i = 1; i < k; i++)
    if (rc->twin[i] < m) m = rc->twin[i];
  rc->t_ns = m > 1 ? m : 1;
}

void fold__rs_threshold(rs_call *s) {
  rs_comm *rc = s->rc;
  fold_comm *c = s->co->comm;
  double t = 0;
  if (rc->t_env_ns > 0)
    t = rc->t_env_ns;
  else if (rc->t_bytes == s->maxb)
    t = rc->left_t_ns > 0 && (rc->t_ns == 0 || rc->left_t_ns < rc->t_ns) ? rc->left_t_ns : rc->t_ns;
  /* T_trans: the environment's; else what the left neighbour measured of
   * its link to us (its last header at this size); else our own link to
   * the right as a stand-in (the same kind of link on a uniform network);
   * else 0 (nothing measured yet: T, a waited step, includes a transfer). */
  int64_t mine = fold__link_ns(c, s->right, HDR + s->maxb);
  s->out_ttrans_us = mine > 0 ? (float)(mine / 1e3) : 0;
  if (rc->ttrans_env_ns >= 0)
    s->ttrans_ns = (int64_t)rc->ttrans_env_ns;
  else if (rc->t_bytes == s->maxb && rc->left_ttrans_ns > 0)
    s->ttrans_ns = (int64_t)rc->left_ttrans_ns;
  else
    s->ttrans_ns = mine > 0 ? mine : 0;
  s->threshold_ns = t > 0 ? (int64_t)(rc->alpha * t) + s->ttrans_ns : 0;
  if (s->threshold_ns > 0 && rc->t_env_ns == 0 && s->threshold_ns < rc->floor_ns) s->threshold_ns = rc->floor_ns;
  if (s->threshold_ns == 0 && t > 0) s->threshold_ns = 1;
  s->late = s->threshold_ns > 0 && rc->late_bytes == s->maxb && rc->late;
}

int fold_comm_last_skips(const fold_comm *comm, int *ranks, int max) {
  if (comm == NULL || max < 0) return FOLD_EINVAL;
  rs_comm *rc = fold__ext_get(comm, &fold__rs_key);
  /* "the last completed collective": a later call of another algorithm
   * took a newer sequence number */
  if (rc == NULL || rc->last_tag < 0 || (uint32_t)rc->last_tag != (uint32_t)((comm->coll_seq - 1) & 0x7fffffff)) return 0;
  if (ranks && max > 0 && rc->last_nskip) ranks[0] = rc->last_skip;
  return rc->last_nskip;
}
