/* shm_area.c — the shm transport's collective area: flags, chunks, waiting, peer loss and signatures for the `shm` collectives.
 *
 * When every rank of a communicator is a process on one host reached
 * through this transport, each rank's segment carries a collective area
 * (shm_seg.h): a control block of flag words, each on its own cache line,
 * and two data slots. Every rank maps every peer's area read-only, so a
 * collective is: each rank copies its part into its own slot, says so, and
 * reads what it needs straight from the peers' slots — one copy in, one
 * copy (or reduction) out, no messages, no per-call allocation. The
 * collective layer reaches this file only through the vtable's `coll`
 * entry (transport.h, fold__area): it says what a call puts into its slot
 * and takes out (fold__area_kind), and how it judges and reports a
 * mismatch (fold__area_hooks); the flags are ours.
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
 * layer above's hook (fold__comm_fail_and_tell), and no rank hangs.
 *
 * Waiting never blocks: a step checks the flags, does what is ready and
 * returns 0; the engine spins, yields and then sleeps on the rank's own
 * doorbell, which a peer rings (area_wake) after publishing a flag. A peer
 * that is found lost (pidfd, shm.c) while a flag from it is missing fails
 * the call with FOLD_EPEER naming it; a peer that already published what
 * we need may leave. Calls on one communicator run in call order
 * (a->completed), so several nonblocking ones may be outstanding.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/shm/shm_tp.h"

enum { W_ARRIVE, W_MID, W_DONE };

static const fold__area_ops area_ops;

/* ---- making the area ---------------------------------------------------------- */

fold__shm_area *fold__shm_area_new(fold__shm_tp *t, int rank, int size, size_t slot_bytes) {
  fold__shm_area *a = calloc(1, sizeof *a);
  if (a) {
    a->ctl = calloc((size_t)size, sizeof *a->ctl);
    a->pub.data = calloc((size_t)size, sizeof *a->pub.data);
    a->peer = calloc((size_t)size, sizeof *a->peer);
  }
  if (a == NULL || a->ctl == NULL || a->pub.data == NULL || a->peer == NULL) {
    fold__shm_area_delete(a);
    return NULL;
  }
  a->pub.ops = &area_ops;
  a->pub.rank = rank;
  a->pub.size = size;
  a->pub.slot_bytes = slot_bytes;
  a->tp = &t->base;
  return a;
}

void fold__shm_area_delete(fold__shm_area *a) {
  if (a == NULL) return;
  free(a->ctl);
  free(a->pub.data);
  free(a->peer);
  free(a->maps);
  free(a);
}

/* The world's area exists when every peer is reached through this
 * transport and every segment (ours included) carries an area of the same
 * slot size; otherwise the shm collectives are not usable
 * (src/coll/shm_coll.c). */
void fold__shm_area_make(fold__shm_tp *t) {
  fold_comm *c = t->base.comm;
  int n = c->size;
  if (t->own.coll == NULL || t->nwatch != n - 1)
    return;
  for (int p = 0; p < n; p++)
    if (p != c->rank && (t->peers[p].map.coll == NULL || t->peers[p].map.coll_slot != t->own.coll_slot)) {
      FOLD__INFO(c, "shm: peer rank %d's collective area differs from ours: shm collectives off", p);
      return;
    }
  fold__shm_area *a = fold__shm_area_new(t, c->rank, n, (size_t)t->own.coll_slot);
  if (a == NULL)
    return; /* shm collectives off; everything else works */
  for (int p = 0; p < n; p++) {
    char *base = p == c->rank ? t->own.coll : t->peers[p].map.coll;
    a->ctl[p] = (fold__shm_ctl *)base;
    a->pub.data[p] = base + FOLD__SHM_PAGE;
    a->peer[p] = p == c->rank ? NULL : &t->peers[p];
  }
  a->made = 1;
  t->area = a;
}

void fold__shm_area_free(fold__shm_tp *t) {
  fold__shm_area_delete(t->area);
  t->area = NULL;
}

fold__area *fold__shm_coll(fold__tp *tp, fold_comm *c) {
  fold__shm_tp *t = (fold__shm_tp *)tp;
  if (c == tp->comm) /* the world: the hot path */
    return t->area ? &t->area->pub : NULL;
  return fold__shm_kid_area(t, c);
}

/* The sum of the counters of a's peers (a child's: those mapped). */
static uint64_t kid_sum(const fold__shm_area *a) {
  uint64_t sum = 0;
  for (int p = 0; p < a->pub.size; p++) {
    const fold__shm_ctl *x = a->ctl[p];
    if (p == a->pub.rank || x == NULL) continue;
    sum += atomic_load_explicit(&x->arrive, memory_order_seq_cst) + atomic_load_explicit(&x->mid, memory_order_seq_cst) +
           atomic_load_explicit(&x->done, memory_order_seq_cst);
  }
  return sum;
}

uint64_t fold__shm_area_sum(const fold__shm_tp *t) {
  /* Every poll of a waiting rank runs this: the world's loop stays as lean
   * as it was (every peer's area is mapped there); folding it into the
   * children's NULL-checked loop cost ~4% of an 8-byte allreduce at n = 2. */
  uint64_t sum = 0;
  const fold__shm_area *a = t->area;
  for (int p = 0; a && p < a->pub.size; p++) {
    if (p == a->pub.rank) continue;
    const fold__shm_ctl *x = a->ctl[p];
    sum += atomic_load_explicit(&x->arrive, memory_order_seq_cst) + atomic_load_explicit(&x->mid, memory_order_seq_cst) +
           atomic_load_explicit(&x->done, memory_order_seq_cst);
  }
  FOLD__LIST_FOR_EACH(const fold__shm_area, k, &t->kids, link) sum += kid_sum(k);
  return sum;
}

/* A collective flag was just published (a release store). Ring only the
 * peers that announced sleeping: an atomic add on a peer's doorbell would
 * pull its cache line away from a peer that polls it, twice per call. No
 * wake-up is lost: we store the flag, fence, then read `sleeping`; a
 * sleeper stores `sleeping`, then compares the counters with what its last
 * poll saw (shm_wait). In the single order of those seq_cst operations,
 * either we see it sleeping and ring, or it sees our flag and stays up. */
static void area_wake(fold__shm_area *a) {
  fold__shm_tp *t = (fold__shm_tp *)a->tp;
  atomic_thread_fence(memory_order_seq_cst);
  for (int i = 0; i < a->pub.size; i++) {
    fold__shm_peer *p = a->peer[i];
    if (p && atomic_load_explicit(&p->map.hdr->sleeping, memory_order_seq_cst))
      fold__shm_ring_bell(t, p);
  }
}

/* ---- flags ---------------------------------------------------------------------- */

static _Atomic uint64_t *word(fold__shm_ctl *ctl, int which) {
  return which == W_ARRIVE ? &ctl->arrive : which == W_MID ? &ctl->mid : &ctl->done;
}

/* Release our data with the flag, then ring every peer that may sleep on it. */
static void publish(fold__shm_area *a, int which, uint64_t v) {
  atomic_store_explicit(word(a->ctl[a->pub.rank], which), v, memory_order_release);
  area_wake(a);
}

static int round_mismatch(fold__area_call *call, fold__shm_area *a, int p);

/* Waiting for arrive >= v, first missing at peer `from`: does any missing
 * peer run this call with a round algorithm? Every missing peer is looked
 * at, not only the first: a round-running peer whose left neighbour runs
 * shm can never finish the call (the signature it waits for never comes),
 * so its note stays, while others may finish and note a later call. */
static int rounds_missing(fold__area_call *call, fold__shm_area *a, uint64_t v, int from) {
  int n = a->pub.size;
  for (int k = 0; k < n; k++) {
    int p = (from + k) % n;
    if (p == a->pub.rank || atomic_load_explicit(&a->ctl[p]->arrive, memory_order_acquire) >= v) continue;
    if (atomic_load_explicit(&a->ctl[p]->round_seq, memory_order_acquire) == call->seq + 1u)
      return round_mismatch(call, a, p);
  }
  return 0;
}

/* 1 when every peer's counter reached v, 0 if not yet, <0 if a peer we
 * still wait for is lost or runs this call with another algorithm. Starts
 * at the peer that was missing last time. */
static int all_reached(fold__area_call *call, fold__shm_area *a, int which, uint64_t v) {
  int n = a->pub.size;
  for (int k = 0; k < n; k++) {
    int p = (call->wait + k) % n;
    if (p == a->pub.rank) continue;
    if (atomic_load_explicit(word(a->ctl[p], which), memory_order_acquire) >= v) continue;
    call->wait = p;
    if (call->comm->lost[p]) {
      char what[96];
      snprintf(what, sizeof what, "%s (shm, chunk %llu) waits for", call->name, (unsigned long long)(v - 1 - call->base));
      return fold__fail_for_lost(call->comm, p, what);
    }
    if (which == W_ARRIVE) return rounds_missing(call, a, v, p);
    return 0;
  }
  return 1;
}

/* ---- signatures ------------------------------------------------------------------- */

static void sig_write(const fold__area_call *call, fold__shm_ctl *me, uint64_t g) {
  fold__shm_csig *s = &me->sig[g & 1];
  s->chunk = (uint32_t)g;
  s->index = (uint32_t)(g - call->base);
  memcpy(s->words, call->sig, sizeof s->words);
}

/* Peer p runs this call (same sequence number) with a round algorithm, we
 * with shm: the hook reports both calls. The peer may overwrite its note
 * with a later call's while we copy it (seqlock); then it gets none. */
static int round_mismatch(fold__area_call *call, fold__shm_area *a, int p) {
  fold__shm_ctl *ctl = a->ctl[p];
  /* A seqlock without fences (TSan has none): the writer zeroes round_seq,
   * stores the words with release, then the new round_seq; a word of a
   * later note read here (acquire) makes the second read of round_seq see
   * 0 or that note's number, never ours. */
  uint32_t want = call->seq + 1u;
  uint32_t s1 = atomic_load_explicit(&ctl->round_seq, memory_order_acquire);
  uint64_t w[FOLD__AREA_NOTE_WORDS];
  for (int i = 0; i < FOLD__AREA_NOTE_WORDS; i++) w[i] = atomic_load_explicit(&ctl->round_sig[i], memory_order_acquire);
  uint32_t s2 = atomic_load_explicit(&ctl->round_seq, memory_order_acquire);
  return call->hooks->round_mismatch(call->arg, p, s1 == want && s2 == want ? w : NULL);
}

static void note_round(fold__area *pub, uint32_t seq, const uint64_t note[FOLD__AREA_NOTE_WORDS]) {
  fold__shm_area *a = (fold__shm_area *)pub;
  /* a child's area is made by its first call of either kind: shm-running
   * peers wait for this segment, and must find the note in it */
  if (!a->made && fold__shm_kid_make(a) != FOLD_OK) return;
  fold__shm_ctl *me = a->ctl[a->pub.rank];
  atomic_store_explicit(&me->round_seq, 0, memory_order_relaxed);
  for (int i = 0; i < FOLD__AREA_NOTE_WORDS; i++) atomic_store_explicit(&me->round_sig[i], note[i], memory_order_release);
  atomic_store_explicit(&me->round_seq, seq + 1u, memory_order_release);
  area_wake(a); /* shm-running peers may sleep waiting for our arrive */
}

/* Every peer filled chunk g: its signature for g must be ours. The first
 * difference goes to the hook, which reports it to every rank. */
static int sig_check(fold__area_call *call, fold__shm_area *a, uint64_t g) {
  uint32_t index = (uint32_t)(g - call->base);
  for (int p = 0; p < a->pub.size; p++) {
    if (p == a->pub.rank) continue;
    fold__shm_csig t = a->ctl[p]->sig[g & 1];
    if (t.chunk == (uint32_t)g && t.index == index && memcmp(t.words, call->sig, sizeof t.words) == 0) continue;
    return call->hooks->mismatch(call->arg, p, t.words, t.chunk == (uint32_t)g && t.index != index);
  }
  return FOLD_OK;
}

/* ---- what a stuck call waits for ---------------------------------------------------
 * For a timeout's message: the flag the chunk loop waits on (the same
 * decisions as area_step, without acting) and the peers that have not
 * raised it yet. */

static int area_describe(fold__area *pub, const fold__area_call *call, char *buf, size_t cap) {
  fold__shm_area *a = (fold__shm_area *)pub;
  buf[0] = '\0';
  uint64_t base = call->base, nch = call->nchunks;
  size_t f = (size_t)call->fill, i = (size_t)call->done;
  if (a->completed != base) {
    snprintf(buf, cap, "an earlier shm collective on this communicator to finish");
    return -1;
  }
  if (a->missing) /* a child's first call: peers' areas not made yet */
    return fold__shm_kid_describe(a, buf, cap);
  int which;
  uint64_t v;
  size_t chunk;
  const char *what;
  if (i < f && call->phase == 0) {
    which = W_ARRIVE, v = base + i + 1, chunk = i, what = "its part of the chunk in its slot";
  } else if (i < f && call->phase == 1) {
    which = W_MID, v = base + i + 1, chunk = i, what = "its share of the chunk";
  } else if (f < nch && base + f >= 2) {
    which = W_DONE, v = base + f - 1, chunk = f, what = "to finish reading the slot this chunk reuses";
  } else {
    return -1;
  }
  int first = -1;
  size_t len = 0;
  for (int p = 0; p < a->pub.size && len < cap; p++) {
    if (p == a->pub.rank || atomic_load_explicit(word(a->ctl[p], which), memory_order_acquire) >= v) continue;
    int w = snprintf(buf + len, cap - len, first < 0 ? "rank %d" : ", rank %d", p);
    if (first < 0) first = p;
    if (w > 0) len += (size_t)w;
  }
  if (first >= 0 && len < cap)
    snprintf(buf + len, cap - len, " (chunk %zu of %llu of shm %s: %s)", chunk + 1, (unsigned long long)nch, call->name,
             what);
  return first;
}

/* ---- the chunk loop ----------------------------------------------------------------- */

static int area_start(fold__area *pub, fold__area_call *call, uint64_t nchunks) {
  fold__shm_area *a = (fold__shm_area *)pub;
  if (!a->made) { /* a child's first call: make our segment, tell everyone if we cannot */
    int rc = fold__shm_kid_make(a);
    if (rc != FOLD_OK) {
      char msg[FOLD__ERRLEN];
      snprintf(msg, sizeof msg, "%s", call->comm->last_error); /* not fold_comm_last_error: a call of a higher layer */
      return fold__comm_fail_and_tell(call->comm, rc, msg);
    }
  }
  call->nchunks = nchunks;
  call->fill = call->done = 0;
  call->phase = call->wait = 0;
  call->base = a->issued;
  a->issued += nchunks;
  return FOLD_OK;
}

static int area_step(fold__area *pub, fold__area_call *call, const fold__area_kind *k) {
  fold__shm_area *a = (fold__shm_area *)pub;
  uint64_t base = call->base, nch = call->nchunks;
  if (a->completed != base) return 0; /* an earlier shm call on this communicator is still running */
  if (a->missing) { /* a child's first call: map the peers' areas as they appear */
    int rc = fold__shm_kid_connect(a, call);
    if (rc <= 0) return rc;
  }
  fold__shm_ctl *me = a->ctl[a->pub.rank];
  void *arg = call->arg;
  for (;;) {
    int moved = 0, rc;
    uint64_t f = call->fill, i = call->done;
    if (i < f) {
      uint64_t g = base + i;
      int s = (int)(g & 1);
      if (call->phase == 0) { /* everyone's part is in */
        if ((rc = all_reached(call, a, W_ARRIVE, g + 1)) < 0) return rc;
        /* a straggler (FOLD_INJECT_DELAY) waits before each chunk it reduces */
        if (rc && call->hooks->gate(arg)) return 0;
        /* every peer filled a chunk, so it mapped our segment: its name can go */
        if (rc && a->linked) fold__shm_kid_unlink(a);
        if (rc) {
          if ((rc = sig_check(call, a, g)) < 0) return rc;
          if (call->use_mid) {
            k->mid(arg, pub, (size_t)i, s);
            publish(a, W_MID, g + 1);
            call->phase = 1;
          } else {
            call->phase = 2;
          }
          moved = 1;
        }
      }
      if (call->phase == 1) { /* everyone's share is in */
        if ((rc = all_reached(call, a, W_MID, g + 1)) < 0) return rc;
        if (rc) call->phase = 2;
      }
      if (call->phase == 2) {
        if (k->drain) k->drain(arg, pub, (size_t)i, s);
        publish(a, W_DONE, g + 1);
        call->phase = 0;
        call->done = ++i;
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
      rc = g >= 2 ? all_reached(call, a, W_DONE, g - 1) : 1;
      if (rc < 0) return rc;
      if (rc) {
        if (k->fill) k->fill(arg, pub, (size_t)f, fold__area_slot(pub, a->pub.rank, (int)(g & 1)));
        sig_write(call, me, g);
        publish(a, W_ARRIVE, g + 1);
        call->fill = ++f;
        moved = 1;
      }
    }
    if (!moved) return 0;
  }
}

static const fold__area_ops area_ops = {
  .start = area_start,
  .step = area_step,
  .describe = area_describe,
  .note_round = note_round,
};
