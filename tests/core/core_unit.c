/* core_unit.c — unit tests of status names, dtypes and configuration parsing. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/internal.h"
#include "transport/transport.h"

int main(void) {
  /* every status has its own name, unknown ones say so */
  const int codes[] = {FOLD_OK, FOLD_EINVAL, FOLD_ETIMEDOUT, FOLD_EPEER, FOLD_EMISMATCH,
                       FOLD_EAUTH, FOLD_ENOMEM, FOLD_ESYS, FOLD_EABORTED, FOLD_EINTERNAL};
  const char *names[] = {"FOLD_OK", "FOLD_EINVAL", "FOLD_ETIMEDOUT", "FOLD_EPEER", "FOLD_EMISMATCH",
                         "FOLD_EAUTH", "FOLD_ENOMEM", "FOLD_ESYS", "FOLD_EABORTED", "FOLD_EINTERNAL"};
  for (int i = 0; i < 10; i++)
    CHECK(strncmp(fold_strerror(codes[i]), names[i], strlen(names[i])) == 0 &&
              fold_strerror(codes[i])[strlen(names[i])] == ':',
          "strerror(%d) = %s", codes[i], fold_strerror(codes[i]));
  CHECK(strstr(fold_strerror(-1234), "unknown") != NULL, "unknown code");
  CHECK(FOLD_OK == 0, "FOLD_OK must be 0");
  /* dtypes */
  const size_t sizes[FOLD_DTYPE_COUNT] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8, 8, 16, 8, 16};
  for (int d = 0; d < FOLD_DTYPE_COUNT; d++)
    CHECK(fold_dtype_size((fold_dtype)d) == sizes[d], "size of %s", fold_dtype_name((fold_dtype)d));
  CHECK(fold_dtype_size((fold_dtype)-1) == 0 && fold_dtype_size(FOLD_DTYPE_COUNT) == 0, "invalid dtype size");
  CHECK(strcmp(fold_dtype_name(FOLD_BFLOAT16), "bfloat16") == 0, "name");
  CHECK(strcmp(fold_dtype_name((fold_dtype)77), "invalid") == 0, "invalid name");
  /* FOLD_TIMEOUT */
  unsetenv("FOLD_TIMEOUT");
  CHECK(fold__env_timeout_ns() == 300000000000LL, "default timeout");
  setenv("FOLD_TIMEOUT", "2.5", 1);
  CHECK(fold__env_timeout_ns() == 2500000000LL, "2.5 s");
  setenv("FOLD_TIMEOUT", "-3", 1);
  CHECK(fold__env_timeout_ns() == 300000000000LL, "negative ignored");
  setenv("FOLD_TIMEOUT", "12abc", 1);
  CHECK(fold__env_timeout_ns() == 300000000000LL, "garbage ignored");
  unsetenv("FOLD_TIMEOUT");
  /* FOLD_TRANSPORT */
  const char *tv[] = {"auto", "inproc", "shm", "TCP", "", "carrier-pigeon"};
  const int tk[] = {FOLD__TP_KIND_AUTO, FOLD__TP_KIND_INPROC, FOLD__TP_KIND_SHM, FOLD__TP_KIND_TCP,
                    FOLD__TP_KIND_AUTO, -1};
  for (int i = 0; i < 6; i++) {
    setenv("FOLD_TRANSPORT", tv[i], 1);
    CHECK(fold__env_transport() == tk[i], "FOLD_TRANSPORT=%s", tv[i]);
  }
  unsetenv("FOLD_TRANSPORT");
  /* FOLD_DEBUG */
  setenv("FOLD_DEBUG", "trace", 1);
  CHECK(fold__log_level_env() == FOLD__LOG_TRACE, "trace");
  setenv("FOLD_DEBUG", "INFO", 1);
  CHECK(fold__log_level_env() == FOLD__LOG_INFO, "info");
  unsetenv("FOLD_DEBUG");
  CHECK(fold__log_level_env() == FOLD__LOG_WARN, "default WARN");
  /* comm allocation checks its arguments */
  fold_comm *c;
  CHECK(fold__comm_alloc(3, 3, &c) == FOLD_EINVAL && c == NULL, "rank out of range");
  CHECK(fold__comm_alloc(0, 1, &c) == FOLD_OK && c != NULL, "alloc");
  fold__comm_free(c);
  return check_report("core_unit");
}
