/* optim_unit.c — the built-in optimizers against an independent serial reference (and, with --torch FILE, against torch.optim's trajectory). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fold.h"
#include "kv/optim.h"

/* ---- the reference: the update rules written out in double, per element ---- */
typedef struct ref_params {
  int adam;
  double lr, momentum, wd, rescale, clip, beta1, beta2, eps;
} ref_params;

typedef struct ref_state {
  double *m, *v;
  long t;
} ref_state;

static void ref_step(const ref_params *p, ref_state *s, const double *grad, double *w, size_t n) {
  s->t++;
  for (size_t i = 0; i < n; i++) {
    double g = p->rescale * grad[i];
    if (p->clip > 0) g = fmin(p->clip, fmax(-p->clip, g));
    g += p->wd * w[i];
    if (!p->adam) {
      s->m[i] = p->momentum * s->m[i] - p->lr * g;
      w[i] += s->m[i];
    } else {
      s->m[i] = p->beta1 * s->m[i] + (1 - p->beta1) * g;
      s->v[i] = p->beta2 * s->v[i] + (1 - p->beta2) * g * g;
      double mhat = s->m[i] / (1 - pow(p->beta1, (double)s->t));
      double vhat = s->v[i] / (1 - pow(p->beta2, (double)s->t));
      w[i] -= p->lr * mhat / (sqrt(vhat) + p->eps);
    }
  }
}

static uint64_t rng = 88172645463325252ull;
static double urand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0 * 2 - 1;
}

/* Runs `steps` updates of two interleaved keys through spec and the
 * reference; checks every step within tol (relative to max(1, |w|)). */
static void trajectory(const char *spec, const ref_params *p, fold_dtype dt, int steps, double tol) {
  char why[256];
  fold__kv_optim *o;
  CHECK_RC(fold__kv_optim_parse(spec, &o, why, sizeof why), FOLD_OK, NULL);
  if (o == NULL) {
    fprintf(stderr, "  (%s)\n", why);
    return;
  }
  enum { N = 257, KEYS = 2 };
  size_t es = fold_dtype_size(dt);
  double rw[KEYS][N], rg[N], rm[KEYS][N], rv[KEYS][N];
  ref_state rs[KEYS];
  unsigned char w[KEYS][N * 8], g[N * 8];
  for (int k = 0; k < KEYS; k++) {
    rs[k] = (ref_state){rm[k], rv[k], 0};
    for (size_t i = 0; i < N; i++) {
      double x = urand();
      if (dt == FOLD_FLOAT32) ((float *)w[k])[i] = (float)x;
      else ((double *)w[k])[i] = x;
      rw[k][i] = dt == FOLD_FLOAT32 ? (double)(float)x : x;
      rm[k][i] = rv[k][i] = 0;
    }
  }
  double worst = 0;
  for (int s = 0; s < steps; s++) {
    for (int k = 0; k < KEYS; k++) {
      for (size_t i = 0; i < N; i++) {
        double x = urand() * 3;
        if (dt == FOLD_FLOAT32) ((float *)g)[i] = (float)x, rg[i] = (double)(float)x;
        else ((double *)g)[i] = x, rg[i] = x;
      }
      int64_t key = k == 0 ? 7 : -123456789012345;
      CHECK_OK(fold__kv_optim_apply(o, key, g, w[k], N, dt), NULL);
      ref_step(p, &rs[k], rg, rw[k], N);
      for (size_t i = 0; i < N; i++) {
        double got = dt == FOLD_FLOAT32 ? ((float *)w[k])[i] : ((double *)w[k])[i];
        double err = fabs(got - rw[k][i]) / fmax(1, fabs(rw[k][i]));
        if (err > worst) worst = err;
      }
    }
  }
  CHECK(worst <= tol, "%s %s: worst relative error %.3g over %d steps, allowed %.3g", spec, fold_dtype_name(dt),
        worst, steps, tol);
  (void)es;
  fold__kv_optim_free(o);
}

static void rules(void) {
  ref_params sgd = {0, 0.1, 0.9, 1e-4, 1, 0, 0, 0, 0};
  ref_params sgd_plain = {0, 0.05, 0, 0, 1, 0, 0, 0, 0};
  ref_params sgd_rc = {0, 0.1, 0.5, 0.01, 0.5, 0.7, 0, 0, 0};
  ref_params adam = {1, 0.001, 0, 0, 1, 0, 0.9, 0.999, 1e-8};
  ref_params adam_x = {1, 0.01, 0, 0.001, 2, 1.5, 0.8, 0.99, 1e-6};
  fold_dtype dts[2] = {FOLD_FLOAT64, FOLD_FLOAT32};
  double tols[2] = {1e-12, 2e-5};
  for (int d = 0; d < 2; d++) {
    trajectory("sgd lr=0.1 momentum=0.9 wd=0.0001", &sgd, dts[d], 50, tols[d]);
    trajectory("sgd lr=0.05", &sgd_plain, dts[d], 50, tols[d]);
    trajectory("  sgd\tlr=0.1, momentum=0.5 wd=0.01 rescale=0.5 clip=0.7 ", &sgd_rc, dts[d], 50, tols[d]);
    trajectory("sgd learning_rate=0.1 momentum=0.5 weight_decay=0.01 rescale_grad=0.5 clip_gradient=0.7", &sgd_rc,
               dts[d], 20, tols[d]);
    trajectory("adam", &adam, dts[d], 50, tols[d]);
    trajectory("adam lr=0.001 beta1=0.9 beta2=0.999 epsilon=1e-8 wd=0", &adam, dts[d], 50, tols[d]);
    trajectory("adam lr=0.01 beta1=0.8 beta2=0.99 epsilon=1e-6 wd=0.001 rescale=2 clip=1.5", &adam_x, dts[d], 50,
               tols[d]);
  }
  /* exact small cases: one SGD step of 0.5 * 2 from 1 is 0; momentum carries */
  fold__kv_optim *o;
  CHECK_OK(fold__kv_optim_parse("sgd lr=0.5 momentum=0.5", &o, NULL, 0), NULL);
  double w = 1, g = 2;
  CHECK_OK(fold__kv_optim_apply(o, 1, &g, &w, 1, FOLD_FLOAT64), NULL);
  CHECK(w == 0, "sgd step 1: weight %g, wanted 0", w);
  g = 0;
  CHECK_OK(fold__kv_optim_apply(o, 1, &g, &w, 1, FOLD_FLOAT64), NULL);
  CHECK(w == -0.5, "sgd step 2 (momentum only): weight %g, wanted -0.5", w);
  CHECK(strcmp(fold__kv_optim_name(o), "sgd") == 0, "name %s", fold__kv_optim_name(o));
  /* Adam's first step moves each weight by lr * sign(g) (bias correction) */
  fold__kv_optim *a;
  CHECK_OK(fold__kv_optim_parse("adam lr=0.25 epsilon=1e-12", &a, NULL, 0), NULL);
  float wf[2] = {1, 1}, gf[2] = {3, -0.001f};
  CHECK_OK(fold__kv_optim_apply(a, 5, gf, wf, 2, FOLD_FLOAT32), NULL);
  CHECK(fabsf(wf[0] - 0.75f) < 1e-5f && fabsf(wf[1] - 1.25f) < 1e-5f, "adam step 1: %g %g", wf[0], wf[1]);
  CHECK(strcmp(fold__kv_optim_name(a), "adam") == 0, "name %s", fold__kv_optim_name(a));
  /* a count or dtype differing from the key's state: EINVAL naming the key, weight untouched */
  float w3[3] = {4, 5, 6}, g3[3] = {1, 1, 1};
  CHECK_RC(fold__kv_optim_apply(a, 5, g3, w3, 3, FOLD_FLOAT32), FOLD_EINVAL, NULL);
  CHECK(strstr(fold_comm_last_error(NULL), "key 5") && strstr(fold_comm_last_error(NULL), "2 float32"),
        "message: %s", fold_comm_last_error(NULL));
  double wd2[2] = {1, 2}, gd2[2] = {1, 1};
  CHECK_RC(fold__kv_optim_apply(a, 5, gd2, wd2, 2, FOLD_FLOAT64), FOLD_EINVAL, NULL);
  CHECK(w3[0] == 4 && wd2[0] == 1 && wd2[1] == 2, "a rejected update wrote the weight");
  int32_t wi[2] = {1, 2}, gi[2] = {1, 1};
  CHECK_RC(fold__kv_optim_apply(a, 9, gi, wi, 2, FOLD_INT32), FOLD_EINVAL, NULL);
  CHECK(strstr(fold_comm_last_error(NULL), "key 9") && strstr(fold_comm_last_error(NULL), "int32"), "message: %s",
        fold_comm_last_error(NULL));
  CHECK(wi[0] == 1 && wi[1] == 2, "an int32 update wrote the weight");
  CHECK_RC(fold__kv_optim_apply(a, 10, NULL, wf, 2, FOLD_FLOAT32), FOLD_EINVAL, NULL);
  CHECK(strstr(fold_comm_last_error(NULL), "key 10") && strstr(fold_comm_last_error(NULL), "gradient"),
        "message: %s", fold_comm_last_error(NULL));
  CHECK_RC(fold__kv_optim_apply(a, 11, gf, NULL, 2, FOLD_FLOAT32), FOLD_EINVAL, NULL);
  CHECK_OK(fold__kv_optim_apply(a, 12, NULL, NULL, 0, FOLD_FLOAT32), NULL);
  CHECK_RC(fold__kv_optim_apply(NULL, 13, gf, wf, 2, FOLD_FLOAT32), FOLD_EINVAL, NULL);
  /* many keys: the table grows and every key keeps its own state */
  for (int64_t k = 0; k < 5000; k++) {
    double x = 1, gg = (double)k;
    CHECK_OK(fold__kv_optim_apply(o, 1000 + k * 7919, &gg, &x, 1, FOLD_FLOAT64), NULL);
  }
  int bad = 0;
  for (int64_t k = 0; k < 5000; k++) {
    double x = 0, gg = 0;
    CHECK_OK(fold__kv_optim_apply(o, 1000 + k * 7919, &gg, &x, 1, FOLD_FLOAT64), NULL);
    /* step 2 with a zero gradient moves by momentum * mom1 = 0.5 * (-0.5 k) */
    if (x != -0.25 * (double)k) bad++;
  }
  CHECK(bad == 0, "%d of 5000 keys lost their momentum", bad);
  fold__kv_optim_free(o);
  fold__kv_optim_free(a);
  fold__kv_optim_free(NULL);
}

static void parse_errors(void) {
  static const struct {
    const char *spec, *want;
  } cases[] = {
    {"", "empty spec"},
    {"   ", "empty spec"},
    {"rmsprop lr=0.1", "\"rmsprop\""},
    {"SGD", "\"SGD\""},
    {"sgd lr", "\"lr\" is not name=value"},
    {"sgd lr=", "\"lr=\": not a number"},
    {"sgd lr=abc", "\"lr=abc\": not a finite number"},
    {"sgd lr=0.1x", "\"lr=0.1x\""},
    {"sgd lr=inf", "\"lr=inf\""},
    {"sgd lr=nan", "\"lr=nan\""},
    {"sgd lr=1e999", "\"lr=1e999\""},
    {"sgd lr=-0.1", "\"lr=-0.1\": lr must be in [0, inf)"},
    {"sgd momentum=1", "\"momentum=1\": momentum must be in [0, 1)"},
    {"sgd momentum=-0.5", "\"momentum=-0.5\""},
    {"sgd wd=-1", "\"wd=-1\""},
    {"sgd clip=-1", "\"clip=-1\""},
    {"sgd beta1=0.9", "unknown setting \"beta1\""},
    {"sgd lr=0.1 lr=0.2", "lr given twice"},
    {"sgd lr=0.1 learning_rate=0.2", "lr given twice"},
    {"adam epsilon=0", "\"epsilon=0\""},
    {"adam beta2=1.0", "\"beta2=1.0\""},
    {"adam momentum=0.9", "unknown setting \"momentum\""},
    {"adam lr=0.001 =3", "\"=3\": unknown setting \"\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char why[200] = "untouched";
    fold__kv_optim *o = (fold__kv_optim *)&why; /* must be reset to NULL */
    int rc = fold__kv_optim_parse(cases[i].spec, &o, why, sizeof why);
    CHECK(rc == FOLD_EINVAL && o == NULL, "\"%s\": rc %d", cases[i].spec, rc);
    CHECK(strstr(why, cases[i].want) != NULL, "\"%s\": why \"%s\" lacks \"%s\"", cases[i].spec, why, cases[i].want);
  }
  fold__kv_optim *o;
  char why[200];
  CHECK_RC(fold__kv_optim_parse(NULL, &o, why, sizeof why), FOLD_EINVAL, NULL);
  CHECK(strstr(why, "NULL spec"), "why %s", why);
  CHECK_RC(fold__kv_optim_parse("sgd", NULL, why, sizeof why), FOLD_EINVAL, NULL);
  /* a short why buffer is truncated, never overrun */
  char tiny[8] = "xxxxxxx";
  CHECK_RC(fold__kv_optim_parse("bogus", &o, tiny, 5), FOLD_EINVAL, NULL);
  CHECK(tiny[4] == '\0' && tiny[5] == 'x', "why overrun: %s", tiny);
}

/* --torch FILE: lines "spec <optimizer spec>", "n N", "steps S", "w0 ...",
 * then S lines "g ..." and "w ..." (torch's weights after each step), all
 * float32; written by optim_torch.py. */
static int torch_compare(const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    perror(path);
    return 1;
  }
  char line[1 << 16];
  int cases = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "spec ", 5) != 0) continue;
    char spec[256];
    size_t sl = strcspn(line + 5, "\n");
    if (sl >= sizeof spec) sl = sizeof spec - 1;
    memcpy(spec, line + 5, sl);
    spec[sl] = '\0';
    int n = 0, steps = 0;
    if (fscanf(f, " n %d steps %d w0", &n, &steps) != 2 || n <= 0 || n > 4096) {
      fprintf(stderr, "bad file %s\n", path);
      return 1;
    }
    float *w = malloc((size_t)n * sizeof *w), *g = malloc((size_t)n * sizeof *g), *want = malloc((size_t)n * sizeof *want);
    for (int i = 0; i < n; i++) CHECK(fscanf(f, "%f", &w[i]) == 1, "reading w0");
    fold__kv_optim *o;
    char why[256];
    CHECK_RC(fold__kv_optim_parse(spec, &o, why, sizeof why), FOLD_OK, NULL);
    double worst = 0;
    for (int s = 0; s < steps && o; s++) {
      CHECK(fscanf(f, " g") == 0, "g");
      for (int i = 0; i < n; i++) CHECK(fscanf(f, "%f", &g[i]) == 1, "reading g");
      CHECK(fscanf(f, " w") == 0, "w");
      for (int i = 0; i < n; i++) CHECK(fscanf(f, "%f", &want[i]) == 1, "reading w");
      CHECK_OK(fold__kv_optim_apply(o, 42, g, w, (size_t)n, FOLD_FLOAT32), NULL);
      for (int i = 0; i < n; i++) {
        double e = fabs((double)w[i] - want[i]) / fmax(1, fabs((double)want[i]));
        if (e > worst) worst = e;
      }
    }
    printf("torch: %-55s worst relative difference %.3g over %d steps\n", spec, worst, steps);
    CHECK(worst < 1e-5, "%s: fold and torch differ by %.3g", spec, worst);
    fold__kv_optim_free(o);
    free(w);
    free(g);
    free(want);
    cases++;
  }
  fclose(f);
  CHECK(cases >= 3, "only %d cases in %s", cases, path);
  return check_report("kvparts_optim_torch");
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--torch") == 0) return torch_compare(argv[2]);
  rules();
  parse_errors();
  return check_report("kvparts_optim");
}
