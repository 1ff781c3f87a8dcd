/* test_store_cb.c — fold_comm_init_store: ranks as threads meet at an in-process callback store; argument errors, failing callbacks and missing ranks give errors naming ranks. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fold.h"


/* ---- an in-process key-value store behind the callbacks ------------------ */
#define MAXKEYS 512
typedef struct kv {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int n;
  char *key[MAXKEYS];
  char *val[MAXKEYS];
  size_t len[MAXKEYS];
  int sets, gets, adds, dels;
  int list_values; /* sets of rank 0's card list ("<size>.cb/cards/<i>") */
  int fail_set_rank_key; /* set() fails for keys naming this rank's card (-1: never) */
  int bad_positive;      /* add() returns 7 (a callback must return 0 or FOLD_E*) */
  int garble_card_rank;  /* set() stores this rank's card as garbage (-1: never) */
} kv;

static void kv_init(kv *s) {
  memset(s, 0, sizeof *s);
  pthread_mutex_init(&s->mu, NULL);
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cv, &a);
  pthread_condattr_destroy(&a);
  s->fail_set_rank_key = -1;
  s->garble_card_rank = -1;
}

static void kv_free(kv *s) {
  for (int i = 0; i < s->n; i++)
    free(s->key[i]), free(s->val[i]);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
}

static int find(kv *s, const char *key) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->key[i], key) == 0)
      return i;
  return -1;
}

static void put(kv *s, const char *key, const void *v, size_t len) {
  int i = find(s, key);
  if (i < 0) {
    i = s->n++;
    s->key[i] = strdup(key);
  } else {
    free(s->val[i]);
  }
  s->val[i] = malloc(len ? len : 1);
  memcpy(s->val[i], v, len);
  s->len[i] = len;
  pthread_cond_broadcast(&s->cv);
}

static int cb_set(void *ctx, const char *key, const void *v, size_t len) {
  kv *s = ctx;
  char bad[32];
  snprintf(bad, sizeof bad, "/card/%d", s->fail_set_rank_key);
  if (s->fail_set_rank_key >= 0 && strstr(key, bad) && strstr(key, "cb/card/"))
    return FOLD_ESYS;
  snprintf(bad, sizeof bad, "cb/card/%d", s->garble_card_rank);
  if (s->garble_card_rank >= 0 && strstr(key, bad) && strlen(strstr(key, bad)) == strlen(bad))
    v = "host=;pid=0", len = 11;
  pthread_mutex_lock(&s->mu);
  s->sets++;
  s->list_values += strstr(key, ".cb/cards/") != NULL;
  if (s->n >= MAXKEYS && find(s, key) < 0) {
    pthread_mutex_unlock(&s->mu);
    return FOLD_ENOMEM;
  }
  put(s, key, v, len);
  pthread_mutex_unlock(&s->mu);
  return 0;
}

static int cb_get(void *ctx, const char *key, void *buf, size_t cap, size_t *len, double timeout_s) {
  kv *s = ctx;
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  long long ns = dl.tv_nsec + (long long)(timeout_s * 1e9);
  dl.tv_sec += (time_t)(ns / 1000000000);
  dl.tv_nsec = (long)(ns % 1000000000);
  pthread_mutex_lock(&s->mu);
  s->gets++;
  int i;
  while ((i = find(s, key)) < 0)
    if (timeout_s <= 0 || pthread_cond_timedwait(&s->cv, &s->mu, &dl) != 0) {
      i = find(s, key);
      break;
    }
  if (i < 0) {
    pthread_mutex_unlock(&s->mu);
    return FOLD_ETIMEDOUT;
  }
  memcpy(buf, s->val[i], s->len[i] < cap ? s->len[i] : cap);
  *len = s->len[i];
  pthread_mutex_unlock(&s->mu);
  return 0;
}

static int cb_add(void *ctx, const char *key, int64_t delta, int64_t *total) {
  kv *s = ctx;
  if (s->bad_positive)
    return 7;
  pthread_mutex_lock(&s->mu);
  s->adds++;
  int i = find(s, key);
  int64_t v = 0;
  if (i >= 0 && s->len[i] == sizeof v)
    memcpy(&v, s->val[i], sizeof v);
  v += delta;
  put(s, key, &v, sizeof v);
  *total = v;
  pthread_mutex_unlock(&s->mu);
  return 0;
}

static int cb_del(void *ctx, const char *key) {
  kv *s = ctx;
  pthread_mutex_lock(&s->mu);
  s->dels++;
  int i = find(s, key);
  if (i >= 0) {
    free(s->key[i]), free(s->val[i]);
    s->n--;
    s->key[i] = s->key[s->n], s->val[i] = s->val[s->n], s->len[i] = s->len[s->n];
  }
  pthread_mutex_unlock(&s->mu);
  return 0;
}

static const fold_store_callbacks full = {cb_set, cb_get, cb_add, cb_del};

/* ---- ranks as threads ------------------------------------------------------ */
typedef struct rank_arg {
  kv *store;
  const fold_store_callbacks *cb;
  int rank, size;
  int rc, sum_ok;
  char msg[512];
  double secs;
} rank_arg;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void *rank_main(void *p) {
  rank_arg *a = p;
  fold_comm *c = (fold_comm *)a; /* must become NULL on failure */
  double t0 = now_s();
  a->rc = fold_comm_init_store(&c, a->rank, a->size, a->cb, a->store);
  a->secs = now_s() - t0;
  snprintf(a->msg, sizeof a->msg, "%s", fold_comm_last_error(NULL));
  if (a->rc != FOLD_OK) {
    CHECK(c == NULL, "rank %d: comm is NULL on failure", a->rank);
    return NULL;
  }
  CHECK(fold_comm_rank(c) == a->rank && fold_comm_size(c) == a->size, "rank %d: rank/size", a->rank);
  int64_t v = a->rank + 1, sum = 0;
  int rc = fold_allreduce(&v, &sum, 1, FOLD_INT64, FOLD_SUM, c);
  a->sum_ok = rc == 0 && sum == (int64_t)a->size * (a->size + 1) / 2;
  CHECK(a->sum_ok, "rank %d of %d: allreduce rc %d sum %lld: %s", a->rank, a->size, rc, (long long)sum,
        fold_comm_last_error(c));
  fold_comm_destroy(c);
  return NULL;
}

/* Run ranks[0..nr) of a size-`size` job as threads at store s. */
#define MAXRANKS 16
static void run(kv *s, const fold_store_callbacks *cb, int size, const int *ranks, int nr, rank_arg *out) {
  pthread_t t[MAXRANKS];
  for (int i = 0; i < nr; i++) {
    out[i] = (rank_arg){.store = s, .cb = cb, .rank = ranks[i], .size = size};
    pthread_create(&t[i], NULL, rank_main, &out[i]);
  }
  for (int i = 0; i < nr; i++)
    pthread_join(t[i], NULL);
}

static void test_success_values(int n, const fold_store_callbacks *cb, int min_values) {
  kv s;
  kv_init(&s);
  int ranks[MAXRANKS];
  rank_arg a[MAXRANKS];
  for (int i = 0; i < n; i++)
    ranks[i] = i;
  run(&s, cb, n, ranks, n, a);
  for (int i = 0; i < n; i++)
    CHECK(a[i].rc == FOLD_OK && a[i].sum_ok, "n=%d rank %d: rc %d: %s", n, i, a[i].rc, a[i].msg);
  CHECK(s.sets > 0 && s.gets > 0, "n=%d: the callbacks were used (%d sets, %d gets)", n, s.sets, s.gets);
  if (cb->del) /* the last rank to leave removes the round's keys */
    CHECK(s.n == 0, "n=%d: %d keys left in the store (first: %s)", n, s.n, s.n ? s.key[0] : "");
  else
    CHECK(s.n > 0, "n=%d without del: the keys stay", n);
  for (int i = 0; i < s.n; i++) /* every key under the documented prefix */
    CHECK(strstr(s.key[i], ".cb/") != NULL, "key %s", s.key[i]);
  /* The rendezvous costs O(n) requests in all, not a card read per pair of
   * ranks (n^2): about 10 per rank (join, nonce, card, rank 0's card list,
   * barrier, leave, and the cleanup's deletes), gets under 5 per rank; one
   * more get per rank for each further value of the card list. */
  int total = s.sets + s.gets + s.adds + s.dels;
  CHECK(total <= (11 + s.list_values) * n + 8 && s.gets <= (4 + s.list_values) * n, "n=%d: %d store requests (%d sets, %d gets, %d adds, %d dels)", n,
        total, s.sets, s.gets, s.adds, s.dels);
  printf("n=%d: %d store requests (%d sets, %d gets, %d adds, %d dels); the card list in %d values\n", n, total,
         s.sets, s.gets, s.adds, s.dels, s.list_values);
  CHECK(s.list_values >= min_values, "n=%d: the card list in %d values, want >= %d",
        n, s.list_values, min_values);
  kv_free(&s);
}

/* a world of one exchanges no cards */
static void test_success(int n, const fold_store_callbacks *cb) { test_success_values(n, cb, n > 1); }

static void test_args(void) {
  kv s;
  kv_init(&s);
  fold_comm *c = (fold_comm *)&s;
  CHECK_RC(fold_comm_init_store(NULL, 0, 1, &full, &s), FOLD_EINVAL, NULL);
  CHECK_RC(fold_comm_init_store(&c, 0, 1, NULL, &s), FOLD_EINVAL, NULL);
  CHECK(c == NULL, "comm NULL after a bad call");
  CHECK(strstr(fold_comm_last_error(NULL), "fold_comm_init_store: rank 0: cb is NULL") != NULL, "msg: %s",
        fold_comm_last_error(NULL));
  const char *names[3] = {"set", "get", "add"};
  for (int k = 0; k < 3; k++) {
    fold_store_callbacks cb = full;
    if (k == 0) cb.set = NULL;
    if (k == 1) cb.get = NULL;
    if (k == 2) cb.add = NULL;
    CHECK_RC(fold_comm_init_store(&c, 1, 2, &cb, &s), FOLD_EINVAL, NULL);
    char want[96];
    snprintf(want, sizeof want, "fold_comm_init_store: rank 1: callback %s is NULL", names[k]);
    CHECK(strstr(fold_comm_last_error(NULL), want) != NULL, "msg: %s", fold_comm_last_error(NULL));
  }
  CHECK_RC(fold_comm_init_store(&c, 2, 2, &full, &s), FOLD_EINVAL, NULL);
  CHECK(strstr(fold_comm_last_error(NULL), "rank 2 is not in [0, size = 2)") != NULL, "msg: %s",
        fold_comm_last_error(NULL));
  CHECK_RC(fold_comm_init_store(&c, -1, 2, &full, &s), FOLD_EINVAL, NULL);
  CHECK_RC(fold_comm_init_store(&c, 0, 0, &full, &s), FOLD_EINVAL, NULL);
  CHECK(s.sets == 0 && s.gets == 0 && s.adds == 0, "a refused call touches no store");
  kv_free(&s);
}

/* Rank 1's set fails: it returns that code naming itself, the callback and
 * the key; rank 0 times out naming rank 1. */
static void test_failing_callback(void) {
  kv s;
  kv_init(&s);
  s.fail_set_rank_key = 1;
  int ranks[2] = {0, 1};
  rank_arg a[2];
  run(&s, &full, 2, ranks, 2, a);
  CHECK(a[1].rc == FOLD_ESYS, "rank 1 rc %d", a[1].rc);
  CHECK(strstr(a[1].msg, "fold_comm_init_store: rank 1:") && strstr(a[1].msg, "store callback set(\"2.cb/card/1\")"),
        "rank 1 msg: %s", a[1].msg);
  CHECK(a[0].rc == FOLD_ETIMEDOUT && strstr(a[0].msg, "rank 1 did not join"), "rank 0: %d %s", a[0].rc, a[0].msg);
  CHECK(a[0].secs < 8, "rank 0 gave up after %.1f s (FOLD_TIMEOUT=2)", a[0].secs);
  kv_free(&s);

  kv_init(&s);
  s.bad_positive = 1; /* add() returns 7: counted as a failure, not success */
  ranks[0] = 0;
  run(&s, &full, 1, ranks, 1, a);
  CHECK(a[0].rc == FOLD_ESYS && strstr(a[0].msg, "store callback add("), "size 1, bad add: %d %s", a[0].rc,
        a[0].msg);
  kv_free(&s);
}

/* Rank 1's card arrives garbled: every rank (rank 0, which gathers the
 * cards, and the others, which read rank 0's list) names rank 1. */
static void test_malformed_card(void) {
  kv s;
  kv_init(&s);
  s.garble_card_rank = 1;
  int ranks[3] = {0, 1, 2};
  rank_arg a[3];
  run(&s, &full, 3, ranks, 3, a);
  for (int i = 0; i < 3; i++)
    CHECK(a[i].rc == FOLD_EINVAL && strstr(a[i].msg, "rank 1 published a malformed card"), "rank %d: %d %s", i,
          a[i].rc, a[i].msg);
  kv_free(&s);
}

/* Ranks 0 and 1 of 3 come; both time out naming rank 2. */
static void test_missing_rank(void) {
  kv s;
  kv_init(&s);
  int ranks[2] = {0, 1};
  rank_arg a[2];
  run(&s, &full, 3, ranks, 2, a);
  for (int i = 0; i < 2; i++) {
    CHECK(a[i].rc == FOLD_ETIMEDOUT, "rank %d rc %d", i, a[i].rc);
    CHECK(strstr(a[i].msg, "fold_comm_init_store: rank") && strstr(a[i].msg, "rank 2 did not join"), "rank %d: %s",
          i, a[i].msg);
    CHECK(a[i].secs > 1.5 && a[i].secs < 8, "rank %d waited %.1f s (FOLD_TIMEOUT=2)", i, a[i].secs);
  }
  kv_free(&s);
}

int main(void) {
  test_args();
  for (int n = 1; n <= 4; n++)
    test_success(n, &full);
  test_success(MAXRANKS, &full); /* request counts grow linearly */
  /* rank 0's card list in several values (as for some 300 ranks and more) */
  setenv("FOLD_TEST_CARDS_VALUE", "1024", 1);
  test_success_values(MAXRANKS, &full, 3);
  unsetenv("FOLD_TEST_CARDS_VALUE");
  fold_store_callbacks nodel = full;
  nodel.del = NULL;
  test_success(3, &nodel);
  /* the remaining cases wait for FOLD_TIMEOUT: keep it short */
  setenv("FOLD_TIMEOUT", "2", 1);
  test_failing_callback();
  test_malformed_card();
  test_missing_rank();
  return check_report("test_store_cb");
}
