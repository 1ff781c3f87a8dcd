/* time.c — the engine's clock and cost interface (charge, reduction cost, wake-at), link measurements and FOLD_INJECT_DELAY. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "engine/engine.h"
#include "transport/transport.h"

void fold__engine_hooks_set(fold_comm *c, const fold__clock_hooks *hooks) { c->svc->hooks = hooks; }

void fold__engine_charge(fold_comm *c, double seconds) {
  const fold__clock_hooks *h = c->svc->hooks;
  if (h && h->charge && seconds > 0) h->charge(c, seconds);
}

double fold__engine_reduce_cost(const fold_comm *c, size_t bytes) {
  const fold__clock_hooks *h = c->svc->hooks;
  return h && h->reduce_cost ? h->reduce_cost(c, bytes) : 0.0;
}

int fold__engine_wake_at(fold_comm *c, int64_t t_ns) {
  const fold__clock_hooks *h = c->svc->hooks;
  return h && h->wake_at ? h->wake_at(c, t_ns) : FOLD_OK;
}

int fold__engine_drive(fold_comm *c, fold_request *until) { return c->svc->hooks->drive(c, until); }

int64_t fold__engine_inject_delay(const fold_comm *c) { return c->svc->inject_delay_ns; }

int64_t fold__link_ns(fold_comm *c, int peer, size_t bytes) {
  if (peer < 0 || peer >= c->size || peer == c->rank) return -1;
  fold__tp *tp = fold__peer_tp(c, peer);
  fold__link l;
  if (tp == NULL || tp->ops->link == NULL || tp->ops->link(tp, fold__root_rank(c, peer), &l) != 0) return -1;
  double ns = l.lat_ns + (double)bytes * l.ns_per_byte;
  return ns > 0 ? (int64_t)(ns + 0.5) : 0;
}

void fold__meter_add(fold__meter *m, double v) {
  if (v > 0 && isfinite(v)) m->v[m->n++ % FOLD__METER] = (float)v;
}

double fold__meter_min(const fold__meter *m) {
  uint32_t k = m->n < FOLD__METER ? m->n : FOLD__METER;
  double best = 0;
  for (uint32_t i = 0; i < k; i++)
    if (best == 0 || m->v[i] < best) best = m->v[i];
  return best;
}

double fold__meter_median(const fold__meter *m) {
  uint32_t k = m->n < FOLD__METER ? m->n : FOLD__METER;
  float v[FOLD__METER];
  for (uint32_t i = 0; i < k; i++) { /* insertion sort of at most 8 */
    uint32_t j = i;
    for (; j > 0 && v[j - 1] > m->v[i]; j--) v[j] = v[j - 1];
    v[j] = m->v[i];
  }
  return k ? v[(k - 1) / 2] : 0;
}

/* ---- FOLD_INJECT_DELAY ---------------------------------------------------------- */

/* The longest delay accepted: a day (a typo of minutes for seconds is
 * still a valid, if long, straggler). */
#define FOLD__INJECT_MAX_S 86400.0

/* Parse "RANK:SECONDS[,RANK:SECONDS...]"; *mine gets rank `me`'s seconds
 * (the last item naming it wins; 0 if none). Returns 0, or -1 if malformed. */
static int parse_delay(const char *v, int me, double *mine) {
  *mine = 0;
  const char *p = v;
  for (;;) {
    char *end;
    long r = strtol(p, &end, 10);
    if (end == p || *end != ':' || r < 0 || r > INT32_MAX) return -1;
    p = end + 1;
    double s = strtod(p, &end);
    if (end == p || !isfinite(s) || s < 0 || s > FOLD__INJECT_MAX_S) return -1;
    if (r == me) *mine = s;
    p = end;
    if (*p == '\0') return 0;
    if (*p++ != ',') return -1;
  }
}

/* Read once per communicator (at its creation). A bad value is said once
 * per process (fold__warn_env); a good one once per process at WARN, since
 * it makes a job slow on purpose and must not go unnoticed in a log. */
void fold__inject_delay_init(fold_comm *c) {
  const char *v = fold__param_str(FOLD__P_INJECT_DELAY);
  c->svc->inject_delay_ns = 0;
  if (v == NULL || *v == '\0') return;
  double s;
  if (parse_delay(v, c->rank, &s) != 0) {
    fold__warn_env("FOLD_INJECT_DELAY", v, "is not RANK:SECONDS[,RANK:SECONDS...] (seconds in [0, %.0f]); ignored",
                   FOLD__INJECT_MAX_S);
    return;
  }
  static atomic_int said;
  if (atomic_exchange(&said, 1) == 0 && c->log_level >= FOLD__LOG_WARN)
    fold__log(FOLD__LOG_WARN, c->rank,
              "FOLD_INJECT_DELAY=%s: the ranks named are delayed before each local reduction step of a collective "
              "(a test knob)", v);
  c->svc->inject_delay_ns = (int64_t)(s * 1e9 + 0.5); /* s >= 0: rounded to nearest */
}
