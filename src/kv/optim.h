/* optim.h — the key-value store's built-in optimizers (fold_kv_set_optimizer): SGD with momentum and Adam. */
#ifndef FOLD_KV_OPTIM_H
#define FOLD_KV_OPTIM_H

#include "core/internal.h"

/* A parsed optimizer with its per-key state (momentum, Adam's moments and
 * step count). Pure computation: no communication, no threads. Not safe for
 * concurrent use: callers serialise calls on one optimizer. */
typedef struct fold__kv_optim fold__kv_optim;

/* Parses spec: a name, then key=value settings separated by blanks, e.g.
 *   "sgd lr=0.1 momentum=0.9 wd=0.0001"   (also rescale=, clip=)
 *   "adam lr=0.001 beta1=0.9 beta2=0.999 epsilon=1e-8 wd=0"  (also rescale=, clip=)
 * Defaults are MXNet's: sgd lr=0.01 momentum=0 wd=0; adam lr=0.001 beta1=0.9
 * beta2=0.999 epsilon=1e-8 wd=0; rescale=1 and no clipping for both
 * (clip=0 also means none). rescale_grad= and clip_gradient= (MXNet's
 * names) are accepted too.
 * Returns 0 and *o, or FOLD_EINVAL with a message in why (NUL-terminated,
 * truncated to whylen; why may be NULL) that quotes the bad token: an
 * unknown name or setting, a value that is not a finite number or is out
 * of range (lr, wd, epsilon, clip >= 0 / > 0 for epsilon; momentum, beta1,
 * beta2 in [0, 1)), a setting given twice, a NULL or empty spec;
 * FOLD_ENOMEM. */
int fold__kv_optim_parse(const char *spec, fold__kv_optim **o, char *why, size_t whylen);

/* One update of weight (count elements) with grad, MXNet's rules, computed
 * in the weight's type:
 *   g = clip(rescale * grad, -clip, clip) [+ wd * weight for both]
 *   sgd:  mom = momentum * mom - lr * g;  weight += mom
 *         (momentum 0 keeps no state: weight -= lr * g)
 *   adam: t += 1; m = beta1 * m + (1 - beta1) * g; v = beta2 * v + (1 - beta2) * g^2
 *         weight -= lr / (1 - beta1^t) * m / (sqrt(v / (1 - beta2^t)) + epsilon)
 * (Adam's bias correction with epsilon outside the square root, as PyTorch
 * and the Adam paper; MXNet folds sqrt(1 - beta2^t) into the rate instead,
 * which moves epsilon by that factor.) The state of key is created zeroed
 * on its first update and kept in o. grad and weight may not overlap.
 * Returns 0, or FOLD_EINVAL with a message in fold_comm_last_error(NULL)
 * naming the key: a dtype other than float32/float64, NULL buffers with
 * count > 0, or a count or dtype that differs from the key's earlier
 * updates (weight is then untouched); FOLD_ENOMEM. */
int fold__kv_optim_apply(fold__kv_optim *o, int64_t key, const void *grad, void *weight, size_t count,
                         fold_dtype dtype);
/* The same for the part of key starting at element off, with a state of
 * its own: a server applies a key piece by piece (dist_worker.c), and
 * several pieces of one key may live on one server. */
int fold__kv_optim_apply_part(fold__kv_optim *o, int64_t key, uint64_t off, const void *grad, void *weight,
                              size_t count, fold_dtype dtype);

/* "sgd" or "adam". */
const char *fold__kv_optim_name(const fold__kv_optim *o);

/* Frees o and every key's state. NULL is a no-op. */
void fold__kv_optim_free(fold__kv_optim *o);

#endif
