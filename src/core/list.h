/* list.h — the one intrusive list fold's queues use: doubly linked, circular, O(1) unlink. */
#ifndef FOLD_LIST_H
#define FOLD_LIST_H

#include <stddef.h>

/* A list is a head (a fold__list of its own, fold__list_init'ed: it points
 * at itself when empty) and items that embed a fold__list node; the items
 * hang off the head in a ring, head <-> first <-> ... <-> last <-> head.
 * Nothing allocates, and an item reaches its struct with FOLD__LIST_ENTRY.
 *
 * A node is "unlinked" when it is on no list: then its next is NULL (a node
 * zeroed by calloc or memset, never linked) or itself (fold__list_unlink
 * leaves it so). Unlinking an unlinked node does nothing, so code that does
 * not know whether an item is still queued may just unlink it. A node is on
 * at most one list at a time: push it only when it is unlinked.
 *
 * Order is what the pushes made it: push_back and taking from the front is
 * a FIFO. Nothing here locks; a list belongs to one thread at a time. */
typedef struct fold__list {
  struct fold__list *next, *prev;
} fold__list;

/* The struct of type `type` whose member `member` is the node at `node`. */
#define FOLD__LIST_ENTRY(node, type, member) ((type *)(void *)((char *)(node) - offsetof(type, member)))

/* An empty list (heads), or an unlinked node. */
static inline void fold__list_init(fold__list *h) { h->next = h->prev = h; }

/* 1 if the list headed by h has no item. */
static inline int fold__list_empty(const fold__list *h) { return h->next == h; }

/* 1 if node n is on a list (see "unlinked" above). */
static inline int fold__list_linked(const fold__list *n) { return n->next != NULL && n->next != n; }

/* Link n between a and b, which are adjacent (a->next == b). */
static inline void fold__list_link_between(fold__list *n, fold__list *a, fold__list *b) {
  n->prev = a;
  n->next = b;
  a->next = n;
  b->prev = n;
}

/* Append n (unlinked) at the back of the list headed by h. O(1). */
static inline void fold__list_push_back(fold__list *h, fold__list *n) { fold__list_link_between(n, h->prev, h); }

/* Insert n (unlinked) at the front of the list headed by h. O(1). */
static inline void fold__list_push_front(fold__list *h, fold__list *n) { fold__list_link_between(n, h, h->next); }

/* Insert n (unlinked) just before item `at` (at may be the head: then n
 * goes to the back). O(1). For sorted lists. */
static inline void fold__list_insert_before(fold__list *at, fold__list *n) { fold__list_link_between(n, at->prev, at); }

/* Take n off whatever list holds it and leave it unlinked (self-linked).
 * An unlinked node is left as it is. O(1): no head is needed. */
static inline void fold__list_unlink(fold__list *n) {
  if (n->next == NULL || n->next == n) {
    n->next = n->prev = n;
    return;
  }
  n->next->prev = n->prev;
  n->prev->next = n->next;
  n->next = n->prev = n;
}

/* The first item's node, or NULL if the list is empty. */
static inline fold__list *fold__list_first(const fold__list *h) { return h->next == h ? NULL : h->next; }

/* The first item as its struct (`type *`, node in member `member`), or NULL
 * if the list is empty. `head` is evaluated more than once. */
#define FOLD__LIST_FIRST(head, type, member)                                                                          \
  (fold__list_empty(head) ? NULL : FOLD__LIST_ENTRY((head)->next, type, member))

/* The item after item `var` (a `type *` on the list headed by `head`), or
 * NULL if var is the last. */
#define FOLD__LIST_NEXT(var, head, type, member)                                                                      \
  ((var)->member.next == (head) ? NULL : FOLD__LIST_ENTRY((var)->member.next, type, member))

/* Unlink and return the first item's node, or NULL if the list is empty. */
static inline fold__list *fold__list_pop_front(fold__list *h) {
  fold__list *n = fold__list_first(h);
  if (n) fold__list_unlink(n);
  return n;
}

/* Move every item of `from` to the back of `to`, in order; `from` ends empty.
 * O(1). */
static inline void fold__list_splice_back(fold__list *to, fold__list *from) {
  if (fold__list_empty(from)) return;
  fold__list *first = from->next, *last = from->prev;
  first->prev = to->prev;
  to->prev->next = first;
  last->next = to;
  to->prev = last;
  fold__list_init(from);
}

/* Loops over the items of the list headed by `head`, front to back, with
 * `var` (declared by the loop, a `type *`) the item whose node is its member
 * `member`. The body may not unlink var, except in the _SAFE form (which
 * reads the next item before the body runs: the body may unlink or free var,
 * but not the item after it). `head` is evaluated more than once. */
#define FOLD__LIST_FOR_EACH(type, var, head, member)                                                                  \
  for (type *var = FOLD__LIST_ENTRY((head)->next, type, member); &var->member != (head);                               \
       var = FOLD__LIST_ENTRY(var->member.next, type, member))

#define FOLD__LIST_FOR_EACH_SAFE(type, var, head, member)                                                             \
  for (type *var = FOLD__LIST_ENTRY((head)->next, type, member),                                                       \
            *var##_next_ = FOLD__LIST_ENTRY(var->member.next, type, member);                                           \
       &var->member != (head); var = var##_next_, var##_next_ = FOLD__LIST_ENTRY(var->member.next, type, member))

#endif /* FOLD_LIST_H */
