/* shm_seg.c — shared-memory segments: create this rank's, map the peers', watch their pids. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "transport/shm/shm_ring.h"
#include "transport/shm/shm_seg.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* Ring size. Each rank owns one inbound ring per peer, so a job of n ranks
 * holds up to n*n rings on the host. 256 KiB per ring:
 *  - large enough to stream in chunks (shm_send.c publishes a quarter ring at a
 *    time) with four chunks in flight, so the sender's copy-in and the
 *    receiver's copy-out overlap and neither waits for a wake-up per chunk;
 *  - small enough that a ring stays cache-resident (L2 is 1-2 MiB per core
 *    on current x86, L3 is shared): the copy-in/copy-out pair then runs at
 *    cache speed instead of DRAM speed;
 *  - tmpfs only allocates pages that are written, but a ring that carried
 *    one large message stays resident until the job ends, so with many
 *    ranks the ring shrinks to keep a segment's rings within 4 MiB
 *    (n=64: 64 KiB each), never below 16 KiB.
 * FOLD_SHM_RING_BYTES (a power of two, 64 B .. 1 GiB) overrides it; tests
 * use tiny rings to force wraparound and chunking. */
#define RING_DEFAULT (256u << 10)
#define RING_MIN_AUTO (16u << 10)
#define RING_BUDGET (4u << 20)

static uint64_t choose_ring_bytes(fold_comm *c) {
  fold__pval v; /* a malformed value is warned about (core/params.c) */
  if (fold__param_read(FOLD__P_SHM_RING_BYTES, &v) > 0 && fold__ring_size_ok(v.u))
    return v.u;
  uint64_t r = RING_DEFAULT;
  while (r > RING_MIN_AUTO && (uint64_t)c->size * r > RING_BUDGET)
    r >>= 1;
  return r;
}

/* Collective area data slot size (shm_area.c runs the chunks; the why of
 * the numbers follows). Two slots per rank so that a chunk's copy-in overlaps the
 * previous chunk's copy-out; 1 MiB each keeps the slots of 2-4 ranks
 * (4-8 MiB) within L2+L3 reach (32 MiB L3 here), so copy-in/reduce/copy-out
 * run at cache speed and only the user's buffers touch DRAM, while a chunk
 * is long (~100 us) next to its two flag exchanges (~1 us). Measured on a
 * 2-core EPYC at n = 2 against 256 KiB slots: 1 MiB allreduce 113-134 us
 * vs 163-174, 4 MiB 641-684 vs 913-997, 16 MiB 3.6-4.0 ms vs 4.5-5.0. With many
 * ranks the slot shrinks so that all areas stay within 32 MiB, never below
 * a page. FOLD_SHM_COLL_BYTES overrides it (rounded up to a page; 0 turns
 * the area and the `shm` algorithms off); tests use a page to force
 * multi-chunk pipelining with small counts. Every rank must agree: a
 * peer whose area differs turns the area off on every rank (usable() is
 * symmetric). */
#define COLL_DEFAULT (1u << 20)
#define COLL_BUDGET (32u << 20)

static uint64_t choose_coll_bytes(fold_comm *c) {
  fold__pval v; /* a malformed value is warned about (core/params.c) */
  if (fold__param_read(FOLD__P_SHM_COLL_BYTES, &v) > 0)
    return (v.u + FOLD__SHM_PAGE - 1) & ~(uint64_t)(FOLD__SHM_PAGE - 1);
  uint64_t b = COLL_DEFAULT;
  while (b > FOLD__SHM_PAGE && (uint64_t)c->size * 2 * b > COLL_BUDGET)
    b >>= 1;
  return c->size > 1 ? b : 0;
}

/* "/fold-<job>-<rank>". Job ids are kept when they are short and made of
 * portable characters; otherwise a prefix and a 64-bit FNV-1a hash of the
 * whole id keep the name unique, short (card->shm is 64 bytes) and valid. */
static void make_name(char *dst, size_t cap, const char *job_id, int rank) {
  char job[40];
  size_t n = strlen(job_id);
  int clean = n > 0 && n <= 32;
  for (size_t i = 0; clean && i < n; i++) {
    char ch = job_id[i];
    clean = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
            ch == '.' || (ch == '-' && i > 0);
  }
  if (clean) {
    snprintf(job, sizeof job, "%s", job_id);
  } else {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
      h = (h ^ (uint8_t)job_id[i]) * 0x100000001b3ull;
    size_t k = 0;
    for (size_t i = 0; i < n && k < 16; i++) {
      char ch = job_id[i];
      if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
        job[k++] = ch;
    }
    snprintf(job + k, sizeof job - k, "%s%016llx", k ? "_" : "", (unsigned long long)h);
  }
  snprintf(dst, cap, "/fold-%s-%d", job, rank);
}

void fold__shm_map_unlink(fold__shm_map *m) {
  if (m->owner && !m->unlinked && m->name[0]) {
    shm_unlink(m->name);
    m->unlinked = 1;
    fold__shm_signal_unregister(m->sig_slot - 1);
    m->sig_slot = 0;
  }
}

void fold__shm_map_release(fold__shm_map *m) {
  fold__shm_map_unlink(m);
  if (m->slot && !m->single)
    munmap(m->slot, m->slot_bytes);
  if (m->coll && !m->single)
    munmap(m->coll, m->coll_bytes);
  m->coll = NULL;
  if (m->hdr)
    munmap(m->hdr, m->hdr_bytes);
  m->hdr = NULL;
  m->slot = NULL;
}

/* A segment of the same name exists. If it is fold's and its owner process
 * is gone (a crashed earlier run with the same job id), remove it and say
 * so: a warning when it held the name this rank wants (own), an INFO line
 * when the sweep finds another job's leftover (a warning there would land
 * in the output of whatever job runs next on the host). Returns 1 if the
 * caller may retry. */
static int remove_stale(fold_comm *c, const char *name, int own) {
  int fd = shm_open(name, O_RDONLY, 0);
  if (fd < 0)
    return errno == ENOENT; /* vanished meanwhile: retry */
  struct stat st;
  int stale = 0;
  if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(fold__shm_hdr)) {
    fold__shm_hdr *h = mmap(NULL, FOLD__SHM_PAGE, PROT_READ, MAP_SHARED, fd, 0);
    if (h != MAP_FAILED) {
      int32_t pid = h->pid;
      stale = h->magic == FOLD__SHM_MAGIC && pid > 0 && kill(pid, 0) == -1 && errno == ESRCH;
      munmap(h, FOLD__SHM_PAGE);
    }
  }
  close(fd);
  if (stale && own)
    FOLD__WARN(c, "removing stale shared-memory segment %s of an exited process", name);
  else if (stale)
    FOLD__INFO(c, "removing stale shared-memory segment %s of an exited process (another job's)", name);
  if (stale)
    shm_unlink(name);
  return stale;
}

/* Segments are unlinked once every rank has mapped them (joined), so only
 * a rank killed (SIGKILL; SIGTERM and SIGINT unlink first, shm_signal.c)
 * during bootstrap leaves one behind, under a name no later
 * job uses (names carry a random job nonce). Sweep the ones whose owner
 * process is gone before making ours. */
static void sweep_stale(fold_comm *c) {
  DIR *d = opendir("/dev/shm");
  if (d == NULL)
    return;
  struct dirent *e;
  char name[NAME_MAX + 2];
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, "fold-", 5) != 0)
      continue;
    snprintf(name, sizeof name, "/%s", e->d_name);
    remove_stale(c, name, 0);
  }
  closedir(d);
}

int fold__shm_seg_create(fold_comm *c, const char *name, uint64_t bytes, fold__shm_map *m) {
  if (name != m->name)
    snprintf(m->name, sizeof m->name, "%s", name);
  int fd = -1;
  for (int attempt = 0; attempt < 2 && fd < 0; attempt++) {
    fd = shm_open(m->name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && !(errno == EEXIST && attempt == 0 && remove_stale(c, m->name, 1)))
      break;
  }
  if (fd < 0) {
    int e = errno;
    return fold__error(c, FOLD_ESYS, "rank %d: cannot create shared-memory segment %s: %s%s", c->rank, m->name,
                       strerror(e), e == EEXIST ? " (is another job with the same job id running?)" : "");
  }
  m->owner = 1;
  m->sig_slot = 1 + fold__shm_signal_register(m->name);
  if (ftruncate(fd, (off_t)bytes) != 0) {
    int e = errno;
    close(fd);
    fold__shm_map_release(m);
    return fold__error(c, FOLD_ESYS, "rank %d: cannot size shared-memory segment %s to %llu bytes: %s",
                       c->rank, m->name, (unsigned long long)bytes, strerror(e));
  }
  void *base = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (base == MAP_FAILED) {
    fold__shm_map_release(m);
    return fold__error(c, FOLD_ESYS, "rank %d: cannot map shared-memory segment %s (%llu bytes): %s", c->rank,
                       m->name, (unsigned long long)bytes, strerror(e));
  }
  m->hdr = base;
  m->hdr_bytes = (size_t)bytes;
  m->single = 1;
  return FOLD_OK;
}

int fold__shm_seg_open_ro(const char *name, uint64_t bytes, fold__shm_map *m) {
  memset(m, 0, sizeof *m);
  int fd = shm_open(name, O_RDONLY, 0);
  if (fd < 0)
    return errno == ENOENT ? 0 : -errno;
  /* The owner creates, then sizes, then fills the header, magic last: a
   * segment seen before that is not there yet. */
  struct stat st;
  if (fstat(fd, &st) != 0 || (uint64_t)st.st_size != bytes) {
    close(fd);
    return 0;
  }
  void *base = mmap(NULL, (size_t)bytes, PROT_READ, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (base == MAP_FAILED)
    return -e;
  fold__shm_hdr *h = base;
  if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != FOLD__SHM_MAGIC) {
    munmap(base, (size_t)bytes);
    return 0;
  }
  snprintf(m->name, sizeof m->name, "%s", name);
  m->hdr = h;
  m->hdr_bytes = (size_t)bytes;
  m->single = 1;
  return 1;
}

/* Phase-1 state: just this rank's segment. */
typedef struct shm_state {
  fold__shm_map own;
} shm_state;

int fold__shm_prepare(fold_comm *c, const char *job_id, fold__card *card, void **state) {
  *state = NULL;
  card->shm[0] = '\0';
  sweep_stale(c);
  shm_state *s = calloc(1, sizeof *s);
  if (s == NULL)
    return fold__error(c, FOLD_ENOMEM, "rank %d: out of memory preparing shared memory", c->rank);
  fold__shm_map *m = &s->own;
  make_name(m->name, sizeof m->name, job_id ? job_id : "", c->rank);
  uint64_t ring = choose_ring_bytes(c);
  uint64_t coll = choose_coll_bytes(c);
  uint64_t coll_off = FOLD__SHM_PAGE + (uint64_t)c->size * fold__shm_stride(ring);
  uint64_t bytes = coll_off + fold__shm_coll_area_bytes(coll);

  int rc = fold__shm_seg_create(c, m->name, bytes, m);
  if (rc != FOLD_OK) {
    free(s);
    return rc;
  }
  void *base = m->hdr;
  /* One mapping for the own segment: hdr_bytes covers everything and slot
   * points at slot 0 inside it (fold__shm_map_release knows). */
  m->ring_bytes = ring;
  m->slot = (char *)base + FOLD__SHM_PAGE;
  m->slot_bytes = (size_t)(bytes - FOLD__SHM_PAGE);
  if (coll) {
    /* Touch the collective area once now, so that no call page-faults on
     * it and peers can map it populated. */
    m->coll = (char *)base + coll_off;
    m->coll_bytes = (size_t)fold__shm_coll_area_bytes(coll);
    m->coll_slot = coll;
    memset(m->coll, 0, m->coll_bytes);
  }
  fold__shm_hdr *h = m->hdr; /* fresh tmpfs pages are zero: rings start empty */
  h->version = FOLD__SHM_VERSION;
  h->coll_slot_bytes = coll;
  h->pid = (int32_t)getpid();
  h->rank = c->rank;
  h->nranks = c->size;
  h->ring_bytes = ring;
  h->seg_bytes = bytes;
  h->magic = FOLD__SHM_MAGIC; /* peers map it only after the card is published */
  snprintf(card->shm, sizeof card->shm, "%s", m->name);
  FOLD__INFO(c, "shm: segment %s, %d rings of %llu bytes", m->name, c->size, (unsigned long long)ring);
  *state = s;
  return FOLD_OK;
}

/* Map peer p's header page and the slot rank c->rank writes, after checking
 * that the segment is what p's card promises. */
static int map_peer(fold_comm *c, int p, const fold__card *card, fold__shm_map *m) {
  memset(m, 0, sizeof *m);
  if (memchr(card->shm, '\0', sizeof card->shm) == NULL || card->shm[0] != '/')
    return fold__error(c, FOLD_EINVAL, "rank %d: peer rank %d published no valid shared-memory segment name",
                       c->rank, p);
  snprintf(m->name, sizeof m->name, "%s", card->shm);
  int fd = shm_open(m->name, O_RDWR, 0);
  if (fd < 0)
    return fold__error(c, FOLD_ESYS, "rank %d: cannot open shared-memory segment %s of peer rank %d: %s",
                       c->rank, m->name, p, strerror(errno));
  struct stat st;
  const char *why = NULL;
  uint64_t ring = 0, coll = 0; /* read once: the peer may write its header at any time */
  if (fstat(fd, &st) != 0 || st.st_size < (off_t)FOLD__SHM_PAGE) {
    why = "too small";
  } else {
    m->hdr = mmap(NULL, FOLD__SHM_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m->hdr == MAP_FAILED) {
      m->hdr = NULL;
      why = "mmap of the header failed";
    }
  }
  if (why == NULL) {
    m->hdr_bytes = FOLD__SHM_PAGE;
    const fold__shm_hdr *h = m->hdr;
    ring = h->ring_bytes;
    coll = h->coll_slot_bytes;
    if (h->magic != FOLD__SHM_MAGIC || h->version != FOLD__SHM_VERSION)
      why = "bad magic or version";
    else if (h->pid != card->pid)
      why = "owner pid differs from the card";
    else if (h->rank != p || h->nranks != c->size)
      why = "rank or size differs";
    else if (!fold__ring_size_ok(ring) || ring > (1ull << 30))
      why = "bad ring size";
    else if (coll % FOLD__SHM_PAGE || coll > (1ull << 30))
      why = "bad collective area size";
    else if ((uint64_t)st.st_size !=
             FOLD__SHM_PAGE + (uint64_t)c->size * fold__shm_stride(ring) + fold__shm_coll_area_bytes(coll))
      why = "segment size differs from its header";
  }
  if (why == NULL) {
    m->ring_bytes = ring;
    uint64_t stride = fold__shm_stride(m->ring_bytes);
    m->slot_bytes = (size_t)stride;
    m->slot = mmap(NULL, m->slot_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                   (off_t)(FOLD__SHM_PAGE + (uint64_t)c->rank * stride));
    if (m->slot == MAP_FAILED) {
      m->slot = NULL;
      why = "mmap of the ring failed";
    }
  }
  if (why == NULL && coll) {
    /* read-only: only the owner writes its area; populated, so that the
     * first collective does not fault on it */
    m->coll_slot = coll;
    m->coll_bytes = (size_t)fold__shm_coll_area_bytes(coll);
    m->coll = mmap(NULL, m->coll_bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, fd,
                   (off_t)(FOLD__SHM_PAGE + (uint64_t)c->size * fold__shm_stride(ring)));
    if (m->coll == MAP_FAILED) {
      m->coll = NULL;
      why = "mmap of the collective area failed";
    }
  }
  close(fd);
  if (why) {
    fold__shm_map_release(m);
    return fold__error(c, FOLD_EINVAL, "rank %d: shared-memory segment %s of peer rank %d is unusable: %s",
                       c->rank, card->shm, p, why);
  }
  return FOLD_OK;
}

/* A pidfd becomes readable when the process exits (zombies included), which
 * is how shm notices a dead peer without any message from it. Returns the
 * fd, -1 if pidfds are unavailable (kill(pid, 0) is the fallback), or -2 if
 * the process is already gone. */
static int watch_pid(fold_comm *c, int pid) {
  int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0u);
  if (fd >= 0)
    return fd;
  if (errno == ESRCH)
    return -2;
  FOLD__INFO(c, "shm: pidfd_open(%d) failed (%s): polling the process instead", pid, strerror(errno));
  return -1;
}

int fold__shm_connect(fold_comm *c, void *state, const fold__card *cards, const uint8_t *use,
                      int64_t deadline, fold__tp **out) {
  (void)deadline; /* nothing here waits: every segment exists before cards are published */
  *out = NULL;
  shm_state *s = state;
  int n = c->size, rc = FOLD_OK;
  fold__shm_map *peers = calloc((size_t)n, sizeof *peers);
  int *pids = calloc((size_t)n, sizeof *pids);
  int *pidfds = malloc((size_t)n * sizeof *pidfds);
  if (peers == NULL || pids == NULL || pidfds == NULL) {
    rc = fold__error(c, FOLD_ENOMEM, "rank %d: out of memory connecting shared memory", c->rank);
    n = 0;
  }
  for (int p = 0; p < n; p++)
    pidfds[p] = -1;
  for (int p = 0; p < n && rc == FOLD_OK; p++) {
    if (p == c->rank || !use[p])
      continue; /* messages to oneself never reach a transport */
    rc = map_peer(c, p, &cards[p], &peers[p]);
    if (rc)
      break;
    pids[p] = cards[p].pid;
    int fd = watch_pid(c, cards[p].pid);
    if (fd == -2)
      rc = fold__error(c, FOLD_EPEER, "rank %d: peer rank %d lost (process %d exited) while connecting", c->rank,
                       p, (int)cards[p].pid);
    pidfds[p] = fd < 0 ? -1 : fd;
  }
  if (rc) {
    for (int p = 0; p < n; p++) {
      fold__shm_map_release(&peers[p]);
      if (pidfds[p] >= 0)
        close(pidfds[p]);
    }
    fold__shm_map_release(&s->own);
    free(peers);
    free(pids);
    free(pidfds);
    free(s);
    return rc;
  }
  rc = fold__shm_tp_new(c, &s->own, peers, pids, pidfds, out);
  free(peers);
  free(pids);
  free(pidfds);
  free(s);
  return rc;
}

void fold__shm_abandon(void *state) {
  shm_state *s = state;
  if (s == NULL)
    return;
  fold__shm_map_release(&s->own);
  free(s);
}
