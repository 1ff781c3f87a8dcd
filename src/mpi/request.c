/* request.c — MPI requests over fold requests: the handle table, Wait/Test and their all/any/some forms. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_impl.h"

typedef struct {
  int used;
  int done;     /* fold's request completed (and was freed by fold) */
  int detached; /* MPI_Request_free before completion: completed at MPI_Finalize */
  int rc;       /* fold's status once done */
  fold_status st;
  fold__mpi_req_init in;
} req_t;

/* Handle h is slot h (0: MPI_REQUEST_NULL, never used). */
static req_t *reqs;
static int nreqs;
static int free_hint = 1;

void fold__mpi_status_empty(MPI_Status *st) {
  if (st == MPI_STATUS_IGNORE)
    return;
  st->MPI_SOURCE = MPI_ANY_SOURCE;
  st->MPI_TAG = MPI_ANY_TAG;
  st->MPI_ERROR = MPI_SUCCESS;
  st->fold_cancelled_ = 0;
  st->fold_bytes_ = 0;
}

int fold__mpi_req_add(const fold__mpi_req_init *init, MPI_Request *out) {
  int h = free_hint;
  while (h < nreqs && reqs[h].used)
    h++;
  if (h >= nreqs) {
    int n = nreqs ? 2 * nreqs : 64;
    req_t *t = realloc(reqs, sizeof(*t) * (size_t)n);
    if (t == NULL) {
        if (init->fr)
        fold_wait(init->fr);
      for (int i = 0; i < init->nmany; i++)
        fold_wait(init->many[i]);
      free(init->scratch);
      free(init->many);
      free(init->many_recv);
      return fold__mpi_raise(init->comm, MPI_ERR_NO_MEM, init->call, "no memory for a request");
    }
    memset(t + nreqs, 0, sizeof(*t) * (size_t)(n - nreqs));
    reqs = t;
    if (h < 1)
      h = 1;
    nreqs = n;
  }
  req_t *r = &reqs[h];
  memset(r, 0, sizeof *r);
  r->used = 1;
  r->in = *init;
  r->done = init->fr == NULL && init->nmany == 0;
  free_hint = h + 1;
  *out = h;
  return MPI_SUCCESS;
}

static req_t *get(MPI_Request h) { return h > 0 && h < nreqs && reqs[h].used ? &reqs[h] : NULL; }

/* Drive r once (block = 1: until done). */
static void poll(req_t *r, int block) {
  if (r->done)
    return;
  if (r->in.nmany > 0) {
    /* a compound request: drive every transfer still pending; keep the first failure */
    int pending = 0;
    for (int i = 0; i < r->in.nmany; i++) {
      if (r->in.many[i] == NULL)
        continue;
      int d = 1;
      fold_status st;
      int rc = block ? fold_wait_status(r->in.many[i], &st) : fold_test_status(r->in.many[i], &d, &st);
      if (!d) {
        pending = 1;
        continue;
      }
      r->in.many[i] = NULL;
      if (rc != FOLD_OK && r->rc == FOLD_OK) {
        r->rc = rc;
        r->in.is_recv = r->in.many_recv[i];
      }
    }
    if (!pending) {
      r->done = 1;
      if (r->rc == FOLD_OK && r->in.move_len)
        memmove(r->in.move_dst, r->in.move_src, r->in.move_len);
    }
    return;
  }
  int done = 0;
  r->rc = block ? (done = 1, fold_wait_status(r->in.fr, &r->st)) : fold_test_status(r->in.fr, &done, &r->st);
  if (done) {
    r->done = 1;
    r->in.fr = NULL;
    if (r->rc == FOLD_OK && r->in.move_len)
      memmove(r->in.move_dst, r->in.move_src, r->in.move_len);
  }
}

/* Fill *st from done request r, free its slot, and return its MPI status code (raised on error). */
static int release(MPI_Request *h, MPI_Status *st) {
  req_t *r = &reqs[*h];
  int err = MPI_SUCCESS;
  if (r->rc != FOLD_OK) {
    fold__mpi_comm *c = fold__mpi_comm_get(r->in.comm);
    /* a v-collective's transfers ran on the communicator's private duplicate, whose message names them */
    fold_comm *fc = c ? (r->in.nmany && c->priv ? c->priv : c->fc) : NULL;
    err = fold__mpi_fold_error(r->in.comm, fc, r->rc, r->in.call, r->in.is_recv);
  }
  if (st != MPI_STATUS_IGNORE) {
    fold__mpi_status_empty(st);
    if (!r->in.proc_null && r->in.is_recv && r->in.nmany == 0) {
      st->MPI_SOURCE = r->st.source;
      st->MPI_TAG = r->st.tag;
      st->fold_bytes_ = (long long)r->st.count; /* receives count bytes: they are FOLD_UINT8 */
    }
    st->MPI_ERROR = err;
  }
  free(r->in.scratch);
  free(r->in.many);
  free(r->in.many_recv);
  r->used = 0;
  if (*h < free_hint)
    free_hint = *h;
  *h = MPI_REQUEST_NULL;
  return err;
}

static int bad_request(const char *call, MPI_Request h) {
  return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_REQUEST, call, "request %d is not a valid request", h);
}

int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  if (request == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Wait", "request is NULL");
  if (*request == MPI_REQUEST_NULL) {
    fold__mpi_status_empty(status);
    return MPI_SUCCESS;
  }
  req_t *r = get(*request);
  if (r == NULL || r->detached)
    return bad_request("MPI_Wait", *request);
  poll(r, 1);
  return release(request, status);
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
  if (request == NULL || flag == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Test", "a NULL argument");
  if (*request == MPI_REQUEST_NULL) {
    *flag = 1;
    fold__mpi_status_empty(status);
    return MPI_SUCCESS;
  }
  req_t *r = get(*request);
  if (r == NULL || r->detached)
    return bad_request("MPI_Test", *request);
  poll(r, 0);
  *flag = r->done;
  return r->done ? release(request, status) : MPI_SUCCESS;
}

/* Waitall and Testall: complete (test) every request; on a failure, MPI_ERR_IN_STATUS with each status's
 * MPI_ERROR set. */
static int all(const char *call, int count, MPI_Request reqv[], MPI_Status stv[], int block, int *flag) {
  if (count < 0 || (count > 0 && reqv == NULL))
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, call, "bad count %d or NULL requests", count);
  int all_done = 1;
  for (int i = 0; i < count; i++) {
    if (reqv[i] == MPI_REQUEST_NULL)
      continue;
    req_t *r = get(reqv[i]);
    if (r == NULL || r->detached)
      return bad_request(call, reqv[i]);
    poll(r, block);
    all_done &= r->done;
  }
  if (flag)
    *flag = all_done;
  if (!all_done)
    return MPI_SUCCESS;
  int failed = 0, comm = MPI_COMM_WORLD;
  for (int i = 0; i < count; i++) {
    MPI_Status tmp, *st = stv == MPI_STATUSES_IGNORE ? &tmp : &stv[i];
    if (reqv[i] == MPI_REQUEST_NULL) {
      fold__mpi_status_empty(st);
      continue;
    }
    /* raise each failure with MPI_ERRORS_RETURN semantics here; the handler runs once below */
    req_t *r = &reqs[reqv[i]];
    if (r->rc != FOLD_OK) {
      fold__mpi_comm *c = fold__mpi_comm_get(r->in.comm);
      int saved = c ? c->errh : MPI_ERRORS_RETURN;
      if (c)
        c->errh = MPI_ERRORS_RETURN;
      comm = r->in.comm;
      release(&reqv[i], st);
      if (c)
        c->errh = saved;
      failed = 1;
    } else {
      release(&reqv[i], st);
    }
  }
  if (!failed)
    return MPI_SUCCESS;
  return fold__mpi_raise(comm, MPI_ERR_IN_STATUS, call, "a request failed: see each status's MPI_ERROR");
}

int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]) {
  return all("MPI_Waitall", count, array_of_requests, array_of_statuses, 1, NULL);
}

int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[]) {
  if (flag == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Testall", "flag is NULL");
  return all("MPI_Testall", count, array_of_requests, array_of_statuses, 0, flag);
}

/* The first done request's index (after one test pass), -1 if none is done, or -2 if none is active. */
static int any_pass(const char *call, int count, MPI_Request reqv[], int *err) {
  int active = 0;
  *err = MPI_SUCCESS;
  for (int i = 0; i < count; i++) {
    if (reqv[i] == MPI_REQUEST_NULL)
      continue;
    req_t *r = get(reqv[i]);
    if (r == NULL || r->detached) {
      *err = bad_request(call, reqv[i]);
      return -2;
    }
    active = 1;
    poll(r, 0);
    if (r->done)
      return i;
  }
  return active ? -1 : -2;
}

/* Pause between passes of Waitany/Waitsome: yield at first, then sleep 20 us, never spinning a core that a
 * co-scheduled rank needs. Returns an error raised on MPI_COMM_WORLD once FOLD_TIMEOUT has passed since pass 0. */
static int pause_pass(int pass, double *deadline, const char *call) {
  if (pass == 0)
    *deadline = MPI_Wtime() + fold__mpi_timeout_s();
  else if (MPI_Wtime() > *deadline)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_OTHER, call,
                           "no request completed within FOLD_TIMEOUT (%g s)", fold__mpi_timeout_s());
  if (pass < 100) {
    sched_yield();
    return MPI_SUCCESS;
  }
  struct timespec ts = {0, 20000};
  nanosleep(&ts, NULL);
  return MPI_SUCCESS;
}

int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag, MPI_Status *status) {
  if (count < 0 || (count > 0 && array_of_requests == NULL) || index == NULL || flag == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Testany", "bad count %d or a NULL argument", count);
  int err, i = any_pass("MPI_Testany", count, array_of_requests, &err);
  if (err)
    return err;
  *flag = i != -1;
  *index = MPI_UNDEFINED;
  if (i == -2)
    fold__mpi_status_empty(status);
  if (i < 0)
    return MPI_SUCCESS;
  *index = i;
  return release(&array_of_requests[i], status);
}

int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status) {
  if (count < 0 || (count > 0 && array_of_requests == NULL) || index == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Waitany", "bad count %d or a NULL argument", count);
  double deadline = 0;
  for (int pass = 0;; pass++) {
    int err, i = any_pass("MPI_Waitany", count, array_of_requests, &err);
    if (err)
      return err;
    if (i == -2) {
      *index = MPI_UNDEFINED;
      fold__mpi_status_empty(status);
      return MPI_SUCCESS;
    }
    if (i >= 0) {
      *index = i;
      return release(&array_of_requests[i], status);
    }
    if ((err = pause_pass(pass, &deadline, "MPI_Waitany"))) /* each fold_test drives progress */
      return err;
  }
}

static int some(const char *call, int incount, MPI_Request reqv[], int *outcount, int idx[], MPI_Status stv[],
                int block) {
  if (incount < 0 || (incount > 0 && reqv == NULL) || outcount == NULL || (incount > 0 && idx == NULL))
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, call, "bad count %d or a NULL argument", incount);
  double deadline = 0;
  for (int pass = 0;; pass++) {
    int active = 0, n = 0;
    for (int i = 0; i < incount; i++) {
      if (reqv[i] == MPI_REQUEST_NULL)
        continue;
      req_t *r = get(reqv[i]);
      if (r == NULL || r->detached)
        return bad_request(call, reqv[i]);
      active = 1;
      poll(r, 0);
      if (r->done)
        n++;
    }
    if (!active) {
      *outcount = MPI_UNDEFINED;
      return MPI_SUCCESS;
    }
    if (n > 0 || !block) {
      int k = 0, err = MPI_SUCCESS;
      for (int i = 0; i < incount; i++)
        if (reqv[i] != MPI_REQUEST_NULL && reqs[reqv[i]].done) {
          idx[k] = i;
          int e = release(&reqv[i], stv == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &stv[k]);
          if (e)
            err = e;
          k++;
        }
      *outcount = k;
      return err;
    }
    int err = pause_pass(pass, &deadline, call);
    if (err)
      return err;
  }
}

int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                 MPI_Status array_of_statuses[]) {
  return some("MPI_Waitsome", incount, array_of_requests, outcount, array_of_indices, array_of_statuses, 1);
}

int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                 MPI_Status array_of_statuses[]) {
  return some("MPI_Testsome", incount, array_of_requests, outcount, array_of_indices, array_of_statuses, 0);
}

int MPI_Request_free(MPI_Request *request) {
  if (request == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Request_free", "request is NULL");
  req_t *r = get(*request);
  if (r == NULL || r->detached)
    return bad_request("MPI_Request_free", *request);
  poll(r, 0);
  if (r->done) {
    fold__mpi_comm *c = fold__mpi_comm_get(r->in.comm);
    int saved = c ? c->errh : 0;
    if (c)
      c->errh = MPI_ERRORS_RETURN; /* a freed request's failure is reported to no one (MPI's rule) */
    release(request, MPI_STATUS_IGNORE);
    if (c)
      c->errh = saved;
    return MPI_SUCCESS;
  }
  r->detached = 1;
  *request = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

void fold__mpi_req_drain(void) {
  for (int h = 1; h < nreqs; h++)
    if (reqs[h].used && reqs[h].detached) {
      poll(&reqs[h], 1);
      free(reqs[h].in.scratch);
      free(reqs[h].in.many);
      free(reqs[h].in.many_recv);
      reqs[h].used = 0;
    }
}
