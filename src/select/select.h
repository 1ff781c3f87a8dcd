/* select.h — choosing an algorithm per call: forced by FOLD_ALGO / fold_comm_set_algo, else the rule table. */
#ifndef FOLD_SELECT_H
#define FOLD_SELECT_H

#include "coll/coll.h"

/* One rule of the automatic table: the first rule whose ranges contain the
 * call picks its algorithm. 0 in a max field means "no limit". */
typedef struct fold__rule {
  fold__coll_kind coll;
  int min_ranks, max_ranks;
  size_t min_bytes, max_bytes; /* bytes of the call's count argument (per block for block collectives) */
  int commutative_only;        /* the rule applies to commutative ops only */
  int pof2_only;               /* the rule applies to power-of-two rank counts only */
  const char *algo;
} fold__rule;

/* Pick the algorithm for a call. A forced algorithm that cannot serve it
 * (non-commutative op on an order-breaking algorithm) is FOLD_EINVAL with a
 * message; automatic selection never picks one. */
int fold__select(fold_comm *c, fold__coll_kind kind, size_t bytes, int commutative, const fold__algo **out,
                 const char *opname);

/* Parse "collective=algorithm[,...]" into c->coll_algo; nothing changes on
 * error (FOLD_EINVAL with a message naming the bad part). */
int fold__algo_spec_apply(fold_comm *c, const char *spec, const char *source);

/* Look an algorithm up by name; -1 if the collective has none of that name. */
int fold__algo_index(fold__coll_kind kind, const char *name, size_t len);

#endif
