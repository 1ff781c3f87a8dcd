/* fold_sim.c — fold-sim: one collective on N simulated ranks, its virtual time next to the alpha-beta model, sweeps to CSV and PNG. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fold.h"
#include "sim_model.h"
#include "sim_areduce.h"
#include "sim_ringskip.h"

#define MAX_POINTS 4096 /* values in one sweep (-n or -b) */
#define MAX_SLOW 64

static const char *const colls[] = {"broadcast", "reduce", "allreduce", "reduce_scatter", "allgather",
                                    "gather", "scatter", "alltoall", "barrier", NULL};

static void usage(FILE *f) {
  fprintf(f,
          "usage: fold-sim [-c COLLECTIVE] [-a ALGORITHM] [-n RANKS] [-b BYTES] [--latency S]\n"
          "                [--bandwidth BYTES_PER_S] [--op-time S_PER_BYTE] [--op-overhead S]\n"
          "                [--slow RANK:SECONDS[,RANK:SECONDS...]] [--warmup K] [--sim-cap X]\n"
          "                [--csv FILE] [--png FILE]\n"
          "                [--hosts H --ppn P [--layout contiguous|roundrobin] [--host-latency S]\n"
          "                [--host-bandwidth BYTES_PER_S]]\n"
          "Runs one collective on N simulated ranks and prints its virtual time next to\n"
          "the alpha-beta model's prediction (docs/simulator.md).\n"
          "  -c  broadcast, reduce, allreduce (default), reduce_scatter, allgather,\n"
          "      gather, scatter, alltoall, barrier\n"
          "  -a  an algorithm of that collective (docs/collectives.md); default auto:\n"
          "      the library's choice, shown per row as auto:NAME, next to NAME's model\n"
          "  -n  ranks (default 8); -b bytes per call: the count argument in bytes,\n"
          "      float32 elements (default 1M). Suffixes K, M, G (powers of 1024).\n"
          "      Sweeps: A:B:xF (A, A*F, ... up to B), A:B:+D (A, A+D, ...), or A,B,C\n"
          "  --latency S         alpha, seconds per message (default 5e-6)\n"
          "  --bandwidth B/S     1/beta, bytes per second (default 1.25e10)\n"
          "  --op-time S         gamma, seconds per byte reduced (default 0)\n"
          "  --op-overhead S     seconds per local reduction call (default 0)\n"
          "  --slow R:S          rank R computes S seconds (fold_sim_compute) before\n"
          "                      it starts the collective\n"
          "  --hosts H, --ppn P  H hosts of P ranks each (n = H*P; instead of -n; H may be a\n"
          "                      sweep): --latency and --bandwidth are then the network\n"
          "                      between hosts, whose ranks share one NIC per host\n"
          "  --layout L          contiguous (default: rank r on host r / P) or roundrobin\n"
          "                      (rank r on host r %% H)\n"
          "  --host-latency S    latency inside a host (default 5e-7)\n"
          "  --host-bandwidth B  bytes per second inside a host (default 5e10)\n"
          "  --warmup K          K untimed calls before the timed one (default 0; hier's\n"
          "                      first call also makes its children)\n"
          "  --sim-cap X         points where n * bytes > X (memory and copies grow with\n"
          "                      it) are not simulated: the model only, sim_s '-'\n"
          "  --csv FILE          write every point as CSV; with a sweep also FILE's\n"
          "                      name with .png (gnuplot), unless --png names one\n"
          "  --png FILE          the plot's file\n"
          "Exit status: 0 done, 1 a simulation failed, 2 bad arguments.\n"
          "fold-sim areduce-full|areduce-partial [--op sum|sum_exact] [--dtype T] [--terms]\n"
          "[--csv FILE [--png FILE]]: the LuNA thesis' asynchronous reduction experiments\n"
          "(figures 4.1-4.3) run by fold_areduce (docs/areduce.md).\n"
          "fold-sim ring-skip [--allreduce] [--once] [--max-n N] [--csv FILE]: the slow-node ring paper's\n"
          "sweep, ring against ring_skip (docs/straggler.md).\n");
}

static int bad(const char *fmt, const char *arg) {
  fprintf(stderr, "fold-sim: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  usage(stderr);
  return 2;
}

/* "64", "4K", "1M", "2G" -> bytes; -1 if not a size. */
static double parse_size(const char *s) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || !(v >= 0))
    return -1;
  switch (*end) {
  case 'k': case 'K': v *= 1024, end++; break;
  case 'm': case 'M': v *= 1024.0 * 1024, end++; break;
  case 'g': case 'G': v *= 1024.0 * 1024 * 1024, end++; break;
  default: break;
  }
  if (*end == 'B' || *end == 'b')
    end++;
  return *end || v != floor(v) || v > 1e15 ? -1 : v;
}

/* One value, a list A,B,C, or a range A:B:xF / A:B:+D, into out (ascending
 * for ranges). Returns the count, or -1. */
static int parse_sweep(const char *s, double *out, int max) {
  char buf[256];
  if (strlen(s) >= sizeof buf)
    return -1;
  strcpy(buf, s);
  char *c1 = strchr(buf, ':');
  if (c1 == NULL) {
    int k = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
      if (k == max || (out[k] = parse_size(tok)) < 0)
        return -1;
      k++;
    }
    return k;
  }
  char *c2 = strchr(c1 + 1, ':');
  if (c2 == NULL)
    return -1;
  *c1 = *c2 = '\0';
  double lo = parse_size(buf), hi = parse_size(c1 + 1);
  char kind = c2[1];
  double step = (kind == 'x' || kind == '+') ? parse_size(c2 + 2) : -1;
  if (lo < 0 || hi < lo || step < 0 || (kind == 'x' && (step < 2 || lo == 0)) || (kind == '+' && step == 0))
    return -1;
  int k = 0;
  for (double v = lo; v <= hi; v = kind == 'x' ? v * step : v + step) {
    if (k == max)
      return -1;
    out[k++] = v;
  }
  return k;
}

static double parse_num(const char *s) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  return (end == s || *end || errno || !isfinite(v) || v < 0) ? -1 : v;
}

typedef struct {
  const char *coll, *algo;
  fold_sim_params p;
  int ppn, roundrobin;       /* ppn > 0: hosts of ppn ranks (n = hosts * ppn) */
  fold_sim_params host;      /* the link inside a host */
  int warmup;                /* untimed calls before the timed one */
  double sim_cap;            /* > 0: points with n * bytes above it get the model only */
  int nslow, slow_rank[MAX_SLOW];
  double slow_s[MAX_SLOW];
} config;

static int coll_index(const char *name) {
  for (int i = 0; colls[i]; i++)
    if (strcmp(colls[i], name) == 0)
      return i;
  return -1;
}

/* Run the collective once on n ranks with `bytes` per call; *t gets the
 * virtual time and *picked the algorithm that ran (automatic selection's
 * choice for "auto"). All ranks share one input and one output buffer: the values
 * are meaningless, the times are not (the simulator's costs do not depend on
 * them; sim_coll checks every algorithm's results). Returns 0, 1 on a
 * failure (printed), 2 for an algorithm the library refuses. */
static int run_one(const config *cf, int n, double bytes, double *t, const char **picked) {
  int ci = coll_index(cf->coll);
  size_t count = (size_t)(bytes / 4);
  int per_rank_in = ci == 3 || ci == 6 || ci == 7, per_rank_out = ci == 4 || ci == 5 || ci == 7;
  size_t in_n = per_rank_in ? count * (size_t)n : count, out_n = per_rank_out ? count * (size_t)n : count;
  float *in = calloc(in_n + 1, sizeof(float)), *out = calloc(out_n + 1, sizeof(float));
  fold_comm **c = calloc((size_t)n, sizeof *c);
  fold_request **req = calloc((size_t)n, sizeof *req);
  fold_sim *sim = NULL;
  int rc = 0;
  if (!in || !out || !c || !req) {
    fprintf(stderr, "fold-sim: out of memory for n = %d, %.0f bytes\n", n, bytes);
    rc = 1;
    goto done;
  }
  if (fold_sim_create(n, &cf->p, &sim, c) != FOLD_OK) {
    fprintf(stderr, "fold-sim: fold_sim_create: %s\n", fold_comm_last_error(NULL));
    rc = 1;
    goto done;
  }
  if (cf->ppn > 0) {
    int hosts = n / cf->ppn, *of = malloc((size_t)n * sizeof *of);
    for (int r = 0; of && r < n; r++) of[r] = cf->roundrobin ? r % hosts : r / cf->ppn;
    int x = of ? fold_sim_set_hosts(sim, hosts, of, &cf->host, &cf->p) : FOLD_ENOMEM;
    free(of);
    if (x != FOLD_OK) {
      fprintf(stderr, "fold-sim: fold_sim_set_hosts: %s\n", x == FOLD_ENOMEM ? "out of memory" : fold_comm_last_error(NULL));
      rc = 1;
      goto done;
    }
  }
  char spec[96];
  snprintf(spec, sizeof spec, "%s=%s", cf->coll, cf->algo);
  for (int r = 0; r < n && strcmp(cf->algo, "auto") != 0; r++)
    if (fold_comm_set_algo(c[r], spec) != FOLD_OK) {
      fprintf(stderr, "fold-sim: %s\n", fold_comm_last_error(c[r]));
      rc = 2;
      goto done;
    }
  *picked = fold_comm_get_algo(c[0], cf->coll, count, FOLD_FLOAT32, FOLD_SUM);
  if (*picked == NULL) {
    fprintf(stderr, "fold-sim: %s\n", fold_comm_last_error(c[0]));
    rc = 2;
    goto done;
  }
  for (int k = 0; k < cf->nslow; k++)
    if (fold_sim_compute(c[cf->slow_rank[k]], cf->slow_s[k]) != FOLD_OK) {
      fprintf(stderr, "fold-sim: %s\n", fold_comm_last_error(c[cf->slow_rank[k]]));
      rc = 1;
      goto done;
    }
  /* cf->warmup untimed calls first (hier's first call also makes its
   * children), then the timed one: *t is its virtual time alone */
  double t0 = 0;
  for (int call = 0; call <= cf->warmup && rc == 0; call++) {
    t0 = fold_sim_time(sim);
    for (int r = 0; r < n && rc == 0; r++) {
      int x, root = 0;
      switch (ci) {
      case 0: x = fold_ibroadcast(out, count, FOLD_FLOAT32, root, c[r], &req[r]); break;
      case 1: x = fold_ireduce(in, out, count, FOLD_FLOAT32, FOLD_SUM, root, c[r], &req[r]); break;
      case 2: x = fold_iallreduce(in, out, count, FOLD_FLOAT32, FOLD_SUM, c[r], &req[r]); break;
      case 3: x = fold_ireduce_scatter(in, out, count, FOLD_FLOAT32, FOLD_SUM, c[r], &req[r]); break;
      case 4: x = fold_iallgather(in, out, count, FOLD_FLOAT32, c[r], &req[r]); break;
      case 5: x = fold_igather(in, out, count, FOLD_FLOAT32, root, c[r], &req[r]); break;
      case 6: x = fold_iscatter(in, out, count, FOLD_FLOAT32, root, c[r], &req[r]); break;
      case 7: x = fold_ialltoall(in, out, count, FOLD_FLOAT32, c[r], &req[r]); break;
      default: x = fold_ibarrier(c[r], &req[r]); break;
      }
      if (x != FOLD_OK) {
        fprintf(stderr, "fold-sim: %s %s n=%d rank %d: %s\n", cf->coll, cf->algo, n, r, fold_comm_last_error(c[r]));
        rc = x == FOLD_EINVAL ? 2 : 1; /* EINVAL at start: an algorithm that cannot serve this call */
      }
    }
    if (rc == 0 && fold_sim_run(sim) != FOLD_OK) {
      fprintf(stderr, "fold-sim: fold_sim_run: %s\n", fold_comm_last_error(NULL));
      rc = 1;
    }
    *t = fold_sim_time(sim) - t0;
    for (int r = 0; r < n && rc == 0; r++)
      if (req[r] && fold_wait(req[r]) != FOLD_OK) {
        fprintf(stderr, "fold-sim: rank %d: %s\n", r, fold_comm_last_error(c[r]));
        rc = 1;
      }
  }
done:
  fold_sim_destroy(sim);
  free(in), free(out), free(c), free(req);
  return rc;
}

/* The algorithm automatic selection gives coll on a simulated world of n
 * ranks without hosts, as hier's children choose (one host, or a rank per
 * host; never hier): the name, or "-" if none. */
static const char *child_algo(const config *cf, const char *coll, int n, size_t count) {
  fold_sim *sim = NULL;
  fold_comm **c = calloc((size_t)n, sizeof *c);
  const char *a = NULL;
  if (c && fold_sim_create(n, &cf->p, &sim, c) == FOLD_OK)
    a = fold_comm_get_algo(c[0], coll, count, FOLD_FLOAT32, FOLD_SUM);
  fold_sim_destroy(sim);
  free(c);
  return a ? a : "-";
}

/* The model of algorithm `picked` for one point (NAN: none). */
static double model_of(const config *cf, const char *picked, int n, double bytes) {
  if (cf->ppn <= 0)
    return fold__model_time(cf->coll, picked, n, bytes, &cf->p);
  int hosts = n / cf->ppn;
  if (strcmp(picked, "hier") != 0)
    return fold__model_time_hosts(cf->coll, picked, hosts, cf->ppn, cf->roundrobin, bytes, &cf->host, &cf->p);
  size_t count = (size_t)(bytes / 4);
  int ar = strcmp(cf->coll, "allreduce") == 0;
  const char *first = child_algo(cf, ar ? "reduce" : cf->coll, cf->ppn, count);
  const char *net = child_algo(cf, cf->coll, hosts, count);
  const char *back = child_algo(cf, ar ? "broadcast" : cf->coll, cf->ppn, count);
  return fold__model_time_hier(cf->coll, hosts, cf->ppn, bytes, first, net, back, &cf->host, &cf->p);
}

/* Search PATH for an executable gnuplot. */
static int have_gnuplot(void) {
  const char *path = getenv("PATH");
  char dir[4096], file[4200];
  while (path && *path) {
    size_t len = strcspn(path, ":");
    if (len && len < sizeof dir) {
      memcpy(dir, path, len);
      dir[len] = '\0';
      snprintf(file, sizeof file, "%s/gnuplot", dir);
      if (access(file, X_OK) == 0)
        return 1;
    }
    path += len + (path[len] == ':');
  }
  return 0;
}

/* Plot sim (points) and model (lines) against bytes, one pair per n, or
 * against n when only n varies. Returns 0 or 1. */
static int plot(const char *png, const config *cf, const double *ns, int nn, const double *bs, int nb, double *sim_t,
                double *model_t) {
  if (!have_gnuplot()) {
    fprintf(stderr, "fold-sim: gnuplot not found: no PNG written (the CSV has the data)\n");
    return 0;
  }
  char dat[] = "/tmp/fold-sim-XXXXXX";
  int fd = mkstemp(dat);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (f == NULL) {
    fprintf(stderr, "fold-sim: cannot write plot data: %s\n", strerror(errno));
    return 1;
  }
  int by_bytes = nb > 1, blocks = by_bytes ? nn : nb, per = by_bytes ? nb : nn;
  for (int k = 0; k < blocks; k++) {
    for (int j = 0; j < per; j++) {
      int i = by_bytes ? k * nb + j : j * nb + k;
      fprintf(f, "%.17g %.17g %.17g\n", by_bytes ? bs[j] : ns[j], sim_t[i], model_t[i]);
    }
    fprintf(f, "\n\n");
  }
  fclose(f);
  FILE *g = popen("gnuplot", "w");
  if (g == NULL) {
    remove(dat);
    return 1;
  }
  int have_model = 0; /* lines only where a model exists (none for some algorithms) */
  for (int i = 0; i < nn * nb; i++) have_model |= !isnan(model_t[i]);
  int automatic = strcmp(cf->algo, "auto") == 0;
  fprintf(g, "set terminal png size 900,600\nset output '%s'\n", png);
  /* no apostrophes: the title is a single-quoted gnuplot string */
  fprintf(g, "set title '%s %s: simulated (points)%s' noenhanced\n", cf->coll, cf->algo,
          !have_model ? ", no alpha-beta model for this algorithm"
          : automatic ? ", alpha-beta model of the algorithm picked (lines)" : " and alpha-beta model (lines)");
  fprintf(g, "set logscale xy\nset xlabel '%s'\nset ylabel 'virtual seconds'\nset key left top\n",
          by_bytes ? "bytes" : "ranks");
  fprintf(g, "plot ");
  for (int k = 0; k < blocks; k++) {
    char lab[64];
    if (by_bytes)
      snprintf(lab, sizeof lab, "n = %.0f", ns[k]);
    else
      snprintf(lab, sizeof lab, "%.0f B", bs[k]);
    fprintf(g, "%s'%s' index %d using 1:2 with points pt 7 lc %d title '%s'", k ? ", " : "", dat, k, k + 1, lab);
    if (have_model) fprintf(g, ", '' index %d using 1:3 with lines lc %d notitle", k, k + 1);
  }
  fprintf(g, "\n");
  int st = pclose(g);
  remove(dat);
  if (st != 0) {
    fprintf(stderr, "fold-sim: gnuplot failed (status %d): no PNG\n", st);
    return 1;
  }
  printf("# plot: %s\n", png);
  return 0;
}

static void fmt_ratio(char *buf, size_t cap, double s, double m) {
  if (isnan(m) || m <= 0 || isnan(s))
    snprintf(buf, cap, "-");
  else
    snprintf(buf, cap, "%.3f", s / m);
}

int main(int argc, char **argv) {
  if (argc > 1 && (!strcmp(argv[1], "areduce-full") || !strcmp(argv[1], "areduce-partial")))
    return fold_sim_areduce_main(argc, argv); /* the thesis' experiments (docs/areduce.md) */
  if (argc > 1 && !strcmp(argv[1], "ring-skip"))
    return fold_sim_ringskip_main(argc, argv); /* the slow-node ring paper's sweep (docs/straggler.md) */
  config cf = {.coll = "allreduce", .algo = "auto"};
  fold_sim_params_default(&cf.p);
  fold_sim_params_default(&cf.host);
  cf.host.latency = 5e-7;
  cf.host.byte_time = 2e-11;
  static double hs[MAX_POINTS];
  int nh = 0, have_n = 0;
  static double ns[MAX_POINTS], bs[MAX_POINTS];
  int nn = 1, nb = 1;
  ns[0] = 8;
  bs[0] = 1 << 20;
  const char *csv = NULL, *png = NULL;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
      usage(stdout);
      return 0;
    }
    if (i + 1 >= argc)
      return bad("%s needs a value (or is unknown)", o);
    const char *v = argv[++i];
    if (!strcmp(o, "-c")) {
      if (coll_index(v) < 0)
        return bad("unknown collective '%s'", v);
      cf.coll = v;
    } else if (!strcmp(o, "-a")) {
      cf.algo = v;
    } else if (!strcmp(o, "-n")) {
      have_n = 1;
      if ((nn = parse_sweep(v, ns, MAX_POINTS)) < 1)
        return bad("bad rank count or sweep '%s'", v);
      for (int k = 0; k < nn; k++)
        if (ns[k] < 1 || ns[k] > 1 << 20)
          return bad("rank counts must be 1 .. 1M: '%s'", v);
    } else if (!strcmp(o, "-b")) {
      if ((nb = parse_sweep(v, bs, MAX_POINTS)) < 1)
        return bad("bad size or sweep '%s'", v);
      for (int k = 0; k < nb; k++)
        if (fmod(bs[k], 4) != 0)
          return bad("sizes must be multiples of 4 bytes (float32): '%s'", v);
    } else if (!strcmp(o, "--latency")) {
      if ((cf.p.latency = parse_num(v)) < 0)
        return bad("bad --latency '%s'", v);
    } else if (!strcmp(o, "--bandwidth")) {
      double bw = parse_num(v);
      if (!(bw > 0))
        return bad("bad --bandwidth '%s'", v);
      cf.p.byte_time = 1 / bw;
    } else if (!strcmp(o, "--op-time")) {
      if ((cf.p.op_time = parse_num(v)) < 0)
        return bad("bad --op-time '%s'", v);
    } else if (!strcmp(o, "--op-overhead")) {
      if ((cf.p.op_overhead = parse_num(v)) < 0)
        return bad("bad --op-overhead '%s'", v);
    } else if (!strcmp(o, "--slow")) {
      char buf[1024];
      snprintf(buf, sizeof buf, "%s", v);
      for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *colon = strchr(tok, ':');
        if (colon == NULL || cf.nslow == MAX_SLOW)
          return bad("bad --slow '%s' (want RANK:SECONDS)", v);
        *colon = '\0';
        char *end;
        long r = strtol(tok, &end, 10);
        double s = parse_num(colon + 1);
        if (end == tok || *end || r < 0 || r > 1 << 20 || s < 0)
          return bad("bad --slow '%s' (want RANK:SECONDS)", v);
        cf.slow_rank[cf.nslow] = (int)r;
        cf.slow_s[cf.nslow++] = s;
      }
    } else if (!strcmp(o, "--hosts")) {
      if ((nh = parse_sweep(v, hs, MAX_POINTS)) < 1)
        return bad("bad host count or sweep '%s'", v);
      for (int k = 0; k < nh; k++)
        if (hs[k] < 1 || hs[k] > 1 << 20)
          return bad("host counts must be 1 .. 1M: '%s'", v);
    } else if (!strcmp(o, "--ppn")) {
      double x = parse_num(v);
      if (!(x >= 1 && x <= 1 << 20 && x == floor(x)))
        return bad("bad --ppn '%s' (ranks per host, >= 1)", v);
      cf.ppn = (int)x;
    } else if (!strcmp(o, "--layout")) {
      if (strcmp(v, "contiguous") && strcmp(v, "roundrobin"))
        return bad("bad --layout '%s' (contiguous or roundrobin)", v);
      cf.roundrobin = !strcmp(v, "roundrobin");
    } else if (!strcmp(o, "--host-latency")) {
      if ((cf.host.latency = parse_num(v)) < 0)
        return bad("bad --host-latency '%s'", v);
    } else if (!strcmp(o, "--host-bandwidth")) {
      double bw = parse_num(v);
      if (!(bw > 0))
        return bad("bad --host-bandwidth '%s'", v);
      cf.host.byte_time = 1 / bw;
    } else if (!strcmp(o, "--warmup")) {
      double x = parse_num(v);
      if (!(x >= 0 && x <= 100 && x == floor(x)))
        return bad("bad --warmup '%s' (untimed calls, 0 .. 100)", v);
      cf.warmup = (int)x;
    } else if (!strcmp(o, "--sim-cap")) {
      if ((cf.sim_cap = parse_size(v)) < 0)
        return bad("bad --sim-cap '%s' (bytes)", v);
    } else if (!strcmp(o, "--csv")) {
      csv = v;
    } else if (!strcmp(o, "--png")) {
      png = v;
    } else {
      return bad("unknown option '%s'", o);
    }
  }
  if ((nh > 0) != (cf.ppn > 0))
    return bad("%s", "--hosts and --ppn go together");
  if (nh > 0 && have_n)
    return bad("%s", "-n and --hosts exclude each other (n = hosts * ppn)");
  if (nh > 0) {
    nn = nh;
    for (int k = 0; k < nh; k++) {
      ns[k] = hs[k] * cf.ppn;
      if (ns[k] > 1 << 20)
        return bad("%s", "hosts * ppn must be at most 1M ranks");
    }
  }
  for (int k = 0; k < cf.nslow; k++)
    for (int j = 0; j < nn; j++)
      if (cf.slow_rank[k] >= ns[j]) {
        char m[64];
        snprintf(m, sizeof m, "%d (n = %.0f)", cf.slow_rank[k], ns[j]);
        return bad("--slow rank %s is not a rank", m);
      }
  char pngbuf[4096];
  if (csv && png == NULL && nn * nb > 1) {
    const char *dot = strrchr(csv, '.');
    size_t stem = dot && !strchr(dot, '/') ? (size_t)(dot - csv) : strlen(csv);
    snprintf(pngbuf, sizeof pngbuf, "%.*s.png", (int)stem, csv);
    png = pngbuf;
  }
  FILE *cf_out = NULL;
  if (csv && (cf_out = fopen(csv, "w")) == NULL) {
    fprintf(stderr, "fold-sim: cannot write %s: %s\n", csv, strerror(errno));
    return 1;
  }
  if (cf_out)
    fprintf(cf_out, "collective,algorithm,n,bytes,sim_s,model_s,ratio,latency_s,byte_time_s,op_time_s,op_overhead_s,slow,"
                    "hosts,ppn,layout,host_latency_s,host_byte_time_s\n");
  printf("# fold-sim: latency %g s, bandwidth %g B/s, op_time %g s/B, op_overhead %g s", cf.p.latency,
         1 / cf.p.byte_time, cf.p.op_time, cf.p.op_overhead);
  char slow[512] = "";
  for (int k = 0; k < cf.nslow; k++) {
    size_t l = strlen(slow);
    snprintf(slow + l, sizeof slow - l, "%s%d:%g", k ? " " : "", cf.slow_rank[k], cf.slow_s[k]);
  }
  printf("%s%s", cf.nslow ? ", slow ranks (rank:seconds) " : "", slow);
  if (cf.ppn > 0)
    printf("; hosts of %d ranks (%s), one NIC each at the latency and bandwidth above; inside a host latency %g s, "
           "bandwidth %g B/s", cf.ppn, cf.roundrobin ? "roundrobin" : "contiguous", cf.host.latency, 1 / cf.host.byte_time);
  printf("\n");
  printf("%-15s %-24s %7s %12s %14s %14s %9s\n", "collective", "algorithm", "n", "bytes", "sim_s", "model_s",
         "sim/model");
  double *sim_t = calloc((size_t)nn * nb, sizeof(double)), *model_t = calloc((size_t)nn * nb, sizeof(double));
  if (!sim_t || !model_t) {
    fprintf(stderr, "fold-sim: out of memory\n");
    return 1;
  }
  int rc = 0;
  for (int j = 0; j < nn && rc == 0; j++)
    for (int k = 0; k < nb && rc == 0; k++) {
      int n = (int)ns[j], i = j * nb + k;
      double bytes = strcmp(cf.coll, "barrier") ? bs[k] : 0;
      const char *picked = cf.algo;
      if (cf.sim_cap > 0 && (double)n * bytes > cf.sim_cap)
        sim_t[i] = NAN; /* too big to simulate here: the model alone */
      else if ((rc = run_one(&cf, n, bytes, &sim_t[i], &picked)) != 0)
        break;
      /* "auto" shows what it picked for this point, and that algorithm's model */
      char algo[64];
      if (strcmp(cf.algo, "auto") == 0)
        snprintf(algo, sizeof algo, "auto:%s", picked);
      else
        snprintf(algo, sizeof algo, "%s", cf.algo);
      model_t[i] = model_of(&cf, picked, n, bytes);
      char ratio[32], model[32];
      fmt_ratio(ratio, sizeof ratio, sim_t[i], model_t[i]);
      if (isnan(model_t[i]))
        snprintf(model, sizeof model, "-");
      else
        snprintf(model, sizeof model, "%.6e", model_t[i]);
      char simv[32] = "-";
      if (!isnan(sim_t[i]))
        snprintf(simv, sizeof simv, "%.6e", sim_t[i]);
      printf("%-15s %-24s %7d %12.0f %14s %14s %9s\n", cf.coll, algo, n, bytes, simv, model, ratio);
      fflush(stdout);
      if (cf_out) {
        char mcsv[40] = "", rcsv[40] = "", scsv[40] = ""; /* empty where there is no model or no run */
        if (!isnan(model_t[i]))
          snprintf(mcsv, sizeof mcsv, "%.9e", model_t[i]);
        if (!isnan(sim_t[i]))
          snprintf(scsv, sizeof scsv, "%.9e", sim_t[i]);
        if (!isnan(model_t[i]) && model_t[i] > 0 && !isnan(sim_t[i]))
          snprintf(rcsv, sizeof rcsv, "%.6f", sim_t[i] / model_t[i]);
        fprintf(cf_out, "%s,%s,%d,%.0f,%s,%s,%s,%g,%g,%g,%g,%s,", cf.coll, algo, n, bytes, scsv, mcsv, rcsv,
                cf.p.latency, cf.p.byte_time, cf.p.op_time, cf.p.op_overhead, slow);
        if (cf.ppn > 0)
          fprintf(cf_out, "%d,%d,%s,%g,%g\n", n / cf.ppn, cf.ppn, cf.roundrobin ? "roundrobin" : "contiguous",
                  cf.host.latency, cf.host.byte_time);
        else
          fprintf(cf_out, ",,,,\n");
      }
    }
  if (cf_out && fclose(cf_out) != 0) {
    fprintf(stderr, "fold-sim: writing %s failed\n", csv);
    rc = rc ? rc : 1;
  }
  if (rc == 2)
    usage(stderr);
  if (rc == 0 && png && nn * nb > 1)
    rc = plot(png, &cf, ns, nn, bs, nb, sim_t, model_t);
  else if (rc == 0 && png)
    fprintf(stderr, "fold-sim: one point only: no PNG (sweep -n or -b for a plot)\n");
  free(sim_t), free(model_t);
  return rc;
}
