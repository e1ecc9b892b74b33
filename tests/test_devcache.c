/* test_devcache.c - the device caching allocator on a simulated device of
 * 64 MiB: splitting and coalescing inside a segment, best fit, the limit,
 * returning unused segments, stream-aware reuse of freed blocks, device
 * failures, the fragmentation figure, and a randomized run that checks the
 * allocator's invariants, the limit, disjointness and the bytes of live
 * blocks after every operation.
 *
 * Addresses are what the tests observe: a block split off a segment starts
 * where the previous one ends, so "the same address" means "the same
 * block", and "another segment" means the cache asked the device again. */
#include <criterion/criterion.h>
#include "check.h"
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc.h"
#include "core/link.h"
#include "core/log.h"
#include "core/status.h"
#include "device/device.h"
#include "support.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define CAPACITY (64 * MIB)
/* Long enough that no test's polling can reach it: each NOT_READY answer
 * moves the simulated host clock by one microsecond. */
#define FOREVER_NS ((uint64_t)1000000000)

static lms_dev_t *dev;
static lms_stats_t stats;
static char err[LMS__ERRBUF];
static lms__devcache_t dc;
/* The streams a test made, destroyed with the device. */
static void *made[16];
static int nmade;

static void cache_up(void) {
  char e[LMS__ERRBUF] = "";
  /* The injected failures would each log a warning; the tests read the
   * cache's error text instead. */
  lms__log_configure(LMS_LOG_NONE, LMS_LOG_ALL_SUBSYS, NULL);
  lms__sim_config_t cfg = {.capacity = CAPACITY};
  cr_assert(eq(int, lms__link_parse("pcie3", &cfg.link, e), LMS_OK), "%s", e);
  cr_assert(eq(int, lms__sim_create(&cfg, &dev, e), LMS_OK), "%s", e);
  memset(&stats, 0, sizeof stats);
  stats.version = LMS_STATS_VERSION;
  err[0] = '\0';
  nmade = 0;
  lms__devcache_init(&dc, dev, CAPACITY, &stats, err);
}

static void cache_down(void) {
  lms__devcache_fini(&dc);
  for (int i = 0; i < nmade; i++) dev->ops->stream_destroy(dev, made[i]);
  dev->ops->destroy(dev);
  dev = NULL;
}

static lms__sim_report_t report(void) {
  lms__sim_report_t r;
  lms__sim_report(dev, &r);
  return r;
}

static void *new_stream(void) {
  void *s = NULL;
  cr_assert(lt(int, nmade, 16));
  cr_assert(eq(int, dev->ops->stream_create(dev, &s), LMS_OK));
  made[nmade++] = s;
  return s;
}

static void busy(void *stream, uint64_t ns) {
  cr_assert(eq(int, dev->ops->compute(dev, stream, ns), LMS_OK));
}

#define assert_sound()                                                        \
  cr_assert(eq(int, lms__devcache_check(&dc), 0), "invariants broken")

static char *get(size_t size, void *stream) {
  void *p = NULL;
  cr_assert(eq(int, lms__devcache_alloc(&dc, size, stream, &p), LMS_OK),
            "alloc of %zu bytes: %s", size, err);
  cr_assert(p != NULL);
  assert_sound();
  return p;
}

static void put(void *p, void *stream) {
  cr_assert(eq(int, lms__devcache_free(&dc, p, stream), LMS_OK), "%s", err);
  assert_sound();
}

static uint64_t reserved(void) {
  return (uint64_t)stats.device_reserved.current;
}

static int64_t segments(void) { return stats.segments.current; }

/* The counters the cache keeps, compared whole ({current, peak, total}). */
static int same_counters(const lms_stats_t *a, const lms_stats_t *b) {
  return memcmp(&a->device_reserved, &b->device_reserved,
                sizeof a->device_reserved) == 0 &&
         memcmp(&a->device_allocated, &b->device_allocated,
                sizeof a->device_allocated) == 0 &&
         memcmp(&a->segments, &b->segments, sizeof a->segments) == 0 &&
         memcmp(&a->device_errors, &b->device_errors,
                sizeof a->device_errors) == 0;
}

static int mentions(const char *text, const char *part) {
  return strstr(text, part) != NULL;
}

/* ---- Sizes ------------------------------------------------------------- */

struct size_case {
  size_t size;
};

/* The edges of the size classes: the 512-byte rounding, the 1 MiB line
 * between small and large requests, and the 2 MiB small segment. */
ParameterizedTestParameters(devcache_sizes, one_block_on_an_empty_cache) {
  static struct size_case cases[] = {
      {1},           {511},           {512},           {513},
      {64 * KIB},    {MIB - 1},       {MIB},           {MIB + 1},
      {MIB + 512},   {3 * MIB / 2},   {2 * MIB - 513}, {2 * MIB - 1},
      {2 * MIB},     {2 * MIB + 1},   {3 * MIB},       {8 * MIB},
      {32 * MIB + 7}, {CAPACITY},
  };
  return cr_make_param_array(struct size_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct size_case *c, devcache_sizes,
                  one_block_on_an_empty_cache, .init = cache_up,
                  .fini = cache_down) {
  char *p = get(c->size, NULL);
  size_t rounded = (c->size + 511) / 512 * 512;
  cr_assert(eq(sz, lms__devcache_block_size(&dc, p), rounded));
  cr_assert(eq(u64, (uintptr_t)p % 256, 0), "device blocks are 256-aligned");
  cr_assert(eq(i64, stats.device_allocated.current, (int64_t)rounded));
  cr_assert(ge(u64, reserved(), rounded));
  cr_assert(le(u64, reserved(), CAPACITY));
  cr_assert(eq(u64, report().dev_in_use, reserved()),
            "reserved bytes are exactly what the device handed out");
  /* The whole block is device memory the cache owns. */
  memset(p, 0xA5, rounded);
  put(p, NULL);
  cr_assert(eq(i64, stats.device_allocated.current, 0));
}

Test(devcache_sizes, zero_and_absurd_sizes_rejected, .init = cache_up,
     .fini = cache_down) {
  void *p = (void *)0x1;
  cr_assert(eq(int, lms__devcache_alloc(&dc, 0, NULL, &p), LMS_ERR_INVALID));
  cr_assert(eq(int, lms__devcache_alloc(&dc, SIZE_MAX, NULL, &p),
               LMS_ERR_INVALID));
  cr_assert(eq(int, lms__devcache_alloc(&dc, SIZE_MAX - 100, NULL, &p),
               LMS_ERR_INVALID), "rounding must not wrap around");
  cr_assert(eq(ptr, p, (void *)0x1), "a failed alloc must not touch *out");
  cr_assert(eq(u64, reserved(), 0));
  assert_sound();
}

/* The largest size accepted is still far past any limit: with a segment
 * already held, the sum of what is held and what is asked must not wrap
 * around and slip under the limit, so the device is not even asked. */
Test(devcache_sizes, largest_accepted_size_is_over_the_limit,
     .init = cache_up, .fini = cache_down) {
  char *held = get(3 * MIB, NULL);
  uint64_t calls = report().calls[LMS__DEVOP_dev_alloc];
  void *p = (void *)0x1;
  cr_assert(eq(int, lms__devcache_alloc(&dc, SIZE_MAX - 2 * MIB, NULL, &p),
               LMS_ERR_DEVICE_OOM), "%s", err);
  cr_assert(eq(ptr, p, (void *)0x1));
  cr_assert(eq(u64, report().calls[LMS__DEVOP_dev_alloc], calls),
            "the device was asked for a segment past the limit");
  cr_assert(eq(i64, stats.device_errors.current, 0),
            "the device's refusal of an absurd request is not its error");
  cr_assert(eq(u64, reserved(), 4 * MIB));
  put(held, NULL);
}

/* ---- Split and coalesce ------------------------------------------------ */

struct order_case {
  int order[4];
};

/* Every order of freeing four neighbours: each exercises a different mix
 * of merging with the block before, the block after, both or neither. */
ParameterizedTestParameters(devcache_split, coalesce_in_any_order) {
  static struct order_case cases[24];
  int n = 0;
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++)
      for (int c = 0; c < 4; c++)
        for (int d = 0; d < 4; d++)
          if (a != b && a != c && a != d && b != c && b != d && c != d) {
            cases[n].order[0] = a;
            cases[n].order[1] = b;
            cases[n].order[2] = c;
            cases[n].order[3] = d;
            n++;
          }
  return cr_make_param_array(struct order_case, cases, (size_t)n);
}

ParameterizedTest(struct order_case *c, devcache_split, coalesce_in_any_order,
                  .init = cache_up, .fini = cache_down) {
  /* Four blocks of different sizes, 1.5 MiB in all, split off one 2 MiB
   * small segment one after the other. */
  static const size_t sizes[4] = {256 * KIB, 512 * KIB, 128 * KIB,
                                  640 * KIB};
  char *blk[4];
  char *at = NULL;
  for (int i = 0; i < 4; i++) {
    blk[i] = get(sizes[i], NULL);
    if (i == 0) at = blk[0];
    cr_assert(eq(ptr, blk[i], at), "block %d is not split off the end", i);
    at += sizes[i];
  }
  cr_assert(eq(i64, segments(), 1));
  cr_assert(eq(u64, reserved(), 2 * MIB));
  for (int k = 0; k < 4; k++) {
    put(blk[c->order[k]], NULL);
    cr_assert(eq(i64, segments(), 1));
    cr_assert(eq(u64, reserved(), 2 * MIB));
  }
  cr_assert(eq(sz, dc.free_blocks.count, 1), "the segment did not coalesce");
  cr_assert(eq(dbl, lms__devcache_fragmentation(&dc), 0.0));
  /* Two 1 MiB blocks need the whole segment in one piece. */
  char *x = get(MIB, NULL), *y = get(MIB, NULL);
  cr_assert(eq(ptr, x, blk[0]));
  cr_assert(eq(ptr, y, blk[0] + MIB));
  cr_assert(eq(i64, segments(), 1));
  cr_assert(eq(u64, reserved(), 2 * MIB));
  cr_assert(eq(u64, report().dev_in_use, 2 * MIB));
}

/* A block split off and returned at once merges back with the rest, so a
 * long run of same-sized alloc/free pairs keeps using the segment's start. */
Test(devcache_split, alloc_free_pairs_reuse_the_start, .init = cache_up,
     .fini = cache_down) {
  char *first = get(4 * KIB, NULL);
  put(first, NULL);
  for (size_t i = 1; i <= 200; i++) {
    char *p = get(i * 512, NULL);
    cr_assert(eq(ptr, p, first), "round %zu", i);
    put(p, NULL);
  }
  cr_assert(eq(sz, dc.free_blocks.count, 1));
  cr_assert(eq(i64, segments(), 1));
}

/* ---- Best fit ---------------------------------------------------------- */

Test(devcache_fit, smallest_free_block_that_fits, .init = cache_up,
     .fini = cache_down) {
  /* One segment: holes of 64, 256, 128 and 128 KiB kept apart by small
   * blocks in use, then the tail of the segment. */
  char *h64 = get(64 * KIB, NULL);
  get(4 * KIB, NULL);
  char *h256 = get(256 * KIB, NULL);
  get(4 * KIB, NULL);
  char *h128a = get(128 * KIB, NULL);
  get(4 * KIB, NULL);
  char *h128b = get(128 * KIB, NULL);
  char *last = get(4 * KIB, NULL);
  char *tail = last + 4 * KIB;
  cr_assert(eq(i64, segments(), 1));
  put(h128b, NULL);
  put(h64, NULL);
  put(h256, NULL);
  put(h128a, NULL);
  cr_assert(eq(sz, dc.free_blocks.count, 5));

  /* 100 KiB: both 128 KiB holes fit; the lower address wins the tie. */
  cr_assert(eq(ptr, get(100 * KIB, NULL), h128a));
  /* 120 KiB: the remaining 28 KiB of the first hole is too small now. */
  cr_assert(eq(ptr, get(120 * KIB, NULL), h128b));
  /* Exactly 64 KiB: the exact fit, not a larger hole. */
  cr_assert(eq(ptr, get(64 * KIB, NULL), h64));
  /* 200 KiB: only the 256 KiB hole and the tail fit; the hole is smaller. */
  cr_assert(eq(ptr, get(200 * KIB, NULL), h256));
  /* 300 KiB: only the tail. */
  cr_assert(eq(ptr, get(300 * KIB, NULL), tail));
  /* The leftovers of the split holes are used before the tail. */
  cr_assert(eq(ptr, get(28 * KIB, NULL), h128a + 100 * KIB));
  cr_assert(eq(ptr, get(50 * KIB, NULL), h256 + 200 * KIB));
  cr_assert(eq(i64, segments(), 1));
}

/* ---- The limit ----------------------------------------------------------- */

Test(devcache_limit, never_past_the_limit, .init = cache_up,
     .fini = cache_down) {
  dc.limit = 8 * MIB;
  /* Each 3 MiB request gets a 4 MiB segment (2 MiB granules). */
  char *a = get(3 * MIB, NULL);
  char *b = get(3 * MIB, NULL);
  cr_assert(eq(u64, reserved(), 8 * MIB));
  void *p = (void *)0x1;
  cr_assert(eq(int, lms__devcache_alloc(&dc, 3 * MIB, NULL, &p),
               LMS_ERR_DEVICE_OOM));
  cr_assert(eq(ptr, p, (void *)0x1));
  cr_assert(mentions(err, "3145728"), "the message must give the size: %s",
            err);
  cr_assert(le(u64, reserved(), 8 * MIB));
  cr_assert(eq(u64, report().dev_in_use, reserved()));
  assert_sound();

  /* With no room for a new segment, any free block that fits will do: a
   * small request takes the 1 MiB left over in a large segment. */
  char *s = get(64 * KIB, NULL);
  int in_leftover = (s >= a + 3 * MIB && s < a + 4 * MIB) ||
                    (s >= b + 3 * MIB && s < b + 4 * MIB);
  cr_assert(in_leftover, "not from a leftover");
  cr_assert(eq(u64, reserved(), 8 * MIB));

  /* Freeing a block makes its bytes available to the next request. */
  put(a, NULL);
  char *again = get(3 * MIB, NULL);
  cr_assert(eq(ptr, again, a));
  cr_assert(le(u64, reserved(), 8 * MIB));
}

/* A request larger than the limit fails without touching the device. */
Test(devcache_limit, request_over_the_limit, .init = cache_up,
     .fini = cache_down) {
  dc.limit = 4 * MIB;
  uint64_t calls = report().calls[LMS__DEVOP_dev_alloc];
  void *p = NULL;
  cr_assert(eq(int, lms__devcache_alloc(&dc, 4 * MIB + 1, NULL, &p),
               LMS_ERR_DEVICE_OOM));
  cr_assert(mentions(err, "4194305"), "%s", err);
  cr_assert(mentions(err, "4194304"), "the message must give the limit: %s",
            err);
  cr_assert(eq(u64, report().calls[LMS__DEVOP_dev_alloc], calls));
  cr_assert(eq(u64, reserved(), 0));
  /* Exactly the limit fits. */
  char *q = get(4 * MIB, NULL);
  cr_assert(eq(u64, reserved(), 4 * MIB));
  put(q, NULL);
}

/* When the room left under the limit is less than a small segment, a small
 * request still fits: the cache falls back to a segment of exactly the
 * request, which it must then be able to use. */
Test(devcache_limit, small_request_in_the_last_bytes, .init = cache_up,
     .fini = cache_down) {
  dc.limit = 5 * MIB;
  get(4 * MIB, NULL);
  cr_assert(eq(u64, reserved(), 4 * MIB));
  void *p = NULL;
  lms_status_t st = lms__devcache_alloc(&dc, 512 * KIB, NULL, &p);
  cr_assert(eq(int, st, LMS_OK),
            "512 KiB did not fit in the 1 MiB left under the limit: %s", err);
  cr_assert(le(u64, reserved(), 5 * MIB));
  assert_sound();
}

Test(devcache_limit, limit_below_a_small_segment, .init = cache_up,
     .fini = cache_down) {
  dc.limit = MIB;
  void *p = NULL;
  lms_status_t st = lms__devcache_alloc(&dc, 4 * KIB, NULL, &p);
  cr_assert(eq(int, st, LMS_OK),
            "4 KiB did not fit under a 1 MiB limit on an empty cache: %s", err);
  cr_assert(le(u64, reserved(), MIB));
  assert_sound();
}

/* ---- Returning segments ---------------------------------------------- */

Test(devcache_release, whole_free_segments_go_back, .init = cache_up,
     .fini = cache_down) {
  void *A = new_stream();
  char *small = get(512 * KIB, NULL);
  char *l4 = get(4 * MIB, NULL);
  char *l6 = get(6 * MIB, NULL);
  char *l4b = get(3 * MIB + 1, NULL);
  cr_assert(eq(i64, segments(), 4));
  cr_assert(eq(u64, reserved(), 16 * MIB));
  cr_assert(eq(u64, report().dev_in_use, 16 * MIB));

  /* Nothing is free in whole: nothing goes back. */
  cr_assert(eq(int, lms__devcache_release_unused(&dc), LMS_OK));
  cr_assert(eq(u64, reserved(), 16 * MIB));

  /* A segment whose one block is free but pending on a stream stays until
   * the stream's work is done; a wholly free one goes. */
  put(l4, NULL);
  busy(A, FOREVER_NS);
  put(l6, A);
  cr_assert(eq(int, lms__devcache_release_unused(&dc), LMS_OK));
  assert_sound();
  cr_assert(eq(i64, segments(), 3));
  cr_assert(eq(u64, reserved(), 12 * MIB));
  cr_assert(eq(u64, report().dev_in_use, 12 * MIB));
  cr_assert(eq(sz, lms__devcache_block_size(&dc, small), 512 * KIB));
  memset(small, 1, 512 * KIB);
  memset(l4b, 2, 3 * MIB + 1);

  /* A segment with a pending block and a free one stays as well. */
  put(l4b, NULL);
  put(small, A);
  cr_assert(eq(int, lms__devcache_release_unused(&dc), LMS_OK));
  cr_assert(eq(i64, segments(), 2));
  cr_assert(eq(u64, reserved(), 8 * MIB));
  cr_assert(eq(int, lms__devcache_sync(&dc), LMS_OK));
  cr_assert(eq(int, lms__devcache_release_unused(&dc), LMS_OK));
  assert_sound();
  cr_assert(eq(i64, segments(), 0));
  cr_assert(eq(u64, reserved(), 0));
  cr_assert(eq(u64, report().dev_in_use, 0));
  cr_assert(eq(u64, report().calls[LMS__DEVOP_dev_free], 4));
}

/* An allocation that does not fit returns unused segments first. */
Test(devcache_release, oom_path_returns_unused_segments, .init = cache_up,
     .fini = cache_down) {
  dc.limit = 8 * MIB;
  char *a = get(4 * MIB, NULL);
  char *b = get(4 * MIB, NULL);
  put(a, NULL);
  put(b, NULL);
  cr_assert(eq(u64, reserved(), 8 * MIB));
  /* 6 MiB fits in neither 4 MiB segment; both must go back to make room. */
  char *c = get(6 * MIB, NULL);
  cr_assert(eq(sz, lms__devcache_block_size(&dc, c), 6 * MIB));
  cr_assert(le(u64, reserved(), 8 * MIB));
  cr_assert(eq(u64, report().dev_in_use, reserved()));
}

/* ---- Streams ----------------------------------------------------------- */

/* One 2 MiB small segment tiled by two 1 MiB blocks on stream A; returns
 * the first. */
static char *two_blocks(void *A) {
  char *x = get(MIB, A);
  char *y = get(MIB, A);
  cr_assert(eq(ptr, y, x + MIB));
  cr_assert(eq(i64, segments(), 1));
  return x;
}

/* The first of two_blocks, freed on A while A is busy for ns: pending
 * until that work is done. */
static char *pending_block(void *A, uint64_t ns) {
  char *x = two_blocks(A);
  busy(A, ns);
  put(x, A);
  return x;
}

Test(devcache_stream, same_stream_reuses_at_once, .init = cache_up,
     .fini = cache_down) {
  void *A = new_stream();
  char *x = pending_block(A, FOREVER_NS);
  cr_assert(eq(ptr, get(MIB, A), x),
            "work enqueued on A later runs after A's work: A may reuse");
  cr_assert(eq(i64, segments(), 1));
  cr_assert(lt(u64, dev->ops->now_ns(dev), FOREVER_NS),
            "reuse on the same stream must not wait");
}

Test(devcache_stream, other_stream_waits_for_the_work, .init = cache_up,
     .fini = cache_down) {
  void *A = new_stream(), *B = new_stream();
  char *x = pending_block(A, FOREVER_NS);
  char *z = get(MIB, B);
  cr_assert(z < x || z >= x + MIB, "B got the block A's work still uses");
  cr_assert(eq(i64, segments(), 2), "B's block must come from a new segment");
  cr_assert(lt(u64, dev->ops->now_ns(dev), FOREVER_NS));
  /* A request with no stream cannot take it either. */
  char *n = get(MIB, NULL);
  cr_assert(n < x || n >= x + MIB);
  /* Once A's work is done, B may have it. */
  cr_assert(eq(int, dev->ops->stream_sync(dev, A), LMS_OK));
  cr_assert(eq(ptr, get(MIB, B), x));
}

Test(devcache_stream, event_completion_releases_the_block, .init = cache_up,
     .fini = cache_down) {
  void *A = new_stream(), *B = new_stream();
  void *ev = NULL;
  cr_assert(eq(int, dev->ops->event_create(dev, &ev), LMS_OK));
  char *x = pending_block(A, 5 * FOREVER_NS);
  char *other = get(MIB, B);
  cr_assert(other < x || other >= x + MIB);
  put(other, NULL);
  /* Waiting on any event recorded on A after the free moves the host past
   * the work the free captured. */
  cr_assert(eq(int, dev->ops->event_record(dev, ev, A), LMS_OK));
  cr_assert(eq(int, dev->ops->event_sync(dev, ev), LMS_OK));
  cr_assert(eq(ptr, get(MIB, B), x), "the best fit is the 1 MiB block");
  cr_assert(eq(int, dev->ops->event_destroy(dev, ev), LMS_OK));
}

/* With no room to grow, a request from another stream waits for the
 * pending block rather than failing. */
Test(devcache_stream, full_cache_waits_for_pending, .init = cache_up,
     .fini = cache_down) {
  dc.limit = 2 * MIB;
  void *A = new_stream(), *B = new_stream();
  char *x = pending_block(A, FOREVER_NS);
  cr_assert(eq(ptr, get(MIB, B), x));
  cr_assert(lt(u64, dev->ops->now_ns(dev), FOREVER_NS),
            "the host blocked instead of ordering B after A's work");
  cr_assert(eq(int, dev->ops->stream_sync(dev, B), LMS_OK));
  cr_assert(ge(u64, dev->ops->now_ns(dev), FOREVER_NS),
            "B's work could start before A's work on the block was done");
  cr_assert(eq(u64, reserved(), 2 * MIB));
}

/* Without a stream to order, a full cache still waits on the host. */
Test(devcache_stream, full_cache_null_stream_blocks, .init = cache_up,
     .fini = cache_down) {
  dc.limit = 2 * MIB;
  void *A = new_stream();
  char *x = pending_block(A, FOREVER_NS);
  cr_assert(eq(ptr, get(MIB, NULL), x));
  cr_assert(ge(u64, dev->ops->now_ns(dev), FOREVER_NS),
            "a block for any stream was handed out before A was done");
}

Test(devcache_stream, null_stream_free_is_reusable_by_anyone,
     .init = cache_up, .fini = cache_down) {
  void *A = new_stream(), *B = new_stream();
  char *x = two_blocks(A);
  busy(A, FOREVER_NS);
  put(x, NULL);
  cr_assert(eq(ptr, get(MIB, B), x));
  cr_assert(eq(i64, segments(), 1));
  cr_assert(lt(u64, dev->ops->now_ns(dev), FOREVER_NS));
}

/* Note [Oldest pending first]: three 1 MiB blocks freed on A in turn,
 * the highest address first, each after more of A's work: a request on B
 * with no room to grow takes the one freed first, and so waits only for
 * the work before its free. */
Test(devcache_stream, the_oldest_pending_block_is_claimed, .init = cache_up,
     .fini = cache_down) {
  void *A = new_stream(), *B = new_stream();
  char *x[4];
  for (int i = 0; i < 4; i++) x[i] = get(MIB, A); /* two small segments */
  dc.limit = reserved();
  put(x[3], NULL); /* the neighbour of x[2], ready: x[2] is taken whole */
  for (int i = 2; i >= 0; i--) {
    busy(A, 1000000);
    put(x[i], A);
  }
  busy(A, FOREVER_NS);
  uint64_t t0 = dev->ops->now_ns(dev);
  char *ready = get(MIB, B);
  cr_assert(eq(ptr, ready, x[3]), "a ready block comes before any pending");
  cr_assert(eq(ptr, get(MIB, B), x[2]), "the oldest free, not the lowest "
            "address (%p)", (void *)x[0]);
  cr_assert(eq(int, dev->ops->stream_sync(dev, B), LMS_OK));
  uint64_t waited = dev->ops->now_ns(dev) - t0;
  cr_assert(ge(u64, waited, 1000000), "B ran before the work the free "
            "captured");
  cr_assert(lt(u64, waited, 2000000), "B waited for work after the free");
}

/* Note [Oldest pending first] in paged mode: with the budget full of
 * pending large segments, a request of another size returns the oldest
 * to make room, and so waits only for the work before that free. */
Test(devcache_stream, the_oldest_pending_segment_is_returned,
     .init = cache_up, .fini = cache_down) {
  dc.paged = 1;
  dc.small_max = 64 * KIB;
  void *A = new_stream(), *B = new_stream();
  char *x[3];
  for (int i = 0; i < 3; i++) x[i] = get(8 * MIB, A);
  cr_assert(eq(i64, segments(), 3));
  dc.limit = reserved();
  for (int i = 0; i < 3; i++) { /* the segment made first, freed first */
    busy(A, 1000000);
    put(x[i], A);
  }
  busy(A, FOREVER_NS);
  uint64_t t0 = dev->ops->now_ns(dev);
  char *y = get(6 * MIB, B); /* no segment of its size: one goes back */
  cr_assert(y != NULL);
  cr_assert(eq(i64, segments(), 3));
  cr_assert(eq(int, dev->ops->stream_sync(dev, B), LMS_OK));
  uint64_t waited = dev->ops->now_ns(dev) - t0;
  cr_assert(ge(u64, waited, 1000000), "the segment went back before the "
            "work its free captured was done");
  cr_assert(lt(u64, waited, 2000000), "B waited for a segment freed later "
            "than the first");
  /* x[0] went back: x[1] and x[2] are the 8 MiB segments left. */
  cr_assert(eq(int, lms__devcache_sync(&dc), LMS_OK));
  char *a = get(8 * MIB, NULL), *b = get(8 * MIB, NULL);
  int left = (a == x[1] && b == x[2]) || (a == x[2] && b == x[1]);
  cr_assert(left, "%p and %p are not x[1] and x[2]", (void *)a, (void *)b);
}

/* A small request on A does not take a pending block more than twice its
 * size whole: it would pin the large block for a small use. */
Test(devcache_stream, small_request_skips_large_pending_block,
     .init = cache_up, .fini = cache_down) {
  void *A = new_stream();
  char *x = pending_block(A, FOREVER_NS);
  char *s = get(256 * KIB, A);
  cr_assert(s < x || s >= x + MIB);
  char *t = get(MIB / 2, A);
  cr_assert(eq(ptr, t, x), "half the block's size may take it");
  cr_assert(eq(sz, lms__devcache_block_size(&dc, t), MIB),
            "a pending block is taken whole, never split");
}

Test(devcache_stream, unknown_pointers_rejected, .init = cache_up,
     .fini = cache_down) {
  char local[16];
  char *x = get(64 * KIB, NULL);
  lms_stats_t before = stats;
  cr_assert(eq(int, lms__devcache_free(&dc, local, NULL), LMS_ERR_INVALID));
  cr_assert(mentions(err, "not a block"), "%s", err);
  cr_assert(eq(int, lms__devcache_free(&dc, x + 512, NULL), LMS_ERR_INVALID),
            "an interior pointer is not a block");
  cr_assert(eq(int, lms__devcache_free(&dc, NULL, NULL), LMS_ERR_INVALID));
  cr_assert(same_counters(&before, &stats), "a rejected free changed stats");
  cr_assert(eq(sz, lms__devcache_block_size(&dc, x + 512), 0));
  assert_sound();
  put(x, NULL);
  cr_assert(eq(int, lms__devcache_free(&dc, x, NULL), LMS_ERR_INVALID),
            "a double free must be caught");
  cr_assert(eq(sz, lms__devcache_block_size(&dc, x), 0));
  assert_sound();
}

/* ---- Device failures --------------------------------------------------- */

struct fault_case {
  lms__dev_op_t op;
};

ParameterizedTestParameters(devcache_fault, lost_event_binds_block) {
  static struct fault_case cases[] = {{LMS__DEVOP_event_record},
                                      {LMS__DEVOP_event_create}};
  return cr_make_param_array(struct fault_case, cases,
                             sizeof cases / sizeof cases[0]);
}

/* Without an event the cache cannot tell when the stream is done with a
 * freed block: the block stays the stream's own until a full sync. */
ParameterizedTest(struct fault_case *c, devcache_fault, lost_event_binds_block,
                  .init = cache_up, .fini = cache_down) {
  void *A = new_stream(), *B = new_stream();
  char *x = two_blocks(A);
  lms__sim_fail_op(dev, c->op, report().calls[c->op] + 1);
  put(x, A);
  cr_assert(eq(i64, stats.device_errors.current, 1));
  cr_assert(mentions(err, lms__dev_op_names[c->op]), "%s", err);
  /* A has no work at all, yet without the event B may not have it. */
  char *w = get(MIB, B);
  cr_assert(w < x || w >= x + MIB);
  put(w, NULL);
  cr_assert(eq(ptr, get(MIB, A), x), "A itself may reuse it at once");
  lms__sim_fail_op(dev, c->op, report().calls[c->op] + 1);
  put(x, A);
  cr_assert(eq(i64, stats.device_errors.current, 2));
  char *w2 = get(MIB, B);
  cr_assert(w2 < x || w2 >= x + MIB);
  put(w2, NULL);
  cr_assert(eq(int, lms__devcache_sync(&dc), LMS_OK));
  assert_sound();
  cr_assert(eq(ptr, get(MIB, B), x), "after a sync anyone may have it");
}

Test(devcache_fault, failed_dev_alloc_changes_nothing, .init = cache_up,
     .fini = cache_down) {
  /* The cache tries the device twice (a second time after returning unused
   * segments); fail both. */
  lms__sim_report_t r = report();
  lms__sim_fail_op(dev, LMS__DEVOP_dev_alloc,
                   r.calls[LMS__DEVOP_dev_alloc] + 1);
  lms__sim_fail_any(dev, r.total_calls + 2);
  lms_stats_t before = stats;
  void *p = (void *)0x1;
  lms_status_t st = lms__devcache_alloc(&dc, 64 * KIB, NULL, &p);
  cr_assert(eq(int, st, LMS_ERR_DEVICE_OOM), "%s", err);
  cr_assert(mentions(err, "65536"), "%s", err);
  cr_assert(eq(ptr, p, (void *)0x1));
  cr_assert(eq(u64, report().calls[LMS__DEVOP_dev_alloc],
               r.calls[LMS__DEVOP_dev_alloc] + 2));
  /* Each refusal of memory the budget allows counts as a device error;
   * nothing else moves. */
  cr_assert(eq(i64, stats.device_errors.current, 2));
  before.device_errors = stats.device_errors;
  cr_assert(same_counters(&before, &stats),
            "a failed alloc changed the stats");
  cr_assert(eq(u64, report().dev_in_use, 0));
  assert_sound();
  /* The device works again: so does the cache. */
  char *q = get(64 * KIB, NULL);
  cr_assert(eq(u64, reserved(), 2 * MIB));
  put(q, NULL);
}

/* One refusal is absorbed: the cache returns what it does not use and asks
 * again, and the caller never sees the failure. */
Test(devcache_fault, one_refusal_is_retried, .init = cache_up,
     .fini = cache_down) {
  lms__sim_fail_op(dev, LMS__DEVOP_dev_alloc,
                   report().calls[LMS__DEVOP_dev_alloc] + 1);
  char *q = get(3 * MIB, NULL);
  cr_assert(eq(sz, lms__devcache_block_size(&dc, q), 3 * MIB));
  cr_assert(eq(i64, stats.device_errors.current, 1));
  cr_assert(eq(u64, report().dev_in_use, reserved()));
}

/* A failing event query leaves the block pending and counts the error. */
Test(devcache_fault, failed_event_query_keeps_block_pending,
     .init = cache_up, .fini = cache_down) {
  void *A = new_stream(), *B = new_stream();
  char *x = pending_block(A, FOREVER_NS);
  cr_assert(eq(int, dev->ops->stream_sync(dev, A), LMS_OK));
  lms__sim_fail_op(dev, LMS__DEVOP_event_query,
                   report().calls[LMS__DEVOP_event_query] + 1);
  char *w = get(MIB, B);
  cr_assert(w < x || w >= x + MIB);
  cr_assert(eq(i64, stats.device_errors.current, 1));
  put(w, NULL);
  cr_assert(eq(ptr, get(MIB, B), x), "the next query succeeds");
}

/* ---- Fragmentation ----------------------------------------------------- */

Test(devcache_frag, holes_raise_the_figure, .init = cache_up,
     .fini = cache_down) {
  cr_assert(eq(dbl, lms__devcache_fragmentation(&dc), 0.0), "nothing held");
  char *b[4];
  for (int i = 0; i < 4; i++) b[i] = get(512 * KIB, NULL);
  cr_assert(eq(dbl, lms__devcache_fragmentation(&dc), 0.0), "nothing free");
  put(b[0], NULL);
  cr_assert(eq(dbl, lms__devcache_fragmentation(&dc), 0.0), "one hole");
  put(b[2], NULL);
  /* 1 MiB free in two 512 KiB holes: the largest is half. */
  cr_assert(eq(dbl, lms__devcache_fragmentation(&dc), 0.5));
  put(b[1], NULL);
  cr_assert(eq(dbl, lms__devcache_fragmentation(&dc), 0.0),
            "the three merged into one");
  b[0] = get(64 * KIB, NULL);
  /* 1.5 MiB - 64 KiB free, as one block after the new one. */
  cr_assert(eq(dbl, lms__devcache_fragmentation(&dc), 0.0));
  put(b[3], NULL);
  /* 64 KiB in use at the start: the rest is one free block again. */
  cr_assert(eq(dbl, lms__devcache_fragmentation(&dc), 0.0));
  char *mid = get(512 * KIB, NULL);
  char *hole = get(256 * KIB, NULL);
  get(512 * KIB, NULL);
  put(hole, NULL);
  (void)mid;
  double f = lms__devcache_fragmentation(&dc);
  cr_assert(gt(dbl, f, 0.0));
  cr_assert(lt(dbl, f, 1.0));
}

/* A block freed while its stream still works on it is free space all the
 * same: it counts in the figure, though it does not merge yet. */
Test(devcache_frag, pending_blocks_are_free_space, .init = cache_up,
     .fini = cache_down) {
  void *A = new_stream();
  char *b[4];
  for (int i = 0; i < 4; i++) b[i] = get(512 * KIB, NULL);
  busy(A, FOREVER_NS);
  put(b[1], A);
  cr_assert(eq(dbl, lms__devcache_fragmentation(&dc), 0.0));
  put(b[2], NULL);
  /* Two 512 KiB pieces that cannot merge while b[1] is pending. */
  cr_assert(eq(dbl, lms__devcache_fragmentation(&dc), 0.5));
  cr_assert(eq(int, lms__devcache_sync(&dc), LMS_OK));
  cr_assert(eq(dbl, lms__devcache_fragmentation(&dc), 0.0));
}

/* ---- Randomized -------------------------------------------------------- */

typedef struct live {
  char *ptr;
  size_t size;  /* what was asked for, and what the pattern covers */
  size_t block; /* what the cache gave */
  uint64_t seed;
} live_t;

static uint64_t rng_state;

static uint64_t rnd(void) { return lms_test_next(&rng_state); }

/* Sizes spread over every size class, 512 B up to 8 MiB, plus odd tails. */
static size_t random_size(void) {
  unsigned e = (unsigned)(rnd() % 15); /* 512 << 0 .. 512 << 14 = 8 MiB */
  size_t hi = (size_t)512 << e;
  size_t lo = e == 0 ? 512 : hi / 2;
  return lo + (size_t)(rnd() % (hi - lo + 1));
}

/* The pattern covers a block whole when it is small, and otherwise its
 * first, middle and last 4 KiB, which is where a neighbour or a wrong
 * split would write. */
#define WINDOW (4 * KIB)

static void pattern(const live_t *l, int verify) {
  static unsigned char expect[64 * KIB];
  size_t offs[3], lens[3];
  int n;
  if (l->size <= sizeof expect) {
    offs[0] = 0;
    lens[0] = l->size;
    n = 1;
  } else {
    offs[0] = 0;
    offs[1] = l->size / 2 - WINDOW / 2;
    offs[2] = l->size - WINDOW;
    lens[0] = lens[1] = lens[2] = WINDOW;
    n = 3;
  }
  for (int i = 0; i < n; i++) {
    lms_test_fill(expect, lens[i], l->seed * 4 + (uint64_t)i);
    if (verify)
      cr_assert(eq(int, memcmp(l->ptr + offs[i], expect, lens[i]), 0),
                "the bytes of a live block of %zu changed", l->size);
    else
      memcpy(l->ptr + offs[i], expect, lens[i]);
  }
}

#define MAX_LIVE 64

/* Random allocations and frees on `nstreams` streams and the null stream,
 * with the checks of lms__devcache_check after every operation; paged:
 * large requests get segments of their own (Note [Paged large blocks]). */
static void churn(int paged, int nstreams) {
  dc.limit = 48 * MIB;
  dc.paged = paged;
  rng_state = 0x9E3779B97F4A7C15ull + (uint64_t)(paged * 16 + nstreams);
  void *streams[16];
  for (int i = 0; i < nstreams; i++) streams[i] = new_stream();
  streams[nstreams] = NULL;
  live_t live[MAX_LIVE];
  size_t nlive = 0;
  uint64_t seed = 1;
  int allocs = 0;
  for (int op = 0; op < 4000; op++) {
    uint64_t r = rnd() % 100;
    if (r < 3) {
      busy(streams[rnd() % (uint64_t)nstreams], 1 + rnd() % 20000);
    } else if (r < 5) {
      cr_assert(eq(int, dev->ops->stream_sync(
                            dev, streams[rnd() % (uint64_t)nstreams]),
                   LMS_OK));
    } else if (r == 5) {
      cr_assert(eq(int, lms__devcache_release_unused(&dc), LMS_OK));
    } else if (r == 6) {
      cr_assert(eq(int, lms__devcache_sync(&dc), LMS_OK));
    } else if (r < 55 && nlive < MAX_LIVE) {
      size_t size = random_size();
      size_t want = (size + 511) / 512 * 512;
      void *s = streams[rnd() % (uint64_t)(nstreams + 1)];
      void *p = NULL;
      lms_status_t st = lms__devcache_alloc(&dc, size, s, &p);
      if (st == LMS_ERR_DEVICE_OOM) {
        /* Out of memory is honest only if no free block fits and no
         * segment of the request's size fits under the limit. */
        uint64_t free_b =
            reserved() - (uint64_t)stats.device_allocated.current;
        double largest =
            (double)free_b * (1.0 - lms__devcache_fragmentation(&dc));
        cr_assert(gt(u64, reserved() + want, dc.limit),
                  "op %d: OOM for %zu bytes with %llu of %llu reserved: %s",
                  op, size, (unsigned long long)reserved(),
                  (unsigned long long)dc.limit, err);
        /* Paged, a large request returns free segments rather than
         * taking a larger block, so only the first holds there. */
        if (!paged || size <= dc.small_max)
          cr_assert(lt(dbl, largest, (double)want - 0.5),
                    "op %d: OOM for %zu bytes with a free block of %.0f", op,
                    size, largest);
      } else {
        cr_assert(eq(int, st, LMS_OK), "op %d: %s", op, err);
        char *c = p;
        /* A pending block is taken whole when it is at most twice the
         * request; any other block is split to the rounded size. */
        size_t bs = lms__devcache_block_size(&dc, c);
        cr_assert(ge(sz, bs, want), "op %d", op);
        cr_assert(le(sz, bs, 2 * want + 1), "op %d", op);
        for (size_t i = 0; i < nlive; i++)
          cr_assert(c + bs <= live[i].ptr ||
                        live[i].ptr + live[i].block <= c,
                    "op %d: [%p, +%zu) overlaps live [%p, +%zu)", op, p, bs,
                    (void *)live[i].ptr, live[i].block);
        live[nlive] = (live_t){c, size, bs, seed++};
        pattern(&live[nlive], 0);
        nlive++;
        allocs++;
      }
    } else if (nlive > 0) {
      size_t i = (size_t)(rnd() % nlive);
      pattern(&live[i], 1);
      put(live[i].ptr, streams[rnd() % (uint64_t)(nstreams + 1)]);
      live[i] = live[--nlive];
    }
    assert_sound();
    cr_assert(le(u64, reserved(), dc.limit), "op %d", op);
    cr_assert(eq(u64, report().dev_in_use, reserved()), "op %d", op);
    uint64_t sum = 0;
    for (size_t i = 0; i < nlive; i++) {
      cr_assert(eq(sz, lms__devcache_block_size(&dc, live[i].ptr),
                   live[i].block), "op %d", op);
      sum += live[i].block;
    }
    cr_assert(eq(u64, (uint64_t)stats.device_allocated.current, sum),
              "op %d", op);
  }
  for (size_t i = 0; i < nlive; i++) pattern(&live[i], 1);
  cr_assert(gt(int, allocs, 1000), "the run must allocate");
  cr_assert(eq(int, lms__devcache_sync(&dc), LMS_OK));
  for (size_t i = 0; i < nlive; i++) put(live[i].ptr, NULL);
  cr_assert(eq(int, lms__devcache_release_unused(&dc), LMS_OK));
  cr_assert(eq(u64, reserved(), 0));
  cr_assert(eq(u64, report().dev_in_use, 0));
}

Test(devcache_random, invariants_hold_under_churn, .init = cache_up,
     .fini = cache_down) {
  churn(0, 2);
}

/* Paged, and with more streams than have pending lists of their own
 * (Note [Pending blocks in stream order]): empty segments and per-stream
 * lists are checked after every operation. */
Test(devcache_random, paged_invariants_hold_under_churn, .init = cache_up,
     .fini = cache_down) {
  churn(1, 2);
}

Test(devcache_random, paged_many_streams_invariants_hold, .init = cache_up,
     .fini = cache_down) {
  churn(1, 10);
}

/* A segment grown for a request serves it even when the segment is more
 * than twice the request (a large segment unit): the kind rule must not
 * refuse the very block made for it. */
Test(devcache_grow, new_segment_serves_its_request, .init = cache_up,
     .fini = cache_down) {
  dc.segment_unit = 8 * MIB;
  char *p = get(MIB + MIB / 2, NULL);
  cr_assert(not(eq(ptr, p, NULL)), "%s", err);
  cr_assert(eq(u64, reserved(), 8 * MIB));
  cr_assert(eq(i64, segments(), 1));
}

/* In paged mode, a segment of `size` freed on A while A is busy: pending,
 * as a victim's block is while its write-back runs; the budget has room
 * for 8 MiB more. */
static char *paged_pending(void *A, size_t size) {
  dc.paged = 1;
  dc.small_max = 64 * KIB;
  char *x = get(size, A);
  dc.limit = reserved() + 8 * MIB;
  busy(A, FOREVER_NS);
  put(x, A);
  return x;
}

/* Note [Fresh room before a wait]: in paged mode a block pending on
 * another stream is taken only where no new segment can be had. */
Test(devcache_stream, paged_room_comes_before_a_pending_segment,
     .init = cache_up, .fini = cache_down) {
  void *A = new_stream(), *B = new_stream();
  char *x = paged_pending(A, 8 * MIB);
  char *y = get(8 * MIB, B);
  cr_assert(y != x, "B took the segment A's work still uses, with room to "
            "grow one");
  cr_assert(eq(i64, segments(), 2));
  cr_assert(eq(int, dev->ops->stream_sync(dev, B), LMS_OK));
  cr_assert(lt(u64, dev->ops->now_ns(dev), FOREVER_NS),
            "B waited for A's work");
  /* Short of room by a ready empty segment of another size: it goes back
   * to make the room, and still nothing waits. */
  put(y, NULL);
  char *z = get(4 * MIB, B); /* y's ready segment went back for it */
  cr_assert(eq(i64, segments(), 2));
  put(z, NULL);
  dc.limit = reserved() + 4 * MIB; /* x pending, z's 4 MiB ready */
  char *w = get(8 * MIB, B);
  cr_assert(w != x);
  cr_assert(eq(i64, segments(), 2), "z's segment should have gone back");
  cr_assert(eq(int, dev->ops->stream_sync(dev, B), LMS_OK));
  cr_assert(lt(u64, dev->ops->now_ns(dev), FOREVER_NS),
            "B waited though a ready segment could go back");
  /* No room and nothing ready: then B takes x, ordered after A's work on
   * the device, the host not blocked. */
  dc.limit = reserved();
  char *v = get(8 * MIB, B);
  cr_assert(eq(ptr, v, x));
  cr_assert(lt(u64, dev->ops->now_ns(dev), FOREVER_NS));
  cr_assert(eq(int, dev->ops->stream_sync(dev, B), LMS_OK));
  cr_assert(ge(u64, dev->ops->now_ns(dev), FOREVER_NS),
            "B's work could start before A's work on the segment was done");
  put(v, NULL);
  put(w, NULL);
}

/* ... but a request under LMS__SMALL_REQUEST still takes the pending
 * segment of its size, ordered after A's work, though the budget has
 * room. */
Test(devcache_stream, paged_small_requests_take_the_pending_segment,
     .init = cache_up, .fini = cache_down) {
  void *A = new_stream(), *B = new_stream();
  char *x = paged_pending(A, 512 * KIB);
  char *y = get(512 * KIB, B);
  cr_assert(eq(ptr, y, x));
  cr_assert(eq(i64, segments(), 1));
  cr_assert(lt(u64, dev->ops->now_ns(dev), FOREVER_NS));
  cr_assert(eq(int, dev->ops->stream_sync(dev, B), LMS_OK));
  cr_assert(ge(u64, dev->ops->now_ns(dev), FOREVER_NS));
  put(y, NULL);
}
