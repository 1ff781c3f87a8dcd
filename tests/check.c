/* check.c — the failure counter of check.h. */
#include "check.h"
atomic_int check_failures = 0;
