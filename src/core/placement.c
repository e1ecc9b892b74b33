/* placement.c - caffe-ibm's offload rule.  A chunk goes to host memory when
 * it is at least the -lms threshold AND the device demand, counting this
 * request, is past -lms_frac of capacity.  Every front end asks it: the
 * handle-mode residency, the stable-pointer allocator (wants_host) and
 * the preload (lms__ledger_reserve), so one request is placed the same
 * way by all three.
 *
 * The fraction arrives as a double parsed from decimal text, and 0.57 is
 * stored a little below 0.57, so frac * capacity can land a hair under an
 * integer that the decimal product equals exactly.  A product within a
 * relative 1e-12 of an integer is taken to be that integer; otherwise the
 * comparison is with the product itself.  So "demand > frac x capacity"
 * holds at the edges as the decimal numbers say. */
#include <math.h>

#include "core/placement.h"

int lms__place_on_host(const lms__placement_t *p, uint64_t size,
                       uint64_t in_use) {
  if (p->lms_kb < 0) return 0;
  /* lms_kb <= INT64_MAX / 1024 is enforced by the option parser. */
  uint64_t threshold = (uint64_t)p->lms_kb * 1024u;
  if (size < threshold) return 0;
  double edge = p->frac * (double)p->capacity;
  double nearest = nearbyint(edge);
  if (fabs(edge - nearest) <= 1e-12 * (nearest > 1.0 ? nearest : 1.0))
    edge = nearest;
  /* Demand in long double: in_use + size may exceed 2^53. */
  long double demand = (long double)in_use + (long double)size;
  return demand > (long double)edge;
}
