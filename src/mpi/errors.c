/* errors.c — MPI error codes, classes and strings, fold's codes mapped to classes, and the error handlers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_impl.h"

/* The standard text of each class, indexed by class. */
static const char *const class_text[] = {
    [MPI_SUCCESS] = "MPI_SUCCESS: no error",
    [MPI_ERR_BUFFER] = "MPI_ERR_BUFFER: invalid buffer pointer",
    [MPI_ERR_COUNT] = "MPI_ERR_COUNT: invalid count argument",
    [MPI_ERR_TYPE] = "MPI_ERR_TYPE: invalid datatype",
    [MPI_ERR_TAG] = "MPI_ERR_TAG: invalid tag",
    [MPI_ERR_COMM] = "MPI_ERR_COMM: invalid communicator",
    [MPI_ERR_RANK] = "MPI_ERR_RANK: invalid rank",
    [MPI_ERR_REQUEST] = "MPI_ERR_REQUEST: invalid request",
    [MPI_ERR_ROOT] = "MPI_ERR_ROOT: invalid root",
    [MPI_ERR_GROUP] = "MPI_ERR_GROUP: invalid group",
    [MPI_ERR_OP] = "MPI_ERR_OP: invalid reduce operation",
    [MPI_ERR_TOPOLOGY] = "MPI_ERR_TOPOLOGY: invalid topology",
    [MPI_ERR_DIMS] = "MPI_ERR_DIMS: invalid dimension argument",
    [MPI_ERR_ARG] = "MPI_ERR_ARG: invalid argument of some other kind",
    [MPI_ERR_UNKNOWN] = "MPI_ERR_UNKNOWN: unknown error",
    [MPI_ERR_TRUNCATE] = "MPI_ERR_TRUNCATE: message truncated",
    [MPI_ERR_OTHER] = "MPI_ERR_OTHER: known error not in this list",
    [MPI_ERR_INTERN] = "MPI_ERR_INTERN: internal error",
    [MPI_ERR_IN_STATUS] = "MPI_ERR_IN_STATUS: error code is in status",
    [MPI_ERR_PENDING] = "MPI_ERR_PENDING: pending request",
    [MPI_ERR_KEYVAL] = "MPI_ERR_KEYVAL: invalid keyval",
    [MPI_ERR_NO_MEM] = "MPI_ERR_NO_MEM: out of memory",
    [MPI_ERR_BASE] = "MPI_ERR_BASE: invalid base",
    [MPI_ERR_INFO_KEY] = "MPI_ERR_INFO_KEY: key too long",
    [MPI_ERR_INFO_VALUE] = "MPI_ERR_INFO_VALUE: value too long",
    [MPI_ERR_INFO_NOKEY] = "MPI_ERR_INFO_NOKEY: no such key",
    [MPI_ERR_SPAWN] = "MPI_ERR_SPAWN: error in spawning processes",
    [MPI_ERR_PORT] = "MPI_ERR_PORT: invalid port name",
    [MPI_ERR_SERVICE] = "MPI_ERR_SERVICE: invalid service name",
    [MPI_ERR_NAME] = "MPI_ERR_NAME: invalid service name",
    [MPI_ERR_WIN] = "MPI_ERR_WIN: invalid window",
    [MPI_ERR_SIZE] = "MPI_ERR_SIZE: invalid size",
    [MPI_ERR_DISP] = "MPI_ERR_DISP: invalid displacement",
    [MPI_ERR_INFO] = "MPI_ERR_INFO: invalid info",
    [MPI_ERR_LOCKTYPE] = "MPI_ERR_LOCKTYPE: invalid lock type",
    [MPI_ERR_ASSERT] = "MPI_ERR_ASSERT: invalid assert",
    [MPI_ERR_RMA_CONFLICT] = "MPI_ERR_RMA_CONFLICT: conflicting accesses to window",
    [MPI_ERR_RMA_SYNC] = "MPI_ERR_RMA_SYNC: wrong synchronization of RMA calls",
    [MPI_ERR_RMA_RANGE] = "MPI_ERR_RMA_RANGE: target memory is not part of the window",
    [MPI_ERR_RMA_ATTACH] = "MPI_ERR_RMA_ATTACH: memory cannot be attached",
    [MPI_ERR_RMA_SHARED] = "MPI_ERR_RMA_SHARED: memory cannot be shared",
    [MPI_ERR_RMA_FLAVOR] = "MPI_ERR_RMA_FLAVOR: wrong window flavor",
    [MPI_ERR_FILE] = "MPI_ERR_FILE: invalid file handle",
    [MPI_ERR_NOT_SAME] = "MPI_ERR_NOT_SAME: collective argument not identical on all processes",
    [MPI_ERR_AMODE] = "MPI_ERR_AMODE: invalid access mode",
    [MPI_ERR_UNSUPPORTED_DATAREP] = "MPI_ERR_UNSUPPORTED_DATAREP: unsupported data representation",
    [MPI_ERR_UNSUPPORTED_OPERATION] = "MPI_ERR_UNSUPPORTED_OPERATION: unsupported operation",
    [MPI_ERR_NO_SUCH_FILE] = "MPI_ERR_NO_SUCH_FILE: file does not exist",
    [MPI_ERR_FILE_EXISTS] = "MPI_ERR_FILE_EXISTS: file exists",
    [MPI_ERR_BAD_FILE] = "MPI_ERR_BAD_FILE: invalid file name",
    [MPI_ERR_ACCESS] = "MPI_ERR_ACCESS: permission denied",
    [MPI_ERR_NO_SPACE] = "MPI_ERR_NO_SPACE: not enough space",
    [MPI_ERR_QUOTA] = "MPI_ERR_QUOTA: quota exceeded",
    [MPI_ERR_READ_ONLY] = "MPI_ERR_READ_ONLY: read-only file or file system",
    [MPI_ERR_FILE_IN_USE] = "MPI_ERR_FILE_IN_USE: file in use",
    [MPI_ERR_DUP_DATAREP] = "MPI_ERR_DUP_DATAREP: data representation already defined",
    [MPI_ERR_CONVERSION] = "MPI_ERR_CONVERSION: conversion function failed",
    [MPI_ERR_IO] = "MPI_ERR_IO: I/O error",
};
#define NCLASS ((int)(sizeof class_text / sizeof class_text[0]))
#define CLASS_STRIDE 128
#define NSLOT 255 /* codes up to 57 + 128 * 255 < MPI_ERR_LASTCODE */

/* The last NSLOT messages: slot k (1-based) holds the message of code
 * class + 128 * k. One thread uses the library at a time (at most
 * MPI_THREAD_SERIALIZED), so no lock. */
static char slot_msg[NSLOT][MPI_MAX_ERROR_STRING];
static int slot_code[NSLOT];
static unsigned next_slot;

static int class_of(int code) {
  if (code < 0 || code > MPI_ERR_LASTCODE)
    return -1;
  int cls = code % CLASS_STRIDE;
  return cls < NCLASS ? cls : -1;
}

int MPI_Error_class(int errorcode, int *errorclass) {
  int cls = class_of(errorcode);
  if (cls < 0 || errorclass == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Error_class", "%d is not an error code%s", errorcode,
                           errorclass ? "" : " (or errorclass is NULL)");
  *errorclass = cls;
  return MPI_SUCCESS;
}

int MPI_Error_string(int errorcode, char *string, int *resultlen) {
  int cls = class_of(errorcode);
  if (cls < 0 || string == NULL || resultlen == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Error_string", "%d is not an error code%s", errorcode,
                           string && resultlen ? "" : " (or a NULL argument)");
  int k = errorcode / CLASS_STRIDE;
  const char *text = class_text[cls];
  char buf[MPI_MAX_ERROR_STRING];
  if (k >= 1 && k <= NSLOT && slot_code[k - 1] == errorcode) {
    snprintf(buf, sizeof buf, "%s (%s)", slot_msg[k - 1], class_text[cls]);
    text = buf;
  }
  snprintf(string, MPI_MAX_ERROR_STRING, "%s", text);
  *resultlen = (int)strlen(string);
  return MPI_SUCCESS;
}

int fold__mpi_raise(MPI_Comm comm, int cls, const char *call, const char *fmt, ...) {
  unsigned s = next_slot++ % NSLOT;
  int code = cls + CLASS_STRIDE * (int)(s + 1);
  char *m = slot_msg[s];
  int n = snprintf(m, MPI_MAX_ERROR_STRING, "%s: rank %d: ", call, fold__mpi_world_rank);
  if (n < 0 || n >= MPI_MAX_ERROR_STRING)
    n = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m + n, MPI_MAX_ERROR_STRING - (size_t)n, fmt, ap);
  va_end(ap);
  slot_code[s] = code;
  fold__mpi_comm *c = fold__mpi_comm_get(comm);
  if (c == NULL)
    c = fold__mpi_comm_get(MPI_COMM_WORLD);
  int errh = c ? c->errh : MPI_ERRORS_ARE_FATAL;
  if (errh == MPI_ERRORS_ARE_FATAL) {
    fprintf(stderr, "fold MPI: %s (%s; MPI_ERRORS_ARE_FATAL: ending the job)\n", m, class_text[cls]);
    fflush(NULL);
    _exit(1);
  }
  return code;
}

int fold__mpi_fold_error(MPI_Comm comm, fold_comm *fc, int rc, const char *call, int truncate) {
  if (rc == FOLD_OK)
    return MPI_SUCCESS;
  int cls;
  switch (rc) {
  case FOLD_EINVAL: cls = MPI_ERR_ARG; break;
  case FOLD_EMISMATCH: cls = truncate ? MPI_ERR_TRUNCATE : MPI_ERR_OTHER; break;
  case FOLD_ENOMEM: cls = MPI_ERR_NO_MEM; break;
  case FOLD_EINTERNAL: cls = MPI_ERR_INTERN; break;
  default: cls = MPI_ERR_OTHER; break; /* lost peer, timeout, abort, auth, system */
  }
  const char *why = fold_comm_last_error(fc);
  return fold__mpi_raise(comm, cls, call, "%s [%s]", why && *why ? why : fold_strerror(rc), fold_strerror(rc));
}

int fold__mpi_unsupported(MPI_Comm comm, const char *call, const char *what) {
  return fold__mpi_raise(comm, MPI_ERR_UNSUPPORTED_OPERATION, call,
                         "%s%s is not supported by fold's MPI layer (docs/mpi.md lists what is)", what ? what : "",
                         what ? "" : "this call");
}

int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler) {
  fold__mpi_comm *c = fold__mpi_comm_get(comm);
  if (c == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_set_errhandler", "invalid communicator %d", comm);
  if (errhandler != MPI_ERRORS_ARE_FATAL && errhandler != MPI_ERRORS_RETURN)
    return fold__mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_set_errhandler",
                           "error handler %d is neither MPI_ERRORS_ARE_FATAL nor MPI_ERRORS_RETURN", errhandler);
  c->errh = errhandler;
  return MPI_SUCCESS;
}

int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler) {
  fold__mpi_comm *c = fold__mpi_comm_get(comm);
  if (c == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_get_errhandler", "invalid communicator %d", comm);
  if (errhandler == NULL)
    return fold__mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_get_errhandler", "errhandler is NULL");
  *errhandler = c->errh;
  return MPI_SUCCESS;
}

int MPI_Errhandler_free(MPI_Errhandler *errhandler) {
  if (errhandler == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Errhandler_free", "errhandler is NULL");
  *errhandler = MPI_ERRHANDLER_NULL; /* the predefined handlers live on */
  return MPI_SUCCESS;
}
