/* stats.h - updating lms_stats_t counters.  The struct, the text table and
 * the JSON all come from LMS_STATS_MAP in lms.h.  Callers hold the lock of
 * the context the stats belong to. */
#ifndef LMS_CORE_STATS_H
#define LMS_CORE_STATS_H

#include "lms/lms.h"

/* current += delta; peak follows current; total accumulates increases. */
static inline void lms__stat_add(lms_stat_t *st, int64_t delta) {
  st->current += delta;
  if (st->current > st->peak) st->peak = st->current;
  if (delta > 0) st->total += delta;
}

#endif
