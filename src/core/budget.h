/* budget.h - what fits under --gpu-limit: the one test of the limit that
 * every front end makes before it takes device memory (handle mode's
 * device cache when it adds a segment, the stable allocator for device
 * blocks and resident managed ones, the preload's ledger for each device
 * allocation).  Each front end counts what it holds; this says whether a
 * request fits beside it. */
#ifndef LMS_CORE_BUDGET_H
#define LMS_CORE_BUDGET_H

#include <stdint.h>

/* 1 when `size` more bytes fit beside `held` under `limit` less `share`
 * (bytes of the limit kept for something else: the prefetch window's
 * share); limit 0 is no limit.  Exact in 64 bits: no sum can wrap. */
static inline int lms__budget_fits(uint64_t held, uint64_t size,
                                   uint64_t limit, uint64_t share) {
  if (limit == 0) return 1;
  if (share >= limit) return 0;
  uint64_t cap = limit - share;
  return held <= cap && size <= cap - held;
}

#endif
