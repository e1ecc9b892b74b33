/* avl.h - an intrusive AVL tree: the ordered index under the registry
 * (address -> chunk) and the device cache's free blocks (best fit).
 *
 * Nodes live inside the caller's structs; the tree never allocates.  The
 * comparison must be a total order (break ties by address), so every node
 * is unique.  All operations are O(log n). */
#ifndef LMS_CORE_AVL_H
#define LMS_CORE_AVL_H

#include <stddef.h>

typedef struct lms__avl_node {
  struct lms__avl_node *left;
  struct lms__avl_node *right;
  int height;
} lms__avl_node_t;

typedef int (*lms__avl_cmp_fn)(const lms__avl_node_t *a,
                               const lms__avl_node_t *b);

typedef struct lms__avl {
  lms__avl_node_t *root;
  lms__avl_cmp_fn cmp;
  size_t count;
} lms__avl_t;

void lms__avl_init(lms__avl_t *t, lms__avl_cmp_fn cmp);
/* Inserts n, which must not compare equal to any node already there. */
void lms__avl_insert(lms__avl_t *t, lms__avl_node_t *n);
/* Removes n, which must be in the tree. */
void lms__avl_remove(lms__avl_t *t, lms__avl_node_t *n);
/* The smallest node >= probe, or NULL.  The probe need not be in the tree. */
lms__avl_node_t *lms__avl_ceil(const lms__avl_t *t, const lms__avl_node_t *probe);
/* The largest node <= probe, or NULL. */
lms__avl_node_t *lms__avl_floor(const lms__avl_t *t, const lms__avl_node_t *probe);
/* The smallest node > n, or NULL. */
lms__avl_node_t *lms__avl_next(const lms__avl_t *t, const lms__avl_node_t *n);
lms__avl_node_t *lms__avl_first(const lms__avl_t *t);
/* Checks balance, heights and order; returns 0 when the tree is sound.
 * For tests. */
int lms__avl_check(const lms__avl_t *t);

#define LMS__CONTAINER_OF(ptr, type, member)                                  \
  ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#endif
