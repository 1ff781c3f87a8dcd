/* select.h — choosing an algorithm per call: forced by FOLD_ALGO / fold_comm_set_algo, else FOLD_RULES, else the built-in rules. */
#ifndef FOLD_SELECT_H
#define FOLD_SELECT_H

#include <limits.h>
#include <stdint.h>

#include "coll/registry.h"
#include "engine/svc.h"

/* Open upper ends of a rule's ranges. */
#define FOLD__RULE_ANY_RANKS INT_MAX
#define FOLD__RULE_ANY_BYTES SIZE_MAX

/* One selection rule: the first rule whose fields all contain the call picks
 * its algorithm, if that algorithm can serve the call (else the scan goes
 * on). Ranges are inclusive at both ends. */
typedef struct fold__rule {
  fold__coll_kind coll;
  int transport;               /* FOLD__TP_KIND_* the communicator uses (fold__comm_tp_kind), 0 = any */
  int min_ranks, max_ranks;    /* max FOLD__RULE_ANY_RANKS: no limit */
  size_t min_bytes, max_bytes; /* bytes of the call's count argument (per block for block collectives);
                                  max FOLD__RULE_ANY_BYTES: no limit */
  int commutative_only;        /* the rule applies to commutative ops only */
  int pof2_only;               /* the rule applies to power-of-two rank counts only */
  const char *algo;
  int line;                    /* rules files: the line it came from; 0 for built-in rules */
  int multihost_only;          /* the rule applies only where the communicator spans more than one host
                                  and some host holds more than one rank (fold_comm.nhosts, max_ppn) */
  int algo_idx;                /* 1 + algo's index in the collective's table, resolved once so that a
                                  call does not look the name up (the rules loader sets it; select.c
                                  resolves the built-in table's); 0: look it up by name */
} fold__rule;

/* The rules of one FOLD_RULES file, in file order. */
typedef struct fold__rules {
  char *path;
  int count;
  fold__rule rule[];
} fold__rules;

/* Pick the algorithm for a call of `bytes` over elements of esize bytes. A
 * forced algorithm that cannot serve it (a non-commutative op on an
 * order-breaking algorithm, a unit of work that cannot hold one element:
 * fold__algo.fits) is FOLD_EINVAL with a message; automatic selection
 * never picks one. */
int fold__select(fold_comm *c, fold__coll_kind kind, size_t bytes, size_t esize, int commutative,
                 const fold__algo **out, const char *opname);

/* fold__select for one call (fold__call, coll/registry.h, filled by
 * fold__call_init): by its kind, bytes, wsize, commutativity and options
 * (opt.force: FOLD__SELECT_COMM, the communicator's choice; -1, automatic
 * selection even where the communicator forces one; or an index in the
 * collective's algorithm table, fold_coll_opts.algo). Sets call->algo and
 * call->algo_idx; errors as fold__select. */
int fold__select_call(fold_comm *c, fold__call *call, const char *opname);
/* The algorithm FOLD_ALGO or fold_comm_set_algo forces for kind on c (an
 * index in the collective's algorithm table), or -1: automatic selection.
 * For capabilities that pick their own algorithm unless the user forced
 * one (the iterative queue's allreduce). */
int fold__select_forced(const fold_comm *c, fold__coll_kind kind);

/* Selection's state on a communicator, in the well-known slot
 * FOLD__SLOT_SELECT (engine/svc.h): attached by fold__select_init or
 * fold__select_inherit, freed by the slot's teardown. */
typedef struct fold__selection {
  signed char coll_algo[FOLD__COLL_COUNT]; /* forced algorithm index per collective, -1: automatic */
  fold__rules *rules;                      /* FOLD_RULES, read at creation; NULL: the built-in rules only */
} fold__selection;
/* c's selection state (NULL only if c was never given one). */
static inline fold__selection *fold__selection_of(const fold_comm *c) {
  return (fold__selection *)fold__slot_get(c, FOLD__SLOT_SELECT);
}

/* Called when the communicator layer makes a communicator (comm/comm.c),
 * after the engine's services: FOLD_ALGO and FOLD_RULES apply (bad values
 * are warned about and ignored); the rules table hangs in a slot. */
int fold__select_init(fold_comm *c);
/* A sub-communicator k chooses as its parent does (comm/comm_split.c): the
 * parent's forced algorithms and a copy of its rules, in k's own slot. */
int fold__select_inherit(fold_comm *k, const fold_comm *parent);

/* Parse "collective=algorithm[,...]" into c's fold__selection.coll_algo; nothing changes on
 * error (FOLD_EINVAL with a message naming the bad part). */
int fold__algo_spec_apply(fold_comm *c, const char *spec, const char *source);

/* A rules file is at most this many bytes (1 MiB): a tuned file for every
 * collective, transport and rank count is a few KiB, and the bound keeps a
 * wrong path (a log, /dev/zero) from eating memory. */
#define FOLD__RULES_MAX_BYTES (1 << 20)

/* Read the rules file at path (rules.c): a regular file of at most
 * FOLD__RULES_MAX_BYTES, opened without blocking. FOLD_OK with *out set
 * (free it with fold__rules_free), or FOLD_EINVAL (missing, not a regular
 * file, too big, a read error, bad lines) / FOLD_ENOMEM with *out NULL and
 * err holding "FILE:LINE: what is wrong" (or "FILE: what is wrong") for the
 * first problem and how many more lines are bad. */
int fold__rules_load(const char *path, fold__rules **out, char *err, size_t errlen);
void fold__rules_free(fold__rules *rs);

/* The built-in table, for tests: *count rules. */
const fold__rule *fold__builtin_rules(int *count);

/* The transport rules match for c: the slowest its peers use (tcp over shm
 * over inproc; sim alone); inproc when c has no peers. */
int fold__comm_tp_kind(const fold_comm *c);
/* "inproc", "shm", "tcp", "sim", or "*" for 0; and back (-1: unknown). */
const char *fold__tp_kind_name(int kind);
int fold__tp_kind_parse(const char *s);

#endif
