/* iterq.c — Alink's iterative communication queue: named session buffers, steps run per superstep, rank 0's stop. */
#include "queue/iterq.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "select/select.h"

/* ---- session buffers ----------------------------------------------------------- */

uint64_t fold__iq_fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

void fold__iq_text(char *out, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out, cap, fmt, ap);
  va_end(ap);
}

fold__iq_buf *fold__iq_find(fold_iterq *q, const char *name) {
  for (int i = 0; i < q->nbufs; i++)
    if (strcmp(q->bufs[i].name, name) == 0) return &q->bufs[i];
  return NULL;
}

/* Names are copied into fixed fields; the bound keeps checkpoints and
 * messages simple. */
static int check_name(fold_iterq *q, const char *name, const char *fn) {
  if (name == NULL) return fold__error(q->comm, FOLD_EINVAL, "%s: rank %d: name is NULL", fn, q->rank);
  size_t n = strlen(name);
  if (n == 0 || n >= FOLD__IQ_NAME)
    return fold__error(q->comm, FOLD_EINVAL, "%s: rank %d: buffer name '%.80s' must have 1 to %d bytes", fn, q->rank,
                       name, FOLD__IQ_NAME - 1);
  return FOLD_OK;
}

int fold_iterq_put(fold_iterq *q, const char *name, const void *data, size_t count, fold_dtype dtype) {
  if (q == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_iterq_put: queue is NULL");
  int rc = check_name(q, name, "fold_iterq_put");
  if (rc < 0) return rc;
  size_t es = fold_dtype_size(dtype);
  if (es == 0)
    return fold__error(q->comm, FOLD_EINVAL, "fold_iterq_put: rank %d: buffer '%s': invalid dtype %d", q->rank, name,
                       (int)dtype);
  if (count > SIZE_MAX / es)
    return fold__error(q->comm, FOLD_EINVAL, "fold_iterq_put: rank %d: buffer '%s': %zu elements overflow", q->rank,
                       name, count);
  fold__iq_buf *b = fold__iq_find(q, name);
  if (b && b->count == count && b->dtype == dtype) { /* Alink's overwrite: the same object, new contents */
    if (data && data != b->data) memmove(b->data, data, count * es);
    if (!data) memset(b->data, 0, count * es);
    return FOLD_OK;
  }
  void *mem = calloc(count ? count : 1, es);
  if (mem == NULL) return fold__error(q->comm, FOLD_ENOMEM, "fold_iterq_put: rank %d: buffer '%s'", q->rank, name);
  if (data) memcpy(mem, data, count * es);
  if (b == NULL) {
    if (q->nbufs == q->capbufs) {
      int cap = q->capbufs ? 2 * q->capbufs : 8;
      fold__iq_buf *nb = realloc(q->bufs, (size_t)cap * sizeof *nb);
      if (nb == NULL) {
        free(mem);
        return fold__error(q->comm, FOLD_ENOMEM, "fold_iterq_put: rank %d: buffer '%s'", q->rank, name);
      }
      q->bufs = nb;
      q->capbufs = cap;
    }
    b = &q->bufs[q->nbufs++];
    snprintf(b->name, sizeof b->name, "%s", name);
  } else {
    free(b->data);
  }
  b->data = mem;
  b->count = count;
  b->dtype = dtype;
  b->esize = es;
  return FOLD_OK;
}

void *fold_iterq_get(fold_iterq *q, const char *name, size_t *count, fold_dtype *dtype) {
  fold__iq_buf *b = (q && name) ? fold__iq_find(q, name) : NULL;
  if (b == NULL) return NULL;
  if (count) *count = b->count;
  if (dtype) *dtype = b->dtype;
  return b->data;
}

void fold_partition(uint64_t total, int rank, int size, uint64_t *start, uint64_t *count) {
  uint64_t s = 0, n = 0;
  if (size >= 1 && rank >= 0 && rank < size) {
    uint64_t q = total / (uint64_t)size, r = total % (uint64_t)size, k = (uint64_t)rank;
    s = k * q + (k < r ? k : r);
    n = q + (k < r ? 1 : 0);
  }
  if (start) *start = s;
  if (count) *count = n;
}

/* ---- building the queue --------------------------------------------------------- */

int fold_iterq_create(fold_comm *comm, fold_iterq **q) {
  if (q) *q = NULL;
  if (comm == NULL || q == NULL)
    return fold__error(comm, FOLD_EINVAL, "fold_iterq_create: %s is NULL", comm ? "q" : "communicator");
  fold_iterq *n = calloc(1, sizeof *n);
  if (n == NULL) return fold__error(comm, FOLD_ENOMEM, "fold_iterq_create: rank %d: out of memory", comm->rank);
  n->comm = comm;
  n->rank = comm->rank;
  n->size = comm->size;
  n->max_iter = 100;
  *q = n;
  return FOLD_OK;
}

static int not_ran(fold_iterq *q, const char *fn) {
  if (q == NULL) return fold__error(NULL, FOLD_EINVAL, "%s: queue is NULL", fn);
  if (q->ran) return fold__error(q->comm, FOLD_EINVAL, "%s: rank %d: the queue has already run", fn, q->rank);
  return FOLD_OK;
}

static int add_step(fold_iterq *q, const fold__iq_step *s) {
  if (q->nsteps == q->capsteps) {
    int cap = q->capsteps ? 2 * q->capsteps : 8;
    fold__iq_step *ns = realloc(q->steps, (size_t)cap * sizeof *ns);
    if (ns == NULL) return fold__error(q->comm, FOLD_ENOMEM, "fold_iterq: rank %d: out of memory", q->rank);
    q->steps = ns;
    q->capsteps = cap;
  }
  q->steps[q->nsteps++] = *s;
  return FOLD_OK;
}

int fold_iterq_add_compute(fold_iterq *q, fold_iterq_fn fn, void *ctx) {
  int rc = not_ran(q, "fold_iterq_add_compute");
  if (rc < 0) return rc;
  if (fn == NULL) return fold__error(q->comm, FOLD_EINVAL, "fold_iterq_add_compute: rank %d: fn is NULL", q->rank);
  return add_step(q, &(fold__iq_step){.kind = FOLD__IQ_COMPUTE, .fn = fn, .ctx = ctx});
}

int fold_iterq_add_allreduce(fold_iterq *q, const char *name, fold_op op) {
  int rc = not_ran(q, "fold_iterq_add_allreduce");
  if (rc == FOLD_OK) rc = check_name(q, name, "fold_iterq_add_allreduce");
  if (rc < 0) return rc;
  fold__iq_step s = {.kind = FOLD__IQ_ALLREDUCE, .op = op};
  snprintf(s.name, sizeof s.name, "%s", name);
  return add_step(q, &s);
}

int fold_iterq_add_broadcast(fold_iterq *q, const char *name, int root) {
  int rc = not_ran(q, "fold_iterq_add_broadcast");
  if (rc == FOLD_OK) rc = check_name(q, name, "fold_iterq_add_broadcast");
  if (rc < 0) return rc;
  if (root < 0 || root >= q->size)
    return fold__error(q->comm, FOLD_EINVAL, "fold_iterq_add_broadcast: rank %d: buffer '%s': root %d outside [0, %d)",
                       q->rank, name, root, q->size);
  fold__iq_step s = {.kind = FOLD__IQ_BROADCAST, .root = root};
  snprintf(s.name, sizeof s.name, "%s", name);
  return add_step(q, &s);
}

int fold_iterq_set_stop(fold_iterq *q, int (*stop)(fold_iterq *q, void *ctx), void *ctx) {
  int rc = not_ran(q, "fold_iterq_set_stop");
  if (rc < 0) return rc;
  if (stop == NULL) return fold__error(q->comm, FOLD_EINVAL, "fold_iterq_set_stop: rank %d: stop is NULL", q->rank);
  q->stop = stop;
  q->stop_ctx = ctx;
  return FOLD_OK;
}

int fold_iterq_set_max_iter(fold_iterq *q, int max_iter) {
  if (q == NULL) return fold__error(NULL, FOLD_EINVAL, "fold_iterq_set_max_iter: queue is NULL");
  if (max_iter < 1)
    return fold__error(q->comm, FOLD_EINVAL, "fold_iterq_set_max_iter: rank %d: max_iter %d < 1", q->rank, max_iter);
  q->max_iter = max_iter;
  return FOLD_OK;
}

int fold_iterq_close_with(fold_iterq *q, fold_iterq_fn fn, void *ctx) {
  int rc = not_ran(q, "fold_iterq_close_with");
  if (rc < 0) return rc;
  if (fn == NULL) return fold__error(q->comm, FOLD_EINVAL, "fold_iterq_close_with: rank %d: fn is NULL", q->rank);
  if (q->close)
    return fold__error(q->comm, FOLD_EINVAL, "fold_iterq_close_with: rank %d: the closing step is already set", q->rank);
  q->close = fn;
  q->close_ctx = ctx;
  return FOLD_OK;
}

int fold_iterq_iteration(const fold_iterq *q) { return q ? q->iter : FOLD_EINVAL; }

fold_comm *fold_iterq_comm(const fold_iterq *q) { return q ? q->comm : NULL; }

int fold_iterq_fail(fold_iterq *q, int status, const char *fmt, ...) {
  if (q == NULL || fmt == NULL) return status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(q->msg, sizeof q->msg, fmt, ap);
  va_end(ap);
  return status;
}

int fold_iterq_destroy(fold_iterq *q) {
  if (q == NULL) return FOLD_OK;
  for (int i = 0; i < q->nbufs; i++) free(q->bufs[i].data);
  free(q->bufs);
  free(q->steps);
  free(q->dir);
  free(q->init);
  free(q);
  return FOLD_OK;
}

/* ---- agreement ------------------------------------------------------------------ */

/* One allreduce of three (value, index) pairs with MINLOC:
 *   [0] (failed ? rank : size, code): the lowest failing rank and its code;
 *   [1] (*vmin, rank): the minimum;
 *   [2] (rank 0 ? *v0 : INT_MAX, 0): rank 0's value.
 * Then, only on failure, the failing rank's text travels by broadcast. */
int fold__iq_agree(fold_iterq *q, int *code, const char *msg, int32_t *vmin, int32_t *v0) {
  fold_comm *c = q->comm;
  fold_int32_int32 v[3] = {{*code < 0 ? q->rank : q->size, *code < 0 ? *code : 0},
                           {*vmin, q->rank},
                           {q->rank == 0 ? *v0 : INT32_MAX, 0}};
  int rc = fold_allreduce(v, v, 3, FOLD_INT32_INT32, FOLD_MINLOC, c);
  if (rc < 0) return rc;
  *vmin = v[1].value;
  *v0 = v[2].value;
  if (v[0].value >= q->size) return FOLD_OK;
  int who = v[0].value;
  *code = v[0].index;
  char text[FOLD__IQ_MSG];
  memset(text, 0, sizeof text);
  if (who == q->rank) fold__iq_text(text, sizeof text, "%s", msg);
  rc = fold_broadcast(text, sizeof text, FOLD_UINT8, who, c);
  if (rc < 0) return rc;
  text[sizeof text - 1] = 0;
  return fold__error(c, *code, "%s", text);
}

/* ---- the superstep loop ---------------------------------------------------------- */

static const char *kind_name(int kind) {
  return kind == FOLD__IQ_COMPUTE ? "compute" : kind == FOLD__IQ_ALLREDUCE ? "allreduce" : "broadcast";
}

/* The step's own words: what it set with fold_iterq_fail, else the
 * communicator's message if the step changed it, else the code's name. */
static void step_text(fold_iterq *q, int rc, const char *before, char *out, size_t cap) {
  const char *now = fold_comm_last_error(q->comm);
  if (q->msg[0])
    fold__iq_text(out, cap, "%s", q->msg);
  else if (now[0] && strcmp(now, before) != 0)
    fold__iq_text(out, cap, "%s", now);
  else
    fold__iq_text(out, cap, "%s", fold_strerror(rc));
}

/* Before a communication step's collective, until it has passed once in
 * this run: one allreduce of five (value, index) pairs with MINLOC tells
 * every rank whether a rank failed earlier in this superstep (then
 * everyone skips the superstep's remaining steps: the agreement reports
 * it), whether every rank has the buffer, and whether all have it with
 * the same count and dtype (a 31-bit digest of both: its minimum and
 * maximum). Every rank reaches the same verdict, so a missing buffer or
 * shapes that differ are the same error on every rank and the
 * communicator stays usable. Once every rank had the buffer it cannot
 * disappear (nothing removes one), so later supersteps skip the check; a
 * shape changed later is caught by the collective's own mismatch check.
 * Returns FOLD_OK (with *skip set when the superstep ends here) or a
 * collective failure. */
static int precheck(fold_iterq *q, int k, const fold__iq_buf *b, int *fail, char *text, size_t cap, int *skip) {
  fold__iq_step *s = &q->steps[k];
  fold_comm *c = q->comm;
  int32_t h = 0;
  if (b) {
    uint64_t shape[2] = {(uint64_t)b->dtype, (uint64_t)b->count};
    h = (int32_t)(fold__iq_fnv(FOLD__FNV_INIT, shape, sizeof shape) & 0x7fffffff);
  }
  fold_int32_int32 v[5] = {{*fail ? q->rank : q->size, *fail},
                           {b ? q->size : q->rank, 0},
                           {b ? INT32_MAX : -q->rank, 0},
                           {b ? h : INT32_MAX, q->rank},
                           {b ? -h : INT32_MAX, q->rank}};
  int rc = fold_allreduce(v, v, 5, FOLD_INT32_INT32, FOLD_MINLOC, c);
  if (rc < 0) return rc;
  const char *what = kind_name(s->kind);
  if (v[0].value < q->size) { /* a rank failed in an earlier step: its error is the superstep's */
    *skip = 1;
    return FOLD_OK;
  }
  if (v[1].value < q->size) {
    int lo = v[1].value, hi = -v[2].value;
    char more[64] = "";
    if (hi != lo) fold__iq_text(more, sizeof more, " (nor on rank %d%s)", hi, hi > lo + 1 ? ", perhaps others" : "");
    *fail = FOLD_EINVAL;
    *skip = 1;
    fold__iq_text(text, cap, "fold_iterq_run: superstep %d, step %d (%s of buffer '%s'): the buffer was never put on "
                  "rank %d%s; every rank must put it before the step runs", q->iter, k + 1, what, s->name, lo, more);
    return FOLD_OK;
  }
  if (v[3].value != -v[4].value) { /* two shapes: learn them (only on this error path) */
    int ra = v[3].index, rb = v[4].index;
    uint64_t mine[2] = {(uint64_t)b->count, (uint64_t)b->dtype}, *all = malloc((size_t)q->size * sizeof mine);
    if (all == NULL) return fold__error(c, FOLD_ENOMEM, "fold_iterq_run: rank %d: out of memory", q->rank);
    rc = fold_allgather(mine, all, 2, FOLD_UINT64, c);
    if (rc == FOLD_OK) {
      *fail = FOLD_EMISMATCH;
      *skip = 1;
      fold__iq_text(text, cap, "fold_iterq_run: superstep %d, step %d (%s of buffer '%s'): rank %d put it with %llu "
                    "elements of %s, rank %d with %llu of %s; every rank must put the same count and dtype", q->iter,
                    k + 1, what, s->name, ra, (unsigned long long)all[2 * ra], fold_dtype_name((fold_dtype)all[2 * ra + 1]),
                    rb, (unsigned long long)all[2 * rb], fold_dtype_name((fold_dtype)all[2 * rb + 1]));
    }
    free(all);
    return rc;
  }
  s->checked = 1;
  return FOLD_OK;
}

/* Run one communication step. A rank that already failed in this superstep
 * (ghost) still takes part, so that nobody waits for it (until the step's
 * first check has passed, the check itself tells everyone to stop). Returns
 * FOLD_OK, a local failure in *fail and text, *skip when the superstep ends
 * here on every rank, or a collective failure (< 0, the communicator
 * failed: every rank learns it from the collective). */
static int comm_step(fold_iterq *q, int k, int *fail, char *text, size_t cap, int *skip) {
  fold__iq_step *s = &q->steps[k];
  fold_comm *c = q->comm;
  fold__iq_buf *b = fold__iq_find(q, s->name);
  int rc = FOLD_OK;
  if (!s->checked) {
    rc = precheck(q, k, b, fail, text, cap, skip);
    if (rc == FOLD_OK && *skip) return FOLD_OK;
  }
  if (rc == FOLD_OK && s->kind == FOLD__IQ_ALLREDUCE) {
    /* Alink's allreduce unless the user forced one (fold_comm_set_algo / FOLD_ALGO): the call's own option,
     * the communicator's choice untouched */
    fold_coll_opts o = FOLD_COLL_OPTS_INIT;
    if (fold__select_forced(c, FOLD__COLL_ALLREDUCE) < 0) o.algo = "direct";
    rc = fold_allreduce_opts(b->data, b->data, b->count, b->dtype, s->op, c, &o);
  } else if (rc == FOLD_OK) {
    rc = fold_broadcast(b->data, b->count, b->dtype, s->root, c);
  }
  if (rc == FOLD_OK) return FOLD_OK;
  char why[FOLD__ERRLEN];
  fold__iq_text(why, sizeof why, "%s", fold_comm_last_error(c));
  if (rc == FOLD_EINVAL && !c->failed) { /* an argument error is this rank's: the others learn it by agreement */
    if (*fail == 0) {
      *fail = rc;
      fold__iq_text(text, cap, "fold_iterq_run: rank %d failed in superstep %d, step %d (%s of buffer '%s'): %s", q->rank,
               q->iter, k + 1, kind_name(s->kind), s->name, why);
    }
    return FOLD_OK;
  }
  if (*fail) /* this rank had failed already: keep its own cause in front (the others see only the collective's error) */
    return fold__error(c, rc, "%.300s; then superstep %d, step %d (%s of buffer '%s'): %s", text, q->iter, k + 1,
                       kind_name(s->kind), s->name, why);
  return fold__error(c, rc, "fold_iterq_run: rank %d: superstep %d, step %d (%s of buffer '%s'): %s", q->rank, q->iter,
                     k + 1, kind_name(s->kind), s->name, why);
}

/* A step's return: FOLD_OK, or an error. A positive value is a mistake of
 * the step (a count, a boolean) that would otherwise pass for success: it
 * fails the step with FOLD_EINVAL, saying so. */
static int step_status(fold_iterq *q, int rc, const char *before, char *why, size_t cap) {
  if (rc > 0) {
    fold__iq_text(why, cap, "the step returned %d; a step returns FOLD_OK (0) or a negative FOLD_E* code", rc);
    return FOLD_EINVAL;
  }
  if (rc < 0) step_text(q, rc, before, why, cap);
  return rc;
}

/* One superstep's steps. *fail and text: this rank's first local failure;
 * *skip: the superstep ended early on every rank (a communication step's
 * check found a failure). */
static int run_steps(fold_iterq *q, int *fail, char *text, size_t cap, int *skip) {
  for (int k = 0; k < q->nsteps && !*skip; k++) {
    fold__iq_step *s = &q->steps[k];
    if (s->kind != FOLD__IQ_COMPUTE) {
      int rc = comm_step(q, k, fail, text, cap, skip);
      if (rc < 0) return rc;
      continue;
    }
    if (*fail) continue; /* a failed rank skips its computations, not its communication */
    char before[FOLD__ERRLEN], why[FOLD__IQ_MSG];
    snprintf(before, sizeof before, "%s", fold_comm_last_error(q->comm));
    q->msg[0] = 0;
    int rc = step_status(q, s->fn(q, s->ctx), before, why, sizeof why);
    if (rc < 0) {
      *fail = rc;
      fold__iq_text(text, cap, "fold_iterq_run: rank %d failed in superstep %d, step %d (compute): %s", q->rank, q->iter,
               k + 1, why);
    }
    if (q->comm->failed) {
      /* The communicator failed during the step. If the step succeeded,
       * the failure is news from a peer (say, a mismatch it found in the
       * next collective, told while this rank computed): the next
       * communication step, run at once, meets it and names itself
       * (computations before it are skipped). Otherwise the step
       * broke it (e.g. a collective of its own): name the step. */
      int next = k + 1;
      while (next < q->nsteps && q->steps[next].kind == FOLD__IQ_COMPUTE) next++;
      if (rc == FOLD_OK && next < q->nsteps) { /* straight to it: no computing on a failed communicator */
        k = next - 1;
        continue;
      }
      char cause[FOLD__ERRLEN]; /* the message is rewritten from itself: copy it first */
      snprintf(cause, sizeof cause, "%s", fold_comm_last_error(q->comm));
      return fold__error(q->comm, q->comm->fail_status, "fold_iterq_run: rank %d: superstep %d, step %d (compute): %s",
                         q->rank, q->iter, k + 1, cause);
    }
  }
  return FOLD_OK;
}

int fold_iterq_run(fold_iterq *q) {
  int rc = not_ran(q, "fold_iterq_run");
  if (rc < 0) return rc;
  q->ran = 1;
  if (q->nsteps == 0) return fold__error(q->comm, FOLD_EINVAL, "fold_iterq_run: rank %d: the queue has no steps", q->rank);
  int start = 0, stopped = 0;
  if (q->dir) {
    rc = fold__iq_digests(q);
    if (rc < 0) return fold__error(q->comm, rc, "fold_iterq_run: %s", q->msg);
    rc = fold__iq_resume(q, &start, &stopped);
    if (rc < 0) return rc;
  }
  char text[FOLD__IQ_MSG];
  q->iter = start;
  for (int it = start + 1; !stopped && it <= q->max_iter; it++) {
    q->iter = it;
    int fail = 0, skip = 0;
    text[0] = 0;
    rc = run_steps(q, &fail, text, sizeof text, &skip);
    if (rc < 0) return rc;
    int32_t stop = 0, dummy = 0;
    if (q->rank == 0 && !fail && !skip && q->stop) {
      char before[FOLD__ERRLEN], why[FOLD__IQ_MSG];
      snprintf(before, sizeof before, "%s", fold_comm_last_error(q->comm));
      q->msg[0] = 0;
      int st = q->stop(q, q->stop_ctx);
      if (st < 0) {
        fail = st;
        step_text(q, st, before, why, sizeof why);
        fold__iq_text(text, sizeof text, "fold_iterq_run: rank 0 failed in superstep %d, stop criterion: %s", it, why);
      }
      stop = st > 0;
    }
    if (!fail && !skip && q->dir && it % q->every == 0) {
      int st = fold__iq_save(q, stop);
      if (st < 0) {
        fail = st;
        fold__iq_text(text, sizeof text, "fold_iterq_run: rank %d failed in superstep %d, checkpoint: %s", q->rank, it, q->msg);
      }
    }
    rc = fold__iq_agree(q, &fail, text, &dummy, &stop);
    if (rc < 0) return rc;
    stopped = stop != 0;
  }
  if (q->close == NULL) return FOLD_OK;
  /* The closing step, then one more agreement so that a failure in it is
   * every rank's (the loop's last superstep stays the current one). */
  int fail = 0;
  char before[FOLD__ERRLEN], why[FOLD__IQ_MSG];
  snprintf(before, sizeof before, "%s", fold_comm_last_error(q->comm));
  q->msg[0] = 0;
  rc = q->close(q, q->close_ctx);
  if (q->comm->failed)
    return fold__error(q->comm, q->comm->fail_status, "fold_iterq_run: rank %d: closing step: %s", q->rank,
                       fold_comm_last_error(q->comm));
  text[0] = 0;
  rc = step_status(q, rc, before, why, sizeof why);
  if (rc < 0) {
    fail = rc;
    fold__iq_text(text, sizeof text, "fold_iterq_run: rank %d failed in the closing step: %s", q->rank, why);
  }
  int32_t a = 0, b = 0;
  return fold__iq_agree(q, &fail, text, &a, &b);
}
