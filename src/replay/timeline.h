/* timeline.h - when each piece of device work ran during a replay: the
 * compute engine's kernels and both copy engines' copies, as intervals on
 * the simulated device's clock, each tagged with the step it belongs to.
 *
 * It is what `lms report` draws as the profiler's picture of a few steps.
 * Every interval is read back from the simulated device as the work is
 * enqueued (Note [Recording the timeline] in timeline.c); none is computed
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
  uint64_t end_ns;          /* ... and when it ended */
  uint32_t step;            /* set by the replay before each step */
  int truncated;            /* spans were dropped for want of memory */
  /* Private: the device while attached, and its own table. */
  lms_dev_t *dev;
  const lms_dev_ops_t *inner;
  lms_dev_ops_t ops;
  void *probe_stream, *probe_event;
} lms__timeline_t;

void lms__tl_init(lms__timeline_t *tl);
void lms__tl_free(lms__timeline_t *tl);

/* Starts recording the work enqueued on d, a simulated device with no work
 * in flight on other threads.  LMS_ERR_UNSUPPORTED for any other device:
 * only the simulated one can say when its work ran. */
lms_status_t lms__tl_attach(lms__timeline_t *tl, lms_dev_t *d, char *err);
/* Stops recording and gives d back its own table; the spans stay. */
void lms__tl_detach(lms__timeline_t *tl);

#endif
