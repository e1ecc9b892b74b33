/* evpool.c - see lms__evpool_t in device.h. */
#include <stdlib.h>

#include "device/device.h"

lms_status_t lms__evpool_get(lms__evpool_t *p, void **out) {
  if (p->len > 0) {
    *out = p->ev[--p->len];
    return LMS_OK;
  }
  if (p->timed) {
    if (p->dev->ops->event_create_timed == NULL) return LMS_ERR_UNSUPPORTED;
    return p->dev->ops->event_create_timed(p->dev, out);
  }
  return p->dev->ops->event_create(p->dev, out);
}

void lms__evpool_put(lms__evpool_t *p, void *ev) {
  if (ev == NULL) return;
  if (p->len == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 16;
    void **grown = realloc(p->ev, cap * sizeof *grown);
    if (grown == NULL) {
      p->dev->ops->event_destroy(p->dev, ev);
      return;
    }
    p->ev = grown;
    p->cap = cap;
  }
  p->ev[p->len++] = ev;
}

void lms__evpool_fini(lms__evpool_t *p) {
  for (size_t i = 0; i < p->len; i++) p->dev->ops->event_destroy(p->dev, p->ev[i]);
  free(p->ev);
  p->ev = NULL;
  p->len = p->cap = 0;
}
