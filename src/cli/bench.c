/* bench.c - `lms bench link`: what the swap path gets out of the link,
 * against plain pinned cudaMemcpyAsync in the same run.
 *
 * For each chunk size from 64 KiB to 1 GiB (quartering steps), three
 * directions: host to device, device to host, and both at once.  The
 * plain figure copies between a pinned host buffer and a device buffer on
 * non-blocking streams, timed with events; the lms figure moves a
 * host-homed chunk through the context: a swap-in is an acquire of an
 * evicted chunk waited for on a stream, a swap-out is the eviction of a
 * written chunk (its write-back) waited for; both at once is a swap-in of
 * one chunk while another is written back.  Each figure is the median of
 * the repetitions, in GB/s (10^9 bytes per second), and the ratio is
 * lms over plain.
 *
 * Needs the CUDA device; in a build or on a machine without one it says
 * so and exits with status 2.  Device memory stays under 3 x the largest
 * size (3 GiB by default). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/ctx.h"
#include "cli/cli.h"
#include "core/log.h"

#ifdef LMS_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <time.h>

#define REPS 5

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

typedef struct plain {
  void *h[2], *d[2];
  cudaStream_t s[2];
  cudaEvent_t a[2], b[2];
} plain_t;

/* GB/s of plain copies of n bytes: dir 0 h2d, 1 d2h, 2 both at once (the
 * sum of both directions' bytes over the time of the pair). */
static double plain_rate(plain_t *p, size_t n, int dir) {
  double v[REPS];
  for (int r = 0; r < REPS + 1; r++) {
    for (int k = 0; k < 2; k++) {
      if (dir != 2 && k == 1) break;
      int h2d = dir == 2 ? k == 0 : dir == 0;
      cudaEventRecord(p->a[k], p->s[k]);
      if (h2d) cudaMemcpyAsync(p->d[k], p->h[k], n, cudaMemcpyHostToDevice, p->s[k]);
      else cudaMemcpyAsync(p->h[k], p->d[k], n, cudaMemcpyDeviceToHost, p->s[k]);
      cudaEventRecord(p->b[k], p->s[k]);
    }
    cudaEventSynchronize(p->b[0]);
    if (dir == 2) cudaEventSynchronize(p->b[1]);
    /* From the first start to the last end, across both streams. */
    float ms = 0, ms1 = 0;
    cudaEventElapsedTime(&ms, p->a[0], p->b[0]);
    if (dir == 2 && cudaEventElapsedTime(&ms1, p->a[0], p->b[1]) == cudaSuccess &&
        ms1 > ms)
      ms = ms1;
    double secs = ms * 1e-3;
    if (r > 0) v[r - 1] = (double)n * (dir == 2 ? 2.0 : 1.0) / secs / 1e9;
  }
  return median(v, REPS);
}

/* GB/s of the lms swap path for chunks of n bytes. */
static double lms_rate(lms_ctx_t *ctx, lms_stream_t s, lms_chunk_t *c[2],
                       size_t n, int dir, char *err) {
  double v[REPS];
  void *p;
  for (int r = 0; r < REPS + 1; r++) {
    /* c[0] evicted and clean at home; c[1] resident and dirty. */
    if (lms__swap_evict_all(&ctx->swap) != LMS_OK ||
        lms_acquire(ctx, c[1], s, LMS_ACCESS_RW, &p) != LMS_OK ||
        lms_release(ctx, c[1], s) != LMS_OK ||
        lms_stream_sync(ctx, s) != LMS_OK || lms__swap_sync(&ctx->swap) != LMS_OK) {
      snprintf(err, LMS__ERRBUF, "%s", lms_ctx_last_error(ctx));
      return -1.0;
    }
    double t0 = now_s();
    int ok = 1;
    if (dir == 0 || dir == 2)
      ok = lms_acquire(ctx, c[0], s, LMS_ACCESS_READ, &p) == LMS_OK;
    if (ok && (dir == 1 || dir == 2))
      ok = lms__swap_evict_all(&ctx->swap) == LMS_OK; /* writes c[1] back */
    if (ok) ok = lms_stream_sync(ctx, s) == LMS_OK &&
                 lms__swap_sync(&ctx->swap) == LMS_OK;
    double secs = now_s() - t0;
    if (dir == 0 || dir == 2) lms_release(ctx, c[0], s);
    if (!ok) {
      snprintf(err, LMS__ERRBUF, "%s", lms_ctx_last_error(ctx));
      return -1.0;
    }
    if (r > 0) v[r - 1] = (double)n * (dir == 2 ? 2.0 : 1.0) / secs / 1e9;
  }
  return median(v, REPS);
}

static int bench_link(const lms_options_t *base) {
  char why[256] = "";
  if (lms__cuda_device_count(why, sizeof why) <= 0) {
    fprintf(stderr, "lms bench link: needs a CUDA device (%s)\n", why);
    return LMS__EXIT_NO_GPU;
  }
  size_t max = 1u << 30;
  plain_t pl;
  memset(&pl, 0, sizeof pl);
  for (int k = 0; k < 2; k++) {
    if (cudaHostAlloc(&pl.h[k], max, cudaHostAllocPortable) != cudaSuccess ||
        cudaMalloc(&pl.d[k], max) != cudaSuccess ||
        cudaStreamCreateWithFlags(&pl.s[k], cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreate(&pl.a[k]) != cudaSuccess ||
        cudaEventCreate(&pl.b[k]) != cudaSuccess) {
      fprintf(stderr, "lms bench link: CUDA setup failed: %s\n",
              cudaGetErrorString(cudaGetLastError()));
      return 1;
    }
    memset(pl.h[k], 0x5a, max);
  }
  printf("lms bench link: pinned cudaMemcpyAsync against the lms swap path, "
         "GB/s, median of %d\n", REPS);
  printf("%10s  %8s %8s %6s  %8s %8s %6s  %8s %8s %6s\n", "chunk", "h2d", "lms",
         "ratio", "d2h", "lms", "ratio", "both", "lms", "ratio");
  int rc = 0;
  for (size_t n = 64u << 10; n <= max && rc == 0; n *= 4) {
    lms_options_t *o = NULL;
    lms_ctx_t *ctx = NULL;
    lms_stream_t s = NULL;
    lms_chunk_t *c[2] = {NULL, NULL};
    char err[LMS__ERRBUF] = "";
    char limit[32];
    snprintf(limit, sizeof limit, "%zu", 3 * n + (8u << 20));
    if (lms_options_create(&o) != LMS_OK) return 1;
    lms__opts_copy(&o->v, &base->v);
    lms_options_set(o, "device", "cuda");
    lms_options_set(o, "gpu-limit", limit);
    /* Both chunks host-homed: no size threshold, no fill level. */
    lms_options_set(o, "lms", "0");
    lms_options_set(o, "lms_frac", "0");
    lms_options_set(o, "policy", "lru");
    /* No prefetch: a swap-in must start inside the timed interval. */
    lms_options_set(o, "schedule", "off");
    if (lms_ctx_create(o, &ctx) != LMS_OK || lms_stream_create(ctx, &s) != LMS_OK ||
        lms_alloc(ctx, n, &c[0]) != LMS_OK || lms_alloc(ctx, n, &c[1]) != LMS_OK) {
      fprintf(stderr, "lms bench link: %s\n", ctx ? lms_ctx_last_error(ctx) : "no context");
      rc = 1;
    } else {
      void *p;
      /* Give c[0] data at home so that a swap-in copies. */
      lms_acquire(ctx, c[0], s, LMS_ACCESS_RW, &p);
      lms_release(ctx, c[0], s);
      if (!lms_chunk_host_homed(c[0]) || !lms_chunk_host_homed(c[1])) {
        fprintf(stderr, "lms bench link: the chunks of %zu bytes were placed on "
                "the device; nothing would be measured\n", n);
        rc = 1;
      }
      double r[3][2];
      for (int dir = 0; dir < 3 && rc == 0; dir++) {
        r[dir][0] = plain_rate(&pl, n, dir);
        r[dir][1] = lms_rate(ctx, s, c, n, dir, err);
        if (r[dir][1] < 0) {
          fprintf(stderr, "lms bench link: %s\n", err);
          rc = 1;
        }
      }
      if (rc == 0) {
        char label[16];
        if (n >= (1u << 30)) snprintf(label, sizeof label, "%zu GiB", n >> 30);
        else if (n >= (1u << 20)) snprintf(label, sizeof label, "%zu MiB", n >> 20);
        else snprintf(label, sizeof label, "%zu KiB", n >> 10);
        printf("%10s  %8.2f %8.2f %6.3f  %8.2f %8.2f %6.3f  %8.2f %8.2f %6.3f\n",
               label, r[0][0], r[0][1], r[0][1] / r[0][0], r[1][0], r[1][1],
               r[1][1] / r[1][0], r[2][0], r[2][1], r[2][1] / r[2][0]);
      }
    }
    if (ctx) {
      if (c[0]) lms_free(ctx, c[0]);
      if (c[1]) lms_free(ctx, c[1]);
      if (s) lms_stream_destroy(ctx, s);
      lms_ctx_destroy(ctx);
    }
    lms_options_destroy(o);
  }
  for (int k = 0; k < 2; k++) {
    cudaEventDestroy(pl.a[k]);
    cudaEventDestroy(pl.b[k]);
    cudaStreamDestroy(pl.s[k]);
    cudaFree(pl.d[k]);
    cudaFreeHost(pl.h[k]);
  }
  return rc;
}

#else /* !LMS_HAVE_CUDA */

static int bench_link(const lms_options_t *base) {
  (void)base;
  fprintf(stderr, "lms bench link: this build of lms has no CUDA device "
                  "(nvcc was not found when it was built)\n");
  return LMS__EXIT_NO_GPU;
}

#endif

int lms__cli_bench(const lms_options_t *base, int argc, char **argv) {
  if (argc >= 1 && strcmp(argv[0], "net") == 0)
    return lms__bench_net(base, argc - 1, argv + 1);
  if (argc >= 1 && strcmp(argv[0], "overlap") == 0)
    return lms__bench_overlap(base, argc - 1, argv + 1);
  if (argc < 1 || strcmp(argv[0], "link") != 0) {
    fprintf(stderr, "lms bench: %s'%s'; accepted: link, net, overlap\n",
            argc < 1 ? "no benchmark named " : "unknown benchmark ",
            argc < 1 ? "" : argv[0]);
    return 2;
  }
  if (argc > 1) {
    fprintf(stderr, "lms bench link: unexpected argument '%s'\n", argv[1]);
    return 2;
  }
  return bench_link(base);
}
