/* test_map.c - Note [One hash map] (core/map.h): random puts, finds and
 * deletes agree with a plain array at every step, through growth and
 * through runs of colliding keys deleted from their middle; every key
 * stays reachable from its home slot (no hole inside a probe run); a put
 * that cannot get memory leaves the map as it was; the mmap allocator
 * serves as well as calloc. */
#include <criterion/criterion.h>
#include "check.h"

#include "core/map.h"

LMS__MAP(tmap, uint64_t, lms__map_zalloc, lms__map_release)
LMS__MAP(mmap_map, uint32_t, lms__map_mmap, lms__map_munmap)

/* An allocator that fails from its nth call on. */
static int g_calls, g_fail_at;
static void *failing_zalloc(size_t bytes) {
  if (++g_calls >= g_fail_at) return NULL;
  return calloc(1, bytes);
}
LMS__MAP(fmap, uint64_t, failing_zalloc, lms__map_release)

#define UNIVERSE 400

typedef struct ref {
  int present[UNIVERSE];
  uint64_t val[UNIVERSE];
  size_t len;
} ref_t;

static uint64_t key_of(int i) { return (uint64_t)i * 4096 + 4096; }

static uint64_t rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Every slot's key is found by a probe from its home that meets no empty
 * slot first; the count of keys is len. */
static void check_runs(const tmap_t *m) {
  size_t n = 0;
  for (size_t i = 0; i < m->cap; i++) {
    if (m->keys[i] == 0) continue;
    n++;
    for (size_t j = lms__hash_slot(m->keys[i], m->cap); j != i;
         j = (j + 1) & (m->cap - 1))
      cr_assert(ne(u64, m->keys[j], 0), "a hole before slot %zu", i);
  }
  cr_assert(eq(sz, n, m->len));
}

static void check_all(const tmap_t *m, const ref_t *r) {
  cr_assert(eq(sz, m->len, r->len));
  for (int i = 0; i < UNIVERSE; i++) {
    uint64_t *v = tmap_find(m, key_of(i));
    if (r->present[i]) {
      cr_assert(v != NULL, "key %d lost", i);
      cr_assert(eq(u64, *v, r->val[i]));
    } else {
      cr_assert(v == NULL, "key %d found after its delete", i);
    }
  }
}

Test(map, random_operations_agree_with_an_array) {
  for (uint64_t seed = 1; seed <= 20; seed++) {
    tmap_t m = {0};
    ref_t *r = calloc(1, sizeof *r);
    uint64_t s = seed * 0x9e3779b97f4a7c15ull;
    /* Phases that grow and shrink, so that deletes meet full runs. */
    for (int op = 0; op < 6000; op++) {
      int grow = (op / 1000) % 2 == 0;
      int i = (int)(rng(&s) % UNIVERSE);
      uint64_t roll = rng(&s) % 10;
      if (roll < (grow ? 7u : 3u)) {
        uint64_t v = rng(&s);
        cr_assert(eq(int, tmap_put(&m, key_of(i), v), 0));
        if (!r->present[i]) r->len++;
        r->present[i] = 1;
        r->val[i] = v;
      } else {
        cr_assert(eq(int, tmap_del(&m, key_of(i)), r->present[i]));
        if (r->present[i]) r->len--;
        r->present[i] = 0;
      }
      if (op % 97 == 0) {
        check_all(&m, r);
        check_runs(&m);
      }
      /* At most half full. */
      cr_assert(le(sz, m.len * 2, m.cap));
    }
    check_all(&m, r);
    check_runs(&m);
    tmap_free(&m);
    free(r);
  }
}

/* Keys that share a home slot form one run; deleting from its middle,
 * its start and its end leaves the others found. */
Test(map, deletes_inside_a_run_of_colliding_keys) {
  tmap_t m = {0};
  cr_assert(eq(int, tmap_reserve(&m, 1), 0));
  size_t cap = m.cap;
  uint64_t same[8];
  int n = 0;
  size_t home = lms__hash_slot(key_of(1), cap);
  for (int i = 1; n < 8 && i < 1000000; i++)
    if (lms__hash_slot(key_of(i), cap) == home) same[n++] = key_of(i);
  cr_assert(eq(int, n, 8));
  /* A key homed just after them, displaced by the run. */
  uint64_t after = 0;
  for (int i = 1; after == 0 && i < 1000000; i++)
    if (lms__hash_slot(key_of(i), cap) == ((home + 1) & (cap - 1)))
      after = key_of(i);
  for (int i = 0; i < 8; i++) cr_assert(eq(int, tmap_put(&m, same[i], i), 0));
  cr_assert(eq(int, tmap_put(&m, after, 100), 0));
  cr_assert(eq(sz, m.cap, cap), "no growth");
  int order[] = {3, 0, 7, 1, 6, 2, 5, 4};
  for (int k = 0; k < 8; k++) {
    cr_assert(eq(int, tmap_del(&m, same[order[k]]), 1));
    cr_assert(eq(int, tmap_del(&m, same[order[k]]), 0));
    check_runs(&m);
    for (int j = k + 1; j < 8; j++) {
      uint64_t *v = tmap_find(&m, same[order[j]]);
      cr_assert(v != NULL);
      cr_assert(eq(u64, *v, (uint64_t)order[j]));
    }
    uint64_t *v = tmap_find(&m, after);
    cr_assert(v != NULL);
    cr_assert(eq(u64, *v, 100));
  }
  cr_assert(eq(sz, m.len, 1));
  tmap_free(&m);
}

Test(map, a_put_without_memory_leaves_the_map_as_it_was) {
  fmap_t m = {0};
  g_calls = 0;
  g_fail_at = 1000;
  /* 32 keys fit the first table of 64 slots (two allocations). */
  for (int i = 0; i < 32; i++) cr_assert(eq(int, fmap_put(&m, key_of(i), i), 0));
  size_t cap = m.cap;
  /* The growth's first or second allocation fails. */
  for (int fail = 0; fail < 2; fail++) {
    g_calls = 0;
    g_fail_at = 1 + fail;
    cr_assert(eq(int, fmap_put(&m, key_of(32), 32), -1));
    cr_assert(eq(sz, m.cap, cap));
    cr_assert(eq(sz, m.len, 32));
    cr_assert(fmap_find(&m, key_of(32)) == NULL);
    for (int i = 0; i < 32; i++) {
      uint64_t *v = fmap_find(&m, key_of(i));
      cr_assert(v != NULL);
      cr_assert(eq(u64, *v, (uint64_t)i));
    }
  }
  /* An existing key's value changes without any allocation. */
  cr_assert(eq(int, fmap_put(&m, key_of(5), 55), 0));
  cr_assert(eq(u64, *fmap_find(&m, key_of(5)), 55));
  /* Key 0 is the empty mark: refused, never stored. */
  g_fail_at = 1000;
  cr_assert(eq(int, fmap_put(&m, 0, 1), -1));
  cr_assert(fmap_find(&m, 0) == NULL);
  fmap_free(&m);
}

Test(map, mmap_allocator) {
  mmap_map_t m = {0};
  for (uint32_t i = 1; i <= 5000; i++)
    cr_assert(eq(int, mmap_map_put(&m, (uint64_t)i << 8, i), 0));
  for (uint32_t i = 1; i <= 5000; i += 2)
    cr_assert(eq(int, mmap_map_del(&m, (uint64_t)i << 8), 1));
  for (uint32_t i = 1; i <= 5000; i++) {
    uint32_t *v = mmap_map_find(&m, (uint64_t)i << 8);
    if (i % 2) cr_assert(v == NULL);
    else cr_assert(v != NULL && *v == i);
  }
  cr_assert(eq(sz, m.len, 2500));
  mmap_map_free(&m);
  cr_assert(eq(sz, m.cap, 0));
}
