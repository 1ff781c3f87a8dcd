/* p2p.c — the public point-to-point calls and request completion. */
#include "core/internal.h"
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

/* Checks shared by the four public calls; *bytes gets the message size. */
static int check_p2p(fold_comm *c, const char *op, const void *buf, size_t count, fold_dtype dtype, int peer,
                     int tag, size_t *bytes) {
  int rc = fold__check_comm(c);
  if (rc) return rc;
  if ((rc = fold__check_buf(c, op, buf, count, dtype, bytes))) return rc;
  if ((rc = fold__check_peer(c, op, peer))) return rc;
  if (tag < 0)
    return fold__error(c, FOLD_EINVAL, "%s: rank %d: tag %d is negative", op, c->rank, tag);
  if (atomic_load_explicit(&c->abort_req, memory_order_acquire))
    fold__progress(c);
  return fold__comm_failed(c);
}

/* The status of a finished request; records a message for failed sends,
 * whose cause may have been noticed by another rank's thread. */
static int finish(fold_comm *c, fold_request *r, const char *op) {
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
  fold__req_unref(r);
  return st;
}

int fold_isend(const void *buf, size_t count, fold_dtype dtype, int peer, int tag, fold_comm *comm,
               fold_request **req) {
  size_t bytes;
  if (req == NULL)
    return fold__error(comm, FOLD_EINVAL, "fold_isend: req is NULL");
  *req = NULL;
  int rc = check_p2p(comm, "fold_isend", buf, count, dtype, peer, tag, &bytes);
  if (rc) return rc;
  rc = fold__isend_bytes(comm, buf, bytes, peer, FOLD__CTX_P2P, tag, req);
  if (rc == FOLD_OK) fold__req_user_give(*req);
  return rc;
}

int fold_irecv(void *buf, size_t count, fold_dtype dtype, int peer, int tag, fold_comm *comm,
               fold_request **req) {
  size_t bytes;
  if (req == NULL)
    return fold__error(comm, FOLD_EINVAL, "fold_irecv: req is NULL");
  *req = NULL;
  int rc = check_p2p(comm, "fold_irecv", buf, count, dtype, peer, tag, &bytes);
  if (rc) return rc;
  rc = fold__irecv_bytes(comm, buf, bytes, peer, FOLD__CTX_P2P, tag, req);
  if (rc == FOLD_OK) fold__req_user_give(*req);
  return rc;
}

int fold_send(const void *buf, size_t count, fold_dtype dtype, int peer, int tag, fold_comm *comm) {
  size_t bytes;
  fold_request *r = NULL; /* gcc -O3 cannot see that rc == 0 sets it */
  int rc = check_p2p(comm, "fold_send", buf, count, dtype, peer, tag, &bytes);
  if (rc) return rc;
  if ((rc = fold__isend_bytes(comm, buf, bytes, peer, FOLD__CTX_P2P, tag, &r))) return rc;
  fold__wait_req(comm, r, "fold_send");
  return finish(comm, r, "fold_send");
}

int fold_recv(void *buf, size_t count, fold_dtype dtype, int peer, int tag, fold_comm *comm) {
  size_t bytes;
  fold_request *r = NULL; /* gcc -O3 cannot see that rc == 0 sets it */
  int rc = check_p2p(comm, "fold_recv", buf, count, dtype, peer, tag, &bytes);
  if (rc) return rc;
  if ((rc = fold__irecv_bytes(comm, buf, bytes, peer, FOLD__CTX_P2P, tag, &r))) return rc;
  fold__wait_req(comm, r, "fold_recv");
  return finish(comm, r, "fold_recv");
}

int fold_test(fold_request *req, int *done) {
  if (req == NULL || done == NULL)
    return fold__error(req ? req->comm : NULL, FOLD_EINVAL, "fold_test: %s is NULL", req ? "done" : "req");
  fold_comm *c = req->comm;
  *done = 0;
  int st = fold__req_done(req) ? 0 : fold__progress(c);
  if (!fold__req_done(req) && !st && c->sim_drive)
    st = c->sim_drive(c, NULL) < 0 ? fold__comm_failed(c) : 0; /* one simulator event */
  if (!fold__req_done(req)) {
    if (!st)
      return FOLD_OK;
    fold__req_complete(req, st); /* the communicator failed: nothing more will come */
  }
  *done = 1;
  return finish(c, req, "fold_test");
}

int fold_wait(fold_request *req) {
  if (req == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_wait: req is NULL");
  fold_comm *c = req->comm;
  fold__wait_req(c, req, "fold_wait");
  return finish(c, req, "fold_wait");
}
