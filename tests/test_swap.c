/* test_swap.c - the handle-mode API over residency: bytes survive every
 * swap, clean chunks are dropped and dirty ones written back, acquired
 * chunks stay put, and misuse is refused with a message. */
#include <criterion/criterion.h>
#include "check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/ctx.h"
#include "support.h"

static lms_ctx_t *ctx;
static lms_stream_t s;

static void up(void) {
  cr_assert(eq(int, lms_test_open("4MiB", &ctx, &s), LMS_OK));
}

static void down(void) { cr_assert(eq(int, lms_test_close(ctx, s), LMS_OK)); }

static lms_chunk_t *alloc(size_t n) {
  lms_chunk_t *c = NULL;
  cr_assert(eq(int, lms_alloc(ctx, n, &c), LMS_OK), "%s", lms_ctx_last_error(ctx));
  return c;
}

Test(swap, bytes_survive_eviction_and_return, .init = up, .fini = down) {
  enum { N = 12 };
  lms_chunk_t *c[N];
  uint64_t sum[N];
  lms_status_t st;
  /* 12 x 1 MiB through a 4 MiB budget: most are evicted along the way. */
  for (int i = 0; i < N; i++) {
    c[i] = alloc(1 << 20);
    sum[i] = lms_test_write(ctx, c[i], s, (uint64_t)i + 1, &st);
    cr_assert(eq(int, st, LMS_OK), "%s", lms_ctx_last_error(ctx));
  }
  lms_stats_t a = lms_test_stats(ctx);
  cr_assert(gt(i64, a.swaps_out.total, 0));
  cr_assert(le(i64, a.device_reserved.peak, 4 << 20));
  for (int round = 0; round < 3; round++)
    for (int i = 0; i < N; i++) {
      cr_assert(eq(u64, lms_test_read(ctx, c[i], s, &st), sum[i]));
      cr_assert(eq(int, st, LMS_OK));
    }
  for (int i = 0; i < N; i++) cr_assert(eq(int, lms_free(ctx, c[i]), LMS_OK));
  lms_stats_t b = lms_test_stats(ctx);
  cr_assert(eq(i64, b.chunks.current, 0));
  cr_assert(eq(i64, b.host_allocated.current, 0));
  cr_assert(eq(i64, b.device_allocated.current, 0));
}

Test(swap, clean_chunks_are_dropped_dirty_written_back, .init = up,
     .fini = down) {
  lms_status_t st;
  lms_chunk_t *a = alloc(3 << 20), *b = alloc(3 << 20);
  uint64_t sa = lms_test_write(ctx, a, s, 7, &st);
  cr_assert(eq(int, st, LMS_OK));
  lms_stats_t s0 = lms_test_stats(ctx);
  /* b's first visit evicts a, which was written: one write-back. */
  lms_test_read(ctx, b, s, &st);
  cr_assert(eq(int, st, LMS_OK));
  lms_stats_t s1 = lms_test_stats(ctx);
  cr_assert(eq(i64, s1.swaps_out.total - s0.swaps_out.total, 1));
  cr_assert(eq(i64, s1.bytes_d2h.total - s0.bytes_d2h.total, 3 << 20));
  /* a comes back and is only read; b, only read, is dropped without a copy. */
  cr_assert(eq(u64, lms_test_read(ctx, a, s, &st), sa));
  lms_stats_t s2 = lms_test_stats(ctx);
  cr_assert(eq(i64, s2.drops.total - s1.drops.total, 1));
  cr_assert(eq(i64, s2.bytes_d2h.total, s1.bytes_d2h.total));
  /* And a, clean now, is dropped in turn. */
  lms_test_read(ctx, b, s, &st);
  lms_stats_t s3 = lms_test_stats(ctx);
  cr_assert(eq(i64, s3.drops.total - s2.drops.total, 1));
  cr_assert(eq(i64, s3.bytes_d2h.total, s1.bytes_d2h.total));
  cr_assert(eq(u64, lms_test_read(ctx, a, s, &st), sa));
}

/* A discarded chunk leaves the device without a write-back, comes back
 * without a copy, and nothing else changes; an acquired one is refused. */
Test(swap, discarded_bytes_are_never_copied, .init = up, .fini = down) {
  lms_status_t st;
  lms_chunk_t *a = alloc(3 << 20), *b = alloc(1 << 20), *c = alloc(3 << 20);
  uint64_t sb = lms_test_write(ctx, b, s, 11, &st);
  cr_assert(eq(int, st, LMS_OK));
  lms_test_write(ctx, a, s, 7, &st);
  cr_assert(eq(int, st, LMS_OK));
  cr_assert(lms_chunk_resident(ctx, a));
  /* Refused while acquired, with the reason; nothing changes. */
  void *p = NULL;
  cr_assert(eq(int, lms_acquire(ctx, a, s, LMS_ACCESS_READ, &p), LMS_OK));
  cr_assert(eq(int, lms_discard(ctx, a), LMS_ERR_BUSY));
  cr_assert(strstr(lms_ctx_last_error(ctx), "release it first") != NULL, "%s",
            lms_ctx_last_error(ctx));
  cr_assert(eq(int, lms_release(ctx, a, s), LMS_OK));
  lms_stats_t s0 = lms_test_stats(ctx);
  cr_assert(eq(int, lms_discard(ctx, a), LMS_OK));
  cr_assert(not(lms_chunk_resident(ctx, a)), "the dead copy was kept");
  lms_stats_t s1 = lms_test_stats(ctx);
  cr_assert(eq(i64, s1.bytes_d2h.total, s0.bytes_d2h.total),
            "dead bytes were written back");
  cr_assert(eq(i64, s1.swaps_out.total, s0.swaps_out.total));
  /* c needs the room a held: nothing of a is copied out for it. */
  lms_test_write(ctx, c, s, 8, &st);
  cr_assert(eq(int, st, LMS_OK));
  /* a comes back for reading without a copy in (its bytes are undefined),
   * and is written anew. */
  lms_stats_t s2 = lms_test_stats(ctx);
  cr_assert(eq(int, lms_acquire(ctx, a, s, LMS_ACCESS_READ, &p), LMS_OK));
  cr_assert(eq(int, lms_release(ctx, a, s), LMS_OK));
  lms_stats_t s3 = lms_test_stats(ctx);
  cr_assert(eq(i64, s3.bytes_h2d.total, s2.bytes_h2d.total),
            "discarded bytes were brought back");
  uint64_t sa = lms_test_write(ctx, a, s, 9, &st);
  cr_assert(eq(int, st, LMS_OK));
  cr_assert(eq(u64, lms_test_read(ctx, a, s, &st), sa));
  /* The other chunks kept their bytes; a second discard, and one of a
   * chunk not resident, are harmless; what is no chunk is refused. */
  cr_assert(eq(u64, lms_test_read(ctx, b, s, &st), sb));
  cr_assert(eq(int, lms_discard(ctx, c), LMS_OK));
  cr_assert(eq(int, lms_discard(ctx, c), LMS_OK));
  cr_assert(eq(int, lms_free(ctx, c), LMS_OK));
  lms_chunk_t fake;
  memset(&fake, 0, sizeof fake);
  cr_assert(eq(int, lms_discard(ctx, &fake), LMS_ERR_INVALID));
  cr_assert(strstr(lms_ctx_last_error(ctx), "lms_discard: not a live chunk") !=
            NULL);
  cr_assert(eq(u64, lms_test_read(ctx, a, s, &st), sa));
}

Test(swap, acquired_chunk_is_never_evicted, .init = up, .fini = down) {
  lms_status_t st;
  lms_chunk_t *a = alloc(2 << 20), *b = alloc(1 << 20), *c = alloc(2 << 20);
  void *pa = NULL, *pb = NULL, *pc = NULL;
  cr_assert(eq(int, lms_acquire(ctx, a, s, LMS_ACCESS_RW, &pa), LMS_OK));
  lms_test_fill(pa, 2 << 20, 11);
  uint64_t sa = lms_test_checksum(pa, 2 << 20);
  cr_assert(eq(int, lms_acquire(ctx, b, s, LMS_ACCESS_RW, &pb), LMS_OK));
  /* 2 + 1 MiB held: 2 more cannot fit a 4 MiB budget. */
  cr_assert(eq(int, lms_acquire(ctx, c, s, LMS_ACCESS_READ, &pc),
               LMS_ERR_DEVICE_OOM));
  cr_assert(strstr(lms_ctx_last_error(ctx), "--gpu-limit") != NULL,
            "%s", lms_ctx_last_error(ctx));
  cr_assert(lms_chunk_resident(ctx, a));
  cr_assert(eq(u64, lms_test_checksum(pa, 2 << 20), sa));
  /* Once b is released the same acquire succeeds by evicting b. */
  cr_assert(eq(int, lms_release(ctx, b, s), LMS_OK));
  cr_assert(eq(int, lms_acquire(ctx, c, s, LMS_ACCESS_READ, &pc), LMS_OK));
  cr_assert(not(lms_chunk_resident(ctx, b)));
  cr_assert(lms_chunk_resident(ctx, a));
  lms_release(ctx, c, s);
  lms_release(ctx, a, s);
  cr_assert(eq(u64, lms_test_read(ctx, a, s, &st), sa));
}

Test(swap, nested_acquires_pin_until_the_last_release, .init = up,
     .fini = down) {
  lms_chunk_t *a = alloc(3 << 20), *b = alloc(3 << 20);
  void *p1 = NULL, *p2 = NULL, *pb = NULL;
  cr_assert(eq(int, lms_acquire(ctx, a, s, LMS_ACCESS_READ, &p1), LMS_OK));
  cr_assert(eq(int, lms_acquire(ctx, a, s, LMS_ACCESS_READ, &p2), LMS_OK));
  cr_assert(eq(ptr, p1, p2));
  cr_assert(eq(int, lms_release(ctx, a, s), LMS_OK));
  cr_assert(eq(int, lms_acquire(ctx, b, s, LMS_ACCESS_READ, &pb),
               LMS_ERR_DEVICE_OOM));
  cr_assert(eq(int, lms_release(ctx, a, s), LMS_OK));
  cr_assert(eq(int, lms_acquire(ctx, b, s, LMS_ACCESS_READ, &pb), LMS_OK));
  cr_assert(not(lms_chunk_resident(ctx, a)));
  lms_release(ctx, b, s);
}

Test(swap, misuse_is_refused_with_a_message, .init = up, .fini = down) {
  lms_chunk_t *a = alloc(4096), *none = NULL;
  void *p = NULL;
  cr_assert(eq(int, lms_release(ctx, a, s), LMS_ERR_INVALID));
  cr_assert(strstr(lms_ctx_last_error(ctx), "not acquired") != NULL);
  cr_assert(eq(int, lms_acquire(ctx, a, s, 0, &p), LMS_ERR_INVALID));
  cr_assert(eq(int, lms_acquire(ctx, a, s, 8, &p), LMS_ERR_INVALID));
  cr_assert(strstr(lms_ctx_last_error(ctx), "LMS_ACCESS_READ") != NULL);
  cr_assert(eq(int, lms_acquire(ctx, a, NULL, LMS_ACCESS_READ, &p),
               LMS_ERR_INVALID));
  cr_assert(eq(int, lms_alloc(ctx, 0, &none), LMS_ERR_INVALID));
  cr_assert(eq(int, lms_alloc(ctx, (size_t)5 << 20, &none), LMS_ERR_INVALID));
  cr_assert(strstr(lms_ctx_last_error(ctx), "--gpu-limit") != NULL);
  cr_assert(eq(ptr, none, NULL));
  cr_assert(eq(int, lms_acquire(ctx, a, s, LMS_ACCESS_READ, &p), LMS_OK));
  cr_assert(eq(int, lms_free(ctx, a), LMS_ERR_BUSY));
  cr_assert(eq(int, lms_release(ctx, a, s), LMS_OK));
  cr_assert(eq(int, lms_free(ctx, a), LMS_OK));
  /* A freed handle is no longer a chunk. */
  lms_chunk_t fake;
  memset(&fake, 0, sizeof fake);
  cr_assert(eq(int, lms_acquire(ctx, &fake, s, LMS_ACCESS_READ, &p),
               LMS_ERR_INVALID));
  cr_assert(eq(int, lms_free(ctx, &fake), LMS_ERR_INVALID));
}

Test(swap, lookup_maps_device_and_home_addresses, .init = up, .fini = down) {
  lms_chunk_t *a = alloc(100000), *got = NULL;
  void *p = NULL;
  size_t off = 0;
  cr_assert(eq(int, lms_acquire(ctx, a, s, LMS_ACCESS_READ, &p), LMS_OK));
  cr_assert(eq(int, lms_chunk_lookup(ctx, (char *)p + 4321, &got, &off), LMS_OK));
  cr_assert(eq(ptr, got, a));
  cr_assert(eq(sz, off, 4321));
  cr_assert(eq(int, lms_chunk_lookup(ctx, (char *)p + 99999, &got, &off), LMS_OK));
  cr_assert(eq(sz, off, 99999));
  cr_assert(eq(int, lms_chunk_lookup(ctx, (char *)p + 100000, &got, &off),
               LMS_ERR_INVALID));
  /* The home is registered too. */
  cr_assert(eq(int, lms_chunk_lookup(ctx, a->home, &got, &off), LMS_OK));
  cr_assert(eq(ptr, got, a));
  lms_release(ctx, a, s);
  int local = 0;
  cr_assert(eq(int, lms_chunk_lookup(ctx, &local, &got, &off), LMS_ERR_INVALID));
}

Test(swap, placement_follows_the_lms_options) {
  /* -lms 64 (KB) with -lms_frac 0: 64 KiB and up go to the host. */
  lms_options_t *o = NULL;
  lms_ctx_t *c = NULL;
  cr_assert(eq(int, lms_options_create(&o), LMS_OK));
  lms_options_set(o, "device", "sim");
  lms_options_set(o, "gpu-limit", "8MiB");
  lms_options_set(o, "lms", "64");
  lms_options_set(o, "log", "none");
  cr_assert(eq(int, lms_ctx_create(o, &c), LMS_OK));
  lms_chunk_t *small = NULL, *big = NULL;
  cr_assert(eq(int, lms_alloc(c, 65535, &small), LMS_OK));
  cr_assert(eq(int, lms_alloc(c, 65536, &big), LMS_OK));
  cr_assert(not(lms_chunk_host_homed(small)));
  cr_assert(lms_chunk_host_homed(big));
  cr_assert(lms_chunk_resident(c, small));
  cr_assert(not(lms_chunk_resident(c, big)));
  lms_free(c, small);
  lms_free(c, big);
  lms_ctx_destroy(c);
  lms_options_destroy(o);
}

Test(swap, host_limit_gives_host_oom_and_recovers) {
  lms_ctx_t *c = lms_test_ctx("16MiB", "0", "8MiB");
  cr_assert(c != NULL);
  lms_chunk_t *ch[64] = {0};
  int n = 0;
  lms_status_t st = LMS_OK;
  while (n < 64 && (st = lms_alloc(c, 1 << 20, &ch[n])) == LMS_OK) n++;
  cr_assert(eq(int, st, LMS_ERR_HOST_OOM));
  cr_assert(strstr(lms_ctx_last_error(c), "--host-limit") != NULL, "%s",
            lms_ctx_last_error(c));
  cr_assert(gt(int, n, 0));
  lms_stats_t sts;
  lms_stats_get(c, &sts);
  cr_assert(le(i64, sts.host_pinned.current, 8 << 20));
  cr_assert(eq(i64, sts.host_ooms.total, 1));
  cr_assert(eq(int, lms_free(c, ch[n - 1]), LMS_OK));
  cr_assert(eq(int, lms_alloc(c, 1 << 20, &ch[n - 1]), LMS_OK));
  lms_ctx_destroy(c);
}

Test(swap, compute_waits_for_the_swap_in, .init = up, .fini = down) {
  /* 1 MiB over pcie3 takes latency + 2^20 / 12.2e9 s; work enqueued on the
   * acquiring stream cannot start before that. */
  lms_chunk_t *a = alloc(1 << 20);
  void *p = NULL;
  lms_status_t st;
  lms_test_write(ctx, a, s, 3, &st);
  cr_assert(eq(int, st, LMS_OK));
  cr_assert(eq(int, lms__swap_evict_all(&ctx->swap), LMS_OK));
  cr_assert(eq(int, lms__swap_sync(&ctx->swap), LMS_OK));
  cr_assert(eq(int, lms_stream_sync(ctx, s), LMS_OK));
  uint64_t t0 = lms_now_ns(ctx);
  cr_assert(eq(int, lms_acquire(ctx, a, s, LMS_ACCESS_READ, &p), LMS_OK));
  cr_assert(eq(int, lms_compute(ctx, s, 1000), LMS_OK));
  cr_assert(eq(int, lms_stream_sync(ctx, s), LMS_OK));
  uint64_t copy_ns = 10000 + (uint64_t)((double)(1 << 20) / 12.2);
  cr_assert(ge(u64, lms_now_ns(ctx) - t0, copy_ns + 1000 - 1));
  lms_release(ctx, a, s);
}

Test(swap, stats_file_is_written_at_destroy) {
  char path[] = "/tmp/lms_stats_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  lms_options_t *o = NULL;
  lms_ctx_t *c = NULL;
  lms_options_create(&o);
  lms_options_set(o, "device", "sim");
  lms_options_set(o, "gpu-limit", "4MiB");
  lms_options_set(o, "lms", "0");
  lms_options_set(o, "stats", path);
  cr_assert(eq(int, lms_ctx_create(o, &c), LMS_OK));
  lms_stream_t st;
  lms_stream_create(c, &st);
  lms_chunk_t *a = NULL;
  lms_status_t rs;
  lms_alloc(c, 1 << 20, &a);
  lms_test_write(c, a, st, 1, &rs);
  lms_stream_destroy(c, st);
  cr_assert(eq(int, lms_ctx_destroy(c), LMS_OK));
  lms_options_destroy(o);
  FILE *f = fopen(path, "r");
  cr_assert(f != NULL);
  char buf[8192] = {0};
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  unlink(path);
  cr_assert(gt(sz, n, 0));
  cr_assert(strstr(buf, "\"version\": 2") != NULL);
  /* A chunk never written has nothing to bring in: no bytes move. */
  cr_assert(strstr(buf, "\"bytes_h2d\": {\"current\": 0") != NULL, "%s", buf);
  cr_assert(strstr(buf, "\"steps\": {\"current\": 1") != NULL, "%s", buf);
}

/* Note [Writing back ahead]: the chunks the schedule would evict first are
 * written home ahead and stay resident, clean; only the first `bytes` of
 * them in furthest-next-use order, only those not needed before `after`;
 * evicting them later copies nothing, a chunk written again is written
 * home again, and no byte changes on the way. */
typedef struct uses_of {
  lms_chunk_t *c[3];
  uint64_t next[3];
} uses_of_t;

static uint64_t table_next_use(void *arg, const lms_chunk_t *c) {
  const uses_of_t *u = arg;
  for (int i = 0; i < 3; i++)
    if (u->c[i] == c) return u->next[i];
  return LMS__NEVER;
}

Test(swap, writing_back_ahead_keeps_bytes_and_makes_eviction_free,
     .init = up, .fini = down) {
  lms_status_t st;
  lms__swap_t *sw = &ctx->swap;
  uses_of_t u = {.c = {alloc(1 << 20), alloc(1 << 20), alloc(1 << 20)},
                 .next = {100, 50, 5}};
  uint64_t sum[3];
  for (int i = 0; i < 3; i++) {
    sum[i] = lms_test_write(ctx, u.c[i], s, (uint64_t)i + 11, &st);
    cr_assert(eq(int, st, LMS_OK));
    cr_assert(eq(int, u.c[i]->dirty, 1));
    cr_assert(ne(ptr, u.c[i]->dptr, NULL));
  }
  lms__next_use_fn saved = sw->next_use;
  void *saved_arg = sw->next_use_arg;
  sw->next_use = table_next_use;
  sw->next_use_arg = &u;
  lms__swap_use_index(sw, 1); /* as a schedule does */
  lms_stats_t s0 = lms_test_stats(ctx);
  /* 1 MiB of budget: only the furthest, c[0], is written. */
  cr_assert(eq(int, lms__swap_clean_ahead(sw, 1 << 20, 10), LMS_OK));
  lms_stats_t s1 = lms_test_stats(ctx);
  cr_assert(eq(i64, s1.swaps_out.total - s0.swaps_out.total, 1));
  cr_assert(eq(i64, s1.bytes_d2h.total - s0.bytes_d2h.total, 1 << 20));
  cr_assert(eq(int, u.c[0]->dirty, 0));
  cr_assert(ne(ptr, u.c[0]->dptr, NULL));
  cr_assert(eq(int, u.c[1]->dirty, 1));
  cr_assert(eq(int, u.c[2]->dirty, 1));
  /* A larger budget counts c[0] again, clean, then writes c[1]; c[2] is
   * needed before step 10 and stays dirty. */
  cr_assert(eq(int, lms__swap_clean_ahead(sw, 8 << 20, 10), LMS_OK));
  lms_stats_t s2 = lms_test_stats(ctx);
  cr_assert(eq(i64, s2.swaps_out.total - s1.swaps_out.total, 1));
  cr_assert(eq(int, u.c[1]->dirty, 0));
  cr_assert(ne(ptr, u.c[1]->dptr, NULL));
  cr_assert(eq(int, u.c[2]->dirty, 1));
  lms__swap_use_index(sw, 0);
  sw->next_use = saved;
  sw->next_use_arg = saved_arg;
  /* c[1] is written again after its copy home: dirty again. */
  sum[1] = lms_test_write(ctx, u.c[1], s, 99, &st);
  cr_assert(eq(int, st, LMS_OK));
  cr_assert(eq(int, u.c[1]->dirty, 1));
  /* Evicting all: c[0] is dropped, c[1] and c[2] are written home. */
  cr_assert(eq(int, lms__swap_evict_all(sw), LMS_OK));
  lms_stats_t s3 = lms_test_stats(ctx);
  cr_assert(eq(i64, s3.swaps_out.total - s2.swaps_out.total, 2));
  cr_assert(eq(i64, s3.drops.total - s2.drops.total, 1));
  for (int i = 0; i < 3; i++) {
    cr_assert(eq(ptr, u.c[i]->dptr, NULL));
    cr_assert(eq(u64, lms_test_read(ctx, u.c[i], s, &st), sum[i]),
              "chunk %d", i);
    cr_assert(eq(int, st, LMS_OK));
  }
  for (int i = 0; i < 3; i++) cr_assert(eq(int, lms_free(ctx, u.c[i]), LMS_OK));
}

/* The schedule's next-use hooks, saved while a table stands in for them
 * (its on_change hook takes next_use_arg for its plan, so it is off). */
typedef struct saved_uses {
  lms__next_use_fn next_use;
  void *arg;
  void (*on_change)(void *, const lms_chunk_t *);
} saved_uses_t;

static saved_uses_t table_on(lms__swap_t *sw, uses_of_t *u) {
  saved_uses_t k = {sw->next_use, sw->next_use_arg, sw->on_change};
  sw->on_change = NULL;
  sw->next_use = table_next_use;
  sw->next_use_arg = u;
  lms__swap_use_index(sw, 1);
  return k;
}

static void table_off(lms__swap_t *sw, saved_uses_t k) {
  lms__swap_use_index(sw, 0);
  sw->next_use = k.next_use;
  sw->next_use_arg = k.arg;
  sw->on_change = k.on_change;
}

/* Note [A planned copy takes clean room] in swap/residency.c: with no
 * room for a copy in, a planned one (LMS__PREFETCH_CLEAN) evicts the
 * victim by next use only if it is clean, and otherwise leaves it, dirty
 * and resident, with nothing copied; the window's (no flag) writes it
 * home.  Bytes survive both ways.  Without the rule the first prefetch
 * evicts `a` and the test fails. */
Test(swap, a_planned_copy_in_evicts_only_a_clean_chunk, .init = up,
     .fini = down) {
  lms_status_t st;
  lms__swap_t *sw = &ctx->swap;
  /* Two chunks of 3 MiB under 4 MiB: one on the device at a time. */
  uses_of_t u = {.c = {alloc(3 << 20), alloc(3 << 20), NULL},
                 .next = {100, 5, 0}};
  lms_chunk_t *a = u.c[0], *b = u.c[1];
  uint64_t sb = lms_test_write(ctx, b, s, 21, &st);
  cr_assert(eq(int, st, LMS_OK));
  uint64_t sa = lms_test_write(ctx, a, s, 22, &st);
  cr_assert(eq(int, st, LMS_OK));
  cr_assert(eq(ptr, b->dptr, NULL));
  cr_assert(ne(ptr, a->dptr, NULL));
  cr_assert(eq(int, a->dirty, 1));
  saved_uses_t k = table_on(sw, &u);
  lms_stats_t s0 = lms_test_stats(ctx);
  cr_assert(eq(int, lms__swap_prefetch(sw, b, 5, LMS__PREFETCH_CLEAN),
               LMS_NOT_READY));
  lms_stats_t s1 = lms_test_stats(ctx);
  cr_assert(ne(ptr, a->dptr, NULL));
  cr_assert(eq(int, a->dirty, 1));
  cr_assert(eq(ptr, b->dptr, NULL));
  cr_assert(eq(i64, s1.swaps_out.total, s0.swaps_out.total));
  cr_assert(eq(i64, s1.bytes_h2d.total, s0.bytes_h2d.total));
  /* The window's copy in writes a home to make room. */
  cr_assert(eq(int, lms__swap_prefetch(sw, b, 5, 0), LMS_OK),
            "%s", lms_ctx_last_error(ctx));
  lms_stats_t s2 = lms_test_stats(ctx);
  cr_assert(eq(ptr, a->dptr, NULL));
  cr_assert(ne(ptr, b->dptr, NULL));
  cr_assert(eq(i64, s2.swaps_out.total - s1.swaps_out.total, 1));
  table_off(sw, k);
  cr_assert(eq(u64, lms_test_read(ctx, b, s, &st), sb));
  cr_assert(eq(int, st, LMS_OK));
  /* a comes back, read only: clean.  b, read only, is clean on its host
   * copy and leaves without a copy. */
  cr_assert(eq(u64, lms_test_read(ctx, a, s, &st), sa));
  cr_assert(eq(int, st, LMS_OK));
  cr_assert(eq(int, a->dirty, 0));
  cr_assert(eq(ptr, b->dptr, NULL));
  k = table_on(sw, &u);
  lms_stats_t s3 = lms_test_stats(ctx);
  /* Clean, a makes room for the planned copy: dropped, nothing written. */
  cr_assert(eq(int, lms__swap_prefetch(sw, b, 5, LMS__PREFETCH_CLEAN),
               LMS_OK), "%s", lms_ctx_last_error(ctx));
  lms_stats_t s4 = lms_test_stats(ctx);
  cr_assert(eq(ptr, a->dptr, NULL));
  cr_assert(ne(ptr, b->dptr, NULL));
  cr_assert(eq(i64, s4.drops.total - s3.drops.total, 1));
  cr_assert(eq(i64, s4.bytes_d2h.total, s3.bytes_d2h.total));
  table_off(sw, k);
  cr_assert(eq(u64, lms_test_read(ctx, b, s, &st), sb));
  cr_assert(eq(u64, lms_test_read(ctx, a, s, &st), sa));
  cr_assert(eq(int, st, LMS_OK));
  cr_assert(eq(int, lms_free(ctx, a), LMS_OK));
  cr_assert(eq(int, lms_free(ctx, b), LMS_OK));
}
