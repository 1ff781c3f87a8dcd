/* check.c — the failure counter of check.h. */
#include "check.h"

#include <malloc.h>
atomic_int check_failures = 0;

void check_keep_heap(void) {
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
}
