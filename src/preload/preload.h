/* preload.h - the parts of liblms_preload.so, the LD_PRELOAD interposer
 * that runs unmodified CUDA programs under a virtual GPU limit.
 *
 *   real.c      the real dlsym and libcuda's own functions, found lazily
 *   dlsym.c     the exported dlsym: hooked cu* names answer with the hook
 *   procaddr.c  cuGetProcAddress and _v2: versioned lookups answer with
 *               the hook for the version the driver chose
 *   hooks.c     the allocation family, cuMemGetInfo_v2 and the launches
 *   drv.c       the preload's own driver calls, as core/drv.h's table
 *   ledger.c    every allocation the hooks made, with its placement, and
 *               the counters behind the stats line
 *   init.c      options from the LMS_* environment, the stats line at exit
 *
 * Invariants: nothing reached from a hook allocates with malloc or uses
 * stdio (the ledger lives in mmap'd memory; logs are formatted on the stack
 * and written with write(2)), apart from the dynamic linker's own work the
 * first time libcuda is looked up (real.c); no lock is held while the real
 * driver runs, so a driver that calls back into dlsym or a hooked function
 * cannot deadlock against us. */
#ifndef LMS_PRELOAD_PRELOAD_H
#define LMS_PRELOAD_PRELOAD_H

/* The versioned and per-thread names (cuMemAlloc_v2 and cuMemAlloc,
 * cuMemAllocAsync_ptsz, ...) are declared side by side only in the
 * driver's own view of cuda.h. */
#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1
#endif
#include <cuda.h>

#include <stddef.h>
#include <stdint.h>

#include "core/drv.h"
#include "core/options.h"
#include "core/period.h"

#define LMS__PRELOAD_EXPORT __attribute__((visibility("default")))

/* For the code on the exported dlsym's path (see Note [dlsym passes
 * through by a tail jump]): the sanitizer runtime calls dlsym while it
 * starts, before its shadow memory exists, so that code must not be
 * instrumented. */
#if defined(__clang__)
#define LMS__NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))
#else
#define LMS__NO_SANITIZE                                                      \
  __attribute__((no_sanitize_address, no_sanitize_undefined))
#endif

/* The driver functions the interposer knows.
 * X(symbol, base, version, ptsz, hooked)
 *   symbol:  the exported, versioned name in libcuda
 *   base:    the name a program gives cuGetProcAddress
 *   version: the cudaVersion from which `base` means `symbol`
 *   ptsz:    1 for the per-thread default stream form
 *   hooked:  1 when liblms_preload.so defines `symbol` itself; 0 for the
 *            functions it only calls */
#define LMS__PRELOAD_FUNCS(X)                                                 \
  X(cuMemAlloc_v2, cuMemAlloc, 3020, 0, 1)                                    \
  X(cuMemAllocPitch_v2, cuMemAllocPitch, 3020, 0, 1)                          \
  X(cuMemFree_v2, cuMemFree, 3020, 0, 1)                                      \
  X(cuMemGetInfo_v2, cuMemGetInfo, 3020, 0, 1)                                \
  X(cuMemAllocAsync, cuMemAllocAsync, 11020, 0, 1)                            \
  X(cuMemAllocAsync_ptsz, cuMemAllocAsync, 11020, 1, 1)                       \
  X(cuMemFreeAsync, cuMemFreeAsync, 11020, 0, 1)                              \
  X(cuMemFreeAsync_ptsz, cuMemFreeAsync, 11020, 1, 1)                         \
  X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020, 0, 1)            \
  X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 11020, 1, 1)       \
  X(cuMemAllocManaged, cuMemAllocManaged, 6000, 0, 1)                         \
  X(cuLaunchKernel, cuLaunchKernel, 4000, 0, 1)                               \
  X(cuLaunchKernel_ptsz, cuLaunchKernel, 7000, 1, 1)                          \
  X(cuLaunchKernelEx, cuLaunchKernelEx, 11060, 0, 1)                          \
  X(cuLaunchKernelEx_ptsz, cuLaunchKernelEx, 11060, 1, 1)                     \
  X(cuGetProcAddress, cuGetProcAddress, 11030, 0, 1)                          \
  X(cuGetProcAddress_v2, cuGetProcAddress, 12000, 0, 1)                       \
  X(cuMemAdvise, cuMemAdvise, 8000, 0, 0)                                     \
  X(cuMemAdvise_v2, cuMemAdvise, 12020, 0, 0)                                 \
  X(cuCtxGetDevice, cuCtxGetDevice, 2000, 0, 0)                               \
  X(cuStreamSynchronize, cuStreamSynchronize, 2000, 0, 0)                     \
  X(cuStreamSynchronize_ptsz, cuStreamSynchronize, 7000, 1, 0)                \
  X(cuFuncGetParamInfo, cuFuncGetParamInfo, 12040, 0, 0)                     \
  X(cuKernelGetParamInfo, cuKernelGetParamInfo, 12040, 0, 0)                 \
  X(cuStreamCreate, cuStreamCreate, 2000, 0, 0)                               \
  X(cuMemPrefetchAsync, cuMemPrefetchAsync, 8000, 0, 0)                       \
  X(cuMemPrefetchAsync_v2, cuMemPrefetchAsync, 12020, 0, 0)                   \
  X(cuStreamIsCapturing, cuStreamIsCapturing, 10000, 0, 0)

typedef enum lms__fn_id {
#define LMS__FN_ID_(sym, base, ver, ptsz, hooked) LMS__FN_##sym,
  LMS__PRELOAD_FUNCS(LMS__FN_ID_)
#undef LMS__FN_ID_
  LMS__FN_COUNT
} lms__fn_id_t;

typedef struct lms__fn {
  const char *symbol;
  const char *base;
  int version;
  int ptsz;
  void *hook; /* our definition, or NULL for a function we only call */
} lms__fn_t;

extern const lms__fn_t lms__fns[LMS__FN_COUNT];

/* ---- real.c ----------------------------------------------------------- */

/* glibc's dlsym, found with dlvsym; set before any lookup goes through it.
 * The exported dlsym jumps to it, so it is a plain global. */
extern void *(*lms__real_dlsym)(void *, const char *);
/* Finds lms__real_dlsym if it is not yet known; 0 on success. */
LMS__NO_SANITIZE int lms__real_dlsym_init(void);
/* libcuda's own definition of function `id`, or NULL when libcuda is not
 * loaded or lacks it.  Safe to call from any hook, any thread. */
void *lms__real(lms__fn_id_t id);
/* lms__real typed: REAL(cuMemAlloc_v2) is a cuMemAlloc_v2_fn.  The types
 * of the functions both hooks.c and drv.c call are here; each file has its
 * others. */
#define REAL(fn) ((fn##_fn)lms__real(LMS__FN_##fn))
typedef CUresult (*cuMemGetInfo_v2_fn)(size_t *, size_t *);
typedef CUresult (*cuMemAllocManaged_fn)(CUdeviceptr *, size_t, unsigned int);
/* The id whose symbol is name[0..], or -1; only hooked ones when
 * hooked_only.  Uses no libc string function (see dlsym.c). */
LMS__NO_SANITIZE int lms__fn_find(const char *name, int hooked_only);

/* ---- drv.c ------------------------------------------------------------ */

/* The driver calls the preload makes of its own (core/drv.h); the entries
 * it does not make are NULL. */
extern const lms__drv_t lms__preload_drv;

/* ---- procaddr.c ------------------------------------------------------- */

/* What cuGetProcAddress should hand the program for `symbol` when the real
 * driver returned `addr`: our hook for the same function, or addr. */
void *lms__procaddr_match(const char *symbol, void *addr, int version,
                          cuuint64_t flags);

/* ---- ledger.c --------------------------------------------------------- */

typedef enum lms__place {
  LMS__PLACE_NONE = 0,
  LMS__PLACE_DEVICE,      /* real device memory, counted against the limit */
  LMS__PLACE_MANAGED,     /* ours: managed, preferred on the host */
  LMS__PLACE_APP_MANAGED  /* the program's own cuMemAllocManaged */
} lms__place_t;

/* X(field, in_line, what): the ledger's counters, in the order of the
 * struct and of the summary line (lms__ledger_line), which shows those
 * with in_line 1.  One table for the struct and the line, as
 * LMS_STATS_MAP (lms.h) is for handle mode and LMS__STABLE_STATS
 * (stable.h) for the stable allocator. */
#define LMS__LEDGER_STATS(X)                                                  \
  X(allocs, 1, "all placements")                                             \
  X(device_allocs, 1, "placed in device memory")                             \
  X(managed_allocs, 1, "ours, placed past the limit")                        \
  X(app_managed_allocs, 1, "the program's own cuMemAllocManaged")            \
  X(oom_fallbacks, 1, "device said out of memory under the limit")           \
  X(frees, 1, "frees")                                                       \
  X(unknown_frees, 1, "passed through: not ours")                            \
  X(device_bytes, 1, "bytes in device memory")                               \
  X(device_peak, 1, "... at most")                                           \
  X(managed_bytes, 1, "bytes of ours in managed memory")                     \
  X(managed_peak, 1, "... at most")                                          \
  X(app_managed_bytes, 0, "bytes of the program's managed memory")           \
  X(launches, 1, "kernel launches seen")                                     \
  X(launch_ptrs, 1, "our allocations seen among launch params")              \
  X(launches_managed, 1, "launches that passed one of our managed")

typedef struct lms__ledger_stats {
#define LMS__LEDGER_FIELD_(field, in_line, what) uint64_t field;
  LMS__LEDGER_STATS(LMS__LEDGER_FIELD_)
#undef LMS__LEDGER_FIELD_
} lms__ledger_stats_t;

/* Reserves size bytes of the device budget if device use plus size stays
 * within limit (0: no limit) and the -lms rule keeps it on the device;
 * returns 1 when reserved.  See Note [Placement past the limit]. */
int lms__ledger_reserve(uint64_t size, uint64_t limit, int64_t lms_kb,
                        double lms_frac, uint64_t capacity);
void lms__ledger_unreserve(uint64_t size);
/* Records an allocation.  For LMS__PLACE_DEVICE the bytes were reserved
 * already.  LMS_ERR_HOST_OOM when the ledger cannot grow, LMS_ERR_INVALID
 * for a null ptr (the allocation is then not tracked). */
lms_status_t lms__ledger_add(uint64_t ptr, uint64_t size, lms__place_t place);
/* Takes ptr out of the ledger; its placement (NONE when unknown) and size
 * are returned. */
lms__place_t lms__ledger_remove(uint64_t ptr, uint64_t *size);
/* Puts back what lms__ledger_remove took, when the real free failed. */
void lms__ledger_restore(uint64_t ptr, uint64_t size, lms__place_t place);
lms__place_t lms__ledger_lookup(uint64_t ptr);
/* LMS_OK and *size when ptr starts one of our managed allocations;
 * LMS_ERR_INVALID else. */
lms_status_t lms__ledger_managed_size(uint64_t ptr, uint64_t *size);
void lms__ledger_note_oom_fallback(void);
void lms__ledger_note_unknown_free(void);
void lms__ledger_note_launch(unsigned ptrs, unsigned managed);
uint64_t lms__ledger_device_bytes(void);
void lms__ledger_stats(lms__ledger_stats_t *out);
/* Formats the one-line summary into buf; returns its length. */
size_t lms__ledger_line(char *buf, size_t size);

/* ---- period.c: src/core/period.h ------------------------------------ */

/* ---- prefetch.c ------------------------------------------------------- */

/* Note [Learned prefetch in the preload] is in prefetch.c. */
/* X(field, in_line, what), as LMS__LEDGER_STATS; the line shows these
 * after the ledger's. */
#define LMS__PREFETCH_STATS(X)                                                \
  X(period, 1, "in force at the latest launch; 0 none")                      \
  X(locks, 0, "periods found")                                               \
  X(prefetches, 1, "managed allocations moved to the device")                \
  X(prefetch_bytes, 1, "their bytes")                                        \
  X(evictions, 1, "moved back to the host")                                  \
  X(evict_bytes, 0, "their bytes")                                           \
  X(skipped, 0, "no room, or past the window")                               \
  X(failed, 0, "moves the driver refused")                                   \
  X(resident, 0, "bytes resident now")                                       \
  X(resident_peak, 1, "... at most")                                         \
  X(adopted, 1, "made resident as allocated (the share)")

typedef struct lms__prefetch_stats {
#define LMS__PREFETCH_FIELD_(field, in_line, what) uint64_t field;
  LMS__PREFETCH_STATS(LMS__PREFETCH_FIELD_)
#undef LMS__PREFETCH_FIELD_
} lms__prefetch_stats_t;

/* 1 with a limit and a window of at least one step. */
int lms__prefetch_enabled(void);
/* A launch of fn on stream handed the managed allocations managed[0..n). */
void lms__prefetch_launch(uintptr_t fn, const uint64_t *managed, unsigned n,
                          CUstream stream);
/* What device allocations may hold of the limit: all of it with the
 * prefetch off, else all but the prefetch's share not yet resident (Note
 * [The prefetch's share of the limit]). */
uint64_t lms__prefetch_device_limit(void);
/* 1 when the share has room for size more resident bytes now. */
int lms__prefetch_share_fits(uint64_t size);
/* ptr, a managed allocation just made past that share, is moved to the
 * device at once if the share has room. */
void lms__prefetch_adopt(uint64_t ptr, uint64_t size);
/* ptr (managed, ours) is about to be freed. */
void lms__prefetch_forget(uint64_t ptr);
void lms__prefetch_stats(lms__prefetch_stats_t *out);

/* ---- init.c ----------------------------------------------------------- */

typedef struct lms__preload_cfg {
  uint64_t gpu_limit; /* 0: the device's own */
  int64_t lms_kb;     /* -1: off */
  double lms_frac;
  int stats_line;
  lms__window_t window; /* --prefetch-window: launches ahead, bytes */
} lms__preload_cfg_t;

extern lms__preload_cfg_t lms__preload_cfg;

#endif
