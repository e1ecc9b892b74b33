/* period.h - the period of a repeating sequence of events (period.c), the
 * one place where a front end's loop is found.  Two rules, for two kinds
 * of record:
 * - a run (lms__period_t): the kernel launches the preload sees
 *   (src/preload/prefetch.c) and the allocations and frees the stable
 *   allocator sees (src/stable/stable.c).  An event is a key plus up to
 *   LMS__PERIOD_PTRS addresses that are part of it; once a whole period
 *   has repeated, the events to come are predicted from those a period
 *   before.
 * - starts (lms__period_starts_t): the steps handle mode's planner
 *   records (src/graph/plan.c), each kept whole by the planner.  A period
 *   is taken at the first step that repeats one of two starts, and the
 *   planner checks every later step against it.
 * What makes two events the same is the front end's: a launch's key, or
 * a step's signature and chunks (Note [Same shape, other chunk] in
 * plan.c). */
#ifndef LMS_CORE_PERIOD_H
#define LMS_CORE_PERIOD_H

#include <stdint.h>

/* Note [A period in the launch trace] is in period.c. */
#define LMS__PERIOD_LEN 16384  /* events remembered */
#define LMS__PERIOD_MAX (LMS__PERIOD_LEN / 2)
#define LMS__PERIOD_PTRS 4     /* addresses kept per event */
#define LMS__PERIOD_FNS 4096   /* keys remembered, a power of two */

typedef struct lms__launch_rec {
  uintptr_t fn;  /* the event's own key: a launch's function */
  uint64_t key;  /* fn and ptrs together (Note [A period in the launch trace]) */
  uint64_t ptrs[LMS__PERIOD_PTRS];
  unsigned nptrs;
} lms__launch_rec_t;

typedef struct lms__period {
  lms__launch_rec_t rec[LMS__PERIOD_LEN];
  uint64_t fn_key[LMS__PERIOD_FNS];  /* event keys */
  uint64_t fn_last[LMS__PERIOD_FNS]; /* event index + 1 */
  uint64_t n;       /* events seen */
  uint64_t period;  /* in force; 0 none */
  uint64_t cand, run;
  uint64_t locks, breaks;
} lms__period_t;

void lms__period_init(lms__period_t *p);
/* Records an event and its addresses (the first LMS__PERIOD_PTRS; a
 * launch's managed allocations); returns the period in force after it. */
uint64_t lms__period_note(lms__period_t *p, uintptr_t fn,
                          const uint64_t *ptrs, unsigned nptrs);
/* The event predicted `ahead` events after the last one noted (1: the
 * next); NULL when no period is in force or ahead exceeds it. */
const lms__launch_rec_t *lms__period_predict(const lms__period_t *p,
                                             uint64_t ahead);

/* Note [Where a period starts] is in period.c. */
#define LMS__PERIOD_ALT_FIRST 64u

typedef struct lms__period_starts {
  uint32_t alt;    /* a second event a period may start at; 0 none */
  uint32_t alt_at; /* ... moved on when this many events are recorded */
} lms__period_starts_t;

void lms__period_starts_init(lms__period_starts_t *s);
/* The record now holds n events (the last, n - 1, just added). */
void lms__period_starts_recorded(lms__period_starts_t *s, uint32_t n);
/* Which recorded event the one just seen repeats, the period's first:
 * 0 if same(ctx, 0), else alt if `alt_ok` and same(ctx, alt), else
 * UINT32_MAX.  n is the number of events recorded. */
uint32_t lms__period_starts_match(const lms__period_starts_t *s, uint32_t n,
                                  int alt_ok,
                                  int (*same)(const void *ctx, uint32_t i),
                                  const void *ctx);
#endif
