/* map.h - the runtime's one hash map, from 64-bit keys to values of any
 * type, instantiated per value type by LMS__MAP.
 *
 * Note [One hash map]
 * The planner (keys and serials to indexes and chunks), the simulated
 * device (its live stream and event handles), the preload's ledger
 * (device addresses to sizes and placements) and the stable-pointer
 * allocator (addresses to blocks) each look a 64-bit key up on nearly
 * every call.  One implementation serves them all: open addressing with
 * linear probing over a power-of-two table at most half full, keys mixed
 * by lms__hash_slot (core/hash.h), and deletion by backward shift, so no
 * tombstones pile up under a churn of allocations and frees and a lookup
 * stops at the first empty slot.  Expected O(1) per operation; a growth
 * rehashes in O(n), amortised O(1) per insertion.  Key 0 is the empty
 * slot's mark and is never stored (addresses, serials and handles are
 * never 0).  Memory comes from the instance's allocator: calloc and free,
 * or, in the preload, mmap (lms__map_mmap), since a hook may run where
 * malloc must not be called.  An insertion that cannot get memory leaves
 * the map as it was and says so; `reserve` makes room ahead, so that the
 * puts after it cannot fail.  Two tables are not this map, on purpose:
 * the trace reader's chunk IDs (graph/trace.c) come from a file anyone
 * may write, so they are hashed with a key drawn per reader (Note [Chunk
 * IDs]); the preload's cache of kernel parameters (preload/hooks.c) is a
 * fixed array that forgets, not a map.
 *
 *   LMS__MAP(u64map, uint64_t, lms__map_zalloc, lms__map_release)
 *   u64map_t m = {0};
 *   u64map_put(&m, key, value);   0, or -1 without memory
 *   uint64_t *v = u64map_find(&m, key);   NULL if absent
 *   u64map_del(&m, key);          1 if it was there
 *   for (size_t i = 0; i < m.cap; i++) if (m.keys[i] != 0) ... m.vals[i]
 *   u64map_free(&m); */
#ifndef LMS_CORE_MAP_H
#define LMS_CORE_MAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/hash.h"

/* The smallest table, in slots. */
#define LMS__MAP_MIN 64u

static inline void *lms__map_zalloc(size_t bytes) { return calloc(1, bytes); }
static inline void lms__map_release(void *p, size_t bytes) {
  (void)bytes;
  free(p);
}
/* Anonymous pages: zeroed, and no call into malloc. */
static inline void *lms__map_mmap(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}
static inline void lms__map_munmap(void *p, size_t bytes) {
  if (p != NULL) munmap(p, bytes);
}

#define LMS__MAP(name, V, zalloc, release)                                    \
  typedef struct name {                                                       \
    uint64_t *keys; /* 0: empty */                                            \
    V *vals;                                                                  \
    size_t cap, len; /* cap: 0 or a power of two */                           \
  } name##_t;                                                                 \
                                                                              \
  __attribute__((unused)) static V *name##_find(const name##_t *m,           \
                                                uint64_t k) {                 \
    if (m->cap == 0 || k == 0) return NULL;                                   \
    for (size_t i = lms__hash_slot(k, m->cap);; i = (i + 1) & (m->cap - 1)) { \
      if (m->keys[i] == k) return &m->vals[i];                                \
      if (m->keys[i] == 0) return NULL;                                       \
    }                                                                         \
  }                                                                           \
                                                                              \
  /* Room for `more` new keys: the puts of that many cannot fail.  0, or     \
   * -1 without memory, the map unchanged. */                                 \
  __attribute__((unused)) static int name##_reserve(name##_t *m,             \
                                                    size_t more) {            \
    if ((m->len + more) * 2 <= m->cap) return 0;                              \
    size_t cap = m->cap ? m->cap : LMS__MAP_MIN;                              \
    while ((m->len + more) * 2 > cap) cap *= 2;                               \
    uint64_t *k = zalloc(cap * sizeof *k);                                    \
    V *v = k != NULL ? zalloc(cap * sizeof *v) : NULL;                        \
    if (v == NULL) {                                                          \
      if (k != NULL) release(k, cap * sizeof *k);                             \
      return -1;                                                              \
    }                                                                         \
    for (size_t i = 0; i < m->cap; i++) {                                     \
      if (m->keys[i] == 0) continue;                                          \
      size_t j = lms__hash_slot(m->keys[i], cap);                             \
      while (k[j] != 0) j = (j + 1) & (cap - 1);                              \
      k[j] = m->keys[i];                                                      \
      v[j] = m->vals[i];                                                      \
    }                                                                         \
    if (m->cap != 0) {                                                        \
      release(m->keys, m->cap * sizeof *m->keys);                             \
      release(m->vals, m->cap * sizeof *m->vals);                             \
    }                                                                         \
    m->keys = k;                                                              \
    m->vals = v;                                                              \
    m->cap = cap;                                                             \
    return 0;                                                                 \
  }                                                                           \
                                                                              \
  /* Sets k's value (k != 0): 0, or -1 without memory, the map unchanged. */ \
  __attribute__((unused)) static int name##_put(name##_t *m, uint64_t k,     \
                                                V v) {                        \
    V *p = name##_find(m, k);                                                 \
    if (p != NULL) {                                                          \
      *p = v;                                                                 \
      return 0;                                                               \
    }                                                                         \
    if (k == 0 || name##_reserve(m, 1) != 0) return -1;                       \
    size_t i = lms__hash_slot(k, m->cap);                                     \
    while (m->keys[i] != 0) i = (i + 1) & (m->cap - 1);                       \
    m->keys[i] = k;                                                           \
    m->vals[i] = v;                                                           \
    m->len++;                                                                 \
    return 0;                                                                 \
  }                                                                           \
                                                                              \
  /* Removes k: 1 if it was there.  The entries after the hole that may      \
   * stand in it (their home slot is not between the hole and them) move    \
   * back, so every key stays reachable from its home without tombstones. */ \
  __attribute__((unused)) static int name##_del(name##_t *m, uint64_t k) {   \
    V *p = name##_find(m, k);                                                 \
    if (p == NULL) return 0;                                                  \
    size_t mask = m->cap - 1, i = (size_t)(p - m->vals);                      \
    for (size_t j = (i + 1) & mask; m->keys[j] != 0; j = (j + 1) & mask) {    \
      size_t h = lms__hash_slot(m->keys[j], m->cap);                          \
      if (((j - h) & mask) >= ((j - i) & mask)) {                             \
        m->keys[i] = m->keys[j];                                              \
        m->vals[i] = m->vals[j];                                              \
        i = j;                                                                \
      }                                                                       \
    }                                                                         \
    m->keys[i] = 0;                                                           \
    memset(&m->vals[i], 0, sizeof m->vals[i]);                                \
    m->len--;                                                                 \
    return 1;                                                                 \
  }                                                                           \
                                                                              \
  __attribute__((unused)) static void name##_clear(name##_t *m) {            \
    if (m->cap != 0) {                                                        \
      memset(m->keys, 0, m->cap * sizeof *m->keys);                           \
      memset(m->vals, 0, m->cap * sizeof *m->vals);                           \
    }                                                                         \
    m->len = 0;                                                               \
  }                                                                           \
                                                                              \
  __attribute__((unused)) static void name##_free(name##_t *m) {             \
    if (m->cap != 0) {                                                        \
      release(m->keys, m->cap * sizeof *m->keys);                             \
      release(m->vals, m->cap * sizeof *m->vals);                             \
    }                                                                         \
    memset(m, 0, sizeof *m);                                                  \
  }

#endif
