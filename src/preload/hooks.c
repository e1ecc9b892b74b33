/* hooks.c - the driver calls liblms_preload.so replaces: the allocation
 * family, cuMemGetInfo_v2, and the kernel launches it watches.
 *
 * What it does: allocations are placed by Note [Placement past the
 * limit] (ledger.c): on the device while the process stays within
 * --gpu-limit, otherwise in managed memory preferred on the host and
 * accessed in place by the device (Note [Stable pointers from managed
 * memory]).  cuMemGetInfo_v2 reports the limit.  Launches are counted,
 * and the pointer-sized parameters that are our allocations are noted as
 * a hint.
 *
 * Launches also feed the learned prefetch (prefetch.c), which moves the
 * managed allocations of the coming launches to the device once the
 * launch trace repeats.
 *
 * What it does not do yet: VMM (cuMemCreate, cuMemMap), cuMemHostAlloc
 * and graph-embedded allocations pass through unaccounted.  The placement
 * ran on an H100 (bench/results/2026-11-22-h100-dropin.md); the CUkernel
 * parameter lookup and the learned prefetch have run only against the
 * driver double of the test suite. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "core/hash.h"
#include "core/log.h"
#include "preload/preload.h"

typedef CUresult (*cuMemAlloc_v2_fn)(CUdeviceptr *, size_t);
typedef CUresult (*cuMemAllocPitch_v2_fn)(CUdeviceptr *, size_t *, size_t,
                                          size_t, unsigned int);
typedef CUresult (*cuMemFree_v2_fn)(CUdeviceptr);
typedef CUresult (*cuMemAllocAsync_fn)(CUdeviceptr *, size_t, CUstream);
typedef cuMemAllocAsync_fn cuMemAllocAsync_ptsz_fn;
typedef CUresult (*cuMemFreeAsync_fn)(CUdeviceptr, CUstream);
typedef cuMemFreeAsync_fn cuMemFreeAsync_ptsz_fn;
typedef CUresult (*cuMemAllocFromPoolAsync_fn)(CUdeviceptr *, size_t,
                                               CUmemoryPool, CUstream);
typedef cuMemAllocFromPoolAsync_fn cuMemAllocFromPoolAsync_ptsz_fn;
typedef CUresult (*cuLaunchKernel_fn)(CUfunction, unsigned int, unsigned int,
                                      unsigned int, unsigned int,
                                      unsigned int, unsigned int,
                                      unsigned int, CUstream, void **,
                                      void **);
typedef cuLaunchKernel_fn cuLaunchKernel_ptsz_fn;
typedef CUresult (*cuLaunchKernelEx_fn)(const CUlaunchConfig *, CUfunction,
                                        void **, void **);
typedef cuLaunchKernelEx_fn cuLaunchKernelEx_ptsz_fn;
typedef CUresult (*cuStreamSynchronize_fn)(CUstream);
typedef cuStreamSynchronize_fn cuStreamSynchronize_ptsz_fn;
typedef CUresult (*cuFuncGetParamInfo_fn)(CUfunction, size_t, size_t *,
                                          size_t *);
typedef CUresult (*cuKernelGetParamInfo_fn)(CUkernel, size_t, size_t *,
                                            size_t *);

/* The capacity caffe's -lms_frac is a fraction of: the limit, or without
 * one the device's own memory, asked once. */
static uint64_t capacity(void) {
  static _Atomic uint64_t cap; /* racing threads store the same value */
  if (lms__preload_cfg.gpu_limit != 0) return lms__preload_cfg.gpu_limit;
  if (atomic_load(&cap) == 0 && lms__preload_cfg.lms_kb >= 0) {
    size_t f = 0, t = 0;
    if (lms__preload_drv.mem_get_info(&f, &t) == 0) atomic_store(&cap, t);
  }
  return atomic_load(&cap);
}

/* Note [Stable pointers from managed memory]
 * An allocation placed past the limit comes from cuMemAllocManaged with
 * two pieces of advice: SET_PREFERRED_LOCATION the host, so the driver
 * keeps the pages in host memory instead of migrating them in on every
 * touch and pushing other data out of the device, and SET_ACCESSED_BY the
 * current device, so the device maps them and reads them in place over the
 * link rather than faulting.  The program gets one address for the whole
 * life of the allocation, valid on host and device, so correctness never
 * depends on knowing which kernel touches which pointer.  Failed advice
 * (a device without concurrent managed access) is logged and ignored: the
 * memory is still correct, only slower.  Stream-ordered allocations placed
 * this way are usable at once, which is stronger than the stream order
 * promises; their stream-ordered free waits for the stream first, since
 * managed memory has no stream-ordered free. */
static CUresult advise(CUdeviceptr p, size_t size) {
  const lms__drv_t *d = &lms__preload_drv;
  int dev = 0;
  if (d->current_device(&dev) != 0) dev = 0;
  int r = d->advise_host((uint64_t)p, size, dev);
  if (r != 0)
    LMS_LOG(WARN, HOOK,
            "cuMemAdvise on managed 0x%llx (%zu bytes) failed (%s, %d); the "
            "memory works but may migrate on access",
            (unsigned long long)p, size, d->error_name(r), r);
  return CUDA_SUCCESS;
}

static CUresult alloc_managed(CUdeviceptr *dptr, size_t size,
                              const char *why) {
  uint64_t p = 0;
  int r = lms__preload_drv.mem_alloc_managed(&p, size);
  *dptr = (CUdeviceptr)p;
  if (r != 0) {
    LMS_LOG(WARN, HOOK,
            "%zu bytes past the GPU limit: cuMemAllocManaged failed (%s, %d)",
            size, lms__preload_drv.error_name(r), r);
    return (CUresult)r;
  }
  advise(*dptr, size);
  if (lms__ledger_add(*dptr, size, LMS__PLACE_MANAGED) != LMS_OK)
    LMS_LOG(WARN, HOOK, "ledger full: managed 0x%llx is not tracked",
            (unsigned long long)*dptr);
  LMS_LOG(INFO, HOOK, "%zu bytes at 0x%llx served from managed memory (%s)",
          size, (unsigned long long)*dptr, why);
  return CUDA_SUCCESS;
}

/* 1 (and the bytes reserved) when an allocation of size goes to device
 * memory: within what device allocations may hold (Note [The prefetch's
 * share of the limit]); past that, managed memory while the prefetch's
 * share has room for it, else device memory again if the whole limit
 * has, so that the share never leaves off the device what would have
 * fitted without it. */
static int on_device(size_t size) {
  const lms__preload_cfg_t *c = &lms__preload_cfg;
  uint64_t share_limit = lms__prefetch_device_limit();
  if (lms__ledger_reserve(size, share_limit, c->lms_kb, c->lms_frac,
                          capacity()))
    return 1;
  if (share_limit == c->gpu_limit || lms__prefetch_share_fits(size)) return 0;
  return lms__ledger_reserve(size, c->gpu_limit, c->lms_kb, c->lms_frac,
                             capacity());
}

/* The shape of every device allocation: reserve, ask the driver, fall back
 * to managed memory past the limit or when the device is full. */
typedef CUresult (*device_alloc_t)(void *ctx, CUdeviceptr *dptr);

static CUresult place(CUdeviceptr *dptr, size_t size, device_alloc_t fn,
                      void *ctx) {
  if (dptr == NULL || size == 0) return fn(ctx, dptr); /* the driver's error */
  if (!on_device(size)) {
    CUresult r = alloc_managed(dptr, size, "past --gpu-limit or the -lms rule");
    if (r == CUDA_SUCCESS) lms__prefetch_adopt(*dptr, size);
    return r;
  }
  CUresult r = fn(ctx, dptr);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    lms__ledger_unreserve(size);
    lms__ledger_note_oom_fallback();
    return alloc_managed(dptr, size, "the device is out of memory");
  }
  if (r != CUDA_SUCCESS) {
    lms__ledger_unreserve(size);
    return r;
  }
  if (lms__ledger_add(*dptr, size, LMS__PLACE_DEVICE) != LMS_OK)
    LMS_LOG(WARN, HOOK, "ledger full: 0x%llx is not tracked",
            (unsigned long long)*dptr);
  return CUDA_SUCCESS;
}

/* ---- cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemFree_v2 ------------------- */

static CUresult call_alloc(void *ctx, CUdeviceptr *dptr) {
  cuMemAlloc_v2_fn real = REAL(cuMemAlloc_v2);
  return real != NULL ? real(dptr, *(size_t *)ctx) : CUDA_ERROR_NOT_INITIALIZED;
}

LMS__PRELOAD_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr,
                                           size_t bytesize) {
  return place(dptr, bytesize, call_alloc, &bytesize);
}

typedef struct pitch_args {
  size_t *pitch;
  size_t width, height;
  unsigned int elem;
} pitch_args_t;

static CUresult call_pitch(void *ctx, CUdeviceptr *dptr) {
  pitch_args_t *a = ctx;
  cuMemAllocPitch_v2_fn real = REAL(cuMemAllocPitch_v2);
  return real != NULL ? real(dptr, a->pitch, a->width, a->height, a->elem)
                      : CUDA_ERROR_NOT_INITIALIZED;
}

/* The pitch is the driver's to choose, so the budget is checked against a
 * 512-byte-aligned row (no device aligns pitch more coarsely); past the
 * limit the managed rows use that pitch. */
LMS__PRELOAD_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr,
                                                size_t *pPitch, size_t width,
                                                size_t height,
                                                unsigned int elem) {
  pitch_args_t a = {pPitch, width, height, elem};
  if (dptr == NULL || pPitch == NULL || width == 0 || height == 0 ||
      (elem != 4 && elem != 8 && elem != 16))
    return call_pitch(&a, dptr);
  size_t pitch = (width + 511) & ~(size_t)511;
  if (height > SIZE_MAX / pitch) return CUDA_ERROR_INVALID_VALUE;
  size_t size = pitch * height;
  if (!on_device(size)) {
    CUresult r = alloc_managed(dptr, size, "pitched, past --gpu-limit");
    if (r == CUDA_SUCCESS) {
      *pPitch = pitch;
      lms__prefetch_adopt(*dptr, size);
    }
    return r;
  }
  CUresult r = call_pitch(&a, dptr);
  if (r != CUDA_SUCCESS) {
    lms__ledger_unreserve(size);
    if (r != CUDA_ERROR_OUT_OF_MEMORY) return r;
    lms__ledger_note_oom_fallback();
    r = alloc_managed(dptr, size, "pitched, the device is out of memory");
    if (r == CUDA_SUCCESS) *pPitch = pitch;
    return r;
  }
  /* Account what the driver really gave, which may differ from our row. */
  size_t real_size = *pPitch * height;
  lms__ledger_unreserve(size);
  lms__ledger_reserve(real_size, 0, -1, 0.0, 0); /* no limit: always fits */
  if (lms__ledger_add(*dptr, real_size, LMS__PLACE_DEVICE) != LMS_OK)
    LMS_LOG(WARN, HOOK, "ledger full: 0x%llx is not tracked",
            (unsigned long long)*dptr);
  return CUDA_SUCCESS;
}

/* Frees p with `fn` if it is the device's, or with cuMemFree_v2 after
 * waiting for `stream` if it is managed; unknown pointers go to `fn`. */
static CUresult release(CUdeviceptr p, CUresult (*fn)(void *, CUdeviceptr),
                        void *ctx, CUstream stream, int ptsz, int stream_ordered) {
  uint64_t size = 0;
  lms__place_t pl = lms__ledger_remove(p, &size);
  CUresult r;
  if (pl == LMS__PLACE_NONE) {
    if (p != 0) lms__ledger_note_unknown_free();
    return fn(ctx, p);
  }
  if (pl == LMS__PLACE_DEVICE || pl == LMS__PLACE_APP_MANAGED) {
    r = fn(ctx, p);
  } else {
    r = CUDA_SUCCESS;
    lms__prefetch_forget(p);
    if (stream_ordered) {
      cuStreamSynchronize_fn sync = ptsz ? REAL(cuStreamSynchronize_ptsz)
                                         : REAL(cuStreamSynchronize);
      r = sync != NULL ? sync(stream) : CUDA_ERROR_NOT_INITIALIZED;
    }
    cuMemFree_v2_fn real = REAL(cuMemFree_v2);
    if (r == CUDA_SUCCESS)
      r = real != NULL ? real(p) : CUDA_ERROR_NOT_INITIALIZED;
  }
  if (r != CUDA_SUCCESS) lms__ledger_restore(p, size, pl);
  return r;
}

static CUresult call_free(void *ctx, CUdeviceptr p) {
  (void)ctx;
  cuMemFree_v2_fn real = REAL(cuMemFree_v2);
  return real != NULL ? real(p) : CUDA_ERROR_NOT_INITIALIZED;
}

LMS__PRELOAD_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  return release(dptr, call_free, NULL, NULL, 0, 0);
}

/* ---- cuMemGetInfo_v2 --------------------------------------------------- */

LMS__PRELOAD_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes,
                                             size_t *total) {
  cuMemGetInfo_v2_fn real = REAL(cuMemGetInfo_v2);
  if (real == NULL) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real(free_bytes, total);
  uint64_t limit = lms__preload_cfg.gpu_limit;
  if (r != CUDA_SUCCESS || limit == 0) return r;
  uint64_t used = lms__ledger_device_bytes();
  *total = (size_t)limit;
  *free_bytes = used < limit ? (size_t)(limit - used) : 0;
  return CUDA_SUCCESS;
}

/* ---- Stream-ordered allocation ----------------------------------------- */

typedef struct async_args {
  size_t size;
  CUmemoryPool pool; /* NULL: cuMemAllocAsync */
  CUstream stream;
  int ptsz;
} async_args_t;

static CUresult call_async(void *ctx, CUdeviceptr *dptr) {
  async_args_t *a = ctx;
  if (a->pool != NULL) {
    cuMemAllocFromPoolAsync_fn real = a->ptsz
                                          ? REAL(cuMemAllocFromPoolAsync_ptsz)
                                          : REAL(cuMemAllocFromPoolAsync);
    return real != NULL ? real(dptr, a->size, a->pool, a->stream)
                        : CUDA_ERROR_NOT_INITIALIZED;
  }
  cuMemAllocAsync_fn real =
      a->ptsz ? REAL(cuMemAllocAsync_ptsz) : REAL(cuMemAllocAsync);
  return real != NULL ? real(dptr, a->size, a->stream)
                      : CUDA_ERROR_NOT_INITIALIZED;
}

LMS__PRELOAD_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr,
                                             size_t bytesize,
                                             CUstream hStream) {
  async_args_t a = {bytesize, NULL, hStream, 0};
  return place(dptr, bytesize, call_async, &a);
}

LMS__PRELOAD_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr,
                                                  size_t bytesize,
                                                  CUstream hStream) {
  async_args_t a = {bytesize, NULL, hStream, 1};
  return place(dptr, bytesize, call_async, &a);
}

/* A pool's own properties (its location, its release threshold) are lost
 * when the allocation lands in managed memory past the limit. */
LMS__PRELOAD_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr,
                                                     size_t bytesize,
                                                     CUmemoryPool pool,
                                                     CUstream hStream) {
  async_args_t a = {bytesize, pool, hStream, 0};
  if (pool == NULL) return call_async(&a, dptr); /* the driver's error */
  return place(dptr, bytesize, call_async, &a);
}

LMS__PRELOAD_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr,
                                                          size_t bytesize,
                                                          CUmemoryPool pool,
                                                          CUstream hStream) {
  async_args_t a = {bytesize, pool, hStream, 1};
  if (pool == NULL) return call_async(&a, dptr);
  return place(dptr, bytesize, call_async, &a);
}

static CUresult call_free_async(void *ctx, CUdeviceptr p) {
  async_args_t *a = ctx;
  cuMemFreeAsync_fn real =
      a->ptsz ? REAL(cuMemFreeAsync_ptsz) : REAL(cuMemFreeAsync);
  return real != NULL ? real(p, a->stream) : CUDA_ERROR_NOT_INITIALIZED;
}

LMS__PRELOAD_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr,
                                            CUstream hStream) {
  async_args_t a = {0, NULL, hStream, 0};
  return release(dptr, call_free_async, &a, hStream, 0, 1);
}

LMS__PRELOAD_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr,
                                                 CUstream hStream) {
  async_args_t a = {0, NULL, hStream, 1};
  return release(dptr, call_free_async, &a, hStream, 1, 1);
}

/* ---- The program's own managed memory ---------------------------------- */

/* Counted apart from the device budget: the driver pages it, not us. */
LMS__PRELOAD_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr,
                                               size_t bytesize,
                                               unsigned int flags) {
  cuMemAllocManaged_fn real = REAL(cuMemAllocManaged);
  if (real == NULL) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real(dptr, bytesize, flags);
  if (r == CUDA_SUCCESS &&
      lms__ledger_add(*dptr, bytesize, LMS__PLACE_APP_MANAGED) != LMS_OK)
    LMS_LOG(WARN, HOOK, "ledger full: managed 0x%llx is not tracked",
            (unsigned long long)*dptr);
  return r;
}

/* ---- Launches ---------------------------------------------------------- */

/* Note [Which launch parameters are pointers]
 * kernelParams is an array of pointers to the arguments, one per
 * parameter, with no count; the driver tells each parameter's size:
 * cuFuncGetParamInfo for a CUfunction and, from CUDA 12.4,
 * cuKernelGetParamInfo for a CUkernel.  cudart from CUDA 12 on loads a
 * program's kernels as a library and hands cuLaunchKernel the
 * context-less CUkernel, which it accepts in place of a CUfunction but
 * cuFuncGetParamInfo refuses: asking only that, an H100 run of programs
 * built by nvcc saw launches and no pointer among their parameters.  So a
 * handle is asked as a function first and as a kernel second.  What is
 * learned, which of the first 64 parameters are pointer-sized, is kept
 * per handle in a fixed table (a driver call per parameter per launch
 * would cost more than the launch); a handle that neither call describes
 * (a driver before 12.4, say) is kept as such and not asked again.  A
 * full table only means asking again.  Launches through `extra` (a packed
 * buffer) and pointers inside structures are not seen. */

#define MAX_PARAMS_SCANNED 64
#define PARAM_CACHE 4096 /* a power of two */

typedef struct param_info {
  uintptr_t handle;  /* 0: empty */
  uint64_t ptr_mask; /* bit i: parameter i is pointer-sized */
  unsigned nparams;
} param_info_t;

static param_info_t g_params[PARAM_CACHE];
static pthread_mutex_t g_params_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t param_slot(uintptr_t h) {
  return lms__hash_slot((uint64_t)h, PARAM_CACHE);
}

/* 1 and *out filled when h is known. */
static int params_cached(uintptr_t h, param_info_t *out) {
  int found = 0;
  pthread_mutex_lock(&g_params_lock);
  for (size_t i = param_slot(h), n = 0; n < 16; i = (i + 1) & (PARAM_CACHE - 1), n++) {
    if (g_params[i].handle == 0) break;
    if (g_params[i].handle == h) {
      *out = g_params[i];
      found = 1;
      break;
    }
  }
  pthread_mutex_unlock(&g_params_lock);
  return found;
}

static void params_keep(const param_info_t *pi) {
  pthread_mutex_lock(&g_params_lock);
  for (size_t i = param_slot(pi->handle), n = 0; n < 16; i = (i + 1) & (PARAM_CACHE - 1), n++) {
    if (g_params[i].handle == 0 || g_params[i].handle == pi->handle) {
      g_params[i] = *pi;
      break;
    }
  }
  pthread_mutex_unlock(&g_params_lock);
}

/* Asks the driver which parameters of f are pointer-sized (the lock is
 * not held: the driver may call back into us). */
static void params_ask(CUfunction f, param_info_t *pi) {
  pi->handle = (uintptr_t)f;
  pi->ptr_mask = 0;
  pi->nparams = 0;
  cuFuncGetParamInfo_fn fn = REAL(cuFuncGetParamInfo);
  cuKernelGetParamInfo_fn kn = REAL(cuKernelGetParamInfo);
  size_t off = 0, size = 0;
  int as_kernel = 0;
  if (fn == NULL || fn(f, 0, &off, &size) != CUDA_SUCCESS) {
    if (kn == NULL || kn((CUkernel)(void *)f, 0, &off, &size) != CUDA_SUCCESS)
      return; /* no parameters, or none the driver will describe */
    as_kernel = 1;
  }
  for (unsigned i = 0; i < MAX_PARAMS_SCANNED; i++) {
    if (i > 0) {
      CUresult r = as_kernel ? kn((CUkernel)(void *)f, i, &off, &size)
                             : fn(f, i, &off, &size);
      if (r != CUDA_SUCCESS) break;
    }
    if (size == sizeof(CUdeviceptr)) pi->ptr_mask |= 1ull << i;
    pi->nparams = i + 1;
  }
}

/* A hint only: which of our allocations a kernel was handed directly.
 * Pointers inside structs, or offset into an allocation, are not seen;
 * nothing depends on this being complete. */
static void observe(CUfunction f, void **params, CUstream stream) {
  unsigned ours = 0, managed = 0;
  uint64_t mptrs[LMS__PERIOD_PTRS];
  if (params != NULL && f != NULL) {
    param_info_t pi;
    if (!params_cached((uintptr_t)f, &pi)) {
      params_ask(f, &pi);
      params_keep(&pi);
    }
    for (unsigned i = 0; i < pi.nparams; i++) {
      if (!(pi.ptr_mask >> i & 1) || params[i] == NULL) continue;
      CUdeviceptr v;
      memcpy(&v, params[i], sizeof v);
      lms__place_t pl = lms__ledger_lookup(v);
      if (pl != LMS__PLACE_NONE) ours++;
      if (pl == LMS__PLACE_MANAGED && managed < LMS__PERIOD_PTRS)
        mptrs[managed] = v;
      if (pl == LMS__PLACE_MANAGED) managed++;
    }
  }
  lms__ledger_note_launch(ours, managed);
  lms__prefetch_launch((uintptr_t)f, mptrs,
                       managed < LMS__PERIOD_PTRS ? managed : LMS__PERIOD_PTRS,
                       stream);
  LMS_LOG(DEBUG, HOOK,
          "launch %p: %u of our allocations among its parameters, %u of them "
          "managed",
          (void *)f, ours, managed);
}

LMS__PRELOAD_EXPORT CUresult cuLaunchKernel(
    CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
    unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
    CUstream s, void **params, void **extra) {
  cuLaunchKernel_fn real = REAL(cuLaunchKernel);
  if (real == NULL) return CUDA_ERROR_NOT_INITIALIZED;
  observe(f, params, s);
  return real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

LMS__PRELOAD_EXPORT CUresult cuLaunchKernel_ptsz(
    CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
    unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
    CUstream s, void **params, void **extra) {
  cuLaunchKernel_ptsz_fn real = REAL(cuLaunchKernel_ptsz);
  if (real == NULL) return CUDA_ERROR_NOT_INITIALIZED;
  observe(f, params, s);
  return real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

LMS__PRELOAD_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config,
                                              CUfunction f, void **params,
                                              void **extra) {
  cuLaunchKernelEx_fn real = REAL(cuLaunchKernelEx);
  if (real == NULL) return CUDA_ERROR_NOT_INITIALIZED;
  observe(f, params, config != NULL ? config->hStream : NULL);
  return real(config, f, params, extra);
}

LMS__PRELOAD_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config,
                                                   CUfunction f, void **params,
                                                   void **extra) {
  cuLaunchKernelEx_ptsz_fn real = REAL(cuLaunchKernelEx_ptsz);
  if (real == NULL) return CUDA_ERROR_NOT_INITIALIZED;
  observe(f, params, config != NULL ? config->hStream : NULL);
  return real(config, f, params, extra);
}
