/* comm_local.c — the communicators of in-process worlds: ranks as threads (fold_comm_init_threads) and simulated ranks (fold_sim_create, fold_sim_destroy), made here on transports those layers build.
 *
 * The transports build transport state only (docs/design.md §3): the
 * inproc transport a world of n instances, the simulator its state and one
 * instance per rank. Making, configuring and freeing communicators is this
 * layer's, as for the worlds of fold_init (bootstrap) and the
 * sub-communicators (comm_split.c). */
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "transport/sim/sim.h"
#include "transport/transport.h"

/* ---- ranks as threads ------------------------------------------------------------ */

int fold_comm_init_threads(int n, fold_comm **comms) {
  if (comms == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_comm_init_threads: comms is NULL");
  if (n < 1)
    return fold__error(NULL, FOLD_EINVAL, "fold_comm_init_threads: n = %d, need n >= 1", n);
  /* every communicator first, then the world's transports: nothing can
   * fail once a transport exists (an inproc instance destroyed before its
   * communicator would have no one to tell) */
  fold__tp **tps = malloc((size_t)n * sizeof *tps);
  int rc = tps ? FOLD_OK : FOLD_ENOMEM, made = 0;
  while (rc == FOLD_OK && made < n && (rc = fold__comm_alloc(made, n, &comms[made])) == FOLD_OK)
    made++;
  if (rc == FOLD_OK)
    rc = fold__inproc_create(n, tps);
  if (rc != FOLD_OK) {
    for (int i = 0; i < made; i++) {
      fold__comm_free(comms[i]);
      comms[i] = NULL;
    }
    free(tps);
    return fold__error(NULL, rc, "fold_comm_init_threads: cannot create %d ranks (rank %d failed)", n, made);
  }
  for (int i = 0; i < n; i++) {
    fold__comm_add_tp(comms[i], tps[i]); /* the first transport: cannot fail */
    for (int p = 0; p < n; p++)
      comms[i]->peer_tp[p] = p == i ? NULL : tps[i];
  }
  free(tps);
  /* One host, unless FOLD_TEST_HOST_MAP splits the threads into test hosts
   * (as split_host and hier do, comm_split.c): selection sees that layout. */
  uint64_t *host = fold__param_str(FOLD__P_TEST_HOST_MAP) ? malloc((size_t)n * sizeof *host) : NULL;
  for (int i = 0; host && i < n; i++) host[i] = (uint64_t)(fold__test_host(i) + 1);
  for (int i = 0; host && i < n; i++) fold__comm_set_layout(comms[i], host, n);
  free(host);
  for (int i = 0; i < n; i++) /* FOLD_PROGRESS_THREAD: a failure leaves that rank without */
    fold__pthread_start(comms[i]);
  return FOLD_OK;
}

/* ---- simulated ranks --------------------------------------------------------------- */

int fold_sim_create(int n, const fold_sim_params *params, fold_sim **out, fold_comm **comms) {
  if (out)
    *out = NULL;
  if (out == NULL || comms == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_sim_create: %s is NULL", out ? "comms" : "sim");
  if (n < 1)
    return fold__error(NULL, FOLD_EINVAL, "fold_sim_create: n = %d, need n >= 1", n);
  struct fold_sim *sim;
  int rc = fold__sim_new(n, params, &sim);
  if (rc != FOLD_OK)
    return rc;
  for (int i = 0; i < n && rc == FOLD_OK; i++) {
    fold_comm *c;
    if ((rc = fold__comm_alloc_one_tp(i, n, sim->no_lost, &c)) != FOLD_OK)
      break;
    fold__sim_attach(sim, i, c);
    fold__tp *tp = &sim->tps[i]->base;
    fold__comm_add_tp(c, tp); /* the first transport: cannot fail */
    /* no peer table (fold__comm_alloc_one_tp): tp reaches every peer, the
     * engine delivers messages to oneself (fold__peer_tp); n tables of n
     * pointers would be 32 GiB at 65,536 ranks */
  }
  if (rc != FOLD_OK) {
    fold_sim_destroy(sim);
    return rc;
  }
  memcpy(comms, sim->comms, (size_t)n * sizeof *comms);
  FOLD__INFO(sim->comms[0], "simulated world of %d ranks: latency %g s, byte_time %g s, op_time %g s, op_overhead %g s",
             n, sim->p.latency, sim->p.byte_time, sim->p.op_time, sim->p.op_overhead);
  *out = sim;
  return FOLD_OK;
}

int fold_sim_destroy(fold_sim *sim) {
  if (sim == NULL)
    return FOLD_OK;
  if (sim->running)
    return fold__error(NULL, FOLD_EINVAL, "fold_sim_destroy: called while the simulator is running");
  /* The ranks first: their transports drop the send references they hold, so
   * that only the messages themselves are left in the queue. */
  for (int i = 0; sim->comms && i < sim->n; i++) {
    fold_comm *c = sim->comms[i];
    sim->comms[i] = NULL;
    fold__comm_free(c);
  }
  fold__sim_free(sim);
  return FOLD_OK;
}

int fold__sim_comm_destroy(fold_comm *c) {
  struct fold_sim *sim = fold__engine_virtual(c) ? c->clock_ctx : NULL;
  if (sim == NULL) { /* not ours after all: the ordinary path */
    fold__comm_free(c);
    return FOLD_OK;
  }
  if (sim->running)
    return fold__error(c, FOLD_EINVAL, "fold_comm_destroy: rank %d: called while the simulator is running",
                       c->rank);
  const int d = c->rank;
  sim->comms[d] = NULL;
  fold__comm_free(c);
  /* Peers learn that d is gone: those that wait for it now fail with
   * FOLD_EPEER; for the others, later sends to or receives from d fail. */
  for (int i = 0; i < sim->n; i++)
    if (sim->comms[i])
      fold__peer_lost(sim->comms[i], d, 0, "destroyed with fold_comm_destroy");
  return FOLD_OK;
}
