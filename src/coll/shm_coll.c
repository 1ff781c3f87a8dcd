/* shm_coll.c — the shared-memory collective engine: chunks, flags, waiting and mismatch checks for the `shm` algorithms.
 *
 * When every rank of a communicator is a process on one host reached
 * through the shm transport, each rank's segment carries a collective area
 * (shm_seg.h): a control block of flag words, each on its own cache line,
 * and two data slots. Every rank maps every peer's area read-only, so a
 * collective is: each rank copies its part into its own slot, says so, and
 * reads what it needs straight from the peers' slots — one copy in, one
 * copy (or reduction) out, no messages, no per-call allocation.
 *
 * A call is cut into chunks of at most one slot. Chunks get global indices
 * (a->issued hands them out in call order, identically on every rank since
 * every rank makes the same calls), chunk g lives in slot g & 1 of every
 * rank, and each rank publishes three counters, which only ever grow:
 *
 *   arrive = g + 1   my part of chunk g is in my slot (and my signature
 *                    of the call is in sig[g & 1])
 *   mid    = g + 1   (calls with a mid phase) my share of chunk g, e.g.
 *                    the sub-block I reduced, is in my slot
 *   done   = g + 1   I have read everything of chunk g I need
 *
 * Per chunk, every rank: fills (needs every rank's done >= g - 1, i.e.
 * nobody still reads chunk g - 2 from that slot), publishes arrive, waits
 * for every arrive, checks every signature, runs mid and waits for every
 * mid if the call has one, drains, publishes done. The fill of chunk g + 1
 * happens as soon as its slot is free, so it overlaps the wait for chunk
 * g: double buffering. Every rank waits for every arrive, even where it
 * needs no data (a broadcast root), because that is where signatures are
 * compared: some rank sees every mismatch, tells everyone through the
 * ordinary report path (fold__comm_fail_and_tell), and no rank hangs.
 *
 * Waiting never blocks: a step checks the flags, does what is ready and
 * returns 0; the engine spins, yields and then sleeps on the rank's own
 * doorbell, which a peer rings (fold__shm_area_wake) after publishing a
 * flag. A peer that is found lost (pidfd, shm.c) while a flag from it is
 * missing fails the call with FOLD_EPEER naming it; a peer that already
 * published what we need may leave. Calls on one communicator run in call
 * order (a->completed), so several nonblocking ones may be outstanding.
 */
#include <stdio.h>
#include <string.h>

#include "coll/shm_coll.h"

enum { W_ARRIVE, W_MID, W_DONE };

static fold__shm_area *area_of(const fold_comm *c) { return c->ntps == 1 ? fold__shm_area_of(c->tps[0]) : NULL; }

const char *fold__shm_usable(const fold_comm *c) {
  if (c->size == 1) return NULL; /* nothing to share: a local copy */
  if (c->sim_drive) return "the simulated transport has no shared memory";
  /* The collective area of a rank's segment is one per process: a
   * sub-communicator would share it with its parent and siblings. */
  if (c->to_root) return "a sub-communicator (fold_comm_split) shares its ranks' collective areas with its parent";
  if (c->ntps != 1) return "its ranks are reached through more than one transport (not all on one host over shm)";
  const fold__tp *tp = c->tps[0];
  if (tp->ops->kind == FOLD__TP_KIND_INPROC) return "its ranks are threads of one process (inproc transport), not processes sharing memory";
  if (tp->ops->kind != FOLD__TP_KIND_SHM) return "its peers are reached over tcp, not through shared memory";
  /* One transport, and it is shm: it reaches every peer (bootstrap maps each
   * peer to exactly one transport), so no per-peer scan on every call. */
  if (area_of(c) == NULL)
    return "the shared-memory collective area is off (FOLD_SHM_COLL_BYTES=0, or the ranks disagree on its size)";
  return NULL;
}

const char *fold__shm_fits(const fold_comm *c, fold__coll_kind kind, size_t esize) {
  const fold__shm_area *a = area_of(c);
  if (c->size == 1 || a == NULL) return NULL; /* one rank copies locally; no area: usable() says why */
  size_t pieces = kind == FOLD__COLL_ALLTOALL || kind == FOLD__COLL_REDUCE_SCATTER || kind == FOLD__COLL_SCATTER
                    ? (size_t)c->size : 1;
  if (a->slot_bytes / pieces / esize == 0)
    return pieces > 1 ? "a shared-memory slot (FOLD_SHM_COLL_BYTES) holds less than one element per rank"
                      : "a shared-memory slot (FOLD_SHM_COLL_BYTES) is smaller than one element";
  return NULL;
}

int fold__shm_init(fold__coll *co, size_t elems, size_t nchunks, int use_mid) {
  if (elems == 0)
    return fold__error(co->comm, FOLD_EINVAL, "%s: rank %d: shm: a %zu-rank communicator's slots are too small for "
                       "one element per rank (raise FOLD_SHM_COLL_BYTES)", fold__coll_name(co->kind), co->rank, (size_t)co->size);
  co->u[FOLD__SHM_U_ELEMS] = elems;
  co->u[FOLD__SHM_U_NCHUNKS] = nchunks ? nchunks : 1;
  co->u[FOLD__SHM_U_FILL] = co->u[FOLD__SHM_U_DONE] = 0;
  co->v[FOLD__SHM_V_PHASE] = 0;
  co->v[FOLD__SHM_V_MID] = use_mid;
  co->v[FOLD__SHM_V_WAIT] = 0;
  fold__shm_area *a = area_of(co->comm);
  if (co->size > 1 && a == NULL) /* selection checked usable(): cannot happen */
    return fold__error(co->comm, FOLD_EINTERNAL, "%s: rank %d: shm collective area missing", fold__coll_name(co->kind), co->rank);
  if (a) {
    co->u[FOLD__SHM_U_BASE] = a->issued;
    a->issued += co->u[FOLD__SHM_U_NCHUNKS];
  }
  return FOLD_OK;
}

/* ---- flags ---------------------------------------------------------------------- */

static _Atomic uint64_t *word(fold__shm_ctl *ctl, int which) {
  return which == W_ARRIVE ? &ctl->arrive : which == W_MID ? &ctl->mid : &ctl->done;
}

/* Release our data with the flag, then ring every peer that may sleep on it. */
static void publish(fold__shm_area *a, int which, uint64_t v) {
  atomic_store_explicit(word(a->ctl[a->rank], which), v, memory_order_release);
  fold__shm_area_wake(a);
}

static int round_mismatch(fold__coll *co, fold__shm_area *a, int p);

/* Waiting for arrive >= v, first missing at peer `from`: does any missing
 * peer run this call with a round algorithm? Every missing peer is looked
 * at, not only the first: a round-running peer whose left neighbour runs
 * shm can never finish the call (the signature it waits for never comes),
 * so its note stays, while others may finish and note a later call. */
static int rounds_missing(fold__coll *co, fold__shm_area *a, uint64_t v, int from) {
  for (int k = 0; k < a->size; k++) {
    int p = (from + k) % a->size;
    if (p == a->rank || atomic_load_explicit(&a->ctl[p]->arrive, memory_order_acquire) >= v) continue;
    if (atomic_load_explicit(&a->ctl[p]->round_seq, memory_order_acquire) == (uint32_t)co->tag + 1u)
      return round_mismatch(co, a, p);
  }
  return 0;
}

/* 1 when every peer's counter reached v, 0 if not yet, <0 if a peer we
 * still wait for is lost or runs this call with another algorithm. Starts
 * at the peer that was missing last time. */
static int all_reached(fold__coll *co, fold__shm_area *a, int which, uint64_t v) {
  int n = a->size;
  for (int k = 0; k < n; k++) {
    int p = (co->v[FOLD__SHM_V_WAIT] + k) % n;
    if (p == a->rank) continue;
    if (atomic_load_explicit(word(a->ctl[p], which), memory_order_acquire) >= v) continue;
    co->v[FOLD__SHM_V_WAIT] = p;
    if (co->comm->lost[p]) {
      char what[96];
      snprintf(what, sizeof what, "%s (shm, chunk %llu) waits for", fold__coll_name(co->kind),
               (unsigned long long)(v - 1 - co->u[FOLD__SHM_U_BASE]));
      return fold__fail_for_lost(co->comm, p, what);
    }
    if (which == W_ARRIVE) return rounds_missing(co, a, v, p);
    return 0;
  }
  return 1;
}

/* ---- signatures ------------------------------------------------------------------- */

static void sig_write(fold__coll *co, fold__shm_ctl *me, uint64_t g) {
  fold__shm_csig *s = &me->sig[g & 1];
  s->chunk = (uint32_t)g;
  s->index = (uint32_t)(g - co->u[FOLD__SHM_U_BASE]);
  s->count_lo = (uint32_t)co->sig.count;
  s->count_hi = (uint32_t)(co->sig.count >> 32);
  s->root = co->sig.root;
  s->op = co->sig.op;
  s->coll = co->sig.coll;
  s->dtype = co->sig.dtype;
}

/* Peer p runs this call (same sequence number) with a round algorithm, we
 * with shm: report both calls. The peer may overwrite its note with a later
 * call's while we copy it (seqlock); then we name its algorithm vaguely. */
static int round_mismatch(fold__coll *co, fold__shm_area *a, int p) {
  fold__shm_ctl *ctl = a->ctl[p];
  /* A seqlock without fences (TSan has none): the writer zeroes round_seq,
   * stores the words with release, then the new round_seq; a word of a
   * later note read here (acquire) makes the second read of round_seq see
   * 0 or that note's number, never ours. */
  uint32_t want = (uint32_t)co->tag + 1u;
  uint32_t s1 = atomic_load_explicit(&ctl->round_seq, memory_order_acquire);
  uint64_t w[3];
  for (int i = 0; i < 3; i++) w[i] = atomic_load_explicit(&ctl->round_sig[i], memory_order_acquire);
  uint32_t s2 = atomic_load_explicit(&ctl->round_seq, memory_order_acquire);
  fold__sig theirs;
  _Static_assert(sizeof theirs == sizeof w, "round_sig holds a fold__sig");
  memcpy(&theirs, w, sizeof theirs);
  char d1[160], d2[160], msg[FOLD__ERRLEN];
  fold__coll_describe(&co->sig, d1, sizeof d1);
  if (s1 == want && s2 == want)
    fold__coll_describe(&theirs, d2, sizeof d2);
  else
    snprintf(d2, sizeof d2, "it with an algorithm other than shm");
  snprintf(msg, sizeof msg, "collective #%d: rank %d called %s but rank %d called %s", co->tag, co->rank, d1, p, d2);
  return fold__comm_fail_and_tell(co->comm, FOLD_EMISMATCH, msg);
}

void fold__shm_note_round_call(const fold__coll *co) {
  fold__shm_area *a = co->size > 1 ? area_of(co->comm) : NULL;
  if (a == NULL) return;
  fold__shm_ctl *me = a->ctl[a->rank];
  uint64_t w[3];
  memcpy(w, &co->sig, sizeof w);
  atomic_store_explicit(&me->round_seq, 0, memory_order_relaxed);
  for (int i = 0; i < 3; i++) atomic_store_explicit(&me->round_sig[i], w[i], memory_order_release);
  atomic_store_explicit(&me->round_seq, (uint32_t)co->tag + 1u, memory_order_release);
  fold__shm_area_wake(a); /* shm-running peers may sleep waiting for our arrive */
}

/* The index of the shm algorithm in collective k's table (messages only). */
static uint8_t shm_algo_of(unsigned k) {
  if (k >= FOLD__COLL_COUNT) return 0;
  const fold__algo *const *t = fold__algo_tables[k].algos;
  for (int i = 0; t[i]; i++)
    if (t[i]->step) return (uint8_t)i;
  return 0;
}

/* Every peer filled chunk g: its signature for g must be ours. The first
 * difference is reported to every rank (FOLD_EMISMATCH naming both calls).
 * The slot holds no algorithm or element size: a peer here runs shm, and a
 * dtype's size is the same on every rank. */
static int sig_check(fold__coll *co, fold__shm_area *a, uint64_t g) {
  for (int p = 0; p < a->size; p++) {
    if (p == a->rank) continue;
    fold__shm_csig t = a->ctl[p]->sig[g & 1];
    uint32_t index = (uint32_t)(g - co->u[FOLD__SHM_U_BASE]);
    fold__sig theirs = {.count = (uint64_t)t.count_hi << 32 | t.count_lo, .root = t.root, .esize = co->sig.esize, .op = t.op, .coll = t.coll,
                        .dtype = t.dtype, .algo = co->sig.algo};
    if (t.coll != co->sig.coll || t.dtype != co->sig.dtype) {
      theirs.esize = (uint32_t)fold_dtype_size((fold_dtype)t.dtype);
      theirs.algo = shm_algo_of(t.coll);
    }
    if (t.chunk == (uint32_t)g && t.index == index && fold__coll_sig_equal(&co->sig, &theirs))
      continue;
    char d1[160], d2[160], msg[FOLD__ERRLEN];
    fold__coll_describe(&co->sig, d1, sizeof d1);
    fold__coll_describe(&theirs, d2, sizeof d2);
    if (t.coll < FOLD__COLL_COUNT && t.chunk == (uint32_t)g && t.index != index && strcmp(d1, d2) == 0)
      snprintf(d2 + strlen(d2), sizeof d2 - strlen(d2), " after a different sequence of calls");
    snprintf(msg, sizeof msg, "collective #%d: rank %d called %s but rank %d called %s", co->tag, co->rank, d1, p, d2);
    return fold__comm_fail_and_tell(co->comm, FOLD_EMISMATCH, msg);
  }
  return FOLD_OK;
}

/* ---- what a stuck call waits for ---------------------------------------------------
 * For a timeout's message: the flag the chunk loop waits on (the same
 * decisions as fold__shm_step, without acting) and the peers that have
 * not raised it yet. */

int fold__shm_describe(fold__coll *co, char *buf, size_t cap) {
  buf[0] = '\0';
  fold__shm_area *a = area_of(co->comm);
  if (co->size == 1 || a == NULL) return -1;
  uint64_t base = co->u[FOLD__SHM_U_BASE], nch = co->u[FOLD__SHM_U_NCHUNKS];
  size_t f = co->u[FOLD__SHM_U_FILL], i = co->u[FOLD__SHM_U_DONE];
  if (a->completed != base) {
    snprintf(buf, cap, "an earlier shm collective on this communicator to finish");
    return -1;
  }
  int which;
  uint64_t v;
  size_t chunk;
  const char *what;
  if (i < f && co->v[FOLD__SHM_V_PHASE] == 0) {
    which = W_ARRIVE, v = base + i + 1, chunk = i, what = "its part of the chunk in its slot";
  } else if (i < f && co->v[FOLD__SHM_V_PHASE] == 1) {
    which = W_MID, v = base + i + 1, chunk = i, what = "its share of the chunk";
  } else if (f < nch && base + f >= 2) {
    which = W_DONE, v = base + f - 1, chunk = f, what = "to finish reading the slot this chunk reuses";
  } else {
    return -1;
  }
  int first = -1;
  size_t len = 0;
  for (int p = 0; p < a->size && len < cap; p++) {
    if (p == a->rank || atomic_load_explicit(word(a->ctl[p], which), memory_order_acquire) >= v) continue;
    int w = snprintf(buf + len, cap - len, first < 0 ? "rank %d" : ", rank %d", p);
    if (first < 0) first = p;
    if (w > 0) len += (size_t)w;
  }
  if (first >= 0 && len < cap)
    snprintf(buf + len, cap - len, " (chunk %zu of %llu of shm %s: %s)", chunk + 1, (unsigned long long)nch,
             fold__coll_name(co->kind), what);
  return first;
}

/* ---- one rank: nothing to share ------------------------------------------------------ */

static void local_only(fold__coll *co) {
  size_t bytes = co->count * co->esize;
  if (co->kind == FOLD__COLL_BROADCAST || co->kind == FOLD__COLL_BARRIER || co->in_place || bytes == 0) return;
  memcpy(co->rbuf, co->sbuf, bytes); /* FOLD_AVG over one rank divides by 1 */
}

/* ---- the chunk loop ----------------------------------------------------------------- */

int fold__shm_step(fold__coll *co, const fold__shm_kind *k) {
  if (co->size == 1) {
    local_only(co);
    return 1;
  }
  fold__shm_area *a = area_of(co->comm);
  uint64_t base = co->u[FOLD__SHM_U_BASE], nch = co->u[FOLD__SHM_U_NCHUNKS];
  if (a->completed != base) return 0; /* an earlier shm call on this communicator is still running */
  fold__shm_ctl *me = a->ctl[a->rank];
  int reduces = co->kind == FOLD__COLL_ALLREDUCE || co->kind == FOLD__COLL_REDUCE || co->kind == FOLD__COLL_REDUCE_SCATTER;
  for (;;) {
    int moved = 0, rc;
    size_t f = co->u[FOLD__SHM_U_FILL], i = co->u[FOLD__SHM_U_DONE];
    if (i < f) {
      uint64_t g = base + i;
      int s = (int)(g & 1);
      if (co->v[FOLD__SHM_V_PHASE] == 0) { /* everyone's part is in */
        if ((rc = all_reached(co, a, W_ARRIVE, g + 1)) < 0) return rc;
        /* a straggler (FOLD_INJECT_DELAY) waits before each chunk it reduces */
        if (rc && fold__coll_straggle(co, reduces)) return 0;
        if (rc) {
          if ((rc = sig_check(co, a, g)) < 0) return rc;
          if (co->v[FOLD__SHM_V_MID]) {
            k->mid(co, a, i, s);
            publish(a, W_MID, g + 1);
            co->v[FOLD__SHM_V_PHASE] = 1;
          } else {
            co->v[FOLD__SHM_V_PHASE] = 2;
          }
          moved = 1;
        }
      }
      if (co->v[FOLD__SHM_V_PHASE] == 1) { /* everyone's share is in */
        if ((rc = all_reached(co, a, W_MID, g + 1)) < 0) return rc;
        if (rc) co->v[FOLD__SHM_V_PHASE] = 2;
      }
      if (co->v[FOLD__SHM_V_PHASE] == 2) {
        if (k->drain) k->drain(co, a, i, s);
        publish(a, W_DONE, g + 1);
        co->v[FOLD__SHM_V_PHASE] = 0;
        co->u[FOLD__SHM_U_DONE] = ++i;
        moved = 1;
        if (i == nch) {
          a->completed = base + nch;
          return 1;
        }
      }
    }
    /* fill ahead: chunk f may go in while chunk f - 1 is still being
     * worked on, once nobody reads its slot (chunk f - 2) any more. After
     * the current chunk's work: peers may be waiting for our mid/done. */
    if (f < nch && f <= i + 1) {
      uint64_t g = base + f;
      rc = g >= 2 ? all_reached(co, a, W_DONE, g - 1) : 1;
      if (rc < 0) return rc;
      if (rc) {
        if (k->fill) k->fill(co, a, f, fold__shm_slot(a, a->rank, (int)(g & 1)));
        sig_write(co, me, g);
        publish(a, W_ARRIVE, g + 1);
        co->u[FOLD__SHM_U_FILL] = ++f;
        moved = 1;
      }
    }
    if (!moved) return 0;
  }
}
