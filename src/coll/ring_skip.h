/* ring_skip.h — the straggler-tolerant ring's state machine, shared by allreduce and reduce_scatter. */
#ifndef FOLD_RING_SKIP_H
#define FOLD_RING_SKIP_H

#include "coll/coll.h"

/* fold__algo hooks (src/coll/ring_skip.c): init refuses non-commutative
 * ops and starts the signature exchange; step is the state machine;
 * describe names the rank a stuck call waits for. */
int fold__ring_skip_init(fold__coll *co);
int fold__ring_skip_step(fold__coll *co);
int fold__ring_skip_describe(fold__coll *co, char *buf, size_t cap);

#endif
