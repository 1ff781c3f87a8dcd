/* core_unit.c — unit tests of status names, dtypes, configuration parsing and the log's repeat limit. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "coll/coll.h"
#include "comm/comm.h"
#include "check.h"
#include "core/internal.h"
#include "engine/engine.h"
#include "transport/transport.h"

/* ---- what the library logs, as text (capture.h) ---- */

static int count_lines(const char *text, const char *needle) {
  int n = 0;
  for (const char *l = text; *l;) {
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l) : strlen(l);
    char line[2048];
    snprintf(line, sizeof line, "%.*s", (int)len, l);
    n += strstr(line, needle) != NULL;
    l += len + (e != NULL);
  }
  return n;
}

/* The N of every "N more like this" summary, added up. */
static long summarised(const char *text) {
  long sum = 0;
  for (const char *p = text; (p = strstr(p, " more like this in the last ")) != NULL; p++) {
    const char *d = p;
    while (d > text && d[-1] >= '0' && d[-1] <= '9') d--;
    sum += strtol(d, NULL, 10);
  }
  return sum;
}

#define FLOOD_THREADS 4
#define FLOOD_LINES 2500
static fold__log_site flood_site;

static void *flood(void *arg) {
  for (int i = 0; i < FLOOD_LINES; i++)
    fold__log_at(&flood_site, FOLD__LOG_WARN, (int)(intptr_t)arg, "stranger %d refused", i);
  return NULL;
}

/* A call site logs its first FOLD__LOG_BURST lines, then counts: nothing is
 * lost (shown + summarised = logged), the count is exact under threads, and
 * another site is not held back by the flooding one. */
static void test_repeat_limit(void) {
  capture_begin();
  pthread_t th[FLOOD_THREADS];
  for (int i = 0; i < FLOOD_THREADS; i++) pthread_create(&th[i], NULL, flood, (void *)(intptr_t)i);
  for (int i = 0; i < FLOOD_THREADS; i++) pthread_join(th[i], NULL);
  static fold__log_site other;
  fold__log_at(&other, FOLD__LOG_WARN, 7, "a different thing");
  fold__log_flush();
  fold__log_flush(); /* a second flush has nothing left to say */
  const char *t = capture_end();
  int shown = count_lines(t, " refused") - count_lines(t, "more like this");
  long held = summarised(t);
  CHECK(shown >= FOLD__LOG_BURST && shown + held == FLOOD_THREADS * FLOOD_LINES,
        "shown %d + summarised %ld != %d logged:\n%s", shown, held, FLOOD_THREADS * FLOOD_LINES, t);
  /* one window (10 s) is plenty for 10,000 calls; allow one more anyway */
  CHECK(count_lines(t, "WARN") <= FOLD__LOG_BURST + 3, "%d lines for a flood:\n%s", count_lines(t, "WARN"), t);
  CHECK(count_lines(t, "fold[rank 7] WARN: a different thing") == 1, "the other site was held back:\n%s", t);
  /* a site that keeps flooding gets no fresh burst in a new window */
  int summaries = count_lines(t, "more like this in the last ");
  CHECK(shown == FOLD__LOG_BURST && summaries >= 1 && summaries <= 2,
        "want the burst and one summary (two if a 10 s window passed):\n%s", t);
  CHECK(strstr(t, "more like this in the last ") && strstr(t, ", the last: stranger "), "summary line:\n%s", t);
}

/* A bad FOLD_DEBUG or FOLD_TIMEOUT is said once per process however often
 * it is read (every communicator and rendezvous reads it), listing what
 * is valid; a different bad value is said again. */
static void test_env_warnings(void) {
  capture_begin();
  setenv("FOLD_DEBUG", "bogus", 1);
  for (int i = 0; i < 3; i++) CHECK(fold__log_level_env() == FOLD__LOG_WARN, "FOLD_DEBUG=bogus is WARN");
  setenv("FOLD_DEBUG", "loud", 1);
  CHECK(fold__log_level_env() == FOLD__LOG_WARN, "FOLD_DEBUG=loud is WARN");
  unsetenv("FOLD_DEBUG");
  setenv("FOLD_TIMEOUT", "abc", 1);
  for (int i = 0; i < 3; i++) CHECK(fold__env_timeout_ns() == 300000000000LL, "FOLD_TIMEOUT=abc: default");
  fold_comm *c;
  CHECK(fold__comm_alloc(0, 1, &c) == FOLD_OK, "alloc"); /* reads both again */
  fold__comm_free(c);
  setenv("FOLD_DEBUG", "NONE", 1); /* silences the others */
  setenv("FOLD_TIMEOUT", "xyz", 1);
  CHECK(fold__env_timeout_ns() == 300000000000LL, "FOLD_TIMEOUT=xyz: default");
  unsetenv("FOLD_DEBUG");
  unsetenv("FOLD_TIMEOUT");
  const char *t = capture_end();
  CHECK(count_lines(t, "fold WARN: FOLD_DEBUG=bogus is not one of NONE, WARN, INFO, TRACE; using WARN") == 1 &&
            count_lines(t, "fold WARN: FOLD_DEBUG=loud is not one of NONE, WARN, INFO, TRACE; using WARN") == 1,
        "FOLD_DEBUG warnings:\n%s", t);
  CHECK(count_lines(t, "fold WARN: FOLD_TIMEOUT=abc is not a positive number of seconds; using 300") == 1,
        "FOLD_TIMEOUT warnings:\n%s", t);
  CHECK(count_lines(t, "WARN") == 3, "other lines:\n%s", t);
}

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
  /* sizes (FOLD_SEGMENT_BYTES, FOLD_PIECE_SIZE): positive integers, else the default (0: the algorithm's) */
  const char *sv[] = {"4096", "0", "-5", "12k", "", "18446744073709551615"};
  const size_t sk[] = {4096, 0, 0, 0, 0, (size_t)18446744073709551615ull};
  for (int i = 0; i < 6; i++) {
    setenv("FOLD_SEGMENT_BYTES", sv[i], 1);
    CHECK(fold__param_u64(FOLD__P_SEGMENT_BYTES) == sk[i], "FOLD_SEGMENT_BYTES=%s", sv[i]);
  }
  unsetenv("FOLD_SEGMENT_BYTES");
  CHECK(fold__param_u64(FOLD__P_SEGMENT_BYTES) == 0, "unset size");
  /* read once per communicator: a later change does not reach it */
  setenv("FOLD_PIECE_SIZE", "7", 1);
  fold_comm *cc;
  CHECK(fold__comm_alloc(0, 1, &cc) == FOLD_OK && fold__coll_state_of(cc)->piece_size == 7, "piece size read at creation");
  setenv("FOLD_PIECE_SIZE", "9", 1);
  CHECK(fold__coll_state_of(cc)->piece_size == 7, "piece size kept");
  fold__comm_free(cc);
  unsetenv("FOLD_PIECE_SIZE");
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
  test_repeat_limit();
  test_env_warnings();
  return check_report("core_unit");
}
