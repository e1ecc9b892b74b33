/* test_stable.c - lms_torch_* (the stable-pointer allocator behind
 * PyTorch's pluggable allocator) against the driver double, whose
 * "device" memory is host memory a test can read and write.
 *
 * Each test runs in its own process (Criterion), so each sets its own
 * LMS_* environment before the allocator starts. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "cuda_double.h"
#include "lms/lms_torch.h"

#define MiB (1ull << 20)
#define S1 ((cudaStream_t)(uintptr_t)0x1000)
#define S2 ((cudaStream_t)(uintptr_t)0x2000)

static void env(const char *limit, const char *physical) {
  unsetenv("LMS_KB");
  unsetenv("LMS_FRAC");
  unsetenv("LMS_PREFETCH_WINDOW");
  if (limit) setenv("LMS_GPU_LIMIT", limit, 1);
  else unsetenv("LMS_GPU_LIMIT");
  setenv("CUDOUBLE_MEMORY", physical ? physical : "1G", 1);
}

static int kind_of(void *p) {
  cudouble_alloc_info_t info;
  cudouble_query((uint64_t)(uintptr_t)p, &info);
  return info.kind;
}

/* A stat out of the JSON line, by key. */
static uint64_t stat(const char *key) {
  char buf[2048], pat[64];
  cr_assert_lt(lms_torch_stats_json(buf, sizeof buf), sizeof buf);
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *at = strstr(buf, pat);
  cr_assert_not_null(at, "no %s in %s", key, buf);
  return strtoull(at + strlen(pat), NULL, 10);
}

static void fill(void *p, size_t n, unsigned seed) {
  uint32_t *w = p;
  for (size_t i = 0; i < n / 4; i++) w[i] = (uint32_t)(i * 2654435761u) ^ seed;
}

static int check(const void *p, size_t n, unsigned seed) {
  const uint32_t *w = p;
  for (size_t i = 0; i < n / 4; i++)
    if (w[i] != ((uint32_t)(i * 2654435761u) ^ seed)) return 0;
  return 1;
}

Test(stable, a_freed_block_is_reused_on_its_stream_without_the_driver) {
  env("64M", NULL);
  cr_assert_eq(lms_torch_init(), 0, "%s", lms_torch_last_error());
  void *a = lms_torch_malloc(3 * MiB - 5, 0, S1);
  cr_assert_not_null(a);
  cr_assert_eq(kind_of(a), CUDOUBLE_DEVICE);
  lms_torch_free(a, 3 * MiB - 5, 0, S1);
  cudouble_stats_t before, after;
  cudouble_stats(&before);
  void *b = lms_torch_malloc(3 * MiB, 0, S1); /* the same size class */
  cudouble_stats(&after);
  cr_assert_eq(b, a);
  cr_assert_eq(after.alloc_calls, before.alloc_calls);
  cr_assert_eq(stat("cache_hits"), 1);
  /* Another stream does not take it while there is room. */
  lms_torch_free(b, 0, 0, S1);
  void *c = lms_torch_malloc(3 * MiB, 0, S2);
  cr_assert_neq(c, a);
  cr_assert_eq(stat("syncs"), 0);
}

Test(stable, another_streams_cached_block_is_taken_only_after_a_sync) {
  env("8M", NULL);
  void *a = lms_torch_malloc(6 * MiB, 0, S1);
  cr_assert_eq(kind_of(a), CUDOUBLE_DEVICE);
  lms_torch_free(a, 0, 0, S1);
  /* No room for a second device block: the cache is emptied after a
   * synchronise and the request is served on the device. */
  void *b = lms_torch_malloc(6 * MiB, 0, S2);
  cr_assert_not_null(b);
  cr_assert_eq(kind_of(b), CUDOUBLE_DEVICE);
  cr_assert_geq(stat("syncs"), 1);
  cr_assert_eq(stat("driver_frees"), 1);
  cr_assert_leq(stat("device_held"), 8 * MiB);
}

Test(stable, past_the_limit_blocks_are_managed_host_preferred_and_intact) {
  env("32M", "1G");
  enum { N = 24 };
  void *p[N];
  size_t sz = 4 * MiB;
  for (int i = 0; i < N; i++) { /* 96 MiB: 3x the limit */
    p[i] = lms_torch_malloc((ssize_t)sz, 0, S1);
    cr_assert_not_null(p[i], "%s", lms_torch_last_error());
    fill(p[i], sz, (unsigned)i);
  }
  int managed = 0;
  for (int i = 0; i < N; i++) {
    cudouble_alloc_info_t info;
    cudouble_query((uint64_t)(uintptr_t)p[i], &info);
    if (info.kind == CUDOUBLE_MANAGED) {
      managed++;
      cr_assert_eq(info.preferred_type, CU_MEM_LOCATION_TYPE_HOST);
      cr_assert_eq(info.accessed_by_type, CU_MEM_LOCATION_TYPE_DEVICE);
      cr_assert_eq(info.accessed_by_id, 0);
    }
  }
  cr_assert_eq(managed, N - 8, "8 blocks of 4 MiB fit in 32 MiB");
  cudouble_stats_t ds;
  cudouble_stats(&ds);
  cr_assert_leq(ds.device_peak, 32 * MiB);
  /* Churn: free every other one, allocate again, prefetch, evict. */
  for (int i = 0; i < N; i += 2) lms_torch_free(p[i], 0, 0, S1);
  for (int i = 0; i < N; i += 2) {
    p[i] = lms_torch_malloc((ssize_t)sz, 0, S1);
    fill(p[i], sz, (unsigned)i);
  }
  lms_torch_prefetch(p, N, S1);
  lms_torch_evict_all(S1);
  for (int i = 0; i < N; i++)
    cr_assert(check(p[i], sz, (unsigned)i), "block %d changed", i);
  cr_assert_eq(stat("failed"), 0);
}

Test(stable, a_real_out_of_memory_within_the_limit_falls_back_to_managed) {
  env("1G", "16M"); /* the device is smaller than the limit */
  void *a = lms_torch_malloc(12 * MiB, 0, S1);
  void *b = lms_torch_malloc(12 * MiB, 0, S1);
  cr_assert_eq(kind_of(a), CUDOUBLE_DEVICE);
  cr_assert_eq(kind_of(b), CUDOUBLE_MANAGED);
  cudouble_stats_t ds;
  cudouble_stats(&ds);
  cr_assert_geq(ds.oom_calls, 1);
}

Test(stable, caffes_rule_sends_large_blocks_to_the_host) {
  env("64M", NULL);
  setenv("LMS_KB", "1024", 1);
  setenv("LMS_FRAC", "0", 1);
  void *small = lms_torch_malloc(512 * 1024, 0, S1);
  void *large = lms_torch_malloc(2 * MiB, 0, S1);
  cr_assert_eq(kind_of(small), CUDOUBLE_DEVICE);
  cr_assert_eq(kind_of(large), CUDOUBLE_MANAGED);
}

Test(stable, prefetch_moves_managed_blocks_in_and_evicts_the_oldest) {
  env("16M", NULL);
  setenv("LMS_PREFETCH_WINDOW", "1000,8M", 1);
  void *filler = lms_torch_malloc(16 * MiB, 0, S1);
  void *m[4];
  for (int i = 0; i < 4; i++) m[i] = lms_torch_malloc(7 * MiB, 0, S1);
  cr_assert_eq(kind_of(m[0]), CUDOUBLE_MANAGED);
  lms_torch_free(filler, 0, 0, S1);
  lms_torch_empty_cache();
  void *dev = lms_torch_malloc(4 * MiB, 0, S1);
  cr_assert_eq(kind_of(dev), CUDOUBLE_DEVICE);
  /* 16 MiB less 4 on the device: one 7 MiB block at a time. */
  cr_assert_eq(lms_torch_prefetch(&m[0], 1, S1), 1);
  cudouble_alloc_info_t info;
  cudouble_query((uint64_t)(uintptr_t)m[0], &info);
  cr_assert_eq(info.prefetched_to, CU_MEM_LOCATION_TYPE_DEVICE);
  cr_assert_eq(stat("resident"), 7 * MiB);
  cr_assert_eq(lms_torch_prefetch(&m[1], 1, S1), 1);
  cudouble_query((uint64_t)(uintptr_t)m[0], &info);
  cr_assert_eq(info.prefetched_to, CU_MEM_LOCATION_TYPE_HOST, "evicted");
  cr_assert_eq(stat("evictions"), 1);
  /* A batch never evicts its own members: the second is skipped. */
  void *both[2] = {m[2], m[3]};
  cr_assert_eq(lms_torch_prefetch(both, 2, S1), 1);
  cr_assert_eq(stat("hints_skipped"), 1);
  /* Device blocks and unknown pointers are no work. */
  void *other[2] = {dev, (void *)(uintptr_t)0x1234};
  cr_assert_eq(lms_torch_prefetch(other, 2, S1), 0);
  cr_assert_leq(stat("device_peak"), 16 * MiB);
  /* From the first hint on, new device blocks leave the window free. */
  cr_assert_eq(stat("reserve"), 8 * MiB);
  void *d2 = lms_torch_malloc(6 * MiB, 0, S1);
  cr_assert_eq(kind_of(d2), CUDOUBLE_MANAGED, "4 + 6 > 16 - 8");
}

Test(stable, bad_sizes_and_frees_are_refused_by_name) {
  env("64M", NULL);
  cr_assert_null(lms_torch_malloc(0, 0, S1));
  cr_assert_null(lms_torch_malloc(-5, 0, S1));
  cr_assert(strstr(lms_torch_last_error(), "negative") != NULL,
            "%s", lms_torch_last_error());
  cr_assert_null(lms_torch_malloc((ssize_t)1 << 60, 0, S1));
  cr_assert(strstr(lms_torch_last_error(), "2^56") != NULL,
            "%s", lms_torch_last_error());
  int x;
  lms_torch_free(&x, 4, 0, S1);
  cr_assert_eq(stat("bad_frees"), 1);
  void *a = lms_torch_malloc(1000, 0, S1);
  lms_torch_free(a, 1000, 0, S1);
  lms_torch_free(a, 1000, 0, S1); /* twice */
  cr_assert_eq(stat("bad_frees"), 2);
  cr_assert_eq(stat("frees"), 1);
}

Test(stable, a_bad_option_is_named_and_nothing_is_allocated) {
  env("-5G", NULL);
  cr_assert_eq(lms_torch_init(), -1);
  cr_assert(strstr(lms_torch_last_error(), "LMS_GPU_LIMIT") != NULL,
            "%s", lms_torch_last_error());
  cr_assert_null(lms_torch_malloc(1024, 0, S1));
  cudouble_stats_t ds;
  cudouble_stats(&ds);
  cr_assert_eq(ds.alloc_calls + ds.managed_calls, 0);
}

static void *churn(void *arg) {
  cudaStream_t s = (cudaStream_t)arg;
  void *p[16];
  for (int round = 0; round < 200; round++) {
    for (int i = 0; i < 16; i++) {
      p[i] = lms_torch_malloc((ssize_t)((i + 1) * 64 * 1024), 0, s);
      if (p[i] == NULL) return (void *)1;
      memset(p[i], round & 0xff, 64);
    }
    for (int i = 0; i < 16; i++) lms_torch_free(p[i], 0, 0, s);
  }
  return NULL;
}

Test(stable, threads_on_their_own_streams_balance_the_books) {
  env("16M", NULL);
  pthread_t t[4];
  for (uintptr_t i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, churn, (void *)(0x100 * (i + 1)));
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(t[i], &r);
    cr_assert_null(r);
  }
  cr_assert_eq(stat("allocs"), 4 * 200 * 16);
  cr_assert_eq(stat("frees"), 4 * 200 * 16);
  cr_assert_eq(stat("device_live"), 0);
  cr_assert_eq(stat("managed_live"), 0);
  cr_assert_leq(stat("device_peak"), 16 * MiB);
  lms_torch_empty_cache();
  cr_assert_eq(stat("device_held"), 0);
  cudouble_stats_t ds;
  cudouble_stats(&ds);
  cr_assert_eq(ds.device_bytes, 0);
  cr_assert_eq(ds.managed_bytes, 0);
}

static void *alloc_on_fresh_thread(void *arg) {
  (void)arg;
  return lms_torch_malloc(64 * 1024 * 1024, 0, S1); /* past the limit */
}

Test(stable, a_thread_without_a_context_gets_the_primary_one) {
  env("32M", NULL);
  setenv("CUDOUBLE_REQUIRE_CTX", "1", 1);
  /* This thread has no context either: the allocator binds one. */
  void *a = lms_torch_malloc(1024, 0, S1);
  cr_assert_not_null(a, "%s", lms_torch_last_error());
  pthread_t t;
  void *b = NULL;
  pthread_create(&t, NULL, alloc_on_fresh_thread, NULL);
  pthread_join(t, &b);
  cr_assert_not_null(b, "%s", lms_torch_last_error());
  cr_assert_eq(kind_of(b), CUDOUBLE_MANAGED);
  cr_assert_eq(stat("failed"), 0);
}

Test(stable, room_is_made_from_the_largest_cached_blocks_only_as_needed) {
  env("10M", NULL);
  void *a = lms_torch_malloc(2 * MiB, 0, S1);
  void *b = lms_torch_malloc(6 * MiB, 0, S1);
  lms_torch_free(a, 0, 0, S1);
  lms_torch_free(b, 0, 0, S1);
  /* 4 MiB, a class not cached: 8 + 4 > 10, so the 6 MiB block goes. */
  void *c = lms_torch_malloc(4 * MiB, 0, S1);
  cr_assert_eq(kind_of(c), CUDOUBLE_DEVICE);
  cr_assert_eq(stat("driver_frees"), 1);
  cr_assert_eq(stat("syncs"), 1);
  void *d = lms_torch_malloc(2 * MiB, 0, S1);
  cr_assert_eq(d, a, "the 2 MiB block stayed cached");
  lms_torch_free(d, 0, 0, S1);
  /* 4 + 2 cached; 7 MiB needs 1 more than the 4 MiB left free... */
  void *e = lms_torch_malloc(7 * MiB, 0, S1);
  cr_assert_eq(kind_of(e), CUDOUBLE_MANAGED, "2 cached < 7 + 6 - 10");
  cr_assert_eq(stat("syncs"), 1, "no synchronise when it cannot help");
}

/* ---- Note [Learned prefetch from the allocation order] ------------------ */

/* One training step as PyTorch's allocator sees it: the forward pass hands
 * out K activations, with a workspace per layer freed at once; the
 * backward pass frees them in reverse order, each after its last read
 * (here, the check of its bytes), beside a gradient buffer. */
enum { K = 12 };

static void step(void *act[K], unsigned iter, size_t sz) {
  for (unsigned i = 0; i < K; i++) {
    act[i] = lms_torch_malloc((ssize_t)sz, 0, S1);
    cr_assert_not_null(act[i], "%s", lms_torch_last_error());
    fill(act[i], sz, iter * 100 + i);
    void *ws = lms_torch_malloc((ssize_t)MiB, 0, S1);
    cr_assert_not_null(ws);
    lms_torch_free(ws, 0, 0, S1);
  }
  for (unsigned i = K; i-- > 0;) {
    void *g = lms_torch_malloc((ssize_t)MiB, 0, S1);
    cr_assert_not_null(g);
    cr_assert(check(act[i], sz, iter * 100 + i),
              "activation %u of step %u changed", i, iter);
    lms_torch_free(act[i], 0, 0, S1);
    lms_torch_free(g, 0, 0, S1);
  }
}

/* Runs 8 steps; *steady: managed frees of the last 5 steps, and how many
 * of them found their block on the device. */
static void train(uint64_t *frees, uint64_t *on_device) {
  void *act[K];
  size_t sz = 4 * MiB; /* 48 MiB of activations, under a 32 MiB limit */
  for (unsigned it = 0; it < 3; it++) step(act, it, sz);
  uint64_t f0 = stat("managed_frees"), r0 = stat("frees_resident");
  for (unsigned it = 3; it < 8; it++) step(act, it, sz);
  *frees = stat("managed_frees") - f0;
  *on_device = stat("frees_resident") - r0;
}

Test(learned, a_training_loop_is_learned_and_activations_come_back_in_time) {
  env("32M", "1G");
  setenv("LMS_PREFETCH_WINDOW", "64,16M", 1);
  uint64_t frees, on_device;
  train(&frees, &on_device);
  /* A step is 6 events per layer: alloc, workspace alloc and free; in
   * backward a gradient alloc, the activation's free, the gradient's. */
  cr_assert_eq(stat("period"), 6 * K);
  cr_assert_gt(frees, 0, "some activations are managed");
  cr_assert_eq(on_device, frees, "every managed block was brought back "
               "before its free: %lu of %lu", (unsigned long)on_device,
               (unsigned long)frees);
  cr_assert_gt(stat("learned"), 0);
  cr_assert_gt(stat("evictions"), 0, "activations went out between uses");
  cudouble_stats_t ds;
  cudouble_stats(&ds);
  cr_assert_leq(ds.footprint_peak, 32 * MiB, "the driver's own count");
  cr_assert_eq(ds.streams_created, 2, "moves went on streams of its own");
  cr_assert_gt(ds.stream_waits, 0, "evictions waited for the program");
  cr_assert_eq(stat("failed"), 0);
}

Test(learned, without_a_window_nothing_is_learned_or_moved) {
  env("32M", "1G");
  setenv("LMS_PREFETCH_WINDOW", "0", 1);
  uint64_t frees, on_device;
  train(&frees, &on_device);
  cr_assert_gt(frees, 0);
  cr_assert_eq(on_device, 0, "managed blocks are read where they are");
  cr_assert_eq(stat("period"), 0);
  cr_assert_eq(stat("learned") + stat("eager") + stat("prefetches"), 0);
  cudouble_stats_t ds;
  cudouble_stats(&ds);
  cr_assert_eq(ds.prefetch_calls, 0);
  cr_assert_eq(ds.streams_created, 0);
}

Test(learned, an_order_that_never_repeats_finds_no_period) {
  env("32M", "1G");
  setenv("LMS_PREFETCH_WINDOW", "64,16M", 1);
  void *p[K];
  unsigned x = 12345;
  for (unsigned it = 0; it < 8; it++) {
    for (unsigned i = 0; i < K; i++) {
      x = x * 1103515245u + 12345u;
      p[i] = lms_torch_malloc((ssize_t)((1 + (x >> 16) % 64) * 64 * 1024), 0,
                              S1);
      cr_assert_not_null(p[i]);
    }
    for (unsigned i = 0; i < K; i++) lms_torch_free(p[i], 0, 0, S1);
  }
  cr_assert_eq(stat("locks"), 0);
  cr_assert_eq(stat("learned"), 0);
}

Test(learned, a_block_whose_discard_may_still_run_is_not_moved_by_its_streams) {
  env("32M", "1G");
  setenv("LMS_PREFETCH_WINDOW", "64,16M", 1);
  setenv("CUDOUBLE_EVENTS_PENDING", "1", 1);
  uint64_t frees, on_device;
  train(&frees, &on_device); /* every byte still checks */
  cr_assert_eq(stat("period"), 6 * K);
  cr_assert_gt(stat("drops"), 0);
  cr_assert_gt(stat("moves_skipped"), 0);
  cr_assert_eq(stat("learned"), 0, "every managed block was discarded "
               "once (made resident as handed out), and no event says so");
}

Test(learned, without_discard_dead_blocks_are_copied_and_the_loop_still_learns) {
  env("32M", "1G");
  setenv("LMS_PREFETCH_WINDOW", "64,16M", 1);
  setenv("CUDOUBLE_NO_DISCARD", "1", 1);
  uint64_t frees, on_device;
  train(&frees, &on_device);
  cr_assert_eq(stat("drops"), 0);
  cr_assert_eq(on_device, frees);
  cudouble_stats_t ds;
  cudouble_stats(&ds);
  cr_assert_eq(ds.discards, 0);
  cr_assert_leq(ds.footprint_peak, 32 * MiB);
}

Test(learned, dead_resident_blocks_are_dropped_uncopied_before_live_ones_move) {
  env("32M", "1G");
  setenv("LMS_PREFETCH_WINDOW", "1000,16M", 1);
  setenv("LMS_KB", "1024", 1); /* every block of 1 MiB or more is managed */
  setenv("LMS_FRAC", "0", 1);
  void *m[4];
  for (unsigned i = 0; i < 4; i++) { /* 32 MiB, all made resident */
    m[i] = lms_torch_malloc((ssize_t)(8 * MiB), 0, NULL);
    cr_assert_eq(kind_of(m[i]), CUDOUBLE_MANAGED);
    fill(m[i], 8 * MiB, i);
  }
  cr_assert_eq(stat("eager"), 4);
  cr_assert_eq(stat("resident"), 32 * MiB);
  lms_torch_free(m[0], 0, 0, NULL); /* the legacy stream */
  void *e = lms_torch_malloc((ssize_t)(7 * MiB), 0, NULL); /* another class */
  cr_assert_eq(stat("drops"), 1);
  cr_assert_eq(stat("evictions"), 0, "no live block moved, no byte copied");
  cudouble_alloc_info_t info;
  cudouble_query((uint64_t)(uintptr_t)m[0], &info);
  cr_assert_eq(info.prefetched_to, CU_MEM_LOCATION_TYPE_HOST);
  cr_assert_eq(info.prefetch_stream, 2, "the per-thread stream stands in for the legacy one");
  cudouble_query((uint64_t)(uintptr_t)e, &info);
  cr_assert_eq(info.prefetched_to, CU_MEM_LOCATION_TYPE_DEVICE);
  for (unsigned i = 1; i < 4; i++)
    cr_assert(check(m[i], 8 * MiB, i), "block %u changed", i);
}

/* The one placement rule (core/placement.h) through this front end, on a
 * case tests/test_placement.c checks on the rule itself: -lms_frac 0.57 of
 * a 100 MiB limit is exactly 57 MiB, and a block that brings the device
 * exactly there is not past it, so it stays on the device; one more byte
 * is.  (The product 0.57 x 100 MiB in doubles lands under 57 MiB: the
 * allocator's own copy of the rule put the 1 MiB block in managed memory,
 * where handle mode kept it on the device.) */
Test(stable, the_decimal_edge_of_lms_frac_is_the_rule_of_every_front_end) {
  env("100M", NULL);
  setenv("LMS_KB", "0", 1);
  setenv("LMS_FRAC", "0.57", 1);
  cr_assert_eq(lms_torch_init(), 0, "%s", lms_torch_last_error());
  void *a = lms_torch_malloc(56 * MiB, 0, S1);
  cr_assert_not_null(a);
  cr_assert_eq(kind_of(a), CUDOUBLE_DEVICE);
  void *b = lms_torch_malloc(MiB, 0, S1); /* demand exactly 57 MiB */
  cr_assert_not_null(b);
  cr_assert_eq(kind_of(b), CUDOUBLE_DEVICE);
  void *c = lms_torch_malloc(512, 0, S1); /* past it */
  cr_assert_not_null(c);
  cr_assert_eq(kind_of(c), CUDOUBLE_MANAGED);
}
