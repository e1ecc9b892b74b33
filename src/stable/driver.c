/* driver.c - the CUDA driver calls of the stable allocator, looked up in
 * libcuda.so.1 when the allocator starts.
 *
 * Looking the driver up at run time, rather than linking cudart, keeps
 * liblms_torch.so free of any CUDA runtime: the program's own (PyTorch
 * ships one) has made the context current before it calls us, and the
 * driver calls below act on that context.  It also lets the test suite
 * put its double of the driver (tests/driver_double) in the driver's
 * place. */
#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1
#endif
#include <cuda.h>

#include <dlfcn.h>
#include <stdio.h>

#include "stable/stable.h"

static CUresult (*p_init)(unsigned int);
static CUresult (*p_alloc)(CUdeviceptr *, size_t);
static CUresult (*p_free)(CUdeviceptr);
static CUresult (*p_managed)(CUdeviceptr *, size_t, unsigned int);
static CUresult (*p_advise)(CUdeviceptr, size_t, CUmem_advise,
                            CUmemLocation);
static CUresult (*p_prefetch)(CUdeviceptr, size_t, CUmemLocation,
                              unsigned int, CUstream);
static CUresult (*p_sync)(void);
static CUresult (*p_info)(size_t *, size_t *);
static CUresult (*p_errname)(CUresult, const char **);
static CUresult (*p_ctx_get)(CUcontext *);
static CUresult (*p_ctx_set)(CUcontext);
static CUresult (*p_dev_get)(CUdevice *, int);
static CUresult (*p_retain)(CUcontext *, CUdevice);
static CUresult (*p_stream_create)(CUstream *, unsigned int);
static CUresult (*p_event_create)(CUevent *, unsigned int);
static CUresult (*p_event_record)(CUevent, CUstream);
static CUresult (*p_wait_event)(CUstream, CUevent, unsigned int);
static CUresult (*p_event_query)(CUevent);
static CUresult (*p_discard)(CUdeviceptr *, size_t *, size_t, CUmemLocation *,
                             size_t *, size_t, unsigned long long, CUstream);
static CUresult (*p_ctx_device)(CUdevice *);
static CUresult (*p_capturing)(CUstream, CUstreamCaptureStatus *);

/* Note [A context for the framework's threads]
 * The driver acts on the calling thread's current context.  The CUDA
 * runtime makes the device's primary context current lazily, on a
 * thread's first runtime call, so a framework thread whose first CUDA
 * work is an allocation (PyTorch's autograd worker in backward) reaches
 * us with none, and cuMemAlloc answers CUDA_ERROR_INVALID_CONTEXT.  The
 * runtime itself uses the primary context, so making that one current is
 * what the runtime would do; it is retained once per device and never
 * released, as the runtime also keeps it for the life of the process. */
static int d_bind(int device) {
  CUcontext cur = NULL;
  if (p_ctx_get(&cur) == CUDA_SUCCESS && cur != NULL) return 0;
  static CUcontext primary[64];
  if (device < 0 || device >= 64) return (int)CUDA_ERROR_INVALID_DEVICE;
  CUcontext ctx = __atomic_load_n(&primary[device], __ATOMIC_ACQUIRE);
  if (ctx == NULL) {
    CUdevice dev;
    CUresult r = p_dev_get(&dev, device);
    if (r == CUDA_SUCCESS) r = p_retain(&ctx, dev);
    if (r != CUDA_SUCCESS) return (int)r;
    CUcontext expected = NULL;
    if (!__atomic_compare_exchange_n(&primary[device], &expected, ctx, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      ctx = expected; /* another thread retained it first; one is enough */
  }
  return (int)p_ctx_set(ctx);
}

static int d_alloc(uint64_t *ptr, size_t size) {
  CUdeviceptr p = 0;
  CUresult r = p_alloc(&p, size);
  *ptr = (uint64_t)p;
  return (int)r;
}

static int d_free(uint64_t ptr) { return (int)p_free((CUdeviceptr)ptr); }

static int d_managed(uint64_t *ptr, size_t size) {
  CUdeviceptr p = 0;
  CUresult r = p_managed(&p, size, CU_MEM_ATTACH_GLOBAL);
  *ptr = (uint64_t)p;
  return (int)r;
}

static int d_advise_host(uint64_t ptr, size_t size, int device) {
  CUmemLocation host = {.type = CU_MEM_LOCATION_TYPE_HOST, .id = 0};
  CUmemLocation dev = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device};
  CUresult r = p_advise((CUdeviceptr)ptr, size,
                        CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host);
  if (r == CUDA_SUCCESS)
    r = p_advise((CUdeviceptr)ptr, size, CU_MEM_ADVISE_SET_ACCESSED_BY, dev);
  return (int)r;
}

static int d_prefetch(uint64_t ptr, size_t size, int device, void *stream) {
  CUmemLocation loc = {.type = device < 0 ? CU_MEM_LOCATION_TYPE_HOST
                                          : CU_MEM_LOCATION_TYPE_DEVICE,
                       .id = device < 0 ? 0 : device};
  return (int)p_prefetch((CUdeviceptr)ptr, size, loc, 0, (CUstream)stream);
}

static int d_stream_create(void **stream) {
  CUstream st = NULL;
  CUresult r = p_stream_create(&st, CU_STREAM_NON_BLOCKING);
  *stream = st;
  return (int)r;
}

static int d_event_create(void **ev) {
  CUevent e = NULL;
  CUresult r = p_event_create(&e, CU_EVENT_DISABLE_TIMING);
  *ev = e;
  return (int)r;
}

static int d_event_record(void *ev, void *stream) {
  return (int)p_event_record((CUevent)ev, (CUstream)stream);
}

static int d_wait_event(void *stream, void *ev) {
  return (int)p_wait_event((CUstream)stream, (CUevent)ev, 0);
}

static int d_event_query(void *ev) { return (int)p_event_query((CUevent)ev); }

static int d_discard(uint64_t ptr, size_t size, int device, void *stream) {
  CUdeviceptr p = (CUdeviceptr)ptr;
  size_t n = size, first = 0;
  CUmemLocation loc = {.type = device < 0 ? CU_MEM_LOCATION_TYPE_HOST
                                          : CU_MEM_LOCATION_TYPE_DEVICE,
                       .id = device < 0 ? 0 : device};
  return (int)p_discard(&p, &n, 1, &loc, &first, 1, 0, (CUstream)stream);
}

static int d_sync(void) { return (int)p_sync(); }

static int d_current_device(int *device) {
  CUdevice d = 0;
  CUresult r = p_ctx_device(&d);
  *device = (int)d;
  return (int)r;
}

static int d_capturing(void *stream, int *capturing) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult r = p_capturing((CUstream)stream, &st);
  *capturing = r == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE;
  return (int)r;
}

static int d_info(size_t *f, size_t *t) { return (int)p_info(f, t); }

static const char *d_errname(int res) {
  const char *name = NULL;
  if (p_errname != NULL && p_errname((CUresult)res, &name) == CUDA_SUCCESS &&
      name != NULL)
    return name;
  return res == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY"
                                         : "a CUDA driver error";
}

#define LOOK(var, name)                                                       \
  do {                                                                        \
    *(void **)&(var) = dlsym(h, name);                                        \
    if ((var) == NULL) {                                                      \
      snprintf(err, errlen, "the CUDA driver (libcuda.so.1) lacks %s; "      \
               "a driver for CUDA 12.2 or newer is needed", name);            \
      return LMS_ERR_UNSUPPORTED;                                             \
    }                                                                         \
  } while (0)

lms_status_t lms__stable_driver_load(lms__drv_t *out, char *err,
                                     size_t errlen) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (h == NULL) {
    snprintf(err, errlen, "cannot load the CUDA driver libcuda.so.1: %s",
             dlerror());
    return LMS_ERR_UNSUPPORTED;
  }
  LOOK(p_init, "cuInit");
  LOOK(p_alloc, "cuMemAlloc_v2");
  LOOK(p_free, "cuMemFree_v2");
  LOOK(p_managed, "cuMemAllocManaged");
  LOOK(p_advise, "cuMemAdvise_v2");
  LOOK(p_prefetch, "cuMemPrefetchAsync_v2");
  LOOK(p_sync, "cuCtxSynchronize");
  LOOK(p_info, "cuMemGetInfo_v2");
  LOOK(p_ctx_get, "cuCtxGetCurrent");
  LOOK(p_ctx_set, "cuCtxSetCurrent");
  LOOK(p_dev_get, "cuDeviceGet");
  LOOK(p_retain, "cuDevicePrimaryCtxRetain");
  LOOK(p_stream_create, "cuStreamCreate");
  LOOK(p_event_create, "cuEventCreate");
  LOOK(p_event_record, "cuEventRecord");
  LOOK(p_wait_event, "cuStreamWaitEvent");
  LOOK(p_event_query, "cuEventQuery");
  /* Optional: cuGetErrorName, and the discard of CUDA 12.8. */
  *(void **)&p_errname = dlsym(h, "cuGetErrorName");
  *(void **)&p_discard = dlsym(h, "cuMemDiscardAndPrefetchBatchAsync");
  /* Optional too: the allocator does not call them itself. */
  *(void **)&p_ctx_device = dlsym(h, "cuCtxGetDevice");
  *(void **)&p_capturing = dlsym(h, "cuStreamIsCapturing");
  CUresult r = p_init(0);
  if (r != CUDA_SUCCESS) {
    snprintf(err, errlen, "cuInit failed (%s): no usable GPU", d_errname(r));
    return LMS_ERR_DEVICE;
  }
  *out = (lms__drv_t){
      .version = LMS__DRV_VERSION, .bind = d_bind, .mem_alloc = d_alloc,
      .mem_free = d_free, .mem_alloc_managed = d_managed,
      .advise_host = d_advise_host, .prefetch = d_prefetch,
      .ctx_synchronize = d_sync, .stream_create = d_stream_create,
      .event_create = d_event_create, .event_record = d_event_record,
      .stream_wait_event = d_wait_event, .event_query = d_event_query,
      .discard = p_discard != NULL ? d_discard : NULL,
      .mem_get_info = d_info,
      .current_device = p_ctx_device != NULL ? d_current_device : NULL,
      .stream_is_capturing = p_capturing != NULL ? d_capturing : NULL,
      .error_name = d_errname};
  return LMS_OK;
}
