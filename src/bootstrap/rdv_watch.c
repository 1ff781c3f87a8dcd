/* rdv_watch.c — rendezvous waits that say, every few seconds, how many ranks joined and which are missing. */
#include <stdio.h>
#include <string.h>

#include "bootstrap/store.h"
#include "core/internal.h"

#define WARN_EVERY_NS (5LL * 1000000000) /* at most; a short FOLD_TIMEOUT warns at a third of it */

static void key_of(const fold__rdv_watch *w, char *out, size_t cap, const char *what, int r) {
  snprintf(out, cap, "%s%s/%d", w->pfx, what, r);
}

int fold__rdv_missing(const fold__rdv_watch *w, const char *what, char *list, size_t cap, int max_named) {
  char key[FOLD__STORE_KEY_MAX + 1];
  size_t n = 0;
  int missing = 0;
  if (cap) list[0] = '\0';
  for (int p = 0; p < w->size; p++) {
    key_of(w, key, sizeof key, what, p);
    char v[1];
    size_t len;
    int rc = fold__store_get(w->store, key, v, 0, &len, 0); /* look once */
    if (rc == 0)
      continue;
    if (rc != FOLD_ETIMEDOUT)
      return rc;
    if (missing < max_named && n + 16 < cap)
      n += (size_t)snprintf(list + n, cap - n, "%s%d", missing ? ", " : "", p);
    missing++;
  }
  if (missing > max_named && n + 1 < cap)
    snprintf(list + n, cap - n, ", ... (%d ranks in all)", missing);
  return missing;
}

void fold__rdv_watch_start(fold__rdv_watch *w) {
  int64_t every = WARN_EVERY_NS;
  if (w->timeout_ns / 3 < every)
    every = w->timeout_ns / 3;
  if (every < 1000000) /* 1 ms: a zero timeout warns never */
    every = w->timeout_ns;
  w->every_ns = every;
  w->start_ns = fold__clock_mono(NULL);
  w->next_ns = w->start_ns + every;
}

/* The wait went on for a while: say how far the rendezvous got. Ranks
 * that have not joined are the usual cause; with none missing, a rank
 * that joined is slow to publish (its transports, or the wrong FOLD_STORE
 * for a later round). Rank 0 is the one missing whenever it is: it serves
 * a tcp store, so ranks that wait for it may have been given another
 * address than it. */
static void warn_progress(const fold__rdv_watch *w, const char *phase) {
  char list[200];
  int missing = -1;
  /* tcp and callback stores count the joins ("<pfx>joined"): a round in
   * which everyone joined, the usual slow case of a large job, costs one
   * request here rather than a look at every rank's key (size^2 requests
   * at one server when all ranks wait). The file store has no server. */
  if (w->store->kind != FOLD__STORE_FILE) {
    char key[FOLD__STORE_KEY_MAX + 1];
    int64_t joined = 0;
    snprintf(key, sizeof key, "%sjoined", w->pfx);
    if (fold__store_add(w->store, key, 0, &joined, w->deadline_ns) < 0)
      return; /* the store failed: the wait reports it */
    if (joined >= w->size)
      missing = 0;
  }
  if (missing < 0)
    missing = fold__rdv_missing(w, "join", list, sizeof list, 16);
  double waited = (double)(fold__clock_mono(NULL) - w->start_ns) / 1e9;
  double timeout = (double)w->timeout_ns / 1e9;
  if (missing < 0)
    return; /* the store failed: the wait reports it */
  if (missing == 0) {
    fold__log(FOLD__LOG_WARN, w->rank,
              "rendezvous at %s: all %d ranks joined, still %s after %.0f s (gives up at FOLD_TIMEOUT=%g s)",
              w->url, w->size, phase, waited, timeout);
    return;
  }
  fold__log(FOLD__LOG_WARN, w->rank,
            "rendezvous at %s: %d of %d ranks joined after %.0f s; missing: rank%s %s (gives up at "
            "FOLD_TIMEOUT=%g s). Check that they were started, that every rank was given this same store "
            "address (FOLD_STORE, or MASTER_ADDR/MASTER_PORT), and that the world size %d (FOLD_SIZE, "
            "WORLD_SIZE or the launcher's -n) is right",
            w->url, w->size - missing, w->size, waited, missing > 1 ? "s" : "", list, timeout, w->size);
}

int fold__rdv_get(fold__rdv_watch *w, const char *key, void *buf, size_t cap, size_t *len, const char *phase) {
  for (;;) {
    int64_t until = w->next_ns < w->deadline_ns ? w->next_ns : w->deadline_ns;
    int rc = fold__store_get(w->store, key, buf, cap, len, until);
    if (rc != FOLD_ETIMEDOUT || until >= w->deadline_ns)
      return rc;
    if (fold__log_level_env() >= FOLD__LOG_WARN)
      warn_progress(w, phase);
    w->next_ns += w->every_ns;
    int64_t now = fold__clock_mono(NULL);
    if (w->next_ns < now) /* a slow store call: no burst of warnings */
      w->next_ns = now + w->every_ns;
  }
}
