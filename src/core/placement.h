/* placement.h - caffe-ibm's offload rule, the one placement rule of every
 * front end: handle mode (src/alloc, src/swap), the stable-pointer
 * allocator (src/stable) and the preload (src/preload). */
#ifndef LMS_CORE_PLACEMENT_H
#define LMS_CORE_PLACEMENT_H

#include <stdint.h>

typedef struct lms__placement {
  int64_t lms_kb;     /* -lms: size threshold in KB; < 0 is off */
  double frac;        /* -lms_frac: fill level before offloading starts */
  uint64_t capacity;  /* the device budget the fraction is of */
} lms__placement_t;

/* caffe-ibm's rule: host-homed iff LMS is on, size >= lms_kb * 1024 and
 * the device demand (in_use + size) exceeds frac * capacity, the fraction
 * taken as the decimal number it was written as (placement.c). */
int lms__place_on_host(const lms__placement_t *p, uint64_t size,
                       uint64_t in_use);

#endif
