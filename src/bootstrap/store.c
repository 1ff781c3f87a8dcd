/* store.c — store URL parsing and dispatch, the wire-frame parser, and barriers built on add/get. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/store.h"
#include "core/internal.h"

int fold__store_key_ok(const char *key, size_t klen) {
  if (klen < 1 || klen > FOLD__STORE_KEY_MAX)
    return 0;
  for (size_t i = 0; i < klen; i++) {
    unsigned char ch = (unsigned char)key[i];
    if (ch < 0x21 || ch > 0x7e)
      return 0;
  }
  return 1;
}

void fold__store_put_header(uint8_t *h, int type, size_t klen, size_t vlen) {
  h[0] = (uint8_t)type;
  h[1] = 0;
  h[2] = (uint8_t)klen, h[3] = (uint8_t)(klen >> 8);
  h[4] = (uint8_t)vlen, h[5] = (uint8_t)(vlen >> 8), h[6] = (uint8_t)(vlen >> 16), h[7] = (uint8_t)(vlen >> 24);
}

static int bad(fold__store_frame *f, const char *why) {
  f->why = why;
  return FOLD_EINVAL;
}

int fold__store_parse_frame(const uint8_t *p, size_t n, int from_server, fold__store_frame *f) {
  memset(f, 0, sizeof *f);
  /* Judge each header byte as soon as it is there, so that garbage is
   * refused without waiting for bytes that may never come. */
  if (n < 1)
    return 0;
  int type = p[0];
  int req = type == FOLD__ST_SET || type == FOLD__ST_GET || type == FOLD__ST_ADD || type == FOLD__ST_DEL;
  int rep = type == FOLD__ST_OK || type == FOLD__ST_VALUE || type == FOLD__ST_NOTFOUND || type == FOLD__ST_ERR;
  if (from_server ? !rep : !req)
    return bad(f, "unknown frame type");
  if (n < 2)
    return 0;
  if (p[1] != 0)
    return bad(f, "non-zero flags");
  if (n < 4)
    return 0;
  size_t klen = (size_t)p[2] | (size_t)p[3] << 8;
  if (from_server ? klen != 0 : (klen < 1 || klen > FOLD__STORE_KEY_MAX))
    return bad(f, "bad key length");
  if (n < FOLD__STORE_HDR)
    return 0;
  uint32_t vlen32 = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
  if (vlen32 > FOLD__STORE_VAL_MAX)
    return bad(f, "value too long");
  size_t vlen = vlen32;
  switch (type) {
  case FOLD__ST_GET: if (vlen != 4) return bad(f, "GET needs a 4-byte wait"); break;
  case FOLD__ST_ADD: if (vlen != 8) return bad(f, "ADD needs an 8-byte delta"); break;
  case FOLD__ST_DEL:
  case FOLD__ST_OK:
  case FOLD__ST_NOTFOUND:
  case FOLD__ST_ERR: if (vlen != 0) return bad(f, "unexpected value"); break;
  default: break;
  }
  size_t total = FOLD__STORE_HDR + klen + vlen;
  if (klen > 0 && n >= FOLD__STORE_HDR + klen && !fold__store_key_ok((const char *)p + FOLD__STORE_HDR, klen))
    return bad(f, "key is not printable ASCII");
  if (n < total)
    return 0;
  f->type = type;
  f->key = p + FOLD__STORE_HDR;
  f->klen = klen;
  f->val = p + FOLD__STORE_HDR + klen;
  f->vlen = vlen;
  return (int)total;
}

int fold__store_url_parse(const char *url, fold__store_url *u) {
  memset(u, 0, sizeof *u);
  if (url == NULL || *url == '\0')
    return fold__error(NULL, FOLD_EINVAL, "store URL is empty (want tcp://host:port or file:///dir)");
  if (strncmp(url, "file://", 7) == 0) {
    const char *path = url + 7;
    if (path[0] != '/')
      return fold__error(NULL, FOLD_EINVAL, "store URL \"%s\": want file:///absolute/dir", url);
    if (strlen(path) >= sizeof u->path - 64) /* room for file names below it */
      return fold__error(NULL, FOLD_EINVAL, "store URL \"%s\": path too long", url);
    u->kind = FOLD__STORE_FILE;
    snprintf(u->path, sizeof u->path, "%s", path);
    return 0;
  }
  if (strncmp(url, "tcp://", 6) != 0)
    return fold__error(NULL, FOLD_EINVAL, "store URL \"%s\": want tcp://host:port or file:///dir", url);
  const char *h = url + 6, *hend, *colon;
  if (*h == '[') {
    hend = strchr(h, ']');
    if (hend == NULL || hend[1] != ':')
      return fold__error(NULL, FOLD_EINVAL, "store URL \"%s\": want tcp://[v6addr]:port", url);
    colon = hend + 1;
    h++;
  } else {
    colon = strrchr(h, ':');
    if (colon == NULL)
      return fold__error(NULL, FOLD_EINVAL, "store URL \"%s\": no port (want tcp://host:port)", url);
    hend = colon;
    if (memchr(h, ':', (size_t)(hend - h)) != NULL)
      return fold__error(NULL, FOLD_EINVAL, "store URL \"%s\": write IPv6 addresses in brackets", url);
  }
  size_t hl = (size_t)(hend - h);
  if (hl == 0 || hl >= sizeof u->host)
    return fold__error(NULL, FOLD_EINVAL, "store URL \"%s\": bad host", url);
  for (size_t i = 0; i < hl; i++)
    if (h[i] == '/' || h[i] == '@' || (unsigned char)h[i] <= 0x20)
      return fold__error(NULL, FOLD_EINVAL, "store URL \"%s\": bad host", url);
  char *end = NULL;
  long port = strtol(colon + 1, &end, 10);
  if (colon[1] < '0' || colon[1] > '9' || *end != '\0' || port < 1 || port > 65535)
    return fold__error(NULL, FOLD_EINVAL, "store URL \"%s\": port must be 1..65535", url);
  memcpy(u->host, h, hl);
  u->host[hl] = '\0';
  u->port = (int)port;
  u->kind = FOLD__STORE_TCP;
  return 0;
}

int fold__store_open(const char *url, const fold__auth_key *key, const char *claim, int64_t deadline_ns,
                     int guessed, fold__store **out) {
  *out = NULL;
  fold__store_url *u = malloc(sizeof *u); /* 4 KiB path: keep it off small thread stacks */
  if (u == NULL)
    return fold__error(NULL, FOLD_ENOMEM, "out of memory opening store");
  int rc = fold__store_url_parse(url, u);
  u->guessed = guessed;
  if (rc == 0)
    rc = u->kind == FOLD__STORE_TCP ? fold__store_tcp_open(u, key, claim, deadline_ns, out)
                                    : fold__store_file_open(u, out);
  free(u);
  return rc;
}

int fold__store_barrier(fold__store *s, const char *name, int rank, int size, int64_t deadline_ns, int64_t *arrived) {
  char key[FOLD__STORE_KEY_MAX + 1], go[FOLD__STORE_KEY_MAX + 1];
  if (arrived)
    *arrived = 0;
  if (snprintf(key, sizeof key, "%s/n", name) >= (int)sizeof key ||
      snprintf(go, sizeof go, "%s/go", name) >= (int)sizeof go)
    return fold__error(NULL, FOLD_EINTERNAL, "barrier name too long");
  char v[8];
  size_t len = 0;
  int rc;
  if (s->kind == FOLD__STORE_FILE) {
    /* No lock file: every rank sets its own key, rank 0 waits for them all
     * and sets "go", which the others wait for (O(size) requests). */
    snprintf(key, sizeof key, "%s/%d", name, rank);
    if ((rc = fold__store_set(s, key, "1", 1, deadline_ns)) < 0)
      return rc;
    for (int p = 1; p < size && rank == 0; p++) {
      snprintf(key, sizeof key, "%s/%d", name, p);
      if ((rc = fold__store_get(s, key, v, sizeof v, &len, deadline_ns)) < 0)
        break;
    }
    if (rank == 0 && rc == 0)
      return fold__store_set(s, go, "1", 1, deadline_ns);
    if (rank != 0)
      rc = fold__store_get(s, go, v, sizeof v, &len, deadline_ns);
    if (rc == FOLD_ETIMEDOUT && arrived) {
      int64_t n = 0;
      for (int q = 0; q < size; q++) {
        snprintf(key, sizeof key, "%s/%d", name, q);
        n += fold__store_get(s, key, v, sizeof v, &len, 0) == 0;
      }
      *arrived = n;
    }
    return rc;
  }
  int64_t total = 0;
  rc = fold__store_add(s, key, 1, &total, deadline_ns);
  if (rc < 0)
    return rc;
  if (total == size) {
    /* The last arriver knows the barrier is complete: it does not read "go"
     * back. The others may return (and rank 0 stop the server) as soon as
     * this SET lands, so a GET after it could find the store gone. */
    return fold__store_set(s, go, "1", 1, deadline_ns);
  }
  rc = fold__store_get(s, go, v, sizeof v, &len, deadline_ns);
  if (rc == FOLD_ETIMEDOUT && arrived) {
    /* Look once more so that the caller can say how many made it. */
    int64_t now_total = 0;
    if (fold__store_add(s, key, 0, &now_total, 0) == 0)
      *arrived = now_total;
  }
  return rc;
}

void fold__store_barrier_keys_del(fold__store *s, const char *name, int size, int64_t deadline_ns) {
  char key[FOLD__STORE_KEY_MAX + 1];
  if (s->kind == FOLD__STORE_FILE) {
    for (int p = 0; p < size; p++) {
      snprintf(key, sizeof key, "%s/%d", name, p);
      fold__store_del(s, key, deadline_ns);
    }
  } else {
    snprintf(key, sizeof key, "%s/n", name);
    fold__store_del(s, key, deadline_ns);
  }
  snprintf(key, sizeof key, "%s/go", name);
  fold__store_del(s, key, deadline_ns);
}
