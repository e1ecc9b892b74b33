/* wrap.c - a device that stands in front of another and forwards every
 * call to it: the base of the decorators (fault injection, faults.c; the
 * timeline recorder, replay/timeline.c).
 *
 * Note [Decorating a device]
 * Rationale: a decorator that patched the device's own table (the timeline
 * recorder once swapped the ops pointer of the simulated device in place)
 * depends on the device's internals and changes a device other code holds.
 * Here a decorator is a device of its own, made before anyone holds the
 * inner one, as RMM's adaptors wrap an upstream memory resource: callers
 * see only the outer device, which owns the inner one and destroys it.
 *
 * Approach: the wrapper's table has an entry for each entry of the inner
 * device's (an optional entry the inner device lacks stays NULL, so
 * callers see what it can do).  Each call that can fail and is named in
 * LMS__DEV_OPS_MAP first goes to hooks->enter, which may fail it before
 * it reaches the inner device (then it has changed nothing, as device.h
 * promises of a failure); event_create_timed counts as event_create and
 * dev_free_after as dev_free.  The three kinds of work (compute, copy_h2d,
 * copy_d2h) also go to hooks->work before they are enqueued and, when
 * they were, after.  wait_cost, event_elapsed, now_ns, set_budget and the
 * ext_* entries change nothing on the device (or only what copies are
 * checked against) and pass through.  An inner failure's message is
 * copied into the wrapper's last_error, so callers read it where they
 * always do.  Wrappers nest; lms__dev_unwrap peels them all.
 *
 * Costs: one indirect call more per device call, and the hooks'. */
#include <string.h>

#include "device/device.h"

static void wrap_destroy(lms_dev_t *d);

#define W(d) ((lms__dev_wrap_t *)(d))

int lms__dev_is_wrap(const lms_dev_t *d) {
  return d != NULL && d->ops != NULL && d->ops->destroy == wrap_destroy;
}

lms_dev_t *lms__dev_unwrap(lms_dev_t *d) {
  while (lms__dev_is_wrap(d)) d = W(d)->inner;
  return d;
}

/* The inner call's status, with its message when it failed. */
static lms_status_t passed(lms__dev_wrap_t *w, lms_status_t st) {
  if (st != LMS_OK && st != LMS_NOT_READY)
    memcpy(w->head.last_error, w->inner->last_error, LMS__ERRBUF);
  return st;
}

/* hooks->enter's verdict on the call, counted as op. */
static lms_status_t enter(lms__dev_wrap_t *w, lms__dev_op_t op) {
  return w->hooks->enter != NULL ? w->hooks->enter(w, op) : LMS_OK;
}

/* Gives the call, counted as `op`, to hooks->enter, then forwards it. */
#define FORWARD(d, op, call)                                                  \
  do {                                                                        \
    lms__dev_wrap_t *w_ = W(d);                                               \
    lms_status_t st_ = enter(w_, LMS__DEVOP_##op);                            \
    if (st_ != LMS_OK) return st_;                                            \
    lms_dev_t *in_ = w_->inner;                                               \
    return passed(w_, (call));                                                \
  } while (0)

/* As FORWARD, with hooks->work before the work and after it was
 * enqueued. */
#define WORK(d, op, stream, bytes, call)                                      \
  do {                                                                        \
    lms__dev_wrap_t *w_ = W(d);                                               \
    lms_status_t st_ = enter(w_, LMS__DEVOP_##op);                            \
    if (st_ != LMS_OK) return st_;                                            \
    lms_dev_t *in_ = w_->inner;                                               \
    if (w_->hooks->work != NULL)                                              \
      w_->hooks->work(w_, LMS__DEVOP_##op, (stream), (bytes), 0);             \
    st_ = passed(w_, (call));                                                 \
    if (st_ == LMS_OK && w_->hooks->work != NULL)                             \
      w_->hooks->work(w_, LMS__DEVOP_##op, (stream), (bytes), 1);             \
    return st_;                                                               \
  } while (0)

static lms_status_t w_mem_info(lms_dev_t *d, size_t *fb, size_t *tb) {
  FORWARD(d, mem_info, in_->ops->mem_info(in_, fb, tb));
}
static lms_status_t w_dev_alloc(lms_dev_t *d, size_t size, void **out) {
  FORWARD(d, dev_alloc, in_->ops->dev_alloc(in_, size, out));
}
static lms_status_t w_dev_free(lms_dev_t *d, void *ptr) {
  FORWARD(d, dev_free, in_->ops->dev_free(in_, ptr));
}
static lms_status_t w_host_alloc(lms_dev_t *d, size_t size, void **out) {
  FORWARD(d, host_alloc, in_->ops->host_alloc(in_, size, out));
}
static lms_status_t w_host_free(lms_dev_t *d, void *ptr) {
  FORWARD(d, host_free, in_->ops->host_free(in_, ptr));
}
static lms_status_t w_stream_create(lms_dev_t *d, void **out) {
  FORWARD(d, stream_create, in_->ops->stream_create(in_, out));
}
static lms_status_t w_stream_destroy(lms_dev_t *d, void *s) {
  FORWARD(d, stream_destroy, in_->ops->stream_destroy(in_, s));
}
static lms_status_t w_stream_sync(lms_dev_t *d, void *s) {
  FORWARD(d, stream_sync, in_->ops->stream_sync(in_, s));
}
static lms_status_t w_stream_wait(lms_dev_t *d, void *s, void *ev) {
  FORWARD(d, stream_wait, in_->ops->stream_wait(in_, s, ev));
}
static lms_status_t w_copy_h2d(lms_dev_t *d, void *dst, const void *src,
                               size_t n, void *s) {
  WORK(d, copy_h2d, s, n, in_->ops->copy_h2d(in_, dst, src, n, s));
}
static lms_status_t w_copy_d2h(lms_dev_t *d, void *dst, const void *src,
                               size_t n, void *s) {
  WORK(d, copy_d2h, s, n, in_->ops->copy_d2h(in_, dst, src, n, s));
}
static lms_status_t w_event_create(lms_dev_t *d, void **out) {
  FORWARD(d, event_create, in_->ops->event_create(in_, out));
}
static lms_status_t w_event_destroy(lms_dev_t *d, void *ev) {
  FORWARD(d, event_destroy, in_->ops->event_destroy(in_, ev));
}
static lms_status_t w_event_record(lms_dev_t *d, void *ev, void *s) {
  FORWARD(d, event_record, in_->ops->event_record(in_, ev, s));
}
static lms_status_t w_event_query(lms_dev_t *d, void *ev) {
  FORWARD(d, event_query, in_->ops->event_query(in_, ev));
}
static lms_status_t w_event_sync(lms_dev_t *d, void *ev) {
  FORWARD(d, event_sync, in_->ops->event_sync(in_, ev));
}
static lms_status_t w_compute(lms_dev_t *d, void *s, uint64_t ns) {
  WORK(d, compute, s, 0, in_->ops->compute(in_, s, ns));
}
static lms_status_t w_dev_free_after(lms_dev_t *d, void *ptr, void *ev) {
  FORWARD(d, dev_free, in_->ops->dev_free_after(in_, ptr, ev));
}
static lms_status_t w_event_create_timed(lms_dev_t *d, void **out) {
  FORWARD(d, event_create, in_->ops->event_create_timed(in_, out));
}
static lms_status_t w_event_elapsed(lms_dev_t *d, void *a, void *b,
                                    uint64_t *ns) {
  return passed(W(d), W(d)->inner->ops->event_elapsed(W(d)->inner, a, b, ns));
}
static lms_status_t w_wait_cost(lms_dev_t *d, void *s, void *ev,
                                uint64_t *ns) {
  return passed(W(d), W(d)->inner->ops->wait_cost(W(d)->inner, s, ev, ns));
}
static uint64_t w_now_ns(lms_dev_t *d) {
  return W(d)->inner->ops->now_ns(W(d)->inner);
}
static void w_set_budget(lms_dev_t *d, uint64_t bytes) {
  W(d)->inner->ops->set_budget(W(d)->inner, bytes);
}
static lms_status_t w_ext_register(lms_dev_t *d, const void *p, size_t n) {
  return passed(W(d), W(d)->inner->ops->ext_register(W(d)->inner, p, n));
}
static lms_status_t w_ext_unregister(lms_dev_t *d, const void *p) {
  return passed(W(d), W(d)->inner->ops->ext_unregister(W(d)->inner, p));
}

static lms_status_t w_va_reserve(lms_dev_t *d, size_t n, void **va) {
  FORWARD(d, va_reserve, in_->ops->va_reserve(in_, n, va));
}
static lms_status_t w_va_release(lms_dev_t *d, void *va) {
  FORWARD(d, va_release, in_->ops->va_release(in_, va));
}
static lms_status_t w_dev_map(lms_dev_t *d, void *va, void *p, size_t n) {
  FORWARD(d, dev_map, in_->ops->dev_map(in_, va, p, n));
}

static lms_status_t w_link_rates(lms_dev_t *d, double *h2d, double *d2h,
                                 double *both) {
  lms_dev_t *in_ = W(d)->inner;
  return in_->ops->link_rates(in_, h2d, d2h, both);
}

static void wrap_destroy(lms_dev_t *d) {
  lms_dev_t *inner = W(d)->inner;
  if (W(d)->hooks->fini != NULL) W(d)->hooks->fini(W(d));
  inner->ops->destroy(inner);
}

void lms__dev_wrap_init(lms__dev_wrap_t *w, lms_dev_t *inner,
                        const lms__dev_wrap_hooks_t *hooks) {
  const lms_dev_ops_t *io = inner->ops;
  w->ops = (lms_dev_ops_t){
      .version = LMS_DEV_OPS_VERSION,
      .name = io->name,
      .mem_info = w_mem_info,
      .dev_alloc = w_dev_alloc,
      .dev_free = w_dev_free,
      .host_alloc = w_host_alloc,
      .host_free = w_host_free,
      .stream_create = w_stream_create,
      .stream_destroy = w_stream_destroy,
      .stream_sync = w_stream_sync,
      .stream_wait = w_stream_wait,
      .copy_h2d = w_copy_h2d,
      .copy_d2h = w_copy_d2h,
      .event_create = w_event_create,
      .event_destroy = w_event_destroy,
      .event_record = w_event_record,
      .event_query = w_event_query,
      .event_sync = w_event_sync,
      .compute = w_compute,
      .wait_cost = io->wait_cost ? w_wait_cost : NULL,
      .now_ns = w_now_ns,
      .destroy = wrap_destroy,
      .dev_free_after = io->dev_free_after ? w_dev_free_after : NULL,
      .set_budget = io->set_budget ? w_set_budget : NULL,
      .ext_register = io->ext_register ? w_ext_register : NULL,
      .ext_unregister = io->ext_unregister ? w_ext_unregister : NULL,
      .event_create_timed =
          io->event_create_timed ? w_event_create_timed : NULL,
      .event_elapsed = io->event_elapsed ? w_event_elapsed : NULL,
      .va_reserve = io->va_reserve ? w_va_reserve : NULL,
      .va_release = io->va_release ? w_va_release : NULL,
      .dev_map = io->dev_map ? w_dev_map : NULL,
      .link_rates = io->link_rates ? w_link_rates : NULL,
  };
  w->head.ops = &w->ops;
  w->head.last_error[0] = '\0';
  w->inner = inner;
  w->hooks = hooks;
}
