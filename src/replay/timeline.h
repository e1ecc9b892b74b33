/* timeline.h - when each piece of device work ran during a replay: the
 * compute engine's kernels and both copy engines' copies, as intervals on
 * the simulated device's clock, each tagged with the step it belongs to.
 *
 * It is what `lms report` draws as the profiler's picture of a few steps.
 * Every interval is read back from the device, with timed events around
 * the work (Note [Recording the timeline] in timeline.c); none is computed
 * from a model of the device.
 *
 * Invariants: spans are stored in the order the work was enqueued, so the
 * spans of one engine are in time order and never overlap; start_ns <=
 * end_ns; the spans of an engine sum to that engine's busy time over the
 * recorded stretch. */
#ifndef LMS_REPLAY_TIMELINE_H
#define LMS_REPLAY_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "device/device.h"

typedef enum lms__tl_engine {
  LMS__TL_COMPUTE = 0,
  LMS__TL_H2D,
  LMS__TL_D2H,
  LMS__TL_ENGINES
} lms__tl_engine_t;

typedef struct lms__tl_span {
  uint64_t start_ns, end_ns; /* device clock */
  uint64_t bytes;            /* copies; 0 for compute */
  uint32_t step;             /* the replay's step when it was enqueued */
  uint8_t engine;            /* lms__tl_engine_t */
} lms__tl_span_t;

typedef struct lms__timeline {
  lms__tl_span_t *spans;
  size_t n, cap;
  uint64_t origin_ns;       /* the device clock when recording began */
  uint64_t end_ns;          /* ... and when the last work recorded ended */
  uint32_t step;            /* set by the replay before each step */
  int truncated;            /* spans were dropped: no memory, or no event */
  struct lms__tl_dev *dev;  /* private: the recorder, while it lives */
} lms__timeline_t;

void lms__tl_init(lms__timeline_t *tl);
/* Frees the spans; the recorder, if it still lives, stops recording. */
void lms__tl_free(lms__timeline_t *tl);

/* Wraps inner in a recorder (Note [Recording the timeline] in
 * timeline.c): a device that forwards every call to inner and, between
 * lms__tl_start and lms__tl_stop, notes when each kernel and copy enqueued
 * through it runs.  inner must time events (event_create_timed);
 * LMS_ERR_UNSUPPORTED otherwise.  On success the recorder owns inner and
 * tl must outlive it; on failure inner is untouched. */
lms_status_t lms__tl_wrap(lms__timeline_t *tl, lms_dev_t *inner,
                          lms_dev_t **out, char *err);
/* Starts recording; the spans recorded before are dropped. */
lms_status_t lms__tl_start(lms__timeline_t *tl, char *err);
/* Stops recording and reads when each piece of work ran, which must be
 * done by now (the caller waited for it); work not done is counted in
 * `truncated`.  A no-op when not recording. */
void lms__tl_stop(lms__timeline_t *tl);

#endif
