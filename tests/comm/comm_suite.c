/* comm_suite.c — sub-communicator checks that run on any world: split matrix, interleaving, isolation, bad input. */
#include "comm/comm_suite.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define MAXR 64

static unsigned next_rand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (*s >> 16) & 0x7fff;
}

/* The colors and keys of every rank for a seed: ~1 in 6 FOLD_UNDEFINED. */
static void draw(unsigned seed, int n, int *color, int *key) {
  unsigned s = seed * 2654435761u + 7;
  int ncolors = 1 + (int)(next_rand(&s) % 4);
  for (int r = 0; r < n; r++) {
    color[r] = next_rand(&s) % 6 == 0 ? FOLD_UNDEFINED : (int)(next_rand(&s) % (unsigned)ncolors);
    key[r] = (int)(next_rand(&s) % 7) - 3;
  }
}

/* The expected members of rank me's child, in order; returns their count. */
static int expect(int n, const int *color, const int *key, int me, int *mem) {
  int m = 0;
  for (int r = 0; r < n; r++)
    if (color[r] == color[me]) mem[m++] = r;
  for (int i = 1; i < m; i++) /* insertion sort by (key, rank) */
    for (int j = i; j > 0 && (key[mem[j - 1]] > key[mem[j]] ||
                              (key[mem[j - 1]] == key[mem[j]] && mem[j - 1] > mem[j])); j--) {
      int t = mem[j];
      mem[j] = mem[j - 1];
      mem[j - 1] = t;
    }
  return m;
}

/* Collectives and a wildcard ring on child k whose members are the parent
 * ranks ids[0..size) (their ids, as values). */
static void exercise(fold_comm *k, const int64_t *ids, const char *what) {
  int s = fold_comm_size(k), r = fold_comm_rank(k);
  int64_t mine = ids[r], sum = 0, got = -1, all[MAXR];
  for (int i = 0; i < s; i++) sum += ids[i];
  CHECK_OK(fold_allreduce(&mine, &got, 1, FOLD_INT64, FOLD_SUM, k), k);
  CHECK(got == sum, "%s: allreduce %lld, want %lld", what, (long long)got, (long long)sum);
  memset(all, 0xff, sizeof all);
  CHECK_OK(fold_allgather(&mine, all, 1, FOLD_INT64, k), k);
  for (int i = 0; i < s; i++) CHECK(all[i] == ids[i], "%s: allgather[%d] = %lld, want %lld", what, i, (long long)all[i], (long long)ids[i]);
  int64_t b = r == s - 1 ? 1000 + mine : -1;
  CHECK_OK(fold_broadcast(&b, 1, FOLD_INT64, s - 1, k), k);
  CHECK(b == 1000 + ids[s - 1], "%s: broadcast %lld", what, (long long)b);
  /* reduce to rank 0 and alltoall of (sender, receiver) pairs */
  got = -1;
  CHECK_OK(fold_reduce(&mine, &got, 1, FOLD_INT64, FOLD_MAX, 0, k), k);
  if (r == 0) {
    int64_t mx = ids[0];
    for (int i = 1; i < s; i++) mx = ids[i] > mx ? ids[i] : mx;
    CHECK(got == mx, "%s: reduce max %lld, want %lld", what, (long long)got, (long long)mx);
  }
  int32_t out[MAXR], in[MAXR];
  for (int i = 0; i < s; i++) out[i] = r * 100 + i;
  CHECK_OK(fold_alltoall(out, in, 1, FOLD_INT32, k), k);
  for (int i = 0; i < s; i++) CHECK(in[i] == i * 100 + r, "%s: alltoall[%d] = %d", what, i, in[i]);
  CHECK_OK(fold_barrier(k), k);
  /* a ring with wildcard receives: the source and tag are the child's */
  if (s > 1) {
    int to = (r + 1) % s, from = (r + s - 1) % s;
    int32_t v = r, w = -1;
    fold_request *sq;
    fold_status st;
    CHECK_OK(fold_isend(&v, 1, FOLD_INT32, to, 50 + r, k, &sq), k);
    CHECK_OK(fold_recv_status(&w, 1, FOLD_INT32, FOLD_ANY_SOURCE, FOLD_ANY_TAG, k, &st), k);
    CHECK(w == from && st.source == from && st.tag == 50 + from, "%s: wildcard ring got %d from %d tag %d, want %d",
          what, w, st.source, st.tag, from);
    CHECK_OK(fold_wait(sq), k);
  }
}

void comm_suite_matrix(fold_comm *w, unsigned seed) {
  int n = fold_comm_size(w), me = fold_comm_rank(w);
  int color[MAXR], key[MAXR], mem[MAXR];
  char what[64];
  if (n > MAXR) return;
  draw(seed, n, color, key);
  fold_comm *k = (fold_comm *)&k; /* not NULL: the call must set it */
  CHECK_OK(fold_comm_split(w, color[me], key[me], &k), w);
  snprintf(what, sizeof what, "seed %u, n %d, rank %d", seed, n, me);
  if (color[me] == FOLD_UNDEFINED) {
    CHECK(k == NULL, "%s: FOLD_UNDEFINED gave a communicator", what);
    CHECK_OK(fold_barrier(w), w);
    return;
  }
  int m = expect(n, color, key, me, mem);
  CHECK(k != NULL, "%s: no communicator", what);
  if (k == NULL) return;
  int kr = fold_comm_rank(k);
  CHECK(fold_comm_size(k) == m, "%s: size %d, want %d", what, fold_comm_size(k), m);
  CHECK(kr >= 0 && kr < m && mem[kr] == me, "%s: child rank %d is not in place", what, kr);
  CHECK(strcmp(fold_comm_transport(k), m == 1 ? "inproc" : fold_comm_transport(w)) == 0 || m < n,
        "%s: transport %s", what, fold_comm_transport(k));
  int64_t ids[MAXR];
  for (int i = 0; i < m; i++) ids[i] = mem[i];
  exercise(k, ids, what);
  /* nested: split the child by parity of its ranks, high ranks first */
  fold_comm *kk = NULL;
  int64_t kids[MAXR];
  int km = 0;
  CHECK_OK(fold_comm_split(k, kr % 2, -kr, &kk), k);
  if (kk) {
    for (int i = m - 1; i >= 0; i--)
      if (i % 2 == kr % 2) kids[km++] = mem[i];
    CHECK(fold_comm_size(kk) == km, "%s: nested size %d, want %d", what, fold_comm_size(kk), km);
    exercise(kk, kids, what);
  }
  /* a dup of the child: same members, same order, its own messages */
  fold_comm *d = NULL;
  CHECK_OK(fold_comm_dup(k, &d), k);
  if (d) {
    CHECK(fold_comm_size(d) == m && fold_comm_rank(d) == kr, "%s: dup differs", what);
    exercise(d, ids, what);
  }
  /* destroy in an order that depends on the seed: parents before children too */
  switch (seed % 3) {
  case 0: fold_comm_destroy(kk); fold_comm_destroy(d); fold_comm_destroy(k); break;
  case 1:
    fold_comm_destroy(k);
    if (kk) exercise(kk, kids, "nested, after its parent was destroyed");
    fold_comm_destroy(kk);
    fold_comm_destroy(d);
    break;
  default: fold_comm_destroy(d); fold_comm_destroy(k); fold_comm_destroy(kk); break;
  }
  CHECK_OK(fold_barrier(w), w);
}

void comm_suite_interleave(fold_comm *w) {
  int n = fold_comm_size(w), me = fold_comm_rank(w);
  fold_comm *k = NULL, *h = NULL;
  CHECK_OK(fold_comm_dup(w, &k), w);
  /* two halves too: siblings of different sizes at once */
  CHECK_OK(fold_comm_split(w, me < n / 3 ? 0 : 1, 0, &h), w);
  if (!k || !h) return;
  /* ring: every round's send needs the previous round's receive, so a rank
   * that stops stepping one communicator stalls its neighbours there */
  CHECK_OK(fold_comm_set_algo(w, "allreduce=ring"), w);
  CHECK_OK(fold_comm_set_algo(k, "allreduce=ring"), k);
  enum { L = 4 * 64 };
  static _Thread_local int64_t a[L], b[L], ra[L], rb[L];
  int len = 4 * n;
  for (int it = 0; it < 4; it++) {
    int64_t c = 1, rc = 0;
    for (int j = 0; j < len; j++) {
      a[j] = me + it + j;
      b[j] = 2 * me + it + j;
      ra[j] = rb[j] = 0;
    }
    fold_request *qa = NULL, *qb = NULL, *qc = NULL;
    /* ranks start them in different orders across communicators (allowed:
     * the order per communicator is the same) */
    if ((me + it) % 2) {
      CHECK_OK(fold_iallreduce(a, ra, (size_t)len, FOLD_INT64, FOLD_SUM, w, &qa), w);
      CHECK_OK(fold_iallreduce(b, rb, (size_t)len, FOLD_INT64, FOLD_SUM, k, &qb), k);
      CHECK_OK(fold_iallreduce(&c, &rc, 1, FOLD_INT64, FOLD_SUM, h, &qc), h);
    } else {
      CHECK_OK(fold_iallreduce(&c, &rc, 1, FOLD_INT64, FOLD_SUM, h, &qc), h);
      CHECK_OK(fold_iallreduce(b, rb, (size_t)len, FOLD_INT64, FOLD_SUM, k, &qb), k);
      CHECK_OK(fold_iallreduce(a, ra, (size_t)len, FOLD_INT64, FOLD_SUM, w, &qa), w);
    }
    /* rank 0 waits the dup first, the others the world: a wait on one
     * communicator must drive the others' collectives too, or rank 0 would
     * stall the world's ring and its neighbour the dup's */
    if (me == 0) {
      CHECK_OK(fold_wait(qb), k);
      CHECK_OK(fold_wait(qc), h);
      CHECK_OK(fold_wait(qa), w);
    } else {
      CHECK_OK(fold_wait(qa), w);
      CHECK_OK(fold_wait(qc), h);
      CHECK_OK(fold_wait(qb), k);
    }
    int64_t s = (int64_t)n * (n - 1) / 2;
    for (int j = 0; j < len; j++)
      CHECK(ra[j] == s + (int64_t)n * (it + j) && rb[j] == 2 * s + (int64_t)n * (it + j),
            "interleave: [%d] %lld %lld", j, (long long)ra[j], (long long)rb[j]);
    CHECK(rc == fold_comm_size(h), "interleave: half sum %lld, want %d", (long long)rc, fold_comm_size(h));
  }
  CHECK_OK(fold_comm_set_algo(w, "allreduce=auto"), w);
  fold_comm_destroy(h);
  fold_comm_destroy(k);
  CHECK_OK(fold_barrier(w), w);
}

void comm_suite_isolation(fold_comm *w) {
  int n = fold_comm_size(w), me = fold_comm_rank(w);
  if (n < 2) return;
  fold_comm *k = NULL, *s = NULL;
  CHECK_OK(fold_comm_dup(w, &k), w);
  CHECK_OK(fold_comm_split(w, 0, -me, &s), w); /* the same ranks reversed */
  if (!k || !s) return;
  int32_t ww = -1, kv = -1, sv = -1;
  fold_request *rw = NULL, *rs = NULL;
  fold_status st;
  /* wildcard receives posted first on the world and the sibling */
  CHECK_OK(fold_irecv(&ww, 1, FOLD_INT32, FOLD_ANY_SOURCE, FOLD_ANY_TAG, w, &rw), w);
  CHECK_OK(fold_irecv(&sv, 1, FOLD_INT32, FOLD_ANY_SOURCE, FOLD_ANY_TAG, s, &rs), s);
  /* the dup's ring, same tags the others would take */
  int to = (me + 1) % n, from = (me + n - 1) % n;
  int32_t v = 1000 + me;
  fold_request *sq;
  CHECK_OK(fold_isend(&v, 1, FOLD_INT32, to, 3, k, &sq), k);
  CHECK_OK(fold_recv_status(&kv, 1, FOLD_INT32, FOLD_ANY_SOURCE, FOLD_ANY_TAG, k, &st), k);
  CHECK(kv == 1000 + from && st.source == from && st.tag == 3, "isolation: dup got %d from %d", kv, st.source);
  CHECK_OK(fold_wait(sq), k);
  /* peers send on the world and the sibling only after the barrier below */
  int done = 1;
  CHECK_OK(fold_test_status(rw, &done, &st), w);
  CHECK(!done, "isolation: the world's wildcard receive took %d from %d tag %d", ww, st.source, st.tag);
  int sdone = 1;
  CHECK_OK(fold_test_status(rs, &sdone, &st), s);
  CHECK(!sdone, "isolation: the sibling's wildcard receive took %d from %d tag %d", sv, st.source, st.tag);
  if (done || sdone) return;
  CHECK_OK(fold_barrier(k), k);
  /* now each gets its own: sibling rank r is world rank n-1-r */
  int32_t a = 2000 + me, b = 3000 + me;
  CHECK_OK(fold_send(&a, 1, FOLD_INT32, to, 4, w), w);
  int srank = fold_comm_rank(s), sto = (srank + 1) % n;
  CHECK_OK(fold_send(&b, 1, FOLD_INT32, sto, 5, s), s);
  CHECK_OK(fold_wait_status(rw, &st), w);
  CHECK(ww == 2000 + from && st.source == from && st.tag == 4, "isolation: world got %d from %d tag %d", ww,
        st.source, st.tag);
  CHECK_OK(fold_wait_status(rs, &st), s);
  int sfrom = (srank + n - 1) % n;
  CHECK(sv == 3000 + (n - 1 - sfrom) && st.source == sfrom && st.tag == 5,
        "isolation: sibling got %d from %d tag %d (want from %d)", sv, st.source, st.tag, sfrom);
  CHECK(fold_comm_rank(s) == n - 1 - me, "isolation: reversed rank %d", fold_comm_rank(s));
  fold_comm_destroy(s);
  fold_comm_destroy(k);
  CHECK_OK(fold_barrier(w), w);
}

void comm_suite_badargs(fold_comm *w) {
  int n = fold_comm_size(w), me = fold_comm_rank(w);
  fold_comm *k = (fold_comm *)&k;
  const char *e;
  /* a negative color on the last rank */
  int bad = n - 1;
  CHECK_RC(fold_comm_split(w, me == bad ? -5 : 0, 0, &k), FOLD_EINVAL, w);
  CHECK(k == NULL, "bad color: a communicator was made");
  e = fold_comm_last_error(w);
  char want[64];
  snprintf(want, sizeof want, "rank %d: color -5", bad);
  CHECK(strstr(e, want) != NULL, "bad color message: %s", e);
  /* a NULL out-pointer on rank 0 */
  CHECK_RC(fold_comm_split(w, 0, 0, me == 0 ? NULL : &k), FOLD_EINVAL, w);
  CHECK(k == NULL, "NULL newcomm: a communicator was made");
  e = fold_comm_last_error(w);
  CHECK(strstr(e, "rank 0: newcomm is NULL") != NULL, "NULL newcomm message: %s", e);
  CHECK_RC(fold_comm_split(NULL, 0, 0, &k), FOLD_EINVAL, NULL);
  CHECK(strstr(fold_comm_last_error(NULL), "NULL") != NULL, "NULL comm message");
  CHECK_RC(fold_comm_dup(w, NULL), FOLD_EINVAL, w);
  CHECK_RC(fold_comm_split_host(w, NULL), FOLD_EINVAL, w);
  /* the world is fine */
  int64_t one = 1, sum = 0;
  CHECK_OK(fold_allreduce(&one, &sum, 1, FOLD_INT64, FOLD_SUM, w), w);
  CHECK(sum == n, "after bad arguments: %lld", (long long)sum);
}

void comm_suite_child_mismatch(fold_comm *w) {
  int n = fold_comm_size(w), me = fold_comm_rank(w);
  if (n < 2) return;
  fold_comm *k = NULL;
  CHECK_OK(fold_comm_dup(w, &k), w);
  if (!k) return;
  int64_t one = 1, sum = 0;
  if (me == 0) CHECK_RC(fold_allreduce(&one, &sum, 1, FOLD_INT64, FOLD_SUM, k), FOLD_EMISMATCH, k);
  else CHECK_RC(fold_barrier(k), FOLD_EMISMATCH, k);
  CHECK_RC(fold_barrier(k), FOLD_EMISMATCH, k); /* the child stays failed */
  /* the world does not */
  CHECK_OK(fold_allreduce(&one, &sum, 1, FOLD_INT64, FOLD_SUM, w), w);
  CHECK(sum == n, "world after a child's mismatch: %lld", (long long)sum);
  fold_comm_destroy(k);
  /* and new children work */
  CHECK_OK(fold_comm_dup(w, &k), w);
  sum = 0;
  CHECK_OK(fold_allreduce(&one, &sum, 1, FOLD_INT64, FOLD_SUM, k), k);
  CHECK(sum == n, "new child after a mismatch: %lld", (long long)sum);
  fold_comm_destroy(k);
}

void comm_suite_host(fold_comm *w) {
  fold_comm *h = NULL;
  CHECK_OK(fold_comm_split_host(w, &h), w);
  if (!h) return;
  CHECK(fold_comm_size(h) == fold_comm_local_size(w) && fold_comm_rank(h) == fold_comm_local_rank(w),
        "split_host: %d of %d, local %d of %d", fold_comm_rank(h), fold_comm_size(h), fold_comm_local_rank(w),
        fold_comm_local_size(w));
  int64_t one = 1, sum = 0;
  CHECK_OK(fold_allreduce(&one, &sum, 1, FOLD_INT64, FOLD_SUM, h), h);
  CHECK(sum == fold_comm_size(h), "split_host allreduce %lld", (long long)sum);
  CHECK(fold_comm_local_size(h) == fold_comm_size(h), "a host comm is all local");
  fold_comm_destroy(h);
}

void comm_suite_abort_family(fold_comm *w) {
  int n = fold_comm_size(w), me = fold_comm_rank(w);
  fold_comm *d = NULL, *k = NULL, *g = NULL, *s = NULL, *gk = NULL;
  CHECK_OK(fold_comm_dup(w, &d), w);
  CHECK_OK(fold_comm_dup(w, &s), w);
  if (!d || !s) return;
  CHECK_OK(fold_comm_split(d, me % 2, me, &k), d);
  if (!k) return;
  CHECK_OK(fold_comm_dup(k, &g), k);
  CHECK_OK(fold_comm_dup(g, &gk), g);
  if (!g || !gk) return;
  /* the middle generation goes: g now hangs off d */
  CHECK_OK(fold_comm_destroy(k), NULL);
  int64_t one = 1, sum = 0;
  CHECK_OK(fold_allreduce(&one, &sum, 1, FOLD_INT64, FOLD_SUM, g), g);
  CHECK(sum == (n + 1 - me % 2) / 2, "grandchild before the abort: %lld", (long long)sum);
  /* every rank aborts d (local: nobody waits for anybody) */
  CHECK_OK(fold_comm_abort(d), NULL);
  CHECK_RC(fold_barrier(d), FOLD_EABORTED, d);
  CHECK(strstr(fold_comm_last_error(d), "aborted by fold_comm_abort") != NULL, "d: %s", fold_comm_last_error(d));
  CHECK_RC(fold_allreduce(&one, &sum, 1, FOLD_INT64, FOLD_SUM, g), FOLD_EABORTED, g);
  CHECK(strstr(fold_comm_last_error(g), "split or duplicated from") != NULL, "g: %s", fold_comm_last_error(g));
  int v = 0;
  CHECK_RC(fold_send(&v, 1, FOLD_INT32, 0, 0, gk), FOLD_EABORTED, gk); /* two generations down */
  /* the aborted one's parent and sibling go on */
  sum = 0;
  CHECK_OK(fold_allreduce(&one, &sum, 1, FOLD_INT64, FOLD_SUM, s), s);
  CHECK(sum == n, "sibling after an abort: %lld", (long long)sum);
  sum = 0;
  CHECK_OK(fold_allreduce(&one, &sum, 1, FOLD_INT64, FOLD_SUM, w), w);
  CHECK(sum == n, "parent after a child's abort: %lld", (long long)sum);
  /* a child made now from the sibling is not aborted */
  fold_comm *s2 = NULL;
  CHECK_OK(fold_comm_dup(s, &s2), s);
  if (s2) {
    sum = 0;
    CHECK_OK(fold_allreduce(&one, &sum, 1, FOLD_INT64, FOLD_SUM, s2), s2);
    CHECK(sum == n, "sibling's child: %lld", (long long)sum);
    fold_comm_destroy(s2);
  }
  fold_comm_destroy(gk);
  fold_comm_destroy(g);
  fold_comm_destroy(d);
  fold_comm_destroy(s);
}

void comm_suite_all(fold_comm *w, int cases) {
  comm_suite_badargs(w);
  comm_suite_host(w);
  comm_suite_isolation(w);
  comm_suite_interleave(w);
  for (int s = 1; s <= cases; s++) comm_suite_matrix(w, (unsigned)s);
  comm_suite_child_mismatch(w);
  comm_suite_abort_family(w);
}
