/* params_unit.c — the FOLD_* table's one parser: bad values (bare-atoi cases, > INT_MAX, negative), caching per raw value, INFO lines, fold_config_print/get. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "capture.h"
#include "core/internal.h"
#include "fold.h"

atomic_int check_failures;

/* ---- what the library logs (capture.h) ---- */

static int count(const char *t, const char *needle) {
  int k = 0;
  for (const char *p = t; (p = strstr(p, needle)) != NULL; p += strlen(needle)) k++;
  return k;
}

/* Every numeric entry: the bad values of the old parsers (atoi's "2x" and
 * "abc", values that wrapped through an int, negatives) are rejected with
 * one warning each however often they are read, and the default is used;
 * the bounds themselves are accepted. */
static void test_bad_values(void) {
  const char *bad[] = {"abc", "2x", "-1", " ", "1e3x", "nan", "4294967298", "2147483648", "99999999999999999999999"};
  for (int id = 0; id < FOLD__P_COUNT; id++) {
    const fold__param_info *p = &fold__params[id];
    if (p->type == FOLD__PT_STR || p->type == FOLD__PT_ENUM) continue;
    for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
      fold__pval v;
      setenv(p->name, bad[b], 1);
      /* the last three are numbers: fine where the bounds allow them */
      long double x = strtold(bad[b], NULL);
      if (b >= 6 && x >= p->lo && x <= p->hi && (p->type == FOLD__PT_REAL || x <= (long double)UINT64_MAX)) {
        CHECK(fold__param_read((fold__param_id)id, &v) == 1, "%s=%s is within its bounds", p->name, bad[b]);
        continue;
      }
      capture_begin();
      int rejected = 0;
      for (int rep = 0; rep < 3; rep++) rejected += fold__param_read((fold__param_id)id, &v) == -1;
      const char *t = capture_end();
      CHECK(rejected == 3, "%s=%s was not rejected", p->name, bad[b]);
      CHECK(v.u == (uint64_t)p->dflt && (p->type != FOLD__PT_REAL || v.d == (double)p->dflt), "%s=%s: not the default",
            p->name, bad[b]);
      char want[200];
      snprintf(want, sizeof want, "fold WARN: %s=%s is not ", p->name, bad[b]);
      CHECK(count(t, want) == 1 && count(t, "\n") == 1, "%s=%s: want one warning, got:\n%s", p->name, bad[b], t);
      CHECK(strstr(t, p->dflt_doc) != NULL, "%s=%s: the warning does not say the default:\n%s", p->name, bad[b], t);
    }
    unsetenv(p->name);
    if (p->type == FOLD__PT_REAL) continue;
    /* an integer's bounds are valid, one above is not */
    char num[32];
    fold__pval v;
    snprintf(num, sizeof num, "%llu", (unsigned long long)p->lo);
    setenv(p->name, num, 1);
    CHECK(fold__param_read((fold__param_id)id, &v) == 1 && v.u == (uint64_t)p->lo, "%s=%s (its lower bound)", p->name,
          num);
    snprintf(num, sizeof num, "%llu", (unsigned long long)p->hi);
    setenv(p->name, num, 1);
    CHECK(fold__param_read((fold__param_id)id, &v) == 1 && v.u == (uint64_t)p->hi, "%s=%s (its upper bound)", p->name,
          num);
    if (p->hi < (long double)UINT64_MAX) {
      snprintf(num, sizeof num, "%llu", (unsigned long long)p->hi + 1);
      setenv(p->name, num, 1);
      capture_begin();
      CHECK(fold__param_read((fold__param_id)id, &v) == -1, "%s=%s (above its bound) accepted", p->name, num);
      capture_end();
    }
    unsetenv(p->name);
  }
}

/* The KV variables were cast to int: 4294967298 ran with 2 servers,
 * 2147483648 became INT_MIN, and FOLD_KV_REDUCE_THREADS=4294967296 (0
 * threads) made fold_kv_create fail with FOLD_ENOMEM. */
static void test_kv_wrap(void) {
  capture_begin();
  setenv("FOLD_KV_SERVERS", "4294967298", 1);
  CHECK(fold__param_u64(FOLD__P_KV_SERVERS) == 1, "FOLD_KV_SERVERS=4294967298 is not the default 1");
  setenv("FOLD_KV_SERVERS", "2147483648", 1);
  CHECK(fold__param_u64(FOLD__P_KV_SERVERS) == 1, "FOLD_KV_SERVERS=2147483648 is not the default 1");
  unsetenv("FOLD_KV_SERVERS");
  setenv("FOLD_KV_REDUCE_THREADS", "4294967296", 1);
  fold_kv *kv = NULL;
  int rc = fold_kv_create(NULL, "local", &kv);
  CHECK(rc == FOLD_OK, "FOLD_KV_REDUCE_THREADS=4294967296: fold_kv_create returned %s (%s)", fold_strerror(rc),
        fold_comm_last_error(NULL));
  if (rc == FOLD_OK) fold_kv_destroy(kv);
  setenv("FOLD_KV_REDUCE_THREADS", "1000", 1); /* was clamped to 256 silently */
  CHECK(fold__param_u64(FOLD__P_KV_REDUCE_THREADS) == 4, "FOLD_KV_REDUCE_THREADS=1000 is not the default");
  unsetenv("FOLD_KV_REDUCE_THREADS");
  const char *t = capture_end();
  CHECK(count(t, "fold WARN: FOLD_KV_SERVERS=4294967298 is not an integer in [1, 2^30]; using 1\n") == 1 &&
            count(t, "fold WARN: FOLD_KV_SERVERS=2147483648 is not an integer in [1, 2^30]; using 1\n") == 1 &&
            count(t, "fold WARN: FOLD_KV_REDUCE_THREADS=4294967296 is not an integer in [1, 256]; using 4\n") == 1 &&
            count(t, "fold WARN: FOLD_KV_REDUCE_THREADS=1000 is not an integer in [1, 256]; using 4\n") == 1 &&
            count(t, "\n") == 4,
        "KV warnings:\n%s", t);
}

/* Read per use, cached per raw string: a value set between two reads (as
 * tests do between communicators) is seen; each value is logged at INFO
 * once; enums are case-insensitive; an ERROR entry does not warn. */
static void test_cache_and_info(void) {
  setenv("FOLD_DEBUG", "info", 1);
  capture_begin();
  setenv("FOLD_PIECE_SIZE", "7", 1);
  for (int i = 0; i < 3; i++) CHECK(fold__param_u64(FOLD__P_PIECE_SIZE) == 7, "7");
  setenv("FOLD_PIECE_SIZE", "9", 1);
  CHECK(fold__param_u64(FOLD__P_PIECE_SIZE) == 9, "a changed value is read");
  unsetenv("FOLD_PIECE_SIZE");
  CHECK(fold__param_u64(FOLD__P_PIECE_SIZE) == 0, "unset: the default");
  setenv("FOLD_JOB_TOKEN", "hunter2-secret", 1);
  CHECK(strcmp(fold__param_str(FOLD__P_JOB_TOKEN), "hunter2-secret") == 0, "token");
  unsetenv("FOLD_JOB_TOKEN");
  setenv("FOLD_TRANSPORT", "pigeon", 1);
  CHECK(fold__env_transport() == -1, "FOLD_TRANSPORT=pigeon");
  setenv("FOLD_TRANSPORT", "Shm", 1);
  CHECK(fold__env_transport() == FOLD__TP_KIND_SHM, "FOLD_TRANSPORT=Shm");
  unsetenv("FOLD_TRANSPORT");
  setenv("FOLD_TEST_HOSTS", "2x", 1); /* atoi said 2 */
  CHECK(fold__param_u64(FOLD__P_TEST_HOSTS) == 0, "FOLD_TEST_HOSTS=2x");
  unsetenv("FOLD_TEST_HOSTS");
  setenv("FOLD_NO_MISMATCH_CHECK", "1yes", 1); /* *v == '1' said on */
  CHECK(fold__param_u64(FOLD__P_NO_MISMATCH_CHECK) == 0, "FOLD_NO_MISMATCH_CHECK=1yes");
  unsetenv("FOLD_NO_MISMATCH_CHECK");
  setenv("FOLD_SHM_SMALL_BYTES", "abc", 1); /* atol said 0 */
  CHECK(fold__param_u64(FOLD__P_SHM_SMALL_BYTES) == 16384, "FOLD_SHM_SMALL_BYTES=abc");
  unsetenv("FOLD_SHM_SMALL_BYTES");
  setenv("FOLD_SKIP_ALPHA", "1", 1);
  CHECK(fold__param_real(FOLD__P_SKIP_ALPHA) == 4, "FOLD_SKIP_ALPHA=1 (must be > 1)");
  setenv("FOLD_SKIP_ALPHA", "1.5", 1);
  CHECK(fold__param_real(FOLD__P_SKIP_ALPHA) == 1.5, "FOLD_SKIP_ALPHA=1.5");
  unsetenv("FOLD_SKIP_ALPHA");
  setenv("FOLD_SHM_RING_BYTES", "96", 1);
  CHECK(fold__param_read(FOLD__P_SHM_RING_BYTES, NULL) == -1, "FOLD_SHM_RING_BYTES=96 (not a power of two)");
  unsetenv("FOLD_SHM_RING_BYTES");
  unsetenv("FOLD_DEBUG");
  const char *t = capture_end();
  CHECK(count(t, "fold INFO: FOLD_DEBUG=info (read at ") == 1, "FOLD_DEBUG at INFO once:\n%s", t);
  CHECK(count(t, "fold INFO: FOLD_PIECE_SIZE=7 (read at each communicator's creation)") == 1 &&
            count(t, "fold INFO: FOLD_PIECE_SIZE=9 ") == 1,
        "each value of FOLD_PIECE_SIZE once at INFO:\n%s", t);
  CHECK(count(t, "FOLD_JOB_TOKEN is set (secret: not shown)") == 1 && !strstr(t, "hunter2"), "token:\n%s", t);
  CHECK(!strstr(t, "pigeon"), "FOLD_TRANSPORT's bad value is the caller's error, not a warning:\n%s", t);
  CHECK(count(t, "fold WARN: FOLD_TEST_HOSTS=2x is not an integer in [0, 2^30]; using 0: the real hosts\n") == 1 &&
            count(t, "fold WARN: FOLD_NO_MISMATCH_CHECK=1yes is not one of 0, 1; using 0") == 1 &&
            count(t, "fold WARN: FOLD_SHM_SMALL_BYTES=abc is not an integer in [0, 2^40]; using 16384\n") == 1 &&
            count(t, "fold WARN: FOLD_SKIP_ALPHA=1 is not a number > 1; using 4\n") == 1 &&
            count(t, "fold WARN: FOLD_SHM_RING_BYTES=96 is not a power of two in [64, 2^30]; using 256 KiB") == 1 &&
            count(t, "WARN") == 5,
        "warnings:\n%s", t);
}

/* fold_config_print lists every variable: the value in use, the default, or
 * the default and why a value was rejected; never the token. */
static void test_config_print(void) {
  setenv("FOLD_TIMEOUT", "2.5", 1);
  setenv("FOLD_ALGO", "allreduce=ring", 1);
  setenv("FOLD_JOB_TOKEN", "hunter2-secret", 1);
  setenv("FOLD_KV_SERVERS", "-3", 1);
  setenv("FOLD_TRANSPORT", "tcp", 1);
  capture_begin();
  size_t len = fold_config_print(NULL, 0);
  char *buf = malloc(len + 1);
  CHECK(buf && fold_config_print(buf, len + 1) == len && strlen(buf) == len, "length %zu", len);
  char small[16];
  CHECK(fold_config_print(small, sizeof small) == len && strlen(small) == sizeof small - 1, "truncated");
  char v[64];
  CHECK(fold_config_get("FOLD_ALGO", v, sizeof v) == 14 && strcmp(v, "allreduce=ring") == 0, "get FOLD_ALGO: %s", v);
  CHECK(fold_config_get("FOLD_TIMEOUT", v, sizeof v) == 3 && strcmp(v, "2.5") == 0, "get FOLD_TIMEOUT: %s", v);
  CHECK(fold_config_get("FOLD_KV_SERVERS", v, sizeof v) == 0 && v[0] == '\0', "get a rejected value: %s", v);
  CHECK(fold_config_get("FOLD_RULES", v, sizeof v) == 0 && v[0] == '\0', "get an unset value: %s", v);
  CHECK(fold_config_get("FOLD_TRANSPORT", v, 2) == 3 && strcmp(v, "t") == 0, "get truncated: %s", v);
  CHECK(fold_config_get("FOLD_NOPE", v, sizeof v) == FOLD_EINVAL && strstr(fold_comm_last_error(NULL), "FOLD_NOPE"),
        "unknown name");
  CHECK(fold_config_get(NULL, v, sizeof v) == FOLD_EINVAL, "NULL name");
  capture_end();
  unsetenv("FOLD_TIMEOUT");
  unsetenv("FOLD_ALGO");
  unsetenv("FOLD_JOB_TOKEN");
  unsetenv("FOLD_KV_SERVERS");
  unsetenv("FOLD_TRANSPORT");
  if (!buf) return;
  for (int i = 0; i < FOLD__P_COUNT; i++) {
    char line[64];
    snprintf(line, sizeof line, "\n%-23s ", fold__params[i].name);
    CHECK(count(buf, line) == 1, "%s missing:\n%s", fold__params[i].name, buf);
  }
  CHECK(strstr(buf, "\nFOLD_TIMEOUT            2.5\n") && strstr(buf, "\nFOLD_ALGO               allreduce=ring\n") &&
            strstr(buf, "\nFOLD_TRANSPORT          tcp\n") && strstr(buf, "\nFOLD_DEBUG              WARN (default)\n") &&
            strstr(buf, "\nFOLD_JOB_TOKEN          (set; secret)\n") && !strstr(buf, "hunter2") &&
            strstr(buf, "\nFOLD_KV_SERVERS         1 (default: \"-3\" is not an integer in [1, 2^30])\n"),
        "fold_config_print:\n%s", buf);
  free(buf);
}

int main(void) {
  unsetenv("FOLD_DEBUG");
  test_bad_values();
  test_kv_wrap();
  test_cache_and_info();
  test_config_print();
  return check_report("params_unit");
}
