/* test_hostpool.c - the pinned host pool: a jemalloc arena whose memory
 * comes from the device's pinned host_alloc.  What must hold: every
 * allocation is usable, 256-byte aligned and disjoint from every other;
 * the pool's pinned figure is exactly what the device handed out; the host
 * limit turns into LMS_ERR_HOST_OOM, never a crash, and is never passed;
 * freed memory is reused without pinning more; a device that refuses
 * host_alloc surfaces as LMS_ERR_HOST_OOM once jemalloc's own retry fails
 * too; and destroy returns every pinned byte, live allocations included. */
#include <criterion/criterion.h>
#include "check.h"
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc.h"
#include "core/link.h"
#include "core/status.h"
#include "device/device.h"
#include "support.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static lms_dev_t *dev;
static lms__hostpool_t *pool;
static char err[LMS__ERRBUF];

static void dev_up(void) {
  char e[LMS__ERRBUF] = "";
  /* Pinned host memory is not bounded by the device's capacity. */
  lms__sim_config_t cfg = {.capacity = MIB};
  cr_assert(eq(int, lms__link_parse("pcie3", &cfg.link, e), LMS_OK), "%s", e);
  cr_assert(eq(int, lms__sim_create(&cfg, &dev, e), LMS_OK), "%s", e);
  pool = NULL;
  err[0] = '\0';
}

static void dev_down(void) {
  lms__hostpool_destroy(pool);
  pool = NULL;
  dev->ops->destroy(dev);
  dev = NULL;
}

static void pool_up(void) {
  dev_up();
  cr_assert(eq(int, lms__hostpool_create(dev, 0, &pool, err), LMS_OK), "%s",
            err);
}

static lms__sim_report_t report(void) {
  lms__sim_report_t r;
  lms__sim_report(dev, &r);
  return r;
}

static void *get(size_t size) {
  void *p = NULL;
  cr_assert(eq(int, lms__hostpool_alloc(pool, size, &p), LMS_OK),
            "pinned alloc of %zu bytes", size);
  cr_assert(p != NULL);
  return p;
}

/* The pool's figure and the device's agree to the byte. */
#define assert_pinned_is_the_devices()                                        \
  cr_assert(eq(u64, lms__hostpool_pinned(pool), report().host_in_use))

/* ---- Allocations ----------------------------------------------------- */

struct size_case {
  size_t size;
};

ParameterizedTestParameters(hostpool_alloc, any_size_usable_and_aligned) {
  static struct size_case cases[] = {
      {1},          {7},           {255},        {256},       {257},
      {4095},       {4096},        {4097},       {16 * KIB},  {64 * KIB - 1},
      {64 * KIB},   {MIB - 1},     {MIB},        {MIB + 1},   {3 * MIB + 5},
      {16 * MIB},   {64 * MIB - 1}, {64 * MIB},
  };
  return cr_make_param_array(struct size_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct size_case *c, hostpool_alloc,
                  any_size_usable_and_aligned, .init = pool_up,
                  .fini = dev_down) {
  unsigned char *p = get(c->size);
  cr_assert(eq(u64, (uintptr_t)p % 256, 0), "%zu bytes at %p", c->size,
            (void *)p);
  lms_test_fill(p, c->size, c->size);
  uint64_t sum = lms_test_checksum(p, c->size);
  cr_assert(gt(u64, report().host_in_use, 0));
  cr_assert(ge(u64, lms__hostpool_pinned(pool), c->size));
  assert_pinned_is_the_devices();
  /* A second allocation does not disturb the first. */
  unsigned char *q = get(c->size);
  cr_assert(q + c->size <= p || p + c->size <= q, "the two overlap");
  memset(q, 0x5A, c->size);
  cr_assert(eq(u64, lms_test_checksum(p, c->size), sum));
  lms__hostpool_free(pool, q);
  lms__hostpool_free(pool, p);
  assert_pinned_is_the_devices();
}

Test(hostpool_alloc, zero_size_and_null_free, .init = pool_up,
     .fini = dev_down) {
  void *p = (void *)0x1;
  cr_assert(eq(int, lms__hostpool_alloc(pool, 0, &p), LMS_ERR_INVALID));
  cr_assert(eq(ptr, p, (void *)0x1));
  lms__hostpool_free(pool, NULL);
}

typedef struct held {
  unsigned char *p;
  size_t size;
} held_t;

static int by_address(const void *a, const void *b) {
  const held_t *x = a, *y = b;
  return x->p < y->p ? -1 : x->p > y->p;
}

/* Many live allocations of mixed sizes: all disjoint, all keeping their
 * bytes while the others are written and freed around them. */
Test(hostpool_alloc, many_live_allocations_disjoint, .init = pool_up,
     .fini = dev_down) {
  enum { N = 400 };
  static held_t h[N];
  uint64_t x = 12345;
  uint64_t total = 0;
  for (int i = 0; i < N; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    /* Mostly small, some up to 1 MiB, a few of 8 MiB. */
    size_t size = i % 50 == 49 ? 8 * MIB : 1 + (size_t)(x % (1u << (x % 21)));
    h[i].size = size;
    h[i].p = get(size);
    cr_assert(eq(u64, (uintptr_t)h[i].p % 256, 0));
    lms_test_fill(h[i].p, size, (uint64_t)i);
    total += size;
  }
  cr_assert(ge(u64, lms__hostpool_pinned(pool), total));
  assert_pinned_is_the_devices();
  /* Free every third one, then allocate into the gaps. */
  for (int i = 0; i < N; i += 3) {
    lms__hostpool_free(pool, h[i].p);
    h[i].p = get(h[i].size);
    lms_test_fill(h[i].p, h[i].size, (uint64_t)i);
  }
  for (int i = 0; i < N; i++) {
    unsigned char *expect = malloc(h[i].size);
    cr_assert(expect != NULL);
    lms_test_fill(expect, h[i].size, (uint64_t)i);
    cr_assert(eq(int, memcmp(h[i].p, expect, h[i].size), 0),
              "allocation %d (%zu bytes) lost its bytes", i, h[i].size);
    free(expect);
  }
  held_t sorted[N];
  memcpy(sorted, h, sizeof sorted);
  qsort(sorted, N, sizeof sorted[0], by_address);
  for (int i = 1; i < N; i++)
    cr_assert(le(ptr, (void *)(sorted[i - 1].p + sorted[i - 1].size),
                 (void *)sorted[i].p),
              "two allocations overlap");
  for (int i = 0; i < N; i++) lms__hostpool_free(pool, h[i].p);
  assert_pinned_is_the_devices();
}

/* Memory freed is used again: the same request pins nothing more. */
Test(hostpool_alloc, freed_memory_is_reused, .init = pool_up,
     .fini = dev_down) {
  void *p = get(8 * MIB);
  uint64_t pinned = lms__hostpool_pinned(pool);
  uint64_t calls = report().calls[LMS__DEVOP_host_alloc];
  lms__hostpool_free(pool, p);
  for (int i = 0; i < 20; i++) {
    void *q = get(8 * MIB);
    memset(q, i, 8 * MIB);
    lms__hostpool_free(pool, q);
  }
  cr_assert(eq(u64, lms__hostpool_pinned(pool), pinned));
  cr_assert(eq(u64, report().calls[LMS__DEVOP_host_alloc], calls),
            "the device was asked again for memory the pool holds");
}

/* ---- The host limit ---------------------------------------------------- */

#define LIMIT (16 * MIB)

static void limited_up(void) {
  dev_up();
  cr_assert(eq(int, lms__hostpool_create(dev, LIMIT, &pool, err), LMS_OK),
            "%s", err);
  cr_assert(le(u64, lms__hostpool_pinned(pool), LIMIT));
}

Test(hostpool_limit, oom_at_the_limit_then_reuse, .init = limited_up,
     .fini = dev_down) {
  void *held[64];
  int n = 0;
  lms_status_t st;
  void *p = NULL;
  while ((st = lms__hostpool_alloc(pool, MIB, &p)) == LMS_OK) {
    cr_assert(lt(int, n, 64), "the limit never refused");
    memset(p, n, MIB);
    held[n++] = p;
    cr_assert(le(u64, lms__hostpool_pinned(pool), LIMIT));
    assert_pinned_is_the_devices();
  }
  cr_assert(eq(int, st, LMS_ERR_HOST_OOM));
  cr_assert(ge(int, n, 4), "a 16 MiB limit must hold a few 1 MiB blocks");
  cr_assert(le(u64, lms__hostpool_pinned(pool), LIMIT));
  cr_assert(le(u64, report().host_in_use, LIMIT));
  uint64_t pinned = lms__hostpool_pinned(pool);

  /* Refused again, cleanly, for any size past what is left. */
  void *q = (void *)0x1;
  cr_assert(eq(int, lms__hostpool_alloc(pool, 2 * LIMIT, &q),
               LMS_ERR_HOST_OOM));
  cr_assert(eq(ptr, q, (void *)0x1));
  cr_assert(eq(u64, lms__hostpool_pinned(pool), pinned));

  /* One freed block makes room for one more, without pinning more. */
  lms__hostpool_free(pool, held[n / 2]);
  held[n / 2] = get(MIB);
  cr_assert(eq(u64, lms__hostpool_pinned(pool), pinned));

  /* All freed: all of them fit again. */
  for (int i = 0; i < n; i++) lms__hostpool_free(pool, held[i]);
  for (int i = 0; i < n; i++) held[i] = get(MIB);
  cr_assert(eq(u64, lms__hostpool_pinned(pool), pinned));
  assert_pinned_is_the_devices();
  for (int i = 0; i < n; i++) lms__hostpool_free(pool, held[i]);
}

/* A request past the limit is refused by the pool itself: the device is
 * never asked for memory that would take the pool over. */
Test(hostpool_limit, device_not_asked_past_the_limit, .init = limited_up,
     .fini = dev_down) {
  uint64_t calls = report().calls[LMS__DEVOP_host_alloc];
  void *p = NULL;
  cr_assert(eq(int, lms__hostpool_alloc(pool, LIMIT, &p), LMS_ERR_HOST_OOM));
  cr_assert(eq(int, lms__hostpool_alloc(pool, LIMIT + 1, &p),
               LMS_ERR_HOST_OOM));
  cr_assert(eq(int, lms__hostpool_alloc(pool, SIZE_MAX / 2, &p),
               LMS_ERR_HOST_OOM));
  cr_assert(eq(u64, report().calls[LMS__DEVOP_host_alloc], calls));
  cr_assert(le(u64, lms__hostpool_pinned(pool), LIMIT));
  /* And something small still fits. */
  lms__hostpool_free(pool, get(4 * KIB));
}

/* Random churn under the limit: never past it, never a failure other than
 * LMS_ERR_HOST_OOM, and live bytes kept. */
Test(hostpool_limit, churn_stays_under_the_limit, .init = limited_up,
     .fini = dev_down) {
  enum { N = 48 };
  held_t h[N] = {{0}};
  uint64_t x = 777;
  int ooms = 0, allocs = 0;
  for (int op = 0; op < 3000; op++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    int i = (int)(x % N);
    if (h[i].p != NULL) {
      cr_assert(eq(u8, h[i].p[0], (uint8_t)i));
      cr_assert(eq(u8, h[i].p[h[i].size - 1], (uint8_t)i));
      lms__hostpool_free(pool, h[i].p);
      h[i].p = NULL;
    } else {
      size_t size = 1 + (size_t)((x >> 8) % (2 * MIB));
      void *p = NULL;
      lms_status_t st = lms__hostpool_alloc(pool, size, &p);
      if (st == LMS_ERR_HOST_OOM) {
        ooms++;
      } else {
        cr_assert(eq(int, st, LMS_OK));
        h[i].p = p;
        h[i].size = size;
        h[i].p[0] = h[i].p[size - 1] = (unsigned char)i;
        allocs++;
      }
    }
    cr_assert(le(u64, lms__hostpool_pinned(pool), LIMIT), "op %d", op);
  }
  assert_pinned_is_the_devices();
  cr_assert(gt(int, allocs, 500));
  cr_assert(gt(int, ooms, 0), "the limit was never reached");
  for (int i = 0; i < N; i++) lms__hostpool_free(pool, h[i].p);
}

/* A limit too small even for the arena's own bookkeeping is the host
 * refusing memory, not an internal error: the caller gets
 * LMS_ERR_HOST_OOM and a message naming the limit. */
Test(hostpool_limit, tiny_limit_is_host_oom, .init = dev_up,
     .fini = dev_down) {
  lms_status_t st = lms__hostpool_create(dev, 64 * KIB, &pool, err);
  if (st == LMS_OK) {
    cr_assert(le(u64, lms__hostpool_pinned(pool), 64 * KIB));
    void *p = NULL;
    st = lms__hostpool_alloc(pool, 128 * KIB, &p);
    cr_assert(eq(int, st, LMS_ERR_HOST_OOM));
  } else {
    pool = NULL;
    cr_assert(eq(int, st, LMS_ERR_HOST_OOM), "%s", err);
    cr_assert(strstr(err, "limit") != NULL, "%s", err);
  }
  cr_assert(le(u64, report().host_in_use, 64 * KIB));
}

/* ---- Device failures --------------------------------------------------- */

/* jemalloc asks twice for a new extent: a geometric step first, then
 * exactly what the request needs.  One refusal is absorbed (and counted);
 * when both are refused the caller gets LMS_ERR_HOST_OOM. */
Test(hostpool_fault, refused_host_alloc_is_host_oom, .init = pool_up,
     .fini = dev_down) {
  uint64_t pinned = lms__hostpool_pinned(pool);
  lms__sim_report_t r = report();
  lms__sim_fail_op(dev, LMS__DEVOP_host_alloc,
                   r.calls[LMS__DEVOP_host_alloc] + 1);
  lms__sim_fail_any(dev, r.total_calls + 2);
  void *p = (void *)0x1;
  cr_assert(eq(int, lms__hostpool_alloc(pool, 32 * MIB, &p),
               LMS_ERR_HOST_OOM));
  cr_assert(eq(ptr, p, (void *)0x1));
  cr_assert(ge(u64, lms__hostpool_failures(pool), 2));
  cr_assert(eq(u64, lms__hostpool_pinned(pool), pinned),
               "a refused alloc pinned memory");
  assert_pinned_is_the_devices();
  /* The device gives again: so does the pool. */
  p = get(32 * MIB);
  memset(p, 3, 32 * MIB);
  assert_pinned_is_the_devices();
}

Test(hostpool_fault, one_refusal_is_absorbed, .init = pool_up,
     .fini = dev_down) {
  lms__sim_fail_op(dev, LMS__DEVOP_host_alloc,
                   report().calls[LMS__DEVOP_host_alloc] + 1);
  void *p = get(32 * MIB);
  memset(p, 3, 32 * MIB);
  cr_assert(eq(u64, lms__hostpool_failures(pool), 1));
  assert_pinned_is_the_devices();
}

/* ---- Destroy ------------------------------------------------------------- */

Test(hostpool_destroy, live_allocations_are_returned, .init = dev_up,
     .fini = dev_down) {
  cr_assert(eq(int, lms__hostpool_create(dev, 0, &pool, err), LMS_OK));
  for (size_t s = 1; s <= 64 * MIB; s *= 4) memset(get(s), 1, s);
  void *freed = get(5 * MIB);
  lms__hostpool_free(pool, freed);
  lms__sim_report_t r = report();
  cr_assert(gt(u64, r.host_in_use, 64 * MIB));
  cr_assert(eq(u64, lms__hostpool_pinned(pool), r.host_in_use));
  lms__hostpool_destroy(pool);
  pool = NULL;
  r = report();
  cr_assert(eq(u64, r.host_in_use, 0), "destroy left pinned memory behind");
  cr_assert(eq(u64, r.calls[LMS__DEVOP_host_free],
               r.calls[LMS__DEVOP_host_alloc]),
            "every slab goes back exactly once");
}

/* Two pools on one device are separate arenas: destroying one leaves the
 * other's memory alone, and pools can come and go many times. */
Test(hostpool_destroy, pools_are_independent, .init = dev_up,
     .fini = dev_down) {
  lms__hostpool_t *other = NULL;
  cr_assert(eq(int, lms__hostpool_create(dev, 0, &pool, err), LMS_OK));
  unsigned char *keep = get(3 * MIB);
  lms_test_fill(keep, 3 * MIB, 9);
  uint64_t sum = lms_test_checksum(keep, 3 * MIB);
  uint64_t mine = lms__hostpool_pinned(pool);
  for (int round = 0; round < 20; round++) {
    cr_assert(eq(int, lms__hostpool_create(dev, 0, &other, err), LMS_OK),
              "round %d: %s", round, err);
    void *p = NULL;
    cr_assert(eq(int, lms__hostpool_alloc(other, 2 * MIB, &p), LMS_OK));
    cr_assert(keep + 3 * MIB <= (unsigned char *)p ||
                  (unsigned char *)p + 2 * MIB <= keep,
              "two pools handed out the same bytes");
    memset(p, 0xEE, 2 * MIB);
    lms__hostpool_destroy(other);
    cr_assert(eq(u64, report().host_in_use, mine), "round %d", round);
  }
  cr_assert(eq(u64, lms_test_checksum(keep, 3 * MIB), sum));
  cr_assert(eq(u64, lms__hostpool_pinned(pool), mine));
  lms__hostpool_free(pool, keep);
}
