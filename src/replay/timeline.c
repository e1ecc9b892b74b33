/* timeline.c - records when each kernel and copy ran on the simulated
 * device during a replay (timeline.h). */
#include "replay/timeline.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

/* Note [Recording the timeline]
 *
 * Rationale: a report that shows where the GPU waits must draw what the
 * device did, not what a model of it would have done.  The simulated device
 * knows when each piece of work runs, but it keeps only sums (busy time per
 * engine), and the device module is not the place for a report's needs.
 *
 * Approach: while attached, the recorder stands in the device's ops pointer
 * with a copy of the device's own table in which compute, copy_h2d and
 * copy_d2h first call the device's entry and then read back, from the
 * device itself, when that work ends and how long it lasts:
 * - its end: an event recorded on the work's stream right after it captures
 *   the stream's tail, which is the end of that work; wait_cost of a probe
 *   stream that never has work (so it is ready at the host's clock) on that
 *   event is how far the end lies past the host's clock now_ns.  So end =
 *   now_ns + wait_cost, exactly, also when wait_cost is 0: work never starts
 *   before the host's clock, so an end not past it is that very time.
 * - its length: the growth of the engine's busy time (lms__sim_report)
 *   across the call.  The simulated device runs a piece of work without a
 *   break, so start = end - length.
 * Every other entry is the device's own, so the device behaves, and times,
 * exactly as without the recorder; the probe's event_record and wait_cost
 * calls change no clock (Note [Simulated time] in device/sim.c), though
 * they do show in the device's call counters.
 *
 * Limitations: it needs the simulated device (the CUDA device's times would
 * need CUDA events and are not recorded); lms__sim_report answers only to
 * the device's own table, so the recorder swaps it back for each look, and
 * nothing else may use the device from another thread while it is attached
 * (replays are single-threaded).  Spans that cannot be stored for want of
 * memory are counted in `truncated`, and the report says so. */

static lms__timeline_t *tl_of(lms_dev_t *d) {
  return (lms__timeline_t *)(void *)((char *)(uintptr_t)d->ops -
                                     offsetof(lms__timeline_t, ops));
}

/* The device's busy time of one engine, through its own table. */
static uint64_t engine_busy(lms__timeline_t *tl, lms__tl_engine_t e) {
  lms__sim_report_t r;
  tl->dev->ops = tl->inner;
  lms__sim_report(tl->dev, &r);
  tl->dev->ops = &tl->ops;
  return e == LMS__TL_COMPUTE ? r.compute_busy_ns
         : e == LMS__TL_H2D   ? r.h2d_busy_ns
                              : r.d2h_busy_ns;
}

static void note(lms__timeline_t *tl, lms__tl_engine_t e, void *stream,
                 uint64_t bytes, uint64_t busy_before) {
  lms_dev_t *d = tl->dev;
  uint64_t wait = 0;
  if (tl->inner->event_record(d, tl->probe_event, stream) != LMS_OK ||
      tl->inner->wait_cost(d, tl->probe_stream, tl->probe_event, &wait) !=
          LMS_OK) {
    tl->truncated++;
    return;
  }
  uint64_t end = tl->inner->now_ns(d) + wait;
  uint64_t len = engine_busy(tl, e) - busy_before;
  if (tl->n == tl->cap) {
    size_t cap = tl->cap ? tl->cap * 2 : 1024;
    lms__tl_span_t *v = realloc(tl->spans, cap * sizeof *v);
    if (v == NULL) {
      tl->truncated++;
      return;
    }
    tl->spans = v;
    tl->cap = cap;
  }
  tl->spans[tl->n++] = (lms__tl_span_t){.start_ns = end - len,
                                        .end_ns = end,
                                        .bytes = bytes,
                                        .step = tl->step,
                                        .engine = (uint8_t)e};
}

static lms_status_t tl_compute(lms_dev_t *d, void *stream, uint64_t ns) {
  lms__timeline_t *tl = tl_of(d);
  uint64_t busy = engine_busy(tl, LMS__TL_COMPUTE);
  lms_status_t st = tl->inner->compute(d, stream, ns);
  if (st == LMS_OK) note(tl, LMS__TL_COMPUTE, stream, 0, busy);
  return st;
}

static lms_status_t tl_copy_h2d(lms_dev_t *d, void *dst, const void *src,
                                size_t n, void *stream) {
  lms__timeline_t *tl = tl_of(d);
  uint64_t busy = engine_busy(tl, LMS__TL_H2D);
  lms_status_t st = tl->inner->copy_h2d(d, dst, src, n, stream);
  if (st == LMS_OK) note(tl, LMS__TL_H2D, stream, n, busy);
  return st;
}

static lms_status_t tl_copy_d2h(lms_dev_t *d, void *dst, const void *src,
                                size_t n, void *stream) {
  lms__timeline_t *tl = tl_of(d);
  uint64_t busy = engine_busy(tl, LMS__TL_D2H);
  lms_status_t st = tl->inner->copy_d2h(d, dst, src, n, stream);
  if (st == LMS_OK) note(tl, LMS__TL_D2H, stream, n, busy);
  return st;
}

void lms__tl_init(lms__timeline_t *tl) { memset(tl, 0, sizeof *tl); }

void lms__tl_free(lms__timeline_t *tl) {
  lms__tl_detach(tl);
  free(tl->spans);
  lms__tl_init(tl);
}

lms_status_t lms__tl_attach(lms__timeline_t *tl, lms_dev_t *d, char *err) {
  if (tl->dev != NULL) {
    lms__errf(err, "timeline: already recording a device");
    return LMS_ERR_INVALID;
  }
  if (!lms__dev_is_sim(d)) {
    lms__errf(err, "timeline: only the simulated device can say when its "
                   "work ran; this is the '%s' device", d->ops->name);
    return LMS_ERR_UNSUPPORTED;
  }
  const lms_dev_ops_t *own = d->ops;
  if (own->stream_create(d, &tl->probe_stream) != LMS_OK) {
    lms__errf(err, "timeline: probe stream: %s", d->last_error);
    return LMS_ERR_DEVICE;
  }
  if (own->event_create(d, &tl->probe_event) != LMS_OK) {
    lms__errf(err, "timeline: probe event: %s", d->last_error);
    own->stream_destroy(d, tl->probe_stream);
    tl->probe_stream = NULL;
    return LMS_ERR_DEVICE;
  }
  tl->ops = *own;
  tl->ops.compute = tl_compute;
  tl->ops.copy_h2d = tl_copy_h2d;
  tl->ops.copy_d2h = tl_copy_d2h;
  tl->inner = own;
  tl->dev = d;
  tl->origin_ns = own->now_ns(d);
  d->ops = &tl->ops;
  return LMS_OK;
}

void lms__tl_detach(lms__timeline_t *tl) {
  lms_dev_t *d = tl->dev;
  if (d == NULL) return;
  d->ops = tl->inner;
  lms__sim_report_t r;
  lms__sim_report(d, &r);
  tl->end_ns = r.now_ns;
  tl->inner->event_destroy(d, tl->probe_event);
  tl->inner->stream_destroy(d, tl->probe_stream);
  tl->probe_event = tl->probe_stream = NULL;
  tl->dev = NULL;
  tl->inner = NULL;
}
