/* coll_sig.c — the collectives' mismatch check: signatures, their digest (the data context), the signature rounds, the reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "coll/shm_coll.h"
#include "engine/engine.h"
#include "op/op.h"

/* ---- mismatch check ---------------------------------------------------------------
 * Every call sends its signature to rank+1 and checks the one from rank-1:
 * if any two ranks differ, some neighbouring pair differs, so some rank
 * sees it. The detector tells every rank (fold__comm_fail_and_tell), so all
 * of them fail with FOLD_EMISMATCH instead of hanging. The check overlaps
 * the algorithm's rounds; a call completes only once it passed.
 *
 * The neighbour check alone cannot stop a rank whose left neighbour agrees
 * from finishing with data of a rank that does not (two algorithms sending
 * equal-sized messages, a different root or op): so data messages travel
 * on a context that carries a digest of the whole signature (data_ctx),
 * and match only receives of calls with an equal one. A rank whose part
 * needs a disagreeing rank's data then waits until the detector's report
 * reaches it, and fails with FOLD_EMISMATCH; it never combines the data. */

/* The digest: a CRC with generator x^29 + x^2 + 1 over the fields, each
 * fed least significant bit first. The CRC is linear, so two signatures
 * collide only if their difference is a multiple of the generator, and a
 * difference within 29 consecutive bits never is: calls that differ in one
 * field (collective, algorithm, dtype, op, element size, segment size, or a root or
 * count below 2^29) always get different digests; others collide with
 * probability 2^-29. */
static uint32_t crc29(uint32_t crc, uint64_t v, int nbits) {
  for (int i = 0; i < nbits; i++) {
    uint32_t fb = ((crc >> 28) ^ (uint32_t)(v >> i)) & 1u;
    crc = (crc << 1) & 0x1fffffffu;
    crc ^= fb * 0x5u; /* x^2 + 1 */
  }
  return crc;
}

static uint32_t sig_digest(const fold__sig *s) {
  uint32_t crc = crc29(0, s->coll, 8);
  crc = crc29(crc, s->algo, 8);
  crc = crc29(crc, s->dtype, 32);
  crc = crc29(crc, s->op, 16);
  crc = crc29(crc, s->esize, 32);
  crc = crc29(crc, (uint32_t)s->root, 32);
  crc = crc29(crc, s->seg, 32);
  return crc29(crc, s->count, 64);
}

/* The call's data context. The digest is a bit-serial CRC over 28 bytes
 * (a few hundred cycles, a fifth of an 8-byte shm allreduce): a loop of a
 * few different calls digests each once (the last FOLD__DIG_CACHE). */
int fold__coll_data_ctx(fold__coll *co) {
  for (int i = 0; i < FOLD__DIG_CACHE; i++)
    if (co->dig_ctx[i] && fold__coll_sig_equal(&co->sig, &co->dig_sig[i])) return co->dig_ctx[i];
  unsigned k = co->dig_next++ % FOLD__DIG_CACHE;
  co->dig_sig[k] = co->sig;
  co->dig_ctx[k] = fold__ctx_coll_data(sig_digest(&co->sig));
  return co->dig_ctx[k];
}

static const char *algo_name(unsigned coll, unsigned algo, char *tmp, size_t cap) {
  if (coll < FOLD__COLL_COUNT) {
    const fold__algo *const *t = fold__algo_tables[coll].algos;
    for (unsigned i = 0; t[i]; i++)
      if (i == algo) return t[i]->name;
  }
  snprintf(tmp, cap, "#%u", algo);
  return tmp;
}

static void describe(const fold__coll *co, const fold__sig *s, char *buf, size_t cap) {
  char dt[48], ot[16], at[16];
  if (fold_dtype_size((fold_dtype)s->dtype) == s->esize)
    snprintf(dt, sizeof dt, "%s", fold_dtype_name((fold_dtype)s->dtype));
  else /* a type whose element size differs between the ranks */
    snprintf(dt, sizeof dt, "%s of %u bytes", fold_dtype_name((fold_dtype)s->dtype), (unsigned)s->esize);
  const char *opn = fold__op_name(s->op, ot, sizeof ot);
  const char *name = fold__coll_name((fold__coll_kind)s->coll);
  char an[64];
  snprintf(an, sizeof an, "%s", algo_name(s->coll, s->algo, at, sizeof at));
  if (s->seg) snprintf(an + strlen(an), sizeof an - strlen(an), ", segment_bytes=%u", (unsigned)s->seg);
  if ((s->coll == FOLD__COLL_ALLGATHER && s->op >= FOLD__SIG_OP_HIER) ||
      (s->coll == FOLD__COLL_ALLREDUCE && s->op == FOLD__SIG_OP_HIER)) {
    snprintf(buf, cap, "%s(algo=%s)",
             s->op == FOLD__SIG_OP_SPLIT ? "comm_split" : s->op == FOLD__SIG_OP_DUP ? "comm_dup"
             : s->op == FOLD__SIG_OP_SPLIT_HOST ? "comm_split_host" : "hier's host split",
             an);
    return;
  }
  switch ((fold__coll_kind)s->coll) {
  case FOLD__COLL_BARRIER: snprintf(buf, cap, "barrier(algo=%s)", an); break;
  case FOLD__COLL_BROADCAST:
  case FOLD__COLL_GATHER:
  case FOLD__COLL_SCATTER:
    snprintf(buf, cap, "%s(count=%llu, dtype=%s, root=%d, algo=%s)", name, (unsigned long long)s->count, dt, s->root,
             an);
    break;
  case FOLD__COLL_REDUCE:
    snprintf(buf, cap, "%s(count=%llu, dtype=%s, op=%s, root=%d, algo=%s)", name, (unsigned long long)s->count, dt,
             opn, s->root, an);
    break;
  case FOLD__COLL_ALLREDUCE:
  case FOLD__COLL_REDUCE_SCATTER:
    snprintf(buf, cap, "%s(count=%llu, dtype=%s, op=%s, algo=%s)", name, (unsigned long long)s->count, dt, opn, an);
    break;
  default:
    snprintf(buf, cap, "%s(count=%llu, dtype=%s, algo=%s)", name, (unsigned long long)s->count, dt, an);
    break;
  }
  (void)co;
}

void fold__coll_describe(const fold__sig *s, char *buf, size_t cap) { describe(NULL, s, buf, cap); }

int fold__coll_sig_equal(const fold__sig *a, const fold__sig *b) {
  return a->count == b->count && a->root == b->root && a->esize == b->esize && a->op == b->op && a->coll == b->coll &&
         a->dtype == b->dtype && a->algo == b->algo && a->seg == b->seg;
}

/* The signature rounds. A call whose every rank needs (through the
 * rounds) data from every rank cannot complete on any rank when one rank
 * called differently: its data never match (data_ctx), so the rank that
 * sees the difference reaches everyone first. So allreduce, reduce_scatter,
 * allgather, alltoall and barrier check rank-1's signature only (one
 * message, overlapped). A rooted call (broadcast, reduce, gather, scatter)
 * or one without data (count 0) lets some ranks finish on their own data:
 * there the signatures spread as a dissemination barrier does, round k
 * from rank - 2^k to rank + 2^k (k < ceil(log2 n); the distances differ
 * mod n, so the source tells the rounds apart), each round sent once the
 * round before matched. Every rank then has a chain of matching pairs
 * from every rank, so if any two ranks differ, a rank on each chain sees
 * a difference, and no rank completes before the report of one reaches
 * it: every rank of the call fails, never a part of them. */
int fold__coll_sig_rounds(const fold__coll *co) {
  int rooted = co->kind == FOLD__COLL_BROADCAST || co->kind == FOLD__COLL_REDUCE || co->kind == FOLD__COLL_GATHER ||
               co->kind == FOLD__COLL_SCATTER;
  if (!rooted && (co->count > 0 || co->kind == FOLD__COLL_BARRIER)) return 1;
  int k = 0;
  while (k < 30 && (1 << k) < co->size) k++;
  return k > 0 ? k : 1;
}

/* The first signature round of a call that checks its signatures itself
 * (the round algorithms, at their start; ring_skip in its init; hier.c
 * still posts the same three steps itself): the signature to `right`,
 * rank `left`'s posted. The call is also
 * noted in the communicator's shared collective area when it has one, so
 * that ranks that run the same call with the shm algorithms report the
 * mismatch (shm_coll.c): the one place the round algorithms meet shm. */
int fold__coll_sig_post(fold__coll *co, int left, int right) {
  fold_comm *c = co->comm;
  fold__shm_note_round_call(co);
  int rc = fold__irecv_bytes(c, &co->left_sig, sizeof co->left_sig, left, FOLD__CTX_SIG, co->tag, &co->sig_recv);
  if (rc == FOLD_OK) rc = fold__isend_bytes(c, &co->sig, sizeof co->sig, right, FOLD__CTX_SIG, co->tag, &co->sig_send);
  return rc;
}

/* A message of the wrong size: the ranks called different things. Tell
 * everyone, naming our call (the signature check names both calls when
 * it gets there first). */
int fold__coll_size_mismatch(fold__coll *co, const fold_request *r) {
  char mine[160], msg[FOLD__ERRLEN];
  fold__coll_describe(&co->sig, mine, sizeof mine);
  snprintf(msg, sizeof msg, "collective #%d: rank %d called %s but rank %d sent a message of %s bytes where %zu were expected",
           co->tag, co->rank, mine, r->peer, r->status == FOLD_EMISMATCH ? "more" : "fewer", r->bytes);
  return fold__comm_fail_and_tell(co->comm, FOLD_EMISMATCH, msg);
}


/* 0 while a signature round is under way, 1 when every round matched,
 * FOLD_EMISMATCH (everyone told) when one did not. */
int fold__coll_sig_check(fold__coll *co) {
  for (;;) {
    if (co->sig_checked || co->size == 1 || co->sig_recv == NULL) return 1;
    if (!fold__req_done(co->sig_recv)) return 0;
    if (!co->sig_round_ok) {
      int st = co->sig_recv->status;
      if (st < 0) return st;
      if (co->sig_recv->got != sizeof co->left_sig || !fold__coll_sig_equal(&co->sig, &co->left_sig)) {
        char mine[160], theirs[160], msg[FOLD__ERRLEN];
        describe(co, &co->sig, mine, sizeof mine);
        describe(co, &co->left_sig, theirs, sizeof theirs);
        snprintf(msg, sizeof msg, "collective #%d: rank %d called %s but rank %d called %s", co->tag, co->rank, mine,
                 co->sig_recv->peer, theirs);
        co->sig_checked = 1;
        return fold__comm_fail_and_tell(co->comm, FOLD_EMISMATCH, msg);
      }
      co->sig_round_ok = 1;
    }
    if (co->sig_round + 1 >= co->sig_rounds) {
      co->sig_checked = 1;
      return 1;
    }
    /* the next round (its send waits for this round's, which is short) */
    if (co->sig_send && !fold__req_done(co->sig_send)) return 0;
    fold_comm *c = co->comm;
    fold__req_unref(co->sig_recv);
    fold__req_unref(co->sig_send);
    co->sig_recv = co->sig_send = NULL;
    co->sig_round++;
    co->sig_round_ok = 0;
    int d = (1 << co->sig_round) % co->size;
    int from = (co->rank + co->size - d) % co->size, to = (co->rank + d) % co->size;
    int rc = fold__irecv_bytes(c, &co->left_sig, sizeof co->left_sig, from, FOLD__CTX_SIG, co->tag, &co->sig_recv);
    if (rc == FOLD_OK)
      rc = fold__isend_bytes(c, &co->sig, sizeof co->sig, to, FOLD__CTX_SIG, co->tag, &co->sig_send);
    if (rc != FOLD_OK) return rc;
  }
}

