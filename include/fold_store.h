/* fold_store.h — fold_comm_init_store, a rendezvous at an external key-value
 * store given as callbacks: part of fold.h (which includes it; include
 * fold.h). Its own file so that fold.h stays a readable size.
 * docs/bootstrap.md §2.3 has the details. */
#ifndef FOLD_PUBLIC_STORE_H
#define FOLD_PUBLIC_STORE_H

#include "fold.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An external key-value store, given as callbacks, for fold_comm_init_store
 * (e.g. the c10d::Store that torch.distributed hands a backend). Keys are
 * printable ASCII without spaces (at most 256 bytes), values at most 64 KiB.
 * Each callback returns 0 or a negative FOLD_E* code (another negative value
 * counts as FOLD_ESYS); fold calls them from the thread that called
 * fold_comm_init_store, one at a time, and never after it returned.
 *  - set: store value (len bytes) under key, replacing any older value.
 *  - get: wait up to timeout_s seconds (0: look once, do not wait) until key
 *    exists, copy at most cap bytes of its value into buf and set *len to the
 *    value's full length; FOLD_ETIMEDOUT if the key does not exist by then.
 *  - add: atomically add delta to the 64-bit integer at key (a missing key
 *    counts as 0) and set *total to the new value. How the store keeps the
 *    integer is its own business: fold only reads it back through add.
 *  - del: remove key (a missing key is not an error). May be NULL: then the
 *    rendezvous leaves its keys in the store. */
typedef struct fold_store_callbacks {
  int (*set)(void *ctx, const char *key, const void *value, size_t len);
  int (*get)(void *ctx, const char *key, void *buf, size_t cap, size_t *len, double timeout_s);
  int (*add)(void *ctx, const char *key, int64_t delta, int64_t *total);
  int (*del)(void *ctx, const char *key);
} fold_store_callbacks;

/* fold_comm_init, meeting at an external store instead of a URL: ctx is
 * passed to every callback. Blocks until every rank has joined and all
 * connections are made (bounded by FOLD_TIMEOUT; the callbacks' own waits
 * are given the time left). The rendezvous keys all start with
 * "<size>.cb/", so the store (or the key prefix the callbacks add) must
 * serve one fold_comm_init_store at a time: give each communicator its
 * own (torch.distributed gives each process group its own prefix).
 * Transports are chosen as for fold_comm_init. Authentication: with
 * FOLD_JOB_TOKEN set, the data connections prove the token; without it,
 * they prove a random secret rank 0 published in the store, so the job is
 * as private as the store. The callbacks must stay valid during the call
 * only. Returns FOLD_EINVAL (message in fold_comm_last_error(NULL)) for a
 * NULL comm or cb, a NULL set, get or add, or rank/size out of range; a
 * callback's failure code with a message naming the rank, the callback and
 * the key; FOLD_ETIMEDOUT naming the ranks that did not join; otherwise
 * errors as for fold_comm_init. On failure *comm is NULL. */
FOLD_API int fold_comm_init_store(fold_comm **comm, int rank, int size, const fold_store_callbacks *cb, void *ctx);

#ifdef __cplusplus
}
#endif
#endif /* FOLD_PUBLIC_STORE_H */
