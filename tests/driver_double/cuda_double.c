/* cuda_double.c - a test double of the CUDA driver, built as libcuda.so.1,
 * so that the LD_PRELOAD interposer can be tested on machines without a
 * GPU.  "Device" memory is host memory, so a test reads and writes it
 * directly; kernels are host functions registered by the test.
 *
 * It keeps the driver's shape where the interposer depends on it:
 *  - the versioned exports (cuMemAlloc and cuMemAlloc_v2, the _ptsz
 *    forms, cuGetProcAddress and _v2) with the prototypes of cuda.h, and a
 *    cuGetProcAddress that picks among them by cudaVersion and the
 *    per-thread flag as the real driver documents;
 *  - a fixed physical size (CUDOUBLE_MEMORY) past which device
 *    allocations fail with CUDA_ERROR_OUT_OF_MEMORY, and managed memory
 *    that is not counted against it;
 *  - cuMemAdvise and cuMemPrefetchAsync record what they were told, which
 *    cudouble_query() reports.
 * The old 32-bit forms (cuMemAlloc, cuMemFree, ...) exist only so that
 * versioned lookups have something distinct to return; they answer
 * CUDA_ERROR_NOT_SUPPORTED.
 *
 * Inside cuMemAlloc_v2 the double asks dlsym for two names, one of them a
 * name the interposer hooks: this is the "dlsym from inside a hook path"
 * that a preloaded dlsym must survive.
 *
 * Linked with -Bsymbolic, so that its own calls (the trampolines) reach its
 * own functions and never an interposer's. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_double.h"

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_inited;
static cudouble_stats_t g_st;

/* ---- Allocations ------------------------------------------------------ */

typedef struct rec {
  uint64_t ptr;
  cudouble_alloc_info_t info;
  struct rec *next;
} rec_t;

static rec_t *g_recs;

static uint64_t parse_bytes(const char *s, uint64_t def) {
  if (s == NULL || *s == '\0') return def;
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s) return def;
  switch (*end) {
  case 'K': case 'k': v <<= 10; break;
  case 'M': case 'm': v <<= 20; break;
  case 'G': case 'g': v <<= 30; break;
  default: break;
  }
  return v;
}

static uint64_t physical(void) {
  if (g_st.physical == 0)
    g_st.physical = parse_bytes(getenv("CUDOUBLE_MEMORY"), 256ull << 20);
  return g_st.physical;
}

static rec_t *find(uint64_t ptr) {
  for (rec_t *r = g_recs; r != NULL; r = r->next)
    if (r->ptr == ptr) return r;
  return NULL;
}

/* Finds the allocation holding [ptr, ptr + count). */
static rec_t *find_range(uint64_t ptr, size_t count) {
  for (rec_t *r = g_recs; r != NULL; r = r->next)
    if (ptr >= r->ptr && ptr + count <= r->ptr + r->info.size) return r;
  return NULL;
}

static int need_ctx(void);

/* Under g_lock: device memory in use, device allocations and managed
 * pages on the device together. */
static void note_footprint(void) {
  uint64_t f = g_st.device_bytes + g_st.managed_on_device;
  if (f > g_st.footprint_peak) g_st.footprint_peak = f;
}

static CUresult do_alloc(CUdeviceptr *dptr, size_t size, int kind) {
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (need_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
  if (dptr == NULL || size == 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_lock);
  if (kind != CUDOUBLE_MANAGED && g_st.device_bytes + size > physical()) {
    g_st.oom_calls++;
    pthread_mutex_unlock(&g_lock);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  rec_t *r = calloc(1, sizeof *r);
  void *mem = calloc(1, size);
  if (r == NULL || mem == NULL) {
    free(r);
    free(mem);
    pthread_mutex_unlock(&g_lock);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  r->ptr = (uint64_t)(uintptr_t)mem;
  r->info.kind = kind;
  r->info.size = size;
  r->next = g_recs;
  g_recs = r;
  if (kind == CUDOUBLE_MANAGED) {
    g_st.managed_calls++;
    g_st.managed_bytes += size;
  } else {
    g_st.alloc_calls++;
    g_st.device_bytes += size;
    if (g_st.device_bytes > g_st.device_peak)
      g_st.device_peak = g_st.device_bytes;
    note_footprint();
  }
  pthread_mutex_unlock(&g_lock);
  *dptr = r->ptr;
  return CUDA_SUCCESS;
}

static CUresult do_free(CUdeviceptr ptr) {
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (ptr == 0) return CUDA_SUCCESS;
  pthread_mutex_lock(&g_lock);
  rec_t **pp = &g_recs;
  while (*pp != NULL && (*pp)->ptr != ptr) pp = &(*pp)->next;
  rec_t *r = *pp;
  if (r == NULL) {
    g_st.bad_free_calls++;
    pthread_mutex_unlock(&g_lock);
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pp = r->next;
  if (r->info.kind == CUDOUBLE_MANAGED &&
      r->info.prefetched_to == CU_MEM_LOCATION_TYPE_DEVICE)
    g_st.managed_on_device -= r->info.size;
  if (r->info.kind == CUDOUBLE_MANAGED) g_st.managed_bytes -= r->info.size;
  else g_st.device_bytes -= r->info.size;
  g_st.free_calls++;
  pthread_mutex_unlock(&g_lock);
  free((void *)(uintptr_t)r->ptr);
  free(r);
  return CUDA_SUCCESS;
}

/* ---- Initialisation, devices, contexts, streams ------------------------ */

static int g_ctx_token;

CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  g_inited = 1;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v) {
  if (v == NULL) return CUDA_ERROR_INVALID_VALUE;
  *v = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (count == NULL) return CUDA_ERROR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev == NULL || ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *dev = 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (pctx == NULL || dev != 0) return CUDA_ERROR_INVALID_VALUE;
  *pctx = (CUcontext)&g_ctx_token;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* Each thread's current context, as the driver keeps it.  Only with
 * CUDOUBLE_REQUIRE_CTX=1 do allocations insist on one, as the real
 * driver does; the interposer's tests run without. */
static __thread CUcontext t_ctx;

static int need_ctx(void) {
  const char *e = getenv("CUDOUBLE_REQUIRE_CTX");
  return e != NULL && e[0] == '1' && t_ctx == NULL;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx != NULL && ctx != (CUcontext)&g_ctx_token)
    return CUDA_ERROR_INVALID_CONTEXT;
  t_ctx = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx) {
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  *pctx = t_ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *dev) {
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev == NULL) return CUDA_ERROR_INVALID_VALUE;
  *dev = 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  return g_inited ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

/* Work runs when it is issued, so a stream is always idle. */
CUresult cuStreamSynchronize(CUstream s) {
  (void)s;
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&g_lock);
  g_st.stream_syncs++;
  pthread_mutex_unlock(&g_lock);
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize_ptsz(CUstream s) { return cuStreamSynchronize(s); }

/* CUDOUBLE_CAPTURING=1: every stream is capturing a graph. */
CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st) {
  (void)s;
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (st == NULL) return CUDA_ERROR_INVALID_VALUE;
  const char *e = getenv("CUDOUBLE_CAPTURING");
  *st = e != NULL && atoi(e) == 1 ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                  : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

/* Streams and events are distinct tokens; work runs when issued, so an
 * event is complete as soon as it is recorded, unless
 * CUDOUBLE_EVENTS_PENDING=1 keeps every event pending for ever. */
#define MAX_TOKENS 64
static char g_stream_tokens[MAX_TOKENS];
static char g_event_tokens[MAX_TOKENS];

CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (s == NULL || (flags & ~CU_STREAM_NON_BLOCKING) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_lock);
  *s = (CUstream)(void *)&g_stream_tokens[g_st.streams_created % MAX_TOKENS];
  g_st.streams_created++;
  pthread_mutex_unlock(&g_lock);
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *e, unsigned int flags) {
  (void)flags;
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (e == NULL) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_lock);
  *e = (CUevent)(void *)&g_event_tokens[g_st.events_created % MAX_TOKENS];
  g_st.events_created++;
  pthread_mutex_unlock(&g_lock);
  return CUDA_SUCCESS;
}

static int is_token(const char *p, const char *tokens) {
  return p >= tokens && p < tokens + MAX_TOKENS;
}

CUresult cuEventRecord(CUevent e, CUstream s) {
  (void)s;
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (!is_token((const char *)e, g_event_tokens))
    return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_lock);
  g_st.event_records++;
  pthread_mutex_unlock(&g_lock);
  return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  (void)s, (void)flags;
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (!is_token((const char *)e, g_event_tokens))
    return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_lock);
  g_st.stream_waits++;
  pthread_mutex_unlock(&g_lock);
  return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent e) {
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (!is_token((const char *)e, g_event_tokens))
    return CUDA_ERROR_INVALID_HANDLE;
  const char *p = getenv("CUDOUBLE_EVENTS_PENDING");
  return p != NULL && atoi(p) == 1 ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

/* ---- Memory ------------------------------------------------------------ */

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  if (free_bytes == NULL || total == NULL) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_lock);
  *total = physical();
  *free_bytes = physical() - g_st.device_bytes;
  pthread_mutex_unlock(&g_lock);
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
  /* A hooked name and a test name looked up from inside the driver: under
   * an interposer this call is already inside its hook. */
  if (dlsym(RTLD_DEFAULT, "cuMemFree_v2") == NULL ||
      dlsym(RTLD_DEFAULT, "cudouble_stats") == NULL)
    return CUDA_ERROR_UNKNOWN;
  return do_alloc(dptr, bytesize, CUDOUBLE_DEVICE);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
                            size_t height, unsigned int elem) {
  if (pitch == NULL || width == 0 || height == 0 ||
      (elem != 4 && elem != 8 && elem != 16))
    return CUDA_ERROR_INVALID_VALUE;
  size_t p = (width + 511) & ~(size_t)511;
  CUresult r = do_alloc(dptr, p * height, CUDOUBLE_DEVICE);
  if (r == CUDA_SUCCESS) *pitch = p;
  return r;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) { return do_free(dptr); }

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream s) {
  (void)s;
  return do_alloc(dptr, bytesize, CUDOUBLE_ASYNC);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                              CUstream s) {
  return cuMemAllocAsync(dptr, bytesize, s);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                 CUmemoryPool pool, CUstream s) {
  (void)s;
  if (pool == NULL) return CUDA_ERROR_INVALID_VALUE;
  return do_alloc(dptr, bytesize, CUDOUBLE_ASYNC);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                      CUmemoryPool pool, CUstream s) {
  return cuMemAllocFromPoolAsync(dptr, bytesize, pool, s);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s) {
  (void)s;
  return do_free(dptr);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s) {
  return cuMemFreeAsync(dptr, s);
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
                           unsigned int flags) {
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
    return CUDA_ERROR_INVALID_VALUE;
  return do_alloc(dptr, bytesize, CUDOUBLE_MANAGED);
}

static CUresult advise(CUdeviceptr p, size_t count, CUmem_advise advice,
                       int type, int id) {
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&g_lock);
  rec_t *r = find_range(p, count);
  CUresult res = CUDA_SUCCESS;
  if (r == NULL || r->info.kind != CUDOUBLE_MANAGED) {
    res = CUDA_ERROR_INVALID_VALUE;
  } else if (advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION) {
    r->info.preferred_type = type;
    r->info.preferred_id = id;
  } else if (advice == CU_MEM_ADVISE_SET_ACCESSED_BY) {
    r->info.accessed_by_type = type;
    r->info.accessed_by_id = id;
  }
  if (res == CUDA_SUCCESS) g_st.advise_calls++;
  pthread_mutex_unlock(&g_lock);
  return res;
}

/* The 8.0 form names a device, CU_DEVICE_CPU for the host. */
CUresult cuMemAdvise(CUdeviceptr p, size_t count, CUmem_advise advice,
                     CUdevice dev) {
  if (dev == CU_DEVICE_CPU)
    return advise(p, count, advice, CU_MEM_LOCATION_TYPE_HOST, 0);
  return advise(p, count, advice, CU_MEM_LOCATION_TYPE_DEVICE, dev);
}

CUresult cuMemAdvise_v2(CUdeviceptr p, size_t count, CUmem_advise advice,
                        CUmemLocation loc) {
  return advise(p, count, advice, (int)loc.type, loc.id);
}

static CUresult prefetch(CUdeviceptr p, size_t count, int to, CUstream s) {
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&g_lock);
  rec_t *r = find_range(p, count);
  if (r != NULL) {
    int was = r->info.prefetched_to == CU_MEM_LOCATION_TYPE_DEVICE;
    int now = to == CU_MEM_LOCATION_TYPE_DEVICE;
    if (r->info.kind == CUDOUBLE_MANAGED && was != now) {
      if (now) g_st.managed_on_device += r->info.size;
      else g_st.managed_on_device -= r->info.size;
      if (g_st.managed_on_device > g_st.managed_on_device_peak)
        g_st.managed_on_device_peak = g_st.managed_on_device;
      note_footprint();
    }
    r->info.prefetches++;
    r->info.prefetched_to = to;
    r->info.prefetch_stream = (uint64_t)(uintptr_t)s;
    g_st.prefetch_calls++;
  }
  pthread_mutex_unlock(&g_lock);
  return r != NULL && r->info.kind == CUDOUBLE_MANAGED
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t count, CUdevice dev,
                            CUstream s) {
  return prefetch(p, count,
                  dev == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST
                                       : CU_MEM_LOCATION_TYPE_DEVICE, s);
}

CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr p, size_t count, CUdevice dev,
                                 CUstream s) {
  return cuMemPrefetchAsync(p, count, dev, s);
}

CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t count,
                               CUmemLocation loc, unsigned int flags,
                               CUstream s) {
  (void)flags;
  return prefetch(p, count, (int)loc.type, s);
}

CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr p, size_t count,
                                    CUmemLocation loc, unsigned int flags,
                                    CUstream s) {
  return cuMemPrefetchAsync_v2(p, count, loc, flags, s);
}

/* The contents become indeterminate: the double writes 0xdb over them,
 * so a test sees any live bytes a caller discarded.  As the driver
 * documents, the legacy NULL stream is refused.  CUDOUBLE_NO_DISCARD=1
 * answers CUDA_ERROR_NOT_SUPPORTED, as a driver older than 12.8 or a
 * device without concurrent managed access would. */
CUresult cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes,
                                           size_t count,
                                           CUmemLocation *locs,
                                           size_t *loc_idxs, size_t nlocs,
                                           unsigned long long flags,
                                           CUstream s) {
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  const char *no = getenv("CUDOUBLE_NO_DISCARD");
  if (no != NULL && atoi(no) == 1) return CUDA_ERROR_NOT_SUPPORTED;
  if (s == NULL || s == CU_STREAM_LEGACY || flags != 0 || dptrs == NULL ||
      sizes == NULL || locs == NULL || loc_idxs == NULL || nlocs == 0 ||
      nlocs > count || loc_idxs[0] != 0)
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; i++) {
    pthread_mutex_lock(&g_lock);
    rec_t *r = find_range(dptrs[i], sizes[i]);
    int managed = r != NULL && r->info.kind == CUDOUBLE_MANAGED;
    pthread_mutex_unlock(&g_lock);
    if (!managed) return CUDA_ERROR_INVALID_VALUE;
    memset((void *)(uintptr_t)dptrs[i], 0xdb, sizes[i]);
    size_t l = 0;
    while (l + 1 < nlocs && loc_idxs[l + 1] <= i) l++;
    pthread_mutex_lock(&g_lock);
    g_st.discards++;
    pthread_mutex_unlock(&g_lock);
    CUresult res = prefetch(dptrs[i], sizes[i], (int)locs[l].type, s);
    if (res != CUDA_SUCCESS) return res;
  }
  return CUDA_SUCCESS;
}

/* The pre-3.2 forms with 32-bit sizes: present, never used. */
CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize) {
  (void)dptr, (void)bytesize;
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pitch,
                         unsigned int w, unsigned int h, unsigned int e) {
  (void)dptr, (void)pitch, (void)w, (void)h, (void)e;
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuMemFree(CUdeviceptr_v1 dptr) {
  (void)dptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuMemGetInfo(unsigned int *f, unsigned int *t) {
  (void)f, (void)t;
  return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- Kernels ----------------------------------------------------------- */

#define MAX_KERNELS 64
#define MAX_PARAMS 16

typedef struct kernel {
  cudouble_kernel_fn fn;
  unsigned nparams;
  size_t sizes[MAX_PARAMS];
} kernel_t;

static kernel_t g_kernels[MAX_KERNELS];
static unsigned g_nkernels;

EXPORT void *cudouble_register_kernel(cudouble_kernel_fn fn, unsigned nparams,
                                      const size_t *sizes) {
  pthread_mutex_lock(&g_lock);
  kernel_t *k = NULL;
  if (g_nkernels < MAX_KERNELS && nparams <= MAX_PARAMS) {
    k = &g_kernels[g_nkernels++];
    k->fn = fn;
    k->nparams = nparams;
    for (unsigned i = 0; i < nparams; i++) k->sizes[i] = sizes[i];
  }
  pthread_mutex_unlock(&g_lock);
  return k;
}

static kernel_t *kernel_of(CUfunction f) {
  kernel_t *k = (kernel_t *)(void *)f;
  return k >= g_kernels && k < g_kernels + MAX_KERNELS ? k : NULL;
}

static CUresult launch(CUfunction f, void **params) {
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  kernel_t *k = kernel_of(f);
  if (k == NULL || k->fn == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (k->nparams > 0 && params == NULL) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_lock);
  g_st.launches++;
  pthread_mutex_unlock(&g_lock);
  k->fn(params);
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy,
                        unsigned int gz, unsigned int bx, unsigned int by,
                        unsigned int bz, unsigned int shmem, CUstream s,
                        void **params, void **extra) {
  (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shmem;
  (void)s, (void)extra;
  return launch(f, params);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                             unsigned int gz, unsigned int bx,
                             unsigned int by, unsigned int bz,
                             unsigned int shmem, CUstream s, void **params,
                             void **extra) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                          void **params, void **extra) {
  (void)extra;
  if (config == NULL) return CUDA_ERROR_INVALID_VALUE;
  return launch(f, params);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                               void **params, void **extra) {
  return cuLaunchKernelEx(config, f, params, extra);
}

/* CUDOUBLE_LIBRARY_KERNELS: unset or 0, a registered kernel is a
 * CUfunction; 1, it is a context-less CUkernel, as cudart 12 launches
 * (cuFuncGetParamInfo refuses it, cuKernelGetParamInfo describes it); 2,
 * a CUkernel on a driver that describes neither. */
static int library_kernels(void) {
  const char *e = getenv("CUDOUBLE_LIBRARY_KERNELS");
  return e != NULL ? atoi(e) : 0;
}

static CUresult param_info(CUfunction f, size_t index, size_t *offset,
                           size_t *size) {
  kernel_t *k = kernel_of(f);
  if (k == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (offset == NULL || size == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (index >= k->nparams) return CUDA_ERROR_INVALID_VALUE;
  size_t off = 0;
  for (size_t i = 0; i < index; i++) off += k->sizes[i];
  *offset = off;
  *size = k->sizes[index];
  return CUDA_SUCCESS;
}

CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset,
                            size_t *size) {
  if (library_kernels() != 0) return CUDA_ERROR_INVALID_HANDLE;
  return param_info(f, index, offset, size);
}

CUresult cuKernelGetParamInfo(CUkernel k, size_t index, size_t *offset,
                              size_t *size) {
  switch (library_kernels()) {
  case 0: return CUDA_ERROR_INVALID_HANDLE;
  case 1: return param_info((CUfunction)(void *)k, index, offset, size);
  default: return CUDA_ERROR_NOT_SUPPORTED;
  }
}

/* ---- cuGetProcAddress -------------------------------------------------- */

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                             cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status);

/* Wrappers standing for a driver's internal entry points: same behaviour,
 * other addresses.  T(name, return-args, params, args) */
#define TRAMPOLINES(T)                                                        \
  T(cuMemAlloc_v2, (CUdeviceptr * a, size_t b), (a, b))                       \
  T(cuMemAllocPitch_v2,                                                       \
    (CUdeviceptr * a, size_t * b, size_t c, size_t d, unsigned int e),        \
    (a, b, c, d, e))                                                          \
  T(cuMemFree_v2, (CUdeviceptr a), (a))                                       \
  T(cuMemGetInfo_v2, (size_t * a, size_t * b), (a, b))                        \
  T(cuMemAllocAsync, (CUdeviceptr * a, size_t b, CUstream c), (a, b, c))      \
  T(cuMemAllocAsync_ptsz, (CUdeviceptr * a, size_t b, CUstream c), (a, b, c)) \
  T(cuMemFreeAsync, (CUdeviceptr a, CUstream b), (a, b))                      \
  T(cuMemFreeAsync_ptsz, (CUdeviceptr a, CUstream b), (a, b))                 \
  T(cuMemAllocFromPoolAsync,                                                  \
    (CUdeviceptr * a, size_t b, CUmemoryPool c, CUstream d), (a, b, c, d))    \
  T(cuMemAllocFromPoolAsync_ptsz,                                             \
    (CUdeviceptr * a, size_t b, CUmemoryPool c, CUstream d), (a, b, c, d))    \
  T(cuMemAllocManaged, (CUdeviceptr * a, size_t b, unsigned int c), (a, b, c))\
  T(cuLaunchKernel,                                                           \
    (CUfunction a, unsigned int b, unsigned int c, unsigned int d,            \
     unsigned int e, unsigned int f, unsigned int g, unsigned int h,          \
     CUstream i, void **j, void **k),                                         \
    (a, b, c, d, e, f, g, h, i, j, k))                                        \
  T(cuLaunchKernel_ptsz,                                                      \
    (CUfunction a, unsigned int b, unsigned int c, unsigned int d,            \
     unsigned int e, unsigned int f, unsigned int g, unsigned int h,          \
     CUstream i, void **j, void **k),                                         \
    (a, b, c, d, e, f, g, h, i, j, k))                                        \
  T(cuLaunchKernelEx,                                                         \
    (const CUlaunchConfig *a, CUfunction b, void **c, void **d),              \
    (a, b, c, d))                                                             \
  T(cuLaunchKernelEx_ptsz,                                                    \
    (const CUlaunchConfig *a, CUfunction b, void **c, void **d),              \
    (a, b, c, d))                                                             \
  T(cuGetProcAddress_v2,                                                      \
    (const char *a, void **b, int c, cuuint64_t d,                            \
     CUdriverProcAddressQueryResult *e),                                      \
    (a, b, c, d, e))

#define TRAMPOLINE_DEF_(name, params, args)                                   \
  static CUresult tramp_##name params { return name args; }
TRAMPOLINES(TRAMPOLINE_DEF_)
#undef TRAMPOLINE_DEF_

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                          cuuint64_t flags);

static CUresult tramp_cuGetProcAddress(const char *a, void **b, int c,
                                       cuuint64_t d) {
  return cuGetProcAddress(a, b, c, d);
}

typedef struct proc {
  const char *base;   /* the name asked for */
  int version;        /* the cudaVersion from which this form is meant */
  int ptsz;           /* the per-thread default stream form */
  const char *name;   /* the exported symbol */
  void *fn;
  void *tramp;        /* the wrapper, or NULL where none is needed */
} proc_t;

#define P(base, ver, ptsz, name) {#base, ver, ptsz, #name, (void *)name, NULL}
#define PT(base, ver, ptsz, name)                                             \
  {#base, ver, ptsz, #name, (void *)name, (void *)tramp_##name}

static const proc_t g_procs[] = {
    P(cuInit, 2000, 0, cuInit),
    P(cuDriverGetVersion, 2020, 0, cuDriverGetVersion),
    P(cuDeviceGetCount, 2000, 0, cuDeviceGetCount),
    P(cuDeviceGet, 2000, 0, cuDeviceGet),
    P(cuDevicePrimaryCtxRetain, 7000, 0, cuDevicePrimaryCtxRetain),
    P(cuDevicePrimaryCtxRelease, 11000, 0, cuDevicePrimaryCtxRelease_v2),
    P(cuCtxSetCurrent, 4000, 0, cuCtxSetCurrent),
    P(cuCtxGetDevice, 2000, 0, cuCtxGetDevice),
    P(cuCtxSynchronize, 2000, 0, cuCtxSynchronize),
    P(cuStreamSynchronize, 2000, 0, cuStreamSynchronize),
    P(cuStreamSynchronize, 7000, 1, cuStreamSynchronize_ptsz),
    P(cuMemGetInfo, 2000, 0, cuMemGetInfo),
    PT(cuMemGetInfo, 3020, 0, cuMemGetInfo_v2),
    P(cuMemAlloc, 2000, 0, cuMemAlloc),
    PT(cuMemAlloc, 3020, 0, cuMemAlloc_v2),
    P(cuMemAllocPitch, 2000, 0, cuMemAllocPitch),
    PT(cuMemAllocPitch, 3020, 0, cuMemAllocPitch_v2),
    P(cuMemFree, 2000, 0, cuMemFree),
    PT(cuMemFree, 3020, 0, cuMemFree_v2),
    PT(cuMemAllocAsync, 11020, 0, cuMemAllocAsync),
    PT(cuMemAllocAsync, 11020, 1, cuMemAllocAsync_ptsz),
    PT(cuMemFreeAsync, 11020, 0, cuMemFreeAsync),
    PT(cuMemFreeAsync, 11020, 1, cuMemFreeAsync_ptsz),
    PT(cuMemAllocFromPoolAsync, 11020, 0, cuMemAllocFromPoolAsync),
    PT(cuMemAllocFromPoolAsync, 11020, 1, cuMemAllocFromPoolAsync_ptsz),
    PT(cuMemAllocManaged, 6000, 0, cuMemAllocManaged),
    P(cuMemAdvise, 8000, 0, cuMemAdvise),
    P(cuMemAdvise, 12020, 0, cuMemAdvise_v2),
    P(cuMemPrefetchAsync, 8000, 0, cuMemPrefetchAsync),
    P(cuMemPrefetchAsync, 8000, 1, cuMemPrefetchAsync_ptsz),
    P(cuMemPrefetchAsync, 12020, 0, cuMemPrefetchAsync_v2),
    P(cuMemPrefetchAsync, 12020, 1, cuMemPrefetchAsync_v2_ptsz),
    PT(cuLaunchKernel, 4000, 0, cuLaunchKernel),
    PT(cuLaunchKernel, 7000, 1, cuLaunchKernel_ptsz),
    PT(cuLaunchKernelEx, 11060, 0, cuLaunchKernelEx),
    PT(cuLaunchKernelEx, 11060, 1, cuLaunchKernelEx_ptsz),
    P(cuFuncGetParamInfo, 12040, 0, cuFuncGetParamInfo),
    {"cuGetProcAddress", 11030, 0, "cuGetProcAddress",
     (void *)cuGetProcAddress, (void *)tramp_cuGetProcAddress},
    PT(cuGetProcAddress, 12000, 0, cuGetProcAddress_v2),
};
#undef P
#undef PT

#define NPROCS (sizeof g_procs / sizeof g_procs[0])

static int use_trampolines(void) {
  const char *t = getenv("CUDOUBLE_PROC_TRAMPOLINES");
  return t != NULL && strcmp(t, "1") == 0;
}

/* The newest form of `base` not newer than cudaVersion; the per-thread
 * form when asked for and one exists, the legacy form otherwise
 * (CU_GET_PROC_ADDRESS_DEFAULT is taken as legacy). */
static const proc_t *lookup(const char *base, int version, int per_thread,
                            int *known) {
  const proc_t *best = NULL;
  *known = 0;
  for (int pass = per_thread ? 1 : 0; pass >= 0 && best == NULL; pass--) {
    for (size_t i = 0; i < NPROCS; i++) {
      const proc_t *p = &g_procs[i];
      if (strcmp(p->base, base) != 0) continue;
      *known = 1;
      if (p->ptsz != pass || p->version > version) continue;
      if (best == NULL || p->version > best->version) best = p;
    }
  }
  return best;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                             cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status) {
  if (symbol == NULL || pfn == NULL) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_lock);
  g_st.proc_calls++;
  pthread_mutex_unlock(&g_lock);
  int known;
  const proc_t *p = lookup(symbol, cudaVersion,
                           (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0,
                           &known);
  if (p == NULL) {
    *pfn = NULL;
    if (status != NULL)
      *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                      : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = use_trampolines() && p->tramp != NULL ? p->tramp : p->fn;
  if (status != NULL) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                          cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}

/* ---- The test's questions ---------------------------------------------- */

EXPORT void cudouble_stats(cudouble_stats_t *out) {
  pthread_mutex_lock(&g_lock);
  physical();
  *out = g_st;
  pthread_mutex_unlock(&g_lock);
}

EXPORT void cudouble_query(uint64_t ptr, cudouble_alloc_info_t *out) {
  pthread_mutex_lock(&g_lock);
  rec_t *r = find(ptr);
  if (r != NULL) *out = r->info;
  else memset(out, 0, sizeof *out);
  pthread_mutex_unlock(&g_lock);
}

EXPORT void *cudouble_symbol(const char *name) {
  for (size_t i = 0; i < NPROCS; i++)
    if (strcmp(g_procs[i].name, name) == 0) return g_procs[i].fn;
  return NULL;
}
