/* params.h — the one list of FOLD_* variables (X-macro): name, type, default, bounds, when read, one-line doc. */
#ifndef FOLD_CORE_PARAMS_H
#define FOLD_CORE_PARAMS_H

#include <stddef.h>
#include <stdint.h>

/* Every FOLD_* variable the library reads is one line here, and only
 * params.c calls getenv (fold__env_str for the launchers' own variables).
 * docs/configuration.md is generated from this list (ctest config_doc
 * fails when the two differ: `build/tests/config_doc --write docs/configuration.md`
 * rewrites it).
 *
 * X(ID, NAME, TYPE, FLAGS, DEFAULT, LO, HI, GRAMMAR, DEFAULT_DOC, WHEN, DOC)
 *   TYPE     UINT (decimal integer in [LO, HI]), POW2 (the same, a power of
 *            two), REAL (number in [LO, HI], ends excluded by FLAGS), ENUM
 *            (one of GRAMMAR's "a|b|c", case-insensitive; the value is the
 *            index), STR (text whose grammar the reading layer parses)
 *   FLAGS    LO_OPEN / HI_OPEN exclude a REAL bound; ERROR: a malformed value
 *            is the reader's error (no warning here); SECRET: never logged or
 *            printed
 *   DEFAULT  the value when unset or rejected (numbers, ENUM index)
 *   GRAMMAR  ENUM: the choices; others: what a valid value is, as the
 *            warning says it ("" = made from the type and bounds)
 *   DEFAULT_DOC  the default as the docs and the warning say it
 *   WHEN     when the library reads it (values are cached per raw string: a
 *            changed value is parsed again at the next read)
 */
#define FOLD__PARAMS(X)                                                                                              \
  /* ---- launch and rendezvous ---- */                                                                              \
  X(RANK, "FOLD_RANK", STR, 0, 0, 0, 0, "an integer in [0, FOLD_SIZE)",                                               \
    "none: other launchers' variables are tried next", "fold_init",                                                  \
    "this rank, for `fold_init`; set by foldrun")                                                                    \
  X(SIZE, "FOLD_SIZE", STR, 0, 0, 0, 0, "an integer in [1, 2^30]", "none: other launchers' variables are tried next", \
    "fold_init", "the rank count, for `fold_init`; set by foldrun")                                                  \
  X(STORE, "FOLD_STORE", STR, 0, 0, 0, 0, "`tcp://host:port` or `file:///dir`",                                       \
    "`tcp://MASTER_ADDR:MASTER_PORT`, else a file store for single-host launcher jobs (docs/bootstrap.md)",          \
    "fold_init", "rendezvous store; set by foldrun")                                                                 \
  X(JOB_TOKEN, "FOLD_JOB_TOKEN", STR, SECRET, 0, 0, 0, "any text",                                                    \
    "a key derived from the store address (a warning is logged)", "fold_init, fold_comm_init",                      \
    "secret every TCP connection must prove it knows (HMAC-SHA256 challenge-response); set by foldrun; never "       \
    "logged")                                                                                                        \
  X(TRANSPORT, "FOLD_TRANSPORT", ENUM, ERROR, 0, 0, 0, "auto|inproc|shm|tcp",                                          \
    "`auto`: shm within a host, tcp between hosts", "fold_init, fold_comm_init",                                     \
    "transport between processes (`inproc` is refused there: ranks made by `fold_comm_init_threads` always use "     \
    "it); another value is an error (FOLD_EINVAL)")                                                                  \
  X(TIMEOUT, "FOLD_TIMEOUT", REAL, LO_OPEN | HI_OPEN, 300, 0, 1e7, "a positive number of seconds", "300",              \
    "each communicator's creation, each rendezvous", "seconds any wait (and the rendezvous) may last")               \
  X(SOCKET_IFNAME, "FOLD_SOCKET_IFNAME", STR, 0, 0, 0, 0, "NCCL's: `eth,ib` prefixes, `^docker` excludes, `=eth0` exact", \
    "the interface that reaches the store host, else loopback", "each tcp transport's creation",                     \
    "interfaces for TCP")                                                                                            \
  X(TCP_CONNECT, "FOLD_TCP_CONNECT", ENUM, 0, 0, 0, 0, "lazy|eager", "`lazy`", "each tcp transport's creation",  \
    "when tcp connections are made: `lazy` on a rank's first send to a peer or first receive posted for it, so a "  \
    "rank's sockets follow the peers it talks to (an acceptor thread per rank answers its peers' connections; "     \
    "docs/bootstrap.md 1.2); `eager` all at `fold_init`, the higher rank dialing the lower (n - 1 sockets per "    \
    "rank); every rank must use the same")                                                                          \
  X(TEST_HOSTS, "FOLD_TEST_HOSTS", UINT, 0, 0, 0, 1 << 30, "", "0: the real hosts",                                    \
    "each rendezvous, each communicator family", "test knob: `k` makes one machine look like hosts of `k` ranks "    \
    "each (ranks `r`, `q` share a host only if `r/k == q/k`), so a job mixes shm and tcp")                           \
  X(TEST_CARDS_VALUE, "FOLD_TEST_CARDS_VALUE", UINT, 0, 65536, 1024, 65536, "", "65536: the store's largest value", \
    "each rendezvous", "test knob: the largest value rank 0 publishes the card list in, so that a few ranks split "  \
    "it into several values as hundreds do")                                                                         \
  X(TEST_HOST_MAP, "FOLD_TEST_HOST_MAP", STR, 0, 0, 0, 0, "host numbers separated by commas, e.g. `0,0,0,1,2,2`",     \
    "unset: FOLD_TEST_HOSTS", "each rendezvous, each communicator family",                                           \
    "test knob: rank `r` is on test host number `r % len` of the list (`0,0,0,1` uneven, `0,1` round-robin); "       \
    "overrides FOLD_TEST_HOSTS; it applies to ranks that are threads too (split_host and `hier` only: their "        \
    "transport stays inproc); a malformed list is warned about and ignored")                                         \
  /* ---- logging and selection ---- */                                                                             \
  X(DEBUG, "FOLD_DEBUG", ENUM, 0, 1, 0, 0, "NONE|WARN|INFO|TRACE", "WARN", "each communicator's creation, each warning", \
    "log level; repeated lines are summarised (docs/bootstrap.md \"Logging\"); at INFO every FOLD_* variable set is " \
    "logged once per value")                                                                                         \
  X(ALGO, "FOLD_ALGO", STR, 0, 0, 0, 0, "`allreduce=ring,broadcast=binomial` (docs/collectives.md)",                  \
    "automatic selection", "each communicator's creation", "force algorithms; a bad spec is warned about and ignored") \
  X(RULES, "FOLD_RULES", STR, 0, 0, 0, 0, "a rules file (docs/collectives.md)", "the built-in rules only",            \
    "each communicator's creation",                                                                                  \
    "a selection rules file, consulted before the built-in rules; `fold-bench --tune` writes one")                   \
  X(NO_MISMATCH_CHECK, "FOLD_NO_MISMATCH_CHECK", ENUM, 0, 0, 0, 0, "0|1", "0: every collective is checked",           \
    "each communicator's creation",                                                                                  \
    "`1` skips the collective signature exchange, so mismatched calls go undetected (measurement knob of "           \
    "`fold-colltime`)")                                                                                              \
  X(PROGRESS_THREAD, "FOLD_PROGRESS_THREAD", ENUM, 0, 0, 0, 0, "0|1", "0: no thread", "each communicator's creation", \
    "`1`: a helper thread per communicator moves nonblocking operations while the program computes between calls "   \
    "(docs/progress-thread.md); ignored on simulated communicators")                                                 \
  /* ---- algorithm knobs ---- */                                                                                   \
  X(PIECE_SIZE, "FOLD_PIECE_SIZE", UINT, 0, 0, 1, UINT64_MAX, "a positive integer", "4096",                           \
    "each communicator's creation", "elements per piece of the `direct` allreduce")                                  \
  X(SEGMENT_BYTES, "FOLD_SEGMENT_BYTES", UINT, 0, 0, 1, UINT64_MAX, "a positive integer",                             \
    "256 KiB (pipeline), 1 MiB (ring_segmented)", "each communicator's creation",                                    \
    "segment size of the `pipeline` broadcast and the `ring_segmented` allreduce (test knob)")                       \
  X(SHM_RING_BYTES, "FOLD_SHM_RING_BYTES", POW2, 0, 0, 64, 1 << 30, "",                                               \
    "256 KiB, halved while ranks x ring > 4 MiB, never below 16 KiB", "each shm transport's creation",               \
    "bytes per shared-memory ring (test knob)")                                                                      \
  X(SHM_COLL_BYTES, "FOLD_SHM_COLL_BYTES", UINT, 0, 0, 0, 1 << 30, "",                                                \
    "1 MiB, halved while ranks x 2 slots > 32 MiB, never below 4 KiB", "each shm transport's creation",              \
    "bytes per slot of the shm collective area, two slots per rank, rounded up to a page; 0 turns the `shm` "        \
    "algorithms off")                                                                                                \
  X(SHM_SMALL_BYTES, "FOLD_SHM_SMALL_BYTES", UINT, 0, 16384, 0, 1ull << 40, "", "16384",                            \
    "the first `shm` allreduce/reduce (once per process)",                                                           \
    "largest `shm` allreduce/reduce done in one exchange (measurement knob)")                                        \
  X(INJECT_DELAY, "FOLD_INJECT_DELAY", STR, 0, 0, 0, 0, "`RANK:SECONDS[,RANK:SECONDS...]`, seconds in [0, 86400]",     \
    "unset: no delay", "each communicator's creation",                                                               \
    "those ranks wait that long (on an engine timer: virtual seconds in the simulator) before each local reduction " \
    "step of a collective, a straggler for tests and benchmarks; logged once at WARN; a malformed value is warned "  \
    "about once and ignored")                                                                                        \
  X(HIER_LEADERS, "FOLD_HIER_LEADERS", ENUM, 0, 0, 0, 0, "auto|one|all", "`auto`: by size (docs/hierarchy.md)",       \
    "a communicator's first `hier` call",                                                                            \
    "`hier` allreduce: `one` leader per host runs the network phase, or `all` ranks of a host each run it for a "    \
    "slice of the vector (where every host holds the same number of ranks; else one leader)")                        \
  X(HIER_CHUNKS, "FOLD_HIER_CHUNKS", UINT, 0, 0, 0, 4096, "an integer in [0, 4096]", "0: by size (docs/hierarchy.md)", \
    "a communicator's first `hier` call",                                                                            \
    "`hier` allreduce with every rank leading: chunks its phases are pipelined over (1: not pipelined; more: that "  \
    "many, fewer where a chunk would hold under one element per rank), a test and measurement knob")               \
  X(SKIP_ALPHA, "FOLD_SKIP_ALPHA", REAL, LO_OPEN, 4, 1, 1e300, "a number > 1", "4",                                   \
    "a communicator's first `ring_skip` call",                                                                       \
    "`ring_skip`'s threshold factor alpha: a rank stops waiting for its left neighbour after alpha T + T_trans "     \
    "(docs/straggler.md)")                                                                                           \
  X(SKIP_T, "FOLD_SKIP_T", REAL, 0, 0, 0, 1e300, "seconds >= 0",                                                      \
    "estimated per communicator (the smallest of the last 16 steps that waited for data, or the left neighbour's "  \
    "if smaller)", "a communicator's first `ring_skip` call",                                                        \
    "seconds: `ring_skip`'s normal step time T instead of the online estimate (0: estimated)")                       \
  X(SKIP_TTRANS, "FOLD_SKIP_TTRANS", REAL, 0, -1, 0, 1e300, "seconds >= 0",                                           \
    "the link's measured transfer time (a block over the link from the left neighbour)",                             \
    "a communicator's first `ring_skip` call", "seconds: `ring_skip`'s T_trans (docs/straggler.md)")                 \
  /* ---- key-value store ---- */                                                                                   \
  X(KV_SERVERS, "FOLD_KV_SERVERS", UINT, 0, 1, 1, 1 << 30, "", "1", "each fold_kv_create",                              \
    "servers of a distributed store (the last ranks); must be below the rank count; every rank must agree")          \
  X(KV_BIGARRAY_BOUND, "FOLD_KV_BIGARRAY_BOUND", UINT, 0, 1000000, 1, 1ull << 40, "", "1000000",                        \
    "each fold_kv_create",                                                                                           \
    "elements from which a value is split over every server and summed by the thread pool; every rank must agree")  \
  X(KV_REDUCE_THREADS, "FOLD_KV_REDUCE_THREADS", UINT, 0, 4, 1, 256, "", "4", "each fold_kv_create",                  \
    "threads that sum a pushed value above the big-array bound; every rank must agree")                              \
  X(KV_STALENESS, "FOLD_KV_STALENESS", UINT, 0, 2, 1, 1 << 30, "", "2", "each fold_kv_create",                         \
    "`dist_ssp`: how many pushes a worker may run ahead of the slowest before its pulls wait; every rank must "     \
    "agree")

enum { FOLD__PT_UINT, FOLD__PT_POW2, FOLD__PT_REAL, FOLD__PT_ENUM, FOLD__PT_STR };
enum { FOLD__PF_LO_OPEN = 1, FOLD__PF_HI_OPEN = 2, FOLD__PF_ERROR = 4, FOLD__PF_SECRET = 8 };

typedef enum {
#define FOLD__PARAM_ID(id, ...) FOLD__P_##id,
  FOLD__PARAMS(FOLD__PARAM_ID)
#undef FOLD__PARAM_ID
  FOLD__P_COUNT
} fold__param_id;

/* One entry of the list, as data (the docs generator and fold_config_print
 * walk it). */
typedef struct {
  const char *name;
  int type, flags;
  long double dflt, lo, hi; /* long double: every uint64_t is exact */
  const char *grammar, *dflt_doc, *when, *doc;
} fold__param_info;
extern const fold__param_info fold__params[FOLD__P_COUNT];

/* A parameter's value: u for UINT, POW2, ENUM (the index); d for REAL;
 * s for STR (the environment's own string: valid until it changes). */
typedef struct {
  uint64_t u;
  double d;
  const char *s;
} fold__pval;

/* Read a parameter: 1 when set (non-empty) and valid, 0 when unset or
 * empty, -1 when malformed. *out (may be NULL) is the value, or the default
 * for 0 and -1. A malformed value is warned about once per value (unless
 * FLAGS has ERROR: the caller reports it); a valid one is logged at INFO once
 * per value. */
int fold__param_read(fold__param_id id, fold__pval *out);
uint64_t fold__param_u64(fold__param_id id); /* UINT, POW2, ENUM: the value or the default */
double fold__param_real(fold__param_id id);  /* REAL: the value or the default */
const char *fold__param_str(fold__param_id id); /* STR: the value, NULL when unset or empty */
/* The id of a FOLD_* name, or -1. */
int fold__param_find(const char *name);
/* Any variable by name: a FOLD_* one through its entry (it must have one),
 * others (the launchers' RANK, SLURM_*, MASTER_ADDR, TMPDIR, ...) as they
 * are. NULL when unset. The only other way to the environment. */
const char *fold__env_str(const char *name);
/* The test host of `rank` under FOLD_TEST_HOST_MAP (entry rank % len of
 * the list), else FOLD_TEST_HOSTS=k (rank / k), else -1 (the real hosts).
 * A malformed map is warned about (once per value) and ignored. */
int fold__test_host(int rank);
/* The bounds and grammar as the docs and the warnings say them. */
void fold__param_valid_text(const fold__param_info *p, char *buf, size_t cap);

#endif
