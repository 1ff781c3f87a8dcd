/* shm_coll.c — the `shm` algorithms' side of collectives through a shared collective area: usability, per-call setup, signatures and mismatch reports.
 *
 * When every rank of a communicator is a process on one host, its
 * transport may offer a collective area (transport.h, fold__area; the shm
 * transport's is src/transport/shm/shm_area.c): per rank, flag words and
 * two data slots that the rank writes and every peer reads. A collective
 * is then: each rank copies its part into its own slot, says so, and reads
 * what it needs straight from the peers' slots — one copy in, one copy (or
 * reduction) out, no messages. The transport runs the chunk loop, the
 * flags, waiting and peer loss; the nine src/coll/<c>/<c>_shm.c say what
 * goes into a slot and what comes out (fold__shm_kind), and this file
 * hands the transport the call's signature and reports what it finds
 * wrong: a peer whose chunk carries another signature, or a peer that runs
 * the same call with a round algorithm (its note, left by
 * fold__shm_note_round_call). Every report goes to every rank
 * (fold__comm_fail_and_tell), so no rank hangs.
 */
#include <stdio.h>
#include <string.h>

#include "coll/shm_coll.h"

fold__area *fold__shm_area(const fold_comm *c) {
  if (c->ntps != 1) return NULL;
  fold__tp *tp = c->tps[0];
  /* a sub-communicator's area is made on first use (the transport's state
   * in one of c's slots): not a change anyone can observe, hence const */
  return tp->ops->coll ? tp->ops->coll(tp, (fold_comm *)c) : NULL;
}

const char *fold__shm_usable(const fold_comm *c) {
  if (c->size == 1) return NULL; /* nothing to share: a local copy */
  if (fold__engine_virtual(c)) return "the simulated transport has no shared memory";
  /* A sub-communicator has areas of its own (the transport makes them on
   * first use), so the tests are the world's: one transport reaching every
   * peer (a child's tps are those that reach its members). */
  if (c->ntps != 1) return "its ranks are reached through more than one transport (not all on one host over shm)";
  /* One transport: it reaches every peer (bootstrap maps each peer to
   * exactly one transport), so no per-peer scan on every call. */
  const fold__tp *tp = c->tps[0];
  if (tp->ops->coll == NULL) {
    if (tp->ops->kind == FOLD__TP_KIND_INPROC)
      return "its ranks are threads of one process (inproc transport), not processes sharing memory";
    if (tp->ops->kind == FOLD__TP_KIND_TCP) return "its peers are reached over tcp, not through shared memory";
    return "its transport has no shared collective area";
  }
  if (fold__shm_area(c) == NULL)
    return "the shared-memory collective area is off (FOLD_SHM_COLL_BYTES=0, or the ranks disagree on its size)";
  return NULL;
}

const char *fold__shm_fits(const fold_comm *c, fold__coll_kind kind, size_t esize) {
  const fold__area *a = fold__shm_area(c);
  if (c->size == 1 || a == NULL) return NULL; /* one rank copies locally; no area: usable() says why */
  size_t pieces = kind == FOLD__COLL_ALLTOALL || kind == FOLD__COLL_REDUCE_SCATTER || kind == FOLD__COLL_SCATTER
                    ? (size_t)c->size : 1;
  if (a->slot_bytes / pieces / esize == 0)
    return pieces > 1 ? "a shared-memory slot (FOLD_SHM_COLL_BYTES) holds less than one element per rank"
                      : "a shared-memory slot (FOLD_SHM_COLL_BYTES) is smaller than one element";
  return NULL;
}

/* ---- signatures ------------------------------------------------------------------------
 * The area carries a call's signature as FOLD__AREA_SIG_WORDS words: the
 * fold__sig fields a peer's call must agree on. The element size, the
 * algorithm and the segment size are left out: a peer here runs shm (which
 * has no segments), and a dtype's size is the same on every rank. */

enum { W_COUNT_LO, W_COUNT_HI, W_ROOT, W_DTYPE, W_OP_COLL };
_Static_assert(FOLD__AREA_SIG_WORDS == 5, "the area's signature words are the five below");
_Static_assert(FOLD__AREA_NOTE_WORDS * sizeof(uint64_t) == sizeof(fold__sig), "a round note holds a fold__sig");

static void sig_encode(const fold__sig *s, uint32_t w[FOLD__AREA_SIG_WORDS]) {
  w[W_COUNT_LO] = (uint32_t)s->count;
  w[W_COUNT_HI] = (uint32_t)(s->count >> 32);
  w[W_ROOT] = (uint32_t)s->root;
  w[W_DTYPE] = s->dtype;
  w[W_OP_COLL] = (uint32_t)s->op | (uint32_t)s->coll << 16;
}

/* The index of the shm algorithm in collective k's table (messages only). */
static uint8_t shm_algo_of(unsigned k) {
  if (k >= FOLD__COLL_COUNT) return 0;
  const fold__algo *const *t = fold__algo_tables[k].algos;
  for (int i = 0; t[i]; i++)
    if (t[i]->step) return (uint8_t)i;
  return 0;
}

/* Rank p filled the chunk under other words: report both calls. */
static int hook_mismatch(void *arg, int p, const uint32_t *w, int other_sequence) {
  fold__coll *co = arg;
  unsigned coll = (w[W_OP_COLL] >> 16) & 0xFFu;
  fold__sig theirs = {.count = (uint64_t)w[W_COUNT_HI] << 32 | w[W_COUNT_LO], .root = (int32_t)w[W_ROOT],
                      .esize = co->sig.esize, .op = (uint16_t)w[W_OP_COLL], .coll = (uint8_t)coll,
                      .dtype = w[W_DTYPE], .algo = co->sig.algo, .seg = co->sig.seg};
  if (theirs.coll != co->sig.coll || theirs.dtype != co->sig.dtype) {
    theirs.esize = (uint32_t)fold_dtype_size((fold_dtype)theirs.dtype);
    theirs.algo = shm_algo_of(theirs.coll);
  }
  char d1[160], d2[160], msg[FOLD__ERRLEN];
  fold__coll_describe(&co->sig, d1, sizeof d1);
  fold__coll_describe(&theirs, d2, sizeof d2);
  if (theirs.coll < FOLD__COLL_COUNT && other_sequence && strcmp(d1, d2) == 0)
    snprintf(d2 + strlen(d2), sizeof d2 - strlen(d2), " after a different sequence of calls");
  snprintf(msg, sizeof msg, "collective #%d: rank %d called %s but rank %d called %s", co->tag, co->rank, d1, p, d2);
  return fold__comm_fail_and_tell(co->comm, FOLD_EMISMATCH, msg);
}

/* Rank p runs this call with a round algorithm: report both calls (its
 * algorithm vaguely when its note was overwritten meanwhile). */
static int hook_round_mismatch(void *arg, int p, const uint64_t *note) {
  fold__coll *co = arg;
  char d1[160], d2[160], msg[FOLD__ERRLEN];
  fold__coll_describe(&co->sig, d1, sizeof d1);
  if (note) {
    fold__sig theirs;
    memcpy(&theirs, note, sizeof theirs);
    fold__coll_describe(&theirs, d2, sizeof d2);
  } else {
    snprintf(d2, sizeof d2, "it with an algorithm other than shm");
  }
  snprintf(msg, sizeof msg, "collective #%d: rank %d called %s but rank %d called %s", co->tag, co->rank, d1, p, d2);
  return fold__comm_fail_and_tell(co->comm, FOLD_EMISMATCH, msg);
}

/* A straggler (FOLD_INJECT_DELAY) waits before each chunk it reduces. */
static int hook_gate(void *arg) {
  fold__coll *co = arg;
  int reduces = co->kind == FOLD__COLL_ALLREDUCE || co->kind == FOLD__COLL_REDUCE || co->kind == FOLD__COLL_REDUCE_SCATTER;
  return fold__coll_straggle(co, reduces);
}

static const fold__area_hooks hooks = {hook_gate, hook_mismatch, hook_round_mismatch};

void fold__shm_note_round_call(const fold__coll *co) {
  fold__area *a = co->size > 1 ? fold__shm_area(co->comm) : NULL;
  if (a == NULL) return;
  uint64_t note[FOLD__AREA_NOTE_WORDS];
  memcpy(note, &co->sig, sizeof note);
  a->ops->note_round(a, (uint32_t)co->tag, note);
}

/* ---- a call ------------------------------------------------------------------------------ */

int fold__shm_init(fold__coll *co, size_t elems, size_t nchunks, int use_mid) {
  if (elems == 0)
    return fold__error(co->comm, FOLD_EINVAL, "%s: rank %d: shm: a %zu-rank communicator's slots are too small for "
                       "one element per rank (raise FOLD_SHM_COLL_BYTES)", fold__coll_name(co->kind), co->rank, (size_t)co->size);
  co->u[FOLD__SHM_U_ELEMS] = elems;
  fold__area_call *call = &co->area;
  call->arg = co;
  call->hooks = &hooks;
  call->comm = co->comm;
  call->name = fold__coll_name(co->kind);
  call->seq = (uint32_t)co->tag;
  sig_encode(&co->sig, call->sig);
  call->use_mid = use_mid;
  call->nchunks = nchunks ? nchunks : 1;
  call->fill = call->done = 0;
  call->phase = call->wait = 0;
  fold__area *a = fold__shm_area(co->comm);
  if (co->size > 1 && a == NULL) /* selection checked usable(): cannot happen */
    return fold__error(co->comm, FOLD_EINTERNAL, "%s: rank %d: shm collective area missing", fold__coll_name(co->kind), co->rank);
  return a ? a->ops->start(a, call, call->nchunks) : FOLD_OK;
}

int fold__shm_describe(fold__coll *co, char *buf, size_t cap) {
  buf[0] = '\0';
  fold__area *a = fold__shm_area(co->comm);
  if (co->size == 1 || a == NULL) return -1;
  return a->ops->describe(a, &co->area, buf, cap);
}

/* One rank: nothing to share. */
static void local_only(fold__coll *co) {
  size_t bytes = co->count * co->esize;
  if (co->kind == FOLD__COLL_BROADCAST || co->kind == FOLD__COLL_BARRIER || co->in_place || bytes == 0) return;
  memcpy(co->rbuf, co->sbuf, bytes); /* FOLD_AVG over one rank divides by 1 */
}

int fold__shm_step(fold__coll *co, const fold__shm_kind *k) {
  if (co->size == 1) {
    local_only(co);
    return 1;
  }
  fold__area *a = fold__shm_area(co->comm);
  return a->ops->step(a, &co->area, k);
}
