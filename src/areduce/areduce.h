/* areduce.h — asynchronous tree reduction: internals shared by its files. */
#ifndef FOLD_AREDUCE_H
#define FOLD_AREDUCE_H

#include "core/internal.h"

/* fold_areduce_tree without the argument checks (they were made). */
int fold__areduce_tree(int n, int target, int degree, int rank, int *parent, int *children, int *nchildren);

#endif
