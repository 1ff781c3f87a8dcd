/* shm_signal.c — remove this process's still-linked shm segments when SIGTERM or SIGINT ends it.
 *
 * A segment stays linked in /dev/shm from its creation until every rank
 * has mapped it (fold__shm_map_unlink at join). A rank ended in between
 * left it behind, and the next job's sweep warned about it: foldrun ends
 * the other ranks with SIGTERM as soon as one fails, often during the
 * rendezvous. So while any segment is linked, SIGTERM and SIGINT run a
 * handler that unlinks the registered names and then lets the signal do
 * what it would have done: the program's own handler, if it had installed
 * one before (called with the same arguments), else the default action
 * (restored and re-raised, so the process still dies "killed by signal").
 * A signal the program ignores is left alone: it ends nothing. SIGKILL
 * cannot be caught; the sweep of stale segments (shm_seg.c) covers it.
 *
 * Async-signal safety: the handler only reads the registry (names written
 * before their slot is published with a release store) and calls unlink(),
 * sigaction() and raise(). The full paths are precomputed at registration.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "transport/shm/shm_seg.h"

#define REG_SLOTS 32 /* segments linked at once: one per communicator in its bootstrap */

static struct {
  atomic_int used; /* 0 free, 1 being written, 2 published */
  char path[FOLD__SHM_NAME_MAX + 16];
} reg[REG_SLOTS];

static const int sigs[2] = {SIGTERM, SIGINT};
static struct sigaction prev[2]; /* the dispositions before ours */
static atomic_int installed[2];  /* 1: ours is installed over prev[i] */
static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static void on_signal(int sig, siginfo_t *info, void *uctx) {
  for (int i = 0; i < REG_SLOTS; i++)
    if (atomic_load_explicit(&reg[i].used, memory_order_acquire) == 2)
      unlink(reg[i].path);
  int k = sig == SIGTERM ? 0 : 1;
  const struct sigaction *p = &prev[k];
  if ((p->sa_flags & SA_SIGINFO) && p->sa_sigaction) {
    p->sa_sigaction(sig, info, uctx);
    return;
  }
  if (!(p->sa_flags & SA_SIGINFO) && p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
    p->sa_handler(sig);
    return;
  }
  /* the default action: restore it and re-raise; the signal is blocked
   * while we run, so it is delivered (and ends us) once we return */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  raise(sig);
}

static void install(void) {
  for (int i = 0; i < 2; i++) {
    struct sigaction old;
    if (sigaction(sigs[i], NULL, &old) != 0)
      continue;
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN)
      continue; /* ignored: the signal ends nothing, so nothing is left behind */
    prev[i] = old;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaddset(&sa.sa_mask, SIGINT);
    if (sigaction(sigs[i], &sa, NULL) == 0)
      atomic_store(&installed[i], 1);
  }
}

int fold__shm_signal_register(const char *name) {
  pthread_once(&install_once, install);
  for (int i = 0; i < REG_SLOTS; i++) {
    int expect = 0;
    if (!atomic_compare_exchange_strong(&reg[i].used, &expect, 1))
      continue;
    snprintf(reg[i].path, sizeof reg[i].path, "/dev/shm%s", name); /* name starts with '/' */
    atomic_store_explicit(&reg[i].used, 2, memory_order_release);
    return i;
  }
  return -1; /* full: this segment relies on the sweep alone */
}

void fold__shm_signal_unregister(int slot) {
  if (slot >= 0 && slot < REG_SLOTS)
    atomic_store_explicit(&reg[slot].used, 0, memory_order_release);
}
