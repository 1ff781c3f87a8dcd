/* init.c — fold_comm_init (rendezvous at a store, choose and connect transports) and fold_init (from the launcher's environment). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "net/auth.h"
#include "bootstrap/store.h"
#include "comm/comm.h"
#include "core/internal.h"
#include "transport/transport.h"

#define CARD_TEXT_MAX 512
#define LIST_MAX_RANKS 16 /* name at most this many ranks in a message */
#define SRV_LINGER_NS (3LL * 1000000000)
#define CLEANUP_WAIT_NS (5LL * 1000000000)

/* Everything the rendezvous holds until it succeeds or is abandoned. */
typedef struct boot {
  int rank, size;
  const char *fn;  /* the public call, for messages */
  const char *url; /* "callbacks" for fold_comm_init_store */
  fold__store_url u;
  fold__auth_key key;
  fold__store *store;
  fold__store_srv *srv; /* rank 0 serving the tcp store itself */
  char pfx[32];         /* "<size>.<round>/": keys of this rendezvous */
  int64_t deadline;
  double timeout_s;
  void *tcp_state, *shm_state;
  fold__card *cards;
  uint8_t *use_tcp, *use_shm;
  fold__rdv_watch watch; /* the waits for other ranks' keys */
} boot;

static void warn_no_token_once(const char *store) {
  static atomic_int warned;
  if (atomic_exchange(&warned, 1) == 0)
    fold__log(FOLD__LOG_WARN, -1,
              "FOLD_JOB_TOKEN is not set: connections are authenticated with a key derived from the store "
              "address %s, so anyone who knows it can join this job. Give every rank the same secret: "
              "`export FOLD_JOB_TOKEN=$(openssl rand -hex 16)` before the launch, passed on with e.g. "
              "`mpirun -x FOLD_JOB_TOKEN` (foldrun sets a random token itself)", store);
}

/* Re-record the message of the failure in this thread's slot with the
 * operation and rank in front ("fold_comm_init: rank 2: ..."). */
static int fail(boot *b, int rc, const char *fmt, ...) FOLD__PRINTF(3, 4);
static int fail(boot *b, int rc, const char *fmt, ...) {
  char msg[FOLD__ERRLEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fold__error(NULL, rc, "%s: rank %d: %s", b->fn, b->rank, msg);
}

/* The message a store (or other pre-comm) call left, prefixed with what
 * was being done (what may be NULL when the message says enough). */
static int fail_store(boot *b, int rc, const char *what) {
  char msg[FOLD__ERRLEN];
  snprintf(msg, sizeof msg, "%s", fold_comm_last_error(NULL));
  if (what == NULL)
    return fail(b, rc, "%s", msg[0] ? msg : fold_strerror(rc));
  return fail(b, rc, "%s: %s", what, msg[0] ? msg : fold_strerror(rc));
}

static void key_of(const boot *b, char *out, size_t cap, const char *what, int r) {
  if (r >= 0)
    snprintf(out, cap, "%s%s/%d", b->pfx, what, r);
  else
    snprintf(out, cap, "%s%s", b->pfx, what);
}

/* A rendezvous wait ran out: look (without waiting) which ranks have not
 * published `what` and name them. */
static int fail_missing(boot *b, const char *what, const char *phase) {
  char list[256];
  int missing = fold__rdv_missing(&b->watch, what, list, sizeof list, LIST_MAX_RANKS);
  if (missing < 0)
    return fail_store(b, missing, phase);
  if (missing == 0) /* everyone arrived just now */
    return fail(b, FOLD_ETIMEDOUT, "rendezvous: %s did not complete within %g s", phase, b->timeout_s);
  return fail(b, FOLD_ETIMEDOUT,
              "rendezvous: rank%s %s did not join within %g s (is the world size %d right, and was every rank "
              "given the store %s?)",
              missing > 1 ? "s" : "", list, b->timeout_s, b->size, b->url);
}

/* Rank 0 of a tcp store serves it unless the port is served already. */
static int maybe_serve(boot *b) {
  if (b->u.kind != FOLD__STORE_TCP || b->rank != 0)
    return 0;
  fold__store_srv_cfg cfg = {.host = b->u.host, .port = b->u.port, .key = b->key, .log_rank = 0};
  int err = 0;
  int rc = fold__store_srv_start(&cfg, &b->srv, NULL, &err);
  if (rc == 0) {
    if (fold__log_level_env() >= FOLD__LOG_INFO)
      fold__log(FOLD__LOG_INFO, 0, "serving the store at %s", b->url);
    return 0;
  }
  /* In use: foldrun (or a launcher) serves it; not a local address: the
   * server is elsewhere. Either way this rank is a client, and the
   * handshake proves the server belongs to the job. */
  if (rc == FOLD_ESYS && (err == EADDRINUSE || err == EADDRNOTAVAIL || err == EACCES)) {
    /* In use is the normal case under foldrun: TRACE only. */
    int level = err == EADDRINUSE ? FOLD__LOG_TRACE : FOLD__LOG_INFO;
    if (fold__log_level_env() >= level)
      fold__log(level, 0, "store %s is not served here (%s); joining as a client", b->url, strerror(err));
    return 0;
  }
  return fail_store(b, rc, "serving the store");
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

static int enter_round(boot *b) {
  /* A callback store serves one rendezvous (fold.h): a per-process round
   * count could differ between ranks that made other communicators. */
  if (b->u.kind == FOLD__STORE_CB)
    snprintf(b->pfx, sizeof b->pfx, "%d.cb/", b->size);
  else
    snprintf(b->pfx, sizeof b->pfx, "%d.%lld/", b->size, next_round(b->url, b->size, b->rank));
  int rc;
  char jk[FOLD__STORE_KEY_MAX + 1];
  key_of(b, jk, sizeof jk, "join", b->rank);
  /* a joined rank that goes before the round completes fails our waits at
   * once (tcp store: the server sees its connection close) */
  key_of(b, b->store->watch, sizeof b->store->watch, "gone", -1);
  rc = fold__store_set(b->store, jk, "1", 1, b->deadline);
  b->watch = (fold__rdv_watch){.store = b->store, .pfx = b->pfx, .url = b->url, .rank = b->rank, .size = b->size,
                               .timeout_ns = (int64_t)(b->timeout_s * 1e9), .deadline_ns = b->deadline};
  fold__rdv_watch_start(&b->watch);
  return rc < 0 ? fail_store(b, rc, NULL) : 0;
}

/* A short id unique to this job and round, for names of shared resources:
 * hex of SHA-256(key | store | nonce), the nonce made by rank 0. */
static int make_job_id(boot *b, char *id, size_t cap) {
  char key[FOLD__STORE_KEY_MAX + 1], nonce[65];
  key_of(b, key, sizeof key, "nonce", -1);
  if (b->rank == 0) {
    uint8_t r[16];
    if (RAND_bytes(r, sizeof r) != 1)
      return fail(b, FOLD_ESYS, "no random bytes for the job nonce");
    for (int i = 0; i < 16; i++)
      snprintf(nonce + 2 * i, 3, "%02x", r[i]);
    int rc = fold__store_set(b->store, key, nonce, 32, b->deadline);
    if (rc < 0)
      return fail_store(b, rc, NULL);
  }
  size_t len = 0;
  int rc = fold__rdv_get(&b->watch, key, nonce, 32, &len, "waiting for rank 0's job nonce");
  if (rc == FOLD_ETIMEDOUT)
    return fail_missing(b, "join", "waiting for rank 0");
  if (rc < 0)
    return fail_store(b, rc, NULL);
  if (len != 32)
    return fail(b, FOLD_EINVAL, "rendezvous: malformed job nonce in the store");
  uint8_t d[32];
  unsigned int dl = 0;
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
           EVP_DigestUpdate(md, b->key.bytes, sizeof b->key.bytes) == 1 &&
           EVP_DigestUpdate(md, b->url, strlen(b->url)) == 1 && EVP_DigestUpdate(md, nonce, 32) == 1 &&
           EVP_DigestFinal_ex(md, d, &dl) == 1;
  EVP_MD_CTX_free(md);
  if (!ok)
    return fail(b, FOLD_ENOMEM, "SHA-256 failed");
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

/* Phase 1 of the transports; a failed shm in auto mode falls back to tcp. */
static int prepare(boot *b, fold_comm *c, int tpk, const char *job_id, fold__card *me) {
  int rc = fold__card_self(me);
  if (rc < 0)
    return fail_store(b, rc, NULL);
  /* Test knobs: FOLD_TEST_HOSTS=k makes this machine k-rank "hosts" (ranks
   * r and q share one only when r/k == q/k), FOLD_TEST_HOST_MAP any layout,
   * so that one machine runs a job mixing shm and tcp (tests/p2p/mixed_*,
   * the hier tests). Not for production. */
  int th = fold__test_host(b->rank); /* FOLD_TEST_HOSTS, FOLD_TEST_HOST_MAP */
  if (th >= 0) {
    size_t len = strlen(me->host);
    snprintf(me->host + len, sizeof me->host - len, "|test-host-%d", th);
  }
  if (b->size == 1)
    return 0; /* nobody to connect to */
  if (tpk != FOLD__TP_KIND_SHM) {
    rc = fold__tcp_prepare(c, b->u.kind == FOLD__STORE_TCP ? b->u.host : NULL, me, &b->tcp_state);
    if (rc < 0 && tpk == FOLD__TP_KIND_TCP)
      return fail(b, rc, "tcp transport: %s", c->last_error[0] ? c->last_error : fold_comm_last_error(NULL));
    if (rc < 0) { /* fatal later only if some peer needs tcp */
      FOLD__WARN(c, "tcp transport unavailable (%s)", c->last_error[0] ? c->last_error : fold_comm_last_error(NULL));
      b->tcp_state = NULL;
      me->tcp[0] = '\0';
      c->last_error[0] = '\0';
    }
  }
  if (tpk != FOLD__TP_KIND_TCP) {
    rc = fold__shm_prepare(c, job_id, me, &b->shm_state);
    if (rc < 0 && tpk == FOLD__TP_KIND_SHM)
      return fail(b, rc, "shm transport: %s", c->last_error[0] ? c->last_error : fold_comm_last_error(NULL));
    if (rc < 0) {
      FOLD__WARN(c, "shm transport unavailable (%s); using tcp to every peer",
                 c->last_error[0] ? c->last_error : fold_comm_last_error(NULL));
      b->shm_state = NULL;
      me->shm[0] = '\0';
      c->last_error[0] = '\0';
    }
    if (me->tcp[0] == '\0' && me->shm[0] == '\0')
      return fail(b, FOLD_ESYS, "neither tcp nor shm could be prepared");
  }
  return 0;
}

/* Publish my card, fetch everyone's. */
static int exchange_cards(boot *b, const fold__card *me) {
  char key[FOLD__STORE_KEY_MAX + 1], text[CARD_TEXT_MAX];
  int n = fold__card_encode(me, text, sizeof text);
  if (n < 0)
    return fail(b, FOLD_EINTERNAL, "card does not fit %d bytes", CARD_TEXT_MAX);
  key_of(b, key, sizeof key, "card", b->rank);
  int rc = fold__store_set(b->store, key, text, (size_t)n, b->deadline);
  if (rc < 0)
    return fail_store(b, rc, NULL);
  for (int p = 0; p < b->size; p++) {
    key_of(b, key, sizeof key, "card", p);
    size_t len = 0;
    char phase[48];
    snprintf(phase, sizeof phase, "waiting for the card of rank %d", p);
    rc = fold__rdv_get(&b->watch, key, text, sizeof text, &len, phase);
    if (rc == FOLD_ETIMEDOUT)
      return fail_missing(b, "card", "exchanging cards");
    if (rc < 0)
      return fail_store(b, rc, NULL);
    if (len > sizeof text || fold__card_decode(&b->cards[p], text, len) < 0)
      return fail(b, FOLD_EINVAL, "rendezvous: rank %d published a malformed card", p);
  }
  return 0;
}

/* Choose the transport of every peer; both ends reach the same choice
 * because it depends only on the two cards. */
static int choose(boot *b, int tpk) {
  const fold__card *me = &b->cards[b->rank];
  for (int p = 0; p < b->size; p++) {
    if (p == b->rank)
      continue;
    const fold__card *q = &b->cards[p];
    int same = strcmp(me->host, q->host) == 0;
    if (tpk == FOLD__TP_KIND_SHM && !same)
      return fail(b, FOLD_EINVAL, "FOLD_TRANSPORT=shm, but rank %d is on another host or namespace (%s vs %s)", p,
                  q->host, me->host);
    int shm = tpk == FOLD__TP_KIND_SHM || (tpk == FOLD__TP_KIND_AUTO && same && me->shm[0] && q->shm[0]);
    if (shm && q->shm[0] == '\0')
      return fail(b, FOLD_EINVAL, "rank %d offers no shm segment (is FOLD_TRANSPORT the same on every rank?)", p);
    if (!shm && (q->tcp[0] == '\0' || me->tcp[0] == '\0'))
      return fail(b, FOLD_EINVAL, "rank %d and rank %d need tcp but one has no listener (FOLD_TRANSPORT differs?)",
                  b->rank, p);
    (shm ? b->use_shm : b->use_tcp)[p] = 1;
  }
  return 0;
}

/* Node-local rank and size: ranks whose host identity equals this rank's
 * (the test choose() uses for shm, so network namespaces count as hosts),
 * ordered by rank. */
static void set_local(const boot *b, fold_comm *c) {
  const char *mine = b->cards[b->rank].host;
  c->local_rank = 0;
  c->local_size = 0;
  for (int p = 0; p < b->size; p++)
    if (strcmp(b->cards[p].host, mine) == 0) {
      if (p < b->rank)
        c->local_rank++;
      c->local_size++;
    }
}

static int any(const uint8_t *use, int n) {
  for (int i = 0; i < n; i++)
    if (use[i])
      return 1;
  return 0;
}

/* Phase 2: connect, attach, and map every peer to its transport. */
static int connect_all(boot *b, fold_comm *c) {
  fold__tp *tp = NULL;
  int rc;
  if (b->shm_state && any(b->use_shm, b->size)) {
    void *st = b->shm_state;
    b->shm_state = NULL; /* connect frees it, also on error */
    rc = fold__shm_connect(c, st, b->cards, b->use_shm, b->deadline, &tp);
    if (rc < 0)
      return fail(b, rc, "shm connect: %s", c->last_error[0] ? c->last_error : fold_strerror(rc));
    if ((rc = fold__comm_add_tp(c, tp)) < 0) {
      tp->ops->destroy(tp);
      return fail(b, rc, "%s", c->last_error);
    }
    for (int p = 0; p < b->size; p++)
      if (b->use_shm[p])
        c->peer_tp[p] = tp;
  }
  if (b->tcp_state && any(b->use_tcp, b->size)) {
    void *st = b->tcp_state;
    b->tcp_state = NULL;
    rc = fold__tcp_connect(c, st, b->cards, b->use_tcp, &b->key, b->deadline, &tp);
    if (rc < 0)
      return fail(b, rc, "tcp connect: %s", c->last_error[0] ? c->last_error : fold_strerror(rc));
    if ((rc = fold__comm_add_tp(c, tp)) < 0) {
      tp->ops->destroy(tp);
      return fail(b, rc, "%s", c->last_error);
    }
    for (int p = 0; p < b->size; p++)
      if (b->use_tcp[p])
        c->peer_tp[p] = tp;
  }
  /* Prepared but unused (e.g. every peer on this host): release. */
  if (b->shm_state)
    fold__shm_abandon(b->shm_state), b->shm_state = NULL;
  if (b->tcp_state)
    fold__tcp_abandon(b->tcp_state), b->tcp_state = NULL;
  return 0;
}

/* Remove every key of this round. */
static void remove_round(boot *b) {
  char key[FOLD__STORE_KEY_MAX + 1];
  static const char *const per_rank[] = {"join", "card", "left"};
  for (int w = 0; w < 3; w++)
    for (int p = 0; p < b->size; p++) {
      key_of(b, key, sizeof key, per_rank[w], p);
      fold__store_del(b->store, key, b->deadline);
    }
  key_of(b, key, sizeof key, "nonce", -1);
  fold__store_del(b->store, key, b->deadline);
  key_of(b, key, sizeof key, "left", -1);
  fold__store_del(b->store, key, b->deadline);
  key_of(b, key, sizeof key, "ready", -1);
  fold__store_barrier_keys_del(b->store, key, b->size, b->deadline);
}

/* Final barrier, then cleanup once every rank has left the round ("left"
 * is each rank's last access to it). tcp: the rank whose add brings "left"
 * to size removes the keys. file: rank 0 waits (briefly: the others are
 * right behind) for every "left/<p>", removes the keys and, for a store
 * fold_init made, the directory. Cleanup is best effort: the comm works. */
static int finish(boot *b, int remove_dir) {
  char key[FOLD__STORE_KEY_MAX + 1];
  int64_t arrived = 0;
  key_of(b, key, sizeof key, "ready", -1);
  int rc = fold__store_barrier(b->store, key, b->rank, b->size, b->deadline, &arrived);
  if (rc == FOLD_ETIMEDOUT)
    return fail(b, rc, "rendezvous: only %lld of %d ranks finished connecting within %g s", (long long)arrived,
                b->size, b->timeout_s);
  if (rc < 0)
    return fail_store(b, rc, "final barrier");
  if (b->u.kind != FOLD__STORE_FILE) { /* tcp and callbacks have add */
    int64_t left = 0;
    key_of(b, key, sizeof key, "left", -1);
    if (fold__store_add(b->store, key, 1, &left, b->deadline) == 0 && left == b->size)
      remove_round(b);
    return 0;
  }
  key_of(b, key, sizeof key, "left", b->rank);
  if (fold__store_set(b->store, key, "1", 1, b->deadline) < 0 || b->rank != 0)
    return 0;
  int64_t until = fold__clock_mono(NULL) + CLEANUP_WAIT_NS;
  for (int p = 0; p < b->size; p++) {
    char v[2];
    size_t len;
    key_of(b, key, sizeof key, "left", p);
    if (fold__store_get(b->store, key, v, sizeof v, &len, until) < 0)
      return 0; /* someone is slow to leave: leave the keys */
  }
  remove_round(b);
  if (remove_dir)
    rmdir(b->u.path); /* fails harmlessly if a next round already began */
  return 0;
}

static void boot_free(boot *b) {
  if (b->shm_state)
    fold__shm_abandon(b->shm_state);
  if (b->tcp_state)
    fold__tcp_abandon(b->tcp_state);
  fold__store_close(b->store);
  /* Only after a failure does rank 0 still hold its server here: let the
   * other ranks finish their own (failing) store calls first, so that they
   * report what they were missing rather than a lost store. */
  if (b->srv)
    fold__store_srv_linger(b->srv, fold__clock_mono(NULL) + SRV_LINGER_NS);
  fold__store_srv_stop(b->srv);
  free(b->cards);
  free(b->use_tcp);
  free(b->use_shm);
  free(b);
}

/* fold_comm_init (use_cb 0: store) and fold_comm_init_store (use_cb 1:
 * cb and ctx the user's); remove_dir: the store is a file store directory that
 * fold_init made for this job, removed once the rendezvous is over. */
typedef struct store_arg {
  int use_cb;
  const char *url;
  const fold_store_callbacks *cb;
  void *ctx;
} store_arg;

static int comm_init_impl(fold_comm **comm, int rank, int size, const store_arg *sa, int remove_dir) {
  const char *fn = sa->use_cb ? "fold_comm_init_store" : "fold_comm_init";
  const char *store = sa->url;
  const fold_store_callbacks *cb = sa->cb;
  void *ctx = sa->ctx;
  if (comm == NULL)
    return fold__error(NULL, FOLD_EINVAL, "%s: comm is NULL", fn);
  *comm = NULL;
  if (size < 1 || rank < 0 || rank >= size)
    return fold__error(NULL, FOLD_EINVAL, "%s: rank %d is not in [0, size = %d)", fn, rank, size);
  if (!sa->use_cb && (store == NULL || store[0] == '\0'))
    return fold__error(NULL, FOLD_EINVAL, "fold_comm_init: rank %d: store is NULL or empty", rank);
  if (sa->use_cb && cb == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_comm_init_store: rank %d: cb is NULL", rank);
  if (cb && (cb->set == NULL || cb->get == NULL || cb->add == NULL))
    return fold__error(NULL, FOLD_EINVAL, "fold_comm_init_store: rank %d: callback %s is NULL", rank,
                       cb->set == NULL ? "set" : cb->get == NULL ? "get" : "add");
  int tpk = fold__env_transport();
  if (tpk < 0)
    return fold__error(NULL, FOLD_EINVAL, "%s: rank %d: FOLD_TRANSPORT=%s is not auto, shm or tcp", fn, rank,
                       fold__env_str("FOLD_TRANSPORT"));
  if (tpk == FOLD__TP_KIND_INPROC)
    return fold__error(NULL, FOLD_EINVAL,
                       "%s: rank %d: FOLD_TRANSPORT=inproc works only with fold_comm_init_threads", fn, rank);
  boot *b = calloc(1, sizeof *b);
  if (b == NULL)
    return fold__error(NULL, FOLD_ENOMEM, "fold_comm_init: out of memory");
  b->rank = rank, b->size = size, b->fn = fn, b->url = store ? store : "callbacks";
  int64_t timeout = fold__env_timeout_ns();
  b->timeout_s = (double)timeout / 1e9;
  b->deadline = fold__clock_mono(NULL) + timeout;
  fold_comm *c = NULL;
  fold__card me;
  char job_id[32] = "", claim[FOLD__AUTH_CLAIM_MAX + 1];
  int rc = 0;
  if (cb)
    b->u.kind = FOLD__STORE_CB;
  else
    rc = fold__store_url_parse(store, &b->u);
  if (rc < 0) {
    rc = fail_store(b, rc, NULL);
    goto out;
  }
  const char *token = fold__param_str(FOLD__P_JOB_TOKEN);
  fold__auth_key_derive(&b->key, token, b->url);
  if (!b->key.from_token && b->u.kind == FOLD__STORE_TCP && rank == 0) /* once per job, not per rank */
    warn_no_token_once(store);
  b->cards = calloc((size_t)size, sizeof *b->cards);
  b->use_tcp = calloc((size_t)size, 1);
  b->use_shm = calloc((size_t)size, 1);
  if (b->cards == NULL || b->use_tcp == NULL || b->use_shm == NULL) {
    rc = fail(b, FOLD_ENOMEM, "out of memory for %d cards", size);
    goto out;
  }
  if ((rc = maybe_serve(b)) < 0)
    goto out;
  snprintf(claim, sizeof claim, "store rank %d", rank);
  rc = cb ? fold__store_cb_open(cb, ctx, &b->store) : fold__store_open(store, &b->key, claim, b->deadline, &b->store);
  if (rc < 0) {
    rc = fail_store(b, rc, NULL);
    goto out;
  }
  if ((rc = enter_round(b)) < 0 || (rc = make_job_id(b, job_id, sizeof job_id)) < 0)
    goto out;
  if ((rc = fold__comm_alloc(rank, size, &c)) < 0) {
    rc = fail_store(b, rc, NULL);
    goto out;
  }
  if ((rc = prepare(b, c, tpk, job_id, &me)) < 0 || (rc = exchange_cards(b, &me)) < 0 ||
      (rc = choose(b, tpk)) < 0 || (rc = connect_all(b, c)) < 0 || (rc = finish(b, remove_dir)) < 0)
    goto out;
  set_local(b, c);
  for (int i = 0; i < c->ntps; i++)
    if (c->tps[i]->ops->joined)
      c->tps[i]->ops->joined(c->tps[i]);
  /* Rank 0's server lives as long as the comm: a peer may still be in its
   * last store calls after rank 0 returns (everything after the final
   * barrier is best effort, and fold__store_srv_stop waits up to 2 s for
   * connected clients to leave). */
  c->boot = b->srv;
  c->boot_release = b->srv ? fold__store_srv_stop : NULL;
  b->srv = NULL;
  FOLD__INFO(c, "joined %d ranks at %s (%d transports)", size, b->url, c->ntps);
  *comm = c;
  c = NULL;
  rc = FOLD_OK;
out:
  /* Timed out: every rank's deadline is about the same, so the others are
   * timing out too; leave the round (an ADD of 0 to "left", which the
   * server takes as a deliberate exit) so that our close does not make
   * them report us gone instead of the ranks they miss. Other failures
   * close without it: the others then fail at once naming this rank. */
  if (rc == FOLD_ETIMEDOUT && b->store && b->u.kind == FOLD__STORE_TCP && b->pfx[0]) {
    char key[FOLD__STORE_KEY_MAX + 1];
    int64_t ignored;
    char msg[FOLD__ERRLEN];
    snprintf(msg, sizeof msg, "%s", fold_comm_last_error(NULL)); /* the add must not replace it */
    key_of(b, key, sizeof key, "left", -1);
    fold__store_add(b->store, key, 0, &ignored, fold__clock_mono(NULL));
    fold__error(NULL, rc, "%s", msg);
  }
  /* Phase-1 states may point into the comm: abandon them before it goes. */
  if (b->shm_state)
    fold__shm_abandon(b->shm_state), b->shm_state = NULL;
  if (b->tcp_state)
    fold__tcp_abandon(b->tcp_state), b->tcp_state = NULL;
  fold__comm_free(c);
  boot_free(b);
  return rc;
}

/* Every rank has joined: the communicator is complete, so FOLD_PROGRESS_THREAD
 * may start its helper (a failure to start leaves it without one, warned). */
static int comm_init(fold_comm **comm, int rank, int size, const store_arg *sa, int remove_dir) {
  int rc = comm_init_impl(comm, rank, size, sa, remove_dir);
  if (rc == FOLD_OK)
    fold__pthread_start(*comm);
  return rc;
}

int fold_comm_init(fold_comm **comm, int rank, int size, const char *store) {
  store_arg sa = {.url = store};
  return comm_init(comm, rank, size, &sa, 0);
}

int fold_comm_init_store(fold_comm **comm, int rank, int size, const fold_store_callbacks *cb, void *ctx) {
  store_arg sa = {.use_cb = 1, .cb = cb, .ctx = ctx};
  return comm_init(comm, rank, size, &sa, 0);
}

/* ======================================================================
 * fold_init: rank, size and store from the launcher's environment
 * ====================================================================== */

static const struct {
  const char *rank, *size, *who;
} launchers[] = {
    {"FOLD_RANK", "FOLD_SIZE", "foldrun"},
    {"RANK", "WORLD_SIZE", "torchrun"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "ompi"},
    {"PMI_RANK", "PMI_SIZE", "hydra"},
    {"SLURM_PROCID", "SLURM_NTASKS", "slurm"},
};

static int env_int(const char *name, long lo, long hi, int *out) {
  const char *v = fold__env_str(name);
  if (v == NULL || *v == '\0')
    return 0;
  char *end = NULL;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (*end != '\0' || errno != 0 || x < lo || x > hi)
    return -1;
  *out = (int)x;
  return 1;
}

static int env_eq(const char *a, const char *b) {
  const char *x = fold__env_str(a), *y = fold__env_str(b);
  return x && y && *x && strcmp(x, y) == 0;
}

/* MPICH's hydra exports no job id, but every rank on a host is a child
 * (maybe through a wrapper) of one hydra_pmi_proxy: its pid and start
 * time name the job on this host. */
static int hydra_job_id(char *out, size_t cap) {
  pid_t pid = getppid();
  for (int depth = 0; depth < 16 && pid > 1; depth++) {
    char path[64], comm[64] = "", stat[1024];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
      return -1;
    if (fgets(comm, sizeof comm, f) == NULL)
      comm[0] = '\0';
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    f = fopen(path, "re");
    if (f == NULL)
      return -1;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    /* Fields after the ")" that closes comm: state ppid ... starttime (22nd). */
    char *p = strrchr(stat, ')');
    if (p == NULL)
      return -1;
    long ppid = 0;
    unsigned long long start = 0;
    if (sscanf(p + 2, "%*c %ld %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu", &ppid,
               &start) != 2)
      return -1;
    if (strcmp(comm, "hydra_pmi_proxy") == 0) {
      snprintf(out, cap, "%d-%llu", (int)pid, start);
      return 0;
    }
    pid = (pid_t)ppid;
  }
  return -1;
}

/* Job id of a launcher that put every rank on this host, or -1. */
static int single_host_job_id(const char *who, char *out, size_t cap) {
  const char *v;
  if (strcmp(who, "ompi") == 0 && env_eq("OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_SIZE") &&
      ((v = fold__env_str("OMPI_MCA_ess_base_jobid")) || (v = fold__env_str("PMIX_NAMESPACE")))) {
    snprintf(out, cap, "%s", v);
    return 0;
  }
  if (strcmp(who, "hydra") == 0 && env_eq("MPI_LOCALNRANKS", "PMI_SIZE"))
    return hydra_job_id(out, cap);
  if (strcmp(who, "slurm") == 0 && (v = fold__env_str("SLURM_JOB_ID")) != NULL &&
      (fold__env_str("SLURM_NNODES") && strcmp(fold__env_str("SLURM_NNODES"), "1") == 0)) {
    const char *step = fold__env_str("SLURM_STEP_ID");
    snprintf(out, cap, "%s.%s", v, step ? step : "0");
    return 0;
  }
  return -1;
}

/* No complete rank/size pair. With no launcher variable at all the program
 * was started by hand: like MPI's singleton init it is a world of one
 * (inproc, no store, no sockets). A half-set launcher (FOLD_RANK without
 * FOLD_SIZE, a lone WORLD_SIZE) or a FOLD_STORE with no rank says a job was
 * meant: then running alone would hide the mistake, so it is an error. */
static int init_singleton(fold_comm **comm) {
  char set[256] = "";
  size_t n = 0;
  for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
    const char *names[2] = {launchers[i].rank, launchers[i].size};
    for (int k = 0; k < 2; k++) {
      const char *v = fold__env_str(names[k]);
      if (v && *v && n < sizeof set - 64)
        n += (size_t)snprintf(set + n, sizeof set - n, "%s%s=%.16s", n ? ", " : "", names[k], v);
    }
  }
  const char *st = fold__env_str("FOLD_STORE");
  if (st && *st && n < sizeof set - 64)
    n += (size_t)snprintf(set + n, sizeof set - n, "%sFOLD_STORE=%.40s", n ? ", " : "", st);
  if (n > 0)
    return fold__error(NULL, FOLD_EINVAL,
                       "fold_init: incomplete launcher environment (%s): need a complete rank/size pair "
                       "(FOLD_RANK/FOLD_SIZE, RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE, "
                       "PMI_RANK/PMI_SIZE or SLURM_PROCID/SLURM_NTASKS), or none of them for a world of one",
                       set);
  if (fold__env_transport() < 0)
    return fold__error(NULL, FOLD_EINVAL, "fold_init: FOLD_TRANSPORT=%s is not auto, shm or tcp",
                       fold__env_str("FOLD_TRANSPORT"));
  int rc = fold_comm_init_threads(1, comm);
  if (rc < 0) {
    *comm = NULL;
    return rc;
  }
  FOLD__INFO(*comm, "fold_init: no launcher variables: a world of one (rank 0 of 1, transport inproc, no store)");
  return FOLD_OK;
}

int fold_init(fold_comm **comm) {
  if (comm == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_init: comm is NULL");
  *comm = NULL;
  int rank = -1, size = -1;
  const char *who = NULL;
  for (size_t i = 0; i < sizeof launchers / sizeof launchers[0] && who == NULL; i++) {
    int r = env_int(launchers[i].rank, 0, 1 << 30, &rank);
    int s = env_int(launchers[i].size, 1, 1 << 30, &size);
    if (r == 0 || s == 0)
      continue; /* a lone RANK=... from elsewhere is not a launcher */
    if (r < 0 || s < 0 || rank >= size)
      return fold__error(NULL, FOLD_EINVAL, "fold_init: %s=%s and %s=%s are not a rank in [0, size)",
                         launchers[i].rank,
                         fold__env_str(launchers[i].rank) ? fold__env_str(launchers[i].rank) : "(unset)",
                         launchers[i].size,
                         fold__env_str(launchers[i].size) ? fold__env_str(launchers[i].size) : "(unset)");
    who = launchers[i].who;
  }
  if (who == NULL)
    return init_singleton(comm);
  char url[4200];
  const char *v = fold__env_str("FOLD_STORE"), *addr = fold__env_str("MASTER_ADDR");
  const char *port = fold__env_str("MASTER_PORT");
  char job[128];
  int made_dir = 0;
  if (v && *v) {
    snprintf(url, sizeof url, "%s", v);
  } else if (addr && *addr && port && *port) {
    snprintf(url, sizeof url, strchr(addr, ':') && addr[0] != '[' ? "tcp://[%s]:%s" : "tcp://%s:%s", addr, port);
  } else if (single_host_job_id(who, job, sizeof job) == 0) {
    for (char *p = job; *p; p++) /* the id becomes a file name */
      if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' || *p == '-'))
        *p = '_';
    const char *tmp = fold__env_str("TMPDIR");
    if (tmp == NULL || tmp[0] != '/')
      tmp = "/tmp";
    snprintf(url, sizeof url, "file://%s/fold-%s-%s", tmp, who, job);
    /* A directory in a shared /tmp: it must be ours and private, or
     * another user could read or forge the rendezvous. */
    const char *dir = url + 7;
    struct stat st;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
      return fold__error(NULL, FOLD_ESYS, "fold_init: rank %d: cannot create %s: %s", rank, dir, strerror(errno));
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0)
      return fold__error(NULL, FOLD_EINVAL, "fold_init: rank %d: %s is not a private directory of this user", rank,
                         dir);
    made_dir = 1;
  } else {
    return fold__error(NULL, FOLD_EINVAL,
                       "fold_init: rank %d: no store for this %s launch, which may span hosts: export "
                       "FOLD_STORE=tcp://<rank 0's host>:<a free port> and FOLD_JOB_TOKEN=<a random secret> to "
                       "every rank, e.g. `mpirun -x FOLD_STORE -x FOLD_JOB_TOKEN` (srun passes the environment "
                       "on). Looked for FOLD_STORE, MASTER_ADDR/MASTER_PORT and a single-host job id "
                       "(docs/bootstrap.md lists them)",
                       rank, who);
  }
  store_arg sa = {.url = url};
  return comm_init(comm, rank, size, &sa, made_dir);
}
