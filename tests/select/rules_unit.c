/* rules_unit.c — the FOLD_RULES parser and rule matching: valid files, every error with its FILE:LINE, precedence. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "select/select.h"
#include "transport/transport.h"



static char dir[] = "/tmp/fold_rules_unitXXXXXX";

/* Write text to a fresh file in dir; returns its path (static buffer per slot). */
static const char *put(const char *name, const char *text) {
  static char paths[8][512];
  static int slot;
  char *p = paths[slot++ % 8];
  snprintf(p, 512, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  if (f == NULL) {
    perror(p);
    exit(2);
  }
  fputs(text, f);
  fclose(f);
  return p;
}

/* Load text as a rules file; the error text lands in err. */
static int load(const char *text, fold__rules **rs, char *err, size_t len) {
  return fold__rules_load(put("r.rules", text), rs, err, len);
}

/* A bad file must fail with exactly "PATH:LINE: <what>". */
static void expect_error(const char *text, int line, const char *what) {
  fold__rules *rs = (fold__rules *)1;
  char err[512], want[1024];
  int rc = load(text, &rs, err, sizeof err);
  snprintf(want, sizeof want, "%s/r.rules:%d: %s", dir, line, what);
  CHECK(rc == FOLD_EINVAL, "rc %d for \"%s\"", rc, text);
  CHECK(rs == NULL, "rules returned for a bad file \"%s\"", text);
  CHECK(strcmp(err, want) == 0, "for \"%s\"\n   got: %s\n  want: %s", text, err, want);
}

static void test_valid(void) {
  fold__rules *rs = NULL;
  char err[512] = "";
  const char *text =
      "# a comment line\n"
      "\n"
      "   \t  \n"
      "allreduce shm 2-4 0-2047 recursive_doubling   # trailing comment\n"
      "allreduce tcp 8- 2K-512K rabenseifner commutative\n"
      "allreduce * * 1M- ring_segmented commutative pof2\r\n"
      "broadcast inproc 3 * pipeline\n"
      "alltoall sim -16 -256 bruck\n"
      "barrier * * 0 dissemination\n"
      "\treduce_scatter  *  5-5  1G  ring";
  CHECK_OK(load(text, &rs, err, sizeof err), NULL);
  CHECK(err[0] == '\0', "error text on success: %s", err);
  if (rs == NULL) return;
  CHECK(rs->count == 7, "count %d", rs->count);
  const fold__rule *r = rs->rule;
  CHECK(r[0].coll == FOLD__COLL_ALLREDUCE && r[0].transport == FOLD__TP_KIND_SHM && r[0].min_ranks == 2 &&
            r[0].max_ranks == 4 && r[0].min_bytes == 0 && r[0].max_bytes == 2047 && r[0].line == 4 &&
            strcmp(r[0].algo, "recursive_doubling") == 0 && !r[0].commutative_only && !r[0].pof2_only,
        "rule 0");
  CHECK(r[1].transport == FOLD__TP_KIND_TCP && r[1].min_ranks == 8 && r[1].max_ranks == FOLD__RULE_ANY_RANKS &&
            r[1].min_bytes == 2048 && r[1].max_bytes == 512 * 1024 && r[1].commutative_only && !r[1].pof2_only,
        "rule 1");
  CHECK(r[2].transport == 0 && r[2].min_ranks == 1 && r[2].max_ranks == FOLD__RULE_ANY_RANKS &&
            r[2].min_bytes == 1 << 20 && r[2].max_bytes == FOLD__RULE_ANY_BYTES && r[2].commutative_only &&
            r[2].pof2_only && strcmp(r[2].algo, "ring_segmented") == 0,
        "rule 2 (CRLF line)");
  CHECK(r[3].coll == FOLD__COLL_BROADCAST && r[3].transport == FOLD__TP_KIND_INPROC && r[3].min_ranks == 3 &&
            r[3].max_ranks == 3 && r[3].min_bytes == 0 && r[3].max_bytes == FOLD__RULE_ANY_BYTES,
        "rule 3");
  CHECK(r[4].transport == FOLD__TP_KIND_SIM && r[4].min_ranks == 1 && r[4].max_ranks == 16 && r[4].min_bytes == 0 &&
            r[4].max_bytes == 256,
        "rule 4");
  CHECK(r[5].coll == FOLD__COLL_BARRIER && r[5].min_bytes == 0 && r[5].max_bytes == 0, "rule 5: exactly 0 bytes");
  CHECK(r[6].coll == FOLD__COLL_REDUCE_SCATTER && r[6].min_ranks == 5 && r[6].max_ranks == 5 &&
            r[6].min_bytes == (size_t)1 << 30 && r[6].max_bytes == (size_t)1 << 30 && r[6].line == 10,
        "rule 6 (no final newline)");
  fold__rules_free(rs);

  /* Empty and comment-only files are valid and hold no rule. */
  CHECK_OK(load("", &rs, err, sizeof err), NULL);
  CHECK(rs && rs->count == 0, "empty file");
  fold__rules_free(rs);
  CHECK_OK(load("# nothing\n\n#allreduce * * * ring\n", &rs, err, sizeof err), NULL);
  CHECK(rs && rs->count == 0, "comments only");
  fold__rules_free(rs);
}

static void test_errors(void) {
  const char *shape = "a rule is: collective transport ranks bytes algorithm [commutative] [pof2] [multihost]";
  char want[256];
  snprintf(want, sizeof want, "3 fields; %s", shape);
  expect_error("# ok\n\nallreduce shm 2\n", 3, want);
  snprintf(want, sizeof want, "1 field; %s", shape);
  expect_error("allreduce\n", 1, want);
  expect_error("allreduce * * * ring\nallsmash * * * ring\n", 2,
               "unknown collective \"allsmash\" (known: broadcast reduce allreduce reduce_scatter allgather gather "
               "scatter alltoall barrier)");
  expect_error("allreduce carrier_pigeon * * ring\n", 1, "unknown transport \"carrier_pigeon\" (known: * inproc shm tcp sim)");
  expect_error("allreduce * * * rign\n", 1,
               "allreduce has no algorithm \"rign\" (known: reduce_bcast recursive_doubling rabenseifner ring "
               "ring_segmented direct shm ring_skip hier)");
  expect_error("gather * * * ring\n", 1, "gather has no algorithm \"ring\" (known: binomial linear shm)");
  expect_error("allreduce * * * ring sorted\n", 1, "unknown flag \"sorted\" (known: commutative pof2 multihost)");
  const char *rbad = "(want *, N, N-, -M or N-M with 1 <= N <= M)";
  const char *bbad = "(want *, N, N-, -M or N-M with N <= M; K, M, G suffixes)";
  const char *ranks[] = {"0", "0-4", "5-2", "-", "x", "2-x", "3K", "2--4", "99999999999"};
  for (size_t i = 0; i < sizeof ranks / sizeof *ranks; i++) {
    char text[128];
    snprintf(text, sizeof text, "allreduce * %s * ring\n", ranks[i]);
    snprintf(want, sizeof want, "bad ranks range \"%s\" %s", ranks[i], rbad);
    expect_error(text, 1, want);
  }
  const char *bytes[] = {"2M-1K", "12Q", "1KB", "K", "-", "1-2-3", "99999999999999999999", "17179869184G"};
  for (size_t i = 0; i < sizeof bytes / sizeof *bytes; i++) {
    char text[128];
    snprintf(text, sizeof text, "allreduce * * %s ring\n", bytes[i]);
    snprintf(want, sizeof want, "bad bytes range \"%s\" %s", bytes[i], bbad);
    expect_error(text, 1, want);
  }
  snprintf(want, sizeof want, "too many fields (%s)", shape);
  expect_error("allreduce * * * ring commutative commutative commutative commutative commutative commutative "
               "commutative commutative commutative commutative commutative pof2 pof2\n",
               1, want);
  /* Only the first problem is spelled out; the others are counted. */
  expect_error("allreduce * * * ring\nallreduce * * * nope\nbroadcast * x * binomial\nbroadcast * * * pipeline\n"
               "reduce zzz\n",
               2,
               "allreduce has no algorithm \"nope\" (known: reduce_bcast recursive_doubling rabenseifner ring "
               "ring_segmented direct shm ring_skip hier) (and 2 more bad lines)");
  expect_error("allreduce * * * ring\nx\ny\n", 2, "1 field; a rule is: collective transport ranks bytes algorithm "
                                                  "[commutative] [pof2] [multihost] (and 1 more bad line)");
  {
    fold__rules *rs = NULL;
    char err[512];
    static const char nul[] = "allreduce * * * ring\nallreduce * \0 * ring\n";
    FILE *f = fopen(put("r.rules", ""), "w");
    fwrite(nul, 1, sizeof nul - 1, f);
    fclose(f);
    char p[512], w[600];
    snprintf(p, sizeof p, "%s/r.rules", dir);
    CHECK(fold__rules_load(p, &rs, err, sizeof err) == FOLD_EINVAL && rs == NULL, "NUL byte accepted");
    snprintf(w, sizeof w, "%s:2: a NUL byte: not a text file", p);
    CHECK(strcmp(err, w) == 0, "got %s", err);
  }

  /* Missing and unreadable files. */
  fold__rules *rs = (fold__rules *)1;
  char err[512], w[600], p[512];
  snprintf(p, sizeof p, "%s/no-such-file", dir);
  CHECK(fold__rules_load(p, &rs, err, sizeof err) == FOLD_EINVAL && rs == NULL, "missing file accepted");
  snprintf(w, sizeof w, "%s: cannot open: No such file or directory", p);
  CHECK(strcmp(err, w) == 0, "got %s", err);
  /* A short error buffer truncates, never overflows. */
  char tiny[16];
  CHECK(fold__rules_load(p, &rs, tiny, sizeof tiny) == FOLD_EINVAL && strlen(tiny) == sizeof tiny - 1, "tiny");
}

/* path must be refused with exactly "PATH: what", promptly. */
static void expect_file_error(const char *path, int want_rc, const char *what) {
  fold__rules *rs = (fold__rules *)1;
  char err[512], w[1024];
  int rc = fold__rules_load(path, &rs, err, sizeof err);
  snprintf(w, sizeof w, "%s: %s", path, what);
  CHECK(rc == want_rc && rs == NULL, "%s: rc %d, want %d", path, rc, want_rc);
  CHECK(strcmp(err, w) == 0, "%s\n   got: %s\n  want: %s", path, err, w);
}

/* Only regular files up to FOLD__RULES_MAX_BYTES, read without blocking;
 * every read error is reported. main's alarm() fails the test if a FIFO
 * blocks. */
static void test_files(void) {
  char p[512], w[256];
  /* Not regular files: a directory, an endless device, a FIFO without a
   * writer (opening it for reading would block; reading it would too). */
  expect_file_error(dir, FOLD_EINVAL, "a directory, not a regular file");
  expect_file_error("/dev/zero", FOLD_EINVAL, "a character device, not a regular file");
  snprintf(p, sizeof p, "%s/fifo", dir);
  CHECK(mkfifo(p, 0600) == 0, "mkfifo %s", p);
  expect_file_error(p, FOLD_EINVAL, "a FIFO, not a regular file");

  /* Size: exactly the limit is read (a rule, then one long comment line);
   * one byte more is refused before anything is read. */
  snprintf(p, sizeof p, "%s/big.rules", dir);
  FILE *f = fopen(p, "w");
  const char *rule = "allreduce * * * ring\n";
  fputs(rule, f);
  for (size_t i = strlen(rule); i + 1 < (size_t)FOLD__RULES_MAX_BYTES; i++) fputc('#', f);
  fputc('\n', f);
  fclose(f);
  struct stat st;
  CHECK(stat(p, &st) == 0 && st.st_size == FOLD__RULES_MAX_BYTES, "size %lld", (long long)st.st_size);
  fold__rules *rs = NULL;
  char err[512];
  CHECK(fold__rules_load(p, &rs, err, sizeof err) == FOLD_OK && rs && rs->count == 1, "a file at the limit: %s", err);
  fold__rules_free(rs);
  CHECK(truncate(p, FOLD__RULES_MAX_BYTES + 1) == 0, "truncate");
  snprintf(w, sizeof w, "%d bytes, over the limit of %d for a rules file", FOLD__RULES_MAX_BYTES + 1,
           FOLD__RULES_MAX_BYTES);
  expect_file_error(p, FOLD_EINVAL, w);
  CHECK(truncate(p, (off_t)1 << 31) == 0, "truncate 2 GiB (sparse)");
  snprintf(w, sizeof w, "%lld bytes, over the limit of %d for a rules file", 1LL << 31, FOLD__RULES_MAX_BYTES);
  expect_file_error(p, FOLD_EINVAL, w);
  /* A read error is reported with its errno text: /proc/self/mem is a
   * regular file whose read at offset 0 fails with EIO. */
  expect_file_error("/proc/self/mem", FOLD_EINVAL, "read error: Input/output error");
  /* /proc files say size 0: the size is not trusted, the file is read
   * (and this one, a program name, is not a rule). */
  rs = NULL;
  CHECK(fold__rules_load("/proc/self/comm", &rs, err, sizeof err) == FOLD_EINVAL && rs == NULL,
        "/proc/self/comm (a program name, not a rule) was accepted");
  CHECK(strstr(err, "/proc/self/comm:1: ") == err, "a size-0 file was not read: %s", err);

  /* Unreadable: root reads through chmod 000, so only a non-root run can
   * hold that case; /proc/self/mem above holds the read error. */
  if (geteuid() != 0) {
    snprintf(p, sizeof p, "%s/locked.rules", dir);
    put("locked.rules", "allreduce * * * ring\n");
    CHECK(chmod(p, 0) == 0, "chmod");
    expect_file_error(p, FOLD_EINVAL, "cannot open: Permission denied");
  }

  /* Through FOLD_RULES: the communicator is made at once (no blocking on
   * the FIFO) and says why the file was refused. */
  fold_comm *cs[2];
  snprintf(p, sizeof p, "%s/fifo", dir);
  setenv("FOLD_DEBUG", "NONE", 1);
  setenv("FOLD_RULES", p, 1);
  CHECK_OK(fold_comm_init_threads(2, cs), NULL);
  unsetenv("FOLD_RULES");
  unsetenv("FOLD_DEBUG");
  char want[700];
  snprintf(want, sizeof want, "FOLD_RULES: %s: a FIFO, not a regular file", p);
  CHECK(strcmp(fold_comm_last_error(cs[1]), want) == 0, "last error: %s", fold_comm_last_error(cs[1]));
  CHECK(fold__selection_of(cs[1])->rules == NULL, "rules from a FIFO");
  for (int i = 0; i < 2; i++) fold_comm_destroy(cs[i]);
}

/* ---- selection ------------------------------------------------------------ */

static const char *pick(fold_comm *c, fold__coll_kind kind, size_t bytes, int commutative) {
  const fold__algo *a = NULL;
  int rc = fold__select(c, kind, bytes, 1, commutative, &a, "test");
  CHECK(rc == FOLD_OK && a != NULL, "fold__select: %d %s", rc, fold_comm_last_error(c));
  return a ? a->name : "(none)";
}

#define CHECK_PICK(c, kind, bytes, comm, want)                                                      \
  do {                                                                                             \
    const char *got_ = pick((c), (kind), (bytes), (comm));                                         \
    CHECK(strcmp(got_, (want)) == 0, "n=%d %s %zu B%s: picked %s, want %s", (c)->size,           \
          fold__coll_name(kind), (size_t)(bytes), (comm) ? "" : " non-commutative", got_, (want)); \
  } while (0)

/* The built-in choice for a call on a communicator without FOLD_RULES. */
static const char *builtin(int n, fold__coll_kind kind, size_t bytes, int commutative) {
  static char name[64];
  unsetenv("FOLD_RULES");
  fold_comm *cs[16];
  CHECK_OK(fold_comm_init_threads(n, cs), NULL);
  snprintf(name, sizeof name, "%s", pick(cs[0], kind, bytes, commutative));
  for (int i = 0; i < n; i++) fold_comm_destroy(cs[i]);
  return name;
}

static void with_threads(int n, const char *rules_path, fold_comm **cs) {
  if (rules_path) setenv("FOLD_RULES", rules_path, 1);
  else unsetenv("FOLD_RULES");
  CHECK_OK(fold_comm_init_threads(n, cs), NULL);
  unsetenv("FOLD_RULES");
}

static void destroy(int n, fold_comm **cs) {
  for (int i = 0; i < n; i++) fold_comm_destroy(cs[i]);
}

static void test_select(void) {
  const char *path = put("sel.rules",
                         "# ranges, first match in file order\n"
                         "allreduce inproc 3 0-1K direct\n"
                         "allreduce inproc 3 1K-4K reduce_bcast          # 1024 matched above first\n"
                         "allreduce inproc 3 4097- ring                 # order-breaking: skipped for non-commutative\n"
                         "allreduce inproc 3 4097- rabenseifner\n"
                         "allreduce sim * * ring                        # another transport: never on inproc\n"
                         "allreduce * 4-8 * ring_segmented pof2\n"
                         "allreduce * 2 * reduce_bcast commutative\n"
                         "broadcast * * * pipeline\n");
  fold_comm *cs[16];
  with_threads(3, path, cs);
  const fold__rules *rs0 = fold__selection_of(cs[0])->rules;
  CHECK(rs0 && rs0->count == 8, "rules not attached");
  CHECK(strcmp(fold_comm_transport(cs[0]), "inproc") == 0, "transport %s", fold_comm_transport(cs[0]));
  CHECK(fold_comm_last_error(cs[0])[0] == '\0', "a valid file left an error: %s", fold_comm_last_error(cs[0]));
  CHECK_PICK(cs[0], FOLD__COLL_ALLREDUCE, 0, 1, "direct");
  CHECK_PICK(cs[0], FOLD__COLL_ALLREDUCE, 1024, 1, "direct");
  CHECK_PICK(cs[0], FOLD__COLL_ALLREDUCE, 1025, 1, "reduce_bcast");
  CHECK_PICK(cs[0], FOLD__COLL_ALLREDUCE, 4096, 1, "reduce_bcast");
  CHECK_PICK(cs[0], FOLD__COLL_ALLREDUCE, 4097, 1, "ring");
  CHECK_PICK(cs[0], FOLD__COLL_ALLREDUCE, (size_t)1 << 40, 1, "ring");
  CHECK_PICK(cs[0], FOLD__COLL_ALLREDUCE, 4097, 0, "rabenseifner"); /* ring passed over, not an error */
  CHECK_PICK(cs[0], FOLD__COLL_BROADCAST, 8, 1, "pipeline");
  /* Collectives without a rule in the file: the built-in table. */
  CHECK_PICK(cs[0], FOLD__COLL_ALLGATHER, 100000, 1, builtin(3, FOLD__COLL_ALLGATHER, 100000, 1));
  CHECK_PICK(cs[0], FOLD__COLL_REDUCE, 8, 0, builtin(3, FOLD__COLL_REDUCE, 8, 0));
  destroy(3, cs);

  /* Rank counts: pof2 only at 4 and 8 within 4-8; 5 falls to the built-in. */
  with_threads(4, path, cs);
  CHECK_PICK(cs[0], FOLD__COLL_ALLREDUCE, 64, 1, "ring_segmented");
  CHECK_PICK(cs[0], FOLD__COLL_ALLREDUCE, 64, 0, builtin(4, FOLD__COLL_ALLREDUCE, 64, 0));
  destroy(4, cs);
  with_threads(5, path, cs);
  CHECK_PICK(cs[0], FOLD__COLL_ALLREDUCE, 1 << 20, 1, builtin(5, FOLD__COLL_ALLREDUCE, 1 << 20, 1));
  destroy(5, cs);
  with_threads(8, path, cs);
  CHECK_PICK(cs[0], FOLD__COLL_ALLREDUCE, 8, 1, "ring_segmented");
  destroy(8, cs);
  /* commutative flag: a non-commutative call skips the rule itself. */
  with_threads(2, path, cs);
  CHECK_PICK(cs[0], FOLD__COLL_ALLREDUCE, 1 << 20, 1, "reduce_bcast");
  CHECK_PICK(cs[0], FOLD__COLL_ALLREDUCE, 1 << 20, 0, builtin(2, FOLD__COLL_ALLREDUCE, 1 << 20, 0));
  destroy(2, cs);

  /* Transport: the sim rule applies to simulated communicators only. */
  setenv("FOLD_RULES", path, 1);
  fold_sim *sim;
  CHECK_OK(fold_sim_create(3, NULL, &sim, cs), NULL);
  unsetenv("FOLD_RULES");
  CHECK(strcmp(fold_comm_transport(cs[1]), "sim") == 0, "transport %s", fold_comm_transport(cs[1]));
  CHECK(fold__comm_tp_kind(cs[1]) == FOLD__TP_KIND_SIM, "kind");
  CHECK_PICK(cs[1], FOLD__COLL_ALLREDUCE, 8, 1, "ring");
  CHECK_PICK(cs[1], FOLD__COLL_ALLREDUCE, 8, 0, builtin(3, FOLD__COLL_ALLREDUCE, 8, 0));
  fold_sim_destroy(sim);
  CHECK(fold_comm_transport(NULL) == NULL, "NULL comm");

  /* FOLD_ALGO and fold_comm_set_algo come before any rule. */
  setenv("FOLD_ALGO", "allreduce=recursive_doubling", 1);
  with_threads(3, path, cs);
  unsetenv("FOLD_ALGO");
  CHECK_PICK(cs[0], FOLD__COLL_ALLREDUCE, 8, 1, "recursive_doubling");
  CHECK_PICK(cs[0], FOLD__COLL_ALLREDUCE, 1 << 20, 1, "recursive_doubling");
  CHECK_PICK(cs[0], FOLD__COLL_BROADCAST, 8, 1, "pipeline");
  CHECK_OK(fold_comm_set_algo(cs[0], "broadcast=binomial,allreduce=auto"), cs[0]);
  CHECK_PICK(cs[0], FOLD__COLL_BROADCAST, 8, 1, "binomial");
  CHECK_PICK(cs[0], FOLD__COLL_ALLREDUCE, 8, 1, "direct");
  destroy(3, cs);
}

/* The FOLD_ALGO / fold_comm_set_algo grammar: every item names a
 * collective and an algorithm; an empty spec or item is FOLD_EINVAL with
 * a message, and a refused spec changes nothing. */
static void expect_spec_error(fold_comm *c, const char *spec, const char *want) {
  int rc = fold_comm_set_algo(c, spec);
  CHECK(rc == FOLD_EINVAL, "\"%s\": rc %d", spec, rc);
  CHECK(strcmp(fold_comm_last_error(c), want) == 0, "\"%s\"\n   got: %s\n  want: %s", spec,
        fold_comm_last_error(c), want);
}

static void test_specs(void) {
  fold_comm *c;
  CHECK_OK(fold_comm_init_threads(1, &c), NULL);
  CHECK_OK(fold_comm_set_algo(c, "allreduce=direct"), c);
  const char *form = "(want collective=algorithm[,collective=algorithm...]";
  char want[512];
  snprintf(want, sizeof want, "fold_comm_set_algo: empty spec %s)", form);
  expect_spec_error(c, "", want);
  const struct {
    const char *spec;
    int item;
  } empty[] = {{"allreduce=ring,", 2}, {",", 1}, {",allreduce=ring", 1}, {"allreduce=ring,,broadcast=binomial", 2}};
  for (size_t i = 0; i < sizeof empty / sizeof *empty; i++) {
    snprintf(want, sizeof want, "fold_comm_set_algo: item %d of \"%s\" is empty %s; no leading, trailing or "
             "doubled commas)", empty[i].item, empty[i].spec, form);
    expect_spec_error(c, empty[i].spec, want);
  }
  expect_spec_error(c, "=ring", "fold_comm_set_algo: \"=ring\" names no collective (want collective=algorithm)");
  expect_spec_error(c, "allreduce=", "fold_comm_set_algo: \"allreduce=\" names no algorithm (known: reduce_bcast "
                    "recursive_doubling rabenseifner ring ring_segmented direct shm ring_skip hier auto)");
  expect_spec_error(c, "broadcast=binomial,allreduce=",
                    "fold_comm_set_algo: \"allreduce=\" names no algorithm (known: reduce_bcast "
                    "recursive_doubling rabenseifner ring ring_segmented direct shm ring_skip hier auto)");
  expect_spec_error(c, "allreduce", "fold_comm_set_algo: \"allreduce\" is not collective=algorithm");
  expect_spec_error(c, "allreduce=rign", "fold_comm_set_algo: allreduce has no algorithm \"rign\" (known: "
                    "reduce_bcast recursive_doubling rabenseifner ring ring_segmented direct shm ring_skip hier auto)");
  expect_spec_error(c, "allsmash=ring", "fold_comm_set_algo: unknown collective \"allsmash\" (known: broadcast "
                    "reduce allreduce reduce_scatter allgather gather scatter alltoall barrier)");
  /* nothing changed by any of them, broadcast included */
  CHECK_PICK(c, FOLD__COLL_ALLREDUCE, 1 << 20, 1, "direct");
  CHECK(fold__selection_of(c)->coll_algo[FOLD__COLL_BROADCAST] < 0, "a refused spec forced broadcast");
  fold_comm_destroy(c);

  /* FOLD_ALGO: the same grammar; a bad value is reported (last error and
   * a warning) and ignored, the communicator is still made. */
  setenv("FOLD_DEBUG", "NONE", 1);
  setenv("FOLD_ALGO", "allreduce=ring,", 1);
  CHECK_OK(fold_comm_init_threads(1, &c), NULL);
  unsetenv("FOLD_ALGO");
  unsetenv("FOLD_DEBUG");
  CHECK(strcmp(fold_comm_last_error(c), "FOLD_ALGO: item 2 of \"allreduce=ring,\" is empty (want "
               "collective=algorithm[,collective=algorithm...]; no leading, trailing or doubled commas)") == 0,
        "last error: %s", fold_comm_last_error(c));
  CHECK(fold__selection_of(c)->coll_algo[FOLD__COLL_ALLREDUCE] < 0, "a refused FOLD_ALGO forced allreduce");
  fold_comm_destroy(c);
}

/* A bad FOLD_RULES: the communicator is made, warns, keeps the message in
 * last_error and selects with the built-in table only. */
static void test_bad_env(void) {
  const char *path = put("bad.rules", "allreduce * * * direct\nallreduce * * 4K-1K ring\n");
  fold_comm *cs[4];
  setenv("FOLD_DEBUG", "NONE", 1); /* the warning itself is checked by the end-to-end test */
  with_threads(3, path, cs);
  unsetenv("FOLD_DEBUG");
  char want[700];
  snprintf(want, sizeof want, "FOLD_RULES: %s:2: bad bytes range \"4K-1K\"", path);
  CHECK(strncmp(fold_comm_last_error(cs[2]), want, strlen(want)) == 0, "last error: %s", fold_comm_last_error(cs[2]));
  CHECK(fold__selection_of(cs[2])->rules == NULL, "a bad file was applied");
  CHECK_PICK(cs[2], FOLD__COLL_ALLREDUCE, 8, 1, builtin(3, FOLD__COLL_ALLREDUCE, 8, 1));
  /* and the collective runs */
  destroy(3, cs);

  setenv("FOLD_DEBUG", "NONE", 1);
  with_threads(2, "/nonexistent/fold.rules", cs);
  unsetenv("FOLD_DEBUG");
  CHECK(strcmp(fold_comm_last_error(cs[0]),
               "FOLD_RULES: /nonexistent/fold.rules: cannot open: No such file or directory") == 0,
        "last error: %s", fold_comm_last_error(cs[0]));
  CHECK_PICK(cs[0], FOLD__COLL_ALLREDUCE, 1 << 20, 1, builtin(2, FOLD__COLL_ALLREDUCE, 1 << 20, 1));
  destroy(2, cs);
}

static int reduces(fold__coll_kind k) {
  return k == FOLD__COLL_REDUCE || k == FOLD__COLL_ALLREDUCE || k == FOLD__COLL_REDUCE_SCATTER;
}

/* The built-in table alone must serve every collective, op kind and rank
 * count: no call may end at "no algorithm fits". */
static void test_builtin_total(void) {
  for (int n = 1; n <= 9; n++) {
    fold_comm *cs[16];
    with_threads(n, NULL, cs);
    for (int k = 0; k < FOLD__COLL_COUNT; k++)
      for (size_t b = 0; b <= ((size_t)1 << 30); b = b ? b * 4 : 1)
        for (int comm = !reduces((fold__coll_kind)k); comm <= 1; comm++) {
          const fold__algo *a = NULL;
          int rc = fold__select(cs[0], (fold__coll_kind)k, b, 1, comm, &a, "test");
          CHECK(rc == FOLD_OK && a && (comm || a->noncommutative_ok), "n=%d %s %zu B", n,
                fold__coll_name((fold__coll_kind)k), b);
        }
    destroy(n, cs);
  }
}

/* Selection scans only the call's collective's rules (grouped once): it
 * must pick what the first fitting rule of the whole table, in table
 * order, picks. The reference here walks the whole table (threads: the
 * inproc transport, one host). */
static const fold__algo *whole_table_pick(const fold_comm *c, fold__coll_kind k, size_t b, int comm) {
  int n, size = c->size;
  const fold__rule *r = fold__builtin_rules(&n);
  const fold__algo *const *algos = fold__algo_tables[k].algos;
  for (int i = 0; i < n; i++) {
    if (r[i].coll != k || (r[i].transport && r[i].transport != FOLD__TP_KIND_INPROC) || size < r[i].min_ranks ||
        size > r[i].max_ranks || b < r[i].min_bytes || b > r[i].max_bytes || (r[i].commutative_only && !comm) ||
        (r[i].pof2_only && (size & (size - 1))) || r[i].multihost_only)
      continue;
    const fold__algo *a = algos[fold__algo_index(k, r[i].algo, strlen(r[i].algo))];
    if ((a->usable && a->usable(c)) || (a->fits && a->fits(c, k, 1)) || (!comm && !a->noncommutative_ok)) continue;
    return a;
  }
  for (int i = 0; algos[i]; i++) /* no rule: the first that serves */
    if (!(algos[i]->usable && algos[i]->usable(c)) && !(algos[i]->fits && algos[i]->fits(c, k, 1)) &&
        (comm || algos[i]->noncommutative_ok))
      return algos[i];
  return NULL;
}

static void test_builtin_by_kind(void) {
  for (int n = 1; n <= 9; n++) {
    fold_comm *cs[16];
    with_threads(n, NULL, cs);
    for (int k = 0; k < FOLD__COLL_COUNT; k++)
      for (size_t b = 0; b <= ((size_t)1 << 30); b = b ? b * 2 : 1)
        for (int comm = !reduces((fold__coll_kind)k); comm <= 1; comm++) {
          const fold__algo *a = NULL, *want = whole_table_pick(cs[0], (fold__coll_kind)k, b, comm);
          int rc = fold__select(cs[0], (fold__coll_kind)k, b, 1, comm, &a, "test");
          CHECK(rc == FOLD_OK && want && a == want, "n=%d %s %zu B %s: picked %s, the whole table's scan %s", n,
                fold__coll_name((fold__coll_kind)k), b, comm ? "commutative" : "non-commutative", a ? a->name : "none",
                want ? want->name : "none");
        }
    destroy(n, cs);
  }
}

/* Every built-in rule names an algorithm of its collective, has sane
 * ranges, and every measured (collective, transport, ranks) block covers
 * every size from 0 up, in order and without gaps (the table is pasted
 * from scripts/tune_merge.py output, so check what a paste could break). */
static void test_builtin_sane(void) {
  int n;
  const fold__rule *r = fold__builtin_rules(&n);
  CHECK(n > 0, "no built-in rules");
  for (int i = 0; i < n; i++) {
    CHECK(fold__algo_index(r[i].coll, r[i].algo, strlen(r[i].algo)) >= 0, "rule %d: %s has no %s", i + 1,
          fold__coll_name(r[i].coll), r[i].algo);
    CHECK(r[i].min_ranks >= 1 && r[i].min_ranks <= r[i].max_ranks && r[i].min_bytes <= r[i].max_bytes,
          "rule %d: ranges", i + 1);
    CHECK(r[i].transport == 0 || r[i].transport == FOLD__TP_KIND_SHM || r[i].transport == FOLD__TP_KIND_TCP,
          "rule %d: transport %d", i + 1, r[i].transport);
    /* generic rules and the multihost (hier) ones are no measured block */
    if (r[i].transport == 0 || r[i].multihost_only) continue;
    int first = i == 0 || r[i - 1].multihost_only || r[i - 1].coll != r[i].coll ||
                r[i - 1].transport != r[i].transport || r[i - 1].min_ranks != r[i].min_ranks;
    if (first) CHECK(r[i].min_bytes == 0, "rule %d: a measured block starts at %zu B", i + 1, r[i].min_bytes);
    else CHECK(r[i].min_bytes == r[i - 1].max_bytes + 1, "rule %d: gap or overlap after rule %d", i + 1, i);
    int last = i + 1 == n || r[i + 1].coll != r[i].coll || r[i + 1].transport != r[i].transport ||
               r[i + 1].min_ranks != r[i].min_ranks;
    if (last) CHECK(r[i].max_bytes == FOLD__RULE_ANY_BYTES, "rule %d: a measured block ends at %zu B", i + 1,
                    r[i].max_bytes);
  }
}

/* The multihost rules: a communicator over tcp spanning hosts with more
 * than one rank on some host picks hier for a large allreduce; one host, a
 * rank per host, or a small call keep the flat choice. The layout is what
 * fold_comm_init_threads computed from FOLD_TEST_HOST_MAP; the transport
 * kind is faked as tcp (threads talk inproc). */
static void test_multihost(void) {
  static const fold__tp_ops tcp_ops = {.name = "fake-tcp", .kind = FOLD__TP_KIND_TCP};
  static fold__tp tcp = {.ops = &tcp_ops};
  struct {
    const char *map;
    int n, hosts, ppn, hier;
  } lay[] = {
      {"0,0,1,1", 4, 2, 2, 1},         /* 2 hosts x 2 */
      {"0,1", 5, 2, 3, 1},             /* round robin on 2 hosts: 3 + 2 */
      {"0,0,0,1,2,2,3,3", 8, 4, 3, 1}, /* uneven */
      {"0", 4, 1, 4, 0},               /* one host */
      {"0,1,2,3", 4, 4, 1, 0},         /* a rank per host */
  };
  for (size_t l = 0; l < sizeof lay / sizeof *lay; l++) {
    fold_comm *cs[16];
    setenv("FOLD_TEST_HOST_MAP", lay[l].map, 1);
    with_threads(lay[l].n, NULL, cs);
    unsetenv("FOLD_TEST_HOST_MAP");
    for (int r = 0; r < lay[l].n; r++)
      CHECK(cs[r]->nhosts == lay[l].hosts && cs[r]->max_ppn == lay[l].ppn,
            "map %s rank %d: %d hosts, at most %d per host; want %d, %d", lay[l].map, r, cs[r]->nhosts,
            cs[r]->max_ppn, lay[l].hosts, lay[l].ppn);
    fold_comm *c = cs[0];
    CHECK(strcmp(pick(c, FOLD__COLL_ALLREDUCE, 1 << 20, 1), "hier") != 0, "map %s: hier on inproc", lay[l].map);
    c->tps[c->ntps++] = &tcp; /* the slowest kind decides: tcp */
    const char *big = pick(c, FOLD__COLL_ALLREDUCE, 1 << 20, 1);
    CHECK((strcmp(big, "hier") == 0) == lay[l].hier, "map %s: 1 MiB allreduce over tcp picked %s", lay[l].map, big);
    const char *mid = pick(c, FOLD__COLL_ALLREDUCE, 256 << 10, 1);
    CHECK((strcmp(mid, "hier") == 0) == lay[l].hier, "map %s: 256 KiB allreduce over tcp picked %s", lay[l].map, mid);
    CHECK(strcmp(pick(c, FOLD__COLL_ALLREDUCE, 8, 1), "hier") != 0, "map %s: hier at 8 B", lay[l].map);
    CHECK(strcmp(pick(c, FOLD__COLL_ALLREDUCE, 4 << 20, 1), "hier") != 0, "map %s: hier at 4 MiB", lay[l].map);
    CHECK(strcmp(pick(c, FOLD__COLL_ALLREDUCE, 1 << 20, 0), "hier") != 0, "map %s: hier for a non-commutative op",
          lay[l].map);
    c->ntps--;
    destroy(lay[l].n, cs);
  }
  /* FOLD_RULES files say it with the flag multihost */
  const char *path = put("mh.rules", "barrier * * * hier multihost\nbarrier * * * dissemination\n");
  fold_comm *cs[16];
  setenv("FOLD_TEST_HOST_MAP", "0,0,1", 1);
  with_threads(3, path, cs);
  const fold__rules *rs0 = fold__selection_of(cs[0])->rules;
  CHECK(rs0 && rs0->rule[0].multihost_only == 1, "flag multihost not parsed");
  CHECK_PICK(cs[0], FOLD__COLL_BARRIER, 0, 1, "hier");
  destroy(3, cs);
  setenv("FOLD_TEST_HOST_MAP", "0,1,2", 1);
  with_threads(3, path, cs);
  CHECK_PICK(cs[0], FOLD__COLL_BARRIER, 0, 1, "dissemination");
  destroy(3, cs);
  unsetenv("FOLD_TEST_HOST_MAP");
}

int main(void) {
  alarm(120); /* a blocking open or read (a FIFO) fails the test instead of hanging it */
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 2;
  }
  unsetenv("FOLD_ALGO");
  unsetenv("FOLD_RULES");
  test_valid();
  test_errors();
  test_select();
  test_bad_env();
  test_files();
  test_specs();
  test_builtin_total();
  test_builtin_by_kind();
  test_builtin_sane();
  test_multihost();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return check_report("rules_unit");
}
