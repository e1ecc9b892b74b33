/* victim.h - the one rule for which resident block leaves the device
 * first, asked by every front end: handle mode (src/swap/residency.c), the
 * stable-pointer allocator (src/stable) and the preload's learned prefetch
 * (src/preload/prefetch.c).  Each walks its own candidates (least recently
 * used first, where it keeps that order) and asks, of each, whether it is
 * a better victim than the best so far; ties keep the one seen first.
 * Note [One victim rule] in victim.c. */
#ifndef LMS_CORE_VICTIM_H
#define LMS_CORE_VICTIM_H

#include <stdint.h>

#define LMS__VICTIM_NEVER UINT64_MAX

/* A candidate as the rule sees it.  Uses are on the asking engine's own
 * clock (steps, events or launches). */
typedef struct lms__victim {
  uint64_t next_use; /* when it is wanted next; LMS__VICTIM_NEVER: not
                        known to be */
  unsigned dead;     /* its bytes will not be read again */
  unsigned spared;   /* brought in ahead and not used yet: the copy that
                        brought it would be for nothing */
} lms__victim_t;

/* What the room is for. */
typedef struct lms__victim_ask {
  uint64_t now;     /* uses before this have passed: the prediction was
                       wrong, or the block is done with */
  uint64_t need;    /* the use the room is for: a victim still wanted must
                       be wanted later; LMS__VICTIM_NEVER: wanted now, any
                       will do */
  int passed_only;  /* nothing still wanted leaves: only the dead and those
                       whose use has passed */
} lms__victim_ask_t;

/* The tier of c for q: 0 dead, 1 its predicted use has passed, 2 wanted
 * after q->need, 3 the same but spared; -1 not a victim for q. */
int lms__victim_tier(const lms__victim_ask_t *q, const lms__victim_t *c);

/* 1 if c is to be taken before best (NULL: none yet, and c is a victim):
 * the lower tier; in tier 1 the use that passed longest ago; in tiers 2
 * and 3 the furthest next use (Belady's rule). */
int lms__victim_better(const lms__victim_ask_t *q, const lms__victim_t *c,
                       const lms__victim_t *best);

#endif
