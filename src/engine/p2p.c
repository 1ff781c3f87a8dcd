/* p2p.c — the public point-to-point calls and request completion. */
#include "core/internal.h"
#include "engine/engine.h"
#include "transport/transport.h"

static int new_p2p(fold_comm *c, int kind, const void *buf, size_t bytes, int peer, int ctx, int tag,
                   fold_request **out) {
  fold_request *r = fold__req_new(c, kind);
  if (r == NULL)
    return fold__error(c, FOLD_ENOMEM, "rank %d: out of memory for a request", c->rank);
  r->buf = (void *)buf;
  r->bytes = bytes;
  r->peer = peer;
  r->ctx = ctx;
  r->tag = tag;
  *out = r;
  return FOLD_OK;
}

size_t fold__eager_max(const fold_comm *c, int ctx) {
  size_t m = 0;
  for (int i = 0; i < c->ntps; i++) {
    size_t e = c->tps[i]->ops->eager_max ? c->tps[i]->ops->eager_max(ctx) : 0;
    if (e && (m == 0 || e < m)) m = e;
  }
  return m;
}

int fold__isend_bytes(fold_comm *c, const void *buf, size_t bytes, int peer, int ctx, int tag,
                      fold_request **req) {
  int rc = new_p2p(c, FOLD__REQ_SEND, buf, bytes, peer, ctx, tag, req);
  if (rc == FOLD_OK)
    fold__send_post(c, *req); /* a failure completes the request with it */
  return rc;
}

int fold__irecv_bytes(fold_comm *c, void *buf, size_t bytes, int peer, int ctx, int tag,
                      fold_request **req) {
  int rc = new_p2p(c, FOLD__REQ_RECV, buf, bytes, peer, ctx, tag, req);
  if (rc == FOLD_OK)
    fold__recv_post(c, *req);
  return rc;
}

/* The peer and tag of a send (recv = 0) or of a receive or probe (recv = 1),
 * which may name FOLD_ANY_SOURCE and FOLD_ANY_TAG. */
static int check_peer_tag(fold_comm *c, const char *op, int peer, int tag, int recv) {
  int rc;
  if (!(recv && peer == FOLD_ANY_SOURCE) && (rc = fold__check_peer(c, op, peer))) return rc;
  if (tag < 0 && !(recv && tag == FOLD_ANY_TAG))
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: tag %d is negative%s", op, c->rank, tag,
                       recv ? " (and not FOLD_ANY_TAG)" : "");
  return FOLD_OK;
}

/* Checks shared by the public calls; *bytes gets the message size. Receives
 * (recv != 0) may name FOLD_ANY_SOURCE and FOLD_ANY_TAG, sends may not. */
static int check_p2p(fold_comm *c, const char *op, const void *buf, size_t count, fold_dtype dtype, int peer,
                     int tag, int recv, size_t *bytes) {
  int rc = fold__check_comm(c);
  if (rc) return rc;
  if ((rc = fold__check_buf(c, op, buf, count, dtype, bytes))) return rc;
  if ((rc = check_peer_tag(c, op, peer, tag, recv))) return rc;
  if (fold__abort_asker(c))
    fold__progress(c);
  return fold__comm_failed(c);
}

/* What the user learns of a finished request (see fold_status in fold.h). */
static void fill_status(const fold_comm *c, const fold_request *r, int st, fold_status *s) {
  if (s == NULL)
    return;
  size_t es = r->esize ? r->esize : 1;
  s->source = r->kind == FOLD__REQ_SEND ? c->rank : r->kind == FOLD__REQ_RECV ? r->peer : FOLD_ANY_SOURCE;
  s->tag = r->kind == FOLD__REQ_TASK ? FOLD_ANY_TAG : r->tag;
  s->count = st != FOLD_OK || r->kind == FOLD__REQ_TASK ? 0 : (r->kind == FOLD__REQ_SEND ? r->bytes : r->got) / es;
}

/* The status of a finished request; records a message for failed sends,
 * whose cause may have been noticed by another rank's thread. Fills *status
 * (may be NULL) and frees r. */
static int finish(fold_comm *c, fold_request *r, const char *op, fold_status *status) {
  int st = r->status;
  /* A peer refused or lost: a report of why it went may be waiting in the
   * transports; the communicator's cause is the one to give (fail-stop). */
  if (st == FOLD_EPEER && r->peer >= 0 && r->kind != FOLD__REQ_TASK)
    st = fold__fail_for_lost(c, r->peer, r->kind == FOLD__REQ_SEND ? "send to" : "receive from");
  else if (st < 0 && fold__comm_failed(c))
    st = fold__comm_failed(c);
  fold__req_user_done(r);
  /* The transport's own message may be long overwritten (nonblocking
   * sends finish late), so say here what a refused send means. */
  if (st == FOLD_EMISMATCH && r->kind == FOLD__REQ_SEND && !fold__comm_failed(c))
    fold__error(c, st, "%s: rank %d: message of %zu bytes to rank %d (tag %d) is larger than the receive buffer",
                op, c->rank, r->bytes, r->peer, r->tag);
  else if (st < 0 && r->kind == FOLD__REQ_SEND && !fold__comm_failed(c))
    fold__error(c, st, "%s: rank %d: send to rank %d (tag %d) failed: %s", op, c->rank, r->peer, r->tag,
                fold_strerror(st));
  fill_status(c, r, st, status);
  fold__req_unref(r);
  return st;
}

static int isend_impl(const void *buf, size_t count, fold_dtype dtype, int peer, int tag, fold_comm *comm,
                      fold_request **req) {
  size_t bytes;
  if (req == NULL)
    return fold__error(comm, FOLD_EINVAL, "fold_isend: req is NULL");
  *req = NULL;
  int rc = check_p2p(comm, "fold_isend", buf, count, dtype, peer, tag, 0, &bytes);
  if (rc) return rc;
  rc = fold__isend_bytes(comm, buf, bytes, peer, FOLD__CTX_P2P, tag, req);
  if (rc == FOLD_OK) {
    (*req)->esize = fold_dtype_size(dtype);
    fold__req_user_give(*req);
  }
  return rc;
}

static int irecv_impl(void *buf, size_t count, fold_dtype dtype, int peer, int tag, fold_comm *comm,
                      fold_request **req) {
  size_t bytes;
  if (req == NULL)
    return fold__error(comm, FOLD_EINVAL, "fold_irecv: req is NULL");
  *req = NULL;
  int rc = check_p2p(comm, "fold_irecv", buf, count, dtype, peer, tag, 1, &bytes);
  if (rc) return rc;
  rc = fold__irecv_bytes(comm, buf, bytes, peer, FOLD__CTX_P2P, tag, req);
  if (rc == FOLD_OK) {
    (*req)->esize = fold_dtype_size(dtype);
    fold__req_user_give(*req);
  }
  return rc;
}

static int send_impl(const void *buf, size_t count, fold_dtype dtype, int peer, int tag, fold_comm *comm) {
  size_t bytes;
  fold_request *r = NULL; /* gcc -O3 cannot see that rc == 0 sets it */
  int rc = check_p2p(comm, "fold_send", buf, count, dtype, peer, tag, 0, &bytes);
  if (rc) return rc;
  if ((rc = fold__isend_bytes(comm, buf, bytes, peer, FOLD__CTX_P2P, tag, &r))) return rc;
  fold__wait_req(comm, r, "fold_send");
  return finish(comm, r, "fold_send", NULL);
}

static int recv_blocking(void *buf, size_t count, fold_dtype dtype, int peer, int tag, fold_comm *comm,
                         fold_status *st, const char *op) {
  size_t bytes;
  fold_request *r = NULL; /* gcc -O3 cannot see that rc == 0 sets it */
  int rc = check_p2p(comm, op, buf, count, dtype, peer, tag, 1, &bytes);
  if (rc) return rc;
  if ((rc = fold__irecv_bytes(comm, buf, bytes, peer, FOLD__CTX_P2P, tag, &r))) return rc;
  r->esize = fold_dtype_size(dtype);
  fold__wait_req(comm, r, op);
  return finish(comm, r, op, st);
}


/* One step of a simulated communicator: the simulator runs one event (all
 * ranks live in this thread, so nothing else would move them). */
static int sim_step(fold_comm *c) {
  return fold__engine_drive(c, NULL) < 0 ? fold__comm_failed(c) : 0;
}

static int test_impl(fold_request *req, int *done, fold_status *status, const char *op) {
  if (req == NULL || done == NULL)
    return fold__error(req ? req->comm : NULL, FOLD_EINVAL, "%s: %s is NULL", op, req ? "done" : "req");
  fold_comm *c = req->comm;
  *done = 0;
  int st = fold__req_done(req) ? 0 : fold__progress(c);
  if (!fold__req_done(req) && !st && fold__engine_virtual(c))
    st = sim_step(c);
  if (!fold__req_done(req)) {
    if (!st)
      return FOLD_OK;
    fold__req_complete(req, st); /* the communicator failed: nothing more will come */
  }
  *done = 1;
  return finish(c, req, op, status);
}

static int wait_impl(fold_request *req, fold_status *st) {
  if (req == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_wait: req is NULL");
  fold_comm *c = req->comm;
  fold__wait_req(c, req, "fold_wait");
  return finish(c, req, "fold_wait", st);
}

static int wait_for_impl(fold_request *req, double seconds, int *done, fold_status *st) {
  if (req == NULL || done == NULL)
    return fold__error(req ? req->comm : NULL, FOLD_EINVAL, "fold_wait_for: %s is NULL", req ? "done" : "req");
  fold_comm *c = req->comm;
  *done = 0;
  if (!(seconds >= 0))
    return fold__error(c, FOLD_EINVAL, "fold_wait_for: rank %d: seconds is %g (must be >= 0)", c->rank, seconds);
  int64_t ns = seconds >= 9.2e9 ? INT64_MAX : (int64_t)(seconds * 1e9);
  if (fold__wait_req_for(c, req, "fold_wait", ns) == FOLD__WAIT_STOPPED)
    return FOLD_OK;
  *done = 1;
  return finish(c, req, "fold_wait", st);
}

static int progress_impl(fold_comm *comm) {
  int rc = fold__check_comm(comm);
  if (rc) return rc;
  rc = fold__progress(comm);
  if (!rc && fold__engine_virtual(comm))
    rc = sim_step(comm);
  return rc;
}

static int iprobe_impl(int peer, int tag, fold_comm *comm, int *found, fold_status *st) {
  int rc = fold__check_comm(comm);
  if (rc) return rc;
  if (found == NULL)
    return fold__error(comm, FOLD_EINVAL, "fold_iprobe: rank %d: found is NULL", comm->rank);
  *found = 0;
  if ((rc = check_peer_tag(comm, "fold_iprobe", peer, tag, 1))) return rc;
  /* Look first, so that a message already here is seen without a poll;
   * then move traffic once (on the simulator: one event) and look again. */
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1 && (rc = progress_impl(comm)))
      return rc;
    if ((rc = fold__comm_failed(comm)))
      return rc;
    const fold__unexp *u = NULL;
    FOLD__LIST_FOR_EACH(const fold__unexp, q, &comm->unexp, link) {
      if (q->ctx == FOLD__CTX_P2P && fold__recv_wants(peer, tag, FOLD__CTX_P2P, q->src, q->tag)) {
        u = q;
        break;
      }
    }
    if (u) {
      *found = 1;
      if (st) *st = (fold_status){u->src, u->tag, u->bytes}; /* count in bytes: a probe has no dtype */
      return FOLD_OK;
    }
  }
  return FOLD_OK;
}

/* ---- the public calls: each holds the communicator against the progress
 * thread (fold__enter/fold__leave; nothing without FOLD_PROGRESS_THREAD) */

int fold_isend(const void *buf, size_t count, fold_dtype dtype, int peer, int tag, fold_comm *comm,
               fold_request **req) {
  fold__enter(comm);
  int rc = isend_impl(buf, count, dtype, peer, tag, comm, req);
  fold__leave(comm);
  return rc;
}

int fold_irecv(void *buf, size_t count, fold_dtype dtype, int peer, int tag, fold_comm *comm,
               fold_request **req) {
  fold__enter(comm);
  int rc = irecv_impl(buf, count, dtype, peer, tag, comm, req);
  fold__leave(comm);
  return rc;
}

int fold_send(const void *buf, size_t count, fold_dtype dtype, int peer, int tag, fold_comm *comm) {
  fold__enter(comm);
  int rc = send_impl(buf, count, dtype, peer, tag, comm);
  fold__leave(comm);
  return rc;
}

int fold_recv(void *buf, size_t count, fold_dtype dtype, int peer, int tag, fold_comm *comm) {
  fold__enter(comm);
  int rc = recv_blocking(buf, count, dtype, peer, tag, comm, NULL, "fold_recv");
  fold__leave(comm);
  return rc;
}

int fold_recv_status(void *buf, size_t count, fold_dtype dtype, int peer, int tag, fold_comm *comm,
                     fold_status *st) {
  fold__enter(comm);
  int rc = recv_blocking(buf, count, dtype, peer, tag, comm, st, "fold_recv_status");
  fold__leave(comm);
  return rc;
}

/* req is freed by the call: its communicator is read first. */
int fold_test(fold_request *req, int *done) {
  fold_comm *c = req ? req->comm : NULL;
  fold__enter(c);
  int rc = test_impl(req, done, NULL, "fold_test");
  fold__leave(c);
  return rc;
}

int fold_test_status(fold_request *req, int *done, fold_status *st) {
  fold_comm *c = req ? req->comm : NULL;
  fold__enter(c);
  int rc = test_impl(req, done, st, "fold_test_status");
  fold__leave(c);
  return rc;
}

int fold_wait(fold_request *req) { return fold_wait_status(req, NULL); }

int fold_wait_status(fold_request *req, fold_status *st) {
  fold_comm *c = req ? req->comm : NULL;
  fold__enter(c);
  int rc = wait_impl(req, st);
  fold__leave(c);
  return rc;
}

int fold_wait_for(fold_request *req, double seconds, int *done, fold_status *st) {
  fold_comm *c = req ? req->comm : NULL;
  fold__enter(c);
  int rc = wait_for_impl(req, seconds, done, st);
  fold__leave(c);
  return rc;
}

int fold_iprobe(int peer, int tag, fold_comm *comm, int *found, fold_status *st) {
  fold__enter(comm);
  int rc = iprobe_impl(peer, tag, comm, found, st);
  fold__leave(comm);
  return rc;
}

int fold_progress(fold_comm *comm) {
  fold__enter(comm);
  int rc = progress_impl(comm);
  fold__leave(comm);
  return rc;
}
