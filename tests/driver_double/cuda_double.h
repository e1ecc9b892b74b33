/* cuda_double.h - what a test can ask the CUDA driver double
 * (cuda_double.c, built as libcuda.so.1) beyond the driver API itself:
 * its counters, what it knows of one allocation, the advice given for it,
 * its own address of a driver function, and host functions that stand in
 * for kernels.
 *
 * The double's environment: CUDOUBLE_MEMORY (bytes, K/M/G suffix allowed;
 * default 256M) is the "physical" device memory, past which cuMemAlloc and
 * friends fail with CUDA_ERROR_OUT_OF_MEMORY; managed memory is not
 * counted against it.  CUDOUBLE_REQUIRE_CTX=1 makes allocations on a thread
 * with no current context fail with CUDA_ERROR_INVALID_CONTEXT, as the
 * real driver's do.  CUDOUBLE_PROC_TRAMPOLINES=1 makes cuGetProcAddress
 * hand out wrapper functions instead of the exported ones, as a driver
 * whose internal entry points differ from its exported symbols would.
 * CUDOUBLE_LIBRARY_KERNELS=1 makes registered kernels context-less
 * CUkernels, which cuFuncGetParamInfo refuses and cuKernelGetParamInfo
 * describes (cudart 12's launches); =2, CUkernels neither describes.
 * CUDOUBLE_CAPTURING=1 makes cuStreamIsCapturing say every stream is
 * capturing a graph.  CUDOUBLE_EVENTS_PENDING=1 keeps every event pending
 * (cuEventQuery answers CUDA_ERROR_NOT_READY).  CUDOUBLE_NO_DISCARD=1
 * makes cuMemDiscardAndPrefetchBatchAsync unsupported. */
#ifndef LMS_TESTS_CUDA_DOUBLE_H
#define LMS_TESTS_CUDA_DOUBLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct cudouble_stats {
  uint64_t alloc_calls;       /* successful device allocations, all kinds */
  uint64_t managed_calls;     /* successful cuMemAllocManaged */
  uint64_t free_calls;        /* successful frees, all kinds */
  uint64_t bad_free_calls;    /* frees of pointers the double never gave */
  uint64_t oom_calls;         /* allocations refused past CUDOUBLE_MEMORY */
  uint64_t device_bytes;      /* device bytes held now */
  uint64_t device_peak;
  uint64_t managed_bytes;     /* managed bytes held now */
  uint64_t advise_calls;
  uint64_t prefetch_calls;
  uint64_t launches;          /* cuLaunchKernel and cuLaunchKernelEx, all forms */
  uint64_t proc_calls;        /* cuGetProcAddress and _v2 */
  uint64_t stream_syncs;
  uint64_t physical;          /* CUDOUBLE_MEMORY */
  uint64_t streams_created;   /* cuStreamCreate */
  uint64_t managed_on_device; /* managed bytes last prefetched to the device */
  uint64_t managed_on_device_peak;
  uint64_t events_created;    /* cuEventCreate */
  uint64_t event_records;     /* cuEventRecord */
  uint64_t stream_waits;      /* cuStreamWaitEvent */
  uint64_t discards;          /* ranges of cuMemDiscardAndPrefetchBatchAsync */
  uint64_t footprint_peak;    /* of device_bytes + managed_on_device */
} cudouble_stats_t;

enum cudouble_kind {
  CUDOUBLE_NONE = 0,  /* not an allocation of the double */
  CUDOUBLE_DEVICE,    /* cuMemAlloc, cuMemAllocPitch */
  CUDOUBLE_ASYNC,     /* cuMemAllocAsync, cuMemAllocFromPoolAsync */
  CUDOUBLE_MANAGED    /* cuMemAllocManaged */
};

/* Where advice pointed: CU_MEM_LOCATION_TYPE_HOST or _DEVICE with its id,
 * or 0 when none was given. */
typedef struct cudouble_alloc_info {
  int kind;                 /* enum cudouble_kind */
  uint64_t size;
  int preferred_type;       /* SET_PREFERRED_LOCATION */
  int preferred_id;
  int accessed_by_type;     /* SET_ACCESSED_BY */
  int accessed_by_id;
  unsigned prefetches;
  int prefetched_to;        /* the last prefetch: _HOST or _DEVICE, or 0 */
  uint64_t prefetch_stream; /* the stream of the last prefetch */
} cudouble_alloc_info_t;

typedef void (*cudouble_kernel_fn)(void **params);

void cudouble_stats(cudouble_stats_t *out);
/* The allocation that starts at ptr; kind CUDOUBLE_NONE if there is none. */
void cudouble_query(uint64_t ptr, cudouble_alloc_info_t *out);
/* The double's own definition of an exported driver function, or NULL. */
void *cudouble_symbol(const char *name);
/* A CUfunction that runs fn(kernelParams) at launch; nparams parameters of
 * the sizes given (reported by cuFuncGetParamInfo).  NULL when full. */
void *cudouble_register_kernel(cudouble_kernel_fn fn, unsigned nparams,
                               const size_t *sizes);

#endif
