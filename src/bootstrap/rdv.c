/* rdv.c — the rendezvous at the store: rounds, rank 0's nonce, the card exchange (gathered by rank 0, O(n) requests), the final barrier and cleanup. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "bootstrap/boot.h"

#define CARD_TEXT_MAX 512
#define CLEANUP_WAIT_NS (5LL * 1000000000)
/* A value of the card list: "fold-cards <first> <count>\n", then <count>
 * cards as "<length>:<text>" (ranks first, first+1, ...). */
#define CARDS_HDR_MAX 40

int fold__boot_fail(fold__boot *b, int rc, const char *fmt, ...) {
  char msg[FOLD__ERRLEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fold__error(NULL, rc, "%s: rank %d: %s", b->fn, b->rank, msg);
}

int fold__boot_fail_store(fold__boot *b, int rc, const char *what) {
  char msg[FOLD__ERRLEN];
  snprintf(msg, sizeof msg, "%s", fold_comm_last_error(NULL));
  if (what == NULL)
    return fold__boot_fail(b, rc, "%s", msg[0] ? msg : fold_strerror(rc));
  return fold__boot_fail(b, rc, "%s: %s", what, msg[0] ? msg : fold_strerror(rc));
}

void fold__boot_key(const fold__boot *b, char *out, size_t cap, const char *what, int r) {
  if (r >= 0)
    snprintf(out, cap, "%s%s/%d", b->pfx, what, r);
  else
    snprintf(out, cap, "%s%s", b->pfx, what);
}

/* A rendezvous wait ran out: look (without waiting) which ranks have not
 * published `what` and name them. */
static int fail_missing(fold__boot *b, const char *what, const char *phase) {
  char list[256];
  int missing = fold__rdv_missing(&b->watch, what, list, sizeof list, FOLD__BOOT_LIST_MAX);
  if (missing < 0)
    return fold__boot_fail_store(b, missing, phase);
  if (missing == 0) /* everyone arrived just now */
    return fold__boot_fail(b, FOLD_ETIMEDOUT, "rendezvous: %s did not complete within %g s", phase, b->timeout_s);
  return fold__boot_fail(b, FOLD_ETIMEDOUT,
                         "rendezvous: rank%s %s did not join within %g s (is the world size %d right, and was every "
                         "rank given the store %s?)",
                         missing > 1 ? "s" : "", list, b->timeout_s, b->size, b->url);
}

/* Rounds: how many times this process met at a store as (size, rank).
 * Ranks call fold_comm_init in the same order, so the counts agree, and
 * keys of different rounds never mix: a late cleanup cannot hit a new
 * round and a stale card is never read. Kept in memory, not in the store,
 * so that a finished rendezvous leaves nothing in the store. */
typedef struct round_entry {
  struct round_entry *next;
  int size, rank;
  long long count;
  char url[];
} round_entry;
static round_entry *rounds;
static pthread_mutex_t rounds_lock = PTHREAD_MUTEX_INITIALIZER;

static long long next_round(const char *url, int size, int rank) {
  long long n = 1;
  pthread_mutex_lock(&rounds_lock);
  round_entry *e = rounds;
  while (e && !(e->size == size && e->rank == rank && strcmp(e->url, url) == 0))
    e = e->next;
  if (e == NULL && (e = calloc(1, sizeof *e + strlen(url) + 1)) != NULL) {
    e->size = size, e->rank = rank;
    strcpy(e->url, url);
    e->next = rounds;
    rounds = e;
  }
  if (e)
    n = ++e->count;
  pthread_mutex_unlock(&rounds_lock);
  return n;
}

int fold__boot_enter_round(fold__boot *b) {
  /* A callback store serves one rendezvous (fold.h): a per-process round
   * count could differ between ranks that made other communicators. */
  if (b->u.kind == FOLD__STORE_CB)
    snprintf(b->pfx, sizeof b->pfx, "%d.cb/", b->size);
  else
    snprintf(b->pfx, sizeof b->pfx, "%d.%lld/", b->size, next_round(b->url, b->size, b->rank));
  int rc;
  char jk[FOLD__STORE_KEY_MAX + 1];
  fold__boot_key(b, jk, sizeof jk, "join", b->rank);
  /* a joined rank that goes before the round completes fails our waits at
   * once (tcp store: the server sees its connection close) */
  fold__boot_key(b, b->store->watch, sizeof b->store->watch, "gone", -1);
  rc = fold__store_set(b->store, jk, "1", 1, b->deadline);
  if (rc == 0 && b->u.kind != FOLD__STORE_FILE) { /* counted for the warnings (rdv_watch.c) */
    int64_t ignored;
    fold__boot_key(b, jk, sizeof jk, "joined", -1);
    rc = fold__store_add(b->store, jk, 1, &ignored, b->deadline);
  }
  b->watch = (fold__rdv_watch){.store = b->store, .pfx = b->pfx, .url = b->url, .rank = b->rank, .size = b->size,
                               .timeout_ns = (int64_t)(b->timeout_s * 1e9), .deadline_ns = b->deadline};
  fold__rdv_watch_start(&b->watch);
  return rc < 0 ? fold__boot_fail_store(b, rc, NULL) : 0;
}

int fold__boot_job_id(fold__boot *b, char *id, size_t cap) {
  char key[FOLD__STORE_KEY_MAX + 1], nonce[65];
  fold__boot_key(b, key, sizeof key, "nonce", -1);
  if (b->rank == 0) {
    uint8_t r[16];
    if (RAND_bytes(r, sizeof r) != 1)
      return fold__boot_fail(b, FOLD_ESYS, "no random bytes for the job nonce");
    for (int i = 0; i < 16; i++)
      snprintf(nonce + 2 * i, 3, "%02x", r[i]);
    int rc = fold__store_set(b->store, key, nonce, 32, b->deadline);
    if (rc < 0)
      return fold__boot_fail_store(b, rc, NULL);
  }
  size_t len = 0;
  int rc = fold__rdv_get(&b->watch, key, nonce, 32, &len, "waiting for rank 0's job nonce");
  if (rc == FOLD_ETIMEDOUT)
    return fail_missing(b, "join", "waiting for rank 0");
  if (rc < 0)
    return fold__boot_fail_store(b, rc, NULL);
  if (len != 32)
    return fold__boot_fail(b, FOLD_EINVAL, "rendezvous: malformed job nonce in the store");
  /* hex of SHA-256(key | store | nonce): unique per job and round */
  uint8_t d[32];
  unsigned int dl = 0;
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
           EVP_DigestUpdate(md, b->key.bytes, sizeof b->key.bytes) == 1 &&
           EVP_DigestUpdate(md, b->url, strlen(b->url)) == 1 && EVP_DigestUpdate(md, nonce, 32) == 1 &&
           EVP_DigestFinal_ex(md, d, &dl) == 1;
  EVP_MD_CTX_free(md);
  if (!ok)
    return fold__boot_fail(b, FOLD_ENOMEM, "SHA-256 failed");
  for (size_t i = 0; i < 8 && 2 * i + 2 < cap; i++)
    snprintf(id + 2 * i, 3, "%02x", d[i]);
  /* No token and a file or callback store: the nonce is a secret as
   * private as the store, a better key for the data connections than the
   * store's name, which strangers on the network could guess. */
  if (!b->key.from_token && b->u.kind != FOLD__STORE_TCP) {
    char secret[64];
    snprintf(secret, sizeof secret, "file-nonce|%.32s", nonce);
    fold__auth_key_derive(&b->key, NULL, secret);
  }
  return 0;
}

/* ---- the card exchange ------------------------------------------------------ */

/* Rank 0: publish the list value being built in chunk (header room left
 * free at its start, body of blen bytes after it). */
static int put_chunk(fold__boot *b, char *chunk, size_t blen, int first, int count) {
  char hdr[CARDS_HDR_MAX], key[FOLD__STORE_KEY_MAX + 1];
  int hl = snprintf(hdr, sizeof hdr, "fold-cards %d %d\n", first, count);
  char *start = chunk + CARDS_HDR_MAX - hl;
  memcpy(start, hdr, (size_t)hl);
  fold__boot_key(b, key, sizeof key, "cards", b->nchunks);
  int rc = fold__store_set(b->store, key, start, (size_t)hl + blen, b->deadline);
  if (rc < 0)
    return fold__boot_fail_store(b, rc, "publishing the cards");
  b->nchunks++;
  return 0;
}

/* Rank 0: wait for every rank's card (naming the missing at the deadline),
 * check it, and publish them all as "cards/0", "cards/1", ...: each value
 * as large as the store takes (64 KiB: some 300 cards; less under the test
 * knob FOLD_TEST_CARDS_VALUE). A card that does
 * not parse is passed on empty, so that every rank names its writer. */
static int gather_cards(fold__boot *b, const char *mine, size_t mylen) {
  char *chunk = malloc(FOLD__STORE_VAL_MAX);
  if (chunk == NULL)
    return fold__boot_fail(b, FOLD_ENOMEM, "out of memory for the card list");
  char key[FOLD__STORE_KEY_MAX + 1], text[CARD_TEXT_MAX], phase[48];
  size_t blen = 0, room = (size_t)fold__param_u64(FOLD__P_TEST_CARDS_VALUE) - CARDS_HDR_MAX;
  int first = 0, bad = -1, rc = 0;
  for (int p = 0; p < b->size && rc == 0; p++) {
    size_t len = mylen;
    if (p == 0) {
      memcpy(text, mine, mylen);
    } else {
      fold__boot_key(b, key, sizeof key, "card", p);
      snprintf(phase, sizeof phase, "waiting for the card of rank %d", p);
      rc = fold__rdv_get(&b->watch, key, text, sizeof text, &len, phase);
      if (rc == FOLD_ETIMEDOUT)
        rc = fail_missing(b, "card", "exchanging cards");
      else if (rc < 0)
        rc = fold__boot_fail_store(b, rc, NULL);
      if (rc < 0)
        break;
    }
    if (len > sizeof text || fold__card_decode(&b->cards[p], text, len) < 0) {
      len = 0; /* passed on empty: malformed on every rank */
      if (bad < 0)
        bad = p;
    }
    char lead[16];
    int ll = snprintf(lead, sizeof lead, "%zu:", len);
    if (blen + (size_t)ll + len > room) {
      if ((rc = put_chunk(b, chunk, blen, first, p - first)) < 0)
        break;
      first = p, blen = 0;
    }
    memcpy(chunk + CARDS_HDR_MAX + blen, lead, (size_t)ll);
    memcpy(chunk + CARDS_HDR_MAX + blen + ll, text, len);
    blen += (size_t)ll + len;
  }
  if (rc == 0)
    rc = put_chunk(b, chunk, blen, first, b->size - first);
  free(chunk);
  if (rc == 0 && bad >= 0)
    rc = fold__boot_fail(b, FOLD_EINVAL, "rendezvous: rank %d published a malformed card", bad);
  return rc;
}

/* Parse one value of rank 0's card list; *next = the first rank it does
 * not hold. */
static int parse_chunk(fold__boot *b, const char *v, size_t n, int *next) {
  int first = -1, count = -1, used = 0;
  char hdr[CARDS_HDR_MAX + 1];
  size_t hn = n < CARDS_HDR_MAX ? n : CARDS_HDR_MAX;
  memcpy(hdr, v, hn);
  hdr[hn] = '\0';
  if (sscanf(hdr, "fold-cards %d %d\n%n", &first, &count, &used) != 2 || used == 0 || first != *next ||
      count < 1 || count > b->size - first)
    return fold__boot_fail(b, FOLD_EINVAL, "rendezvous: rank 0 published a malformed card list (for ranks from %d)",
                           *next);
  size_t pos = (size_t)used;
  for (int p = first; p < first + count; p++) {
    size_t len = 0, k = pos;
    while (k < n && v[k] >= '0' && v[k] <= '9' && k - pos < 6)
      len = len * 10 + (size_t)(v[k++] - '0');
    if (k == pos || k >= n || v[k] != ':' || len > n - k - 1)
      return fold__boot_fail(b, FOLD_EINVAL, "rendezvous: rank 0 published a malformed card list (at rank %d)", p);
    if (fold__card_decode(&b->cards[p], v + k + 1, len) < 0)
      return fold__boot_fail(b, FOLD_EINVAL, "rendezvous: rank %d published a malformed card", p);
    pos = k + 1 + len;
  }
  if (pos != n)
    return fold__boot_fail(b, FOLD_EINVAL, "rendezvous: rank 0 published a malformed card list (after rank %d)",
                           first + count - 1);
  *next = first + count;
  return 0;
}

/* Ranks but 0: read rank 0's card list, value after value. */
static int read_cards(fold__boot *b) {
  char *v = malloc(FOLD__STORE_VAL_MAX);
  if (v == NULL)
    return fold__boot_fail(b, FOLD_ENOMEM, "out of memory for the card list");
  char key[FOLD__STORE_KEY_MAX + 1];
  int next = 0, rc = 0;
  while (next < b->size && rc == 0) {
    size_t len = 0;
    fold__boot_key(b, key, sizeof key, "cards", b->nchunks);
    rc = fold__rdv_get(&b->watch, key, v, FOLD__STORE_VAL_MAX, &len, "waiting for rank 0's list of cards");
    if (rc == FOLD_ETIMEDOUT)
      rc = fail_missing(b, "card", "exchanging cards");
    else if (rc < 0)
      rc = fold__boot_fail_store(b, rc, NULL);
    else if (len > FOLD__STORE_VAL_MAX)
      rc = fold__boot_fail(b, FOLD_EINVAL, "rendezvous: rank 0 published a malformed card list (too long)");
    else if ((rc = parse_chunk(b, v, len, &next)) == 0)
      b->nchunks++;
  }
  free(v);
  return rc;
}

int fold__boot_exchange_cards(fold__boot *b, const fold__card *me) {
  char key[FOLD__STORE_KEY_MAX + 1], text[CARD_TEXT_MAX];
  int n = fold__card_encode(me, text, sizeof text);
  if (n < 0)
    return fold__boot_fail(b, FOLD_EINTERNAL, "card does not fit %d bytes", CARD_TEXT_MAX);
  if (b->size == 1) {
    b->cards[0] = *me;
    return 0;
  }
  /* rank 0 publishes its own too: a timeout names missing ranks by these keys */
  fold__boot_key(b, key, sizeof key, "card", b->rank);
  int rc = fold__store_set(b->store, key, text, (size_t)n, b->deadline);
  if (rc < 0)
    return fold__boot_fail_store(b, rc, NULL);
  return b->rank == 0 ? gather_cards(b, text, (size_t)n) : read_cards(b);
}

/* ---- the end of the round ------------------------------------------------------ */

/* Remove every key of this round. */
static void remove_round(fold__boot *b) {
  char key[FOLD__STORE_KEY_MAX + 1];
  for (int p = 0; p < b->size; p++) {
    fold__boot_key(b, key, sizeof key, "join", p);
    fold__store_del(b->store, key, b->deadline);
    fold__boot_key(b, key, sizeof key, "card", p);
    fold__store_del(b->store, key, b->deadline);
    if (b->u.kind == FOLD__STORE_FILE) { /* tcp and callbacks count "left" instead */
      fold__boot_key(b, key, sizeof key, "left", p);
      fold__store_del(b->store, key, b->deadline);
    }
  }
  for (int i = 0; i < b->nchunks; i++) {
    fold__boot_key(b, key, sizeof key, "cards", i);
    fold__store_del(b->store, key, b->deadline);
  }
  fold__boot_key(b, key, sizeof key, "nonce", -1);
  fold__store_del(b->store, key, b->deadline);
  if (b->u.kind != FOLD__STORE_FILE) {
    fold__boot_key(b, key, sizeof key, "left", -1);
    fold__store_del(b->store, key, b->deadline);
    fold__boot_key(b, key, sizeof key, "joined", -1);
    fold__store_del(b->store, key, b->deadline);
  }
  fold__boot_key(b, key, sizeof key, "ready", -1);
  fold__store_barrier_keys_del(b->store, key, b->size, b->deadline);
}

/* Final barrier, then cleanup once every rank has left the round ("left"
 * is each rank's last access to it). tcp: the rank whose add brings "left"
 * to size removes the keys. file: rank 0 waits (briefly: the others are
 * right behind) for every "left/<p>", removes the keys and, for a store
 * fold_init made, the directory. Cleanup is best effort: the comm works. */
int fold__boot_finish(fold__boot *b, int remove_dir) {
  char key[FOLD__STORE_KEY_MAX + 1];
  int64_t arrived = 0;
  fold__boot_key(b, key, sizeof key, "ready", -1);
  int rc = fold__store_barrier(b->store, key, b->rank, b->size, b->deadline, &arrived);
  if (rc == FOLD_ETIMEDOUT)
    return fold__boot_fail(b, rc, "rendezvous: only %lld of %d ranks finished connecting within %g s",
                           (long long)arrived, b->size, b->timeout_s);
  if (rc < 0)
    return fold__boot_fail_store(b, rc, "final barrier");
  if (b->u.kind != FOLD__STORE_FILE) { /* tcp and callbacks have add */
    int64_t left = 0;
    fold__boot_key(b, key, sizeof key, "left", -1);
    if (fold__store_add(b->store, key, 1, &left, b->deadline) == 0 && left == b->size)
      remove_round(b);
    return 0;
  }
  fold__boot_key(b, key, sizeof key, "left", b->rank);
  if (fold__store_set(b->store, key, "1", 1, b->deadline) < 0 || b->rank != 0)
    return 0;
  int64_t until = fold__clock_mono(NULL) + CLEANUP_WAIT_NS;
  for (int p = 0; p < b->size; p++) {
    char v[2];
    size_t len;
    fold__boot_key(b, key, sizeof key, "left", p);
    if (fold__store_get(b->store, key, v, sizeof v, &len, until) < 0)
      return 0; /* someone is slow to leave: leave the keys */
  }
  remove_round(b);
  if (remove_dir)
    rmdir(b->u.path); /* fails harmlessly if a next round already began */
  return 0;
}

void fold__boot_leave_timed_out(fold__boot *b) {
  if (b->store == NULL || b->u.kind != FOLD__STORE_TCP || b->pfx[0] == '\0')
    return;
  char key[FOLD__STORE_KEY_MAX + 1], msg[FOLD__ERRLEN];
  int64_t ignored;
  snprintf(msg, sizeof msg, "%s", fold_comm_last_error(NULL)); /* the add must not replace it */
  fold__boot_key(b, key, sizeof key, "left", -1);
  fold__store_add(b->store, key, 0, &ignored, fold__clock_mono(NULL));
  fold__error(NULL, FOLD_ETIMEDOUT, "%s", msg);
}
