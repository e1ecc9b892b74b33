/* registry.c - address to chunk.  Ranges never overlap, so ordering them by
 * start and taking the last range starting at or below an address finds
 * the only range that can hold it. */
#include "alloc/alloc.h"

static int cmp_start(const lms__avl_node_t *a, const lms__avl_node_t *b) {
  const lms__reg_entry_t *x = LMS__CONTAINER_OF(a, lms__reg_entry_t, node);
  const lms__reg_entry_t *y = LMS__CONTAINER_OF(b, lms__reg_entry_t, node);
  return x->start < y->start ? -1 : x->start > y->start;
}

void lms__registry_init(lms__registry_t *r) {
  lms__avl_init(&r->ranges, cmp_start);
}

lms__reg_entry_t *lms__registry_find(const lms__registry_t *r,
                                     const void *addr) {
  lms__reg_entry_t probe = {.start = (uintptr_t)addr};
  lms__avl_node_t *n = lms__avl_floor(&r->ranges, &probe.node);
  if (n == NULL) return NULL;
  lms__reg_entry_t *e = LMS__CONTAINER_OF(n, lms__reg_entry_t, node);
  return (uintptr_t)addr - e->start < e->size ? e : NULL;
}

lms_status_t lms__registry_add(lms__registry_t *r, lms__reg_entry_t *e,
                               const void *start, size_t size, void *owner) {
  uintptr_t s = (uintptr_t)start;
  if (size == 0 || s + size < s) return LMS_ERR_INVALID;
  /* Overlap: a range starting at or below s that reaches past it, or one
   * starting inside [s, s + size). */
  if (lms__registry_find(r, start) != NULL) return LMS_ERR_INVALID;
  lms__reg_entry_t probe = {.start = s};
  lms__avl_node_t *n = lms__avl_ceil(&r->ranges, &probe.node);
  if (n != NULL &&
      LMS__CONTAINER_OF(n, lms__reg_entry_t, node)->start < s + size)
    return LMS_ERR_INVALID;
  e->start = s;
  e->size = size;
  e->owner = owner;
  lms__avl_insert(&r->ranges, &e->node);
  return LMS_OK;
}

void lms__registry_remove(lms__registry_t *r, lms__reg_entry_t *e) {
  lms__avl_remove(&r->ranges, &e->node);
  e->size = 0;
}
