/* drv.h - the CUDA driver as the two front ends beside handle mode call
 * it: the stable-pointer allocator (src/stable) and the preload
 * (src/preload) each fill one table of this type and make every driver
 * call of their own through it, as handle mode calls its device through
 * lms_dev_ops_t.  (The preload's hooks pass the program's own calls on to
 * the driver unchanged; those are not the preload's calls.)
 *
 * Fillers: stable/driver.c, from libcuda.so.1 opened when the allocator
 * starts; preload/drv.c, from the libcuda the program loaded, found at
 * each entry's first use; the test suite's driver double stands behind
 * both.  Versioned as lms_dev_ops_t and NCCL's plugin tables are: a table
 * carries the version it was filled for, and one of another version is
 * refused with a message naming both (lms__drv_check), never read.  A
 * change to an entry's meaning or a new entry takes a new version.
 *
 * Every entry returns the driver's result (0 is CUDA_SUCCESS, 2
 * CUDA_ERROR_OUT_OF_MEMORY), which error_name names.  Pointers are device
 * addresses as uint64_t; streams and events are the driver's, opaque.
 * An entry may be NULL where a table says so. */
#ifndef LMS_CORE_DRV_H
#define LMS_CORE_DRV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define LMS__DRV_VERSION 1u

typedef struct lms__drv {
  uint32_t version; /* LMS__DRV_VERSION of the filler */
  /* Makes `device`'s primary context current on this thread if none is:
   * frameworks call the allocator from threads of their own (PyTorch's
   * autograd workers) on which the runtime never made one current.  NULL
   * in the preload, which acts on the program's threads as they are. */
  int (*bind)(int device);
  int (*mem_alloc)(uint64_t *ptr, size_t size);
  int (*mem_free)(uint64_t ptr);
  int (*mem_alloc_managed)(uint64_t *ptr, size_t size);
  /* Preferred location the host, accessed in place by `device`. */
  int (*advise_host)(uint64_t ptr, size_t size, int device);
  /* device < 0: to the host. */
  int (*prefetch)(uint64_t ptr, size_t size, int device, void *stream);
  int (*ctx_synchronize)(void);
  /* Streams (non-blocking) and events (no timing) of the caller's own,
   * for moves that overlap the program's kernels.  event_query: 0 when
   * the work before the event is done. */
  int (*stream_create)(void **stream);
  int (*event_create)(void **ev);
  int (*event_record)(void *ev, void *stream);
  int (*stream_wait_event)(void *stream, void *ev);
  int (*event_query)(void *ev);
  /* The contents given up and the pages moved to `device` (< 0: the host)
   * without copying them; not on the legacy NULL stream.  NULL when the
   * driver lacks it (cuMemDiscardAndPrefetchBatchAsync, CUDA 12.8). */
  int (*discard)(uint64_t ptr, size_t size, int device, void *stream);
  int (*mem_get_info)(size_t *free_bytes, size_t *total);
  /* The device of the calling thread's current context.  NULL where the
   * driver lacks it and the front end does not need it. */
  int (*current_device)(int *device);
  /* *capturing: 1 while work on `stream` is captured into a graph.  NULL
   * as current_device. */
  int (*stream_is_capturing)(void *stream, int *capturing);
  const char *(*error_name)(int res);
} lms__drv_t;

/* 0 when this build can read d; else -1, and err says which version d
 * was filled for and which this build reads. */
static inline int lms__drv_check(const lms__drv_t *d, char *err,
                                 size_t errlen) {
  if (d != NULL && d->version == LMS__DRV_VERSION) return 0;
  snprintf(err, errlen, "the driver table is of version %u; this build "
           "of lms reads version %u only", d != NULL ? d->version : 0u,
           LMS__DRV_VERSION);
  return -1;
}

#endif
