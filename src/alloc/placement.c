/* placement.c - caffe-ibm's offload rule.  A chunk goes to host memory when
 * it is at least the -lms threshold AND the device demand, counting this
 * request, is past -lms_frac of capacity.  Both conditions are computed in
 * exact integer or double arithmetic so the edges are where the rule says. */
#include "alloc/alloc.h"

int lms__place_on_host(const lms__placement_t *p, uint64_t size,
                       uint64_t in_use) {
  if (p->lms_kb < 0) return 0;
  /* lms_kb <= INT64_MAX / 1024 is enforced by the option parser. */
  uint64_t threshold = (uint64_t)p->lms_kb * 1024u;
  if (size < threshold) return 0;
  double demand = (double)in_use + (double)size;
  return demand > p->frac * (double)p->capacity;
}
