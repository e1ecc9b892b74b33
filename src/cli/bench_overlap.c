/* bench_overlap.c - `lms bench overlap`: how much of the copying lms hides
 * behind compute, on a real GPU.
 *
 * A loop over N chunks of S bytes (64 MiB by default) whose total is twice
 * the GPU limit: each step acquires one chunk for reading and writing and
 * runs the tunable compute kernel over it (lms_kernel_compute, `passes`
 * invertible rounds a word, so the bytes end as they began).  The passes
 * are calibrated so that one step computes for `intensity` times the time
 * the link needs to move a chunk in while another goes out (the step's
 * traffic; on PCIe the two ways together are slower than each alone).  The same loop runs in memory (every chunk cudaMalloc'ed
 * on a GPU large enough) and through lms under the limit (every chunk
 * host-homed, the schedule policy learning the loop and prefetching); the
 * figure is the ratio of the two iteration times, for each intensity.
 * After the runs the checksum of every chunk is compared with the one it
 * had before them: no byte may change.
 *
 * Needs the CUDA device; without one it says so and exits with status 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/ctx.h"
#include "cli/cli.h"
#include "core/log.h"

#ifdef LMS_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "lms_kernels.h"

#define OV_WARMUP 2
#define OV_ITERS 3

static double ov_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Milliseconds the compute kernel takes over `bytes` at `passes`. */
static double kernel_ms(void *d, size_t bytes, unsigned passes,
                        cudaStream_t s) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  float best = 1e30f;
  for (int r = 0; r < 3; r++) {
    cudaEventRecord(a, s);
    lms_kernel_compute(d, bytes, passes, s);
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    if (ms < best) best = ms;
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return best;
}

typedef struct ov_run {
  double iter_ms;
  double gb_in, gb_out;
  int64_t late, misses;
} ov_run_t;

/* In memory: N device buffers, the loop, timed on the host. */
static int run_plain(size_t n, size_t bytes, unsigned passes, ov_run_t *r) {
  void **d = calloc(n, sizeof *d);
  cudaStream_t s;
  if (d == NULL || cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
    return -1;
  int ok = 1;
  for (size_t i = 0; i < n && ok; i++) {
    ok = cudaMalloc(&d[i], bytes) == cudaSuccess &&
         lms_kernel_fill(d[i], bytes, i + 1, s) == 0;
  }
  double sum = 0;
  for (int it = 0; ok && it < OV_WARMUP + OV_ITERS; it++) {
    double t0 = ov_now_ms();
    for (size_t i = 0; i < n && ok; i++) ok = lms_kernel_compute(d[i], bytes, passes, s) == 0;
    ok = ok && cudaStreamSynchronize(s) == cudaSuccess;
    if (it >= OV_WARMUP) sum += ov_now_ms() - t0;
  }
  r->iter_ms = sum / OV_ITERS;
  for (size_t i = 0; i < n; i++)
    if (d[i]) cudaFree(d[i]);
  cudaStreamDestroy(s);
  free(d);
  return ok ? 0 : -1;
}

/* Through lms under `limit`: every chunk host-homed. */
static int run_lms(const lms_options_t *base, size_t n, size_t bytes,
                   unsigned passes, uint64_t limit, ov_run_t *r, char *err) {
  lms_options_t *o = NULL;
  lms_ctx_t *ctx = NULL;
  lms_stream_t s = NULL;
  lms_chunk_t **c = calloc(n, sizeof *c);
  uint64_t *sums = calloc(n, sizeof *sums);
  int rc = -1;
  char v[32];
  if (c == NULL || sums == NULL || lms_options_create(&o) != LMS_OK) goto out;
  lms__opts_copy(&o->v, &base->v);
  lms_options_set(o, "device", "cuda");
  snprintf(v, sizeof v, "%llu", (unsigned long long)limit);
  lms_options_set(o, "gpu-limit", v);
  lms_options_set(o, "lms", "0");
  lms_options_set(o, "lms_frac", "0");
  if (lms_ctx_create(o, &ctx) != LMS_OK || lms_stream_create(ctx, &s) != LMS_OK) {
    snprintf(err, LMS__ERRBUF, "cannot create the context: %s",
             ctx ? lms_ctx_last_error(ctx) : "lms_ctx_create failed");
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    void *p;
    if (lms_alloc(ctx, bytes, &c[i]) != LMS_OK ||
        lms_acquire(ctx, c[i], s, LMS_ACCESS_WRITE | LMS_ACCESS_OVERWRITE, &p) != LMS_OK ||
        lms_kernel_fill(p, bytes, i + 1, s) != 0 ||
        lms_kernel_checksum(p, bytes, &sums[i], s) != 0 ||
        lms_release(ctx, c[i], s) != LMS_OK) {
      snprintf(err, LMS__ERRBUF, "setup of chunk %zu: %s", i, lms_ctx_last_error(ctx));
      goto out;
    }
  }
  double sum = 0;
  lms_stats_t s0, s1;
  memset(r, 0, sizeof *r);
  for (int it = 0; it < OV_WARMUP + OV_ITERS; it++) {
    lms_stats_get(ctx, &s0);
    double t0 = ov_now_ms();
    for (size_t i = 0; i < n; i++) {
      void *p;
      if (lms_step_begin(ctx) != LMS_OK ||
          lms_acquire(ctx, c[i], s, LMS_ACCESS_RW, &p) != LMS_OK ||
          lms_kernel_compute(p, bytes, passes, s) != 0 ||
          lms_release(ctx, c[i], s) != LMS_OK) {
        snprintf(err, LMS__ERRBUF, "step %zu: %s", i, lms_ctx_last_error(ctx));
        goto out;
      }
    }
    if (lms_stream_sync(ctx, s) != LMS_OK) {
      snprintf(err, LMS__ERRBUF, "%s", lms_ctx_last_error(ctx));
      goto out;
    }
    if (it < OV_WARMUP) continue;
    sum += ov_now_ms() - t0;
    lms_stats_get(ctx, &s1);
    r->gb_in += (double)(s1.bytes_h2d.total - s0.bytes_h2d.total) / 1e9 / OV_ITERS;
    r->gb_out += (double)(s1.bytes_d2h.total - s0.bytes_d2h.total) / 1e9 / OV_ITERS;
    r->late += s1.prefetch_late.total - s0.prefetch_late.total;
    r->misses += s1.demand_misses.total - s0.demand_misses.total;
  }
  r->iter_ms = sum / OV_ITERS;
  /* Nothing lost: every chunk's checksum is the one it was filled with. */
  for (size_t i = 0; i < n; i++) {
    void *p;
    uint64_t now = 0;
    if (lms_acquire(ctx, c[i], s, LMS_ACCESS_READ, &p) != LMS_OK ||
        lms_kernel_checksum(p, bytes, &now, s) != 0 ||
        lms_release(ctx, c[i], s) != LMS_OK) {
      snprintf(err, LMS__ERRBUF, "check of chunk %zu: %s", i, lms_ctx_last_error(ctx));
      goto out;
    }
    if (now != sums[i]) {
      snprintf(err, LMS__ERRBUF, "chunk %zu changed across the swaps "
               "(checksum %016llx, was %016llx)", i, (unsigned long long)now,
               (unsigned long long)sums[i]);
      goto out;
    }
  }
  rc = 0;
out:
  if (ctx) {
    for (size_t i = 0; c && i < n; i++)
      if (c[i]) lms_free(ctx, c[i]);
    if (s) lms_stream_destroy(ctx, s);
    lms_ctx_destroy(ctx);
  }
  lms_options_destroy(o);
  free(c);
  free(sums);
  return rc;
}

int lms__bench_overlap(const lms_options_t *base, int argc, char **argv) {
  char why[256] = "";
  if (argc > 0) {
    fprintf(stderr, "lms bench overlap: unexpected argument '%s'; the GPU "
                    "limit (--gpu-limit, default 4GiB) sets the size\n", argv[0]);
    return 2;
  }
  if (lms__cuda_device_count(why, sizeof why) <= 0) {
    fprintf(stderr, "lms bench overlap: needs a CUDA device (%s)\n", why);
    return LMS__EXIT_NO_GPU;
  }
  uint64_t limit = base->v.gpu_limit ? base->v.gpu_limit : 4ull << 30;
  size_t bytes = 64u << 20;
  size_t n = (size_t)(2 * limit / bytes);
  if (n < 8) {
    fprintf(stderr, "lms bench overlap: --gpu-limit %llu bytes is too small; "
                    "accepted: at least 256 MiB\n", (unsigned long long)limit);
    return 2;
  }
  /* The link's rate one way, and the kernel's time per pass. */
  void *h = NULL, *d = NULL;
  cudaStream_t s;
  cudaEvent_t a, b;
  if (cudaHostAlloc(&h, bytes, cudaHostAllocPortable) != cudaSuccess ||
      cudaMalloc(&d, bytes) != cudaSuccess ||
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
      cudaEventCreate(&a) != cudaSuccess || cudaEventCreate(&b) != cudaSuccess) {
    fprintf(stderr, "lms bench overlap: CUDA setup failed\n");
    return 1;
  }
  /* A step moves one chunk in and one out at once, each on its own copy
   * engine: its transfer time is that of the pair. */
  void *h2 = NULL, *d2 = NULL;
  cudaStream_t s2;
  if (cudaHostAlloc(&h2, bytes, cudaHostAllocPortable) != cudaSuccess ||
      cudaMalloc(&d2, bytes) != cudaSuccess ||
      cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) != cudaSuccess) {
    fprintf(stderr, "lms bench overlap: CUDA setup failed\n");
    return 1;
  }
  float copy_ms = 1e30f;
  for (int r = 0; r < 3; r++) {
    float ms = 0;
    cudaEventRecord(a, s);
    cudaStreamWaitEvent(s2, a, 0);
    cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s);
    cudaMemcpyAsync(h2, d2, bytes, cudaMemcpyDeviceToHost, s2);
    cudaEvent_t e2;
    cudaEventCreate(&e2);
    cudaEventRecord(e2, s2);
    cudaStreamWaitEvent(s, e2, 0);
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    cudaEventElapsedTime(&ms, a, b);
    cudaEventDestroy(e2);
    if (ms < copy_ms) copy_ms = ms;
  }
  cudaStreamDestroy(s2);
  cudaFree(d2);
  cudaFreeHost(h2);
  int throttled = base->v.source[LMS__OPT_link] != LMS__SRC_DEFAULT;
  if (throttled) {
    double slow = (double)bytes / (base->v.link.h2d_gbps * 1e9) * 1e3;
    if (slow > copy_ms) copy_ms = (float)slow;
  }
  double per_pass = (kernel_ms(d, bytes, 64, s) - kernel_ms(d, bytes, 0, s)) / 64.0;
  double base_ms = kernel_ms(d, bytes, 0, s);
  printf("lms bench overlap: %zu chunks of %zu MiB (%.1f GiB) through a %.1f "
         "GiB limit, each step reads and writes one; in memory vs lms, %d "
         "iterations after %d\n", n, bytes >> 20,
         (double)(n * bytes) / (1 << 30), (double)limit / (1 << 30), OV_ITERS,
         OV_WARMUP);
  printf("one chunk in and one out at once: %.3f ms%s; kernel: %.4f ms + "
         "%.5f ms a pass\n",
         copy_ms, throttled ? " (emulated --link)" : "", base_ms, per_pass);
  printf("%9s %7s %9s %10s %10s %7s %7s %7s %6s %6s\n", "compute/", "passes",
         "step ms", "memory ms", "lms ms", "ratio", "GB in", "GB out", "late",
         "miss");
  static const double kIntensity[] = {0.5, 1.0, 1.25, 1.5, 2.0};
  int rc = 0;
  for (size_t k = 0; k < sizeof kIntensity / sizeof kIntensity[0] && rc == 0; k++) {
    double want = kIntensity[k] * copy_ms;
    unsigned passes = per_pass > 0 ? (unsigned)((want - base_ms) / per_pass + 0.5) : 1;
    if (passes < 1) passes = 1;
    double step_ms = kernel_ms(d, bytes, passes, s);
    ov_run_t pr, lr;
    char err[LMS__ERRBUF] = "";
    memset(&pr, 0, sizeof pr);
    if (run_plain(n, bytes, passes, &pr) != 0) {
      fprintf(stderr, "lms bench overlap: the in-memory run failed: %s\n",
              cudaGetErrorString(cudaGetLastError()));
      rc = 1;
      break;
    }
    if (run_lms(base, n, bytes, passes, limit, &lr, err) != 0) {
      fprintf(stderr, "lms bench overlap: %s\n", err);
      rc = 1;
      break;
    }
    printf("%9.2f %7u %9.3f %10.1f %10.1f %7.3f %7.2f %7.2f %6lld %6lld\n",
           step_ms / copy_ms, passes, step_ms, pr.iter_ms, lr.iter_ms,
           lr.iter_ms / pr.iter_ms, lr.gb_in, lr.gb_out, (long long)lr.late,
           (long long)lr.misses);
    fflush(stdout);
  }
  if (rc == 0) printf("every chunk's checksum unchanged after the runs\n");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaStreamDestroy(s);
  cudaFree(d);
  cudaFreeHost(h);
  return rc;
}

#else

int lms__bench_overlap(const lms_options_t *base, int argc, char **argv) {
  (void)base;
  if (argc > 0) {
    fprintf(stderr, "lms bench overlap: unexpected argument '%s'; the GPU "
                    "limit (--gpu-limit, default 4GiB) sets the size\n", argv[0]);
    return 2;
  }
  fprintf(stderr, "lms bench overlap: this build of lms has no CUDA device "
                  "(nvcc was not found when it was built)\n");
  return LMS__EXIT_NO_GPU;
}

#endif
