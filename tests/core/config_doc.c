/* config_doc.c — docs/configuration.md's variable table, generated from src/core/params.h: check it (ctest config_doc) or --write it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/params.h"

#define BEGIN "<!-- BEGIN generated from src/core/params.h by tests/core/config_doc.c: edit the table there -->\n"
#define END "<!-- END generated -->\n"

typedef struct {
  char *p;
  size_t len, cap;
} buf;

static void put(buf *b, const char *s) {
  size_t n = strlen(s);
  if (b->len + n + 1 > b->cap) {
    b->cap = (b->len + n + 1) * 2;
    b->p = realloc(b->p, b->cap);
    if (b->p == NULL) exit(2);
  }
  memcpy(b->p + b->len, s, n + 1);
  b->len += n;
}

/* A table cell: a '|' or a newline would break the table. */
static int cell(buf *b, const char *name, const char *s) {
  if (strpbrk(s, "|\n")) {
    fprintf(stderr, "config_doc: %s: a '|' or newline in \"%s\" (params.h)\n", name, s);
    return 1;
  }
  put(b, " ");
  put(b, s);
  put(b, " |");
  return 0;
}

static int table(buf *b) {
  int bad = 0;
  put(b, BEGIN);
  put(b, "| variable | valid values | default | read at | meaning |\n|---|---|---|---|---|\n");
  for (int i = 0; i < FOLD__P_COUNT; i++) {
    const fold__param_info *p = &fold__params[i];
    char name[64], valid[200];
    snprintf(name, sizeof name, "| `%s` |", p->name);
    put(b, name);
    fold__param_valid_text(p, valid, sizeof valid);
    bad |= cell(b, p->name, valid);
    bad |= cell(b, p->name, p->dflt_doc);
    bad |= cell(b, p->name, p->when);
    bad |= cell(b, p->name, p->doc);
    put(b, "\n");
  }
  put(b, END);
  return bad;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL) return NULL;
  buf b = {0};
  char chunk[4096];
  size_t n;
  put(&b, "");
  while ((n = fread(chunk, 1, sizeof chunk - 1, f)) > 0) {
    chunk[n] = '\0';
    put(&b, chunk);
  }
  fclose(f);
  return b.p;
}

/* Check doc's table against the list, or rewrite path's; *out is the generated table (freed by the caller). */
static int run(const char *path, int write, const char *doc, buf *out) {
  buf gen = {0};
  int bad = table(&gen);
  *out = gen;
  if (bad) return 1;
  const char *a = doc ? strstr(doc, BEGIN) : NULL, *z = a ? strstr(a, END) : NULL;
  if (a == NULL || z == NULL) {
    fprintf(stderr, "config_doc: %s has no generated table (the lines\n%s...\n%s)\n", path, BEGIN, END);
    return 1;
  }
  z += strlen(END);
  int same = (size_t)(z - a) == gen.len && memcmp(a, gen.p, gen.len) == 0;
  if (!write) {
    if (same) {
      printf("config_doc: %s matches src/core/params.h\n", path);
      return 0;
    }
    fprintf(stderr,
            "config_doc: %s differs from src/core/params.h; run `build/tests/config_doc --write %s`. The table should "
            "be:\n%s",
            path, path, gen.p);
    return 1;
  }
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    perror(path);
    return 1;
  }
  fwrite(doc, 1, (size_t)(a - doc), f);
  fwrite(gen.p, 1, gen.len, f);
  fputs(z, f);
  if (fclose(f) != 0) {
    perror(path);
    return 1;
  }
  printf("config_doc: %s %s\n", path, same ? "was up to date" : "rewritten");
  return 0;
}

int main(int argc, char **argv) {
  int write = argc == 3 && strcmp(argv[1], "--write") == 0;
  if (argc != 2 && !write) {
    fprintf(stderr, "usage: config_doc [--write] docs/configuration.md\n");
    return 2;
  }
  const char *path = argv[argc - 1];
  buf gen = {0};
  char *doc = slurp(path);
  int rc = run(path, write, doc, &gen);
  free(doc);
  free(gen.p);
  return rc;
}
