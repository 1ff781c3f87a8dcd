/* store_srv_data.c — the tcp store server's keys and requests: the hash table, SET/GET/ADD/DEL with parked GETs, and the round tracking that reports a rank gone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/store_srv.h"

static uint32_t hash_key(const char *k, size_t n) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < n; i++)
    h = (h ^ (uint8_t)k[i]) * 16777619u;
  return h % SRV_BUCKETS;
}

static entry **find_slot(fold__store_srv *s, const char *k, size_t n) {
  entry **pp = &s->buckets[hash_key(k, n)];
  while (*pp && !((*pp)->klen == n && memcmp((*pp)->key, k, n) == 0))
    pp = &(*pp)->next;
  return pp;
}

/* Store a copy of val under key; 0 or -1 when the store is full or out of memory. */
static int table_set(fold__store_srv *s, const char *k, size_t kn, const uint8_t *val, size_t vn) {
  entry **pp = find_slot(s, k, kn);
  entry *e = *pp;
  long long old = e ? (long long)e->vlen : 0;
  if (s->stored_bytes - old + (long long)vn + (e ? 0 : (long long)kn) > SRV_STORE_MAX)
    return -1;
  uint8_t *copy = malloc(vn ? vn : 1);
  if (copy == NULL)
    return -1;
  memcpy(copy, val, vn);
  if (e == NULL) {
    e = malloc(sizeof *e + kn + 1);
    if (e == NULL) {
      free(copy);
      return -1;
    }
    memcpy(e->key, k, kn);
    e->key[kn] = '\0';
    e->klen = kn;
    e->vlen = 0;
    e->val = NULL;
    e->next = NULL;
    *pp = e;
    s->stored_bytes += (long long)kn;
  }
  free(e->val);
  s->stored_bytes += (long long)vn - (long long)e->vlen;
  e->val = copy;
  e->vlen = vn;
  return 0;
}

static void table_del(fold__store_srv *s, const char *k, size_t kn) {
  entry **pp = find_slot(s, k, kn);
  entry *e = *pp;
  if (e == NULL)
    return;
  *pp = e->next;
  s->stored_bytes -= (long long)(e->klen + e->vlen);
  free(e->val);
  free(e);
}

/* A client that joined a rendezvous round went away before leaving it:
 * record "<round>/gone" = its rank (the first one counts) and answer the
 * round's parked GETs at once, so that the waiting ranks look at that key
 * (fold__store.watch) now instead of at their deadline. */
void fold__srv_round_gone(fold__store_srv *s, const conn *gone) {
  char k[FOLD__STORE_KEY_MAX + 1], v[16];
  int kn = snprintf(k, sizeof k, "%sgone", gone->round);
  int vn = snprintf(v, sizeof v, "%d", gone->round_rank);
  if (*find_slot(s, k, (size_t)kn) == NULL && table_set(s, k, (size_t)kn, (const uint8_t *)v, (size_t)vn) < 0)
    return;
  SINFO(s, "store: rank %d closed its connection before the rendezvous %.*s completed", gone->round_rank,
        (int)strlen(gone->round) - 1, gone->round);
  size_t pn = strlen(gone->round);
  FOLD__LIST_FOR_EACH(conn, c, &s->conns, link) {
    if (c == gone || c->fd < 0 || c->state != C_PARKED || strncmp(c->park_key, gone->round, pn) != 0)
      continue;
    if (fold__srv_reply(c, FOLD__ST_NOTFOUND, NULL, 0) < 0)
      continue; /* answered at its deadline */
    c->state = C_READY;
    c->runnable = 1;
  }
}

/* Note the round a client joins or leaves (see conn.round). */
static void round_track(conn *c, int type, const char *k, size_t kn) {
  const char *slash = memchr(k, '/', kn);
  if (slash == NULL || (size_t)(slash - k) + 1 >= sizeof c->round)
    return;
  size_t pn = (size_t)(slash - k) + 1;
  const char *rest = slash + 1;
  size_t rn = kn - pn;
  if (type == FOLD__ST_SET && rn > 5 && memcmp(rest, "join/", 5) == 0 && rn < 16) {
    char num[16];
    memcpy(num, rest + 5, rn - 5);
    num[rn - 5] = '\0';
    char *end;
    long r = strtol(num, &end, 10);
    if (*end != '\0' || r < 0 || r > 0x7fffffff)
      return;
    memcpy(c->round, k, pn);
    c->round[pn] = '\0';
    c->round_rank = (int)r;
  } else if (type == FOLD__ST_ADD && rn == 4 && memcmp(rest, "left", 4) == 0 && strlen(c->round) == pn &&
             memcmp(c->round, k, pn) == 0) {
    c->round[0] = '\0';
  }
}

/* Queue a reply; 0, or -1 when out of memory (the caller closes c). */
int fold__srv_reply(conn *c, int type, const void *val, size_t vlen) {
  size_t need = FOLD__STORE_HDR + vlen;
  if (c->out_off == c->out_len)
    c->out_off = c->out_len = 0;
  if (c->out_len + need > c->out_cap) {
    size_t cap = c->out_cap ? c->out_cap : 4096;
    while (cap < c->out_len + need)
      cap *= 2;
    uint8_t *p = realloc(c->out, cap);
    if (p == NULL)
      return -1;
    c->out = p, c->out_cap = cap;
  }
  fold__store_put_header(c->out + c->out_len, type, 0, vlen);
  if (vlen)
    memcpy(c->out + c->out_len + FOLD__STORE_HDR, val, vlen);
  c->out_len += need;
  return 0;
}

/* Wake parked GETs waiting for key (just set). */
static void wake_parked(fold__store_srv *s, const char *k, size_t kn, const entry *e) {
  FOLD__LIST_FOR_EACH(conn, c, &s->conns, link) {
    if (c->state != C_PARKED || strlen(c->park_key) != kn || memcmp(c->park_key, k, kn) != 0)
      continue;
    if (fold__srv_reply(c, FOLD__ST_VALUE, e->val, e->vlen) < 0)
      continue; /* stays parked; answered NOTFOUND at its deadline */
    c->state = C_READY;
    c->runnable = 1;
  }
}

/* Apply one request; 0 or -1 (close c). */
int fold__srv_apply(fold__store_srv *s, conn *c, const fold__store_frame *f) {
  const char *k = (const char *)f->key;
  entry *e;
  s->requests++;
  round_track(c, f->type, k, f->klen);
  switch (f->type) {
  case FOLD__ST_SET:
    if (table_set(s, k, f->klen, f->val, f->vlen) < 0)
      return fold__srv_reply(c, FOLD__ST_ERR, NULL, 0);
    if (fold__srv_reply(c, FOLD__ST_OK, NULL, 0) < 0)
      return -1;
    wake_parked(s, k, f->klen, *find_slot(s, k, f->klen));
    return 0;
  case FOLD__ST_GET: {
    e = *find_slot(s, k, f->klen);
    if (e)
      return fold__srv_reply(c, FOLD__ST_VALUE, e->val, e->vlen);
    uint32_t ms = (uint32_t)f->val[0] | (uint32_t)f->val[1] << 8 | (uint32_t)f->val[2] << 16 |
                  (uint32_t)f->val[3] << 24;
    if (ms == 0)
      return fold__srv_reply(c, FOLD__ST_NOTFOUND, NULL, 0);
    memcpy(c->park_key, k, f->klen);
    c->park_key[f->klen] = '\0';
    c->park_deadline = fold__clock_mono(NULL) + (int64_t)ms * 1000000;
    c->state = C_PARKED;
    return 0;
  }
  case FOLD__ST_ADD: {
    uint64_t d = 0;
    for (int i = 7; i >= 0; i--)
      d = d << 8 | f->val[i];
    e = *find_slot(s, k, f->klen);
    uint64_t cur = 0;
    if (e && e->vlen != 8)
      return fold__srv_reply(c, FOLD__ST_ERR, NULL, 0);
    if (e)
      for (int i = 7; i >= 0; i--)
        cur = cur << 8 | e->val[i];
    cur += d; /* unsigned: wraps instead of overflowing */
    uint8_t v[8];
    for (int i = 0; i < 8; i++)
      v[i] = (uint8_t)(cur >> (8 * i));
    if (table_set(s, k, f->klen, v, 8) < 0)
      return fold__srv_reply(c, FOLD__ST_ERR, NULL, 0);
    if (fold__srv_reply(c, FOLD__ST_VALUE, v, 8) < 0)
      return -1;
    wake_parked(s, k, f->klen, *find_slot(s, k, f->klen));
    return 0;
  }
  case FOLD__ST_DEL:
    table_del(s, k, f->klen);
    return fold__srv_reply(c, FOLD__ST_OK, NULL, 0);
  default:
    return -1; /* the parser lets no other type through */
  }
}
