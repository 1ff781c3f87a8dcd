/* auth.c — HMAC-SHA256 challenge-response run first on every TCP connection of a job (see auth.h). */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "net/auth.h"
#include "net/fdio.h"
#include "core/internal.h"

#define AUTH_MAGIC "FOLDAUTH"
#define AUTH_VERSION 1u
/* Fixed part of PROOF before the claim: nonce_c and the u16 claim length. */
#define PROOF_HEAD (FOLD__AUTH_NONCE + 2)

enum { SRV_HELLO = 0, SRV_PROOF = 1, SRV_OK = 2, SRV_DONE = 3, SRV_FAILED = 4 };

void fold__auth_key_derive(fold__auth_key *k, const char *token, const char *store) {
  /* Domain-separated so that a token can never collide with a store address. */
  int from_token = token != NULL && token[0] != '\0';
  const char *prefix = from_token ? "fold-token|" : "fold-store|";
  const char *text = from_token ? token : (store ? store : "");
  unsigned int len = 0;
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  int ok = md != NULL && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
           EVP_DigestUpdate(md, prefix, strlen(prefix)) == 1 &&
           EVP_DigestUpdate(md, text, strlen(text)) == 1 && EVP_DigestFinal_ex(md, k->bytes, &len) == 1;
  EVP_MD_CTX_free(md);
  if (!ok || len != FOLD__AUTH_KEY) {
    /* libcrypto cannot hash (out of memory): a key of zeros still only
     * matches peers that failed the same way, and authentication with it
     * is logged so the cause is visible. */
    memset(k->bytes, 0, sizeof k->bytes);
    fold__log(FOLD__LOG_WARN, -1, "auth: SHA-256 failed; job key is degraded");
  }
  k->from_token = from_token;
}

/* mac = HMAC-SHA256(K, label | a | b | claim), a and b are nonces. */
static int auth_mac(const fold__auth_key *k, const char *label, const uint8_t *a, const uint8_t *b,
                    const char *claim, size_t claim_len, uint8_t mac[FOLD__AUTH_MAC]) {
  uint8_t msg[6 + 2 * FOLD__AUTH_NONCE + FOLD__AUTH_CLAIM_MAX];
  if (claim_len > FOLD__AUTH_CLAIM_MAX || strlen(label) != 6)
    return FOLD_EINTERNAL;
  size_t n = 0;
  memcpy(msg + n, label, 6), n += 6;
  memcpy(msg + n, a, FOLD__AUTH_NONCE), n += FOLD__AUTH_NONCE;
  memcpy(msg + n, b, FOLD__AUTH_NONCE), n += FOLD__AUTH_NONCE;
  memcpy(msg + n, claim, claim_len), n += claim_len;
  unsigned int mlen = 0;
  if (HMAC(EVP_sha256(), k->bytes, FOLD__AUTH_KEY, msg, n, mac, &mlen) == NULL || mlen != FOLD__AUTH_MAC)
    return FOLD_ESYS;
  return 0;
}

static void put_u32le(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32le(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A claim is printable ASCII so that it can be logged as it is. */
static int claim_ok(const uint8_t *c, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (c[i] < 0x20 || c[i] > 0x7e)
      return 0;
  return 1;
}

/* ---- server side ------------------------------------------------------- */

int fold__auth_srv_start(fold__auth_srv *a, int64_t deadline_ns) {
  memset(a, 0, sizeof *a);
  a->deadline_ns = deadline_ns;
  if (RAND_bytes(a->nonce_s, FOLD__AUTH_NONCE) != 1) {
    a->state = SRV_FAILED;
    return FOLD_ESYS;
  }
  memcpy(a->out, AUTH_MAGIC, 8);
  put_u32le(a->out + 8, AUTH_VERSION);
  memcpy(a->out + 12, a->nonce_s, FOLD__AUTH_NONCE);
  a->out_len = FOLD__AUTH_HELLO_LEN;
  a->out_off = 0;
  a->state = SRV_HELLO;
  return 0;
}

int fold__auth_srv_events(const fold__auth_srv *a) {
  return (a->state == SRV_HELLO || a->state == SRV_OK) ? POLLOUT : POLLIN;
}

/* Nonblocking I/O of the handshake's buffers, server and client alike:
 * 1 when buf[0, want) is all in (or out), 0 on EAGAIN, <0 on a close
 * (FOLD_EPEER) or an error. Never reads past want: after OK the same
 * connection carries the next protocol, whose bytes must stay in the socket. */
static int nb_recv(int fd, uint8_t *buf, size_t *have, size_t want) {
  while (*have < want) {
    ssize_t r = recv(fd, buf + *have, want - *have, MSG_DONTWAIT);
    if (r > 0) {
      *have += (size_t)r;
      continue;
    }
    if (r == 0)
      return FOLD_EPEER;
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      return 0;
    return errno == ECONNRESET ? FOLD_EPEER : FOLD_ESYS;
  }
  return 1;
}

static int nb_send(int fd, const uint8_t *buf, size_t *off, size_t len) {
  while (*off < len) {
    ssize_t w = send(fd, buf + *off, len - *off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      *off += (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return 0;
    return (w < 0 && (errno == EPIPE || errno == ECONNRESET)) ? FOLD_EPEER : FOLD_ESYS;
  }
  return 1;
}

/* Write what is left of a->out; 1 when all is out, 0 on EAGAIN, <0 error. */
static int srv_flush(fold__auth_srv *a, int fd) { return nb_send(fd, a->out, &a->out_off, a->out_len); }

/* Refuse a bad PROOF with a reply that cannot be the OK MAC, before the
 * caller closes: the client then tells a wrong key (FOLD_EAUTH) from a
 * server that hung up for another reason, such as dropping an unproven
 * connection under load (FOLD_EPEER, worth a retry). Best effort: 32 bytes
 * into a socket whose send buffer holds nothing else. It reveals nothing
 * the close would not. */
static void srv_refuse(int fd) {
  static const uint8_t no[FOLD__AUTH_MAC] = "FOLDAUTH refused";
  ssize_t w = send(fd, no, sizeof no, MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)w;
}

/* Read PROOF without reading past it: after OK the same connection carries
 * the next protocol, whose bytes must stay in the socket. */
static int srv_read_proof(fold__auth_srv *a, int fd, const fold__auth_key *k) {
  for (;;) {
    size_t want = PROOF_HEAD;
    if (a->in_len >= PROOF_HEAD) {
      size_t claim_len = (size_t)a->in[FOLD__AUTH_NONCE] | (size_t)a->in[FOLD__AUTH_NONCE + 1] << 8;
      if (claim_len > FOLD__AUTH_CLAIM_MAX) {
        srv_refuse(fd);
        return FOLD_EAUTH;
      }
      want = PROOF_HEAD + claim_len + FOLD__AUTH_MAC;
    }
    if (a->in_len == want)
      break;
    int rc = nb_recv(fd, a->in, &a->in_len, want);
    if (rc <= 0)
      return rc;
  }
  const uint8_t *nonce_c = a->in;
  size_t claim_len = a->in_len - PROOF_HEAD - FOLD__AUTH_MAC;
  const uint8_t *claim = a->in + PROOF_HEAD;
  const uint8_t *mac = claim + claim_len;
  uint8_t want_mac[FOLD__AUTH_MAC];
  int rc = auth_mac(k, "fold-c", a->nonce_s, nonce_c, (const char *)claim, claim_len, want_mac);
  if (rc < 0)
    return rc;
  if (CRYPTO_memcmp(want_mac, mac, FOLD__AUTH_MAC) != 0 || !claim_ok(claim, claim_len)) {
    srv_refuse(fd);
    return FOLD_EAUTH;
  }
  memcpy(a->claim, claim, claim_len);
  a->claim[claim_len] = '\0';
  rc = auth_mac(k, "fold-s", nonce_c, a->nonce_s, a->claim, claim_len, a->out);
  if (rc < 0)
    return rc;
  a->out_len = FOLD__AUTH_MAC;
  a->out_off = 0;
  return 1;
}

int fold__auth_srv_step(fold__auth_srv *a, int fd, const fold__auth_key *k, int64_t now_ns) {
  int rc = 0;
  if (a->state == SRV_DONE)
    return 1;
  if (a->state == SRV_FAILED)
    return FOLD_EAUTH;
  if (a->state == SRV_HELLO) {
    rc = srv_flush(a, fd);
    if (rc == 1)
      a->state = SRV_PROOF, a->in_len = 0;
  }
  if (rc >= 0 && a->state == SRV_PROOF) {
    rc = srv_read_proof(a, fd, k);
    if (rc == 1)
      a->state = SRV_OK;
  }
  if (rc >= 0 && a->state == SRV_OK) {
    rc = srv_flush(a, fd);
    if (rc == 1) {
      a->state = SRV_DONE;
      return 1;
    }
  }
  if (rc < 0) {
    a->state = SRV_FAILED;
    a->claim[0] = '\0';
    return rc;
  }
  if (now_ns > a->deadline_ns) {
    a->state = SRV_FAILED;
    return FOLD_ETIMEDOUT;
  }
  return 0;
}

/* ---- client side ------------------------------------------------------- */

enum { CLI_HELLO = 0, CLI_PROOF = 1, CLI_OK = 2, CLI_DONE = 3, CLI_FAILED = 4 };

int fold__auth_cli_start(fold__auth_cli *a, const char *claim) {
  memset(a, 0, sizeof *a);
  size_t n = claim ? strlen(claim) : 0;
  if (n > FOLD__AUTH_CLAIM_MAX || !claim_ok((const uint8_t *)claim, n)) {
    a->state = CLI_FAILED;
    return FOLD_EINVAL;
  }
  if (n)
    memcpy(a->claim, claim, n);
  a->claim_len = n;
  a->state = CLI_HELLO;
  return 0;
}

int fold__auth_cli_events(const fold__auth_cli *a) { return a->state == CLI_PROOF ? POLLOUT : POLLIN; }

/* Read up to `want` bytes into a->buf (nb_recv). */
static int cli_fill(fold__auth_cli *a, int fd, size_t want) { return nb_recv(fd, a->buf, &a->len, want); }

static int cli_step(fold__auth_cli *a, int fd, const fold__auth_key *k) {
  int rc;
  if (a->state == CLI_HELLO) {
    if ((rc = cli_fill(a, fd, FOLD__AUTH_HELLO_LEN)) <= 0)
      return rc;
    a->got_hello = 1;
    if (memcmp(a->buf, AUTH_MAGIC, 8) != 0 || get_u32le(a->buf + 8) != AUTH_VERSION)
      return FOLD_EAUTH;
    memcpy(a->nonce_s, a->buf + 12, FOLD__AUTH_NONCE);
    uint8_t *nonce_c = a->buf; /* PROOF replaces HELLO in buf */
    if (RAND_bytes(nonce_c, FOLD__AUTH_NONCE) != 1)
      return FOLD_ESYS;
    a->buf[FOLD__AUTH_NONCE] = (uint8_t)a->claim_len;
    a->buf[FOLD__AUTH_NONCE + 1] = (uint8_t)(a->claim_len >> 8);
    memcpy(a->buf + PROOF_HEAD, a->claim, a->claim_len);
    rc = auth_mac(k, "fold-c", a->nonce_s, nonce_c, a->claim, a->claim_len, a->buf + PROOF_HEAD + a->claim_len);
    if (rc < 0)
      return rc;
    a->len = PROOF_HEAD + a->claim_len + FOLD__AUTH_MAC;
    a->off = 0;
    a->state = CLI_PROOF;
  }
  if (a->state == CLI_PROOF) {
    if ((rc = nb_send(fd, a->buf, &a->off, a->len)) <= 0)
      return rc;
    /* keep nonce_c (the first bytes of PROOF) for the server's MAC */
    uint8_t nonce_c[FOLD__AUTH_NONCE];
    memcpy(nonce_c, a->buf, sizeof nonce_c);
    rc = auth_mac(k, "fold-s", nonce_c, a->nonce_s, a->claim, a->claim_len, a->buf + FOLD__AUTH_MAC);
    if (rc < 0)
      return rc;
    a->len = 0;
    a->state = CLI_OK;
  }
  if (a->state == CLI_OK) {
    /* buf[0, 32): the server's answer; buf[32, 64): the MAC it must be */
    if ((rc = cli_fill(a, fd, FOLD__AUTH_MAC)) <= 0)
      return rc;
    if (CRYPTO_memcmp(a->buf, a->buf + FOLD__AUTH_MAC, FOLD__AUTH_MAC) != 0)
      return FOLD_EAUTH;
    a->state = CLI_DONE;
  }
  return 1;
}

int fold__auth_cli_step(fold__auth_cli *a, int fd, const fold__auth_key *k) {
  if (a->state == CLI_DONE)
    return 1;
  if (a->state == CLI_FAILED)
    return FOLD_EAUTH;
  int rc = cli_step(a, fd, k);
  if (rc < 0)
    a->state = CLI_FAILED;
  return rc;
}

int fold__auth_client(int fd, const fold__auth_key *k, const char *claim, int64_t deadline_ns) {
  size_t claim_len = claim ? strlen(claim) : 0;
  if (claim_len > FOLD__AUTH_CLAIM_MAX || !claim_ok((const uint8_t *)claim, claim_len))
    return FOLD_EINVAL; /* a caller bug, not the peer's fault */
  uint8_t hello[FOLD__AUTH_HELLO_LEN];
  int rc = fold__fd_recv_all(fd, hello, sizeof hello, deadline_ns);
  if (rc < 0)
    return rc;
  if (memcmp(hello, AUTH_MAGIC, 8) != 0 || get_u32le(hello + 8) != AUTH_VERSION)
    return FOLD_EAUTH;
  const uint8_t *nonce_s = hello + 12;

  uint8_t proof[FOLD__AUTH_PROOF_MAX];
  uint8_t *nonce_c = proof;
  if (RAND_bytes(nonce_c, FOLD__AUTH_NONCE) != 1)
    return FOLD_ESYS;
  proof[FOLD__AUTH_NONCE] = (uint8_t)claim_len;
  proof[FOLD__AUTH_NONCE + 1] = (uint8_t)(claim_len >> 8);
  if (claim_len)
    memcpy(proof + PROOF_HEAD, claim, claim_len);
  rc = auth_mac(k, "fold-c", nonce_s, nonce_c, claim ? claim : "", claim_len, proof + PROOF_HEAD + claim_len);
  if (rc < 0)
    return rc;
  rc = fold__fd_send_all(fd, proof, PROOF_HEAD + claim_len + FOLD__AUTH_MAC, deadline_ns);
  if (rc < 0)
    return rc;

  uint8_t ok[FOLD__AUTH_MAC], want[FOLD__AUTH_MAC];
  /* The server answers a bad proof (wrong key) with a refusal, which fails
   * the MAC check below: FOLD_EAUTH. A close or reset before any answer is
   * FOLD_EPEER: the server dropped us unproven (too many pending
   * connections, its handshake deadline), and a retry may succeed. */
  rc = fold__fd_recv_all(fd, ok, sizeof ok, deadline_ns);
  if (rc < 0)
    return rc;
  rc = auth_mac(k, "fold-s", nonce_c, nonce_s, claim ? claim : "", claim_len, want);
  if (rc < 0)
    return rc;
  return CRYPTO_memcmp(ok, want, FOLD__AUTH_MAC) == 0 ? 0 : FOLD_EAUTH;
}
