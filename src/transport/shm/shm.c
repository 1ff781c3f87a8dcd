/* shm.c — the shared-memory transport: ranks are processes on one host; its vtable, lifecycle, waiting and peer loss.
 *
 * Each rank owns a segment (shm_seg.c) with one inbound ring per peer; a
 * send streams a header (ctx, tag, length) and then the payload into the
 * receiver's ring for this rank, in chunks, so messages of any size (also
 * larger than the ring, also > 2 GiB) flow with the sender copying in and
 * the receiver copying out at the same time.
 *
 * Files: shm_send.c (sending), shm_recv.c (receiving), shm_area.c (the
 * collective area), shm_seg.c (segments), shm_ring.c (rings).
 *
 * Receiving. The header is matched at once (fold__match_posted). A matched
 * message is copied straight from the ring into the user's buffer. An
 * unmatched one is buffered in an unexpected record of exactly the
 * advertised length (capped at MSG_MAX: the peer proved job membership
 * through the authenticated store, so the length is trusted that far) and
 * handed to the engine with fold__deliver_unexp once complete; if a
 * matching receive is posted while a large one is still streaming, the
 * bytes so far are copied over and the rest goes straight to the user.
 * Why buffer rather than pause the ring until the receive is posted: the
 * ring from one peer is a single FIFO, so pausing it for tag A would also
 * hold back tag B behind it, and an application that waits for B first
 * would deadlock. The cost is memory for unexpected large messages, the
 * same as any eager protocol.
 *
 * Receipts. A user point-to-point message over EAGER_MAX is answered
 * (fold__shm_answered): its send completes only when its last byte is in
 * the ring and the receiver's receipt is back, so that a receive too small
 * for it fails the send as tcp's rendezvous does. The receiver writes the
 * receipt (OK, FOLD_EMISMATCH with its buffer size, or FOLD_EABORTED when it
 * discards the message unreceived) into its own ring to the sender,
 * between messages, once the message is matched: at the header, when a
 * receive is posted while it streams in, or, for one buffered whole, when
 * the engine hands it to a receive (it waits as a rendezvous record whose
 * pull answers). Receipts may come out of order (matching is by tag): both
 * sides number answered messages in ring order, and the receipt names the
 * number. A receiver lost first fails the waiting send as a loss.
 *
 * Waiting. poll() never blocks. wait() sleeps on the futex doorbell of the
 * own segment: poll() reads the doorbell sequence first, wait() announces
 * `sleeping` and sleeps only while the sequence is unchanged, and a sender
 * bumps the sequence after publishing and calls FUTEX_WAKE only when the
 * owner announced sleeping; so no wake-up is lost and an awake receiver
 * costs the sender one atomic add. A producer that finds a ring full sets
 * the ring's `blocked` flag; the consumer rings the producer's doorbell
 * after freeing space. A futex cannot be slept on together with sockets,
 * so for one sleep over several transports (engine/progress.c) the
 * doorbell also has a socket: an abstract-namespace unix datagram socket
 * named after the segment, made on first use; a sleeper counts itself in
 * `sleeping` (2 each) and polls the socket, and senders that see such a
 * sleeper send it one byte. Abstract names need no cleanup and shm peers
 * share a network namespace; a stranger's datagram only wakes us early.
 *
 * Loss. Peers are watched through pidfds (readable once the process has
 * exited, zombies included) and the `gone` flags a peer sets when it
 * destroys its communicator, checked every CHECK_NS and at least every
 * SLEEP_CAP_NS while sleeping. A lost peer's ring is drained first, then
 * fold__peer_lost decides whether anything still needed it.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "transport/shm/shm_tp.h"

static const fold__tp_ops shm_ops;

/* ---- doorbell ---------------------------------------------------------- */

/* ---- doorbell ---------------------------------------------------------- */

static void futex_wake_all(_Atomic uint32_t *word) {
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Shared (not PRIVATE) futex: the word lives in memory mapped by several
 * processes. */
static void futex_wait(_Atomic uint32_t *word, uint32_t val, int64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, val, &ts, NULL, 0);
}

/* The abstract socket name of a segment's doorbell: "\0fold-bell" + name. */
static socklen_t bell_name(struct sockaddr_un *a, const char *seg) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "fold-bell%s", seg);
  if (n < 0 || (size_t)n >= sizeof a->sun_path - 1)
    n = (int)sizeof a->sun_path - 2;
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Tell the owner of p's segment that something changed. The seq_cst add
 * and load pair with the owner's seq_cst update of `sleeping` and load of
 * `bell` in shm_wait and shm_wait_arm: at least one side sees the other's
 * write. A socket sleeper gets a datagram; a full socket buffer already
 * holds wake-ups, and a refused one means it stopped sleeping. */
void fold__shm_ring_bell(fold__shm_tp *t, fold__shm_peer *p) {
  fold__shm_hdr *h = p->map.hdr;
  atomic_fetch_add_explicit(&h->bell, 1, memory_order_seq_cst);
  uint32_t s = atomic_load_explicit(&h->sleeping, memory_order_seq_cst);
  if (s & 1)
    futex_wake_all(&h->bell);
  if ((s >> 1) && t->tx_fd >= 0) {
    char one = 1;
    (void)sendto(t->tx_fd, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *)&p->bell_addr, p->bell_len);
  }
}

int fold__shm_corrupt(fold__shm_tp *t, fold__shm_peer *p, const char *what) {
  fold_comm *c = t->base.comm;
  return fold__comm_fail(c, FOLD_EINTERNAL, "rank %d: shared-memory %s peer rank %d is corrupt", c->rank, what,
                         p->rank);
}

/* ---- loss of peers --------------------------------------------------------- */

/* p exited or left: deliver what it committed to the ring, then let the
 * engine decide whether anything still needs it. */
static int peer_lost(fold__shm_tp *t, fold__shm_peer *p, const char *why) {
  fold_comm *c = t->base.comm;
  p->live = 0;
  snprintf(p->why, sizeof p->why, "%s", why);
  int rc = fold__shm_drain(t, p, UINT64_MAX);
  if (rc)
    return rc;
  /* A peer killed before the bootstrap finished never unlinked its segment. */
  shm_unlink(p->map.name);
  p->rc_n = 0; /* receipts for p have nobody to read them */
  /* Needed: a send still queued to p or waiting for its receipt, or a
   * receive p was filling. A
   * partial message nobody asked for yet is dropped: a receive posted for
   * it later finds p lost. */
  int pending = !fold__list_empty(&p->sq) || !fold__list_empty(&p->ack) || p->rx_req != NULL;
  if (!pending && p->rx_active) {
    free(p->rx_unexp);
    p->rx_unexp = NULL;
    p->rx_active = 0;
  }
  fold__peer_lost(c, p->rank, pending, p->why);
  return fold__comm_failed(c);
}

static int check_peers(fold__shm_tp *t) {
  fold_comm *c = t->base.comm;
  int64_t now = fold__now(c);
  if (now < t->next_check)
    return 0;
  t->next_check = now + CHECK_NS;
  int nf = 0;
  char why[64];
  for (int i = 0; i < t->nwatch; i++) {
    fold__shm_peer *p = &t->peers[t->watch[i]];
    if (!p->live)
      continue;
    if (atomic_load_explicit(&p->map.hdr->gone, memory_order_acquire) ||
        atomic_load_explicit(&p->in.ctl->producer_gone, memory_order_acquire)) {
      snprintf(why, sizeof why, "process %d left: communicator destroyed", p->pid);
      int rc = peer_lost(t, p, why);
      if (rc)
        return rc;
    } else if (p->pidfd >= 0) {
      t->pfd[nf].fd = p->pidfd;
      t->pfd[nf].events = POLLIN;
      t->pfd[nf].revents = 0;
      t->pfd_rank[nf++] = p->rank;
    } else if (kill(p->pid, 0) != 0 && errno == ESRCH) {
      snprintf(why, sizeof why, "process %d exited", p->pid);
      int rc = peer_lost(t, p, why);
      if (rc)
        return rc;
    }
  }
  if (nf == 0 || poll(t->pfd, (nfds_t)nf, 0) <= 0)
    return 0;
  for (int i = 0; i < nf; i++) {
    if (t->pfd[i].revents == 0)
      continue;
    fold__shm_peer *p = &t->peers[t->pfd_rank[i]];
    snprintf(why, sizeof why, "process %d exited", p->pid);
    int rc = peer_lost(t, p, why);
    if (rc)
      return rc;
  }
  return 0;
}

/* ---- the vtable ------------------------------------------------------------- */

static void tp_free(fold__shm_tp *t) {
  if (t->bell_fd >= 0)
    close(t->bell_fd);
  if (t->tx_fd >= 0)
    close(t->tx_fd);
  fold__shm_area_free(t);
  for (int i = 0; t->peers && i < t->base.comm->size; i++) {
    fold__shm_peer *p = &t->peers[i];
    if (p->pidfd >= 0)
      close(p->pidfd);
    fold__shm_map_release(&p->map);
    free(p->rc);
  }
  fold__shm_map_release(&t->own);
  free(t->peers);
  free(t->watch);
  free(t->pfd);
  free(t->pfd_rank);
  free(t);
}

int fold__shm_tp_new(fold_comm *c, fold__shm_map *own, fold__shm_map *peers, const int *pids,
                     const int *pidfds, fold__tp **out) {
  *out = NULL;
  int n = c->size;
  fold__shm_tp *t = calloc(1, sizeof *t);
  if (t) {
    fold__list_init(&t->kids);
    t->base.ops = &shm_ops;
    t->base.comm = c;
    t->bell_fd = -1;
    t->tx_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    t->own = *own;
    t->peers = calloc((size_t)n, sizeof *t->peers);
    t->watch = calloc((size_t)n, sizeof *t->watch);
    t->pfd = calloc((size_t)n, sizeof *t->pfd);
    t->pfd_rank = calloc((size_t)n, sizeof *t->pfd_rank);
    for (int p = 0; t->peers && p < n; p++) {
      fold__list_init(&t->peers[p].sq);
      fold__list_init(&t->peers[p].ack);
    }
  }
  if (t == NULL || t->peers == NULL || t->watch == NULL || t->pfd == NULL || t->pfd_rank == NULL) {
    for (int p = 0; p < n; p++) {
      fold__shm_map_release(&peers[p]);
      if (pidfds[p] >= 0)
        close(pidfds[p]);
    }
    if (t) {
      free(t->peers); /* zero-filled: tp_free would take pidfd 0 for real */
      t->peers = NULL;
      tp_free(t); /* releases own */
    } else {
      fold__shm_map_release(own);
    }
    return fold__error(c, FOLD_ENOMEM, "rank %d: out of memory creating the shm transport", c->rank);
  }
  t->own_ring = t->own.ring_bytes;
  uint64_t stride = fold__shm_stride(t->own_ring);
  int bad = -1;
  for (int i = 0; i < n; i++) {
    fold__shm_peer *p = &t->peers[i];
    p->rank = i;
    p->pidfd = pidfds[i];
    if (peers[i].hdr == NULL)
      continue;
    p->map = peers[i];
    p->pid = pids[i];
    p->bell_len = bell_name(&p->bell_addr, p->map.name);
    p->live = 1;
    void *in_slot = (char *)t->own.slot + (uint64_t)i * stride;
    if (bad < 0 && (fold__ring_attach(&p->out, p->map.slot, p->map.ring_bytes, 1) != 0 ||
                    fold__ring_attach(&p->in, in_slot, t->own_ring, 0) != 0))
      bad = i;
    t->watch[t->nwatch++] = i;
  }
  if (bad >= 0) {
    tp_free(t);
    return fold__error(c, FOLD_EINTERNAL, "rank %d: shared-memory ring with peer rank %d is corrupt at connect",
                       c->rank, bad);
  }
  t->next_check = fold__now(c) + CHECK_NS;
  fold__shm_area_make(t);
  int ncpu = fold__engine_ncpu(); /* a rank pinned to one CPU counts the host's */
  t->oversub = ncpu > 0 && t->nwatch + 1 > ncpu;
  /* Every peer is ours and nobody shares a CPU: a wait's spin need not
   * yield (a sched_yield is a system call, a few hundred ns, on every turn
   * of a wait that the answer may end in 100 ns). */
  c->own_cpu = ncpu > 0 && !t->oversub && t->nwatch + 1 == c->size;
  *out = &t->base;
  return FOLD_OK;
}

static int shm_poll(fold__tp *tp) {
  fold__shm_tp *t = (fold__shm_tp *)tp;
  fold_comm *c = tp->comm;
  if (t->down)
    return fold__comm_failed(c) ? fold__comm_failed(c) : t->down_status;
  /* Read the doorbell before looking at any ring (see shm_wait). */
  t->bell_seen = atomic_load_explicit(&t->own.hdr->bell, memory_order_seq_cst);
  if (t->area || !fold__list_empty(&t->kids))
    t->area_seen = fold__shm_area_sum(t);
  t->more = 0;
  t->moved = 0;
  uint64_t budget = 4 * t->own_ring;
  for (int i = 0; i < t->nwatch; i++) {
    fold__shm_peer *p = &t->peers[t->watch[i]];
    if (!p->live)
      continue;
    int rc = !fold__list_empty(&p->sq) || p->rc_n ? fold__shm_push(t, p) : 0;
    if (rc == 0)
      rc = fold__shm_drain(t, p, budget);
    if (rc)
      return rc;
  }
  /* Nothing moved and nothing is left over: the engine counts the pass as
   * idle, and gives the CPU away after a couple of idle microseconds when
   * the rank may share it (c->own_cpu unset; engine/progress.c). */
  int rc = check_peers(t);
  return rc ? rc : (t->moved || t->more) ? 0 : FOLD__POLL_IDLE;
}

static int shm_wait(fold__tp *tp, int64_t timeout_ns) {
  fold__shm_tp *t = (fold__shm_tp *)tp;
  if (t->down || t->more || timeout_ns <= 0)
    return 0;
  if (timeout_ns > SLEEP_CAP_NS)
    timeout_ns = SLEEP_CAP_NS; /* so that check_peers runs even if nobody rings */
  fold__shm_hdr *h = t->own.hdr;
  atomic_fetch_or_explicit(&h->sleeping, 1, memory_order_seq_cst);
  /* Any send published after poll() read bell_seen has bumped bell: then do
   * not sleep. The futex re-checks the value atomically in the kernel. */
  if (atomic_load_explicit(&h->bell, memory_order_seq_cst) == t->bell_seen &&
      ((t->area == NULL && fold__list_empty(&t->kids)) || fold__shm_area_sum(t) == t->area_seen))
    futex_wait(&h->bell, t->bell_seen, timeout_ns);
  atomic_fetch_and_explicit(&h->sleeping, ~1u, memory_order_relaxed);
  return 0;
}

/* The doorbell socket, bound on first use (see the top of the file). */
static int shm_wait_fd(fold__tp *tp) {
  fold__shm_tp *t = (fold__shm_tp *)tp;
  if (t->bell_fd >= 0 || t->tx_fd < 0)
    return t->bell_fd;
  struct sockaddr_un a;
  socklen_t len = bell_name(&a, t->own.name);
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd >= 0 && bind(fd, (const struct sockaddr *)&a, len) < 0) {
    FOLD__WARN(tp->comm, "rank %d: shm doorbell socket: bind: %s (waits over several transports take turns)",
               tp->comm->rank, strerror(errno));
    close(fd);
    fd = -1;
  }
  t->bell_fd = fd;
  return fd;
}

/* As shm_wait, for a sleep on the doorbell socket: count ourselves in, then
 * look at the sequence the last poll read. */
static int shm_wait_arm(fold__tp *tp) {
  fold__shm_tp *t = (fold__shm_tp *)tp;
  if (t->down || t->more)
    return 1;
  fold__shm_hdr *h = t->own.hdr;
  atomic_fetch_add_explicit(&h->sleeping, 2, memory_order_seq_cst);
  if (atomic_load_explicit(&h->bell, memory_order_seq_cst) != t->bell_seen ||
      ((t->area != NULL || !fold__list_empty(&t->kids)) && fold__shm_area_sum(t) != t->area_seen)) {
    atomic_fetch_sub_explicit(&h->sleeping, 2, memory_order_relaxed);
    return 1;
  }
  return 0;
}

static void shm_wait_disarm(fold__tp *tp) {
  fold__shm_tp *t = (fold__shm_tp *)tp;
  atomic_fetch_sub_explicit(&t->own.hdr->sleeping, 2, memory_order_relaxed);
  char buf[64];
  while (t->bell_fd >= 0 && recv(t->bell_fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
    ;
}

/* An answered message buffered whole (shm_recv.c) is taken by receive r,
 * or released unreceived (r NULL): deliver it and send its receipt. */
static int shm_pull(fold__tp *tp, fold__unexp *u, fold_request *r) {
  fold__shm_tp *t = (fold__shm_tp *)tp;
  fold__shm_held held;
  memcpy(&held, u->cookie, sizeof held);
  int st = FOLD_EABORTED;
  uint64_t room = 0;
  if (r) {
    room = r->bytes;
    fold__recv_fill(r, u->data, u->bytes); /* FOLD_EMISMATCH when r is too small */
    st = u->bytes > r->bytes ? FOLD_EMISMATCH : FOLD_OK;
  }
  free(u);
  if (held.rank < 0 || held.rank >= tp->comm->size)
    return 0;
  return fold__shm_answer(t, &t->peers[held.rank], held.seq, st, room);
}

static void shm_shutdown(fold__tp *tp, int status) {
  fold__shm_tp *t = (fold__shm_tp *)tp;
  if (t->down)
    return;
  t->down = 1;
  t->down_status = status;
  for (int i = 0; i < t->nwatch; i++) {
    fold__shm_peer *p = &t->peers[t->watch[i]];
    fold__req_drop_list(&p->sq, status);  /* sends queued */
    fold__req_drop_list(&p->ack, status); /* sends waiting for a receipt */
    p->sq_hdr_done = 0;
    p->rc_n = 0;
    if (p->rx_req) {
      fold__req_complete(p->rx_req, status);
      fold__req_unref(p->rx_req);
    }
    free(p->rx_unexp);
    p->rx_req = NULL;
    p->rx_unexp = NULL;
    p->rx_active = 0;
  }
}

/* Every peer has mapped the segment: the name is no longer needed, and
 * unlinking it now means nothing is left in /dev/shm however we exit. */
static void shm_joined(fold__tp *tp) { fold__shm_map_unlink(&((fold__shm_tp *)tp)->own); }

/* Receipts still queued when this rank leaves (our ring to their sender
 * was full when the last of our receives matched): that sender's send
 * waits for them, and would fail with this rank "lost" though its message
 * was received. Write them while the sender lives and drains, for at most
 * LEAVE_RECEIPTS_NS. */
#define LEAVE_RECEIPTS_NS 2000000000LL
static void leave_receipts(fold__shm_tp *t) {
  fold_comm *c = t->base.comm;
  int64_t end = fold__now(c) + LEAVE_RECEIPTS_NS;
  for (;;) {
    int left = 0;
    for (int i = 0; i < t->nwatch; i++) {
      fold__shm_peer *p = &t->peers[t->watch[i]];
      if (!p->live || p->rc_n == 0 || atomic_load_explicit(&p->map.hdr->gone, memory_order_acquire))
        continue;
      int rc = fold__shm_push_receipts(t, p);
      if (rc < 0)
        return;
      left |= rc;
    }
    if (!left || fold__now(c) > end)
      return;
    sched_yield();
  }
}

static void shm_destroy(fold__tp *tp) {
  fold__shm_tp *t = (fold__shm_tp *)tp;
  if (!t->down)
    leave_receipts(t);
  shm_shutdown(tp, FOLD_EABORTED);
  /* Tell the peers we are gone, after everything we wrote (release), and
   * wake them: senders to us and receivers from us must not wait for us. */
  atomic_store_explicit(&t->own.hdr->gone, 1, memory_order_release);
  for (int i = 0; i < t->nwatch; i++) {
    fold__shm_peer *p = &t->peers[t->watch[i]];
    atomic_store_explicit(&p->out.ctl->producer_gone, 1, memory_order_release);
    fold__shm_ring_bell(t, p);
  }
  tp_free(t);
}

/* What the large sends to tpeer measured (shm_send.c): the rate at
 * which they went into its ring, which the receiver drains as we fill it.
 * The latency (a doorbell, well under a microsecond when the receiver
 * spins) is not measured and counts as 0. */
static int shm_link(fold__tp *tp, int tpeer, fold__link *out) {
  fold__shm_tp *t = (fold__shm_tp *)tp;
  if (tpeer < 0 || tpeer >= tp->comm->size || t->peers[tpeer].map.hdr == NULL) return FOLD_EINVAL;
  double npb = fold__meter_min(&t->peers[tpeer].tx_meter);
  if (npb <= 0) return FOLD_EINVAL;
  out->lat_ns = 0;
  out->ns_per_byte = npb;
  return 0;
}

/* Only user point-to-point messages over EAGER_MAX are answered
 * (fold__shm_answered); every other message streams through the ring. */
static size_t shm_eager_max(int ctx) { return ctx == FOLD__CTX_P2P ? EAGER_MAX : 0; }

static const fold__tp_ops shm_ops = {
    .name = "shm",
    .kind = FOLD__TP_KIND_SHM,
    .drain_sends = 1,
    .eager_max = shm_eager_max,
    .isend = fold__shm_isend,
    .poll = shm_poll,
    .wait = shm_wait,
    .wait_fd = shm_wait_fd,
    .wait_arm = shm_wait_arm,
    .wait_disarm = shm_wait_disarm,
    .pull = shm_pull,
    .shutdown = shm_shutdown,
    .joined = shm_joined,
    .destroy = shm_destroy,
    .coll = fold__shm_coll,
    .link = shm_link,
};
