/* victim.c - which resident block leaves the device first (victim.h).
 *
 * Note [One victim rule]
 * Every front end keeps blocks on the device that a later use may want,
 * and when room runs out one of them must go.  The cost of sending a
 * block back is a copy out (if it is dirty) and, if it is wanted again,
 * a copy in; the rule takes the cheapest first:
 *   0. the dead: their bytes will not be read again, so they go for
 *      nothing (the stable allocator's blocks freed by the program);
 *   1. those whose predicted use has passed: the prediction was wrong or
 *      the block is done with, so nothing known wants it; the use that
 *      passed longest ago first;
 *   2. those wanted after the use the room is for, the furthest first:
 *      Belady's rule, with the learned or declared schedule as the
 *      oracle.  Bringing in what is wanted later at the cost of what is
 *      wanted sooner would only add traffic, so nothing wanted sooner is
 *      a victim (unless the room is wanted now: a demand fetch);
 *   3. as 2, but blocks brought in ahead and not used yet, taken last:
 *      the copy that brought them would have been for nothing.
 * Ties keep the candidate seen first, and each front end walks its
 * candidates least recently used first, so ties go to the least recently
 * used.  A front end that must not send back what is still wanted (the
 * preload's learned prefetch, whose prediction is each block's latest
 * use, not its next; the stable allocator's hints, which have no use to
 * compare with) asks for tiers 0 and 1 only.
 *
 * Handle mode finds the same victims through an index by next use
 * (Note [Victims by next use] in swap/residency.c) instead of a walk, and
 * a test holds the index to the walk that asks this rule.  The LRU policy
 * (-policy lru) is not this rule: it takes the least recently used. */
#include "core/victim.h"

#include <stddef.h>

int lms__victim_tier(const lms__victim_ask_t *q, const lms__victim_t *c) {
  if (c->dead) return 0;
  if (c->next_use < q->now) return 1;
  if (q->passed_only) return -1;
  if (q->need != LMS__VICTIM_NEVER && c->next_use <= q->need) return -1;
  return c->spared ? 3 : 2;
}

int lms__victim_better(const lms__victim_ask_t *q, const lms__victim_t *c,
                       const lms__victim_t *best) {
  int tc = lms__victim_tier(q, c);
  if (tc < 0) return 0;
  if (best == NULL) return 1;
  int tb = lms__victim_tier(q, best);
  if (tc != tb) return tc < tb;
  switch (tc) {
  case 0:
    return 0;
  case 1:
    return c->next_use < best->next_use;
  default:
    return c->next_use > best->next_use;
  }
}
