/* boot.h — one rendezvous in progress (fold_comm_init): its state, shared by init.c (transports) and rdv.c (the store). */
#ifndef FOLD_BOOT_H
#define FOLD_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include "bootstrap/store.h"
#include "core/internal.h"
#include "net/auth.h"
#include "transport/transport.h"

#define FOLD__BOOT_LIST_MAX 16 /* name at most this many ranks in a message */

/* Everything the rendezvous holds until it succeeds or is abandoned. */
typedef struct fold__boot {
  int rank, size;
  const char *fn;  /* the public call, for messages */
  const char *url; /* "callbacks" for fold_comm_init_store */
  fold__store_url u;
  fold__auth_key key;
  fold__store *store;
  fold__store_srv *srv; /* rank 0 serving the tcp store itself */
  char pfx[32];         /* "<size>.<round>/": keys of this rendezvous */
  int64_t t0, deadline; /* start, and start + FOLD_TIMEOUT */
  int64_t t_cards;      /* when every card was known (for the INFO line) */
  double timeout_s;
  void *tcp_state, *shm_state;
  fold__card *cards;
  int nchunks; /* keys "cards/<i>" rank 0 published the cards in */
  uint8_t *use_tcp, *use_shm;
  fold__rdv_watch watch; /* the waits for other ranks' keys */
} fold__boot;

/* Record "<fn>: rank R: <message>" in this thread's slot; returns rc. */
int fold__boot_fail(fold__boot *b, int rc, const char *fmt, ...) FOLD__PRINTF(3, 4);
/* The message a store (or other pre-comm) call left, prefixed with what
 * was being done (what may be NULL when the message says enough). */
int fold__boot_fail_store(fold__boot *b, int rc, const char *what);
/* "<pfx><what>/<r>", or "<pfx><what>" for r < 0. */
void fold__boot_key(const fold__boot *b, char *out, size_t cap, const char *what, int r);

/* The steps at the store (rdv.c), in order; each returns 0 or a negative
 * FOLD_E* with the message recorded (fold__boot_fail). */
/* Take this round's key prefix, publish "join/<rank>" (and count it in
 * "joined", but on a file store), start the watch. */
int fold__boot_enter_round(fold__boot *b);
/* Rank 0's nonce, and from it the job id (hex, for shared resources). */
int fold__boot_job_id(fold__boot *b, char *id, size_t cap);
/* Publish my card; rank 0 gathers every card and publishes them in a few
 * large values, which every other rank reads: O(size) requests in all.
 * Fills b->cards. */
int fold__boot_exchange_cards(fold__boot *b, const fold__card *me);
/* The final barrier, then the cleanup of the round's keys (best effort). */
int fold__boot_finish(fold__boot *b, int remove_dir);
/* After a timeout: leave the round deliberately (tcp store), so that our
 * close does not make the others report us gone. Keeps the message. */
void fold__boot_leave_timed_out(fold__boot *b);

/* fold_comm_init at url; remove_dir: the url is a file store directory
 * that fold_init made for this job, removed once the rendezvous is over;
 * guessed: the url was made from MASTER_ADDR/MASTER_PORT (a port that
 * torch.distributed may serve: a silent server there is taken for it). */
int fold__comm_init_url(fold_comm **comm, int rank, int size, const char *url, int remove_dir, int guessed);

#endif /* FOLD_BOOT_H */
