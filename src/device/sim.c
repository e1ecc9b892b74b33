/* sim.c - the simulated device: a GPU that exists only in software.
 *
 * Host memory stands in for device memory, behind a fixed capacity; one
 * compute engine and one copy engine per direction run the work of any
 * number of streams on a virtual clock driven by the link model, so a run is
 * deterministic and takes no real time.  Every operation of the device-ops
 * table is counted, and the Nth call of one operation, or of any, can be
 * made to fail.  The host link may be shared with other GPUs whose copies
 * slow this device's (Note [Shared link] in linkshare.c).
 *
 * Invariants, all kept under the one mutex `mu`:
 * - dev_in_use is the sum of the sizes asked of every live dev_alloc and
 *   never exceeds capacity; host_in_use likewise for host_alloc.
 * - The tables dev, host, streams and events are sorted by address and hold
 *   exactly the live allocations and handles; a pointer is dereferenced as a
 *   stream or event only after it has been found in its table.
 * - Time never goes backwards: host_now, every stream's tail and every
 *   engine's free_at only grow.
 * - A call that fails, injected or not, has changed nothing but the call
 *   counters and last_error.
 */
#include "device/device.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/avl.h"
#include "core/map.h"
#include "core/log.h"
#include "core/status.h"

/* Note [Simulated time]
 *
 * Rationale: the suites and `lms sim` need a device whose timing follows the
 * link model exactly and repeats bit for bit, whatever the host machine is
 * doing, so no real clock is read anywhere in this file.
 *
 * Approach: the host thread has a clock, host_now.  Each stream has a tail,
 * the virtual time its last enqueued work completes, and each engine
 * (compute, host to device, device to host) has free_at, the time it
 * finishes what it was given.  Work enqueued on stream s for engine e starts
 * at max(host_now, s.tail, e.free_at) and ends at start + duration; then
 * e.free_at = s.tail = end.  So work on one stream runs in order, work on
 * one engine runs one item at a time in enqueue order, and work on different
 * engines overlaps.  A copy lasts latency + bytes / rate for its direction,
 * rounded to the nearest nanosecond; compute lasts what it is told.
 * Enqueueing costs no host time.  Host time moves only when the host waits:
 * stream_sync and event_sync set host_now to the time awaited, and an
 * event_query that answers LMS_NOT_READY for an event already found not
 * ready at the same host time advances host_now by one quantum
 * (SIM_QUERY_QUANTUM_NS, clamped to the event's time), so that a loop
 * polling an event makes progress and then sees it complete, at a virtual
 * time that depends only on the calls made, while a one-time look at many
 * events (an allocator scanning its pending blocks) costs no time.  An event captures the tail of
 * the stream it was recorded on; a stream that waits on it takes
 * max(tail, event time) as its new tail.
 *
 * The bytes of a copy move at enqueue time, not at its virtual completion.
 * Callers enqueue in program order and order streams only through events
 * recorded earlier in program order, so by the time an operation is
 * enqueued every operation it was ordered after has been enqueued, and
 * executed, already: eager execution honours every ordering a caller
 * expressed.
 *
 * Limitations: each engine runs its work strictly in enqueue order, so work
 * enqueued after work that waits on an event cannot fill the idle gap before
 * it, as a GPU's hardware queues sometimes can; predictions err on the slow
 * side there.  And eager execution also honours orderings the caller
 * forgot: a missing stream_wait, freeing device memory that a copy still
 * reads in virtual time, or reading a host buffer before syncing on the copy
 * that fills it all give the right bytes here and wrong ones on a real GPU.
 * The simulated device proves timing and accounting, not the absence of
 * such races; those need the CUDA device (or a hazard checker this file
 * does not have).
 */

#define SIM_DEV_ALIGN ((size_t)256)
#define SIM_QUERY_QUANTUM_NS ((uint64_t)1000)

/* ---- Address tables ------------------------------------------------- */

/* One live allocation or handle: [base, base + size). */
typedef struct sim_range {
  lms__avl_node_t node;
  uintptr_t base;
  size_t size;
} sim_range_t;

/* Note [Address tables]
 * Ordered by base, so that both exact and interior lookups are searches:
 * copies must find the allocation a pointer falls inside.  A sorted array
 * did that with a binary search, but inserting into it moved half of it:
 * events and segments are made in no order of address, and with tens of
 * thousands of each (a wide step, a trace of 200,000 references) the
 * moves were a seventh of a simulation's time.  An AVL tree makes every
 * operation O(log n); one spare node, taken by table_reserve, keeps an
 * insert that follows it from failing.  Streams and events, which are
 * only ever looked up exactly, are in hash sets (sim_handles_t). */
typedef struct sim_table {
  lms__avl_t tree;
  sim_range_t *spare;
} sim_table_t;

static int cmp_range(const lms__avl_node_t *a, const lms__avl_node_t *b) {
  const sim_range_t *x = LMS__CONTAINER_OF(a, sim_range_t, node);
  const sim_range_t *y = LMS__CONTAINER_OF(b, sim_range_t, node);
  return x->base < y->base ? -1 : x->base > y->base;
}

static void table_init(sim_table_t *t) {
  lms__avl_init(&t->tree, cmp_range);
  t->spare = NULL;
}

/* The entry whose range holds p, or NULL. */
static sim_range_t *table_containing(const sim_table_t *t, uintptr_t p) {
  sim_range_t probe = {.base = p};
  lms__avl_node_t *n = lms__avl_floor(&t->tree, &probe.node);
  if (n == NULL) return NULL;
  sim_range_t *r = LMS__CONTAINER_OF(n, sim_range_t, node);
  return p - r->base < r->size ? r : NULL;
}

/* The entry that starts exactly at base, or NULL. */
static sim_range_t *table_find(const sim_table_t *t, uintptr_t base) {
  sim_range_t probe = {.base = base};
  lms__avl_node_t *n = lms__avl_floor(&t->tree, &probe.node);
  if (n == NULL) return NULL;
  sim_range_t *r = LMS__CONTAINER_OF(n, sim_range_t, node);
  return r->base == base ? r : NULL;
}

/* Makes room for one more entry, so that the insert that follows cannot
 * fail after the caller has allocated what it inserts.  0 on success. */
static int table_reserve(sim_table_t *t) {
  if (t->spare == NULL) t->spare = malloc(sizeof *t->spare);
  return t->spare == NULL ? -1 : 0;
}

/* Inserts after a successful table_reserve. */
static void table_insert(sim_table_t *t, uintptr_t base, size_t size) {
  sim_range_t *r = t->spare;
  t->spare = NULL;
  r->base = base;
  r->size = size;
  lms__avl_insert(&t->tree, &r->node);
}

static void table_remove(sim_table_t *t, sim_range_t *r) {
  lms__avl_remove(&t->tree, &r->node);
  if (t->spare == NULL) t->spare = r;
  else free(r);
}

/* The live handles (streams, events), asked on nearly every call: a set
 * (Note [One hash map] in core/map.h), the value unused. */
LMS__MAP(handles, uint8_t, lms__map_zalloc, lms__map_release)
typedef handles_t sim_handles_t;

static int handles_has(const sim_handles_t *t, uintptr_t h) {
  return handles_find(t, (uint64_t)h) != NULL;
}

/* Frees every handle and the set. */
static void handles_free_all(sim_handles_t *t) {
  for (size_t i = 0; i < t->cap; i++)
    if (t->keys[i] != 0) free((void *)(uintptr_t)t->keys[i]);
  handles_free(t);
}

/* ---- The device ----------------------------------------------------- */

typedef enum sim_engine {
  SIM_ENG_COMPUTE,
  SIM_ENG_H2D,
  SIM_ENG_D2H,
  SIM_ENG_COUNT
} sim_engine_t;

typedef struct sim_stream {
  uint64_t tail; /* virtual completion time of the last work enqueued */
} sim_stream_t;

typedef struct sim_event {
  uint64_t time; /* the captured stream's tail when recorded; for a timed
                    event, when the stream reaches the record (no sooner
                    than the host enqueues it) */
  int recorded;
  int timed;     /* from event_create_timed */
  int polled;          /* answered NOT_READY at host time polled_at */
  uint64_t polled_at;
} sim_event_t;

typedef struct sim {
  lms_dev_t head; /* first, so that a lms_dev_t * is a sim_t * */
  pthread_mutex_t mu;
  uint64_t capacity;
  lms__link_t link;
  int timing_only;
  int measured_waits; /* lms__sim_config_t.measured_waits */
  size_t page;

  uint64_t host_now;
  uint64_t free_at[SIM_ENG_COUNT];
  uint64_t busy_ns[SIM_ENG_COUNT];
  uint64_t bytes_h2d;
  uint64_t bytes_d2h;
  uint64_t stream_wait_ns;

  uint64_t dev_in_use;
  uint64_t host_in_use;
  /* Device memory: one reserved range, handed out first fit, so that
   * the addresses (and any order that depends on them) are the same in
   * every run (Note [Device addresses]). */
  char *arena;
  size_t arena_size;
  int arena_fd;        /* the memory behind the arena, so that dev_map can
                          show it at a second address; -1 when timing only
                          (Note [Mapped device memory]) */
  sim_table_t va;      /* reservations (va_reserve) */
  struct sim_gap {
    size_t off, len;
  } *gaps;              /* free stretches of the arena, by offset */
  size_t ngaps, gaps_cap;
  sim_table_t dev;     /* size: the bytes asked for */
  sim_table_t host;    /* size: the bytes asked for */
  sim_table_t ext;     /* a framework's device memory (ext_register) */
  sim_handles_t streams;
  sim_handles_t events;

  uint64_t calls[LMS__DEVOP_COUNT];
  uint64_t total_calls;
  uint64_t fail_op[LMS__DEVOP_COUNT]; /* 0: none */
  uint64_t fail_any;                  /* 0: none */

  /* Other GPUs on the link (Note [Shared link] in linkshare.c). */
  int shared;
  lms__link_share_t share;
  /* The span of every copy since recording started, per direction. */
  int recording;
  lms__copy_span_t *spans[LMS__DIR_COUNT];
  size_t nspans[LMS__DIR_COUNT], spans_cap[LMS__DIR_COUNT];
} sim_t;

static const lms_dev_ops_t sim_ops;

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Logs the message already in last_error and passes the status through. */
static lms_status_t sim_failed(sim_t *s, lms_status_t st) {
  LMS_LOG(DEBUG, DEVICE, "sim: %s", s->head.last_error);
  return st;
}

/* Formats last_error and evaluates to st. */
#define SIM_FAIL(s, st, ...)                                                  \
  (lms__errf((s)->head.last_error, __VA_ARGS__), sim_failed((s), (st)))

/* Takes the lock and counts the call.  Returns the injected failure if this
 * call is the one chosen to fail, LMS_OK otherwise; the lock is held on
 * return either way and the caller releases it. */
static lms_status_t sim_enter(sim_t *s, lms__dev_op_t op) {
  pthread_mutex_lock(&s->mu);
  s->calls[op]++;
  s->total_calls++;
  if (s->fail_op[op] != 0 && s->calls[op] == s->fail_op[op])
    return SIM_FAIL(s, lms__fault_status(op),
                    "injected failure: %s call %" PRIu64,
                    lms__dev_op_names[op], s->calls[op]);
  if (s->fail_any != 0 && s->total_calls == s->fail_any)
    return SIM_FAIL(s, lms__fault_status(op),
                    "injected failure: %s call %" PRIu64
                    " (call %" PRIu64 " of any operation)",
                    lms__dev_op_names[op], s->calls[op], s->total_calls);
  return LMS_OK;
}

/* The stream or event behind a handle, or NULL if it is not a live one. */
static sim_stream_t *find_stream(sim_t *s, void *h) {
  return handles_has(&s->streams, (uintptr_t)h) ? h : NULL;
}

static sim_event_t *find_event(sim_t *s, void *h) {
  return handles_has(&s->events, (uintptr_t)h) ? h : NULL;
}

/* Runs `ns` of work for stream st on engine e; see Note [Simulated time]. */
static void schedule(sim_t *s, sim_stream_t *st, sim_engine_t e,
                     uint64_t ns) {
  uint64_t start = max_u64(s->host_now, max_u64(st->tail, s->free_at[e]));
  uint64_t end = start + ns;
  s->free_at[e] = end;
  st->tail = end;
  s->busy_ns[e] += ns;
}

/* Latency plus bytes over rate, in nanoseconds: n / (gbps * 1e9) seconds
 * is n / gbps nanoseconds. */
static uint64_t copy_ns(double latency_us, double gbps, size_t n) {
  return (uint64_t)llround(latency_us * 1e3 + (double)n / gbps);
}

/* Note [Both ways at once]
 * A link whose two directions together move less than the sum of each
 * alone (both_gbps: 87 GB/s on the H100's PCIe Gen5 against 55 + 55) slows
 * a copy while the other direction is busy.  The copy enqueued second
 * gets what the link has left beside the other direction's full rate,
 * both_gbps - that rate (at least a tenth of its own), until the other
 * engine is free, and its own rate after: the sum over the overlap is
 * both_gbps.  Copies already on the clock are not stretched (Note
 * [Simulated time]), so the direction that started first keeps its rate;
 * over an iteration the two take turns being first. */
static uint64_t duplex_copy_ns(const sim_t *s, int dir, uint64_t start,
                               double gbps, size_t n) {
  double both = s->link.both_gbps;
  double other = dir == LMS__DIR_H2D ? s->link.d2h_gbps : s->link.h2d_gbps;
  uint64_t busy_until =
      s->free_at[dir == LMS__DIR_H2D ? SIM_ENG_D2H : SIM_ENG_H2D];
  if (!(both > 0.0) || both >= gbps + other || busy_until <= start)
    return copy_ns(s->link.latency_us, gbps, n);
  double slow = both - other;
  if (slow < gbps / 10.0) slow = gbps / 10.0;
  if (slow > gbps) slow = gbps;
  double overlap = (double)(busy_until - start); /* ns */
  double moved = overlap * slow;                 /* bytes: ns x GB/s */
  double ns = (double)n <= moved ? (double)n / slow
                                 : overlap + ((double)n - moved) / gbps;
  return (uint64_t)llround(s->link.latency_us * 1e3 + ns);
}

/* Keeps a copy's span when recording; a span that finds no memory is not
 * kept, and the log says so (the copy itself is not affected). */
static void record_span(sim_t *s, int dir, uint64_t start, uint64_t end) {
  if (!s->recording) return;
  if (s->nspans[dir] == s->spans_cap[dir]) {
    size_t cap = s->spans_cap[dir] ? 2 * s->spans_cap[dir] : 1024;
    lms__copy_span_t *v = realloc(s->spans[dir], cap * sizeof *v);
    if (v == NULL) {
      LMS_LOG(WARN, DEVICE, "sim: no memory to record a copy's span");
      return;
    }
    s->spans[dir] = v;
    s->spans_cap[dir] = cap;
  }
  s->spans[dir][s->nspans[dir]++] = (lms__copy_span_t){start, end};
}

/* Runs a copy of n bytes for stream st: as schedule() when the link is
 * this device's alone, otherwise at the rate the other GPUs' copies leave
 * it from the moment it starts (Note [Shared link] in linkshare.c). */
static void schedule_copy(sim_t *s, sim_stream_t *st, int dir, size_t n) {
  sim_engine_t e = dir == LMS__DIR_H2D ? SIM_ENG_H2D : SIM_ENG_D2H;
  double gbps = dir == LMS__DIR_H2D ? s->link.h2d_gbps : s->link.d2h_gbps;
  uint64_t start = max_u64(s->host_now, max_u64(st->tail, s->free_at[e]));
  uint64_t ns = s->shared ? lms__share_copy_ns(&s->share, dir, start,
                                               s->link.latency_us, gbps, n)
                          : duplex_copy_ns(s, dir, start, gbps, n);
  schedule(s, st, e, ns);
  record_span(s, dir, start, start + ns);
}

/* ---- Memory --------------------------------------------------------- */

static lms_status_t mem_info_locked(sim_t *s, size_t *free_b,
                                    size_t *total_b) {
  if (free_b == NULL || total_b == NULL)
    return SIM_FAIL(s, LMS_ERR_INVALID, "mem_info: free_b or total_b is NULL");
  *free_b = (size_t)(s->capacity - s->dev_in_use);
  *total_b = (size_t)s->capacity;
  return LMS_OK;
}

static size_t map_size(size_t size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return (size + page - 1) / page * page;
}

/* Maps size bytes, page aligned (which satisfies every alignment asked
 * for here), and records it in t; the shared part of dev_alloc and
 * host_alloc.  The memory comes from mmap, as a driver's does, never from
 * malloc: the pinned pool hands this memory to a jemalloc arena, and if the
 * program's malloc is jemalloc too, memory of one jemalloc extent given to
 * another arena would be registered twice in jemalloc's address map. */
static lms_status_t block_alloc(sim_t *s, sim_table_t *t, const char *what,
                                size_t size, size_t align, void **out) {
  if (size > SIZE_MAX - align)
    return SIM_FAIL(s, LMS_ERR_HOST_OOM,
                    "%s: %zu bytes cannot be rounded up to %zu-byte "
                    "alignment", what, size, align);
  if (table_reserve(t) != 0)
    return SIM_FAIL(s, LMS_ERR_HOST_OOM,
                    "%s: the host has no memory left for the simulator's "
                    "bookkeeping", what);
  (void)align;
  size_t padded = map_size(size);
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | (s->timing_only ? MAP_NORESERVE : 0);
  void *p = mmap(NULL, padded, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED)
    return SIM_FAIL(s, LMS_ERR_HOST_OOM,
                    "%s: the host could not give %zu bytes to back the "
                    "allocation", what, padded);
  table_insert(t, (uintptr_t)p, size);
  *out = p;
  return LMS_OK;
}

/* Note [Device addresses]
 * Allocators order blocks of equal size by address, so if device memory
 * came from mmap anywhere in the address space, a second run in the same
 * process (lms sim, lms tune) would place chunks differently from the
 * first and time differently.  The simulated device therefore reserves
 * one range at creation and hands out page-rounded stretches of it first
 * fit; a freed stretch is given back to the host with MADV_DONTNEED.  The
 * same calls give the same addresses.  The range is eight times the
 * capacity (up to 4 TiB of capacity): the device cache gives each large
 * chunk a segment of its own size (Note [Paged large blocks]), so after
 * many evictions the stretches of a range only twice the capacity were
 * once too broken up for a 3.9 GB chunk although the capacity had room,
 * a refusal a GPU, which maps pages, never makes. */
static lms_status_t arena_alloc(sim_t *s, size_t size, void **out) {
  size_t len = map_size(size);
  if (table_reserve(&s->dev) != 0)
    return SIM_FAIL(s, LMS_ERR_HOST_OOM, "dev_alloc: the host has no memory "
                    "left for the simulator's bookkeeping");
  for (size_t i = 0; i < s->ngaps; i++) {
    struct sim_gap *g = &s->gaps[i];
    if (g->len < len) continue;
    char *p = s->arena + g->off;
    g->off += len;
    g->len -= len;
    if (g->len == 0) {
      memmove(g, g + 1, (s->ngaps - i - 1) * sizeof *g);
      s->ngaps--;
    }
    table_insert(&s->dev, (uintptr_t)p, size);
    *out = p;
    return LMS_OK;
  }
  return SIM_FAIL(s, LMS_ERR_DEVICE_OOM, "dev_alloc: no stretch of %zu bytes "
                  "left in the simulated address range", len);
}

/* Returns [p, p + map_size(size)) to the arena, merging with neighbours. */
static void arena_free(sim_t *s, void *p, size_t size) {
  size_t off = (size_t)((char *)p - s->arena), len = map_size(size);
  if (s->arena_fd >= 0)
    fallocate(s->arena_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
              (off_t)off, (off_t)len);
  else if (!s->timing_only)
    madvise(p, len, MADV_DONTNEED);
  size_t i = 0;
  while (i < s->ngaps && s->gaps[i].off < off) i++;
  int left = i > 0 && s->gaps[i - 1].off + s->gaps[i - 1].len == off;
  int right = i < s->ngaps && off + len == s->gaps[i].off;
  if (left && right) {
    s->gaps[i - 1].len += len + s->gaps[i].len;
    memmove(&s->gaps[i], &s->gaps[i + 1], (s->ngaps - i - 1) * sizeof *s->gaps);
    s->ngaps--;
  } else if (left) {
    s->gaps[i - 1].len += len;
  } else if (right) {
    s->gaps[i].off = off;
    s->gaps[i].len += len;
  } else {
    if (s->ngaps == s->gaps_cap) {
      size_t ncap = s->gaps_cap * 2;
      struct sim_gap *g = realloc(s->gaps, ncap * sizeof *g);
      if (g == NULL) {
        /* The stretch stays out of use: address space, not memory. */
        LMS_LOG(WARN, DEVICE, "sim: no memory to track a freed range");
        return;
      }
      s->gaps = g;
      s->gaps_cap = ncap;
    }
    memmove(&s->gaps[i + 1], &s->gaps[i], (s->ngaps - i) * sizeof *s->gaps);
    s->gaps[i].off = off;
    s->gaps[i].len = len;
    s->ngaps++;
  }
}

static lms_status_t dev_alloc_locked(sim_t *s, size_t size, void **out) {
  if (out == NULL)
    return SIM_FAIL(s, LMS_ERR_INVALID, "dev_alloc: out is NULL");
  if (size == 0)
    return SIM_FAIL(s, LMS_ERR_INVALID,
                    "dev_alloc: size 0; an allocation needs at least one "
                    "byte");
  uint64_t avail = s->capacity - s->dev_in_use;
  if ((uint64_t)size > avail)
    return SIM_FAIL(s, LMS_ERR_DEVICE_OOM,
                    "dev_alloc: out of device memory: requested %zu bytes, "
                    "%" PRIu64 " in use, %" PRIu64 " free, capacity %" PRIu64,
                    size, s->dev_in_use, avail, s->capacity);
  LMS_CHECK(arena_alloc(s, size, out));
  s->dev_in_use += size;
  return LMS_OK;
}

/* Frees a block that must start exactly at ptr; the shared part of
 * dev_free and host_free.  *freed gets the size it had. */
static lms_status_t block_free(sim_t *s, sim_table_t *t, const char *what,
                               void *ptr, size_t *freed) {
  sim_range_t *e = table_find(t, (uintptr_t)ptr);
  if (e == NULL) {
    const sim_range_t *r = table_containing(t, (uintptr_t)ptr);
    if (r != NULL)
      return SIM_FAIL(s, LMS_ERR_INVALID,
                      "%s: %p is inside the allocation at %p (%zu bytes), "
                      "not its start", what, ptr, (void *)r->base, r->size);
    return SIM_FAIL(s, LMS_ERR_INVALID,
                    "%s: %p was not allocated by this device or was already "
                    "freed", what, ptr);
  }
  *freed = e->size;
  table_remove(t, e);
  return LMS_OK;
}

static lms_status_t dev_free_locked(sim_t *s, void *ptr) {
  size_t n = 0;
  LMS_CHECK(block_free(s, &s->dev, "dev_free", ptr, &n));
  arena_free(s, ptr, n);
  s->dev_in_use -= n;
  return LMS_OK;
}

static lms_status_t host_alloc_locked(sim_t *s, size_t size, void **out) {
  if (out == NULL)
    return SIM_FAIL(s, LMS_ERR_INVALID, "host_alloc: out is NULL");
  if (size == 0)
    return SIM_FAIL(s, LMS_ERR_INVALID,
                    "host_alloc: size 0; an allocation needs at least one "
                    "byte");
  LMS_CHECK(block_alloc(s, &s->host, "host_alloc", size, s->page, out));
  s->host_in_use += size;
  return LMS_OK;
}

static lms_status_t host_free_locked(sim_t *s, void *ptr) {
  size_t n = 0;
  LMS_CHECK(block_free(s, &s->host, "host_free", ptr, &n));
  munmap(ptr, map_size(n));
  s->host_in_use -= n;
  return LMS_OK;
}

/* ---- Streams and events --------------------------------------------- */

/* Allocates a zeroed handle of size bytes and records it in t. */
static lms_status_t handle_create(sim_t *s, sim_handles_t *t, const char *what,
                                  size_t size, void **out) {
  if (out == NULL)
    return SIM_FAIL(s, LMS_ERR_INVALID, "%s: out is NULL", what);
  if (handles_reserve(t, 1) != 0)
    return SIM_FAIL(s, LMS_ERR_HOST_OOM,
                    "%s: the host has no memory left for the simulator's "
                    "bookkeeping", what);
  void *h = calloc(1, size);
  if (h == NULL)
    return SIM_FAIL(s, LMS_ERR_HOST_OOM, "%s: the host has no memory left",
                    what);
  (void)handles_put(t, (uint64_t)(uintptr_t)h, 1); /* room reserved */
  *out = h;
  return LMS_OK;
}

static lms_status_t handle_destroy(sim_t *s, sim_handles_t *t,
                                   const char *what, const char *kind,
                                   void *h) {
  if (h == NULL || !handles_del(t, (uint64_t)(uintptr_t)h))
    return SIM_FAIL(s, LMS_ERR_INVALID, "%s: %p is not a live %s of this "
                    "device", what, h, kind);
  free(h);
  return LMS_OK;
}

static lms_status_t stream_create_locked(sim_t *s, void **out) {
  LMS_CHECK(handle_create(s, &s->streams, "stream_create",
                          sizeof(sim_stream_t), out));
  ((sim_stream_t *)*out)->tail = s->host_now;
  return LMS_OK;
}

#define SIM_BAD_STREAM(s, what, h)                                            \
  SIM_FAIL(s, LMS_ERR_INVALID, "%s: %p is not a live stream of this device",  \
           what, h)
#define SIM_BAD_EVENT(s, what, h)                                             \
  SIM_FAIL(s, LMS_ERR_INVALID, "%s: %p is not a live event of this device",   \
           what, h)

static lms_status_t stream_sync_locked(sim_t *s, void *stream) {
  sim_stream_t *st = find_stream(s, stream);
  if (st == NULL) return SIM_BAD_STREAM(s, "stream_sync", stream);
  s->host_now = max_u64(s->host_now, st->tail);
  return LMS_OK;
}

/* The wait is counted from the moment the stream could next start work,
 * max(tail, host_now), so an idle stream is not charged for time that
 * passed before the wait was enqueued.  Waiting on an event never recorded
 * does nothing, as in CUDA. */
static lms_status_t stream_wait_locked(sim_t *s, void *stream, void *event) {
  sim_stream_t *st = find_stream(s, stream);
  if (st == NULL) return SIM_BAD_STREAM(s, "stream_wait", stream);
  sim_event_t *ev = find_event(s, event);
  if (ev == NULL) return SIM_BAD_EVENT(s, "stream_wait", event);
  if (!ev->recorded) return LMS_OK;
  uint64_t ready = max_u64(st->tail, s->host_now);
  if (ev->time > ready) s->stream_wait_ns += ev->time - ready;
  st->tail = max_u64(st->tail, ev->time);
  return LMS_OK;
}

static lms_status_t event_record_locked(sim_t *s, void *event, void *stream) {
  sim_event_t *ev = find_event(s, event);
  if (ev == NULL) return SIM_BAD_EVENT(s, "event_record", event);
  sim_stream_t *st = find_stream(s, stream);
  if (st == NULL) return SIM_BAD_STREAM(s, "event_record", stream);
  ev->time = ev->timed ? max_u64(st->tail, s->host_now) : st->tail;
  ev->recorded = 1;
  ev->polled = 0;
  return LMS_OK;
}

static lms_status_t event_query_locked(sim_t *s, void *event) {
  sim_event_t *ev = find_event(s, event);
  if (ev == NULL) return SIM_BAD_EVENT(s, "event_query", event);
  if (!ev->recorded || ev->time <= s->host_now) return LMS_OK;
  if (ev->polled && ev->polled_at == s->host_now) {
    uint64_t next = s->host_now + SIM_QUERY_QUANTUM_NS;
    s->host_now = next < ev->time ? next : ev->time;
  }
  ev->polled = 1;
  ev->polled_at = s->host_now;
  return LMS_NOT_READY;
}

static lms_status_t event_sync_locked(sim_t *s, void *event) {
  sim_event_t *ev = find_event(s, event);
  if (ev == NULL) return SIM_BAD_EVENT(s, "event_sync", event);
  if (ev->recorded) s->host_now = max_u64(s->host_now, ev->time);
  return LMS_OK;
}

/* ---- Work ----------------------------------------------------------- */

/* Checks that [p, p + n) lies inside one live device allocation. */
static lms_status_t check_dev_range(sim_t *s, const char *what,
                                    const char *side, const void *p,
                                    size_t n) {
  const sim_range_t *r = table_containing(&s->dev, (uintptr_t)p);
  if (r == NULL) r = table_containing(&s->ext, (uintptr_t)p);
  if (r == NULL)
    return SIM_FAIL(s, LMS_ERR_INVALID,
                    "%s: %s %p is not in a live device allocation", what,
                    side, p);
  size_t off = (size_t)((uintptr_t)p - r->base);
  if (n > r->size - off)
    return SIM_FAIL(s, LMS_ERR_INVALID,
                    "%s: %zu bytes at %s %p run past the end of the device "
                    "allocation at %p (%zu bytes)", what, n, side, p,
                    (void *)r->base, r->size);
  return LMS_OK;
}

/* The host side may be pinned memory from host_alloc, which must then hold
 * the whole range, or any other host memory, which CUDA also accepts (at a
 * lower rate that this model does not charge).  Device memory is refused:
 * a copy between two device buffers is not what these entries do. */
static lms_status_t check_host_range(sim_t *s, const char *what,
                                     const char *side, const void *p,
                                     size_t n) {
  if (p == NULL)
    return SIM_FAIL(s, LMS_ERR_INVALID, "%s: %s is NULL", what, side);
  if (table_containing(&s->dev, (uintptr_t)p) != NULL ||
      table_containing(&s->ext, (uintptr_t)p) != NULL)
    return SIM_FAIL(s, LMS_ERR_INVALID,
                    "%s: %s %p is device memory, not host memory", what, side,
                    p);
  const sim_range_t *r = table_containing(&s->host, (uintptr_t)p);
  if (r == NULL) return LMS_OK;
  size_t off = (size_t)((uintptr_t)p - r->base);
  if (n > r->size - off)
    return SIM_FAIL(s, LMS_ERR_INVALID,
                    "%s: %zu bytes at %s %p run past the end of the pinned "
                    "host allocation at %p (%zu bytes)", what, n, side, p,
                    (void *)r->base, r->size);
  return LMS_OK;
}

/* A copy of zero bytes is accepted and does nothing, as in CUDA. */
static lms_status_t copy_h2d_locked(sim_t *s, void *dst, const void *src,
                                    size_t n, void *stream) {
  sim_stream_t *st = find_stream(s, stream);
  if (st == NULL) return SIM_BAD_STREAM(s, "copy_h2d", stream);
  if (n == 0) return LMS_OK;
  LMS_CHECK(check_dev_range(s, "copy_h2d", "dst", dst, n));
  LMS_CHECK(check_host_range(s, "copy_h2d", "src", src, n));
  if (!s->timing_only) memcpy(dst, src, n);
  schedule_copy(s, st, LMS__DIR_H2D, n);
  s->bytes_h2d += n;
  return LMS_OK;
}

static lms_status_t copy_d2h_locked(sim_t *s, void *dst, const void *src,
                                    size_t n, void *stream) {
  sim_stream_t *st = find_stream(s, stream);
  if (st == NULL) return SIM_BAD_STREAM(s, "copy_d2h", stream);
  if (n == 0) return LMS_OK;
  LMS_CHECK(check_dev_range(s, "copy_d2h", "src", src, n));
  LMS_CHECK(check_host_range(s, "copy_d2h", "dst", dst, n));
  if (!s->timing_only) memcpy(dst, src, n);
  schedule_copy(s, st, LMS__DIR_D2H, n);
  s->bytes_d2h += n;
  return LMS_OK;
}

static lms_status_t compute_locked(sim_t *s, void *stream, uint64_t ns) {
  sim_stream_t *st = find_stream(s, stream);
  if (st == NULL) return SIM_BAD_STREAM(s, "compute", stream);
  schedule(s, st, SIM_ENG_COMPUTE, ns);
  return LMS_OK;
}

/* ---- The table's entries: count, maybe inject, run, unlock ---------- */

#define SIM_ENTRY(op, call)                                                   \
  do {                                                                        \
    sim_t *s_ = (sim_t *)d;                                                   \
    lms_status_t st_ = sim_enter(s_, LMS__DEVOP_##op);                        \
    if (st_ == LMS_OK) st_ = (call);                                          \
    pthread_mutex_unlock(&s_->mu);                                            \
    return st_;                                                               \
  } while (0)

static lms_status_t sim_mem_info(lms_dev_t *d, size_t *free_b,
                                 size_t *total_b) {
  SIM_ENTRY(mem_info, mem_info_locked(s_, free_b, total_b));
}

static lms_status_t sim_dev_alloc(lms_dev_t *d, size_t size, void **out) {
  SIM_ENTRY(dev_alloc, dev_alloc_locked(s_, size, out));
}

static lms_status_t sim_dev_free(lms_dev_t *d, void *ptr) {
  SIM_ENTRY(dev_free, dev_free_locked(s_, ptr));
}

static lms_status_t sim_host_alloc(lms_dev_t *d, size_t size, void **out) {
  SIM_ENTRY(host_alloc, host_alloc_locked(s_, size, out));
}

static lms_status_t sim_host_free(lms_dev_t *d, void *ptr) {
  SIM_ENTRY(host_free, host_free_locked(s_, ptr));
}

static lms_status_t sim_stream_create(lms_dev_t *d, void **out) {
  SIM_ENTRY(stream_create, stream_create_locked(s_, out));
}

static lms_status_t sim_stream_destroy(lms_dev_t *d, void *stream) {
  SIM_ENTRY(stream_destroy, handle_destroy(s_, &s_->streams, "stream_destroy",
                                           "stream", stream));
}

static lms_status_t sim_stream_sync(lms_dev_t *d, void *stream) {
  SIM_ENTRY(stream_sync, stream_sync_locked(s_, stream));
}

static lms_status_t sim_stream_wait(lms_dev_t *d, void *stream, void *event) {
  SIM_ENTRY(stream_wait, stream_wait_locked(s_, stream, event));
}

static lms_status_t sim_copy_h2d(lms_dev_t *d, void *dst, const void *src,
                                 size_t n, void *stream) {
  SIM_ENTRY(copy_h2d, copy_h2d_locked(s_, dst, src, n, stream));
}

static lms_status_t sim_copy_d2h(lms_dev_t *d, void *dst, const void *src,
                                 size_t n, void *stream) {
  SIM_ENTRY(copy_d2h, copy_d2h_locked(s_, dst, src, n, stream));
}

static lms_status_t sim_event_create(lms_dev_t *d, void **out) {
  SIM_ENTRY(event_create, handle_create(s_, &s_->events, "event_create",
                                        sizeof(sim_event_t), out));
}

/* Note [Timed events on the simulated device]
 * A timed event recorded on a stream stands for the moment the stream
 * reaches it: its tail, or the host's clock when the stream is idle, as a
 * GPU timestamps a record on an idle stream when the host enqueues it.
 * So a timed event recorded just before stream_wait and one just after
 * are apart by max(tail, event, host) - max(tail, host): exactly what
 * wait_cost answers beforehand.  Untimed events keep the tail, which the
 * timing of everything else was measured with. */
static lms_status_t event_create_timed_locked(sim_t *s, void **out) {
  LMS_CHECK(handle_create(s, &s->events, "event_create_timed",
                          sizeof(sim_event_t), out));
  ((sim_event_t *)*out)->timed = 1;
  return LMS_OK;
}

static lms_status_t sim_event_create_timed(lms_dev_t *d, void **out) {
  SIM_ENTRY(event_create, event_create_timed_locked(s_, out));
}

/* Waits for nothing and moves no clock: LMS_NOT_READY until the host's
 * clock has reached `to`. */
static lms_status_t sim_event_elapsed(lms_dev_t *d, void *from, void *to,
                                      uint64_t *ns) {
  sim_t *s = (sim_t *)d;
  lms_status_t st = LMS_OK;
  pthread_mutex_lock(&s->mu);
  sim_event_t *a = find_event(s, from), *b = find_event(s, to);
  if (a == NULL || b == NULL || ns == NULL || !a->timed || !b->timed)
    st = SIM_FAIL(s, LMS_ERR_INVALID, "event_elapsed: not two live timed "
                  "events of this device");
  else if (!a->recorded || !b->recorded)
    st = SIM_FAIL(s, LMS_ERR_INVALID, "event_elapsed: an event was never "
                  "recorded");
  else if (b->time > s->host_now || a->time > s->host_now)
    st = LMS_NOT_READY;
  else
    *ns = b->time > a->time ? b->time - a->time : 0;
  pthread_mutex_unlock(&s->mu);
  return st;
}

static lms_status_t sim_event_destroy(lms_dev_t *d, void *event) {
  SIM_ENTRY(event_destroy, handle_destroy(s_, &s_->events, "event_destroy",
                                          "event", event));
}

static lms_status_t sim_event_record(lms_dev_t *d, void *event,
                                     void *stream) {
  SIM_ENTRY(event_record, event_record_locked(s_, event, stream));
}

static lms_status_t sim_event_query(lms_dev_t *d, void *event) {
  SIM_ENTRY(event_query, event_query_locked(s_, event));
}

static lms_status_t sim_event_sync(lms_dev_t *d, void *event) {
  SIM_ENTRY(event_sync, event_sync_locked(s_, event));
}

static lms_status_t sim_compute(lms_dev_t *d, void *stream, uint64_t ns) {
  SIM_ENTRY(compute, compute_locked(s_, stream, ns));
}

static lms_status_t sim_wait_cost(lms_dev_t *d, void *stream, void *event,
                                  uint64_t *ns) {
  sim_t *s = (sim_t *)d;
  lms_status_t st = LMS_OK;
  pthread_mutex_lock(&s->mu);
  sim_stream_t *str = find_stream(s, stream);
  sim_event_t *ev = find_event(s, event);
  if (str == NULL || ev == NULL || ns == NULL) {
    st = SIM_FAIL(s, LMS_ERR_INVALID, "wait_cost: not a live stream and "
                  "event of this device");
  } else {
    uint64_t ready = max_u64(str->tail, s->host_now);
    *ns = ev->recorded && ev->time > ready ? ev->time - ready : 0;
    /* As CUDA: only "no wait" for an event already done. */
    if (s->measured_waits && ev->recorded && ev->time > s->host_now)
      st = LMS_ERR_UNSUPPORTED;
  }
  pthread_mutex_unlock(&s->mu);
  return st;
}

/* Note [A framework's device memory on the simulated device]
 * In autograd mode the bytes to offload live in the framework's tensors,
 * which the simulated device did not allocate; with CPU tensors standing
 * for GPU ones they are ordinary host memory.  ext_register lets copies
 * take such a range as device memory, so the copy checks still hold for
 * everything else.  A range may not overlap the device's own memory. */
static lms_status_t sim_ext_register(lms_dev_t *d, const void *ptr,
                                     size_t size) {
  sim_t *s = (sim_t *)d;
  lms_status_t st = LMS_OK;
  uintptr_t p = (uintptr_t)ptr;
  pthread_mutex_lock(&s->mu);
  if (ptr == NULL || size == 0 || p + size < p)
    st = SIM_FAIL(s, LMS_ERR_INVALID, "ext_register: empty or wrapping range");
  else if (s->arena != NULL && p < (uintptr_t)s->arena + s->arena_size &&
           p + size > (uintptr_t)s->arena)
    st = SIM_FAIL(s, LMS_ERR_INVALID, "ext_register: %p is the device's own "
                  "memory", ptr);
  else if (table_find(&s->ext, p) != NULL)
    st = SIM_FAIL(s, LMS_ERR_INVALID, "ext_register: %p is registered "
                  "already", ptr);
  else if (table_reserve(&s->ext) != 0)
    st = SIM_FAIL(s, LMS_ERR_HOST_OOM, "ext_register: no host memory");
  else
    table_insert(&s->ext, p, size);
  pthread_mutex_unlock(&s->mu);
  return st;
}

static lms_status_t sim_ext_unregister(lms_dev_t *d, const void *ptr) {
  sim_t *s = (sim_t *)d;
  lms_status_t st = LMS_OK;
  pthread_mutex_lock(&s->mu);
  sim_range_t *e = table_find(&s->ext, (uintptr_t)ptr);
  if (e != NULL)
    table_remove(&s->ext, e);
  else
    st = SIM_FAIL(s, LMS_ERR_INVALID, "ext_unregister: %p is not registered",
                  ptr);
  pthread_mutex_unlock(&s->mu);
  return st;
}

static uint64_t sim_now_ns(lms_dev_t *d) {
  sim_t *s = (sim_t *)d;
  pthread_mutex_lock(&s->mu);
  uint64_t now = s->host_now;
  pthread_mutex_unlock(&s->mu);
  return now;
}

/* Frees every entry of t and what it names: mapped 1, memory ranges are
 * unmapped; 0, stream and event handles (heap objects) freed; 2, nothing
 * (stretches of the arena, a framework's memory). */
static void table_free_all(sim_table_t *t, int mapped) {
  lms__avl_node_t *n;
  while ((n = lms__avl_first(&t->tree)) != NULL) {
    sim_range_t *r = LMS__CONTAINER_OF(n, sim_range_t, node);
    lms__avl_remove(&t->tree, n);
    if (mapped == 1)
      munmap((void *)r->base, map_size(r->size));
    else if (mapped == 0)
      free((void *)r->base);
    free(r);
  }
  free(t->spare);
  t->spare = NULL;
}

/* Note [Mapped device memory]
 * A GPU maps device memory into address ranges (cuMemAddressReserve,
 * cuMemMap), so one chunk's address range can show pieces of memory that
 * were allocated apart (Note [Chunks of pieces] in swap/residency.c).
 * Here a reservation is a range of host addresses with no access, and
 * dev_map maps the arena's pages at a block's offset into it, which
 * needs the arena to be a file: a memfd, shared.  Bytes written through
 * either address are the block's, and a block freed takes its bytes
 * with it (the pages are punched out of the file), so a stale mapping
 * reads zeros, not another chunk's bytes.  When bytes are not kept
 * (timing only), nothing is mapped: the reservation is address space
 * alone. */
static lms_status_t va_reserve_locked(sim_t *s, size_t size, void **va) {
  if (va == NULL)
    return SIM_FAIL(s, LMS_ERR_INVALID, "va_reserve: va is NULL");
  if (size == 0 || size > (1ull << 46))
    return SIM_FAIL(s, LMS_ERR_INVALID,
                    "va_reserve: %zu bytes; accepted: 1 byte to 64 TiB", size);
  if (table_reserve(&s->va) != 0)
    return SIM_FAIL(s, LMS_ERR_HOST_OOM, "va_reserve: the host has no memory "
                    "left for the simulator's bookkeeping");
  const size_t align = 2u << 20;
  size_t len = map_size(size) + align;
  char *p = mmap(NULL, len, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return SIM_FAIL(s, LMS_ERR_HOST_OOM, "va_reserve: no %zu bytes of address "
                    "space left", len);
  /* 2 MiB aligned, as CUDA's reservations are; the slack goes back. */
  char *a = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
  if (a > p) munmap(p, (size_t)(a - p));
  size_t tail = (size_t)(p + len - (a + map_size(size)));
  if (tail > 0) munmap(a + map_size(size), tail);
  table_insert(&s->va, (uintptr_t)a, size);
  *va = a;
  return LMS_OK;
}

static lms_status_t va_release_locked(sim_t *s, void *va) {
  size_t n = 0;
  LMS_CHECK(block_free(s, &s->va, "va_release", va, &n));
  munmap(va, map_size(n));
  return LMS_OK;
}

static lms_status_t dev_map_locked(sim_t *s, void *va, void *ptr, size_t size) {
  const sim_range_t *r = table_containing(&s->va, (uintptr_t)va);
  if (r == NULL || size == 0 || (uintptr_t)va % s->page != 0 ||
      size > r->size - ((uintptr_t)va - r->base))
    return SIM_FAIL(s, LMS_ERR_INVALID,
                    "dev_map: [%p, +%zu) is not a page-aligned part of one "
                    "reservation", va, size);
  const sim_range_t *b = table_find(&s->dev, (uintptr_t)ptr);
  if (b == NULL || b->size < size)
    return SIM_FAIL(s, LMS_ERR_INVALID,
                    "dev_map: %p is not the start of a device block of at "
                    "least %zu bytes", ptr, size);
  if (s->arena_fd < 0) return LMS_OK;
  void *m = mmap(va, map_size(size), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_FIXED, s->arena_fd,
                 (off_t)((char *)ptr - s->arena));
  if (m == MAP_FAILED)
    return SIM_FAIL(s, LMS_ERR_HOST_OOM, "dev_map: mmap of %zu bytes failed",
                    size);
  return LMS_OK;
}

static lms_status_t sim_va_reserve(lms_dev_t *d, size_t size, void **va) {
  SIM_ENTRY(va_reserve, va_reserve_locked(s_, size, va));
}

static lms_status_t sim_va_release(lms_dev_t *d, void *va) {
  SIM_ENTRY(va_release, va_release_locked(s_, va));
}

static lms_status_t sim_dev_map(lms_dev_t *d, void *va, void *ptr,
                                size_t size) {
  SIM_ENTRY(dev_map, dev_map_locked(s_, va, ptr, size));
}

/* Frees whatever the caller left allocated along with the device: a
 * simulated device that dies takes its memory with it, as a real one does
 * with its context. */
static void sim_destroy(lms_dev_t *d) {
  if (d == NULL) return;
  sim_t *s = (sim_t *)d;
  table_free_all(&s->dev, 2); /* the blocks are stretches of the arena */
  table_free_all(&s->ext, 2); /* the framework's own memory */
  if (s->arena != NULL) munmap(s->arena, s->arena_size);
  if (s->arena_fd >= 0) close(s->arena_fd);
  table_free_all(&s->va, 1);
  free(s->gaps);
  table_free_all(&s->host, 1);
  handles_free_all(&s->streams);
  handles_free_all(&s->events);
  for (int dir = 0; dir < LMS__DIR_COUNT; dir++) free(s->spans[dir]);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

static lms_status_t sim_link_rates(lms_dev_t *d, double *h2d, double *d2h,
                                   double *both) {
  const sim_t *s = (const sim_t *)d;
  *h2d = s->link.h2d_gbps * 1e9;
  *d2h = s->link.d2h_gbps * 1e9;
  *both = s->link.both_gbps * 1e9;
  return LMS_OK;
}

static const lms_dev_ops_t sim_ops = {
    .version = LMS_DEV_OPS_VERSION,
    .name = "sim",
    .mem_info = sim_mem_info,
    .dev_alloc = sim_dev_alloc,
    .dev_free = sim_dev_free,
    .host_alloc = sim_host_alloc,
    .host_free = sim_host_free,
    .stream_create = sim_stream_create,
    .stream_destroy = sim_stream_destroy,
    .stream_sync = sim_stream_sync,
    .stream_wait = sim_stream_wait,
    .copy_h2d = sim_copy_h2d,
    .copy_d2h = sim_copy_d2h,
    .event_create = sim_event_create,
    .event_destroy = sim_event_destroy,
    .event_record = sim_event_record,
    .event_query = sim_event_query,
    .event_sync = sim_event_sync,
    .compute = sim_compute,
    .wait_cost = sim_wait_cost,
    .now_ns = sim_now_ns,
    .destroy = sim_destroy,
    .ext_register = sim_ext_register,
    .ext_unregister = sim_ext_unregister,
    .event_create_timed = sim_event_create_timed,
    .event_elapsed = sim_event_elapsed,
    .va_reserve = sim_va_reserve,
    .va_release = sim_va_release,
    .dev_map = sim_dev_map,
    .link_rates = sim_link_rates,
};

/* ---- Creation and the fault spec ------------------------------------ */

lms_status_t lms__sim_create(const lms__sim_config_t *cfg, lms_dev_t **out,
                             char *err) {
  if (cfg == NULL || out == NULL) {
    if (err != NULL) lms__errf(err, "sim: cfg or out is NULL");
    return LMS_ERR_INVALID;
  }
  if (cfg->capacity == 0) {
    if (err != NULL) lms__errf(err, "sim: device capacity must be > 0");
    return LMS_ERR_INVALID;
  }
  const lms__link_t *l = &cfg->link;
  if (!(isfinite(l->h2d_gbps) && l->h2d_gbps > 0.0 &&
        isfinite(l->d2h_gbps) && l->d2h_gbps > 0.0 &&
        isfinite(l->latency_us) && l->latency_us >= 0.0)) {
    if (err != NULL)
      lms__errf(err, "sim: link '%.32s' needs positive finite rates and a "
                     "finite latency >= 0 (h2d %g GB/s, d2h %g GB/s, "
                     "latency %g us)",
                l->name, l->h2d_gbps, l->d2h_gbps, l->latency_us);
    return LMS_ERR_INVALID;
  }
  uint64_t fail_op[LMS__DEVOP_COUNT] = {0};
  uint64_t fail_any = 0;
  if (cfg->fail != NULL && cfg->fail[0] != '\0')
    LMS_CHECK(lms__fault_spec_parse(cfg->fail, fail_op, &fail_any, err));

  sim_t *s = calloc(1, sizeof *s);
  if (s == NULL) {
    if (err != NULL) lms__errf(err, "sim: no host memory for the device");
    return LMS_ERR_HOST_OOM;
  }
  if (pthread_mutex_init(&s->mu, NULL) != 0) {
    free(s);
    if (err != NULL) lms__errf(err, "sim: cannot create the device mutex");
    return LMS_ERR_INTERNAL;
  }
  long page = sysconf(_SC_PAGESIZE);
  table_init(&s->dev);
  table_init(&s->host);
  table_init(&s->ext);
  table_init(&s->va);
  s->head.ops = &sim_ops;
  s->capacity = cfg->capacity;
  /* Eight times the capacity (Note [Device addresses]), within what a
   * 47-bit address space can reserve. */
  uint64_t want = cfg->capacity <= (4ull << 40)    ? 8 * cfg->capacity
                  : cfg->capacity <= (16ull << 40) ? 2 * cfg->capacity
                                                   : cfg->capacity;
  s->arena_size = map_size((size_t)want + (64u << 20));
  /* Note [Mapped device memory]. */
  s->arena_fd = -1;
  if (!cfg->timing_only) {
    s->arena_fd = memfd_create("lms-sim-device", MFD_CLOEXEC);
    if (s->arena_fd >= 0 && ftruncate(s->arena_fd, (off_t)s->arena_size) != 0) {
      close(s->arena_fd);
      s->arena_fd = -1;
    }
  }
  s->arena = s->arena_fd >= 0
                 ? mmap(NULL, s->arena_size, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_NORESERVE, s->arena_fd, 0)
                 : mmap(NULL, s->arena_size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  s->gaps_cap = 64;
  s->gaps = calloc(s->gaps_cap, sizeof *s->gaps);
  if (s->arena == MAP_FAILED || s->gaps == NULL) {
    size_t reserve = s->arena_size;
    if (s->arena != MAP_FAILED) munmap(s->arena, s->arena_size);
    if (s->arena_fd >= 0) close(s->arena_fd);
    free(s->gaps);
    pthread_mutex_destroy(&s->mu);
    free(s);
    if (err != NULL)
      lms__errf(err, "sim: cannot reserve %zu bytes of address space for a "
                "device of %llu bytes", reserve,
                (unsigned long long)cfg->capacity);
    return LMS_ERR_HOST_OOM;
  }
  s->gaps[0].off = 0;
  s->gaps[0].len = s->arena_size;
  s->ngaps = 1;
  s->link = cfg->link;
  s->timing_only = cfg->timing_only != 0;
  s->measured_waits = cfg->measured_waits != 0;
  s->page = page > 0 ? (size_t)page : 4096;
  memcpy(s->fail_op, fail_op, sizeof fail_op);
  s->fail_any = fail_any;
  LMS_LOG(INFO, DEVICE,
          "sim: capacity %" PRIu64 " bytes, link %s (%g / %g GB/s, %g us)",
          s->capacity, s->link.name, s->link.h2d_gbps, s->link.d2h_gbps,
          s->link.latency_us);
  *out = &s->head;
  return LMS_OK;
}

int lms__dev_is_sim(const lms_dev_t *d) {
  return d != NULL && d->ops == &sim_ops;
}

void lms__sim_fail_op(lms_dev_t *d, lms__dev_op_t op, uint64_t n) {
  if (!lms__dev_is_sim(d) || (unsigned)op >= LMS__DEVOP_COUNT) return;
  sim_t *s = (sim_t *)d;
  pthread_mutex_lock(&s->mu);
  s->fail_op[op] = n;
  pthread_mutex_unlock(&s->mu);
}

void lms__sim_fail_any(lms_dev_t *d, uint64_t n) {
  if (!lms__dev_is_sim(d)) return;
  sim_t *s = (sim_t *)d;
  pthread_mutex_lock(&s->mu);
  s->fail_any = n;
  pthread_mutex_unlock(&s->mu);
}

void lms__sim_report(lms_dev_t *d, lms__sim_report_t *out) {
  if (out == NULL) return;
  memset(out, 0, sizeof *out);
  if (!lms__dev_is_sim(d)) return;
  sim_t *s = (sim_t *)d;
  pthread_mutex_lock(&s->mu);
  uint64_t now = s->host_now;
  for (int e = 0; e < SIM_ENG_COUNT; e++) now = max_u64(now, s->free_at[e]);
  out->now_ns = now;
  out->compute_busy_ns = s->busy_ns[SIM_ENG_COMPUTE];
  out->h2d_busy_ns = s->busy_ns[SIM_ENG_H2D];
  out->d2h_busy_ns = s->busy_ns[SIM_ENG_D2H];
  out->bytes_h2d = s->bytes_h2d;
  out->bytes_d2h = s->bytes_d2h;
  out->stream_wait_ns = s->stream_wait_ns;
  out->dev_in_use = s->dev_in_use;
  out->host_in_use = s->host_in_use;
  memcpy(out->calls, s->calls, sizeof out->calls);
  out->total_calls = s->total_calls;
  pthread_mutex_unlock(&s->mu);
}

/* Every other GPU of a share has a timeline of a period > 0. */
static int timelines_ok(const lms__link_share_t *sh) {
  for (int j = 0; j < sh->others && j < LMS__SHARE_MAX_GPUS; j++) {
    const lms__copy_timeline_t *tl = lms__share_timeline(sh, j);
    if (tl == NULL || tl->period_ns == 0) return 0;
  }
  return 1;
}

lms_status_t lms__sim_share_link(lms_dev_t *d, const lms__link_share_t *sh) {
  if (!lms__dev_is_sim(d)) return LMS_ERR_INVALID;
  sim_t *s = (sim_t *)d;
  lms_status_t st = LMS_OK;
  pthread_mutex_lock(&s->mu);
  if (sh == NULL || sh->others == 0) {
    s->shared = 0;
  } else if (sh->others < 0 || sh->others >= LMS__SHARE_MAX_GPUS ||
             !timelines_ok(sh)) {
    st = SIM_FAIL(s, LMS_ERR_INVALID,
                  "share_link: %d other GPUs, %s; accepted: 0 to %d "
                  "others, each with a timeline of a period > 0",
                  sh->others,
                  timelines_ok(sh) ? "each with a timeline"
                                   : "one without a timeline",
                  LMS__SHARE_MAX_GPUS - 1);
  } else {
    s->share = *sh;
    s->shared = 1;
  }
  pthread_mutex_unlock(&s->mu);
  return st;
}

void lms__sim_record_copies(lms_dev_t *d, int on) {
  if (!lms__dev_is_sim(d)) return;
  sim_t *s = (sim_t *)d;
  pthread_mutex_lock(&s->mu);
  s->recording = on != 0;
  if (on)
    for (int dir = 0; dir < LMS__DIR_COUNT; dir++) s->nspans[dir] = 0;
  pthread_mutex_unlock(&s->mu);
}

void lms__sim_copy_spans(lms_dev_t *d, int dir, const lms__copy_span_t **out,
                         size_t *n) {
  *out = NULL;
  *n = 0;
  if (!lms__dev_is_sim(d) || dir < 0 || dir >= LMS__DIR_COUNT) return;
  sim_t *s = (sim_t *)d;
  pthread_mutex_lock(&s->mu);
  *out = s->spans[dir];
  *n = s->nspans[dir];
  pthread_mutex_unlock(&s->mu);
}
