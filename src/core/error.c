/* error.c — status names, the last-error message and the argument checks of public calls (fail-stop is engine/fail.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* Messages of calls that have no communicator yet (fold_init and friends). */
static _Thread_local char pre_comm_error[FOLD__ERRLEN];

const char *fold_strerror(int status) {
  switch (status) {
  case FOLD_OK: return "FOLD_OK: success";
  case FOLD_EINVAL: return "FOLD_EINVAL: invalid argument";
  case FOLD_ETIMEDOUT: return "FOLD_ETIMEDOUT: timed out (FOLD_TIMEOUT)";
  case FOLD_EPEER: return "FOLD_EPEER: a peer was lost";
  case FOLD_EMISMATCH: return "FOLD_EMISMATCH: ranks disagree or message larger than the buffer";
  case FOLD_EAUTH: return "FOLD_EAUTH: authentication failed";
  case FOLD_ENOMEM: return "FOLD_ENOMEM: out of memory";
  case FOLD_ESYS: return "FOLD_ESYS: operating-system call failed";
  case FOLD_EABORTED: return "FOLD_EABORTED: communicator aborted";
  case FOLD_EINTERNAL: return "FOLD_EINTERNAL: internal error in fold";
  default: return "unknown fold status";
  }
}

const char *fold__pre_comm_error(void) { return pre_comm_error; }

int fold__verror(fold_comm *comm, int status, const char *fmt, va_list ap) {
  char *dst = comm ? comm->last_error : pre_comm_error;
  vsnprintf(dst, FOLD__ERRLEN, fmt, ap);
  /* INFO, not WARN: the caller gets the status and this message. */
  static fold__log_site site;
  if ((comm ? comm->log_level : fold__log_level_env()) >= FOLD__LOG_INFO)
    fold__log_at(&site, FOLD__LOG_INFO, comm ? comm->rank : -1, "%s (%s)", dst, fold_strerror(status));
  return status;
}

int fold__error(fold_comm *comm, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fold__verror(comm, status, fmt, ap);
  va_end(ap);
  return status;
}

int fold__error_quiet(fold_comm *comm, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(comm ? comm->last_error : pre_comm_error, FOLD__ERRLEN, fmt, ap);
  va_end(ap);
  return status;
}

/* ---- argument checks shared by the public calls of every layer ---- */

int fold__check_comm(const fold_comm *c) {
  return c ? FOLD_OK : fold__error(NULL, FOLD_EINVAL, "communicator is NULL");
}

int fold__check_buf(fold_comm *c, const char *op, const void *buf, size_t count, fold_dtype dtype,
                    size_t *bytes) {
  size_t es = fold_dtype_size(dtype);
  if (es == 0)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: invalid dtype %d", op, c->rank, (int)dtype);
  if (count > SIZE_MAX / es)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: count %zu of %s overflows", op, c->rank, count,
                       fold_dtype_name(dtype));
  if (buf == NULL && count > 0)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: buffer is NULL with count %zu", op, c->rank, count);
  *bytes = count * es;
  return FOLD_OK;
}

int fold__check_peer(fold_comm *c, const char *op, int peer) {
  if (peer < 0 || peer >= c->size)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: peer %d is not a rank of this communicator (size %d)",
                       op, c->rank, peer, c->size);
  return FOLD_OK;
}
