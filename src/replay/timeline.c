/* timeline.c - records when each kernel and copy ran during a replay
 * (timeline.h): a device decorator (Note [Decorating a device] in
 * device/wrap.c) around the device the replay runs on. */
#include "replay/timeline.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

/* Note [Recording the timeline]
 *
 * Rationale: a report that shows where the GPU waits must draw what the
 * device did, not what a model of it would have done.  The device knows
 * when each piece of work runs; what it offers to tell it, on the
 * simulated device as on CUDA, is timed events.
 *
 * Approach: the recorder is a device in front of the replay's device, made
 * before the context that uses it, so it patches nothing and reads no
 * device's internals.  While recording, each compute, copy_h2d and
 * copy_d2h is bracketed on its stream by two timed events (event_create_
 * timed), recorded straight on the inner device so that they count as
 * nobody's calls.  The first stands for when the stream reaches the work,
 * the second for when the work ends.  An engine runs its work one piece
 * at a time in enqueue order, so the work starts when its stream reaches
 * it or when the engine's previous piece ends, whichever is later; a span
 * is [that, end].  When recording stops, after the caller has waited for
 * the work, every pair is read against an origin event recorded when it
 * began on a stream of the recorder's own (idle, so it marks the moment
 * recording began): start and end are origin_ns plus event_elapsed.
 * What is not done yet then (write-backs still draining, which the
 * replay does not wait for before it reads its clock) is read when the
 * recorder is destroyed, after the context has waited for everything.
 *
 * On the simulated device this gives the engine's exact intervals (Note
 * [Timed events on the simulated device]): each engine there is driven by
 * one stream in a replay (the compute stream, the swap's two copy
 * streams), and a timed event is when its stream gets to it.  Events come
 * from a pool and go back to it when read; events or memory that cannot
 * be had drop the span and count it in `truncated`, which the report
 * prints.
 *
 * Limitations: one thread enqueues while recording (replays do); the two
 * event records a piece of work show in the device's own call counters
 * of the inner device, though not in the wrapper's. */

typedef struct tl_pending {
  void *before, *after;
  uint64_t bytes;
  uint32_t step;
  uint8_t engine;
} tl_pending_t;

typedef struct lms__tl_dev {
  lms__dev_wrap_t w; /* first: the device the replay holds */
  lms__timeline_t *tl;
  int recording;
  void *origin_stream, *origin;
  void *before;      /* of the work being enqueued, or NULL */
  tl_pending_t *pend;
  size_t npend, cap;
  lms__evpool_t pool; /* timed events of the inner device */
  uint64_t engine_end[LMS__TL_ENGINES]; /* of the last span read */
} tl_dev_t;

static lms__tl_engine_t engine_of(lms__dev_op_t op) {
  return op == LMS__DEVOP_copy_h2d   ? LMS__TL_H2D
         : op == LMS__DEVOP_copy_d2h ? LMS__TL_D2H
                                     : LMS__TL_COMPUTE;
}

/* An event of the pool recorded on stream, or NULL (counted). */
static void *mark(tl_dev_t *r, void *stream) {
  lms_dev_t *in = r->w.inner;
  void *ev = NULL;
  if (lms__evpool_get(&r->pool, &ev) != LMS_OK) {
    r->tl->truncated++;
    return NULL;
  }
  if (in->ops->event_record(in, ev, stream) != LMS_OK) {
    lms__evpool_put(&r->pool, ev);
    r->tl->truncated++;
    return NULL;
  }
  return ev;
}

static void on_work(lms__dev_wrap_t *w, lms__dev_op_t op, void *stream,
                    size_t bytes, int after) {
  tl_dev_t *r = (tl_dev_t *)w;
  if (!r->recording) return;
  if (!after) {
    /* A before left from work whose enqueue failed goes back. */
    lms__evpool_put(&r->pool, r->before);
    r->before = mark(r, stream);
    return;
  }
  void *before = r->before;
  r->before = NULL;
  if (before == NULL) return;
  void *end = mark(r, stream);
  if (end != NULL && r->npend == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 1024;
    tl_pending_t *v = realloc(r->pend, cap * sizeof *v);
    if (v == NULL) {
      lms__evpool_put(&r->pool, end);
      end = NULL;
      r->tl->truncated++;
    } else {
      r->pend = v;
      r->cap = cap;
    }
  }
  if (end == NULL) {
    lms__evpool_put(&r->pool, before);
    return;
  }
  r->pend[r->npend++] = (tl_pending_t){.before = before,
                                       .after = end,
                                       .bytes = bytes,
                                       .step = r->tl->step,
                                       .engine = (uint8_t)engine_of(op)};
}

/* Reads the pending pairs into spans, in the order the work was
 * enqueued, and gives their events back: up to the first whose work is
 * not done yet, or with all, every one (the work not done is counted in
 * `truncated`). */
static void read_pending(tl_dev_t *r, int all) {
  lms__timeline_t *tl = r->tl;
  lms_dev_t *in = r->w.inner;
  uint64_t *engine_end = r->engine_end;
  size_t i = 0;
  for (; i < r->npend; i++) {
    tl_pending_t *p = &r->pend[i];
    uint64_t a = 0, b = 0;
    lms_status_t sa = in->ops->event_elapsed(in, r->origin, p->before, &a);
    lms_status_t sb = sa == LMS_OK
                          ? in->ops->event_elapsed(in, r->origin, p->after, &b)
                          : sa;
    if (sb == LMS_NOT_READY && !all) break;
    if (tl == NULL) {
      /* The timeline is gone: nothing to write to. */
    } else if (sb != LMS_OK) {
      tl->truncated++;
    } else {
      uint64_t start = tl->origin_ns + a, end = tl->origin_ns + b;
      if (start < engine_end[p->engine]) start = engine_end[p->engine];
      if (start > end) start = end;
      engine_end[p->engine] = end;
      if (end > tl->end_ns) tl->end_ns = end;
      if (tl->n == tl->cap) {
        size_t cap = tl->cap ? tl->cap * 2 : 1024;
        lms__tl_span_t *v = realloc(tl->spans, cap * sizeof *v);
        if (v == NULL) {
          tl->truncated++;
          goto give_back;
        }
        tl->spans = v;
        tl->cap = cap;
      }
      tl->spans[tl->n++] = (lms__tl_span_t){.start_ns = start,
                                            .end_ns = end,
                                            .bytes = p->bytes,
                                            .step = p->step,
                                            .engine = p->engine};
    }
  give_back:
    lms__evpool_put(&r->pool, p->before);
    lms__evpool_put(&r->pool, p->after);
  }
  if (i < r->npend)
    memmove(r->pend, r->pend + i, (r->npend - i) * sizeof *r->pend);
  r->npend -= i;
}

/* At destroy the context has waited for all its work (swap fini syncs
 * the copy streams), so what stop left unread can be read now. */
static void recorder_fini(lms__dev_wrap_t *w) {
  tl_dev_t *r = (tl_dev_t *)w;
  lms_dev_t *in = w->inner;
  read_pending(r, 1);
  lms__evpool_put(&r->pool, r->before);
  lms__evpool_put(&r->pool, r->origin);
  lms__evpool_fini(&r->pool);
  in->ops->stream_destroy(in, r->origin_stream);
  free(r->pend);
  if (r->tl != NULL) r->tl->dev = NULL;
  free(r);
}

static const lms__dev_wrap_hooks_t recorder_hooks = {.work = on_work,
                                                     .fini = recorder_fini};

void lms__tl_init(lms__timeline_t *tl) { memset(tl, 0, sizeof *tl); }

void lms__tl_free(lms__timeline_t *tl) {
  if (tl->dev != NULL) {
    lms__tl_stop(tl);
    tl->dev->tl = NULL; /* what is left unread is dropped at destroy */
  }
  free(tl->spans);
  lms__tl_init(tl);
}

lms_status_t lms__tl_wrap(lms__timeline_t *tl, lms_dev_t *inner,
                          lms_dev_t **out, char *err) {
  if (tl->dev != NULL) {
    lms__errf(err, "timeline: already recording a device");
    return LMS_ERR_INVALID;
  }
  if (inner->ops->event_create_timed == NULL ||
      inner->ops->event_elapsed == NULL) {
    lms__errf(err, "timeline: the '%s' device cannot time its work (no "
                   "timed events)", inner->ops->name);
    return LMS_ERR_UNSUPPORTED;
  }
  tl_dev_t *r = calloc(1, sizeof *r);
  if (r == NULL) {
    lms__errf(err, "timeline: no host memory for the recorder");
    return LMS_ERR_HOST_OOM;
  }
  if (inner->ops->stream_create(inner, &r->origin_stream) != LMS_OK) {
    lms__errf(err, "timeline: a stream for the origin: %s",
              inner->last_error);
    free(r);
    return LMS_ERR_DEVICE;
  }
  r->pool.dev = inner;
  r->pool.timed = 1;
  r->tl = tl;
  lms__dev_wrap_init(&r->w, inner, &recorder_hooks);
  tl->dev = r;
  *out = &r->w.head;
  return LMS_OK;
}

lms_status_t lms__tl_start(lms__timeline_t *tl, char *err) {
  tl_dev_t *r = tl->dev;
  if (r == NULL) {
    lms__errf(err, "timeline: no recorder (lms__tl_wrap) to start");
    return LMS_ERR_INVALID;
  }
  lms__tl_stop(tl);
  read_pending(r, 1);
  tl->n = 0;
  tl->truncated = 0;
  memset(r->engine_end, 0, sizeof r->engine_end);
  lms__evpool_put(&r->pool, r->origin);
  r->origin = mark(r, r->origin_stream);
  if (r->origin == NULL) {
    lms__errf(err, "timeline: cannot record the origin event: %s",
              r->w.inner->last_error);
    return LMS_ERR_DEVICE;
  }
  tl->origin_ns = tl->end_ns = r->w.inner->ops->now_ns(r->w.inner);
  r->recording = 1;
  return LMS_OK;
}

void lms__tl_stop(lms__timeline_t *tl) {
  tl_dev_t *r = tl->dev;
  if (r == NULL || !r->recording) return;
  r->recording = 0;
  read_pending(r, 0);
}
