/* stable.h - the stable-pointer allocator: device memory handed out by
 * address, for callers that keep raw pointers (PyTorch's pluggable
 * allocator, C programs) and so cannot have their chunks moved to new
 * addresses the way lms_ctx's handles are.
 *
 *   stable.c  the allocator: a per-stream cache of device blocks within
 *             --gpu-limit, managed memory past it, and the residency of
 *             managed blocks (prefetch to the device, evict to the host)
 *   driver.c  the CUDA driver functions it calls, looked up in
 *             libcuda.so.1 at run time
 *   torch.c   lms_torch_malloc / lms_torch_free and friends
 *             (include/lms/lms_torch.h), one allocator per process
 *
 * Correctness never depends on residency: every block is one address for
 * its life, valid on the device whichever way it was placed (Note
 * [Stable pointers from managed memory] in src/preload/hooks.c), so hints
 * only move time, never results. */
#ifndef LMS_STABLE_STABLE_H
#define LMS_STABLE_STABLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/drv.h"
#include "core/status.h"
#include "core/options.h"

typedef struct lms__stable lms__stable_t;



typedef struct lms__stable_cfg {
  uint64_t gpu_limit;  /* 0: the device's own memory */
  int64_t lms_kb;      /* caffe's -lms; -1 off */
  double lms_frac;     /* caffe's -lms_frac */
  lms__window_t window;/* bytes kept for prefetched managed blocks */
} lms__stable_cfg_t;

/* The allocator's counters, one table: the struct and the JSON line
 * (lms__stable_stats_json) both come from it, so a counter added here is
 * reported under its own name.  X(field, what it counts). */
#define LMS__STABLE_STATS(X)                                                  \
  X(allocs, "allocations served")                                             \
  X(frees, "frees")                                                           \
  X(bad_frees, "frees of pointers not handed out")                            \
  X(failed, "allocations nothing could serve")                                \
  X(cache_hits, "allocations served from cached blocks")                      \
  X(driver_allocs, "driver allocations")                                      \
  X(driver_frees, "driver frees")                                             \
  X(cache_flushes, "cached blocks returned to the driver")                    \
  X(syncs, "synchronisations")                                                \
  X(device_held, "bytes of device blocks, live and cached")                   \
  X(device_live, "bytes of live device blocks")                               \
  X(device_peak, "peak of device_held + resident")                            \
  X(managed_held, "bytes of managed blocks, live and cached")                 \
  X(managed_live, "bytes of live managed blocks")                             \
  X(managed_allocs, "allocations served from managed memory")                 \
  X(resident, "managed bytes prefetched to the device")                       \
  X(prefetches, "managed blocks moved to the device")                         \
  X(prefetch_bytes, "their bytes")                                            \
  X(evictions, "managed blocks sent back to the host")                        \
  X(evict_bytes, "their bytes")                                               \
  X(hints, "prefetch hints")                                                  \
  X(hints_skipped, "hints not acted on")                                      \
  X(limit, "the capacity in force")                                           \
  X(reserve, "of it kept for prefetched managed blocks")                      \
  X(period, "learned period of allocations and frees; 0 none (Note "         \
            "[Learned prefetch from the allocation order])")                  \
  X(locks, "periods found")                                                   \
  X(learned, "prefetches the learned order asked for")                        \
  X(eager, "managed blocks made resident as handed out")                      \
  X(drops, "dead resident blocks given up uncopied")                          \
  X(drop_bytes, "their bytes")                                                \
  X(moves_skipped, "moves not made: a discard pending, or refused")           \
  X(managed_frees, "frees of managed blocks...")                              \
  X(frees_resident, "...that found the block on the device")

typedef struct lms__stable_stats {
#define LMS__STABLE_STAT_FIELD_(field, what) uint64_t field;
  LMS__STABLE_STATS(LMS__STABLE_STAT_FIELD_)
#undef LMS__STABLE_STAT_FIELD_
} lms__stable_stats_t;

/* LMS_ERR_INVALID with err set when the driver table is of another
 * version (core/drv.h); LMS_ERR_HOST_OOM when memory runs out. */
lms_status_t lms__stable_create(const lms__stable_cfg_t *cfg,
                                const lms__drv_t *drv, lms__stable_t **out,
                                char *err, size_t errlen);
void lms__stable_destroy(lms__stable_t *st);

/* NULL when size is 0 or nothing could serve it; then *err (if given)
 * says why. */
void *lms__stable_malloc(lms__stable_t *st, size_t size, int device,
                         void *stream, const char **err);
/* LMS_ERR_INVALID when ptr is not a live block of this allocator. */
lms_status_t lms__stable_free(lms__stable_t *st, void *ptr, void *stream);

/* Moves the managed blocks among ptrs to the device ahead of use, on
 * `stream`, evicting the least recently hinted managed blocks outside this
 * batch when room is needed.  Returns how many were moved. */
int lms__stable_prefetch(lms__stable_t *st, void *const *ptrs, int n,
                         void *stream);
/* Sends every resident managed block back to the host. */
int lms__stable_evict_all(lms__stable_t *st, void *stream);
/* Returns cached blocks to the driver (after a synchronize). */
void lms__stable_empty_cache(lms__stable_t *st);

void lms__stable_stats(lms__stable_t *st, lms__stable_stats_t *out);
/* The stats as one JSON object; returns the length it needs. */
size_t lms__stable_stats_json(const lms__stable_stats_t *s, char *buf,
                              size_t cap);

/* The driver in libcuda.so.1 (core/drv.h); LMS_ERR_UNSUPPORTED with err
 * naming what is missing, or LMS_ERR_DEVICE when cuInit fails. */
lms_status_t lms__stable_driver_load(lms__drv_t *out, char *err,
                                     size_t errlen);

#endif
