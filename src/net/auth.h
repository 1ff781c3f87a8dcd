/* auth.h — the challenge-response every TCP connection of a job runs first.
 *
 * Protocol (all integers little-endian), with K the 32-byte job key:
 *   server -> client  HELLO  "FOLDAUTH" | u32 version (1) | nonce_s[32]      (44 B)
 *   client -> server  PROOF  nonce_c[32] | u16 claim_len (<= 64) | claim |
 *                            HMAC-SHA256(K, "fold-c" | nonce_s | nonce_c | claim)
 *   server -> client  OK     HMAC-SHA256(K, "fold-s" | nonce_c | nonce_s | claim)
 *                  or NO     "FOLDAUTH refused" padded with zeros to 32 bytes,
 *                            then close (a bad proof or claim)
 * The claim says who the client is (e.g. "data rank 3", "store rank 1") and
 * is covered by both MACs. Either side closes the connection on a bad
 * magic, version, length, MAC or on its deadline: nothing is allocated from
 * a length the peer sent (the claim buffer is fixed-size). The client
 * reports FOLD_EAUTH when the server's reply is not the right MAC (NO
 * included), and FOLD_EPEER when the server hangs up before replying (it
 * may be shedding unproven connections under load: worth a retry).
 */
#ifndef FOLD_AUTH_H
#define FOLD_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define FOLD__AUTH_KEY 32
#define FOLD__AUTH_NONCE 32
#define FOLD__AUTH_MAC 32
#define FOLD__AUTH_CLAIM_MAX 64
#define FOLD__AUTH_HELLO_LEN (8 + 4 + FOLD__AUTH_NONCE)
#define FOLD__AUTH_PROOF_MAX (FOLD__AUTH_NONCE + 2 + FOLD__AUTH_CLAIM_MAX + FOLD__AUTH_MAC)

typedef struct fold__auth_key {
  uint8_t bytes[FOLD__AUTH_KEY];
  int from_token; /* 1 if derived from FOLD_JOB_TOKEN, 0 if from the store address */
} fold__auth_key;

/* Derive the job key: SHA-256 of "fold-token|" + token when token is non-empty,
 * else SHA-256 of "fold-store|" + store (documented in fold.h). */
void fold__auth_key_derive(fold__auth_key *k, const char *token, const char *store);

/* Server side, non-blocking, one state per accepted connection. */
typedef struct fold__auth_srv {
  int state;                                  /* internal */
  uint8_t nonce_s[FOLD__AUTH_NONCE];
  uint8_t out[FOLD__AUTH_HELLO_LEN + FOLD__AUTH_MAC];
  size_t out_len, out_off;
  uint8_t in[FOLD__AUTH_PROOF_MAX];
  size_t in_len;
  char claim[FOLD__AUTH_CLAIM_MAX + 1];       /* valid (NUL-terminated) once done */
  int64_t deadline_ns;                        /* CLOCK_MONOTONIC */
} fold__auth_srv;

/* Begin: make the nonce and queue HELLO. Returns 0 or FOLD_ESYS. */
int fold__auth_srv_start(fold__auth_srv *a, int64_t deadline_ns);
/* Advance on a non-blocking fd (call when readable/writable or periodically).
 * Returns 1 when the client is proven and OK has been fully written (claim
 * is then valid), 0 while pending, FOLD_EAUTH on a bad proof or malformed
 * message, FOLD_ETIMEDOUT past the deadline, FOLD_EPEER if the client
 * closed. The caller closes fd on any negative result. */
int fold__auth_srv_step(fold__auth_srv *a, int fd, const fold__auth_key *k, int64_t now_ns);
/* What the server should poll for next: POLLIN or POLLOUT. */
int fold__auth_srv_events(const fold__auth_srv *a);

/* Client side, non-blocking, one state per connection: the same protocol
 * as fold__auth_client, driven by the caller's poll loop (no deadline of
 * its own: the caller decides how long a connection may wait, e.g. for
 * its turn in a flooded accept queue). */
typedef struct fold__auth_cli {
  int state;                                  /* internal */
  uint8_t nonce_s[FOLD__AUTH_NONCE];
  uint8_t buf[FOLD__AUTH_PROOF_MAX];          /* HELLO, then PROOF, then OK */
  size_t len, off;
  size_t claim_len;
  char claim[FOLD__AUTH_CLAIM_MAX + 1];
  int got_hello;                              /* the server greeted: it accepted us */
} fold__auth_cli;

/* Begin as `claim`. Returns 0 or FOLD_EINVAL (a claim too long or not
 * printable: a caller bug). */
int fold__auth_cli_start(fold__auth_cli *a, const char *claim);
/* Advance on a non-blocking fd (call when it is ready or periodically).
 * Returns 1 when both sides are proven (nothing past OK was read), 0 while
 * pending, FOLD_EAUTH for a wrong hello or server proof, FOLD_EPEER when
 * the server closed or reset before answering, FOLD_ESYS otherwise. */
int fold__auth_cli_step(fold__auth_cli *a, int fd, const fold__auth_key *k);
/* What the client should poll for next: POLLIN or POLLOUT. */
int fold__auth_cli_events(const fold__auth_cli *a);

/* Client side, blocking (poll) until deadline_ns (CLOCK_MONOTONIC) on fd
 * (blocking or not). Returns 0 when both sides are proven; FOLD_EAUTH,
 * FOLD_ETIMEDOUT, FOLD_EPEER or FOLD_ESYS otherwise. */
int fold__auth_client(int fd, const fold__auth_key *k, const char *claim, int64_t deadline_ns);

#endif /* FOLD_AUTH_H */
