/* fold.h — the public API of fold, a C11 library for collective communication.
 *
 * This header is the specification. Every call documents what it does, whether
 * it blocks, and what it returns on failure.
 *
 * Conventions that hold for every call:
 *  - Return value: FOLD_OK (0) on success, a negative FOLD_E* code on failure.
 *    fold_strerror() names a code; fold_comm_last_error() gives the human
 *    message of the communicator's last failure (operation, rank, peer, cause).
 *  - Counts are element counts of type size_t (64-bit): messages over 2 GiB work.
 *  - A communicator is used by one thread at a time (ranks made by
 *    fold_comm_init_threads are each used by their own thread). The
 *    optional progress thread (FOLD_PROGRESS_THREAD, see fold_progress)
 *    does not change this rule.
 *  - Failure model (fail-stop): a lost peer, a timeout, fold_comm_abort() or
 *    ranks whose collective calls disagree (see "collectives") leave the
 *    communicator *failed*. Every pending and every later operation on it
 *    returns the failure's code (FOLD_EPEER, FOLD_ETIMEDOUT, FOLD_EABORTED or
 *    FOLD_EMISMATCH) at once; fold_comm_destroy() still works and never hangs.
 *    Argument errors (FOLD_EINVAL) and a point-to-point message longer than
 *    its receive buffer (FOLD_EMISMATCH on that receive) do not fail the
 *    communicator.
 *  - Every wait (a blocking call, fold_wait) is bounded by FOLD_TIMEOUT
 *    seconds (default 300; virtual seconds on the simulator; a collective's
 *    fold_coll_opts.timeout for that call) from its start:
 *    an operation not complete by then returns FOLD_ETIMEDOUT. Its message
 *    (fold_comm_last_error) names the rank the operation still waits for
 *    and the step: "fold_allreduce: rank 1: not complete within 5 s
 *    (FOLD_TIMEOUT): waiting for rank 2 (round 3 of 6 of ring: receive of
 *    4096 bytes)"; a rank that waited for another waiting rank adds whom
 *    that one waited for, up to the silent rank ("; rank 0 waited in turn
 *    for rank 2, which was silent"): the ranks that time out together
 *    exchange whom they wait for before they fail (at most 1 s more).
 */
#ifndef FOLD_H
#define FOLD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(FOLD_BUILDING) && defined(__GNUC__)
#define FOLD_API __attribute__((visibility("default")))
#else
#define FOLD_API
#endif

/* The version of this header. It is the project's one version: CMake reads
 * it from here (project VERSION, the library's SONAME, fold.pc). */
#define FOLD_VERSION_MAJOR 0
#define FOLD_VERSION_MINOR 2
#define FOLD_VERSION_PATCH 0

/* ---- status codes ------------------------------------------------------ */
#define FOLD_OK         0
#define FOLD_EINVAL    -1  /* invalid argument (null buffer, bad rank, dtype, tag, ...) */
#define FOLD_ETIMEDOUT -2  /* a wait or the rendezvous exceeded FOLD_TIMEOUT */
#define FOLD_EPEER     -3  /* a peer was lost (exited, killed, connection closed) */
#define FOLD_EMISMATCH -4  /* ranks disagree (collective, count, dtype, op, root,
                              algorithm) or a message is larger than the receive buffer */
#define FOLD_EAUTH     -5  /* a connection failed to prove it belongs to the job (or the
                              store address serves something that is not a fold store) */
#define FOLD_ENOMEM    -6  /* out of memory */
#define FOLD_ESYS      -7  /* an operating-system call failed (see last_error) */
#define FOLD_EABORTED  -8  /* the communicator was aborted */
#define FOLD_EINTERNAL -9  /* a bug in fold: please report the last_error text */

/* ---- datatypes ---------------------------------------------------------
 * Three kinds of element type:
 *  - the ten numeric types, FOLD_INT8 .. FOLD_FLOAT64;
 *  - four (value, index) pair types for FOLD_MINLOC / FOLD_MAXLOC (MPI's
 *    MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_2INT and a 64-bit MPI_LONG_INT),
 *    laid out as the structs below;
 *  - record types from fold_dtype_create: opaque fixed-size records (a C
 *    struct), moved whole and combined only by user ops (fold_op_create).
 * Every collective and point-to-point call takes any of them; counts are
 * always counts of elements (pairs, records), and no algorithm ever splits
 * an element across messages, segments, pieces or shared-memory chunks. */
typedef enum fold_dtype {
  FOLD_INT8 = 0,
  FOLD_UINT8,
  FOLD_INT32,
  FOLD_UINT32,
  FOLD_INT64,
  FOLD_UINT64,
  FOLD_FLOAT16,   /* IEEE 754 binary16 */
  FOLD_BFLOAT16,  /* bfloat16: the upper half of a float32 */
  FOLD_FLOAT32,
  FOLD_FLOAT64,
  FOLD_FLOAT32_INT32, /* fold_float32_int32 (8 bytes) */
  FOLD_FLOAT64_INT32, /* fold_float64_int32 (16 bytes, 4 of them padding) */
  FOLD_INT32_INT32,   /* fold_int32_int32 (8 bytes) */
  FOLD_INT64_INT64,   /* fold_int64_int64 (16 bytes) */
  FOLD_DTYPE_COUNT,   /* not a type: the number of built-in types; record types
                         from fold_dtype_create are values above it */
  FOLD_DTYPE_MAX_ = 0x7fffffff /* not a type: makes room for record values */
} fold_dtype;

/* The pair types of FOLD_MINLOC / FOLD_MAXLOC: a value and its index (e.g.
 * the rank or position that holds it). Padding bytes (fold_float64_int32)
 * travel with the pair they belong to. */
typedef struct fold_float32_int32 { float value; int32_t index; } fold_float32_int32;
typedef struct fold_float64_int32 { double value; int32_t index; } fold_float64_int32;
typedef struct fold_int32_int32 { int32_t value; int32_t index; } fold_int32_int32;
typedef struct fold_int64_int64 { int64_t value; int64_t index; } fold_int64_int64;

/* The largest record fold_dtype_create accepts, in bytes (1 GiB). */
#define FOLD_DTYPE_RECORD_MAX_BYTES ((size_t)1 << 30)
/* How many record types of distinct sizes a process may create. */
#define FOLD_DTYPE_RECORD_MAX_TYPES 1024

/* Size in bytes of one element of dtype, or 0 if dtype is not a valid type
 * (a record type is valid once fold_dtype_create returned it). */
FOLD_API size_t fold_dtype_size(fold_dtype dtype);

/* Lower-case name of dtype ("float32", "float32_int32", "record12" for a
 * 12-byte record), or "invalid". */
FOLD_API const char *fold_dtype_name(fold_dtype dtype);

/* Make *dtype a record type of `bytes` bytes (a struct of any layout, e.g.
 * struct { int32_t a; float b; int32_t c; } is 12): fold_dtype_size(*dtype)
 * is then `bytes`. Counts of a record type count records. A record is
 * moved whole, bytes as they are, and combined only by a user op
 * (fold_op_create), whose fn is called with this dtype and a count of
 * records; built-in ops on a record type are FOLD_EINVAL. Algorithms cut
 * buffers only between records, whatever FOLD_SEGMENT_BYTES,
 * FOLD_PIECE_SIZE or FOLD_SHM_COLL_BYTES say; an algorithm that cannot hold
 * one record in its unit of work (a `shm` slot smaller than a record) is
 * passed over by automatic selection and FOLD_EINVAL when forced.
 * A record type is identified by its size alone and belongs to the
 * process, not to a communicator: creating the same size again (on any
 * thread or rank, in any order) gives the same value, so ranks need no
 * common order of creation (unlike fold_op_create), and two struct types of
 * equal size are the same record type. Record types live until the process
 * exits; there is nothing to free. Thread-safe, does not block.
 * Returns FOLD_EINVAL (message in fold_comm_last_error(NULL)) for a NULL
 * dtype, bytes = 0, bytes > FOLD_DTYPE_RECORD_MAX_BYTES, or when
 * FOLD_DTYPE_RECORD_MAX_TYPES distinct sizes already exist. */
FOLD_API int fold_dtype_create(size_t bytes, fold_dtype *dtype);

typedef struct fold_comm fold_comm;
typedef struct fold_request fold_request;

/* The version of the library that runs, "MAJOR.MINOR.PATCH" (e.g. "0.2.0"):
 * the FOLD_VERSION_* macros of the header it was built with (which may
 * differ from the header a program was compiled against). Static string,
 * never NULL. */
FOLD_API const char *fold_version(void);

/* ---- configuration ------------------------------------------------------ */

/* The FOLD_* variables as this process reads them now, one line each: the
 * value in use, "<default> (default)", or the default and why a value was
 * rejected (FOLD_JOB_TOKEN: only that it is set); docs/configuration.md
 * lists them, `foldrun --print-config` prints this. Writes at most cap bytes
 * into buf, NUL-terminated (buf may be NULL if cap is 0); returns the whole
 * text's length, as snprintf. Does not block; may log as any read does. */
FOLD_API size_t fold_config_print(char *buf, size_t cap);
/* The value the library uses for FOLD_* variable name, as text ("" when
 * unset, empty or rejected: the default applies), written as
 * fold_config_print writes; returns its length, or FOLD_EINVAL when name is
 * not a variable of this library (or buf is NULL with cap > 0). */
FOLD_API int fold_config_get(const char *name, char *buf, size_t cap);

/* ---- errors ------------------------------------------------------------ */

/* Static name and description of a status code, e.g.
 * "FOLD_EPEER: a peer was lost". Never NULL. */
FOLD_API const char *fold_strerror(int status);

/* Human message of the last failure on comm: the operation, this rank, the
 * peer involved and the cause, e.g.
 * "fold_recv: rank 0: peer rank 3 lost (connection closed by peer)".
 * Empty string if nothing failed yet. The text stays valid until the next
 * call on comm. comm may be NULL: then the message of the last failure of a
 * call that had no communicator yet (fold_init, fold_comm_init*) on this
 * thread is returned. */
FOLD_API const char *fold_comm_last_error(const fold_comm *comm);

/* ---- communicators ----------------------------------------------------- */

/* Create the world communicator from the environment. Blocks until every rank
 * has joined (bounded by FOLD_TIMEOUT). Understood, first complete pair wins:
 *   rank/size: FOLD_RANK/FOLD_SIZE (foldrun), RANK/WORLD_SIZE (torchrun),
 *              OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE (Open MPI mpirun),
 *              PMI_RANK/PMI_SIZE (MPICH hydra), SLURM_PROCID/SLURM_NTASKS (srun)
 *   store:     FOLD_STORE, else tcp://MASTER_ADDR:MASTER_PORT, else (all
 *              ranks on one host only) a file store in $TMPDIR named after
 *              the launcher's job id (docs/bootstrap.md lists the variables).
 * Other variables: FOLD_JOB_TOKEN, FOLD_TRANSPORT (auto|shm|tcp; inproc is
 * FOLD_EINVAL here, ranks made by fold_comm_init_threads always use it),
 * FOLD_TIMEOUT (seconds), FOLD_SOCKET_IFNAME, FOLD_DEBUG
 * (NONE|WARN|INFO|TRACE; repeated log lines are summarised,
 * docs/bootstrap.md), FOLD_ALGO and FOLD_RULES (algorithm selection:
 * see fold_comm_set_algo); docs/configuration.md lists every variable.
 * Singleton: when none of the rank/size variables above is set (a program
 * started by hand, without a launcher), fold_init does not block and makes a
 * world of one, like MPI's singleton init: rank 0 of size 1, transport
 * "inproc", no store, no sockets, no rendezvous (logged at INFO); every
 * call works on it. Some of the variables set but no complete pair (e.g.
 * FOLD_RANK without FOLD_SIZE), or FOLD_STORE without rank/size, is
 * FOLD_EINVAL naming them: a job was meant, and running alone would hide it.
 * Returns FOLD_EINVAL if rank/size are incomplete or the store cannot be
 * found, FOLD_ETIMEDOUT if some rank does not join in time (the message
 * names the missing ranks), FOLD_EAUTH if the store refuses this rank's
 * token or the store address is served by something that is not a fold
 * store (e.g. PyTorch's TCPStore at MASTER_PORT: detected within about 2 s
 * of connecting; the message says what answered and to set FOLD_STORE).
 * On failure *comm is NULL and fold_comm_last_error(NULL) says why. */
FOLD_API int fold_init(fold_comm **comm);

/* Create a communicator of `size` ranks, this process being `rank`, meeting
 * at `store`: "tcp://host:port" (IPv4, a name, or [IPv6]) or "file:///dir".
 * With a tcp store, rank 0 serves the store at host:port itself unless it
 * cannot listen there (the port is taken, by foldrun for instance, or host
 * is not an address of this machine): then every rank is a client. Blocks
 * until every rank has joined and all connections are made and
 * authenticated (bounded by FOLD_TIMEOUT). Transports: peers in the same
 * process, host and namespaces use shm, others tcp (FOLD_TRANSPORT forces
 * one; forcing shm across hosts is FOLD_EINVAL).
 * Authentication: every TCP connection (store and data) runs an HMAC-SHA256
 * challenge-response keyed by FOLD_JOB_TOKEN. When no token is set, the key
 * is derived from the store address: strangers and other jobs are still
 * refused, but anyone who knows the address can join (rank 0 logs a warning).
 * Signals: while this rank's shared-memory segment is still a name in
 * /dev/shm (from its creation until every rank has mapped it, inside
 * fold_comm_init/fold_init), SIGTERM and SIGINT remove it before they take
 * effect. The first communicator that uses shm installs a handler for both
 * (unless the program ignores the signal) that unlinks such segments and
 * then calls the handler the program had installed before, with the same
 * arguments, or, if there was none, restores the default action and
 * re-raises, so the process still ends "killed by signal". Install your
 * own SIGTERM/SIGINT handlers before fold_init to keep both; a handler
 * installed afterwards replaces fold's (segments of a rank killed then, or
 * by SIGKILL, are removed by the next job on the host, with a warning).
 * Errors as for fold_init. */
FOLD_API int fold_comm_init(fold_comm **comm, int rank, int size, const char *store);

/* fold_comm_init_store: the same rendezvous at an external store given as
 * callbacks (e.g. torch's c10d::Store): include/fold_store.h. */

/* Create n ranks in this process (transport inproc): comms[i] is rank i and
 * must be used by one thread (typically thread i). Does not block.
 * Returns FOLD_EINVAL if n < 1 or comms is NULL. */
FOLD_API int fold_comm_init_threads(int n, fold_comm **comms);

/* Release comm and everything it holds. Never hangs, even after a failure;
 * pending requests of comm become invalid (do not wait on them afterwards).
 * Peers still talking to this rank see it as lost (FOLD_EPEER). Any order
 * of destroying a communicator and its sub-communicators works: the
 * connections go with the last of them, a child outlives its destroyed
 * parent (see "sub-communicators").
 * NULL is accepted and ignored. Returns FOLD_OK (FOLD_EINVAL, nothing
 * done, for a simulated rank while its fold_sim_run is running). */
FOLD_API int fold_comm_destroy(fold_comm *comm);

/* Fail every pending and later operation on comm, and on every
 * communicator split or duplicated from it (at any depth, also through a
 * generation already destroyed), with FOLD_EABORTED; the communicators it
 * was made from and its siblings go on. Local: peers notice only when they
 * next need this rank (they see FOLD_EPEER once it is destroyed or exits).
 * Any thread may call it; the owner acts on it at its next call or
 * progress. Does not block. Returns FOLD_OK, or FOLD_EINVAL for NULL. */
FOLD_API int fold_comm_abort(fold_comm *comm);

/* This rank's index in [0, size), or FOLD_EINVAL for NULL. */
FOLD_API int fold_comm_rank(const fold_comm *comm);

/* The number of ranks, or FOLD_EINVAL for NULL. */
FOLD_API int fold_comm_size(const fold_comm *comm);

/* Node-local rank: this rank's index among the ranks of comm on the same
 * host, ordered by rank (torchrun's LOCAL_RANK), or FOLD_EINVAL for NULL.
 * "Same host" is the test the transports use to choose shared memory: the
 * same kernel boot and the same network, pid and ipc namespaces, so ranks
 * in different network namespaces of one machine are on different hosts.
 * fold_comm_init_threads (and fold_init's world of one): every rank is
 * local (local rank = rank). Simulator: the hosts of fold_sim_set_hosts;
 * without them every rank is its own host (local rank 0, local size 1), as
 * each has its own link in the model. */
FOLD_API int fold_comm_local_rank(const fold_comm *comm);

/* How many ranks of comm are on this rank's host (itself included), by the
 * same rule as fold_comm_local_rank, or FOLD_EINVAL for NULL. */
FOLD_API int fold_comm_local_size(const fold_comm *comm);

/* ---- sub-communicators --------------------------------------------------
 * A communicator made from another (its parent) by fold_comm_split,
 * fold_comm_dup or fold_comm_split_host is a child: it has its own size and
 * ranks, and every call works on it (point-to-point with wildcards, every
 * collective and algorithm, the `shm` ones included, selection, mismatch
 * detection, nonblocking calls, fold_sim_* calls on simulated ones,
 * further splits). A child reuses its parent's connections and shared
 * memory: making one costs one allgather over the parent and no store
 * traffic, sockets or segments (the `shm` collectives add one segment per
 * rank at a child's first collective, below). Its messages never match those of its
 * parent, a sibling or any other communicator (each carries the id of its
 * communicator). Docs: docs/comm.md.
 *  - Inherited: FOLD_TIMEOUT, FOLD_DEBUG, the algorithms forced with
 *    fold_comm_set_algo or FOLD_ALGO, the FOLD_RULES rules and the user
 *    ops created so far (later ones are per communicator).
 *  - The `shm` algorithms run on a child whose ranks are all processes of
 *    one host reached over shared memory (a split or dup of such a world,
 *    or a fold_comm_split_host child of any world), as on a world, and
 *    automatic selection picks them there alike. Each such child gets a
 *    collective area of its own in every member: a shared-memory segment
 *    per rank, made by the child's first collective (a split costs nothing
 *    more; the first collective waits until every member made its area),
 *    whose name leaves /dev/shm once every member mapped it and whose
 *    memory goes with fold_comm_destroy. A member SIGKILLed meanwhile
 *    leaves its segment to the next job's sweep. On a child whose ranks
 *    span hosts (or threads, or the simulator) forcing one is FOLD_EINVAL
 *    with the reason; a failure to make the area fails the child on every
 *    rank (FOLD_ESYS naming the rank).
 *  - Progress: a wait on any communicator of a family (a world and the
 *    children made from it, in this process) drives them all, so
 *    nonblocking calls on several of them may be interleaved from one
 *    thread. The communicators of one family must be used from one thread
 *    at a time (threads made by fold_comm_init_threads each have their own
 *    family).
 *  - Failures: a lost peer fails, on every communicator of the family that
 *    contains it, the operations that need it (FOLD_EPEER naming the rank in
 *    the communicator and in the world: "peer rank 1 (rank 3 of the
 *    world)"). A mismatch or a timeout fails only the communicator it
 *    happened on, fold_comm_abort that communicator and those made from
 *    it; the connections are closed only once
 *    every communicator of the family has failed.
 *  - Destruction in any order: the connections belong to the family and
 *    go with its last communicator. A world destroyed before its children
 *    leaves them usable until they are destroyed; meanwhile peers see this
 *    rank's world as silent (its messages are dropped), not as lost.
 *    fold_sim_destroy also frees the children of its communicators: destroy
 *    them before it or not at all. */

/* The color of a rank that joins no new communicator. */
#define FOLD_UNDEFINED (-32766)

/* Collective over comm: split it into disjoint communicators, one per color.
 * Ranks that pass the same color form one new communicator, ranked by key,
 * then by rank in comm; color FOLD_UNDEFINED joins none (*newcomm = NULL).
 * Blocks until every rank of comm has called it (like a collective: all
 * ranks call it in the same order relative to their other collectives on
 * comm; a rank that calls another collective instead gets FOLD_EMISMATCH,
 * and so do its peers). Returns FOLD_EINVAL on every rank, with a message
 * naming the rank, when some rank passes a negative color other than
 * FOLD_UNDEFINED or a NULL newcomm (nothing is created anywhere; a NULL
 * comm is FOLD_EINVAL at once, message in fold_comm_last_error(NULL));
 * comm's failure status if it failed (*newcomm = NULL); FOLD_ENOMEM.
 * Simulator: the program plays every rank from one thread, so the call
 * cannot block there: it starts the exchange and returns at once with
 * *newcomm set (NULL for FOLD_UNDEFINED); the new communicator is complete
 * once the simulator has run the exchange (fold_sim_run, or a blocking
 * call on a rank of comm that runs past it), and until then every call on
 * it returns FOLD_EINVAL ("not complete yet"). A rank's own bad argument
 * is FOLD_EINVAL at once; its peers' new communicators then stay failed
 * with FOLD_EINVAL and the message naming it (and stay "not complete" if
 * comm fails first). */
FOLD_API int fold_comm_split(fold_comm *comm, int color, int key, fold_comm **newcomm);

/* Collective over comm: a new communicator with the same ranks in the same
 * order, whose messages never match comm's (a library's private channel).
 * Errors as for fold_comm_split. */
FOLD_API int fold_comm_dup(fold_comm *comm, fold_comm **newcomm);

/* Collective over comm: the ranks of comm on this rank's host, ordered by
 * rank in comm (MPI_COMM_TYPE_SHARED). "Same host" is the rule of
 * fold_comm_local_rank, the one the transports use to choose shared memory
 * (same boot and network, pid and ipc namespaces: network namespaces are
 * hosts); threads of fold_comm_init_threads share one host; on the
 * simulator the hosts of fold_sim_set_hosts, without them every rank is
 * its own host (a communicator of one). Then
 * fold_comm_size(*hostcomm) == fold_comm_local_size(comm). Errors as for
 * fold_comm_split. */
FOLD_API int fold_comm_split_host(fold_comm *comm, fold_comm **hostcomm);

/* ---- collectives -------------------------------------------------------- */
/* Every rank of the communicator calls the same collectives in the same
 * order with the same count, dtype, op and root (MPI's rule), and selects
 * the same algorithm for each call (same FOLD_ALGO, fold_comm_set_algo and
 * FOLD_RULES). A rank that differs is detected (at the latest by rank + 1,
 * which compares its call with its left neighbour's), and the detecting
 * rank reports it to every rank: the report names both ranks and both calls
 * with their algorithms, and fails the communicator on every rank it
 * reaches (its state is no longer trustworthy). A collective's data
 * combine only with data of ranks that made the same call: every rank
 * whose part of the call needs data from a rank that called differently
 * gets FOLD_EMISMATCH as soon as the report reaches it (not FOLD_ETIMEDOUT),
 * never FOLD_OK with wrong data; and no rank of such a call returns
 * FOLD_OK at all, not even one whose part needed no other rank's data (a
 * broadcast root): rooted calls check signatures in log2(n) rounds for
 * that. Likewise a call that failed on a rank for another reason (a
 * timeout, a lost peer) fails on every rank that the failure report
 * reaches before the call completes there, even a rank that comes late
 * and finds all its data waiting. Two calls that differ in one value only (counts and roots
 * below 2^29) never exchange data; calls that differ in several values at
 * once could, with probability 2^-29, before the report arrives; and
 * with several nonblocking calls outstanding, ranks that mix the `shm`
 * algorithm with another may time out instead (docs/collectives.md). Collectives block until this rank's
 * part is done (its buffers are final); the nonblocking twins fold_i<name>
 * take a trailing fold_request ** completed by fold_test/fold_wait, and any
 * number may be outstanding on one communicator (they complete in any order;
 * all ranks must start them in the same order).
 * Reductions combine in an order chosen by the algorithm; for a
 * non-commutative user op the result is x0 op x1 op ... op x(n-1) in rank
 * order, and only algorithms that keep that order accept it.
 * Errors: FOLD_EINVAL for bad arguments (NULL buffers with count > 0, root
 * out of range, bitwise ops on float types, FOLD_MINLOC/FOLD_MAXLOC on
 * anything but a pair type, another built-in op on a pair type, a built-in
 * op on a record type, FOLD_SUM_EXACT on anything but float32/float64, a forced algorithm that cannot serve the call),
 * otherwise as for point-to-point. A call fold cannot serve correctly is
 * refused, never answered wrongly. */

typedef enum fold_op {
  FOLD_SUM = 0,
  FOLD_PROD,
  FOLD_MIN,
  FOLD_MAX,
  FOLD_AVG,   /* sum divided by the rank count (integers: truncated toward zero) */
  FOLD_BAND,  /* bitwise and: integer types only */
  FOLD_BOR,   /* bitwise or: integer types only */
  FOLD_BXOR,  /* bitwise xor: integer types only */
  FOLD_MINLOC, /* pair types only: the smaller value with its index; of equal
                  values the lower index (MPI's rule); NaN values give an
                  unspecified pair */
  FOLD_MAXLOC, /* pair types only: the larger value with its index; of equal
                  values the lower index */
  FOLD_SUM_EXACT, /* float32 and float64 only: the correctly rounded (to
                     nearest, ties to even) sum of all inputs, bitwise the same
                     whatever the algorithm, tree, order or rank count. NaN if
                     any input is NaN or if both +inf and -inf occur, else an
                     infinity if any input is one; a finite sum beyond the
                     type's range rounds to an infinity; an exact zero is +0
                     unless every input was -0. Cost: the collective carries a
                     fixed-point accumulator per element (88 bytes for float32,
                     544 for float64) instead of the element, and allocates
                     one for the input (count elements; count * size for
                     reduce_scatter); see docs/areduce.md. Also in fold_areduce. */
  FOLD_OP_BUILTIN_COUNT /* not an op; user ops from fold_op_create come after */
} fold_op;

/* recvbuf = sendbuf(0) op ... op sendbuf(n-1) on every rank.
 * In place: sendbuf == recvbuf. */
FOLD_API int fold_allreduce(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op,
                            fold_comm *comm);
/* The reduction lands in recvbuf at root only (recvbuf is ignored elsewhere
 * and may be NULL). In place at the root: sendbuf == recvbuf. */
FOLD_API int fold_reduce(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op,
                         int root, fold_comm *comm);
/* root's buf is copied to buf on every rank. */
FOLD_API int fold_broadcast(void *buf, size_t count, fold_dtype dtype, int root, fold_comm *comm);
/* sendbuf holds n*recvcount elements; rank r receives block r of the
 * reduction. In place: recvbuf == sendbuf + rank*recvcount*elemsize; the
 * other blocks of sendbuf then serve as scratch (undefined afterwards). */
FOLD_API int fold_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype,
                                 fold_op op, fold_comm *comm);
/* recvbuf (n*sendcount elements) gets rank r's sendbuf at block r on every
 * rank. In place: sendbuf == recvbuf + rank*sendcount*elemsize. */
FOLD_API int fold_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype,
                            fold_comm *comm);
/* As allgather, but only root receives (recvbuf ignored elsewhere). In place
 * at root: sendbuf == recvbuf + root*sendcount*elemsize. */
FOLD_API int fold_gather(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, int root,
                         fold_comm *comm);
/* root's sendbuf (n*recvcount elements) is cut in n blocks; rank r receives
 * block r in recvbuf (sendbuf ignored elsewhere). In place at root:
 * recvbuf == sendbuf + root*recvcount*elemsize. */
FOLD_API int fold_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, int root,
                          fold_comm *comm);
/* Block p of sendbuf (count elements each) goes to rank p, landing at block
 * r (the sender's rank) of its recvbuf. In place is not supported
 * (sendbuf == recvbuf with count > 0 is FOLD_EINVAL). */
FOLD_API int fold_alltoall(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_comm *comm);
/* Returns once every rank has entered the barrier. */
FOLD_API int fold_barrier(fold_comm *comm);

FOLD_API int fold_iallreduce(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op,
                             fold_comm *comm, fold_request **req);
FOLD_API int fold_ireduce(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_op op,
                          int root, fold_comm *comm, fold_request **req);
FOLD_API int fold_ibroadcast(void *buf, size_t count, fold_dtype dtype, int root, fold_comm *comm,
                             fold_request **req);
FOLD_API int fold_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype,
                                  fold_op op, fold_comm *comm, fold_request **req);
FOLD_API int fold_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype,
                             fold_comm *comm, fold_request **req);
FOLD_API int fold_igather(const void *sendbuf, void *recvbuf, size_t sendcount, fold_dtype dtype, int root,
                          fold_comm *comm, fold_request **req);
FOLD_API int fold_iscatter(const void *sendbuf, void *recvbuf, size_t recvcount, fold_dtype dtype, int root,
                           fold_comm *comm, fold_request **req);
FOLD_API int fold_ialltoall(const void *sendbuf, void *recvbuf, size_t count, fold_dtype dtype, fold_comm *comm,
                            fold_request **req);
FOLD_API int fold_ibarrier(fold_comm *comm, fold_request **req);

/* Create a user reduction op. fn computes inout[i] = in[i] op inout[i] for
 * count elements of dtype, where `in` holds the combined contribution of
 * lower ranks (MPI_User_function's convention); ctx is passed through.
 * The op must be elementwise: element i of the result depends on element
 * i of the inputs only, because algorithms cut the vector into pieces of
 * any whole number of elements and combine each piece separately (fn sees
 * any count from 1 up, and `in` and inout never overlap). Over a built-in
 * dtype an element is one number (or one pair); to combine several numbers
 * as one unit (a struct, a (sum, count) pair), make them one element with
 * fold_dtype_create: then fn gets that record dtype and a count of whole
 * records. Passing such a struct as FOLD_UINT8 with count = bytes gets it
 * cut at arbitrary bytes: wrong results.
 * commutative = 0 restricts the op to order-keeping algorithms. Local: every
 * rank creates the same ops in the same order. The op lives as long as
 * comm. Returns FOLD_EINVAL for a NULL op, fn or comm. */
FOLD_API int fold_op_create(fold_op *op,
                            void (*fn)(void *inout, const void *in, size_t count, fold_dtype dtype, void *ctx),
                            void *ctx, int commutative, fold_comm *comm);

/* ---- the rest of the API: each part in its own header, included here ---- */
#ifdef __cplusplus
}
#endif
#include "fold_p2p.h" /* point-to-point: sends, receives, requests, probe */
#include "fold_opts.h" /* per-call options of the collectives: fold_coll_opts, fold_<collective>_opts */
#include "fold_iterq.h" /* the iterative communication queue (Alink's model) */
#include "fold_areduce.h" /* asynchronous tree reduction, full and partial (LuNA's model) */
#include "fold_kv.h" /* the parameter-server key-value store (MXNet's KVStore) */
#include "fold_store.h" /* fold_comm_init_store: a rendezvous at an external store (callbacks) */
#include "fold_sim.h" /* the simulated network: n ranks in one thread under virtual time */
#include "fold_select.h" /* choosing a collective's algorithm: FOLD_ALGO, rules files, fold_comm_set_algo */
#endif /* FOLD_H */
