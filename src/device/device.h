/* device.h - the device-ops table: everything lms asks of a GPU.
 *
 * Two implementations: the simulated device (sim.c) and CUDA (a later
 * module).  The table is shaped after the CUDA runtime so that CUDA fits it
 * one call for one entry: streams and events are opaque pointers
 * (cudaStream_t, cudaEvent_t), copies are asynchronous on a stream, host
 * memory is pinned.
 *
 * Contract, for every entry that returns lms_status_t: LMS_OK on success;
 * otherwise an error status, the operation has had no effect, and the
 * device's last_error holds the reason.  Entries may be called from several
 * threads at once.  Work on one stream runs in the order it was enqueued;
 * work on different streams is ordered only through events.
 */
#ifndef LMS_DEVICE_DEVICE_H
#define LMS_DEVICE_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "core/link.h"
#include "core/status.h"
#include "lms/lms.h"

#define LMS_DEV_OPS_VERSION 2

/* The operations that can fail, by name: call counting and fault injection
 * ("--fail copy_h2d:3") use these names. */
#define LMS__DEV_OPS_MAP(X)                                                   \
  X(mem_info)                                                                 \
  X(dev_alloc)                                                                \
  X(dev_free)                                                                 \
  X(host_alloc)                                                               \
  X(host_free)                                                                \
  X(stream_create)                                                            \
  X(stream_destroy)                                                           \
  X(stream_sync)                                                              \
  X(stream_wait)                                                              \
  X(copy_h2d)                                                                 \
  X(copy_d2h)                                                                 \
  X(event_create)                                                             \
  X(event_destroy)                                                            \
  X(event_record)                                                             \
  X(event_query)                                                              \
  X(event_sync)                                                               \
  X(compute)                                                                  \
  X(va_reserve)                                                               \
  X(va_release)                                                               \
  X(dev_map)

typedef enum lms__dev_op {
#define LMS__DEV_OP_ENUM_(name) LMS__DEVOP_##name,
  LMS__DEV_OPS_MAP(LMS__DEV_OP_ENUM_)
#undef LMS__DEV_OP_ENUM_
  LMS__DEVOP_COUNT
} lms__dev_op_t;

extern const char *const lms__dev_op_names[LMS__DEVOP_COUNT];

typedef struct lms_dev lms_dev_t;

typedef struct lms_dev_ops {
  unsigned version; /* LMS_DEV_OPS_VERSION */
  const char *name; /* "sim", "cuda" */

  /* Free and total device memory, as cudaMemGetInfo. */
  lms_status_t (*mem_info)(lms_dev_t *d, size_t *free_b, size_t *total_b);
  /* Device memory, aligned to at least 256 bytes.  LMS_ERR_DEVICE_OOM when
   * the device has no room. */
  lms_status_t (*dev_alloc)(lms_dev_t *d, size_t size, void **out);
  /* Frees what dev_alloc returned.  Waits for no work: the caller orders. */
  lms_status_t (*dev_free)(lms_dev_t *d, void *ptr);
  /* Pinned host memory, page aligned, usable by copies at full rate.
   * LMS_ERR_HOST_OOM when the host has none to give. */
  lms_status_t (*host_alloc)(lms_dev_t *d, size_t size, void **out);
  lms_status_t (*host_free)(lms_dev_t *d, void *ptr);

  /* A non-blocking stream. */
  lms_status_t (*stream_create)(lms_dev_t *d, void **out);
  lms_status_t (*stream_destroy)(lms_dev_t *d, void *stream);
  /* Blocks the calling thread until all work on the stream is done. */
  lms_status_t (*stream_sync)(lms_dev_t *d, void *stream);
  /* Work enqueued on `stream` after this waits for the event's work. */
  lms_status_t (*stream_wait)(lms_dev_t *d, void *stream, void *event);

  /* Asynchronous copies between pinned host memory and device memory. */
  lms_status_t (*copy_h2d)(lms_dev_t *d, void *dst, const void *src,
                           size_t n, void *stream);
  lms_status_t (*copy_d2h)(lms_dev_t *d, void *dst, const void *src,
                           size_t n, void *stream);

  lms_status_t (*event_create)(lms_dev_t *d, void **out);
  lms_status_t (*event_destroy)(lms_dev_t *d, void *event);
  /* Captures the work enqueued on `stream` so far; re-recording replaces
   * what was captured, as cudaEventRecord does. */
  lms_status_t (*event_record)(lms_dev_t *d, void *event, void *stream);
  /* LMS_OK if the captured work is done (or nothing was captured),
   * LMS_NOT_READY if not yet. */
  lms_status_t (*event_query)(lms_dev_t *d, void *event);
  lms_status_t (*event_sync)(lms_dev_t *d, void *event);

  /* Enqueues work that keeps the device busy for `ns` nanoseconds. */
  lms_status_t (*compute)(lms_dev_t *d, void *stream, uint64_t ns);
  /* How long work enqueued on `stream` now would sit waiting for the
   * event's work, in nanoseconds (0 when it would not wait).  A device that
   * cannot tell returns LMS_ERR_UNSUPPORTED and the caller counts the wait
   * from event_query alone.  Changes nothing and is not fault-injected. */
  lms_status_t (*wait_cost)(lms_dev_t *d, void *stream, void *event,
                            uint64_t *ns);
  /* The device clock in nanoseconds; never fails. */
  uint64_t (*now_ns)(lms_dev_t *d);
  /* Frees the device object itself. */
  void (*destroy)(lms_dev_t *d);
  /* Optional (NULL: none).  Frees what dev_alloc returned once the event's
   * work is done, without waiting for it here: a stream-ordered allocator
   * (cudaFreeAsync) gives the memory to a later dev_alloc only after the
   * event.  The event may be recorded again after the call. */
  lms_status_t (*dev_free_after)(lms_dev_t *d, void *ptr, void *event);
  /* Optional.  Told the budget that device use is kept under, a device
   * whose allocator caches returned memory keeps no more than that. */
  void (*set_budget)(lms_dev_t *d, uint64_t bytes);
  /* Optional (NULL: copies take any device address, as CUDA's do).
   * Declares [ptr, ptr + size) device memory that another allocator owns
   * (a framework's tensor), so that copies may read or write it until
   * ext_unregister(ptr).  The simulated device checks every copy's device
   * side against its own allocations and these ranges. */
  lms_status_t (*ext_register)(lms_dev_t *d, const void *ptr, size_t size);
  lms_status_t (*ext_unregister)(lms_dev_t *d, const void *ptr);
  /* Optional (NULL: none), as cudaEventCreate with timing and
   * cudaEventElapsedTime.  An event that event_elapsed can time; it is
   * destroyed with event_destroy.  event_elapsed gives the nanoseconds from
   * when the stream that recorded `from` reached it to when the stream that
   * recorded `to` reached that, LMS_NOT_READY while `to`'s work is not
   * done; it waits for nothing and is not fault-injected.  What wait_cost
   * cannot say ahead, a timed event before a stream_wait and one after it
   * measure once the stream has passed (Note [Stalls measured after the
   * fact] in swap/residency.c). */
  lms_status_t (*event_create_timed)(lms_dev_t *d, void **out);
  lms_status_t (*event_elapsed)(lms_dev_t *d, void *from, void *to,
                                uint64_t *ns);
  /* Optional (NULL: a device that cannot map, as cuMemMap does; a chunk
   * is then never made of pieces, Note [Chunks of pieces] in
   * swap/residency.c).  va_reserve reserves `size` bytes of device
   * addresses backed by nothing, aligned to at least 2 MiB; va_release
   * gives them back, with whatever is mapped there.  dev_map makes
   * [va, va + size) show the memory of the dev_alloc block at `ptr` (at
   * least `size` bytes, from its start) as well, in place of whatever
   * [va, va + size) showed before: writes through either address are
   * seen through the other.  [va, va + size) lies in one reservation.
   * The caller orders: no work may use the old mapping any more. */
  lms_status_t (*va_reserve)(lms_dev_t *d, size_t size, void **va);
  lms_status_t (*va_release)(lms_dev_t *d, void *va);
  lms_status_t (*dev_map)(lms_dev_t *d, void *va, void *ptr, size_t size);
  /* Optional (NULL: not known).  The copy engines' rates in bytes a
   * second: each way alone, and both ways at once summed (0: each way
   * keeps its own rate whatever the other does).  Not fault-injected; a
   * device may measure them on the first call. */
  lms_status_t (*link_rates)(lms_dev_t *d, double *h2d, double *d2h,
                             double *both);
} lms_dev_ops_t;

/* The common head of every device object. */
struct lms_dev {
  const lms_dev_ops_t *ops;
  char last_error[LMS__ERRBUF];
};

/* ---- A pool of spare events ------------------------------------------ */

/* Events are created once and reused: creating one per free or per copy
 * costs a driver call each time. */
typedef struct lms__evpool {
  lms_dev_t *dev;
  int timed;  /* 1: events from event_create_timed */
  void **ev;
  size_t len, cap;
} lms__evpool_t;

/* A spare event, or a new one; on failure the device's error stands. */
lms_status_t lms__evpool_get(lms__evpool_t *p, void **out);
/* Gives an event back (NULL is ignored). */
void lms__evpool_put(lms__evpool_t *p, void *ev);
/* Destroys the spare events. */
void lms__evpool_fini(lms__evpool_t *p);

/* ---- Decorators (wrap.c) --------------------------------------------- */

/* A device in front of another (Note [Decorating a device] in wrap.c). */
typedef struct lms__dev_wrap lms__dev_wrap_t;
typedef struct lms__dev_wrap_hooks {
  /* Optional.  Each call that can fail, by its LMS__DEV_OPS_MAP name,
   * before it is forwarded; a status other than LMS_OK fails it there,
   * with the reason in w->head.last_error. */
  lms_status_t (*enter)(lms__dev_wrap_t *w, lms__dev_op_t op);
  /* Optional.  Each compute, copy_h2d and copy_d2h on `stream` (bytes: a
   * copy's), with after = 0 before it is forwarded, and after = 1 once it
   * was enqueued. */
  void (*work)(lms__dev_wrap_t *w, lms__dev_op_t op, void *stream,
               size_t bytes, int after);
  /* Optional.  At destroy, before the inner device is destroyed: frees
   * what the decorator holds (the wrapper itself, if it allocated it). */
  void (*fini)(lms__dev_wrap_t *w);
} lms__dev_wrap_hooks_t;
struct lms__dev_wrap {
  lms_dev_t head; /* first: a lms_dev_t * to a wrapper is one to this */
  lms_dev_ops_t ops;
  lms_dev_t *inner;
  const lms__dev_wrap_hooks_t *hooks;
};
/* Makes w a device that forwards to inner, which it then owns. */
void lms__dev_wrap_init(lms__dev_wrap_t *w, lms_dev_t *inner,
                        const lms__dev_wrap_hooks_t *hooks);
int lms__dev_is_wrap(const lms_dev_t *d);
/* The device under every wrapper of d; d itself when it is no wrapper. */
lms_dev_t *lms__dev_unwrap(lms_dev_t *d);

/* ---- Fault injection (faults.c) -------------------------------------- */

/* Parses "OP:N[,OP:N]" (N a decimal >= 1; OP a device operation, or "any"
 * for the Nth call of any operation) into fail_op[LMS__DEVOP_COUNT] and
 * *fail_any.  LMS_ERR_INVALID with err naming the accepted operations. */
lms_status_t lms__fault_spec_parse(const char *spec, uint64_t *fail_op,
                                   uint64_t *fail_any, char *err);
/* The status an injected failure of op reports: the one a real device
 * gives when it runs out of what the call asks for. */
lms_status_t lms__fault_status(lms__dev_op_t op);
/* Wraps inner in a device that counts calls and fails the ones spec (may
 * be NULL) chooses, before they reach inner (Note [Injecting faults above
 * a real device]).  On success the wrapper owns inner; on failure inner
 * is untouched. */
lms_status_t lms__faulty_wrap(lms_dev_t *inner, const char *spec,
                              lms_dev_t **out, char *err);
int lms__dev_is_faulty(const lms_dev_t *d);
/* Arms the nth call (counted from wrapping) of op, or of any operation,
 * to fail; n = 0 disarms.  No-ops on a device that is no wrapper. */
void lms__faulty_fail_op(lms_dev_t *d, lms__dev_op_t op, uint64_t n);
void lms__faulty_fail_any(lms_dev_t *d, uint64_t n);
/* Calls of op so far, or of every operation with op = LMS__DEVOP_COUNT. */
uint64_t lms__faulty_calls(lms_dev_t *d, int op);

/* ---- The simulated device ------------------------------------------- */

typedef struct lms__sim_config {
  uint64_t capacity;   /* bytes of simulated device memory, > 0 */
  lms__link_t link;    /* copy engines: one per direction */
  const char *fail;    /* fault spec "OP:N[,OP:N]" or NULL */
  /* 1: copies move no bytes and memory is reserved, not backed, so that
   * workloads larger than the host's memory can be timed. */
  int timing_only;
  /* 1: wait_cost tells only what CUDA can (0 for an event already done,
   * LMS_ERR_UNSUPPORTED otherwise), so the runtime measures stalls with
   * timed events after the fact, as it does on a GPU. */
  int measured_waits;
} lms__sim_config_t;

/* Times per engine and call counts of a simulated device. */
typedef struct lms__sim_report {
  uint64_t now_ns;          /* the latest completion time of any work */
  uint64_t compute_busy_ns; /* time the compute engine was busy */
  uint64_t h2d_busy_ns;
  uint64_t d2h_busy_ns;
  uint64_t bytes_h2d;
  uint64_t bytes_d2h;
  uint64_t stream_wait_ns;  /* time streams sat waiting on events */
  uint64_t dev_in_use;      /* bytes of device memory allocated */
  uint64_t host_in_use;     /* bytes of pinned host memory allocated */
  uint64_t calls[LMS__DEVOP_COUNT];
  uint64_t total_calls;
} lms__sim_report_t;

/* ---- GPUs sharing one host link (Note [Shared link] in sim.c) --------- */

/* The most GPUs one host link can be shared by in the model: eight, the
 * most GPUs of the source scenario's servers and more than any one PCIe
 * switch of them carries. */
#define LMS__SHARE_MAX_GPUS 8

/* Copy directions, as indices. */
enum { LMS__DIR_H2D = 0, LMS__DIR_D2H = 1, LMS__DIR_COUNT = 2 };

/* [start, end) in nanoseconds of virtual time. */
typedef struct lms__copy_span {
  uint64_t start, end;
} lms__copy_span_t;

/* What one GPU's copies do over one period (an iteration): the times a
 * copy was in flight, per direction, sorted, disjoint and inside
 * [0, period_ns). */
typedef struct lms__copy_timeline {
  uint64_t period_ns;
  lms__copy_span_t *busy[LMS__DIR_COUNT];
  size_t n[LMS__DIR_COUNT];
} lms__copy_timeline_t;

/* Builds the timeline of a periodic run from the copy spans of one
 * period's work, in absolute time and any order: each span is placed at
 * (start - origin) modulo the period, one that runs past the period's end
 * wraps to its start, and overlaps are merged.  Copies enqueued in one
 * iteration for the next (prefetches) thus land where they run in the
 * steady state.  LMS_ERR_INVALID for a period of 0, LMS_ERR_HOST_OOM if
 * no memory. */
lms_status_t lms__copy_timeline_build(
    lms__copy_timeline_t *tl, uint64_t origin, uint64_t period,
    const lms__copy_span_t *const spans[LMS__DIR_COUNT],
    const size_t n[LMS__DIR_COUNT]);
void lms__copy_timeline_free(lms__copy_timeline_t *tl);
/* 1 if a copy is in flight in direction dir at position pos (0 <= pos <
 * period) of the timeline; *next gets how long, from pos, that stays so. */
int lms__copy_timeline_at(const lms__copy_timeline_t *tl, int dir, double pos,
                     double *next);

/* The other GPUs on this device's host link: other GPU j runs copies as
 * each[j] says, or `timeline` where each[j] is NULL, shifted by its phase
 * (its period starts at phase_ns[j] of this device's clock, modulo the
 * period), and while k of them have a copy in flight in the same
 * direction, a copy of this device moves at 1/(k+1) of the link's rate.
 * The timelines outlive the share's use on the device. */
typedef struct lms__link_share {
  int others;                               /* 0..LMS__SHARE_MAX_GPUS-1 */
  uint64_t phase_ns[LMS__SHARE_MAX_GPUS];   /* of each other GPU */
  const lms__copy_timeline_t *timeline;     /* of every other GPU ... */
  const lms__copy_timeline_t *each[LMS__SHARE_MAX_GPUS]; /* ... or its own */
} lms__link_share_t;

/* The timeline other GPU j follows (NULL: none). */
static inline const lms__copy_timeline_t *lms__share_timeline(
    const lms__link_share_t *sh, int j) {
  return sh->each[j] != NULL ? sh->each[j] : sh->timeline;
}

/* Nanoseconds a copy of n bytes starting at `start` takes on a link of
 * `gbps` with `latency_us` per copy, shared as sh says (NULL: alone,
 * latency + n / rate). */
uint64_t lms__share_copy_ns(const lms__link_share_t *sh, int dir,
                            uint64_t start, double latency_us, double gbps,
                            size_t n);

/* Creates a simulated device.  A bad fault spec gives LMS_ERR_INVALID and a
 * message naming the accepted operations in err (LMS__ERRBUF bytes). */
lms_status_t lms__sim_create(const lms__sim_config_t *cfg, lms_dev_t **out,
                             char *err);
/* Makes the nth call (1-based, counted from device creation) of `op` fail;
 * n = 0 clears it. */
void lms__sim_fail_op(lms_dev_t *d, lms__dev_op_t op, uint64_t n);
/* Makes the nth call of any operation, counted from device creation,
 * fail; n = 0 clears it. */
void lms__sim_fail_any(lms_dev_t *d, uint64_t n);
void lms__sim_report(lms_dev_t *d, lms__sim_report_t *out);
/* Puts the device behind a link shared with other GPUs (NULL or no
 * others: alone again).  Set it before any copy is enqueued: copies
 * already on the clock keep their times.  LMS_ERR_INVALID if the share
 * is malformed, with the reason in the device's last_error. */
lms_status_t lms__sim_share_link(lms_dev_t *d, const lms__link_share_t *share);
/* Starts (on = 1) or stops keeping the span of every copy; starting
 * clears what was kept. */
void lms__sim_record_copies(lms_dev_t *d, int on);
/* The spans kept so far in direction dir; valid until the next copy or
 * lms__sim_record_copies call. */
void lms__sim_copy_spans(lms_dev_t *d, int dir, const lms__copy_span_t **out,
                         size_t *n);
/* 1 if d is a simulated device. */
int lms__dev_is_sim(const lms_dev_t *d);

/* ---- The CUDA device (cuda.c; in builds with LMS_HAVE_CUDA) ----------- */

/* How many CUDA devices the runtime sees; 0 with the reason in why. */
int lms__cuda_device_count(char *why, size_t why_size);
/* The most device memory the device's segment pool has held. */
uint64_t lms__cuda_pool_peak(lms_dev_t *d);
/* Opens CUDA device `ordinal`.  LMS_ERR_UNSUPPORTED when there is none. */
lms_status_t lms__cuda_create(int ordinal, lms_dev_t **out, char *err);
/* Note [Mapping pieces on a GPU] in cuda.c: device memory from the
 * driver's virtual memory calls, and va_reserve, va_release and dev_map,
 * for pieces of `piece` bytes; before any allocation.  LMS_ERR_UNSUPPORTED
 * (err says why) where the driver or the device cannot: nothing changes. */
lms_status_t lms__cuda_map_pieces(lms_dev_t *d, uint64_t piece, char *err);
/* Slows the CUDA device's copies to the given rates (Note [Emulating a
 * slower link] in cuda.c). */
lms_status_t lms__cuda_throttle(lms_dev_t *d, double h2d_gbps,
                                double d2h_gbps, char *err);

/* Opens the device the options ask for: sim, cuda, or auto (cuda when this
 * build has CUDA and a GPU is present).  On failure err names why. */
struct lms__opts;
lms_status_t lms__dev_open(const struct lms__opts *opts, lms_dev_t **out,
                           char *err);

#endif
