/* lms_torch.h - the stable-pointer allocator as a drop-in for frameworks
 * that take a raw malloc/free pair: PyTorch's CUDAPluggableAllocator
 * (python/lms_torch.py installs it), or any C or C++ program.
 *
 * Every pointer returned stays valid at one address until it is freed.
 * While the process's device use stays within LMS_GPU_LIMIT, blocks are
 * device memory, cached per stream; past it they are managed memory kept
 * on the host and read in place by the GPU, and lms_torch_prefetch moves
 * them to the device ahead of use (evicting older ones) without ever
 * changing a result.  Options come from the LMS_* environment, read at
 * lms_torch_init or at the first allocation: LMS_GPU_LIMIT, LMS_KB,
 * LMS_FRAC, LMS_PREFETCH_WINDOW, LMS_LOG, LMS_LOG_FILE.
 *
 * Exported by liblms.so and by liblms_torch.so, which is the same
 * allocator without the rest of the runtime and can be loaded with
 * dlopen (Python's ctypes, torch.cuda.memory.CUDAPluggableAllocator). */
#ifndef LMS_LMS_TORCH_H
#define LMS_LMS_TORCH_H

#include <stddef.h>
#include <sys/types.h>

#include "lms/lms.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The CUDA runtime's stream type; the same declaration as its own, so the
 * two headers may be included in either order. */
typedef struct CUstream_st *cudaStream_t;

/* Reads the options.  0, or -1 with lms_torch_last_error() set (a bad
 * LMS_* value, no CUDA driver).  Called by the first allocation if not
 * before; calling it again does nothing. */
LMS_API int lms_torch_init(void);

/* PyTorch's pluggable allocator signatures.  malloc returns NULL for size
 * 0, for a negative or absurd size, and when neither device nor managed
 * memory can serve it; free of NULL does nothing.  A block freed on a
 * stream is reused for that stream at once (stream order protects it) and
 * for others only after the device has synchronised. */
LMS_API void *lms_torch_malloc(ssize_t size, int device, cudaStream_t stream);
LMS_API void lms_torch_free(void *ptr, ssize_t size, int device,
                            cudaStream_t stream);

/* Hints: moves those of the n blocks that live in managed memory to the
 * device, queued on stream; returns how many moved.  Pointers that are not
 * block starts of this allocator are ignored. */
LMS_API int lms_torch_prefetch(void *const *ptrs, int n, cudaStream_t stream);
/* Sends every prefetched managed block back to the host. */
LMS_API int lms_torch_evict_all(cudaStream_t stream);
/* Returns the cached free blocks to the driver. */
LMS_API void lms_torch_empty_cache(void);

/* The counters as one JSON object in buf; returns the length needed (as
 * snprintf does).  Keys are listed in README.md ("PyTorch"). */
LMS_API size_t lms_torch_stats_json(char *buf, size_t cap);

/* Why the last init or allocation failed; "" if nothing failed. */
LMS_API const char *lms_torch_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
