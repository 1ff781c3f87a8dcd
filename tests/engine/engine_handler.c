/* engine_handler.c — handlers for unsolicited messages and extension slots,
 * on threads and in the simulator. Usage: engine_handler <case>. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "fold.h"
#include "select/select.h"
#include "sim/sim_check.h"
#include "transport/transport.h"

#define K 5                   /* eager messages per sender */
#define BIG (100 * 1024)      /* past every transport's 64 KiB eager size: rendezvous */
#define NMAX 8

static int ctx_a(void) { return fold__ctx_ext(5); }

/* What rank 0's handler saw. */
typedef struct seen {
  int n;                    /* eager messages taken */
  int next[NMAX];           /* next expected sequence number per source */
  int bad;                  /* out of order or wrong contents */
  fold_request *big_req;    /* the rendezvous message, received by the handler's receive */
  unsigned char *big_buf;
  int big_src, dropped, drop_rdv, took_rdv;
} seen;

static void fill_big(unsigned char *b, int src) {
  for (int i = 0; i < BIG; i++) b[i] = (unsigned char)(src * 7 + i * 13);
}

/* Tags: 0..K-1 eager (payload: src, seq); 100: big, taken by a receive;
 * 200: eager, dropped; 201: big, dropped (drained). */
static void handler(fold_comm *c, void *arg, int src, int tag, const void *data, size_t bytes) {
  seen *s = arg;
  if (tag < K) {
    int32_t v[2] = {-1, -1};
    if (data == NULL || bytes != sizeof v) {
      s->bad++;
      return;
    }
    memcpy(v, data, sizeof v);
    if (v[0] != src || v[1] != tag || tag != s->next[src]) s->bad++;
    s->next[src] = tag + 1;
    s->n++;
    return; /* read in place: returning drops it */
  }
  if (tag == 100) {
    if (data != NULL || bytes != BIG) s->bad++;
    s->took_rdv = 1;
    s->big_src = src;
    s->big_buf = malloc(BIG);
    CHECK(fold__irecv_bytes(c, s->big_buf, BIG, src, ctx_a(), tag, &s->big_req) == FOLD_OK);
    return;
  }
  if (tag == 201) s->drop_rdv = data == NULL && bytes == BIG;
  s->dropped++; /* 200 and 201: not consumed, the engine drops them */
}

static unsigned char bigs[NMAX][BIG];

/* Senders: K eager messages, then on rank 1 the three odd ones. */
static void send_all(fold_comm *c, int me) {
  int32_t v[K][2];
  fold_request *r[K + 3];
  int nr = 0;
  for (int k = 0; k < K; k++) {
    v[k][0] = me;
    v[k][1] = k;
    CHECK(fold__isend_bytes(c, v[k], sizeof v[k], 0, ctx_a(), k, &r[nr++]) == FOLD_OK);
  }
  if (me == 1) {
    fill_big(bigs[me], me);
    CHECK(fold__isend_bytes(c, bigs[me], BIG, 0, ctx_a(), 100, &r[nr++]) == FOLD_OK);
    CHECK(fold__isend_bytes(c, v[0], sizeof v[0], 0, ctx_a(), 200, &r[nr++]) == FOLD_OK);
    CHECK(fold__isend_bytes(c, bigs[me], BIG, 0, ctx_a(), 201, &r[nr++]) == FOLD_OK);
  }
  for (int i = 0; i < nr; i++) CHECK_RC(fold_wait(r[i]), FOLD_OK, c); /* the dropped ones too */
}

static int all_in(const seen *s, int n) {
  return s->n == K * (n - 1) && s->took_rdv && s->dropped == 2 && s->big_req && fold__req_done(s->big_req);
}

static void check_seen(seen *s, int n) {
  CHECK(s->bad == 0);
  CHECK(s->n == K * (n - 1));
  for (int p = 1; p < n; p++) CHECK(s->next[p] == K);
  CHECK(s->dropped == 2 && s->drop_rdv);
  CHECK(s->big_req != NULL && s->big_src == 1);
  if (s->big_req) {
    CHECK_RC(fold_wait(s->big_req), FOLD_OK, NULL);
    unsigned char want[BIG];
    fill_big(want, 1);
    CHECK(memcmp(want, s->big_buf, BIG) == 0);
  }
  free(s->big_buf);
}

/* ---- threads --------------------------------------------------------------------------- */

enum { NT = 4 };
static fold_comm *tc[NT];
static seen tseen;

static void *thread_rank(void *arg) {
  int me = (int)(intptr_t)arg;
  fold_comm *c = tc[me];
  if (me == 0) {
    int64_t end = fold__now(c) + 20000000000LL;
    while (!all_in(&tseen, NT) && fold__now(c) < end) CHECK_RC(fold_progress(c), FOLD_OK, c);
  } else {
    send_all(c, me);
  }
  CHECK_RC(fold_barrier(c), FOLD_OK, c); /* nobody leaves while a drain is in flight */
  return NULL;
}

static void case_threads(void) {
  pthread_t th[NT];
  CHECK_RC(fold_comm_init_threads(NT, tc), FOLD_OK, NULL);
  memset(&tseen, 0, sizeof tseen);
  CHECK_RC(fold__handler_set(tc[0], ctx_a(), handler, &tseen), FOLD_OK, tc[0]);
  for (int i = 0; i < NT; i++) CHECK(pthread_create(&th[i], NULL, thread_rank, (void *)(intptr_t)i) == 0);
  for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
  check_seen(&tseen, NT);
  for (int i = 0; i < NT; i++) fold_comm_destroy(tc[i]);
}

/* ---- the simulator ------------------------------------------------------------------------ */

static void case_sim(void) {
  enum { N = 5 };
  fold_comm *c[N];
  fold_sim *sim;
  CHECK_RC(fold_sim_create(N, NULL, &sim, c), FOLD_OK, NULL);
  seen s;
  memset(&s, 0, sizeof s);
  CHECK_RC(fold__handler_set(c[0], ctx_a(), handler, &s), FOLD_OK, c[0]);
  /* started on every rank, then run: the senders' messages interleave */
  int32_t v[N][K][2];
  fold_request *r[N][K + 3];
  int nr[N] = {0};
  for (int k = 0; k < K; k++)
    for (int p = 1; p < N; p++) {
      v[p][k][0] = p;
      v[p][k][1] = k;
      CHECK(fold__isend_bytes(c[p], v[p][k], sizeof v[p][k], 0, ctx_a(), k, &r[p][nr[p]++]) == FOLD_OK);
    }
  fill_big(bigs[1], 1);
  /* the simulator delivers every payload whole (data != NULL); the
   * handler takes tag 100 with a receive all the same */
  CHECK(fold__isend_bytes(c[1], bigs[1], BIG, 0, ctx_a(), 100, &r[1][nr[1]++]) == FOLD_OK);
  CHECK(fold__isend_bytes(c[1], v[1][0], sizeof v[1][0], 0, ctx_a(), 200, &r[1][nr[1]++]) == FOLD_OK);
  CHECK(fold__isend_bytes(c[1], bigs[1], BIG, 0, ctx_a(), 201, &r[1][nr[1]++]) == FOLD_OK);
  CHECK_RC(fold_sim_run(sim), FOLD_OK, NULL);
  CHECK(s.bad == 1); /* tag 100 came whole (data != NULL): counted as unexpected above */
  s.bad = 0;
  s.drop_rdv = 1;   /* likewise: no rendezvous in the simulator */
  check_seen(&s, N);
  for (int p = 1; p < N; p++)
    for (int i = 0; i < nr[p]; i++) CHECK_RC(fold_wait(r[p][i]), FOLD_OK, c[p]);
  fold_sim_destroy(sim);
}

/* ---- rules of the registry ----------------------------------------------------------------- */

static int order_n, order[8];
static void tag_handler(fold_comm *c, void *arg, int src, int tag, const void *data, size_t bytes) {
  order[order_n++] = tag * 10 + (int)(intptr_t)arg;
}

/* Bad contexts are refused; a posted receive takes a message before any
 * handler; messages queued before a handler is set go to it; a cleared
 * handler sees nothing more; the last handler set wins. One rank talking
 * to itself (messages to oneself are matched by the engine). */
static void case_rules(void) {
  fold_comm *c;
  CHECK_RC(fold_comm_init_threads(1, &c), FOLD_OK, NULL);
  CHECK_RC(fold__handler_set(c, FOLD__CTX_P2P, tag_handler, NULL), FOLD_EINVAL, c);
  CHECK(strstr(fold_comm_last_error(c), "rank 0") && strstr(fold_comm_last_error(c), "not an extension context"));
  CHECK_RC(fold__handler_set(c, FOLD__CTX_COLL, tag_handler, NULL), FOLD_EINVAL, c);
  CHECK_RC(fold__handler_set(c, fold__ctx_ext(FOLD__CTX_EXT_COUNT), tag_handler, NULL), FOLD_EINVAL, c);
  CHECK_RC(fold__handler_set(c, -2, tag_handler, NULL), FOLD_EINVAL, c);
  CHECK(fold__ctx_valid(fold__ctx_ext(1)) && fold__ctx_valid(fold__ctx_ext(FOLD__CTX_EXT_COUNT - 1)));
  CHECK(!fold__ctx_valid(fold__ctx_ext(FOLD__CTX_EXT_COUNT)) && fold__ctx_ext(0) == FOLD__CTX_SYS);
  int ctx = fold__ctx_ext(9);
  int32_t x = 1, y = 0;
  fold_request *s, *r;
  /* queued before any handler */
  CHECK(fold__isend_bytes(c, &x, 4, 0, ctx, 1, &s) == FOLD_OK);
  CHECK_RC(fold_wait(s), FOLD_OK, c);
  CHECK_RC(fold_progress(c), FOLD_OK, c);
  CHECK(order_n == 0);
  CHECK_RC(fold__handler_set(c, ctx, tag_handler, (void *)1), FOLD_OK, c);
  CHECK_RC(fold__handler_set(c, ctx, tag_handler, (void *)2), FOLD_OK, c); /* replaces */
  CHECK_RC(fold_progress(c), FOLD_OK, c);
  CHECK(order_n == 1 && order[0] == 12);
  /* a posted receive wins */
  CHECK(fold__irecv_bytes(c, &y, 4, 0, ctx, 2, &r) == FOLD_OK);
  x = 77;
  CHECK(fold__isend_bytes(c, &x, 4, 0, ctx, 2, &s) == FOLD_OK);
  CHECK_RC(fold_wait(r), FOLD_OK, c);
  CHECK_RC(fold_wait(s), FOLD_OK, c);
  CHECK_RC(fold_progress(c), FOLD_OK, c);
  CHECK(y == 77 && order_n == 1);
  /* in arrival order, across tags */
  for (int t = 3; t < 6; t++) {
    CHECK(fold__isend_bytes(c, &x, 4, 0, ctx, t, &s) == FOLD_OK);
    CHECK_RC(fold_wait(s), FOLD_OK, c);
  }
  CHECK_RC(fold_progress(c), FOLD_OK, c);
  CHECK(order_n == 4 && order[1] == 32 && order[2] == 42 && order[3] == 52);
  /* cleared: the message waits for a receive */
  CHECK_RC(fold__handler_set(c, ctx, NULL, NULL), FOLD_OK, c);
  CHECK(fold__isend_bytes(c, &x, 4, 0, ctx, 6, &s) == FOLD_OK);
  CHECK_RC(fold_wait(s), FOLD_OK, c);
  CHECK_RC(fold_progress(c), FOLD_OK, c);
  CHECK(order_n == 4);
  y = 0;
  CHECK(fold__irecv_bytes(c, &y, 4, 0, ctx, 6, &r) == FOLD_OK);
  CHECK_RC(fold_wait(r), FOLD_OK, c);
  CHECK(y == 77);
  fold_comm_destroy(c);
}

/* ---- extension slots ----------------------------------------------------------------------- */

static int torn[8], ntorn;
static fold_comm *torn_comm;
typedef struct slot_val {
  int id;
} slot_val;

static void teardown(void *p) {
  slot_val *v = p;
  torn[ntorn++] = v->id;
  /* before the transports go: they are still there to look at */
  CHECK(torn_comm->ntps >= 1 && torn_comm->tps[0]->comm == torn_comm);
  free(v);
}

static slot_val *val(int id) {
  slot_val *v = malloc(sizeof *v);
  v->id = id;
  return v;
}

static void case_slots(void) {
  static const char k1, k2, k3, k4;
  fold_comm *c[2];
  CHECK_RC(fold_comm_init_threads(2, c), FOLD_OK, NULL);
  CHECK_RC(fold__ext_attach(c[0], &k1, val(1), teardown), FOLD_OK, c[0]);
  CHECK_RC(fold__ext_attach(c[0], &k2, val(2), teardown), FOLD_OK, c[0]);
  CHECK_RC(fold__ext_attach(c[0], &k3, val(3), teardown), FOLD_OK, c[0]);
  slot_val *dup = val(9);
  CHECK_RC(fold__ext_attach(c[0], &k2, dup, teardown), FOLD_EINVAL, c[0]);
  CHECK(strstr(fold_comm_last_error(c[0]), "already attached") != NULL);
  CHECK_RC(fold__ext_attach(c[0], NULL, dup, teardown), FOLD_EINVAL, c[0]);
  free(dup);
  CHECK(((slot_val *)fold__ext_get(c[0], &k2))->id == 2 && fold__ext_get(c[0], &k4) == NULL);
  CHECK(fold__ext_get(c[1], &k1) == NULL); /* per communicator */
  slot_val *two = fold__ext_detach(c[0], &k2);
  CHECK(two && two->id == 2 && fold__ext_get(c[0], &k2) == NULL && fold__ext_detach(c[0], &k2) == NULL);
  free(two);
  CHECK_RC(fold__ext_attach(c[0], &k4, val(4), teardown), FOLD_OK, c[0]);
  CHECK_RC(fold__ext_attach(c[0], &k2, NULL, NULL), FOLD_OK, c[0]); /* no hook: nothing to free */
  ntorn = 0;
  torn_comm = c[0];
  fold_comm_destroy(c[0]);
  CHECK(ntorn == 3 && torn[0] == 4 && torn[1] == 3 && torn[2] == 1); /* reverse order of attachment */
  fold_comm_destroy(c[1]);

  /* simulated ranks: fold_sim_destroy and fold_comm_destroy run them too */
  fold_comm *s[2];
  fold_sim *sim;
  CHECK_RC(fold_sim_create(2, NULL, &sim, s), FOLD_OK, NULL);
  CHECK_RC(fold__ext_attach(s[0], &k1, val(5), teardown), FOLD_OK, s[0]);
  CHECK_RC(fold__ext_attach(s[1], &k1, val(6), teardown), FOLD_OK, s[1]);
  ntorn = 0;
  torn_comm = s[1];
  CHECK_RC(fold_comm_destroy(s[1]), FOLD_OK, NULL);
  CHECK(ntorn == 1 && torn[0] == 6);
  torn_comm = s[0];
  fold_sim_destroy(sim);
  CHECK(ntorn == 2 && torn[1] == 5);
}

/* Well-known slots (fold__slot_attach/get/detach): the lookup by index
 * sees what is attached, a slot is one of the keyed slots for the teardown
 * order (newest first across both kinds), and a hook that runs after a
 * well-known slot was torn down finds it empty. */
static void teardown_fixed(void *p) {
  CHECK(fold__slot_get(torn_comm, FOLD__SLOT_SELECT) == NULL); /* forgotten before its hook runs */
  teardown(p);
}
static void teardown_sees_fixed(void *p) {
  slot_val *fixed = fold__slot_get(torn_comm, FOLD__SLOT_SELECT); /* attached before this one: still there */
  CHECK(fixed && fixed->id == 2);
  teardown(p);
}

static void case_wkslots(void) {
  static const char k1, k3;
  fold_comm *c[2];
  CHECK_RC(fold_comm_init_threads(2, c), FOLD_OK, NULL);
  /* selection's state is attached when the communicator is made */
  fold__selection *sel = fold__slot_get(c[0], FOLD__SLOT_SELECT);
  CHECK(sel != NULL && sel == fold__selection_of(c[0]) && sel != fold__selection_of(c[1]));
  CHECK(fold__slot_detach(c[0], FOLD__SLOT_SELECT) == sel && fold__slot_get(c[0], FOLD__SLOT_SELECT) == NULL);
  CHECK(fold__slot_detach(c[0], FOLD__SLOT_SELECT) == NULL);
  fold__rules_free(sel->rules); /* detached: ours to free */
  free(sel);
  CHECK_RC(fold__ext_attach(c[0], &k1, val(1), teardown), FOLD_OK, c[0]);
  CHECK_RC(fold__slot_attach(c[0], FOLD__SLOT_SELECT, val(2), teardown_fixed), FOLD_OK, c[0]);
  slot_val *dup = val(9);
  CHECK_RC(fold__slot_attach(c[0], FOLD__SLOT_SELECT, dup, teardown), FOLD_EINVAL, c[0]);
  CHECK(strstr(fold_comm_last_error(c[0]), "already attached") != NULL);
  free(dup);
  CHECK_RC(fold__ext_attach(c[0], &k3, val(3), teardown_sees_fixed), FOLD_OK, c[0]);
  CHECK(((slot_val *)fold__slot_get(c[0], FOLD__SLOT_SELECT))->id == 2);
  CHECK(fold__ext_get(c[0], &k1) != NULL && ((slot_val *)fold__ext_get(c[0], &k3))->id == 3);
  ntorn = 0;
  torn_comm = c[0];
  fold_comm_destroy(c[0]);
  CHECK(ntorn == 3 && torn[0] == 3 && torn[1] == 2 && torn[2] == 1); /* reverse order of attachment, both kinds */
  fold_comm_destroy(c[1]);
}

int main(int argc, char **argv) {
  static const sim_check_case cases[] = {
      {"threads", case_threads},
      {"sim", case_sim},
      {"rules", case_rules},
      {"slots", case_slots},
      {"wkslots", case_wkslots},
  };
  return sim_check_run("engine_handler", cases, sizeof cases / sizeof cases[0], argc, argv);
}
