/* queue.h — the one intrusive FIFO fold's queues use: items linked through their own `next`, a head and a tail. */
#ifndef FOLD_QUEUE_H
#define FOLD_QUEUE_H

/* The macros take the queue's two pointer lvalues (head, tail) and items of
 * any struct type with a `next` member, like BSD's <sys/queue.h> STAILQ but
 * on the existing fields: a queue is two pointers, empty when head is NULL.
 * Order is insertion order; nothing allocates. Arguments may be evaluated
 * more than once: pass plain lvalues. */

/* Append item. */
#define FOLD__QUEUE_PUSH(head, tail, item)                                                                            \
  do {                                                                                                               \
    (item)->next = NULL;                                                                                             \
    if (tail)                                                                                                        \
      (tail)->next = (item);                                                                                         \
    else                                                                                                             \
      (head) = (item);                                                                                               \
    (tail) = (item);                                                                                                 \
  } while (0)

/* Unlink item, whose predecessor in the queue is prev (NULL: item is the
 * head), and clear its link. The usual loop finds both:
 *   for (T *prev = NULL, *q = head; q; prev = q, q = q->next)
 *     if (wanted(q)) { FOLD__QUEUE_UNLINK(head, tail, prev, q); ...; break; } */
#define FOLD__QUEUE_UNLINK(head, tail, prev, item)                                                                    \
  do {                                                                                                               \
    if (prev)                                                                                                        \
      (prev)->next = (item)->next;                                                                                   \
    else                                                                                                             \
      (head) = (item)->next;                                                                                         \
    if ((tail) == (item))                                                                                            \
      (tail) = (prev);                                                                                               \
    (item)->next = NULL;                                                                                             \
  } while (0)

/* Unlink item, which is the head (a consumer retiring the oldest item). */
#define FOLD__QUEUE_POP_HEAD(head, tail, item)                                                                        \
  do {                                                                                                               \
    (head) = (item)->next;                                                                                           \
    if ((head) == NULL)                                                                                              \
      (tail) = NULL;                                                                                                 \
    (item)->next = NULL;                                                                                             \
  } while (0)

/* Empty the queue, leaving its items chained from out (for a loop that
 * frees or hands them on). */
#define FOLD__QUEUE_TAKE(head, tail, out)                                                                             \
  do {                                                                                                               \
    (out) = (head);                                                                                                  \
    (head) = (tail) = NULL;                                                                                          \
  } while (0)

#endif /* FOLD_QUEUE_H */
