/* gpu_test_cuda.c - the CUDA device (CTest label gpu).
 *
 * On a machine without a GPU every test skips and says why.  With one:
 * the device-ops table does what device.h promises (memory, streams,
 * events, copies both ways, the timed compute); and chunks four times the
 * virtual limit, filled by a kernel, keep every byte across swaps under
 * each policy, checked by the checksum kernel against the host reference.
 * Limits stay small (a few hundred MiB) so that a shared GPU is never
 * pressed. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>

#include "api/ctx.h"
#include "device/device.h"
#include "lms_kernels.h"

static void need_gpu(void) {
  char why[256] = "";
  if (lms__cuda_device_count(why, sizeof why) <= 0)
    cr_skip_test("no CUDA device here (%s): the GPU tests run on a machine "
                 "with one", why);
}

/* The checksum the kernel must produce for lms_kernel_fill(seed). */
static uint64_t pattern_sum(size_t n, uint64_t seed) {
  unsigned char *b = malloc(n);
  cr_assert(b != NULL);
  for (size_t i = 0; i < n; i++) b[i] = lms_kernel_pattern_byte(seed, i);
  uint64_t s = lms_checksum_host(b, n);
  free(b);
  return s;
}

Test(cuda_device, ops_round_trip) {
  need_gpu();
  char err[LMS__ERRBUF] = "";
  lms_dev_t *d = NULL;
  cr_assert(eq(int, lms__cuda_create(0, &d, err), LMS_OK), "%s", err);
  const lms_dev_ops_t *o = d->ops;
  size_t free_b = 0, total_b = 0;
  cr_assert(eq(int, o->mem_info(d, &free_b, &total_b), LMS_OK));
  cr_assert(gt(sz, total_b, 0));
  const size_t n = 8u << 20;
  void *h1, *h2, *dv, *s, *ev;
  cr_assert(eq(int, o->host_alloc(d, n, &h1), LMS_OK));
  cr_assert(eq(int, o->host_alloc(d, n, &h2), LMS_OK));
  cr_assert(eq(int, o->dev_alloc(d, n, &dv), LMS_OK));
  cr_assert(eq(int, o->stream_create(d, &s), LMS_OK));
  cr_assert(eq(int, o->event_create(d, &ev), LMS_OK));
  for (size_t i = 0; i < n; i++) ((unsigned char *)h1)[i] = (unsigned char)(i * 7);
  memset(h2, 0, n);
  cr_assert(eq(int, o->copy_h2d(d, dv, h1, n, s), LMS_OK));
  cr_assert(eq(int, o->compute(d, s, 2000000), LMS_OK)); /* 2 ms */
  cr_assert(eq(int, o->copy_d2h(d, h2, dv, n, s), LMS_OK));
  cr_assert(eq(int, o->event_record(d, ev, s), LMS_OK));
  uint64_t t0 = o->now_ns(d);
  cr_assert(eq(int, o->event_sync(d, ev), LMS_OK));
  cr_assert(ge(u64, o->now_ns(d) - t0, 1000000), "the 2 ms compute ran");
  cr_assert(eq(int, o->event_query(d, ev), LMS_OK));
  cr_assert(eq(int, memcmp(h1, h2, n), 0), "bytes survived the round trip");
  o->event_destroy(d, ev);
  o->stream_destroy(d, s);
  o->dev_free(d, dv);
  o->host_free(d, h1);
  o->host_free(d, h2);
  o->destroy(d);
}

static void integrity(const char *policy) {
  need_gpu();
  lms_options_t *o = NULL;
  lms_ctx_t *ctx = NULL;
  cr_assert(eq(int, lms_options_create(&o), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "device", "cuda"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "gpu-limit", "256MiB"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "lms", "0"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "policy", policy), LMS_OK));
  cr_assert(eq(int, lms_ctx_create(o, &ctx), LMS_OK));
  lms_options_destroy(o);
  cr_assert(eq(str, (char *)lms_ctx_device_name(ctx), "cuda"));
  lms_stream_t s;
  cr_assert(eq(int, lms_stream_create(ctx, &s), LMS_OK));
  enum { N = 32 };
  const size_t size = 32u << 20; /* 1 GiB in all: 4x the limit */
  lms_chunk_t *c[N];
  uint64_t want[N];
  void *p;
  for (int i = 0; i < N; i++) {
    cr_assert(eq(int, lms_alloc(ctx, size, &c[i]), LMS_OK));
    cr_assert(eq(int, lms_acquire(ctx, c[i], s,
                                  LMS_ACCESS_WRITE | LMS_ACCESS_OVERWRITE, &p),
                 LMS_OK));
    cr_assert(eq(int, lms_kernel_fill(p, size, 1000u + (unsigned)i, s), 0));
    cr_assert(eq(int, lms_release(ctx, c[i], s), LMS_OK));
    want[i] = pattern_sum(size, 1000u + (unsigned)i);
  }
  for (int it = 0; it < 3; it++) {
    for (int i = 0; i < N; i++) {
      cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
      cr_assert(eq(int, lms_acquire(ctx, c[i], s, LMS_ACCESS_READ, &p), LMS_OK));
      uint64_t got = 0;
      cr_assert(eq(int, lms_kernel_checksum(p, size, &got, s), 0));
      cr_assert(eq(u64, got, want[i]), "chunk %d, pass %d", i, it);
      cr_assert(eq(int, lms_release(ctx, c[i], s), LMS_OK));
    }
  }
  lms_stats_t st;
  cr_assert(eq(int, lms_stats_get(ctx, &st), LMS_OK));
  cr_assert(gt(i64, st.swaps_in.total, N), "chunks moved");
  cr_assert(le(i64, st.device_reserved.peak, 256 << 20));
  for (int i = 0; i < N; i++) cr_assert(eq(int, lms_free(ctx, c[i]), LMS_OK));
  cr_assert(eq(int, lms_stream_destroy(ctx, s), LMS_OK));
  cr_assert(eq(int, lms_ctx_destroy(ctx), LMS_OK));
}

Test(cuda_swap, bytes_survive_ondemand) { integrity("ondemand"); }
Test(cuda_swap, bytes_survive_lru) { integrity("lru"); }
Test(cuda_swap, bytes_survive_schedule) { integrity("schedule"); }
