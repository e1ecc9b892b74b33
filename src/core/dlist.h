/* dlist.h - the doubly linked lists the allocators keep in their own
 * structs (a chunk's place in the LRU order, a pending block's in its
 * stream's queue): the links are fields of the element, named by the
 * caller, and the list is a head and a tail pointer.  Each macro is O(1)
 * and leaves an unlinked element's links NULL.  The macros evaluate their
 * arguments more than once: n must be a plain variable, never the head or
 * tail expression itself (read it into a local first). */
#ifndef LMS_CORE_DLIST_H
#define LMS_CORE_DLIST_H

#include <stddef.h>

/* n (not linked) becomes the first of the list head .. tail. */
#define LMS__DLIST_PUSH_FRONT(head, tail, n, prev, next)                      \
  do {                                                                        \
    (n)->prev = NULL;                                                         \
    (n)->next = (head);                                                       \
    if ((head) != NULL) (head)->prev = (n);                                   \
    else (tail) = (n);                                                        \
    (head) = (n);                                                             \
  } while (0)

/* n (not linked) becomes the last: the first of the list read backwards. */
#define LMS__DLIST_PUSH_BACK(head, tail, n, prev, next)                       \
  LMS__DLIST_PUSH_FRONT(tail, head, n, next, prev)

/* n, linked in the list, leaves it. */
#define LMS__DLIST_UNLINK(head, tail, n, prev, next)                          \
  do {                                                                        \
    if ((n)->prev != NULL) (n)->prev->next = (n)->next;                       \
    else (head) = (n)->next;                                                  \
    if ((n)->next != NULL) (n)->next->prev = (n)->prev;                       \
    else (tail) = (n)->prev;                                                  \
    (n)->prev = (n)->next = NULL;                                             \
  } while (0)

#endif
