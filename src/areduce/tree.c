/* tree.c — the LuNA thesis' deterministic k-ary reduction tree (fold_areduce_tree). */
#include "areduce/areduce.h"

/* The other ranks in ascending order, the target left out: position i of
 * that list is rank i, or i + 1 at and past the target. */
static int other_rank(int target, int i) { return i < target ? i : i + 1; }
static int other_pos(int target, int rank) { return rank < target ? rank : rank - 1; }

int fold__areduce_tree(int n, int target, int degree, int rank, int *parent, int *children, int *nchildren) {
  *parent = -1;
  *nchildren = 0;
  /* Levels are runs of the list: a level of m nodes starting at position s
   * is followed by the next m * degree positions; the j-th node of the
   * next level goes to node j mod m of this one (one child to each node
   * in turn, then a second, ...). The root is a level of its own (m = 1,
   * s = -1 stands for the target). */
  int64_t others = n - 1;
  int64_t s = -1, m = 1;
  int64_t me = rank == target ? -1 : other_pos(target, rank);
  for (;;) {
    int64_t next = s < 0 ? 0 : s + m; /* where the next level starts */
    if (next >= others)
      break;
    int64_t len = m * (int64_t)degree;
    if (len > others - next)
      len = others - next;
    if (me >= next && me < next + len) { /* rank is on the next level: find its parent */
      int64_t j = me - next;
      *parent = s < 0 ? target : other_rank(target, (int)(s + j % m));
    }
    if ((s < 0 && me < 0) || (s >= 0 && me >= s && me < s + m)) { /* rank is on this level */
      int64_t p = s < 0 ? 0 : me - s;
      for (int64_t j = p; j < len; j += m) {
        if (children)
          children[*nchildren] = other_rank(target, (int)(next + j));
        ++*nchildren;
      }
    }
    s = next;
    m = len;
  }
  return FOLD_OK;
}

int fold_areduce_tree(int n, int target, int degree, int rank, int *parent, int *children, int *nchildren) {
  if (parent == NULL || nchildren == NULL)
    return fold__error(NULL, FOLD_EINVAL, "fold_areduce_tree: %s is NULL", parent == NULL ? "parent" : "nchildren");
  if (n < 1)
    return fold__error(NULL, FOLD_EINVAL, "fold_areduce_tree: n is %d (at least 1)", n);
  if (target < 0 || target >= n)
    return fold__error(NULL, FOLD_EINVAL, "fold_areduce_tree: target %d is not a rank of %d", target, n);
  if (rank < 0 || rank >= n)
    return fold__error(NULL, FOLD_EINVAL, "fold_areduce_tree: rank %d is not a rank of %d", rank, n);
  if (degree < 1)
    return fold__error(NULL, FOLD_EINVAL, "fold_areduce_tree: degree is %d (at least 1)", degree);
  return fold__areduce_tree(n, target, degree, rank, parent, children, nchildren);
}
