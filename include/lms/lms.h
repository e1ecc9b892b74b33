/* lms.h - the public C API of lms, the Large Model Support runtime.
 *
 * Handle mode: a framework allocates chunks, and before each step acquires
 * the chunks the step reads or writes.  Acquire returns a device address that
 * is valid until the matching release; between steps lms may move a chunk's
 * bytes between its pinned host home and the device, but never changes them.
 *
 * Every fallible call returns lms_status_t; LMS_OK is 0.  The text of the
 * last failure on a context is kept in lms_ctx_last_error().
 */
#ifndef LMS_LMS_H
#define LMS_LMS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define LMS_API __attribute__((visibility("default")))
#else
#define LMS_API
#endif

#define LMS_VERSION_MAJOR 0
#define LMS_VERSION_MINOR 1
#define LMS_VERSION_PATCH 0
/* The version as one number, MAJOR * 10000 + MINOR * 100 + PATCH. */
#define LMS_VERSION                                                           \
  (LMS_VERSION_MAJOR * 10000 + LMS_VERSION_MINOR * 100 + LMS_VERSION_PATCH)

/* The version of the library loaded at run time, as LMS_VERSION: compare
 * it with the LMS_VERSION a program was built against. */
LMS_API int lms_version(void);

/* ---- Status codes ---------------------------------------------------- */

/* X(name, value, message).  One table gives the enum, the names and the
 * messages; add a code here and nowhere else. */
#define LMS_STATUS_MAP(X)                                                     \
  X(OK, 0, "success")                                                         \
  X(ERR_INVALID, 1, "invalid argument")                                       \
  X(ERR_DEVICE_OOM, 2, "device out of memory")                                \
  X(ERR_HOST_OOM, 3, "host out of memory")                                    \
  X(ERR_DEVICE, 4, "device error")                                            \
  X(ERR_BUSY, 5, "resource busy")                                             \
  X(NOT_READY, 6, "operation not yet complete")                               \
  X(ERR_UNSUPPORTED, 7, "not supported by this device or build")              \
  X(ERR_INTERNAL, 8, "internal error")

typedef enum lms_status {
#define LMS_STATUS_ENUM_(name, value, msg) LMS_##name = value,
  LMS_STATUS_MAP(LMS_STATUS_ENUM_)
#undef LMS_STATUS_ENUM_
} lms_status_t;

/* "LMS_ERR_INVALID" and so on; "LMS_UNKNOWN" for values outside the table. */
LMS_API const char *lms_status_name(lms_status_t st);
/* "invalid argument" and so on. */
LMS_API const char *lms_strerror(lms_status_t st);

/* ---- Options --------------------------------------------------------- */

/* An options set: defaults, then LMS_* environment variables, then flags or
 * lms_options_set(), each overriding the one before.  `lms options --help`
 * lists every option with its flag, environment twin and accepted form. */
typedef struct lms_options lms_options_t;

LMS_API lms_status_t lms_options_create(lms_options_t **out);
LMS_API void lms_options_destroy(lms_options_t *opts);
/* Sets one option by its long flag name without dashes ("gpu-limit",
 * "lms", "lms_frac", "lms-frac") from its text form ("16GiB", "8192",
 * "0.4").  On failure the reason is in lms_options_error(). */
LMS_API lms_status_t lms_options_set(lms_options_t *opts, const char *name,
                                     const char *value);
/* Reads the LMS_* environment.  An LMS_* variable that names no option is
 * warned about on stderr and otherwise ignored. */
LMS_API lms_status_t lms_options_load_env(lms_options_t *opts);
/* Consumes the recognised flags from argv, shifting the rest down and
 * updating *argc.  Parsing stops at "--", which is left in place.  An
 * unrecognised argument starting with '-' is an error. */
LMS_API lms_status_t lms_options_parse_args(lms_options_t *opts, int *argc,
                                            char **argv);
/* The message of the last failed call on opts, or "" if none failed. */
LMS_API const char *lms_options_error(const lms_options_t *opts);
/* Writes the effective settings, one "name = value (source)" per line,
 * into buf (always NUL-terminated); returns the length it needed. */
LMS_API size_t lms_options_describe(const lms_options_t *opts, char *buf,
                                    size_t size);
/* Writes the help text of every option into buf; returns the length needed. */
LMS_API size_t lms_options_help(char *buf, size_t size);

/* ---- Context, streams ------------------------------------------------ */

typedef struct lms_ctx lms_ctx_t;
typedef struct lms_chunk lms_chunk_t;
/* A stream of device work: a cudaStream_t on the CUDA device, a simulated
 * stream on the simulated one.  NULL is not a valid lms stream. */
typedef void *lms_stream_t;

/* Creates a context from opts (copied; NULL means defaults plus the
 * environment).  Picks the device the options name. */
LMS_API lms_status_t lms_ctx_create(const lms_options_t *opts,
                                    lms_ctx_t **out);
/* Waits for all work, writes the stats file if one was asked for, and frees
 * everything.  Chunks still allocated are freed with it. */
LMS_API lms_status_t lms_ctx_destroy(lms_ctx_t *ctx);
/* The text of the last failure on ctx (per context, like ncclGetLastError). */
LMS_API const char *lms_ctx_last_error(lms_ctx_t *ctx);
/* "sim" or "cuda". */
LMS_API const char *lms_ctx_device_name(const lms_ctx_t *ctx);

LMS_API lms_status_t lms_stream_create(lms_ctx_t *ctx, lms_stream_t *out);
LMS_API lms_status_t lms_stream_destroy(lms_ctx_t *ctx, lms_stream_t stream);
LMS_API lms_status_t lms_stream_sync(lms_ctx_t *ctx, lms_stream_t stream);
/* Enqueues device work that takes `ns` nanoseconds on `stream`: a timed
 * kernel on the simulated device.  Used by benchmarks and workloads. */
LMS_API lms_status_t lms_compute(lms_ctx_t *ctx, lms_stream_t stream,
                                 uint64_t ns);
/* The device clock in nanoseconds (virtual on the simulated device). */
LMS_API uint64_t lms_now_ns(lms_ctx_t *ctx);

/* ---- Chunks ---------------------------------------------------------- */

#define LMS_ACCESS_READ 1u
#define LMS_ACCESS_WRITE 2u
#define LMS_ACCESS_RW (LMS_ACCESS_READ | LMS_ACCESS_WRITE)
/* With LMS_ACCESS_WRITE: the caller overwrites every byte, so the chunk's
 * old contents need not be brought to the device (a layer's output). */
#define LMS_ACCESS_OVERWRITE 4u

/* Allocates a chunk of `size` bytes (> 0).  Placement follows the -lms and
 * -lms_frac rule: a host-homed chunk lives in pinned host memory and visits
 * the device when acquired; a device-homed one stays on the device. */
LMS_API lms_status_t lms_alloc(lms_ctx_t *ctx, size_t size, lms_chunk_t **out);
/* Frees a chunk.  LMS_ERR_BUSY if it is still acquired. */
LMS_API lms_status_t lms_free(lms_ctx_t *ctx, lms_chunk_t *chunk);
/* Makes the chunk resident for work on `stream` and returns its device
 * address in *dptr, valid until lms_release().  Work enqueued on `stream`
 * after this call sees the chunk's bytes.  Acquires nest: a chunk stays
 * resident until every acquire is released.  `access` is LMS_ACCESS_READ,
 * LMS_ACCESS_WRITE or both, optionally with LMS_ACCESS_OVERWRITE; a written
 * chunk is copied back before its device copy is dropped, a chunk only read
 * is dropped without a copy.  A chunk's bytes are undefined until it is
 * first written, as with cudaMalloc, so that first acquire moves nothing. */
LMS_API lms_status_t lms_acquire(lms_ctx_t *ctx, lms_chunk_t *chunk,
                                 lms_stream_t stream, unsigned access,
                                 void **dptr);
/* Ends one acquire.  The chunk may be moved once the work enqueued on
 * `stream` before this call has finished. */
LMS_API lms_status_t lms_release(lms_ctx_t *ctx, lms_chunk_t *chunk,
                                 lms_stream_t stream);
/* Declares the chunk's bytes dead: nothing will read them before they are
 * written again (a gradient its consumer has used, an activation after its
 * last backward use).  A device copy is dropped without being copied
 * back, and the next acquire brings nothing in; the bytes are undefined
 * until next written, as after lms_alloc.  LMS_ERR_BUSY while acquired. */
LMS_API lms_status_t lms_discard(lms_ctx_t *ctx, lms_chunk_t *chunk);
/* Maps any address inside a live chunk (its device copy or its host home)
 * to the chunk and the offset within it.  LMS_ERR_INVALID if none. */
LMS_API lms_status_t lms_chunk_lookup(lms_ctx_t *ctx, const void *addr,
                                      lms_chunk_t **out, size_t *offset);
LMS_API size_t lms_chunk_size(const lms_chunk_t *chunk);
/* 1 if placement put the chunk's home in pinned host memory, 0 if it lives
 * on the device. */
LMS_API int lms_chunk_host_homed(const lms_chunk_t *chunk);
/* 1 if the chunk has a valid copy on the device right now. */
LMS_API int lms_chunk_resident(lms_ctx_t *ctx, const lms_chunk_t *chunk);

/* ---- Memory the framework owns (autograd mode) ------------------------ */
/* A framework that keeps its own device memory (PyTorch's allocator) hands
 * lms the bytes of a tensor it saves for later (an activation saved for
 * backward) and asks for them back when it needs them.  The saved bytes
 * become a host-homed chunk; reading them back is an ordinary acquire, so
 * the schedule, the prefetch window, victim choice and stats are the same
 * as in handle mode. */

/* 1 if the -lms/-lms_frac rule sends a tensor of `size` bytes to host
 * memory while the device demand is `in_use` bytes (not counting this one)
 * of `capacity` (0: the context's --gpu-limit budget).  0 otherwise, and
 * 0 when -lms is off. */
LMS_API int lms_offload_wanted(const lms_ctx_t *ctx, uint64_t size,
                               uint64_t in_use, uint64_t capacity);

/* Allocates a host-homed chunk of `size` bytes holding a copy of the
 * framework's device memory at `src`, as it is once the work enqueued on
 * `stream` so far has run.  The copy runs on lms's own device-to-host
 * stream; `stream` does not wait for it.  The caller must not change or
 * reuse the memory at src until lms_chunk_query() returns LMS_OK.  For the
 * schedule, the chunk counts as overwritten by the current step. */
LMS_API lms_status_t lms_alloc_copy(lms_ctx_t *ctx, const void *src,
                                    size_t size, lms_stream_t stream,
                                    lms_chunk_t **out);
/* LMS_OK when no copy into the chunk's host home is in flight (after
 * lms_alloc_copy: the source may be reused); LMS_NOT_READY while one is. */
LMS_API lms_status_t lms_chunk_query(lms_ctx_t *ctx, lms_chunk_t *chunk);
/* Frees the chunk now if it is not acquired, or else when its last
 * acquire is released. */
LMS_API lms_status_t lms_free_when_released(lms_ctx_t *ctx,
                                            lms_chunk_t *chunk);

/* The shape of a tensor laid over a chunk's bytes, in DLPack's terms. */
#define LMS_TENSOR_MAX_DIMS 16
typedef struct lms_tensor_desc {
  int ndim;                              /* 0 .. LMS_TENSOR_MAX_DIMS */
  int64_t shape[LMS_TENSOR_MAX_DIMS];    /* each >= 0 */
  int64_t strides[LMS_TENSOR_MAX_DIMS];  /* in elements, each >= 0 */
  uint64_t byte_offset;                  /* of element 0 in the chunk */
  uint8_t dtype_code;                    /* DLPack's: 0 int, 1 uint, 2 float,
                                            4 bfloat, 5 complex, 6 bool */
  uint8_t dtype_bits;                    /* 8, 16, 32, 64 or 128 */
  int device_id;                         /* the GPU's ordinal */
} lms_tensor_desc_t;

/* Acquires the chunk for reading on `stream` and returns, in *managed, a
 * DLPack DLManagedTensor (DLPack 0.x layout) over its device copy with the
 * shape in desc: CUDA memory on the CUDA device, CPU memory on the
 * simulated one, whose device memory is host memory.  The tensor's deleter
 * releases the acquire on `stream` (and frees the chunk if
 * lms_free_when_released was called), so the chunk stays on the device
 * exactly as long as the tensor lives.  Hand it to a framework's
 * from_dlpack in a capsule named "dltensor".  LMS_ERR_INVALID when the
 * shape reaches past the chunk's bytes. */
LMS_API lms_status_t lms_acquire_dlpack(lms_ctx_t *ctx, lms_chunk_t *chunk,
                                        lms_stream_t stream,
                                        const lms_tensor_desc_t *desc,
                                        void **managed);
/* Adds `ns` to the compute time the trace records for the current step
 * without enqueuing any work: for a framework that timed its own kernels
 * (lms_compute also enqueues a timed kernel). */
LMS_API lms_status_t lms_trace_compute(lms_ctx_t *ctx, uint64_t ns);

/* ---- Steps and schedules --------------------------------------------- */
/* A step is one unit of device work (a layer's forward or backward): the
 * chunks it acquires and the work enqueued with them.  Marking steps lets
 * lms learn the program's period and prefetch the chunks of the next steps
 * while this one runs.  A program that never calls lms_step_begin gets one
 * step per acquire. */
LMS_API lms_status_t lms_step_begin(lms_ctx_t *ctx);

typedef struct lms_step_ref {
  lms_chunk_t *chunk;
  unsigned access; /* LMS_ACCESS_READ, LMS_ACCESS_WRITE or both */
} lms_step_ref_t;

/* Declares the next step of the program's schedule: the chunks it uses
 * and (for traces and the simulator) its compute time.  A declared
 * schedule repeats; the first lms_step_begin after declaring is its first
 * step.  It replaces learning; lms_schedule_clear goes back to learning. */
LMS_API lms_status_t lms_schedule_step(lms_ctx_t *ctx,
                                       const lms_step_ref_t *refs, size_t n,
                                       uint64_t compute_ns);
LMS_API lms_status_t lms_schedule_clear(lms_ctx_t *ctx);

/* ---- Stats ----------------------------------------------------------- */

/* X(field, description).  Each counter is {current, peak, total}: current
 * and peak for levels (bytes held), total for what has accumulated. */
#define LMS_STATS_MAP(X)                                                      \
  X(device_reserved, "device bytes held in segments")                         \
  X(device_allocated, "device bytes in blocks in use")                        \
  X(host_pinned, "pinned host bytes held by the pool")                        \
  X(host_allocated, "pinned host bytes in chunk homes")                       \
  X(chunks, "live chunks")                                                    \
  X(chunks_host_homed, "live chunks homed in host memory")                    \
  X(resident_bytes, "bytes of host-homed chunks resident on the device")      \
  X(bytes_h2d, "bytes copied host to device")                                 \
  X(bytes_d2h, "bytes copied device to host")                                 \
  X(swaps_in, "chunks brought to the device")                                 \
  X(swaps_out, "dirty chunks written back to the host")                       \
  X(drops, "clean chunks dropped from the device")                            \
  X(segments, "device segments held")                                         \
  X(device_ooms, "device out-of-memory failures")                             \
  X(host_ooms, "host out-of-memory failures")                                 \
  X(device_errors, "device operations that failed")                          \
  X(steps, "steps begun (lms_step_begin, or acquires without steps)")        \
  X(prefetches, "chunks brought in ahead of use")                            \
  X(prefetch_hits, "acquires served by a prefetch that had arrived")         \
  X(prefetch_late, "acquires that waited for a prefetch still in flight")    \
  X(prefetch_wasted, "prefetched chunks evicted before any use")             \
  X(demand_misses, "acquires that had to start a swap-in themselves")        \
  X(cache_hits, "acquires of host-homed chunks still resident from before")  \
  X(stall_ns, "ns the acquiring stream waited for data (where known)")

typedef struct lms_stat {
  int64_t current;
  int64_t peak;
  int64_t total;
} lms_stat_t;

#define LMS_STATS_VERSION 2

typedef struct lms_stats {
  int version; /* LMS_STATS_VERSION */
#define LMS_STATS_FIELD_(field, desc) lms_stat_t field;
  LMS_STATS_MAP(LMS_STATS_FIELD_)
#undef LMS_STATS_FIELD_
  uint64_t device_limit;       /* the budget device use is kept under */
  uint64_t host_limit;         /* 0 when unlimited */
  double fragmentation;        /* 1 - largest free block / free bytes, in
                                  the device segments; 0 when none free */
  uint64_t elapsed_ns;         /* device clock since the context began */
} lms_stats_t;

LMS_API lms_status_t lms_stats_get(lms_ctx_t *ctx, lms_stats_t *out);
/* Formats stats as a text table or JSON into buf (always NUL-terminated);
 * returns the length needed. */
LMS_API size_t lms_stats_format_text(const lms_stats_t *st, char *buf,
                                     size_t size);
LMS_API size_t lms_stats_format_json(const lms_stats_t *st, char *buf,
                                     size_t size);

#ifdef __cplusplus
}
#endif
#endif /* LMS_LMS_H */
