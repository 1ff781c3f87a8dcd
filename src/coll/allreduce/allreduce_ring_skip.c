/* allreduce_ring_skip.c — ring allreduce that routes around a slow left neighbour (src/coll/ring_skip.c, issue 10). */
#include "coll/ring_skip.h"

const fold__algo fold__allreduce_ring_skip = {"ring_skip", fold__ring_skip_init, NULL, 0, NULL, fold__ring_skip_step,
                                              NULL, fold__ring_skip_describe};
