/* init.c — fold_comm_init and fold_comm_init_store: the steps of a rendezvous (rdv.c at the store), choosing and connecting the transports. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/boot.h"
#include "comm/comm.h"

#define SRV_LINGER_NS (3LL * 1000000000)

/* The key of the world's slot that keeps rank 0's store server (comm_init_impl). */
static const char boot_srv_slot;

static void warn_no_token_once(const char *store) {
  static atomic_int warned;
  if (atomic_exchange(&warned, 1) == 0)
    fold__log(FOLD__LOG_WARN, -1,
              "FOLD_JOB_TOKEN is not set: connections are authenticated with a key derived from the store "
              "address %s, so anyone who knows it can join this job. Give every rank the same secret: "
              "`export FOLD_JOB_TOKEN=$(openssl rand -hex 16)` before the launch, passed on with e.g. "
              "`mpirun -x FOLD_JOB_TOKEN` (foldrun sets a random token itself)", store);
}

/* Rank 0 of a tcp store serves it unless the port is served already. */
static int maybe_serve(fold__boot *b) {
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
  return fold__boot_fail_store(b, rc, "serving the store");
}

/* Phase 1 of the transports; a failed shm in auto mode falls back to tcp. */
static int prepare(fold__boot *b, fold_comm *c, int tpk, const char *job_id, fold__card *me) {
  int rc = fold__card_self(me);
  if (rc < 0)
    return fold__boot_fail_store(b, rc, NULL);
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
      return fold__boot_fail(b, rc, "tcp transport: %s", c->last_error[0] ? c->last_error : fold_comm_last_error(NULL));
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
      return fold__boot_fail(b, rc, "shm transport: %s", c->last_error[0] ? c->last_error : fold_comm_last_error(NULL));
    if (rc < 0) {
      FOLD__WARN(c, "shm transport unavailable (%s); using tcp to every peer",
                 c->last_error[0] ? c->last_error : fold_comm_last_error(NULL));
      b->shm_state = NULL;
      me->shm[0] = '\0';
      c->last_error[0] = '\0';
    }
    if (me->tcp[0] == '\0' && me->shm[0] == '\0')
      return fold__boot_fail(b, FOLD_ESYS, "neither tcp nor shm could be prepared");
  }
  return 0;
}

/* Choose the transport of every peer; both ends reach the same choice
 * because it depends only on the two cards. */
static int choose(fold__boot *b, int tpk) {
  const fold__card *me = &b->cards[b->rank];
  for (int p = 0; p < b->size; p++) {
    if (p == b->rank)
      continue;
    const fold__card *q = &b->cards[p];
    int same = strcmp(me->host, q->host) == 0;
    if (tpk == FOLD__TP_KIND_SHM && !same)
      return fold__boot_fail(b, FOLD_EINVAL, "FOLD_TRANSPORT=shm, but rank %d is on another host or namespace (%s vs %s)", p,
                  q->host, me->host);
    int shm = tpk == FOLD__TP_KIND_SHM || (tpk == FOLD__TP_KIND_AUTO && same && me->shm[0] && q->shm[0]);
    if (shm && q->shm[0] == '\0')
      return fold__boot_fail(b, FOLD_EINVAL, "rank %d offers no shm segment (is FOLD_TRANSPORT the same on every rank?)", p);
    if (!shm && (q->tcp[0] == '\0' || me->tcp[0] == '\0'))
      return fold__boot_fail(b, FOLD_EINVAL, "rank %d and rank %d need tcp but one has no listener (FOLD_TRANSPORT differs?)",
                  b->rank, p);
    (shm ? b->use_shm : b->use_tcp)[p] = 1;
  }
  return 0;
}

/* Node-local rank and size: ranks whose host identity equals this rank's
 * (the test choose() uses for shm, so network namespaces count as hosts),
 * ordered by rank. */
static void set_local(const fold__boot *b, fold_comm *c) {
  const char *mine = b->cards[b->rank].host;
  /* the layout (hosts, most ranks on one) from the same host strings */
  uint64_t *ids = malloc((size_t)b->size * sizeof *ids);
  for (int p = 0; ids && p < b->size; p++) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *q = b->cards[p].host; *q; q++) h = (h ^ (uint8_t)*q) * 1099511628211ull;
    ids[p] = h;
  }
  if (ids) fold__comm_set_layout(c, ids, b->size);
  free(ids);
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
static int connect_all(fold__boot *b, fold_comm *c) {
  fold__tp *tp = NULL;
  int rc;
  if (b->shm_state && any(b->use_shm, b->size)) {
    void *st = b->shm_state;
    b->shm_state = NULL; /* connect frees it, also on error */
    rc = fold__shm_connect(c, st, b->cards, b->use_shm, b->deadline, &tp);
    if (rc < 0)
      return fold__boot_fail(b, rc, "shm connect: %s", c->last_error[0] ? c->last_error : fold_strerror(rc));
    if ((rc = fold__comm_add_tp(c, tp)) < 0) {
      tp->ops->destroy(tp);
      return fold__boot_fail(b, rc, "%s", c->last_error);
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
      return fold__boot_fail(b, rc, "tcp connect: %s", c->last_error[0] ? c->last_error : fold_strerror(rc));
    if ((rc = fold__comm_add_tp(c, tp)) < 0) {
      tp->ops->destroy(tp);
      return fold__boot_fail(b, rc, "%s", c->last_error);
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

static void boot_free(fold__boot *b) {
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
  int guessed; /* url made from MASTER_ADDR/MASTER_PORT (fold__store_url.guessed) */
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
  fold__boot *b = calloc(1, sizeof *b);
  if (b == NULL)
    return fold__error(NULL, FOLD_ENOMEM, "fold_comm_init: out of memory");
  b->rank = rank, b->size = size, b->fn = fn, b->url = store ? store : "callbacks";
  int64_t timeout = fold__env_timeout_ns();
  b->timeout_s = (double)timeout / 1e9;
  b->t0 = fold__clock_mono(NULL);
  b->deadline = b->t0 + timeout;
  fold_comm *c = NULL;
  fold__card me;
  char job_id[32] = "", claim[FOLD__AUTH_CLAIM_MAX + 1];
  int rc = 0;
  if (cb)
    b->u.kind = FOLD__STORE_CB;
  else
    rc = fold__store_url_parse(store, &b->u);
  if (rc < 0) {
    rc = fold__boot_fail_store(b, rc, NULL);
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
    rc = fold__boot_fail(b, FOLD_ENOMEM, "out of memory for %d cards", size);
    goto out;
  }
  if ((rc = maybe_serve(b)) < 0)
    goto out;
  snprintf(claim, sizeof claim, "store rank %d", rank);
  rc = cb ? fold__store_cb_open(cb, ctx, &b->store) : fold__store_open(store, &b->key, claim, b->deadline, sa->guessed, &b->store);
  if (rc < 0) {
    rc = fold__boot_fail_store(b, rc, NULL);
    goto out;
  }
  if ((rc = fold__boot_enter_round(b)) < 0 || (rc = fold__boot_job_id(b, job_id, sizeof job_id)) < 0)
    goto out;
  if ((rc = fold__comm_alloc(rank, size, &c)) < 0) {
    rc = fold__boot_fail_store(b, rc, NULL);
    goto out;
  }
  if ((rc = prepare(b, c, tpk, job_id, &me)) < 0 || (rc = fold__boot_exchange_cards(b, &me)) < 0 ||
      (b->t_cards = fold__clock_mono(NULL), 0) ||
      (rc = choose(b, tpk)) < 0 || (rc = connect_all(b, c)) < 0 || (rc = fold__boot_finish(b, remove_dir)) < 0)
    goto out;
  set_local(b, c);
  for (int i = 0; i < c->ntps; i++)
    if (c->tps[i]->ops->joined)
      c->tps[i]->ops->joined(c->tps[i]);
  /* Rank 0's server lives as long as the comm: a peer may still be in its
   * last store calls after rank 0 returns (everything after the final
   * barrier is best effort, and fold__store_srv_stop waits up to 2 s for
   * connected clients to leave): its stop is the teardown of a slot of the
   * comm. */
  if (b->srv && (rc = fold__ext_attach(c, &boot_srv_slot, b->srv, fold__store_srv_stop)) < 0) goto out;
  b->srv = NULL;
  FOLD__INFO(c, "joined %d ranks at %s (%d transports; %ld store requests by this rank; cards after %.3f s, "
             "joined after %.3f s; CLOCK_MONOTONIC at start %.6f, cards %.6f)", size, b->url, c->ntps, b->store->nreq,
             (double)(b->t_cards - b->t0) / 1e9, (double)(fold__clock_mono(NULL) - b->t0) / 1e9, (double)b->t0 / 1e9,
             (double)b->t_cards / 1e9);
  *comm = c;
  c = NULL;
  rc = FOLD_OK;
out:
  /* Timed out: every rank's deadline is about the same, so the others are
   * timing out too; leave the round (an ADD of 0 to "left", which the
   * server takes as a deliberate exit) so that our close does not make
   * them report us gone instead of the ranks they miss. Other failures
   * close without it: the others then fail at once naming this rank. */
  if (rc == FOLD_ETIMEDOUT)
    fold__boot_leave_timed_out(b);
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


int fold__comm_init_url(fold_comm **comm, int rank, int size, const char *url, int remove_dir, int guessed) {
  store_arg sa = {.url = url, .guessed = guessed};
  return comm_init(comm, rank, size, &sa, remove_dir);
}
