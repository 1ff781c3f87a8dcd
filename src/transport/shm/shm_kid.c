/* shm_kid.c — the collective areas of sub-communicators: per rank and communicator a segment of its own, made on first use, found by name, freed with the communicator.
 *
 * Why not the world's area: an area's counters move with the calls of one
 * communicator only (every rank hands out chunk indices in call order,
 * shm_area.c), and the ranks of different children make different calls.
 * So a sub-communicator (docs/comm.md) whose every peer this transport
 * reaches gets areas of its own, laid out like the world's: a header page
 * (a segment header, so that a killed job's leftovers are swept like the
 * ranks' segments, shm_seg.c), the control page, two data slots of the
 * world's slot size.
 *
 * Names need no store: rank r's area for communicator id cid is
 * "<r's segment name>.<cid>". Every rank knows its peers' segment names
 * (their cards) and the split agreed on the cid; a process never has two
 * communicators with one id, so no name is made twice.
 *
 * Lifetime:
 *  - the area's structure is made when the communicator first asks for it
 *    (selection's usable()), and kept in an extension slot of the
 *    communicator whose teardown unmaps everything (fold_comm_destroy);
 *  - this rank's segment is made by its first call on the area (start, or
 *    note_round: a round-running call that shm-running peers must see),
 *    which then rings the peers' doorbells; the peers' are mapped by the
 *    first call's step, which waits (never blocks) until each exists;
 *  - its name is unlinked once every peer filled a chunk (a peer fills
 *    only after mapping every area), else at teardown: a communicator made
 *    and destroyed leaves nothing in /dev/shm.
 * A split costs nothing here: a child that runs no collective maps nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/shm/shm_tp.h"

static const char kid_key;      /* the extension slot of a child's area */
static fold__shm_area kid_none; /* in the slot: this child has no area (the verdict is kept) */

static uint64_t seg_bytes(const fold__shm_area *a) {
  return FOLD__SHM_PAGE + fold__shm_coll_area_bytes(a->pub.slot_bytes);
}

/* The name of the child's area of the rank whose segment is `seg`. */
static int kid_name(char *buf, size_t cap, const fold__shm_map *seg, uint32_t cid) {
  int n = snprintf(buf, cap, "%s.%u", seg->name, (unsigned)cid);
  return n > 0 && (size_t)n < cap ? 0 : -1;
}

static void kid_teardown(void *ptr) {
  fold__shm_area *a = ptr;
  if (a == NULL || a == &kid_none) return;
  fold__list_unlink(&a->link);
  /* our own segment is unlinked here if a peer never mapped it; peers that
   * still read our slots keep their own mappings */
  for (int i = 0; a->maps && i < a->pub.size; i++) fold__shm_map_release(&a->maps[i]);
  fold__shm_area_delete(a);
}

/* A new area for child c, or NULL when some peer is not reached through t
 * or its world area differs from ours (the same test as the world's). */
static fold__shm_area *kid_new(fold__shm_tp *t, fold_comm *c) {
  if (t->own.coll == NULL || c->size < 2 || !c->kid) return NULL;
  for (int i = 0; i < c->size; i++) {
    if (i == c->rank) continue;
    const fold__shm_peer *p = &t->peers[fold__root_rank(c, i)];
    if (p->map.hdr == NULL || p->map.coll == NULL || p->map.coll_slot != t->own.coll_slot) {
      FOLD__INFO(c, "shm: peer rank %d of communicator %u has no collective area like ours: shm collectives off there",
                 i, (unsigned)c->cid);
      return NULL;
    }
  }
  fold__shm_area *a = fold__shm_area_new(t, c->rank, c->size, (size_t)t->own.coll_slot);
  if (a == NULL || (a->maps = calloc((size_t)c->size, sizeof *a->maps)) == NULL) {
    fold__shm_area_delete(a);
    return NULL;
  }
  a->comm = c;
  a->missing = c->size - 1;
  for (int i = 0; i < c->size; i++) a->peer[i] = i == c->rank ? NULL : &t->peers[fold__root_rank(c, i)];
  return a;
}

fold__area *fold__shm_kid_area(fold__shm_tp *t, fold_comm *c) {
  fold__shm_area *a = fold__ext_get(c, &kid_key);
  if (a) return a == &kid_none ? NULL : &a->pub;
  a = kid_new(t, c);
  if (fold__ext_attach(c, &kid_key, a ? a : &kid_none, kid_teardown) != FOLD_OK) {
    kid_teardown(a); /* out of memory: no area this time */
    return NULL;
  }
  if (a == NULL) return NULL;
  fold__list_push_front(&t->kids, &a->link);
  return &a->pub;
}

int fold__shm_kid_make(fold__shm_area *a) {
  fold__shm_tp *t = (fold__shm_tp *)a->tp;
  fold_comm *c = a->comm;
  int me = a->pub.rank;
  fold__shm_map *m = &a->maps[me];
  char name[FOLD__SHM_NAME_MAX];
  if (kid_name(name, sizeof name, &t->own, c->cid) != 0)
    return fold__error(c, FOLD_EINTERNAL, "rank %d: shm: the collective area name of communicator %u is too long",
                       c->rank, (unsigned)c->cid);
  uint64_t bytes = seg_bytes(a);
  int rc = fold__shm_seg_create(c, name, bytes, m);
  if (rc != FOLD_OK) return rc;
  /* fresh tmpfs pages are zero: every counter starts at 0 */
  m->coll = (char *)m->hdr + FOLD__SHM_PAGE;
  m->coll_bytes = (size_t)fold__shm_coll_area_bytes(a->pub.slot_bytes);
  m->coll_slot = a->pub.slot_bytes;
  fold__shm_hdr *h = m->hdr;
  h->version = FOLD__SHM_VERSION;
  h->pid = (int32_t)getpid();
  h->rank = me;
  h->nranks = c->size;
  h->seg_bytes = bytes;
  h->coll_slot_bytes = a->pub.slot_bytes;
  /* last, with release: a peer that sees the magic sees the rest (shm_seg.c) */
  __atomic_store_n(&h->magic, FOLD__SHM_MAGIC, __ATOMIC_RELEASE);
  a->ctl[me] = (fold__shm_ctl *)m->coll;
  a->pub.data[me] = (char *)m->coll + FOLD__SHM_PAGE;
  a->made = a->linked = 1;
  /* peers whose first call waits for our segment may sleep: wake them */
  for (int i = 0; i < c->size; i++)
    if (a->peer[i]) fold__shm_ring_bell(t, a->peer[i]);
  FOLD__TRACE(c, "shm: collective area %s of communicator %u made", name, (unsigned)c->cid);
  return FOLD_OK;
}

/* Peer i's segment is mapped: is it the area we expect? NULL if so. */
static const char *kid_check(const fold__shm_area *a, int i, const fold__shm_map *m) {
  const fold__shm_hdr *h = m->hdr;
  if (h->version != FOLD__SHM_VERSION) return "another version of fold";
  if (h->pid != a->peer[i]->pid) return "made by another process than the peer's";
  if (h->rank != i || h->nranks != a->pub.size) return "rank or size differs";
  if (h->coll_slot_bytes != a->pub.slot_bytes) return "slot size differs";
  return NULL;
}

int fold__shm_kid_connect(fold__shm_area *a, fold__area_call *call) {
  fold_comm *c = a->comm;
  uint64_t bytes = seg_bytes(a);
  for (int i = 0; i < a->pub.size && a->missing > 0; i++) {
    if (i == a->pub.rank || a->ctl[i] != NULL) continue;
    char name[FOLD__SHM_NAME_MAX], msg[FOLD__ERRLEN];
    if (kid_name(name, sizeof name, &a->peer[i]->map, c->cid) != 0)
      return fold__comm_fail_and_tell(c, FOLD_EINTERNAL, "shm: a collective area name is too long");
    fold__shm_map *m = &a->maps[i];
    int rc = fold__shm_seg_open_ro(name, bytes, m);
    if (rc == 0) {
      if (c->lost[i]) {
        char what[96];
        snprintf(what, sizeof what, "%s (shm, its collective area of this communicator) waits for", call->name);
        return fold__fail_for_lost(c, i, what);
      }
      continue; /* not made yet: the peer rings us when it is */
    }
    const char *why = rc < 0 ? strerror(-rc) : kid_check(a, i, m);
    if (why) {
      snprintf(msg, sizeof msg, "%s: rank %d: cannot use the shm collective area %s of peer rank %d: %s", call->name,
               c->rank, name, i, why);
      fold__shm_map_release(m);
      return fold__comm_fail_and_tell(c, rc < 0 ? FOLD_ESYS : FOLD_EINVAL, msg);
    }
    m->coll = (char *)m->hdr + FOLD__SHM_PAGE;
    m->coll_bytes = (size_t)fold__shm_coll_area_bytes(a->pub.slot_bytes);
    m->coll_slot = a->pub.slot_bytes;
    a->ctl[i] = (fold__shm_ctl *)m->coll;
    a->pub.data[i] = (char *)m->coll + FOLD__SHM_PAGE;
    a->missing--;
  }
  return a->missing == 0;
}

void fold__shm_kid_unlink(fold__shm_area *a) {
  fold__shm_map_unlink(&a->maps[a->pub.rank]);
  a->linked = 0;
}

int fold__shm_kid_describe(fold__shm_area *a, char *buf, size_t cap) {
  int first = -1;
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < a->pub.size && len < cap; i++) {
    if (i == a->pub.rank || a->ctl[i] != NULL) continue;
    int w = snprintf(buf + len, cap - len, first < 0 ? "rank %d" : ", rank %d", i);
    if (first < 0) first = i;
    if (w > 0) len += (size_t)w;
  }
  if (first >= 0 && len < cap)
    snprintf(buf + len, cap - len, " (to make its shm collective area of this communicator)");
  return first;
}
