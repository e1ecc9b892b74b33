/* bench_torch_alloc.c - the cost of lms_torch_malloc + lms_torch_free on
 * the fast path (a cached block of the same class on the same stream),
 * against cuMemAlloc + cuMemFree, on the current GPU.
 *
 *   lms_bench_torch_alloc [PAIRS] [BYTES]
 *
 * Prints the median and the 99th percentile of one pair in nanoseconds. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "lms/lms_torch.h"

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void report(const char *what, double *ns, int n) {
  qsort(ns, (size_t)n, sizeof *ns, cmp);
  printf("%-28s median %8.0f ns  p99 %8.0f ns  (%d pairs)\n", what,
         ns[n / 2], ns[(int)(n * 0.99)], n);
}

int main(int argc, char **argv) {
  int pairs = argc > 1 ? atoi(argv[1]) : 100000;
  long long bytes = argc > 2 ? atoll(argv[2]) : 1 << 20;
  if (pairs < 100 || bytes <= 0) {
    fprintf(stderr, "usage: %s [PAIRS >= 100] [BYTES > 0]\n", argv[0]);
    return 64;
  }
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  if (lms_torch_init() != 0) {
    fprintf(stderr, "%s\n", lms_torch_last_error());
    return 1;
  }
  double *ns = malloc(sizeof(double) * (size_t)pairs);
  if (ns == NULL) return 1;
  void *warm = lms_torch_malloc(bytes, 0, NULL);
  lms_torch_free(warm, bytes, 0, NULL);
  for (int i = 0; i < pairs; i++) {
    double t0 = now_ns();
    void *p = lms_torch_malloc(bytes, 0, NULL);
    lms_torch_free(p, bytes, 0, NULL);
    ns[i] = now_ns() - t0;
    if (p == NULL) {
      fprintf(stderr, "%s\n", lms_torch_last_error());
      return 1;
    }
  }
  report("lms_torch_malloc+free", ns, pairs);
  int raw = pairs < 2000 ? pairs : 2000;
  for (int i = 0; i < raw; i++) {
    CUdeviceptr p;
    double t0 = now_ns();
    if (cuMemAlloc(&p, (size_t)bytes) != CUDA_SUCCESS) return 1;
    cuMemFree(p);
    ns[i] = now_ns() - t0;
  }
  report("cuMemAlloc+cuMemFree", ns, raw);
  char buf[2048];
  lms_torch_stats_json(buf, sizeof buf);
  printf("stats %s\n", buf);
  free(ns);
  return 0;
}
