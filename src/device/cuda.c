/* cuda.c - the device-ops table on a real GPU, through the CUDA runtime.
 *
 * Built only when the CUDA toolkit is found (LMS_HAVE_CUDA); open.c picks
 * it for --device cuda, and for --device auto when a GPU is present.
 *
 * Each entry is one runtime call, as device.h's table was shaped for:
 * streams are non-blocking cudaStream_t, events are cudaEvent_t created
 * without timing, device memory comes from the stream-ordered allocator,
 * pinned host memory from cudaHostAlloc, or on a machine with several
 * NUMA nodes mapped on the GPU's node and registered (Note [Pinned slabs
 * on the GPU's node] in core/numa.c); the pinned pool asks for large
 * extents, so these are slabs, not one per chunk; copies are
 * cudaMemcpyAsync, and the timed
 * compute entry launches a kernel that spins on the GPU's global timer.
 * The device's capacity is what cudaMemGetInfo reports; --gpu-limit
 * lowers the budget above this table, not here.
 *
 * Invariants: every handle this file returns was created by it on the
 * device chosen at creation (cudaSetDevice is called before each entry
 * that allocates or creates, since the calling thread may have switched
 * devices); a failed call leaves last_error holding the runtime's text.
 *
 * Note [What is not verified here]: this file compiles on the machines
 * without a GPU that build lms; it runs only where one is present, and
 * its figures are recorded in bench/results/ when it has been. */
#ifdef LMS_HAVE_CUDA

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/numa.h"

#include "core/log.h"
#include "device/device.h"
#include "lms_kernels.h"

typedef struct cuda_dev {
  lms_dev_t head; /* first, so that a lms_dev_t * is a cuda_dev_t * */
  int ordinal;
  /* Note [Segments from the stream-ordered allocator] */
  cudaStream_t pool_stream;
  /* Link emulation (Note [Emulating a slower link]); 0: off. */
  double throttle_h2d_gbps, throttle_d2h_gbps;
  double native_h2d_gbps, native_d2h_gbps;
  int rates_measured; /* link_rates: 1 measured, -1 could not be */
  /* Note [Pinned slabs on the GPU's node] (core/numa.c); -1: the machine
   * has one node or the GPU's is unknown, and slabs come from
   * cudaHostAlloc. */
  int numa_node;
  size_t page;
} cuda_dev_t;

/* Note [Emulating a slower link]
 * To check the simulator's predictions at a second link speed on one
 * machine, copies can be slowed to a given rate: after a copy of n bytes
 * the same stream runs a spin kernel for n / rate - n / native, where the
 * native rate is measured when the device opens (one 64 MiB copy each
 * way, timed with events).  The copy stream is then busy for as long as
 * the slower link would keep it, while the bytes arrive early, which is
 * safe: nothing reads them before the stream's later work.  The spin
 * kernel takes one thread of one SM for that time. */
static lms_status_t fail(cuda_dev_t *c, cudaError_t e, const char *what);

static lms_status_t throttle(cuda_dev_t *c, size_t n, double rate,
                             double native, void *stream) {
  if (rate <= 0.0 || native <= 0.0 || rate >= native) return LMS_OK;
  double extra = (double)n / rate - (double)n / native; /* ns */
  if (extra < 1000.0) return LMS_OK;
  int e = lms_kernel_spin((uint64_t)extra, stream);
  if (e != 0) return fail(c, (cudaError_t)e, "link emulation: spin kernel");
  return LMS_OK;
}

#ifndef LMS_CUDA_ARCHS
#define LMS_CUDA_ARCHS "the toolkit's default"
#endif

static lms_status_t fail(cuda_dev_t *c, cudaError_t e, const char *what) {
  /* A kernel built for other GPUs (Note [CUDA architectures] in
   * CMakeLists.txt) says what to rebuild with. */
  int arch = e == cudaErrorNoKernelImageForDevice ||
             e == cudaErrorInvalidDeviceFunction;
  lms__errf(c->head.last_error, "%s: %s (%s)%s", what, cudaGetErrorString(e),
            cudaGetErrorName(e),
            arch ? "; lms's kernels were built for CUDA architectures "
                   LMS_CUDA_ARCHS ", not this GPU's: rebuild with "
                   "-DCMAKE_CUDA_ARCHITECTURES=native"
                 : "");
  if (e == cudaErrorMemoryAllocation) return LMS_ERR_DEVICE_OOM;
  return LMS_ERR_DEVICE;
}

#define CUDA_CALL(c, call, what)                                              \
  do {                                                                        \
    cudaError_t e_ = (call);                                                  \
    if (e_ != cudaSuccess) return fail((c), e_, (what));                      \
  } while (0)

/* A CUDA device, under the fault-injecting wrapper or not. */
static cuda_dev_t *as_cuda(lms_dev_t *d) {
  return (cuda_dev_t *)lms__dev_unwrap(d);
}

static lms_status_t select_device(cuda_dev_t *c) {
  CUDA_CALL(c, cudaSetDevice(c->ordinal), "cudaSetDevice");
  return LMS_OK;
}

static lms_status_t cu_mem_info(lms_dev_t *d, size_t *free_b, size_t *total_b) {
  cuda_dev_t *c = as_cuda(d);
  LMS_CHECK(select_device(c));
  CUDA_CALL(c, cudaMemGetInfo(free_b, total_b), "cudaMemGetInfo");
  return LMS_OK;
}

/* Note [Segments from the stream-ordered allocator]
 * The caching allocator above returns a segment and grows another when a
 * large chunk finds no free one of its size (Note [Paged large blocks]),
 * tens of times an iteration in GoogLeNet at batch 10.  cudaFree waits for
 * the whole device, so each return would drain the copy and compute
 * streams.  Segments therefore come from the device's default memory pool
 * (cudaMallocAsync) on a stream of this device's own, and go back to it
 * with cudaFreeAsync on that stream after the events of their last uses
 * (dev_free_after): the host never waits for other work to return memory.
 * An allocation waits for that stream alone, so that the memory it returns
 * is free of every earlier use and any stream may use it at once.  The
 * pool keeps what is returned up to the context's budget (set_budget sets
 * its release threshold) and trims to it when its stream is synchronized,
 * which each allocation does; between a return and that point it can
 * hold more than the budget (`lms bench net` reports the pool's peak).  A
 * pool capped at the budget (cudaMemPoolProps.maxSize) was measured and
 * refused: its free memory fell into pieces that GoogLeNet's 3.9 GB
 * classifier weights could not use even after trimming
 * (bench/results/2026-11-22-h100.md).  When the device itself has no room,
 * the allocation waits for the pool's stream, gives the pool's unused
 * memory back to the driver (cudaMemPoolTrimTo) and tries once more. */
static lms_status_t cu_dev_alloc(lms_dev_t *d, size_t size, void **out) {
  cuda_dev_t *c = as_cuda(d);
  LMS_CHECK(select_device(c));
  cudaError_t e = cudaSuccess;
  for (int attempt = 0; attempt < 2; attempt++) {
    e = cudaMallocAsync(out, size, c->pool_stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(c->pool_stream);
    if (e != cudaErrorMemoryAllocation) break;
    (void)cudaGetLastError();
    cudaMemPool_t pool;
    if (cudaStreamSynchronize(c->pool_stream) != cudaSuccess ||
        cudaDeviceGetDefaultMemPool(&pool, c->ordinal) != cudaSuccess ||
        cudaMemPoolTrimTo(pool, 0) != cudaSuccess)
      break;
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError(); /* clear the sticky-free error state */
    return fail(c, e, "cudaMallocAsync");
  }
  return LMS_OK;
}

static lms_status_t cu_dev_free(lms_dev_t *d, void *ptr) {
  cuda_dev_t *c = as_cuda(d);
  CUDA_CALL(c, cudaFreeAsync(ptr, c->pool_stream), "cudaFreeAsync");
  return LMS_OK;
}

static lms_status_t cu_dev_free_after(lms_dev_t *d, void *ptr, void *event) {
  cuda_dev_t *c = as_cuda(d);
  CUDA_CALL(c, cudaStreamWaitEvent(c->pool_stream, (cudaEvent_t)event, 0),
            "cudaStreamWaitEvent (segment return)");
  CUDA_CALL(c, cudaFreeAsync(ptr, c->pool_stream), "cudaFreeAsync");
  return LMS_OK;
}

/* A slab on the GPU's node: one page in front holds the mapping's size
 * for the free, then the pinned bytes. */
static lms_status_t host_alloc_on_node(cuda_dev_t *c, size_t size,
                                       void **out) {
  size_t total = c->page + ((size + c->page - 1) / c->page) * c->page;
  void *m = mmap(NULL, total, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    lms__errf(c->head.last_error, "mmap of %zu bytes for a pinned slab "
              "failed", total);
    return LMS_ERR_HOST_OOM;
  }
  char err[LMS__ERRBUF];
  if (lms__numa_prefer(m, total, c->numa_node, err) != LMS_OK)
    LMS_LOG(WARN, DEVICE, "%s; the slab goes where the kernel puts it", err);
  *(size_t *)m = total;
  void *p = (char *)m + c->page;
  cudaError_t e = cudaHostRegister(p, total - c->page,
                                   cudaHostRegisterPortable);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    munmap(m, total);
    lms__errf(c->head.last_error, "cudaHostRegister of %zu bytes: %s", size,
              cudaGetErrorString(e));
    return LMS_ERR_HOST_OOM;
  }
  *out = p;
  return LMS_OK;
}

static lms_status_t cu_host_alloc(lms_dev_t *d, size_t size, void **out) {
  cuda_dev_t *c = as_cuda(d);
  LMS_CHECK(select_device(c));
  if (c->numa_node >= 0) return host_alloc_on_node(c, size, out);
  cudaError_t e = cudaHostAlloc(out, size, cudaHostAllocPortable);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    lms__errf(c->head.last_error, "cudaHostAlloc of %zu bytes: %s", size,
              cudaGetErrorString(e));
    return LMS_ERR_HOST_OOM;
  }
  return LMS_OK;
}

static lms_status_t cu_host_free(lms_dev_t *d, void *ptr) {
  cuda_dev_t *c = as_cuda(d);
  if (c->numa_node >= 0) {
    CUDA_CALL(c, cudaHostUnregister(ptr), "cudaHostUnregister");
    void *m = (char *)ptr - c->page;
    munmap(m, *(size_t *)m);
    return LMS_OK;
  }
  CUDA_CALL(c, cudaFreeHost(ptr), "cudaFreeHost");
  return LMS_OK;
}

static lms_status_t cu_stream_create(lms_dev_t *d, void **out) {
  cuda_dev_t *c = as_cuda(d);
  LMS_CHECK(select_device(c));
  cudaStream_t s;
  CUDA_CALL(c, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
            "cudaStreamCreateWithFlags");
  *out = s;
  return LMS_OK;
}

static lms_status_t cu_stream_destroy(lms_dev_t *d, void *stream) {
  cuda_dev_t *c = as_cuda(d);
  CUDA_CALL(c, cudaStreamDestroy((cudaStream_t)stream), "cudaStreamDestroy");
  return LMS_OK;
}

static lms_status_t cu_stream_sync(lms_dev_t *d, void *stream) {
  cuda_dev_t *c = as_cuda(d);
  CUDA_CALL(c, cudaStreamSynchronize((cudaStream_t)stream),
            "cudaStreamSynchronize");
  return LMS_OK;
}

static lms_status_t cu_stream_wait(lms_dev_t *d, void *stream, void *event) {
  cuda_dev_t *c = as_cuda(d);
  CUDA_CALL(c, cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0),
            "cudaStreamWaitEvent");
  return LMS_OK;
}

static lms_status_t cu_copy_h2d(lms_dev_t *d, void *dst, const void *src,
                                size_t n, void *stream) {
  cuda_dev_t *c = as_cuda(d);
  CUDA_CALL(c, cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice,
                               (cudaStream_t)stream),
            "cudaMemcpyAsync (host to device)");
  return throttle(c, n, c->throttle_h2d_gbps, c->native_h2d_gbps, stream);
}

static lms_status_t cu_copy_d2h(lms_dev_t *d, void *dst, const void *src,
                                size_t n, void *stream) {
  cuda_dev_t *c = as_cuda(d);
  CUDA_CALL(c, cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost,
                               (cudaStream_t)stream),
            "cudaMemcpyAsync (device to host)");
  return throttle(c, n, c->throttle_d2h_gbps, c->native_d2h_gbps, stream);
}

/* An event with the given flags. */
static lms_status_t event_new(lms_dev_t *d, unsigned flags, void **out) {
  cuda_dev_t *c = as_cuda(d);
  LMS_CHECK(select_device(c));
  cudaEvent_t e;
  CUDA_CALL(c, cudaEventCreateWithFlags(&e, flags), "cudaEventCreateWithFlags");
  *out = e;
  return LMS_OK;
}

static lms_status_t cu_event_create(lms_dev_t *d, void **out) {
  return event_new(d, cudaEventDisableTiming, out);
}

/* With timing: each record is then timestamped by the GPU (cudaEvent
 * documents a resolution of about half a microsecond). */
static lms_status_t cu_event_create_timed(lms_dev_t *d, void **out) {
  return event_new(d, cudaEventDefault, out);
}

static lms_status_t cu_event_elapsed(lms_dev_t *d, void *from, void *to,
                                     uint64_t *ns) {
  cuda_dev_t *c = as_cuda(d);
  cudaError_t e = cudaEventQuery((cudaEvent_t)to);
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return LMS_NOT_READY;
  }
  if (e != cudaSuccess) return fail(c, e, "cudaEventQuery (timed)");
  float ms = 0;
  CUDA_CALL(c, cudaEventElapsedTime(&ms, (cudaEvent_t)from, (cudaEvent_t)to),
            "cudaEventElapsedTime");
  *ns = ms > 0 ? (uint64_t)((double)ms * 1e6 + 0.5) : 0;
  return LMS_OK;
}

static lms_status_t cu_event_destroy(lms_dev_t *d, void *event) {
  cuda_dev_t *c = as_cuda(d);
  CUDA_CALL(c, cudaEventDestroy((cudaEvent_t)event), "cudaEventDestroy");
  return LMS_OK;
}

static lms_status_t cu_event_record(lms_dev_t *d, void *event, void *stream) {
  cuda_dev_t *c = as_cuda(d);
  CUDA_CALL(c, cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream),
            "cudaEventRecord");
  return LMS_OK;
}

static lms_status_t cu_event_query(lms_dev_t *d, void *event) {
  cuda_dev_t *c = as_cuda(d);
  cudaError_t e = cudaEventQuery((cudaEvent_t)event);
  if (e == cudaSuccess) return LMS_OK;
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return LMS_NOT_READY;
  }
  return fail(c, e, "cudaEventQuery");
}

static lms_status_t cu_event_sync(lms_dev_t *d, void *event) {
  cuda_dev_t *c = as_cuda(d);
  CUDA_CALL(c, cudaEventSynchronize((cudaEvent_t)event), "cudaEventSynchronize");
  return LMS_OK;
}

static lms_status_t cu_compute(lms_dev_t *d, void *stream, uint64_t ns) {
  cuda_dev_t *c = as_cuda(d);
  int e = lms_kernel_spin(ns, stream);
  if (e != 0) return fail(c, (cudaError_t)e, "spin kernel launch");
  return LMS_OK;
}

/* The runtime cannot say how long a stream would wait; only whether the
 * event is done (then no wait).  The runtime measures the rest with timed
 * events (Note [Stalls measured after the fact] in swap/residency.c). */
static lms_status_t cu_wait_cost(lms_dev_t *d, void *stream, void *event,
                                 uint64_t *ns) {
  (void)stream;
  cudaError_t e = cudaEventQuery((cudaEvent_t)event);
  if (e == cudaSuccess) {
    *ns = 0;
    return LMS_OK;
  }
  (void)cudaGetLastError();
  (void)d;
  return LMS_ERR_UNSUPPORTED;
}

static uint64_t cu_now_ns(lms_dev_t *d) {
  (void)d;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void cu_set_budget(lms_dev_t *d, uint64_t bytes) {
  cuda_dev_t *c = as_cuda(d);
  cudaMemPool_t pool;
  uint64_t zero = 0;
  if (cudaDeviceGetDefaultMemPool(&pool, c->ordinal) != cudaSuccess ||
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &bytes) !=
          cudaSuccess ||
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero) !=
          cudaSuccess) {
    (void)cudaGetLastError();
    LMS_LOG(WARN, DEVICE, "cannot set the memory pool's release threshold; "
            "the pool may keep more than the budget");
  }
}

static void cu_destroy(lms_dev_t *d) {
  cuda_dev_t *c = as_cuda(d);
  if (c->pool_stream) {
    cudaStreamSynchronize(c->pool_stream);
    cudaStreamDestroy(c->pool_stream);
  }
  /* Give back what the pool kept for this context's segments. */
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, c->ordinal) == cudaSuccess)
    cudaMemPoolTrimTo(pool, 0);
  free(c);
}

static double measure_rate(int h2d);

/* The rates copies run at: the emulated link's where one is set, else the
 * native link's, measured once (one 64 MiB pinned copy each way, outside
 * the budget for a moment).  Both ways at once are not measured: 0. */
static lms_status_t cu_link_rates(lms_dev_t *d, double *h2d, double *d2h,
                                  double *both) {
  cuda_dev_t *c = as_cuda(d);
  if (c->rates_measured == 0) {
    if (c->native_h2d_gbps <= 0.0) c->native_h2d_gbps = measure_rate(1);
    if (c->native_d2h_gbps <= 0.0) c->native_d2h_gbps = measure_rate(0);
    c->rates_measured =
        c->native_h2d_gbps > 0.0 && c->native_d2h_gbps > 0.0 ? 1 : -1;
  }
  if (c->rates_measured < 0) return LMS_ERR_UNSUPPORTED;
  double in = c->native_h2d_gbps, out = c->native_d2h_gbps;
  if (c->throttle_h2d_gbps > 0.0 && c->throttle_h2d_gbps < in)
    in = c->throttle_h2d_gbps;
  if (c->throttle_d2h_gbps > 0.0 && c->throttle_d2h_gbps < out)
    out = c->throttle_d2h_gbps;
  *h2d = in * 1e9;
  *d2h = out * 1e9;
  *both = 0.0;
  return LMS_OK;
}

static const lms_dev_ops_t cuda_ops = {
    .version = LMS_DEV_OPS_VERSION,
    .name = "cuda",
    .mem_info = cu_mem_info,
    .dev_alloc = cu_dev_alloc,
    .dev_free = cu_dev_free,
    .host_alloc = cu_host_alloc,
    .host_free = cu_host_free,
    .stream_create = cu_stream_create,
    .stream_destroy = cu_stream_destroy,
    .stream_sync = cu_stream_sync,
    .stream_wait = cu_stream_wait,
    .copy_h2d = cu_copy_h2d,
    .copy_d2h = cu_copy_d2h,
    .event_create = cu_event_create,
    .event_destroy = cu_event_destroy,
    .event_record = cu_event_record,
    .event_query = cu_event_query,
    .event_sync = cu_event_sync,
    .compute = cu_compute,
    .wait_cost = cu_wait_cost,
    .now_ns = cu_now_ns,
    .destroy = cu_destroy,
    .dev_free_after = cu_dev_free_after,
    .set_budget = cu_set_budget,
    .event_create_timed = cu_event_create_timed,
    .event_elapsed = cu_event_elapsed,
    .link_rates = cu_link_rates,
};

uint64_t lms__cuda_pool_peak(lms_dev_t *d) {
  cuda_dev_t *c = as_cuda(d);
  cudaMemPool_t pool;
  uint64_t high = 0;
  if (cudaDeviceGetDefaultMemPool(&pool, c->ordinal) != cudaSuccess) return 0;
  if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &high) !=
      cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return high;
}

int lms__cuda_device_count(char *why, size_t why_size) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (why != NULL)
      snprintf(why, why_size, "%s", cudaGetErrorString(e));
    return 0;
  }
  if (n == 0 && why != NULL) snprintf(why, why_size, "no CUDA device found");
  return n;
}

/* GB/s of one 64 MiB pinned copy in the given direction; 0 on failure. */
static double measure_rate(int h2d) {
  const size_t n = 64u << 20;
  void *h = NULL, *d = NULL;
  cudaStream_t s = NULL;
  cudaEvent_t a = NULL, b = NULL;
  double gbps = 0.0;
  float ms = 0.0f;
  if (cudaHostAlloc(&h, n, cudaHostAllocPortable) == cudaSuccess &&
      cudaMalloc(&d, n) == cudaSuccess &&
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess &&
      cudaEventCreate(&a) == cudaSuccess && cudaEventCreate(&b) == cudaSuccess) {
    for (int k = 0; k < 2; k++) { /* the first pass warms up */
      cudaEventRecord(a, s);
      if (h2d) cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s);
      else cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, s);
      cudaEventRecord(b, s);
      cudaEventSynchronize(b);
    }
    if (cudaEventElapsedTime(&ms, a, b) == cudaSuccess && ms > 0.0f)
      gbps = (double)n / ((double)ms * 1e6);
  }
  (void)cudaGetLastError();
  if (a) cudaEventDestroy(a);
  if (b) cudaEventDestroy(b);
  if (s) cudaStreamDestroy(s);
  if (d) cudaFree(d);
  if (h) cudaFreeHost(h);
  return gbps;
}

lms_status_t lms__cuda_throttle(lms_dev_t *d, double h2d_gbps,
                                double d2h_gbps, char *err) {
  cuda_dev_t *c = as_cuda(d);
  if (!(h2d_gbps > 0.0) || !(d2h_gbps > 0.0)) {
    lms__errf(err, "link emulation: rates must be above 0 GB/s");
    return LMS_ERR_INVALID;
  }
  c->native_h2d_gbps = measure_rate(1);
  c->native_d2h_gbps = measure_rate(0);
  if (c->native_h2d_gbps <= 0.0 || c->native_d2h_gbps <= 0.0) {
    lms__errf(err, "link emulation: could not measure the native link");
    return LMS_ERR_DEVICE;
  }
  c->throttle_h2d_gbps = h2d_gbps;
  c->throttle_d2h_gbps = d2h_gbps;
  LMS_LOG(INFO, DEVICE, "link emulation: %.1f/%.1f GB/s over a native "
          "%.1f/%.1f GB/s", h2d_gbps, d2h_gbps, c->native_h2d_gbps,
          c->native_d2h_gbps);
  if (h2d_gbps >= c->native_h2d_gbps || d2h_gbps >= c->native_d2h_gbps)
    LMS_LOG(WARN, DEVICE, "link emulation: %.1f/%.1f GB/s is not slower "
            "than the native %.1f/%.1f GB/s; that direction runs native",
            h2d_gbps, d2h_gbps, c->native_h2d_gbps, c->native_d2h_gbps);
  return LMS_OK;
}

lms_status_t lms__cuda_create(int ordinal, lms_dev_t **out, char *err) {
  char why[256] = "";
  int n = lms__cuda_device_count(why, sizeof why);
  if (n <= 0) {
    lms__errf(err, "--device cuda: %s", why);
    return LMS_ERR_UNSUPPORTED;
  }
  if (ordinal < 0 || ordinal >= n) {
    lms__errf(err, "--device cuda: device %d does not exist; %d present",
              ordinal, n);
    return LMS_ERR_INVALID;
  }
  cuda_dev_t *c = calloc(1, sizeof *c);
  if (c == NULL) {
    lms__errf(err, "no host memory for the CUDA device");
    return LMS_ERR_HOST_OOM;
  }
  c->head.ops = &cuda_ops;
  c->ordinal = ordinal;
  c->numa_node = -1;
  long page = sysconf(_SC_PAGESIZE);
  c->page = page > 0 ? (size_t)page : 4096;
  cudaError_t e = cudaSetDevice(ordinal);
  if (e == cudaSuccess) e = cudaFree(NULL); /* create the context now */
  if (e != cudaSuccess) {
    lms__errf(err, "--device cuda: cannot start device %d: %s", ordinal,
              cudaGetErrorString(e));
    free(c);
    return LMS_ERR_DEVICE;
  }
  char busid[32];
  if (lms__numa_nodes("") > 1 &&
      cudaDeviceGetPCIBusId(busid, sizeof busid, ordinal) == cudaSuccess) {
    c->numa_node = lms__numa_node_of_pci("", busid);
    LMS_LOG(INFO, DEVICE, "device %d (%s) is on NUMA node %d; pinned slabs "
            "go there", ordinal, busid, c->numa_node);
  }
  (void)cudaGetLastError();
  cudaMemPool_t pool;
  uint64_t keep = UINT64_MAX;
  if (e == cudaSuccess)
    e = cudaStreamCreateWithFlags(&c->pool_stream, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaDeviceGetDefaultMemPool(&pool, ordinal);
  if (e == cudaSuccess)
    e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  if (e != cudaSuccess) {
    lms__errf(err, "--device cuda: cannot set up the memory pool of device "
              "%d: %s", ordinal, cudaGetErrorString(e));
    if (c->pool_stream) cudaStreamDestroy(c->pool_stream);
    free(c);
    return LMS_ERR_DEVICE;
  }
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, ordinal) == cudaSuccess)
    LMS_LOG(INFO, DEVICE, "CUDA device %d: %s, %.1f GiB", ordinal, prop.name,
            (double)prop.totalGlobalMem / (double)(1ull << 30));
  *out = &c->head;
  return LMS_OK;
}

#endif /* LMS_HAVE_CUDA */

/* Keeps this translation unit non-empty in builds without CUDA. */
typedef int lms__cuda_unit_t;
