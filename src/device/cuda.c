/* cuda.c - the device-ops table on a real GPU, through the CUDA runtime.
 *
 * Built only when the CUDA toolkit is found (LMS_HAVE_CUDA); open.c picks
 * it for --device cuda, and for --device auto when a GPU is present.
 *
 * Each entry is one runtime call, as device.h's table was shaped for:
 * streams are non-blocking cudaStream_t, events are cudaEvent_t created
 * without timing, device memory comes from the stream-ordered allocator
 * (with --piece-size, from the driver's virtual memory calls, Note
 * [Mapping pieces on a GPU]), pinned host memory from cudaHostAlloc, or on a machine with several
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

#include <cuda.h> /* the driver's types; its entry points come through cudart */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
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

/* Note [Mapping pieces on a GPU]: the driver's virtual memory calls, the
 * blocks made with them, the reservations, and what each reservation
 * shows where. */
typedef struct vmm_fns {
  CUresult (*create)(CUmemGenericAllocationHandle *, size_t,
                     const CUmemAllocationProp *, unsigned long long);
  CUresult (*release)(CUmemGenericAllocationHandle);
  CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
                      unsigned long long);
  CUresult (*addr_free)(CUdeviceptr, size_t);
  CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                  unsigned long long);
  CUresult (*unmap)(CUdeviceptr, size_t);
  CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
  CUresult (*granularity)(size_t *, const CUmemAllocationProp *,
                          CUmemAllocationGranularity_flags);
  CUresult (*retain)(CUmemGenericAllocationHandle *, void *);
  CUresult (*device_get)(CUdevice *, int);
  CUresult (*attribute)(int *, CUdevice_attribute, CUdevice);
  CUresult (*error_string)(CUresult, const char **);
} vmm_fns_t;

typedef struct vmm_range {
  uintptr_t base;
  size_t size;     /* as mapped or reserved: whole granules */
  uintptr_t block; /* an alias: the block it shows */
} vmm_range_t;

typedef struct vmm_set {
  vmm_range_t *v;
  size_t n, cap;
} vmm_set_t;

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
  /* Note [Mapping pieces on a GPU]; vmm 0: device memory comes from the
   * stream-ordered allocator and nothing is mapped. */
  int vmm;
  size_t gran;
  CUmemAllocationProp prop;
  CUmemAccessDesc access;
  vmm_fns_t f;
  vmm_set_t blocks, reserved, aliases;
  pthread_mutex_t vmm_lock; /* the three sets: entries may be called
                               from several threads at once */
  lms_dev_ops_t ops_vmm; /* cuda_ops with the calls above in place */
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

static void vmm_fini(cuda_dev_t *c);

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
  vmm_fini(c);
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

/* Note [Mapping pieces on a GPU]
 * A chunk of pieces (Note [Chunks of pieces] in swap/residency.c) is a
 * range of device addresses where each piece's block is shown while the
 * chunk is acquired.  The stream-ordered allocator's memory cannot be
 * shown at a second address, so with --piece-size the device's blocks of
 * a granule or more (every piece's among them) come from the driver's
 * virtual memory calls instead: each is a physical allocation
 * (cuMemCreate) mapped at an address range of its own
 * (cuMemAddressReserve, cuMemMap, cuMemSetAccess), its size rounded up to
 * the allocation granularity (2 MiB on the GPUs seen so far; the budget
 * counts the size asked for, so a block of a size off the grain holds
 * less than a granule more than the budget says: at most as much again,
 * for a block just over 2 MiB, and under 7 % for blocks of 32 MiB or
 * more).  Smaller blocks still come from the stream-ordered allocator,
 * which packs them into shared pages.  va_reserve reserves a range;
 * dev_map takes the block's allocation back from its address
 * (cuMemRetainAllocationHandle) and maps it into the range as well,
 * replacing what the range showed there.  The driver calls are looked up
 * through cudart (cudaGetDriverEntryPointByVersion), so lms does not link
 * the driver library and loads on machines without one.
 *
 * What the driver leaves to the caller: a mapping may be replaced or
 * removed only once no work uses it (the residency module waits for the
 * old mapping's users before it shows a piece again, Note [Showing a
 * piece again]); and memory freed while still mapped elsewhere stays
 * allocated until every mapping of it is gone.  So every alias (a
 * block shown in a reservation) is kept here, and a block given back
 * takes its aliases with it: a reservation never shows memory that is
 * no longer a block's, and freed memory is freed.  A block is given back
 * (dev_free_after) once the event of its last use is done: the host
 * waits for it, where the stream-ordered allocator would not.
 *
 * Cost: blocks, reservations and aliases are kept in arrays searched
 * whole, O(n) a call for n of them (a few thousand at most for 32 MiB
 * pieces of an 80 GB device); each call is also one to four driver
 * calls, which take microseconds, against a copy of a piece of
 * milliseconds.
 *
 * `lms bench net`'s pool peak (lms__cuda_pool_peak) then counts the
 * small blocks alone.
 *
 * Not verified here (Note [What is not verified here]): no GPU has run
 * this yet. */
static lms_status_t vmm_fail(cuda_dev_t *c, CUresult r, const char *what) {
  const char *text = NULL;
  if (c->f.error_string == NULL || c->f.error_string(r, &text) != CUDA_SUCCESS ||
      text == NULL)
    text = "unknown error";
  lms__errf(c->head.last_error, "%s: %s (CUresult %d)", what, text, (int)r);
  return r == CUDA_ERROR_OUT_OF_MEMORY ? LMS_ERR_DEVICE_OOM : LMS_ERR_DEVICE;
}

static size_t vmm_round(const cuda_dev_t *c, size_t n) {
  return (n + c->gran - 1) / c->gran * c->gran;
}

static int vmm_add(vmm_set_t *set, uintptr_t base, size_t size,
                   uintptr_t block) {
  if (set->n == set->cap) {
    size_t ncap = set->cap ? set->cap * 2 : 64;
    vmm_range_t *v = realloc(set->v, ncap * sizeof *v);
    if (v == NULL) return -1;
    set->v = v;
    set->cap = ncap;
  }
  set->v[set->n++] = (vmm_range_t){.base = base, .size = size, .block = block};
  return 0;
}

static void vmm_remove(vmm_set_t *set, size_t i) {
  set->v[i] = set->v[--set->n];
}

/* The index of the range starting at base, or of the one containing it
 * with `containing`; set->n if none. */
static size_t vmm_find(const vmm_set_t *set, uintptr_t base, int containing) {
  for (size_t i = 0; i < set->n; i++) {
    const vmm_range_t *r = &set->v[i];
    if (r->base == base ||
        (containing && base >= r->base && base - r->base < r->size))
      return i;
  }
  return set->n;
}

/* Unmaps the aliases of block `block` (lo == hi), or those overlapping
 * [lo, hi); an alias whose unmap fails stays, and the first failure is
 * returned. */
static lms_status_t vmm_unalias(cuda_dev_t *c, uintptr_t block, uintptr_t lo,
                                uintptr_t hi) {
  lms_status_t first = LMS_OK;
  for (size_t i = 0; i < c->aliases.n;) {
    const vmm_range_t *a = &c->aliases.v[i];
    int hit = hi > lo ? a->base < hi && a->base + a->size > lo
                      : a->block == block;
    if (!hit) {
      i++;
      continue;
    }
    CUresult r = c->f.unmap((CUdeviceptr)a->base, a->size);
    if (r != CUDA_SUCCESS) {
      if (first == LMS_OK) first = vmm_fail(c, r, "cuMemUnmap of a piece's mapping");
      i++;
      continue;
    }
    vmm_remove(&c->aliases, i);
  }
  return first;
}

/* Blocks smaller than a granule would each take a whole one: they come
 * from the stream-ordered allocator as without pieces, which packs them
 * into shared pages; every piece is a granule or more (lms__cuda_map_pieces
 * checks), so every block dev_map is given is one of these. */
static int vmm_sized(const cuda_dev_t *c, size_t size) {
  return size >= c->gran;
}

static lms_status_t vmm_alloc_locked(cuda_dev_t *c, size_t size, void **out) {
  size_t n = vmm_round(c, size);
  CUmemGenericAllocationHandle h = 0;
  CUdeviceptr va = 0;
  CUresult r = c->f.create(&h, n, &c->prop, 0);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    /* The pool may keep freed small blocks' memory: give it back to the
     * driver and try once more, as cu_dev_alloc does. */
    cudaMemPool_t pool;
    if (cudaStreamSynchronize(c->pool_stream) == cudaSuccess &&
        cudaDeviceGetDefaultMemPool(&pool, c->ordinal) == cudaSuccess &&
        cudaMemPoolTrimTo(pool, 0) == cudaSuccess)
      r = c->f.create(&h, n, &c->prop, 0);
    (void)cudaGetLastError();
  }
  if (r != CUDA_SUCCESS) return vmm_fail(c, r, "cuMemCreate");
  r = c->f.reserve(&va, n, c->gran, 0, 0);
  if (r != CUDA_SUCCESS) {
    c->f.release(h);
    return vmm_fail(c, r, "cuMemAddressReserve");
  }
  const char *what = "cuMemMap of a new block";
  r = c->f.map(va, n, 0, h, 0);
  if (r == CUDA_SUCCESS) {
    what = "cuMemSetAccess of a new block";
    r = c->f.set_access(va, n, &c->access, 1);
    if (r != CUDA_SUCCESS) c->f.unmap(va, n);
  }
  /* Mapped, the memory lives as long as a mapping of it does. */
  c->f.release(h);
  if (r != CUDA_SUCCESS) {
    c->f.addr_free(va, n);
    return vmm_fail(c, r, what);
  }
  if (vmm_add(&c->blocks, (uintptr_t)va, n, 0) != 0) {
    c->f.unmap(va, n);
    c->f.addr_free(va, n);
    lms__errf(c->head.last_error, "no host memory to keep a device block");
    return LMS_ERR_HOST_OOM;
  }
  *out = (void *)va;
  return LMS_OK;
}

static lms_status_t cu_vmm_alloc(lms_dev_t *d, size_t size, void **out) {
  cuda_dev_t *c = as_cuda(d);
  if (!vmm_sized(c, size)) return cu_dev_alloc(d, size, out);
  LMS_CHECK(select_device(c));
  pthread_mutex_lock(&c->vmm_lock);
  lms_status_t st = vmm_alloc_locked(c, size, out);
  pthread_mutex_unlock(&c->vmm_lock);
  return st;
}

/* Gives back block i: its aliases, its mapping, its addresses.  On a
 * failure before the memory is unmapped nothing is forgotten, so that
 * the caller may try again. */
static lms_status_t vmm_free_locked(cuda_dev_t *c, size_t i) {
  vmm_range_t b = c->blocks.v[i];
  LMS_CHECK(vmm_unalias(c, b.base, 0, 0));
  CUresult r = c->f.unmap((CUdeviceptr)b.base, b.size);
  if (r != CUDA_SUCCESS) return vmm_fail(c, r, "cuMemUnmap of a block");
  vmm_remove(&c->blocks, i);
  /* The memory is free; only the addresses could be left. */
  r = c->f.addr_free((CUdeviceptr)b.base, b.size);
  if (r != CUDA_SUCCESS) {
    vmm_fail(c, r, "cuMemAddressFree of a block");
    LMS_LOG(WARN, DEVICE, "%s; its %zu bytes of addresses stay reserved",
            c->head.last_error, b.size);
  }
  return LMS_OK;
}

/* Gives back ptr if it is a block of these calls (*ours 1); *ours 0: it
 * is the stream-ordered allocator's. */
static lms_status_t vmm_free_if_ours(cuda_dev_t *c, void *ptr, int *ours) {
  pthread_mutex_lock(&c->vmm_lock);
  size_t i = vmm_find(&c->blocks, (uintptr_t)ptr, 0);
  *ours = i < c->blocks.n;
  lms_status_t st = *ours ? vmm_free_locked(c, i) : LMS_OK;
  pthread_mutex_unlock(&c->vmm_lock);
  return st;
}

static lms_status_t cu_vmm_free(lms_dev_t *d, void *ptr) {
  cuda_dev_t *c = as_cuda(d);
  int ours = 0;
  lms_status_t st = vmm_free_if_ours(c, ptr, &ours);
  return ours ? st : cu_dev_free(d, ptr);
}

static lms_status_t cu_vmm_free_after(lms_dev_t *d, void *ptr, void *event) {
  cuda_dev_t *c = as_cuda(d);
  pthread_mutex_lock(&c->vmm_lock);
  int ours = vmm_find(&c->blocks, (uintptr_t)ptr, 0) < c->blocks.n;
  pthread_mutex_unlock(&c->vmm_lock);
  if (!ours) return cu_dev_free_after(d, ptr, event);
  /* Unmapping does not wait for the work that uses the memory. */
  CUDA_CALL(c, cudaEventSynchronize((cudaEvent_t)event),
            "cudaEventSynchronize (block return)");
  return cu_vmm_free(d, ptr);
}

static lms_status_t cu_va_reserve(lms_dev_t *d, size_t size, void **va) {
  cuda_dev_t *c = as_cuda(d);
  LMS_CHECK(select_device(c));
  size_t n = vmm_round(c, size ? size : 1);
  size_t align = c->gran > (2u << 20) ? c->gran : (2u << 20);
  CUdeviceptr p = 0;
  pthread_mutex_lock(&c->vmm_lock);
  lms_status_t st = LMS_OK;
  CUresult r = c->f.reserve(&p, n, align, 0, 0);
  if (r != CUDA_SUCCESS) {
    st = vmm_fail(c, r, "cuMemAddressReserve");
  } else if (vmm_add(&c->reserved, (uintptr_t)p, n, 0) != 0) {
    c->f.addr_free(p, n);
    lms__errf(c->head.last_error, "no host memory to keep a reservation");
    st = LMS_ERR_HOST_OOM;
  } else {
    *va = (void *)p;
  }
  pthread_mutex_unlock(&c->vmm_lock);
  return st;
}

static lms_status_t va_release_locked(cuda_dev_t *c, void *va) {
  size_t i = vmm_find(&c->reserved, (uintptr_t)va, 0);
  if (i == c->reserved.n) {
    lms__errf(c->head.last_error, "va_release: %p is not a reservation", va);
    return LMS_ERR_INVALID;
  }
  vmm_range_t res = c->reserved.v[i];
  LMS_CHECK(vmm_unalias(c, 0, res.base, res.base + res.size));
  CUresult r = c->f.addr_free((CUdeviceptr)res.base, res.size);
  if (r != CUDA_SUCCESS) return vmm_fail(c, r, "cuMemAddressFree of a reservation");
  vmm_remove(&c->reserved, i);
  return LMS_OK;
}

static lms_status_t cu_va_release(lms_dev_t *d, void *va) {
  cuda_dev_t *c = as_cuda(d);
  pthread_mutex_lock(&c->vmm_lock);
  lms_status_t st = va_release_locked(c, va);
  pthread_mutex_unlock(&c->vmm_lock);
  return st;
}

/* A failure after the range's old mapping went leaves the range showing
 * nothing there; the residency module then counts the piece as shown
 * nowhere and maps it at the next acquire. */
static lms_status_t dev_map_locked(cuda_dev_t *c, void *va, void *ptr,
                                   size_t size) {
  uintptr_t at = (uintptr_t)va;
  size_t n = vmm_round(c, size ? size : 1);
  size_t ri = vmm_find(&c->reserved, at, 1);
  size_t bi = vmm_find(&c->blocks, (uintptr_t)ptr, 0);
  if (ri == c->reserved.n || at % c->gran != 0 ||
      n > c->reserved.v[ri].size - (at - c->reserved.v[ri].base)) {
    lms__errf(c->head.last_error, "dev_map: [%p, +%zu) is not a part of one "
              "reservation on the %zu-byte grain", va, size, c->gran);
    return LMS_ERR_INVALID;
  }
  if (bi == c->blocks.n || c->blocks.v[bi].size < n) {
    lms__errf(c->head.last_error, "dev_map: %p is not the start of a device "
              "block of at least %zu bytes", ptr, n);
    return LMS_ERR_INVALID;
  }
  CUmemGenericAllocationHandle h = 0;
  CUresult r = c->f.retain(&h, ptr);
  if (r != CUDA_SUCCESS) return vmm_fail(c, r, "cuMemRetainAllocationHandle");
  /* What the range showed there goes first: its users are done (the
   * caller waited, Note [Showing a piece again]). */
  lms_status_t st = vmm_unalias(c, 0, at, at + n);
  if (st != LMS_OK) {
    c->f.release(h);
    return st;
  }
  r = c->f.map((CUdeviceptr)at, n, 0, h, 0);
  c->f.release(h);
  if (r != CUDA_SUCCESS) return vmm_fail(c, r, "cuMemMap of a piece");
  r = c->f.set_access((CUdeviceptr)at, n, &c->access, 1);
  if (r != CUDA_SUCCESS) {
    c->f.unmap((CUdeviceptr)at, n);
    return vmm_fail(c, r, "cuMemSetAccess of a piece");
  }
  if (vmm_add(&c->aliases, at, n, (uintptr_t)ptr) != 0) {
    c->f.unmap((CUdeviceptr)at, n);
    lms__errf(c->head.last_error, "no host memory to keep a mapping");
    return LMS_ERR_HOST_OOM;
  }
  return LMS_OK;
}

static lms_status_t cu_dev_map(lms_dev_t *d, void *va, void *ptr, size_t size) {
  cuda_dev_t *c = as_cuda(d);
  LMS_CHECK(select_device(c));
  pthread_mutex_lock(&c->vmm_lock);
  lms_status_t st = dev_map_locked(c, va, ptr, size);
  pthread_mutex_unlock(&c->vmm_lock);
  return st;
}

/* Gives back every block and reservation still held (the context's end,
 * after the residency module waited for every use). */
static void vmm_fini(cuda_dev_t *c) {
  if (c->vmm) {
    if (cudaSetDevice(c->ordinal) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess)
      LMS_LOG(WARN, DEVICE, "device %d: could not wait for its work before "
              "giving its memory back", c->ordinal);
    (void)cudaGetLastError();
    pthread_mutex_lock(&c->vmm_lock);
    while (c->reserved.n > 0 &&
           va_release_locked(c, (void *)c->reserved.v[0].base) == LMS_OK) {
    }
    while (c->blocks.n > 0 && vmm_free_locked(c, 0) == LMS_OK) {
    }
    if (c->reserved.n > 0 || c->blocks.n > 0)
      LMS_LOG(WARN, DEVICE, "device %d: %zu reservations and %zu blocks could "
              "not be given back: %s", c->ordinal, c->reserved.n,
              c->blocks.n, c->head.last_error);
    pthread_mutex_unlock(&c->vmm_lock);
    pthread_mutex_destroy(&c->vmm_lock);
  }
  free(c->blocks.v);
  free(c->reserved.v);
  free(c->aliases.v);
}

static int vmm_entry(const char *name, void **fn) {
  cudaError_t e;
#if CUDART_VERSION >= 12050
  enum cudaDriverEntryPointQueryResult q;
  e = cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault, &q);
  if (e == cudaSuccess && q != cudaDriverEntryPointSuccess) *fn = NULL;
#elif CUDART_VERSION >= 12000
  enum cudaDriverEntryPointQueryResult q;
  e = cudaGetDriverEntryPoint(name, fn, cudaEnableDefault, &q);
  if (e == cudaSuccess && q != cudaDriverEntryPointSuccess) *fn = NULL;
#else
  e = cudaGetDriverEntryPoint(name, fn, cudaEnableDefault);
#endif
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    *fn = NULL;
  }
  return *fn != NULL;
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

lms_status_t lms__cuda_map_pieces(lms_dev_t *d, uint64_t piece, char *err) {
  cuda_dev_t *c = as_cuda(d);
  vmm_fns_t *f = &c->f;
  struct {
    const char *name;
    void **fn;
  } want[] = {
      {"cuMemCreate", (void **)&f->create},
      {"cuMemRelease", (void **)&f->release},
      {"cuMemAddressReserve", (void **)&f->reserve},
      {"cuMemAddressFree", (void **)&f->addr_free},
      {"cuMemMap", (void **)&f->map},
      {"cuMemUnmap", (void **)&f->unmap},
      {"cuMemSetAccess", (void **)&f->set_access},
      {"cuMemGetAllocationGranularity", (void **)&f->granularity},
      {"cuMemRetainAllocationHandle", (void **)&f->retain},
      {"cuDeviceGet", (void **)&f->device_get},
      {"cuDeviceGetAttribute", (void **)&f->attribute},
      {"cuGetErrorString", (void **)&f->error_string},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (!vmm_entry(want[i].name, want[i].fn)) {
      lms__errf(err, "the driver has no %s", want[i].name);
      return LMS_ERR_UNSUPPORTED;
    }
  CUdevice dev = 0;
  int ok = 0;
  if (f->device_get(&dev, c->ordinal) != CUDA_SUCCESS ||
      f->attribute(&ok, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                   dev) != CUDA_SUCCESS || !ok) {
    lms__errf(err, "device %d does not support virtual memory management",
              c->ordinal);
    return LMS_ERR_UNSUPPORTED;
  }
  memset(&c->prop, 0, sizeof c->prop);
  c->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  c->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  c->prop.location.id = c->ordinal;
  memset(&c->access, 0, sizeof c->access);
  c->access.location = c->prop.location;
  c->access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  size_t g = 0;
  if (f->granularity(&g, &c->prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
          CUDA_SUCCESS || g == 0) {
    lms__errf(err, "device %d does not say how it maps memory "
              "(cuMemGetAllocationGranularity)", c->ordinal);
    return LMS_ERR_UNSUPPORTED;
  }
  /* Every piece is a granule or more (vmm_sized), the last at least
   * LMS__PIECE_LEAST (2 MiB), the others `piece`. */
  if (piece % g != 0 || g > (2u << 20)) {
    lms__errf(err, "device %d maps memory in granules of %zu bytes, which "
              "%llu-byte pieces (the last at least 2 MiB) are not made of",
              c->ordinal, g, (unsigned long long)piece);
    return LMS_ERR_UNSUPPORTED;
  }
  if (pthread_mutex_init(&c->vmm_lock, NULL) != 0) {
    lms__errf(err, "no lock for the device's mappings");
    return LMS_ERR_HOST_OOM;
  }
  c->gran = g;
  c->vmm = 1;
  c->ops_vmm = cuda_ops;
  c->ops_vmm.dev_alloc = cu_vmm_alloc;
  c->ops_vmm.dev_free = cu_vmm_free;
  c->ops_vmm.dev_free_after = cu_vmm_free_after;
  c->ops_vmm.va_reserve = cu_va_reserve;
  c->ops_vmm.va_release = cu_va_release;
  c->ops_vmm.dev_map = cu_dev_map;
  c->head.ops = &c->ops_vmm;
  LMS_LOG(INFO, DEVICE, "device %d: memory from cuMemCreate in granules of "
          "%zu bytes, so that chunks of pieces can be mapped", c->ordinal, g);
  return LMS_OK;
}

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
