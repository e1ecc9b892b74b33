/* ctx.h - the context behind the public API: options, the device, the
 * residency state, and the lock that serialises them.  Internal; tests and
 * the CLI reach the device through it. */
#ifndef LMS_API_CTX_H
#define LMS_API_CTX_H

#include <pthread.h>

#include "core/options.h"
#include "device/device.h"
#include "graph/graph.h"
#include "swap/swap.h"

struct lms_ctx {
  pthread_mutex_t lock;
  lms__opts_t opts;
  lms_dev_t *dev;
  lms__swap_t swap;
  lms__plan_t *plan;
  int explicit_steps; /* lms_step_begin was called: acquires do not end steps */
  char err[LMS__ERRBUF]; /* last failure; shared by the context's threads */
};

/* A context on a device made by the caller (a test's wrapped or scripted
 * device) instead of the one the options name.  It takes the device, and
 * destroys it if the context cannot be made. */
lms_status_t lms__ctx_create_on(const lms_options_t *opts, lms_dev_t *dev,
                                lms_ctx_t **out);

#endif
