/* test_framework.c - autograd mode (lms.h, "memory the framework owns"):
 * a framework's bytes copied into host-homed chunks come back intact
 * through DLPack tensors, are never written back, are prefetched in the
 * learned order of a training loop, and bad shapes are refused. */
#include <criterion/criterion.h>
#include "check.h"
#include <stdlib.h>
#include <string.h>

#include "api/ctx.h"
#include "support.h"

static lms_ctx_t *ctx;
static lms_stream_t s;

static void up(void) {
  cr_assert(eq(int, lms_test_open("8MiB", &ctx, &s), LMS_OK));
}

static void down(void) { cr_assert(eq(int, lms_test_close(ctx, s), LMS_OK)); }

/* The DLPack 0.x layout the API returns, as a consumer sees it. */
typedef struct {
  void *data;
  int32_t device_type, device_id;
  int32_t ndim;
  uint8_t code, bits;
  uint16_t lanes;
  int64_t *shape, *strides;
  uint64_t byte_offset;
} dl_tensor_t;
typedef struct dl_managed {
  dl_tensor_t t;
  void *manager_ctx;
  void (*deleter)(struct dl_managed *);
} dl_managed_t;

static lms_tensor_desc_t flat(size_t n) {
  lms_tensor_desc_t d = {.ndim = 1, .dtype_code = 1, .dtype_bits = 8};
  d.shape[0] = (int64_t)n;
  d.strides[0] = 1;
  return d;
}

/* Offloads a copy of src; waits until the source may be reused. */
static lms_chunk_t *save(const void *src, size_t n) {
  lms_chunk_t *c = NULL;
  cr_assert(eq(int, lms_alloc_copy(ctx, src, n, s, &c), LMS_OK), "%s",
            lms_ctx_last_error(ctx));
  return c;
}

static dl_managed_t *unpack(lms_chunk_t *c, size_t n) {
  lms_tensor_desc_t d = flat(n);
  void *m = NULL;
  cr_assert(eq(int, lms_acquire_dlpack(ctx, c, s, &d, &m), LMS_OK), "%s",
            lms_ctx_last_error(ctx));
  return m;
}

Test(framework, saved_bytes_come_back_and_are_never_written_back,
     .init = up, .fini = down) {
  enum { N = 6, SZ = 3 << 20 };
  lms_chunk_t *c[N];
  uint64_t sum[N];
  char *src = malloc(SZ);
  for (int i = 0; i < N; i++) {
    lms_test_fill(src, SZ, (uint64_t)i + 7);
    sum[i] = lms_test_checksum(src, SZ);
    c[i] = save(src, SZ);
    cr_assert(eq(int, lms_chunk_host_homed(c[i]), 1));
    cr_assert(eq(int, lms_chunk_resident(ctx, c[i]), 0));
    cr_assert(eq(int, lms_stream_sync(ctx, s), LMS_OK));
    while (lms_chunk_query(ctx, c[i]) == LMS_NOT_READY) {
    }
    /* The framework reuses its memory at once. */
    memset(src, 0xee, SZ);
  }
  free(src);
  /* 18 MiB of saved bytes through an 8 MiB budget, read twice each. */
  for (int round = 0; round < 2; round++)
    for (int i = N - 1; i >= 0; i--) {
      dl_managed_t *m = unpack(c[i], SZ);
      cr_assert(eq(int, m->t.device_type, 1)); /* CPU memory on the sim */
      cr_assert(eq(int, m->t.ndim, 1));
      cr_assert(eq(i64, m->t.shape[0], SZ));
      cr_assert(eq(int, lms_chunk_resident(ctx, c[i]), 1));
      cr_assert(eq(u64, lms_test_checksum(m->t.data, SZ), sum[i]));
      m->deleter(m);
    }
  lms_stats_t a = lms_test_stats(ctx);
  cr_assert(eq(i64, a.bytes_d2h.total, (int64_t)N * SZ),
            "only the copies out of the framework travel to the host");
  cr_assert(eq(i64, a.swaps_out.total, 0));
  cr_assert(gt(i64, a.drops.total, 0));
  cr_assert(le(i64, a.device_allocated.peak, 8 << 20));
  for (int i = 0; i < N; i++)
    cr_assert(eq(int, lms_free_when_released(ctx, c[i]), LMS_OK));
  cr_assert(eq(i64, lms_test_stats(ctx).chunks.current, 0));
}

Test(framework, a_chunk_is_freed_when_its_last_tensor_dies, .init = up,
     .fini = down) {
  char buf[4096];
  lms_test_fill(buf, sizeof buf, 3);
  lms_chunk_t *c = save(buf, sizeof buf);
  dl_managed_t *a = unpack(c, sizeof buf), *b = unpack(c, sizeof buf);
  cr_assert(eq(int, lms_free_when_released(ctx, c), LMS_OK));
  cr_assert(eq(i64, lms_test_stats(ctx).chunks.current, 1),
            "two tensors still read it");
  cr_assert(eq(int, lms_free(ctx, c), LMS_ERR_BUSY));
  a->deleter(a);
  cr_assert(eq(i64, lms_test_stats(ctx).chunks.current, 1));
  cr_assert(eq(u64, lms_test_checksum(b->t.data, sizeof buf),
               lms_test_checksum(buf, sizeof buf)));
  b->deleter(b);
  cr_assert(eq(i64, lms_test_stats(ctx).chunks.current, 0));
}

Test(framework, a_view_keeps_its_shape_strides_and_offset, .init = up,
     .fini = down) {
  float v[24];
  for (int i = 0; i < 24; i++) v[i] = (float)i;
  lms_chunk_t *c = save(v, sizeof v);
  /* The transpose of rows 1..2 of a 3x8 matrix: shape 8x2, strides 1x8. */
  lms_tensor_desc_t d = {.ndim = 2, .dtype_code = 2, .dtype_bits = 32,
                         .byte_offset = 8 * sizeof(float)};
  d.shape[0] = 8, d.shape[1] = 2;
  d.strides[0] = 1, d.strides[1] = 8;
  void *p = NULL;
  cr_assert(eq(int, lms_acquire_dlpack(ctx, c, s, &d, &p), LMS_OK));
  dl_managed_t *m = p;
  const float *f = m->t.data;
  cr_assert(eq(i64, m->t.strides[1], 8));
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 2; j++)
      cr_assert(eq(flt, f[i * m->t.strides[0] + j * m->t.strides[1]],
                   (float)((1 + j) * 8 + i)));
  m->deleter(m);
  cr_assert(eq(int, lms_free_when_released(ctx, c), LMS_OK));
}

Test(framework, shapes_past_the_chunk_and_bad_dtypes_are_refused,
     .init = up, .fini = down) {
  char buf[1000];
  memset(buf, 1, sizeof buf);
  lms_chunk_t *c = save(buf, sizeof buf);
  void *m = (void *)1;
  lms_tensor_desc_t d = flat(1001);
  cr_assert(eq(int, lms_acquire_dlpack(ctx, c, s, &d, &m), LMS_ERR_INVALID));
  cr_assert(m == NULL);
  cr_assert(strstr(lms_ctx_last_error(ctx), "past the chunk") != NULL, "%s",
            lms_ctx_last_error(ctx));
  d = flat(1000);
  d.byte_offset = 1;
  cr_assert(eq(int, lms_acquire_dlpack(ctx, c, s, &d, &m), LMS_ERR_INVALID));
  d = flat(10);
  d.strides[0] = -1;
  cr_assert(eq(int, lms_acquire_dlpack(ctx, c, s, &d, &m), LMS_ERR_INVALID));
  cr_assert(strstr(lms_ctx_last_error(ctx), "negative") != NULL);
  d = flat(10);
  d.dtype_bits = 7;
  cr_assert(eq(int, lms_acquire_dlpack(ctx, c, s, &d, &m), LMS_ERR_INVALID));
  cr_assert(strstr(lms_ctx_last_error(ctx), "dtype") != NULL);
  d = flat(2);
  d.shape[0] = INT64_MAX, d.strides[0] = INT64_MAX;
  cr_assert(eq(int, lms_acquire_dlpack(ctx, c, s, &d, &m), LMS_ERR_INVALID));
  d = flat(0); /* empty: reaches nothing */
  cr_assert(eq(int, lms_acquire_dlpack(ctx, c, s, &d, &m), LMS_OK));
  ((dl_managed_t *)m)->deleter(m);
  cr_assert(eq(int, lms_test_stats(ctx).chunks.current, 1));
  cr_assert(eq(int, lms_free_when_released(ctx, c), LMS_OK));
}

Test(framework, the_simulated_device_refuses_its_own_memory_as_a_source,
     .init = up, .fini = down) {
  lms_chunk_t *dev = NULL, *c = NULL;
  void *p = NULL;
  /* A chunk on the device, acquired: its device copy is not a framework's
   * memory, and a copy from it would hide a mix-up. */
  cr_assert(eq(int, lms_alloc(ctx, 4096, &dev), LMS_OK));
  cr_assert(eq(int, lms_acquire(ctx, dev, s, LMS_ACCESS_WRITE, &p), LMS_OK));
  cr_assert(eq(int, lms_alloc_copy(ctx, p, 4096, s, &c), LMS_ERR_INVALID));
  cr_assert(c == NULL);
  cr_assert(strstr(lms_ctx_last_error(ctx), "own memory") != NULL, "%s",
            lms_ctx_last_error(ctx));
  cr_assert(eq(i64, lms_test_stats(ctx).chunks.current, 1),
            "nothing is left behind");
  cr_assert(eq(int, lms_release(ctx, dev, s), LMS_OK));
  cr_assert(eq(int, lms_alloc_copy(ctx, NULL, 8, s, &c), LMS_ERR_INVALID));
}

Test(framework, the_offload_rule_is_caffes, .init = up, .fini = down) {
  /* -lms 0 with -lms_frac 0: everything of 1 byte or more, at any
   * demand. */
  cr_assert(eq(int, lms_offload_wanted(ctx, 1, 0, 0), 1));
  lms_ctx_t *other = lms_test_ctx("8MiB", "1024", NULL);
  cr_assert(eq(int, lms_offload_wanted(other, 1023 * 1024, 0, 0), 0));
  cr_assert(eq(int, lms_offload_wanted(other, 1024 * 1024, 0, 0), 1));
  lms_ctx_destroy(other);
  other = lms_test_ctx("8MiB", "-1", NULL);
  cr_assert(eq(int, lms_offload_wanted(other, 1 << 30, 1 << 30, 0), 0));
  lms_ctx_destroy(other);
}

/* A training loop in autograd mode: a forward saves L tensors (each a
 * step), a backward reads them back newest first (each a step), and the
 * saved tensors are freed after their use.  From the second iteration on
 * the learned schedule prefetches every saved tensor before its step. */
Test(framework, a_training_loop_is_prefetched_in_the_learned_order,
     .init = up, .fini = down) {
  enum { L = 10, SZ = 1 << 20, ITERS = 4 };
  char *src = malloc(SZ);
  lms_chunk_t *c[L];
  uint64_t sum[L];
  lms_stats_t before = {0};
  for (int it = 0; it < ITERS; it++) {
    if (it == ITERS - 1) before = lms_test_stats(ctx);
    for (int i = 0; i < L; i++) {
      cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
      cr_assert(eq(int, lms_compute(ctx, s, 400000), LMS_OK));
      lms_test_fill(src, SZ, (uint64_t)(it * L + i));
      sum[i] = lms_test_checksum(src, SZ);
      c[i] = save(src, SZ);
      cr_assert(eq(int, lms_stream_sync(ctx, s), LMS_OK));
      while (lms_chunk_query(ctx, c[i]) == LMS_NOT_READY) {
      }
    }
    for (int i = L - 1; i >= 0; i--) {
      cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
      dl_managed_t *m = unpack(c[i], SZ);
      cr_assert(eq(u64, lms_test_checksum(m->t.data, SZ), sum[i]));
      cr_assert(eq(int, lms_compute(ctx, s, 400000), LMS_OK));
      m->deleter(m);
      cr_assert(eq(int, lms_free_when_released(ctx, c[i]), LMS_OK));
    }
  }
  free(src);
  lms_stats_t a = lms_test_stats(ctx);
  uint64_t misses = (uint64_t)(a.demand_misses.total - before.demand_misses.total);
  uint64_t hits = (uint64_t)(a.prefetch_hits.total + a.prefetch_late.total -
                             before.prefetch_hits.total - before.prefetch_late.total);
  cr_assert(eq(u64, misses, 0), "the last iteration brings nothing in on demand");
  cr_assert(ge(u64, hits, L - 2), "prefetched: %llu", (unsigned long long)hits);
  cr_assert(eq(i64, a.swaps_out.total, 0));
  cr_assert(le(i64, a.device_allocated.peak, 8 << 20));
  lms__plan_info_t info;
  lms__plan_info(ctx->plan, &info);
  cr_assert(eq(u32, info.period, 2 * L));
  cr_assert(eq(u64, info.relearns, 0));
}
