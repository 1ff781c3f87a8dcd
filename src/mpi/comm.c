/* comm.c — MPI communicators on fold communicators: the handle table, rank/size, dup, split, free, compare. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_impl.h"

/* Handle h is slot h of comms (0: MPI_COMM_NULL, never used). */
static fold__mpi_comm *comms;
static int ncomms;

fold__mpi_comm *fold__mpi_comm_get(MPI_Comm comm) {
  if (comm <= 0 || comm >= ncomms || comms[comm].fc == NULL)
    return NULL;
  return &comms[comm];
}

fold_comm *fold__mpi_comm_fc(MPI_Comm comm, const char *call, int *err) {
  fold__mpi_comm *c = fold__mpi_comm_get(comm);
  if (c != NULL)
    return c->fc;
  if (fold__mpi_state != 1)
    *err = fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_OTHER, call, "MPI is %s",
                           fold__mpi_state == 0 ? "not initialized (call MPI_Init first)" : "finalized");
  else
    *err = fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_COMM, call, "invalid communicator %d%s", comm,
                           comm == MPI_COMM_NULL ? " (MPI_COMM_NULL)" : "");
  return NULL;
}

int fold__mpi_comm_add(fold_comm *fc, int *world, int errh, MPI_Comm *out) {
  int h = 1;
  while (h < ncomms && comms[h].fc != NULL)
    h++;
  if (h >= ncomms) {
    int n = ncomms ? 2 * ncomms : 16;
    fold__mpi_comm *t = realloc(comms, sizeof(*t) * (size_t)n);
    if (t == NULL)
      return MPI_ERR_NO_MEM;
    memset(t + ncomms, 0, sizeof(*t) * (size_t)(n - ncomms));
    comms = t;
    if (ncomms == 0)
      h = 1;
    ncomms = n;
  }
  comms[h].fc = fc;
  comms[h].errh = errh;
  comms[h].size = fold_comm_size(fc);
  comms[h].world = world;
  comms[h].priv = NULL;
  comms[h].vseq = 0;
  *out = h;
  return MPI_SUCCESS;
}

void fold__mpi_comm_free_all(void) {
  /* children first, the world (handle 1) last */
  for (int h = ncomms - 1; h >= 1; h--)
    if (comms[h].fc) {
      fold_comm_destroy(comms[h].priv);
      fold_comm_destroy(comms[h].fc);
      free(comms[h].world);
      comms[h].fc = NULL;
    }
}

int MPI_Comm_rank(MPI_Comm comm, int *rank) {
  int err;
  fold_comm *fc = fold__mpi_comm_fc(comm, "MPI_Comm_rank", &err);
  if (fc == NULL)
    return err;
  if (rank == NULL)
    return fold__mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_rank", "rank is NULL");
  *rank = fold_comm_rank(fc);
  return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size) {
  int err;
  fold_comm *fc = fold__mpi_comm_fc(comm, "MPI_Comm_size", &err);
  if (fc == NULL)
    return err;
  if (size == NULL)
    return fold__mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_size", "size is NULL");
  *size = fold_comm_size(fc);
  return MPI_SUCCESS;
}

/* Register child nc of parent (made by a collective of parent's ranks): its
 * members' world ranks come from one allgather over nc. */
static int adopt(MPI_Comm parent, fold_comm *nc, const char *call, MPI_Comm *newcomm) {
  fold__mpi_comm *p = fold__mpi_comm_get(parent);
  int n = fold_comm_size(nc);
  int *wr = malloc(sizeof(int) * (size_t)n);
  if (wr == NULL) {
    fold_comm_destroy(nc);
    return fold__mpi_raise(parent, MPI_ERR_NO_MEM, call, "no memory for a communicator of %d ranks", n);
  }
  int me = p->world[fold_comm_rank(p->fc)];
  int rc = fold_allgather(&me, wr, 1, FOLD_INT32, nc);
  if (rc != FOLD_OK) {
    int err = fold__mpi_fold_error(parent, nc, rc, call, 0);
    free(wr);
    fold_comm_destroy(nc);
    return err;
  }
  if (fold__mpi_comm_add(nc, wr, p->errh, newcomm) != MPI_SUCCESS) {
    free(wr);
    fold_comm_destroy(nc);
    return fold__mpi_raise(parent, MPI_ERR_NO_MEM, call, "no memory for a communicator handle");
  }
  return MPI_SUCCESS;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
  int err;
  fold_comm *fc = fold__mpi_comm_fc(comm, "MPI_Comm_dup", &err), *nc = NULL;
  if (fc == NULL)
    return err;
  if (newcomm == NULL)
    return fold__mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_dup", "newcomm is NULL");
  int rc = fold_comm_dup(fc, &nc);
  if (rc != FOLD_OK)
    return fold__mpi_fold_error(comm, fc, rc, "MPI_Comm_dup", 0);
  return adopt(comm, nc, "MPI_Comm_dup", newcomm);
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
  int err;
  fold_comm *fc = fold__mpi_comm_fc(comm, "MPI_Comm_split", &err), *nc = NULL;
  if (fc == NULL)
    return err;
  if (newcomm == NULL)
    return fold__mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_split", "newcomm is NULL");
  if (color < 0 && color != MPI_UNDEFINED)
    return fold__mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_split", "color %d is negative (and not MPI_UNDEFINED)",
                           color);
  int rc = fold_comm_split(fc, color == MPI_UNDEFINED ? FOLD_UNDEFINED : color, key, &nc);
  if (rc != FOLD_OK)
    return fold__mpi_fold_error(comm, fc, rc, "MPI_Comm_split", 0);
  if (nc == NULL) {
    *newcomm = MPI_COMM_NULL;
    return MPI_SUCCESS;
  }
  return adopt(comm, nc, "MPI_Comm_split", newcomm);
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm) {
  int err;
  fold_comm *fc = fold__mpi_comm_fc(comm, "MPI_Comm_split_type", &err), *host = NULL, *nc = NULL;
  if (fc == NULL)
    return err;
  if (newcomm == NULL)
    return fold__mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_split_type", "newcomm is NULL");
  if (split_type != MPI_COMM_TYPE_SHARED && split_type != MPI_UNDEFINED)
    return fold__mpi_unsupported(comm, "MPI_Comm_split_type", "a split_type other than MPI_COMM_TYPE_SHARED");
  /* The host's ranks, then ordered by key (fold_comm_split_host orders by rank); MPI_UNDEFINED ranks take
   * part in both exchanges and keep nothing. */
  int rc = fold_comm_split_host(fc, &host);
  if (rc != FOLD_OK)
    return fold__mpi_fold_error(comm, fc, rc, "MPI_Comm_split_type", 0);
  rc = fold_comm_split(host, split_type == MPI_UNDEFINED ? FOLD_UNDEFINED : 0, key, &nc);
  if (rc != FOLD_OK) {
    err = fold__mpi_fold_error(comm, host, rc, "MPI_Comm_split_type", 0);
    fold_comm_destroy(host);
    return err;
  }
  fold_comm_destroy(host);
  if (nc == NULL) {
    *newcomm = MPI_COMM_NULL;
    return MPI_SUCCESS;
  }
  return adopt(comm, nc, "MPI_Comm_split_type", newcomm);
}

int MPI_Comm_free(MPI_Comm *comm) {
  if (comm == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Comm_free", "comm is NULL");
  fold__mpi_comm *c = fold__mpi_comm_get(*comm);
  if (c == NULL || *comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF)
    return fold__mpi_raise(c ? *comm : MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_free",
                           "communicator %d %s", *comm, c ? "is predefined: it cannot be freed" : "is not valid");
  fold_comm_destroy(c->priv);
  fold_comm_destroy(c->fc);
  free(c->world);
  c->fc = NULL;
  c->priv = NULL;
  c->world = NULL;
  *comm = MPI_COMM_NULL;
  return MPI_SUCCESS;
}

int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result) {
  fold__mpi_comm *a = fold__mpi_comm_get(comm1), *b = fold__mpi_comm_get(comm2);
  if (a == NULL || b == NULL || result == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, a && b ? MPI_ERR_ARG : MPI_ERR_COMM, "MPI_Comm_compare",
                           "invalid communicator (%d, %d) or NULL result", comm1, comm2);
  if (comm1 == comm2) {
    *result = MPI_IDENT;
    return MPI_SUCCESS;
  }
  if (a->size != b->size) {
    *result = MPI_UNEQUAL;
    return MPI_SUCCESS;
  }
  int same_order = 1, same_set = 1;
  for (int i = 0; i < a->size; i++) {
    if (a->world[i] != b->world[i])
      same_order = 0;
    int found = 0;
    for (int j = 0; j < b->size && !found; j++)
      found = a->world[i] == b->world[j];
    if (!found)
      same_set = 0;
  }
  *result = same_order ? MPI_CONGRUENT : same_set ? MPI_SIMILAR : MPI_UNEQUAL;
  return MPI_SUCCESS;
}

int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag) {
  static int tag_ub = INT_MAX, host = MPI_PROC_NULL, io = MPI_ANY_SOURCE, wtime_global = 0, universe, lastcode;
  int err;
  fold_comm *fc = fold__mpi_comm_fc(comm, "MPI_Comm_get_attr", &err);
  if (fc == NULL)
    return err;
  if (attribute_val == NULL || flag == NULL)
    return fold__mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_get_attr", "a NULL argument");
  int *v = NULL;
  switch (comm_keyval) {
  case MPI_TAG_UB: v = &tag_ub; break;
  case MPI_HOST: v = &host; break;
  case MPI_IO: v = &io; break;
  case MPI_WTIME_IS_GLOBAL: v = &wtime_global; break;
  case MPI_UNIVERSE_SIZE:
    universe = fold__mpi_comm_get(MPI_COMM_WORLD)->size;
    v = &universe;
    break;
  case MPI_LASTUSEDCODE:
    lastcode = MPI_ERR_LASTCODE;
    v = &lastcode;
    break;
  case MPI_APPNUM: break;
  default:
    return fold__mpi_raise(comm, MPI_ERR_KEYVAL, "MPI_Comm_get_attr",
                           "keyval %d is not a predefined attribute (user keyvals are not supported)", comm_keyval);
  }
  *flag = v != NULL;
  if (v)
    *(int **)attribute_val = v;
  return MPI_SUCCESS;
}

int MPI_Comm_test_inter(MPI_Comm comm, int *flag) {
  int err;
  if (fold__mpi_comm_fc(comm, "MPI_Comm_test_inter", &err) == NULL)
    return err;
  if (flag)
    *flag = 0;
  return MPI_SUCCESS;
}
