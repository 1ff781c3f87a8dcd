/* coll_opts.c — a collective call's per-call options (fold_coll_opts, include/fold.h), read and checked once. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "coll/coll.h"
#include "select/select.h"

/* What a call's fold_coll_opts asks for, checked. A field counts only if it
 * lies within opts->size (an older program's struct lacks the newer
 * fields: their defaults apply); bytes past the fields this library knows
 * must be zero (a newer program's fields left at their defaults). */
#define OPTS_HAS(o, field) ((o)->size >= offsetof(fold_coll_opts, field) + sizeof((o)->field))
#define OPTS_MAX_SEGMENT ((size_t)1 << 30)

int fold__call_opts_read(fold_comm *c, const char *opname, const fold__coll_args *a, fold__call_opts *out) {
  *out = (fold__call_opts){FOLD__SELECT_COMM, 0, fold__coll_state_of(c)->segment_bytes};
  const fold_coll_opts *o = a->opts;
  if (o == NULL) return FOLD_OK;
  if (o->size < sizeof o->size)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: opts->size is %zu (initialise opts with FOLD_COLL_OPTS_INIT)",
                       opname, c->rank, o->size);
  if (o->size > sizeof *o) {
    const unsigned char *extra = (const unsigned char *)o + sizeof *o;
    for (size_t i = 0; i < o->size - sizeof *o; i++)
      if (extra[i])
        return fold__error(c, FOLD_EINVAL, "%s: rank %d: opts has fields this fold (%zu bytes of options) does not "
                           "know, set at byte %zu of %zu: the program was built against a newer fold.h", opname,
                           c->rank, sizeof *o, sizeof *o + i, o->size);
  }
  if (OPTS_HAS(o, algo) && o->algo) {
    size_t len = strlen(o->algo);
    if (len == 4 && memcmp(o->algo, "auto", 4) == 0) {
      out->force = -1;
    } else if ((out->force = fold__algo_index(a->kind, o->algo, len)) < 0) {
      char known[256];
      fold__algo_names(a->kind, known, sizeof known);
      return fold__error(c, FOLD_EINVAL, "%s: rank %d: opts->algo: %s has no algorithm \"%.64s\" (known: %s auto)",
                         opname, c->rank, fold__coll_name(a->kind), o->algo, known);
    }
  }
  if (OPTS_HAS(o, timeout) && o->timeout != 0.0) {
    double t = o->timeout;
    if (!(t > 0) || t > 1e300)
      return fold__error(c, FOLD_EINVAL, "%s: rank %d: opts->timeout is %g (seconds > 0, or 0 for FOLD_TIMEOUT)",
                         opname, c->rank, t);
    double ns = t * 1e9;
    out->timeout_ns = ns >= (double)(INT64_MAX / 4) ? INT64_MAX / 4 : ns < 1 ? 1 : (int64_t)ns;
  }
  if (OPTS_HAS(o, segment_bytes) && o->segment_bytes) {
    if (o->segment_bytes > OPTS_MAX_SEGMENT)
      return fold__error(c, FOLD_EINVAL, "%s: rank %d: opts->segment_bytes is %zu (at most %zu; 0 for the default)",
                         opname, c->rank, o->segment_bytes, OPTS_MAX_SEGMENT);
    out->seg_bytes = o->segment_bytes;
  }
  return FOLD_OK;
}
