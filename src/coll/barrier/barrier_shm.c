/* barrier_shm.c — barrier through the shared collective area: one chunk with no data.
 *
 * Every rank publishes `arrive` and leaves once it has seen every rank's:
 * one flag write and n - 1 flag reads, no messages. */
#include "coll/shm_coll.h"

static const fold__shm_kind barrier_kind = {NULL, NULL, NULL};

static int barrier_init(fold__coll *co) { return fold__shm_init(co, 1, 1, 0); }
static int barrier_step(fold__coll *co) { return fold__shm_step(co, &barrier_kind); }

const fold__algo fold__barrier_shm = {"shm", barrier_init, NULL, 1, fold__shm_usable, barrier_step, NULL, fold__shm_describe};
