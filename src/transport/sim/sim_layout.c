/* sim_layout.c — the simulated world's host layout as hier's split needs it, made once per simulator and shared read-only by its ranks. */
#include <stdlib.h>

#include "transport/sim/sim.h"

static struct fold_sim *sim_of(const fold_comm *c) {
  return fold__sim_is(c) ? (struct fold_sim *)c->clock_ctx : NULL;
}

static void layout_free(fold__sim_layout *L) {
  if (L == NULL) return;
  free(L->host_of);
  free(L->local);
  free(L->start);
  free(L->members);
  free(L);
}

/* O(n): hosts numbered in the order of their lowest rank, members in rank order. */
static fold__sim_layout *layout_make(const struct fold_sim *sim) {
  int n = sim->n, ns = sim->host_of ? sim->nhosts : n;
  fold__sim_layout *L = calloc(1, sizeof *L);
  int *idx = malloc((size_t)ns * sizeof *idx), *cnt = calloc((size_t)ns + 1, sizeof *cnt);
  if (L) {
    L->host_of = malloc((size_t)n * sizeof *L->host_of);
    L->local = malloc((size_t)n * sizeof *L->local);
    L->start = malloc(((size_t)ns + 1) * sizeof *L->start);
    L->members = malloc((size_t)n * sizeof *L->members);
  }
  if (!L || !idx || !cnt || !L->host_of || !L->local || !L->start || !L->members) {
    free(idx);
    free(cnt);
    layout_free(L);
    return NULL;
  }
  for (int h = 0; h < ns; h++) idx[h] = -1;
  int nh = 0;
  for (int r = 0; r < n; r++) {
    int s = sim->host_of ? sim->host_of[r] : r;
    if (idx[s] < 0) idx[s] = nh++;
    L->host_of[r] = idx[s];
    L->local[r] = cnt[idx[s]]++;
  }
  L->n = n;
  L->nhosts = nh;
  L->maxh = 0;
  L->ppn = cnt[0];
  L->start[0] = 0;
  for (int h = 0; h < nh; h++) {
    if (cnt[h] > L->maxh) L->maxh = cnt[h];
    if (cnt[h] != L->ppn) L->ppn = 0;
    L->start[h + 1] = L->start[h] + cnt[h];
  }
  for (int r = 0; r < n; r++) L->members[L->start[L->host_of[r]] + L->local[r]] = r;
  L->even = 1;
  for (int r = 0; r < n && L->even; r++) L->even = L->host_of[r] == r / L->maxh && cnt[L->host_of[r]] == L->maxh;
  free(idx);
  free(cnt);
  return L;
}

const fold__sim_layout *fold__sim_layout_get(const fold_comm *c) {
  struct fold_sim *sim = sim_of(c);
  if (sim == NULL) return NULL;
  if (sim->layout == NULL) sim->layout = layout_make(sim);
  return sim->layout;
}

void fold__sim_layout_free(struct fold_sim *sim) {
  layout_free(sim->layout);
  sim->layout = NULL;
}
