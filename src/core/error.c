/* error.c — status names and the last-error message (the fail-stop protocol is engine/fail.c). */
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

