/* version.c — fold_version: the library's version as text, from the header's macros. */
#include "core/internal.h"

#define FOLD__STR2(x) #x
#define FOLD__STR(x) FOLD__STR2(x)

const char *fold_version(void) {
  return FOLD__STR(FOLD_VERSION_MAJOR) "." FOLD__STR(FOLD_VERSION_MINOR) "." FOLD__STR(FOLD_VERSION_PATCH);
}
