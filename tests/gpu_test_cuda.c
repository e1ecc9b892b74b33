/* gpu_test_cuda.c - the CUDA device (CTest label gpu).
 *
 * On a machine without a GPU the whole test skips: it prints "SKIP: why"
 * and exits 77, which CTest reports as skipped, not passed.  With one:
 * the device-ops table does what device.h promises (memory, streams,
 * events, copies both ways, the timed compute); and chunks four times the
 * virtual limit, filled by a kernel, keep every byte across swaps under
 * each policy, checked by the checksum kernel against the host reference,
 * and as pieces mapped into each chunk's range (cuMemMap);
 * every device call failing in turn (--fail), and a real out-of-memory
 * from the driver, change no chunk's bytes.  Limits stay small (a few hundred MiB) so that a shared GPU is never
 * pressed. */
#include <criterion/criterion.h>
#include "check.h"
#include <cuda_runtime_api.h>
#include <stdio.h>
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

/* Note [Stalls measured after the fact] (swap/residency.c): a stream that
 * waits for a copy still in flight sits for about the copy's time, and
 * timed events before and after the wait measure it; a wait for a copy
 * already done measures (almost) nothing. */
Test(cuda_device, timed_events_measure_a_wait) {
  need_gpu();
  char err[LMS__ERRBUF] = "";
  lms_dev_t *d = NULL;
  cr_assert(eq(int, lms__cuda_create(0, &d, err), LMS_OK), "%s", err);
  const lms_dev_ops_t *o = d->ops;
  const size_t n = 256u << 20;
  void *h, *dv, *cs, *copy, *ready, *a, *b, *c0, *c1;
  cr_assert(eq(int, o->host_alloc(d, n, &h), LMS_OK));
  cr_assert(eq(int, o->dev_alloc(d, n, &dv), LMS_OK));
  cr_assert(eq(int, o->stream_create(d, &cs), LMS_OK));
  cr_assert(eq(int, o->stream_create(d, &copy), LMS_OK));
  cr_assert(eq(int, o->event_create(d, &ready), LMS_OK));
  cr_assert(eq(int, o->event_create_timed(d, &a), LMS_OK));
  cr_assert(eq(int, o->event_create_timed(d, &b), LMS_OK));
  cr_assert(eq(int, o->event_create_timed(d, &c0), LMS_OK));
  cr_assert(eq(int, o->event_create_timed(d, &c1), LMS_OK));
  memset(h, 1, n);
  cr_assert(eq(int, o->event_record(d, c0, copy), LMS_OK));
  cr_assert(eq(int, o->copy_h2d(d, dv, h, n, copy), LMS_OK));
  cr_assert(eq(int, o->event_record(d, c1, copy), LMS_OK));
  cr_assert(eq(int, o->event_record(d, ready, copy), LMS_OK));
  uint64_t ahead = 0;
  /* In flight: CUDA cannot say ahead how long the wait is. */
  cr_assert(eq(int, o->wait_cost(d, cs, ready, &ahead), LMS_ERR_UNSUPPORTED));
  cr_assert(eq(int, o->event_record(d, a, cs), LMS_OK));
  cr_assert(eq(int, o->stream_wait(d, cs, ready), LMS_OK));
  cr_assert(eq(int, o->event_record(d, b, cs), LMS_OK));
  cr_assert(eq(int, o->stream_sync(d, cs), LMS_OK));
  uint64_t waited = 0, copy_ns = 0;
  cr_assert(eq(int, o->event_elapsed(d, a, b, &waited), LMS_OK));
  cr_assert(eq(int, o->event_elapsed(d, c0, c1, &copy_ns), LMS_OK));
  cr_log_info("copy %.3f ms, wait measured %.3f ms", copy_ns / 1e6,
              waited / 1e6);
  cr_assert(gt(u64, waited, copy_ns / 2), "the wait was measured");
  cr_assert(le(u64, waited, copy_ns + 1000000));
  /* Done: no wait, and the pair measures almost none. */
  cr_assert(eq(int, o->wait_cost(d, cs, ready, &ahead), LMS_OK));
  cr_assert(eq(u64, ahead, 0));
  cr_assert(eq(int, o->event_record(d, a, cs), LMS_OK));
  cr_assert(eq(int, o->stream_wait(d, cs, ready), LMS_OK));
  cr_assert(eq(int, o->event_record(d, b, cs), LMS_OK));
  cr_assert(eq(int, o->stream_sync(d, cs), LMS_OK));
  cr_assert(eq(int, o->event_elapsed(d, a, b, &waited), LMS_OK));
  cr_log_info("a wait for a done copy measured %.1f us", waited / 1e3);
  cr_assert(lt(u64, waited, 50000));
  void *evs[] = {ready, a, b, c0, c1};
  for (size_t i = 0; i < 5; i++) o->event_destroy(d, evs[i]);
  o->stream_destroy(d, cs);
  o->stream_destroy(d, copy);
  o->dev_free(d, dv);
  o->host_free(d, h);
  o->destroy(d);
}

/* Chunks of `size` bytes, 1 GiB in all through a 256 MiB limit, with
 * pieces of `piece` bytes (NULL: none). */
static void integrity_of(const char *policy, const char *piece, size_t size) {
  need_gpu();
  lms_options_t *o = NULL;
  lms_ctx_t *ctx = NULL;
  cr_assert(eq(int, lms_options_create(&o), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "device", "cuda"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "gpu-limit", "256MiB"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "lms", "0"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "policy", policy), LMS_OK));
  if (piece != NULL)
    cr_assert(eq(int, lms_options_set(o, "piece-size", piece), LMS_OK));
  cr_assert(eq(int, lms_ctx_create(o, &ctx), LMS_OK));
  lms_options_destroy(o);
  cr_assert(eq(str, (char *)lms_ctx_device_name(ctx), "cuda"));
  lms_stream_t s;
  cr_assert(eq(int, lms_stream_create(ctx, &s), LMS_OK));
  const int N = (int)((1u << 30) / size);
  lms_chunk_t *c[64];
  uint64_t want[64];
  cr_assert(le(int, N, 64));
  void *p;
  for (int i = 0; i < N; i++) {
    cr_assert(eq(int, lms_alloc(ctx, size, &c[i]), LMS_OK));
    /* Note [Mapping pieces on a GPU] in cuda.c: the pieces were made, so
     * the device maps them. */
    if (piece != NULL)
      cr_assert(gt(u32, c[i]->npieces, 1), "chunk %d is not made of pieces",
                i);
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

static void integrity(const char *policy) {
  integrity_of(policy, NULL, 32u << 20);
}

Test(cuda_swap, bytes_survive_ondemand) { integrity("ondemand"); }
Test(cuda_swap, bytes_survive_lru) { integrity("lru"); }
Test(cuda_swap, bytes_survive_schedule) { integrity("schedule"); }

/* Chunks of 40 MiB, an eighth of the limit and more: ten pieces of 4 MiB
 * each (Note [Chunks of pieces] in swap/residency.c), shown in the
 * chunk's range by cuMemMap, filled and checked by kernels through it
 * while the pieces come and go. */
Test(cuda_swap, bytes_survive_as_pieces) {
  integrity_of("schedule", "4MiB", 40u << 20);
}

/* ---- Faults on the CUDA device ---------------------------------------- */

/* A context on the CUDA device with a virtual limit and a fault spec. */
static lms_ctx_t *cuda_ctx(const char *limit, const char *fail) {
  lms_options_t *o = NULL;
  lms_ctx_t *ctx = NULL;
  cr_assert(eq(int, lms_options_create(&o), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "device", "cuda"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "gpu-limit", limit), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "lms", "0"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "log", "none"), LMS_OK));
  if (fail != NULL)
    cr_assert(eq(int, lms_options_set(o, "fail", fail), LMS_OK));
  if (lms_ctx_create(o, &ctx) != LMS_OK) ctx = NULL;
  lms_options_destroy(o);
  return ctx;
}

enum { FN = 4 };
#define FSIZE ((size_t)24 << 20) /* four of them through a 64 MiB limit */

typedef struct frun {
  lms_ctx_t *ctx;
  lms_stream_t s[2];
  lms_chunk_t *c[FN];
  uint64_t want[FN];
  unsigned surfaced, mismatches, retries_failed;
} frun_t;

/* The call, and once more if it failed: an injected fault is one-shot. */
#define FTRY(r, call)                                                         \
  do {                                                                        \
    if ((call) != LMS_OK) {                                                   \
      (r)->surfaced++;                                                        \
      if ((call) != LMS_OK) (r)->retries_failed++;                            \
    }                                                                         \
  } while (0)

static void fwrite_chunk(frun_t *r, int i, int si, uint64_t seed) {
  void *p = NULL;
  FTRY(r, lms_acquire(r->ctx, r->c[i], r->s[si],
                      LMS_ACCESS_WRITE | LMS_ACCESS_OVERWRITE, &p));
  if (p == NULL) return;
  cr_assert(eq(int, lms_kernel_fill(p, FSIZE, seed, r->s[si]), 0));
  r->want[i] = pattern_sum(FSIZE, seed);
  FTRY(r, lms_release(r->ctx, r->c[i], r->s[si]));
}

static void fcheck_chunk(frun_t *r, int i, int si) {
  void *p = NULL;
  FTRY(r, lms_acquire(r->ctx, r->c[i], r->s[si], LMS_ACCESS_READ, &p));
  if (p == NULL) return;
  uint64_t got = 0;
  cr_assert(eq(int, lms_kernel_checksum(p, FSIZE, &got, r->s[si]), 0));
  if (got != r->want[i]) r->mismatches++;
  FTRY(r, lms_release(r->ctx, r->c[i], r->s[si]));
}

/* Swap-ins, write-backs, drops on two streams, then a free and a new
 * chunk, then every chunk read back. */
static void fscenario(frun_t *r) {
  for (int i = 0; i < FN; i++) {
    FTRY(r, lms_alloc(r->ctx, FSIZE, &r->c[i]));
    if (r->c[i] != NULL) fwrite_chunk(r, i, i % 2, 100 + (uint64_t)i);
  }
  for (int i = 0; i < FN; i++)
    if (r->c[i] != NULL) fcheck_chunk(r, i, (i + 1) % 2);
  if (r->c[1] != NULL) fwrite_chunk(r, 1, 0, 200);
  if (r->c[0] != NULL) {
    FTRY(r, lms_free(r->ctx, r->c[0]));
    r->c[0] = NULL;
  }
  FTRY(r, lms_alloc(r->ctx, FSIZE, &r->c[0]));
  if (r->c[0] != NULL) fwrite_chunk(r, 0, 1, 300);
  for (int i = FN; i-- > 0;)
    if (r->c[i] != NULL) fcheck_chunk(r, i, i % 2);
  FTRY(r, lms_stream_sync(r->ctx, r->s[0]));
  FTRY(r, lms_stream_sync(r->ctx, r->s[1]));
}

static void fsetup(frun_t *r, const char *fail) {
  memset(r, 0, sizeof *r);
  r->ctx = cuda_ctx("64MiB", fail);
  cr_assert(r->ctx != NULL, "no CUDA context with --fail %s", fail);
  cr_assert(eq(int, lms_stream_create(r->ctx, &r->s[0]), LMS_OK));
  cr_assert(eq(int, lms_stream_create(r->ctx, &r->s[1]), LMS_OK));
}

/* armed: the call the fault was set for (0 for none), to tell a fault
 * that fired in the teardown itself from one reported late. */
static void fteardown(frun_t *r, uint64_t armed) {
  for (int i = 0; i < FN; i++)
    if (r->c[i] != NULL) lms_free(r->ctx, r->c[i]);
  lms_stream_destroy(r->ctx, r->s[0]);
  lms_stream_destroy(r->ctx, r->s[1]);
  uint64_t made = lms__faulty_calls(r->ctx->dev, LMS__DEVOP_COUNT);
  lms_status_t st = lms_ctx_destroy(r->ctx);
  /* A run that made fewer calls than the clean one (a failure cut a path
   * short) leaves the fault armed for one of destroy's own calls: destroy
   * may then report it.  Otherwise the fault has fired and been dealt
   * with, and destroy must succeed. */
  int fires_in_destroy = armed != 0 && made < armed;
  cr_assert(st == LMS_OK || (fires_in_destroy && st == LMS_ERR_DEVICE),
            "destroy: %s, with the fault armed for call %llu and %llu calls "
            "made before destroy", lms_status_name(st),
            (unsigned long long)armed, (unsigned long long)made);
}

/* The promise of the simulated device's fault tests, on the GPU: each
 * device call in turn fails (--fail any:N, which wraps the CUDA device,
 * Note [Injecting faults above a real device]); the failure comes back as
 * a status or is absorbed and counted, a retry succeeds, no chunk's bytes
 * change (checked by the checksum kernel), and the context goes on. */
Test(cuda_faults, every_device_call_fails_in_turn, .timeout = 600) {
  need_gpu();
  frun_t r;
  /* A spec that never fires, to count the calls of a clean run. */
  fsetup(&r, "any:1000000000");
  cr_assert(lms__dev_is_faulty(r.ctx->dev), "--fail did not wrap the device");
  uint64_t base = lms__faulty_calls(r.ctx->dev, LMS__DEVOP_COUNT);
  fscenario(&r);
  uint64_t calls = lms__faulty_calls(r.ctx->dev, LMS__DEVOP_COUNT) - base;
  cr_assert(eq(u32, r.surfaced, 0), "the clean run failed: %s",
            lms_ctx_last_error(r.ctx));
  cr_assert(eq(u32, r.mismatches, 0));
  lms_stats_t clean;
  cr_assert(eq(int, lms_stats_get(r.ctx, &clean), LMS_OK));
  cr_assert(gt(i64, clean.swaps_out.total, 0), "nothing was written back");
  fteardown(&r, 0);
  cr_assert(gt(u64, calls, 30));
  unsigned surfaced = 0, absorbed = 0;
  for (uint64_t n = 1; n <= calls; n++) {
    char spec[48];
    snprintf(spec, sizeof spec, "any:%llu", (unsigned long long)(base + n));
    fsetup(&r, spec);
    fscenario(&r);
    lms_stats_t st;
    cr_assert(eq(int, lms_stats_get(r.ctx, &st), LMS_OK));
    int was_absorbed = r.surfaced == 0 && st.device_errors.total > 0;
    cr_assert(r.surfaced > 0 || was_absorbed,
              "call %llu failed and was neither reported nor counted",
              (unsigned long long)n);
    cr_assert(eq(u32, r.mismatches, 0), "bytes changed with call %llu failing",
              (unsigned long long)n);
    cr_assert(eq(u32, r.retries_failed, 0), "a retry after call %llu failed: %s",
              (unsigned long long)n, lms_ctx_last_error(r.ctx));
    for (int i = 0; i < FN; i++)
      if (r.c[i] != NULL) fcheck_chunk(&r, i, 0);
    cr_assert(eq(u32, r.mismatches, 0), "bytes changed after call %llu failed",
              (unsigned long long)n);
    surfaced += r.surfaced > 0;
    absorbed += was_absorbed;
    fteardown(&r, base + n);
  }
  cr_log_info("%llu injected failures on the GPU: %u reported, %u absorbed",
              (unsigned long long)calls, surfaced, absorbed);
}

/* A real out-of-memory from the driver, not an injected one: another
 * allocation, made before lms has any device memory, leaves the device
 * less free memory than the virtual limit promises, and the chunks need
 * more than is left.  The driver must refuse lms at least once (counted in
 * device_errors: the budget allowed what the device refused); every write
 * and acquire either works, with the chunk's bytes intact, or fails with
 * LMS_ERR_DEVICE_OOM and a message; once the memory is back, every chunk
 * written reads back unchanged. */
Test(cuda_faults, a_real_out_of_memory_loses_nothing, .timeout = 300) {
  need_gpu();
  size_t free_b = 0, total_b = 0;
  /* Room for two chunks and the kernels' own scratch, not for four. */
  const size_t leave = 2 * FSIZE + (8u << 20);
  frun_t r;
  memset(&r, 0, sizeof r);
  r.ctx = cuda_ctx("256MiB", NULL);
  cr_assert(r.ctx != NULL);
  cr_assert(eq(int, lms_stream_create(r.ctx, &r.s[0]), LMS_OK));
  cr_assert(eq(int, lms_stream_create(r.ctx, &r.s[1]), LMS_OK));
  lms_stats_t st0, st1;
  cr_assert(eq(int, lms_stats_get(r.ctx, &st0), LMS_OK));
  cr_assert(eq(int, cudaMemGetInfo(&free_b, &total_b), cudaSuccess));
  cr_assert(gt(sz, free_b, leave + (256u << 20)));
  /* Plain device memory, never managed memory. */
  void *hog = NULL;
  cr_assert(eq(int, cudaMalloc(&hog, free_b - leave), cudaSuccess));
  unsigned ok = 0, oom = 0;
  int written[FN] = {0};
  for (int i = 0; i < FN; i++) {
    cr_assert(eq(int, lms_alloc(r.ctx, FSIZE, &r.c[i]), LMS_OK));
    void *p = NULL;
    lms_status_t st = lms_acquire(r.ctx, r.c[i], r.s[0],
                                  LMS_ACCESS_WRITE | LMS_ACCESS_OVERWRITE, &p);
    if (st != LMS_OK) {
      cr_assert(eq(int, st, LMS_ERR_DEVICE_OOM), "%s",
                lms_ctx_last_error(r.ctx));
      oom++;
      continue;
    }
    cr_assert(eq(int, lms_kernel_fill(p, FSIZE, 500 + (uint64_t)i, r.s[0]), 0));
    r.want[i] = pattern_sum(FSIZE, 500 + (uint64_t)i);
    cr_assert(eq(int, lms_release(r.ctx, r.c[i], r.s[0]), LMS_OK));
    written[i] = 1;
    ok++;
  }
  for (int pass = 0; pass < 3; pass++)
    for (int i = 0; i < FN; i++) {
      if (!written[i]) continue;
      void *p = NULL;
      lms_status_t st = lms_acquire(r.ctx, r.c[i], r.s[1], LMS_ACCESS_RW, &p);
      if (st != LMS_OK) {
        cr_assert(eq(int, st, LMS_ERR_DEVICE_OOM), "%s",
                  lms_ctx_last_error(r.ctx));
        cr_assert(strstr(lms_ctx_last_error(r.ctx), "out of memory") != NULL,
                  "%s", lms_ctx_last_error(r.ctx));
        oom++;
        continue;
      }
      uint64_t got = 0;
      cr_assert(eq(int, lms_kernel_checksum(p, FSIZE, &got, r.s[1]), 0));
      cr_assert(eq(u64, got, r.want[i]), "chunk %d, pass %d", i, pass);
      cr_assert(eq(int, lms_release(r.ctx, r.c[i], r.s[1]), LMS_OK));
      ok++;
    }
  cr_assert(eq(int, lms_stats_get(r.ctx, &st1), LMS_OK));
  cr_assert(eq(int, cudaFree(hog), cudaSuccess));
  cr_log_info("with %zu MiB really free under a 256 MiB limit: %u writes and "
              "acquires worked, %u out of memory, the driver refused %lld "
              "allocations", leave >> 20, ok, oom,
              (long long)(st1.device_errors.total - st0.device_errors.total));
  cr_assert(gt(i64, st1.device_errors.total, st0.device_errors.total),
            "no real out-of-memory happened: the test proved nothing");
  cr_assert(gt(u32, ok, 0));
  r.mismatches = 0;
  for (int i = 0; i < FN; i++)
    if (written[i]) fcheck_chunk(&r, i, 0);
  cr_assert(eq(u32, r.surfaced, 0), "after the memory came back: %s",
            lms_ctx_last_error(r.ctx));
  cr_assert(eq(u32, r.mismatches, 0));
  fteardown(&r, 0);
}

/* Criterion's own main, after a look for a device: with none, the test
 * says so and exits 77 (SKIP_RETURN_CODE in CMakeLists.txt). */
int main(int argc, char *argv[]) {
  char why[256] = "";
  if (lms__cuda_device_count(why, sizeof why) <= 0) {
    printf("SKIP: no CUDA device here (%s): the GPU tests run on a machine "
           "with one\n", why);
    return 77;
  }
  struct criterion_test_set *tests = criterion_initialize();
  int result = 0;
  if (criterion_handle_args(argc, argv, true))
    result = !criterion_run_all_tests(tests);
  criterion_finalize(tests);
  return result;
}
