/* rangetree.h - adding a value over a range of positions and asking for
 * the largest sum over a range, both O(log n): the lower bound's room per
 * step (Note [A lower bound no policy can beat] in replay/bound.c) and the
 * planned period's (Note [A planned period] in graph/ahead.c).
 *
 * A segment tree over positions [0, n): each node holds the largest sum
 * below it and what was added to its whole range.  The caller owns the
 * storage (lms__rt_words(n) words for each of the two arrays). */
#ifndef LMS_CORE_RANGETREE_H
#define LMS_CORE_RANGETREE_H

#include <stddef.h>
#include <stdint.h>

typedef struct lms__rt {
  int64_t *max; /* per node: the largest sum of a position below it */
  int64_t *add; /* per node: added to every position of its range */
  size_t n;
} lms__rt_t;

/* The words each array needs for n positions. */
static inline size_t lms__rt_words(size_t n) { return 4 * (n ? n : 1); }

/* Every position 0. */
void lms__rt_clear(lms__rt_t *t);
/* Position i holds v[i]: O(n). */
void lms__rt_build(lms__rt_t *t, const int64_t *v);
/* Adds d to positions [a, b); a < b <= n. */
void lms__rt_add(lms__rt_t *t, size_t a, size_t b, int64_t d);
/* The largest of positions [a, b); a < b <= n. */
int64_t lms__rt_max(const lms__rt_t *t, size_t a, size_t b);
/* The last position of [a, b) holding more than x, or SIZE_MAX when none
 * does; a < b <= n.  O(log n): the planned period's room (graph/ahead.c). */
size_t lms__rt_last_above(const lms__rt_t *t, size_t a, size_t b, int64_t x);

#endif
