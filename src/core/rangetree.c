/* rangetree.c - range add, range max (rangetree.h). */
#include "core/rangetree.h"

#include <string.h>

void lms__rt_clear(lms__rt_t *t) {
  memset(t->max, 0, lms__rt_words(t->n) * sizeof *t->max);
  memset(t->add, 0, lms__rt_words(t->n) * sizeof *t->add);
}

static int64_t larger(int64_t a, int64_t b) { return a > b ? a : b; }

static void build(lms__rt_t *t, size_t node, size_t lo, size_t hi,
                  const int64_t *v) {
  t->add[node] = 0;
  if (hi - lo == 1) {
    t->max[node] = v[lo];
    return;
  }
  size_t mid = lo + (hi - lo) / 2;
  build(t, 2 * node, lo, mid, v);
  build(t, 2 * node + 1, mid, hi, v);
  t->max[node] = larger(t->max[2 * node], t->max[2 * node + 1]);
}

void lms__rt_build(lms__rt_t *t, const int64_t *v) {
  if (t->n > 0) build(t, 1, 0, t->n, v);
}

static void add(lms__rt_t *t, size_t node, size_t lo, size_t hi, size_t a,
                size_t b, int64_t d) {
  if (b <= lo || hi <= a) return;
  if (a <= lo && hi <= b) {
    t->max[node] += d;
    t->add[node] += d;
    return;
  }
  size_t mid = lo + (hi - lo) / 2;
  add(t, 2 * node, lo, mid, a, b, d);
  add(t, 2 * node + 1, mid, hi, a, b, d);
  t->max[node] = larger(t->max[2 * node], t->max[2 * node + 1]) + t->add[node];
}

void lms__rt_add(lms__rt_t *t, size_t a, size_t b, int64_t d) {
  add(t, 1, 0, t->n, a, b, d);
}

static int64_t query(const lms__rt_t *t, size_t node, size_t lo, size_t hi,
                     size_t a, size_t b) {
  if (a <= lo && hi <= b) return t->max[node];
  size_t mid = lo + (hi - lo) / 2;
  int64_t m = INT64_MIN;
  if (a < mid) m = query(t, 2 * node, lo, mid, a, b);
  if (mid < b) m = larger(m, query(t, 2 * node + 1, mid, hi, a, b));
  return m + t->add[node];
}

int64_t lms__rt_max(const lms__rt_t *t, size_t a, size_t b) {
  return query(t, 1, 0, t->n, a, b);
}

/* x is the threshold less what the node's ancestors add. */
static size_t last_above(const lms__rt_t *t, size_t node, size_t lo, size_t hi,
                         size_t a, size_t b, int64_t x) {
  if (b <= lo || hi <= a || t->max[node] <= x) return SIZE_MAX;
  if (hi - lo == 1) return lo;
  size_t mid = lo + (hi - lo) / 2;
  x -= t->add[node];
  size_t r = last_above(t, 2 * node + 1, mid, hi, a, b, x);
  return r != SIZE_MAX ? r : last_above(t, 2 * node, lo, mid, a, b, x);
}

size_t lms__rt_last_above(const lms__rt_t *t, size_t a, size_t b, int64_t x) {
  return last_above(t, 1, 0, t->n, a, b, x);
}
