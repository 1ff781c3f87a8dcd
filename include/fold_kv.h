/* fold_kv.h — the parameter-server key-value store (MXNet's KVStore): part
 * of fold.h (which includes it; include fold.h). docs/kvstore.md has the
 * model, the protocol and the figures. */
#ifndef FOLD_PUBLIC_KV_H
#define FOLD_PUBLIC_KV_H

#include "fold.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- key-value store ----------------------------------------------------
 * Data-parallel training pushes gradients under integer keys and pulls the
 * weights back. A "local" store keeps the values in this process (several
 * devices' buffers per key are summed); a distributed store ("dist_sync",
 * "dist_async", "dist_ssp") keeps them on server ranks, which apply the
 * updater or optimizer, while worker ranks push and pull.
 *
 * Roles: in a distributed store over a communicator of n ranks the last
 * FOLD_KV_SERVERS ranks (default 1) are servers, the others workers. A
 * server calls fold_kv_serve, which returns once every worker destroyed its
 * store; a worker calls init/push/pull/wait/barrier and fold_kv_destroy
 * when it is done (it may leave before the others: later rounds wait only
 * for the workers still in). Every worker must initialise the same keys,
 * with the same counts and dtypes, in the same order (the placement of keys
 * on servers follows that order; worker 0's values are the ones stored).
 *
 * Environment (read by fold_kv_create; ranks of one store must agree,
 * otherwise fold_kv_create returns FOLD_EMISMATCH on every rank):
 *   FOLD_KV_SERVERS         number of server ranks (default 1), 1..n-1
 *   FOLD_KV_BIGARRAY_BOUND  elements; a value larger than this is split
 *                           evenly across all servers, and a local sum of
 *                           more elements is spread over the reduce threads
 *                           (default 1000000, MXNET_KVSTORE_BIGARRAY_BOUND)
 *   FOLD_KV_REDUCE_THREADS  threads summing big arrays (default 4)
 *   FOLD_KV_STALENESS       dist_ssp: rounds a worker may run ahead of the
 *                           slowest worker before its pull waits (default 2)
 *
 * Ordering: per key, operations take effect in the order a rank issued
 * them (a pull after a push sees that push). Push and pull return at once;
 * push copies its values (the caller may reuse them at once); a pull's
 * outputs are valid after fold_kv_wait. `priority` is a hint: a higher one
 * is sent first among operations not yet sent.
 *
 * Failure: a store on a communicator follows its fail-stop model. A worker
 * that dies (not one that destroyed its store) makes every server and every
 * other worker fail with FOLD_EPEER naming it; a server that dies fails the
 * operations on its keys with FOLD_EPEER naming it; fold_kv_dead_nodes
 * lists the ranks known lost. Nothing waits forever: every wait is bounded
 * by FOLD_TIMEOUT. A worker that stops without dying (a hang, SIGSTOP)
 * holds up dist_sync rounds: a worker whose wait for them times out fails
 * with FOLD_ETIMEDOUT naming the stopped worker (the server holding its
 * pull tells it who, a quarter of FOLD_TIMEOUT into the wait), and when it
 * then exits the servers and other workers fail naming the stopped worker
 * too, never the worker that timed out; the blamed rank counts as lost. Argument errors (FOLD_EINVAL, message in
 * fold_comm_last_error of the store's communicator, or of NULL for a local
 * store made without one) name the key (its string name for keys from
 * fold_kv_key) and do not change anything stored. */
typedef struct fold_kv fold_kv;

#define FOLD_KV_WORKER 0
#define FOLD_KV_SERVER 1

/* Create a store of `type`: "local" (one process, several buffers per key),
 * "dist_sync" (a server applies a round once every worker still in pushed
 * it; a pull waits for the rounds this worker pushed), "dist_async" (a
 * server applies each push on arrival), "dist_ssp" (async, but a worker's
 * pull waits while it is more than FOLD_KV_STALENESS rounds ahead of the
 * slowest worker still in). comm may be NULL for "local" only. A
 * distributed store works on its own duplicate of comm (fold_comm_dup), so
 * its traffic never meets the caller's; comm must outlive it.
 * Collective over comm (every rank calls it with the same type; it blocks
 * until they all did). Returns FOLD_EINVAL for a NULL kv or type, an
 * unknown type name, a NULL comm for a distributed type, a comm of one rank
 * for a distributed type, or FOLD_KV_SERVERS outside 1..n-1; FOLD_EMISMATCH
 * on every rank when the ranks' types or FOLD_KV_* variables differ; comm's
 * failure status; FOLD_ENOMEM. On failure *kv is NULL. */
FOLD_API int fold_kv_create(fold_comm *comm, const char *type, fold_kv **kv);

/* FOLD_KV_WORKER or FOLD_KV_SERVER (a local store: FOLD_KV_WORKER);
 * FOLD_EINVAL for NULL. Local, does not block. */
FOLD_API int fold_kv_role(const fold_kv *kv);

/* Server ranks: serve pushes and pulls until every worker destroyed its
 * store (blocks, driving the engine). A server takes no message before this
 * call (the workers' pushes wait for it), so an updater or optimizer set
 * before it applies to every push, even with FOLD_PROGRESS_THREAD. Returns
 * FOLD_OK then; FOLD_EPEER naming the rank if a worker or another server
 * died first (after telling the live workers, so that they name that rank
 * too); FOLD_EABORTED once
 * fold_comm_abort was called on the communicator the store was made on (as
 * for every wait of the store); the store's failure status;
 * FOLD_EINVAL on a worker or a local store. Call fold_kv_destroy after. */
FOLD_API int fold_kv_serve(fold_kv *kv);

/* A key for a string name: the same name gives the same key on every rank,
 * whatever the order of calls (a 63-bit hash of the name, negative: keep
 * integer keys >= 0 so that they never meet string keys). Messages about
 * the key name it. Local, does not block. FOLD_EINVAL for a NULL or empty
 * name or key, a name over 255 bytes, or two names with the same hash. */
FOLD_API int fold_kv_key(fold_kv *kv, const char *name, int64_t *key);

/* Initialise key with count elements of dtype from value (copied). Workers
 * (every one, same keys in the same order); worker 0's value is stored. A
 * local store stores it at once; a distributed one sends it to the key's
 * server(s) and returns (later operations of this rank see it). Does not
 * block. Workers whose i-th inits differ (another key, count or dtype: keys
 * in another order) make the store fail on every rank with FOLD_EMISMATCH
 * naming both workers and both keys, as soon as a server has both inits
 * (the next wait, push or pull returns it; no push waits in vain). FOLD_EINVAL for a NULL value, count 0, a dtype that cannot be
 * summed (records, pairs), a key initialised before, or a call on a
 * server; the store's failure status; FOLD_ENOMEM. */
FOLD_API int fold_kv_init(fold_kv *kv, int64_t key, const void *value, size_t count, fold_dtype dtype);

/* Push n values: values[i] holds the initialised count and dtype of
 * keys[i]. The same key may appear several times in one call (several
 * devices): its values are summed first. The sum then goes to the updater
 * or optimizer where the weights live (merged gradient, stored weight), or
 * replaces the stored value when there is none; in dist_sync the server
 * sums the round's pushes of every worker first. Copies the values and
 * returns (does not block). FOLD_EINVAL (nothing pushed) for n < 0, NULL
 * keys or values (with n > 0), a NULL value, a key never initialised, or a
 * call on a server; the store's failure status; FOLD_ENOMEM. */
FOLD_API int fold_kv_push(fold_kv *kv, int n, const int64_t *keys, const void *const *values, int priority);

/* Pull n values: outs[i] receives the stored value of keys[i] (a key may
 * appear several times: each of its outputs gets a copy). Returns at once;
 * the outputs are valid after fold_kv_wait. Errors as fold_kv_push. */
FOLD_API int fold_kv_pull(fold_kv *kv, int n, const int64_t *keys, void *const *outs, int priority);

/* fold_kv_push then fold_kv_pull of the same keys, in one call (outs may
 * be the values themselves). Errors as fold_kv_push; nothing is pushed if
 * the pull's arguments are bad. */
FOLD_API int fold_kv_pushpull(fold_kv *kv, int n, const int64_t *keys, const void *const *values, void *const *outs,
                              int priority);

/* Block until every push and pull this rank started has completed (pulls'
 * outputs are then valid). Returns FOLD_OK, or the store's failure status
 * (FOLD_EPEER naming a lost worker or server, FOLD_ETIMEDOUT, ...). */
FOLD_API int fold_kv_wait(fold_kv *kv);

/* Workers: fold_kv_wait, then wait until every worker still in reached its
 * barrier (a worker that destroyed its store is not waited for). Also
 * checks that the workers initialised the same keys in the same order
 * (FOLD_EMISMATCH on every worker otherwise). A local store: fold_kv_wait.
 * Blocks. FOLD_EINVAL on a server; the store's failure status. */
FOLD_API int fold_kv_barrier(fold_kv *kv);

/* The user's update rule: merged is the pushed sum, or a part of it, stored
 * the value kept; it updates stored in place. A distributed store sends a
 * key in pieces of at most 64 KiB (with a key split over servers, pieces of
 * each server's part) and calls it once per piece, with that piece's count:
 * the rule must work element by element (the built-in optimizers do).
 * It runs inside the store's own calls (a local store's push, a server's
 * fold_kv_serve or, with FOLD_PROGRESS_THREAD, the helper thread), so it
 * may not call into its own store: every fold_kv_* call on that store from
 * inside it but fold_kv_role and fold_kv_key returns FOLD_EINVAL saying so
 * and changes nothing (calls on other stores are fine). */
typedef void (*fold_kv_updater)(int64_t key, const void *merged, void *stored, size_t count, fold_dtype dtype, void *ctx);

/* Set the updater (fn NULL: none; then a push replaces the stored value).
 * It runs where the weights live: the local store, or every server. In a
 * distributed store a function cannot travel, so each server rank sets it
 * itself before fold_kv_serve (on a worker the call is accepted and has no
 * effect). Replaces an optimizer set before. Local, does not block.
 * FOLD_EINVAL for a NULL kv. */
FOLD_API int fold_kv_set_updater(fold_kv *kv, fold_kv_updater fn, void *ctx);

/* Use a built-in optimizer where the weights live (its state, momentum or
 * Adam moments, lives there too): "sgd lr=0.1 momentum=0.9 wd=0.0001",
 * "adam lr=0.001" (docs/kvstore.md lists the parameters). Local store: set
 * at once. Distributed: worker 0's call sends the spec to every server
 * (ahead of its later pushes; call it before the first push), other
 * workers only check the spec, a server rank may also set it itself.
 * Replaces an updater. Does not block. FOLD_EINVAL (with the reason) for a
 * NULL kv or spec or one that does not parse; FOLD_ENOMEM. */
FOLD_API int fold_kv_set_optimizer(fold_kv *kv, const char *spec);

/* Write up to max ranks (of the store's communicator) known lost into
 * ranks and return how many are lost in all (like MXNet's num_dead_node),
 * or FOLD_EINVAL for a NULL kv, or NULL ranks with max > 0. Lost: dead
 * without leaving, or blamed by a timeout (silent past FOLD_TIMEOUT). A
 * rank that failed because of another one and then exited is not listed:
 * the one it blamed is. A local store: 0. Local, does not block. */
FOLD_API int fold_kv_dead_nodes(fold_kv *kv, int *ranks, int max);

/* Destroy the store. A worker first completes its operations (as
 * fold_kv_wait, bounded by FOLD_TIMEOUT), then tells the servers it left;
 * a server should have returned from fold_kv_serve. Frees everything even
 * after a failure. NULL is accepted. Returns FOLD_OK or the failure status
 * the final wait met (the store is freed either way). */
FOLD_API int fold_kv_destroy(fold_kv *kv);

#ifdef __cplusplus
}
#endif

#endif /* FOLD_PUBLIC_KV_H */
