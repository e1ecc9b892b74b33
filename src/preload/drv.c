/* drv.c - the preload's own calls of the driver, as the table of
 * core/drv.h: the placement's managed allocations and their advice, the
 * learned prefetch's moves, stream and capture queries, and the device's
 * memory.  Each entry finds its driver function at its first call
 * (lms__real, real.c): libcuda is the program's to load.  Where a newer
 * entry point is missing the older one serves (cuMemAdvise and
 * cuMemPrefetchAsync before CUDA 12.2).  The preload binds no contexts,
 * frees nothing of its own, syncs nothing and keeps no events: those
 * entries are NULL. */
#include "preload/preload.h"

typedef CUresult (*cuMemAdvise_fn)(CUdeviceptr, size_t, CUmem_advise,
                                   CUdevice);
typedef CUresult (*cuMemAdvise_v2_fn)(CUdeviceptr, size_t, CUmem_advise,
                                      CUmemLocation);
typedef CUresult (*cuMemPrefetchAsync_fn)(CUdeviceptr, size_t, CUdevice,
                                          CUstream);
typedef CUresult (*cuMemPrefetchAsync_v2_fn)(CUdeviceptr, size_t,
                                             CUmemLocation, unsigned int,
                                             CUstream);
typedef CUresult (*cuStreamCreate_fn)(CUstream *, unsigned int);
typedef CUresult (*cuCtxGetDevice_fn)(CUdevice *);
typedef CUresult (*cuStreamIsCapturing_fn)(CUstream, CUstreamCaptureStatus *);

static int p_managed(uint64_t *ptr, size_t size) {
  cuMemAllocManaged_fn f = REAL(cuMemAllocManaged);
  if (f == NULL) return (int)CUDA_ERROR_NOT_INITIALIZED;
  CUdeviceptr p = 0;
  CUresult r = f(&p, size, CU_MEM_ATTACH_GLOBAL);
  *ptr = (uint64_t)p;
  return (int)r;
}

static int p_advise_host(uint64_t ptr, size_t size, int device) {
  cuMemAdvise_v2_fn v2 = REAL(cuMemAdvise_v2);
  cuMemAdvise_fn v1 = REAL(cuMemAdvise);
  CUdeviceptr p = (CUdeviceptr)ptr;
  CUresult r1, r2;
  /* Each piece of advice is given even if the other fails: either alone
   * still helps. */
  if (v2 != NULL) {
    CUmemLocation host = {.type = CU_MEM_LOCATION_TYPE_HOST, .id = 0};
    CUmemLocation gpu = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device};
    r1 = v2(p, size, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host);
    r2 = v2(p, size, CU_MEM_ADVISE_SET_ACCESSED_BY, gpu);
  } else if (v1 != NULL) {
    r1 = v1(p, size, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_DEVICE_CPU);
    r2 = v1(p, size, CU_MEM_ADVISE_SET_ACCESSED_BY, (CUdevice)device);
  } else {
    r1 = r2 = CUDA_ERROR_NOT_FOUND;
  }
  return (int)(r1 != CUDA_SUCCESS ? r1 : r2);
}

static int p_prefetch(uint64_t ptr, size_t size, int device, void *stream) {
  cuMemPrefetchAsync_v2_fn v2 = REAL(cuMemPrefetchAsync_v2);
  if (v2 != NULL) {
    CUmemLocation loc = {.type = device < 0 ? CU_MEM_LOCATION_TYPE_HOST
                                            : CU_MEM_LOCATION_TYPE_DEVICE,
                         .id = device < 0 ? 0 : device};
    return (int)v2((CUdeviceptr)ptr, size, loc, 0, (CUstream)stream);
  }
  cuMemPrefetchAsync_fn v1 = REAL(cuMemPrefetchAsync);
  if (v1 == NULL) return (int)CUDA_ERROR_NOT_SUPPORTED;
  return (int)v1((CUdeviceptr)ptr, size,
                 device < 0 ? CU_DEVICE_CPU : (CUdevice)device,
                 (CUstream)stream);
}

static int p_stream_create(void **stream) {
  cuStreamCreate_fn f = REAL(cuStreamCreate);
  if (f == NULL) return (int)CUDA_ERROR_NOT_SUPPORTED;
  CUstream s = NULL;
  CUresult r = f(&s, CU_STREAM_NON_BLOCKING);
  *stream = s;
  return (int)r;
}

static int p_current_device(int *device) {
  cuCtxGetDevice_fn f = REAL(cuCtxGetDevice);
  if (f == NULL) return (int)CUDA_ERROR_NOT_INITIALIZED;
  CUdevice d = 0;
  CUresult r = f(&d);
  *device = (int)d;
  return (int)r;
}

static int p_capturing(void *stream, int *capturing) {
  cuStreamIsCapturing_fn f = REAL(cuStreamIsCapturing);
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult r = f != NULL ? f((CUstream)stream, &st) : CUDA_ERROR_NOT_SUPPORTED;
  *capturing = r == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE;
  return (int)r;
}

/* The driver's own answer, not the limit the hook reports. */
static int p_info(size_t *free_bytes, size_t *total) {
  cuMemGetInfo_v2_fn f = REAL(cuMemGetInfo_v2);
  if (f == NULL) return (int)CUDA_ERROR_NOT_INITIALIZED;
  return (int)f(free_bytes, total);
}

static const char *p_errname(int res) {
  switch (res) {
  case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
  case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
  case CUDA_ERROR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
  case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
  case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
  default: return "a CUDA driver error";
  }
}

const lms__drv_t lms__preload_drv = {
    .version = LMS__DRV_VERSION,
    .mem_alloc_managed = p_managed,
    .advise_host = p_advise_host,
    .prefetch = p_prefetch,
    .stream_create = p_stream_create,
    .mem_get_info = p_info,
    .current_device = p_current_device,
    .stream_is_capturing = p_capturing,
    .error_name = p_errname,
};
