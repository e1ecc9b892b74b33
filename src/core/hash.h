/* hash.h - the one mixer behind the address and key hash tables (the
 * planner's maps, the simulated device's handle sets, the preload's
 * ledger and its cache of kernel parameters, the period learner's table
 * of keys): keys are addresses or serials, aligned or consecutive, so the
 * high bits are folded down before a table takes the low ones.  It is
 * the first half of MurmurHash3's 64-bit finaliser (a shift, a multiply
 * by its published constant, a shift). */
#ifndef LMS_CORE_HASH_H
#define LMS_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t lms__mix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return k;
}

/* The slot of key k in a table of `cap` slots, a power of two. */
static inline size_t lms__hash_slot(uint64_t k, size_t cap) {
  return (size_t)lms__mix64(k) & (cap - 1);
}

#endif
