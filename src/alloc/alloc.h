/* alloc.h - placement and memory: where a new chunk lives, the device
 * caching allocator, the pinned host pool and the address registry.
 *
 * None of these lock: the context that owns them holds its lock around
 * every call.  None of them moves bytes between host and device; that is
 * the swap module's work. */
#ifndef LMS_ALLOC_ALLOC_H
#define LMS_ALLOC_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "core/avl.h"
#include "core/placement.h"
#include "device/device.h"
#include "lms/lms.h"

/* ---- Placement ------------------------------------------------------- */

/* lms__placement_t and lms__place_on_host: core/placement.h. */

/* ---- Device caching allocator ---------------------------------------- */

typedef struct lms__segment lms__segment_t;
typedef struct lms__block lms__block_t;

typedef struct lms__devcache {
  lms_dev_t *dev;
  uint64_t limit;            /* segments never hold more than this */
  uint64_t segment_unit;     /* small segments' size and large ones'
                                rounding; LMS__SMALL_SEGMENT unless set */
  int paged;                 /* Note [Paged large blocks] in devcache.c */
  size_t large_split;        /* segments for large requests cut into more
                                than one block */
  size_t small_max;          /* requests up to this share small segments;
                                LMS__SMALL_REQUEST unless set */
  lms_stats_t *stats;        /* device_reserved, device_allocated,
                                segments, device_ooms, device_errors */
  lms__avl_t free_blocks;    /* ready: by (kind, size, address) */
  lms__avl_t pending_blocks; /* pending: by (stream, kind, size, address) */
  lms__avl_t used_blocks;    /* by address: free() finds its block */
  lms__segment_t *segments;  /* doubly linked */
  lms__block_t *pending;     /* free blocks waiting on an event, newest
                                first */
  lms__block_t *pending_tail; /* ... and the oldest */
  struct lms__pending_stream {
    void *stream;
    size_t n;
    lms__block_t *newest, *oldest; /* the stream's own pending list */
  } pending_streams[8];       /* pending blocks with events, per stream
                                 (Note [Pending blocks in stream order]) */
  int pending_overflow;       /* more streams than that were seen */
  lms__avl_t empty_ready;    /* segments that are one free block, */
  lms__avl_t empty_pending;  /* ready or pending with an event, largest
                                first (Note [Empty segments]) */
  uint64_t frees;            /* blocks freed pending, numbering them */
  uint64_t segments_made;    /* numbers segments in the order made */
  lms__evpool_t events;      /* for pending blocks */
  char *err;                 /* the owner's last-error buffer */
  uint64_t last_wait_ns;     /* the longest wait the last allocation made
                                its stream do for a pending block */
} lms__devcache_t;

/* Sizes are rounded up to this, and blocks are split no finer. */
#define LMS__BLOCK_ROUND 512u
/* Requests up to this come from shared segments of LMS__SMALL_SEGMENT,
 * unless small_max says otherwise. */
#define LMS__SMALL_REQUEST (1u << 20)
#define LMS__SMALL_SEGMENT (2u << 20)

void lms__devcache_init(lms__devcache_t *dc, lms_dev_t *dev, uint64_t limit,
                        lms_stats_t *stats, char *err);
/* Returns every segment to the device.  The device must be idle. */
void lms__devcache_fini(lms__devcache_t *dc);
/* A block of at least `size` bytes for work on `stream` (NULL: usable by
 * any stream at once).  Reuses a cached block when one fits: a block freed
 * on another stream only once the event recorded at its free says that
 * stream is done with it.  Otherwise a new segment, within the limit;
 * otherwise it waits for pending blocks and returns unused segments before
 * giving LMS_ERR_DEVICE_OOM.  With a stream, a block still pending on
 * another stream may be taken by making `stream` wait for its event
 * (Note [Stream-ordered reuse] in devcache.c) before anything blocks. */
lms_status_t lms__devcache_alloc(lms__devcache_t *dc, size_t size,
                                 void *stream, void **out);
/* The same, but never blocks the calling thread (no waiting for pending
 * blocks, only stream-ordered reuse) and never takes a block of the other
 * kind (Note [Keeping large and small apart]): what the swap module tries
 * while evicting could still make room of the right kind. */
lms_status_t lms__devcache_alloc_strict(lms__devcache_t *dc, size_t size,
                                        void *stream, void **out);
/* Returns a block.  `stream` is the last stream whose work uses it (NULL:
 * no work uses it); the block is reusable on that stream at once and on
 * others when that work is done. */
lms_status_t lms__devcache_free(lms__devcache_t *dc, void *ptr, void *stream);
/* Waits for every pending block, making it reusable everywhere. */
lms_status_t lms__devcache_sync(lms__devcache_t *dc);
/* Returns segments with no block in use to the device. */
lms_status_t lms__devcache_release_unused(lms__devcache_t *dc);
/* Visits every block of every segment in address order: its address and
 * size, whether it is allocated, and whether a free one could be merged
 * for a stream (ready, or pending with an event); `first` is 1 at the
 * first block of a segment.  Segments of small requests are visited only
 * when `small` is 1, those of large ones only when it is 0; segments
 * smaller than `min_segment` bytes are passed over. */
typedef void (*lms__block_visit_fn)(void *arg, const void *ptr, size_t size,
                                    int allocated, int mergeable, int first,
                                    void *owner);
void lms__devcache_visit(const lms__devcache_t *dc, int small,
                         size_t min_segment, lms__block_visit_fn fn,
                         void *arg);
/* The usable size of an allocated block. */
size_t lms__devcache_block_size(const lms__devcache_t *dc, const void *ptr);
/* Names what holds the allocated block at ptr, passed to visits; a free
 * forgets it. */
void lms__devcache_set_owner(lms__devcache_t *dc, const void *ptr,
                             void *owner);
/* 1 - largest free block / free bytes within segments (0 when none free). */
double lms__devcache_fragmentation(const lms__devcache_t *dc);
/* For the allocated block at ptr: 1 if its segment is for large requests,
 * and that segment's place in the order segments were made (*seq). */
int lms__devcache_in_large(const lms__devcache_t *dc, const void *ptr,
                           uint64_t *seq);
/* Note [Range eviction by index] in swap/residency.c: 1 while every
 * segment for large requests is one block and every
 * stream's pending blocks are in pending_streams; then, 1 in *found if a
 * free block that could start a run (ready, or pending with an event) of
 * at least `size` bytes is in such a segment. */
int lms__devcache_whole_large(const lms__devcache_t *dc, size_t size,
                              int *found);
/* Checks the invariants: blocks tile their segments, no two adjacent free
 * ready blocks, trees match the lists, the stats match the blocks.  0 when
 * sound.  For tests. */
int lms__devcache_check(const lms__devcache_t *dc);

/* ---- The node's pinned budget (nodeledger.c) -------------------------- */

/* Note [One host budget per node]: the pinned bytes of every lms process
 * of this node (and user) under one --node-host-limit. */
typedef struct lms__node_ledger lms__node_ledger_t;

/* For tests: the name a join with no name takes, instead of
 * /lms-node-UID, when not NULL. */
extern const char *lms__node_ledger_name;
/* Joins the ledger `name` (NULL: lms__node_ledger_name, else
 * /lms-node-UID), making it if this is the first process.  LMS_ERR_HOST_OOM, with err saying why, if it cannot. */
lms_status_t lms__node_ledger_join(const char *name, uint64_t limit,
                                   lms__node_ledger_t **out, char *err);
/* Counts `bytes` more for this process: LMS_ERR_HOST_OOM, with why
 * (LMS__ERRBUF bytes) naming what the node holds and the limit, when the
 * live processes' bytes and these would pass the limit. */
lms_status_t lms__node_ledger_reserve(lms__node_ledger_t *l, uint64_t bytes,
                                      char *why);
void lms__node_ledger_release(lms__node_ledger_t *l, uint64_t bytes);
/* The bytes the node's live lms processes hold, and how many there are
 * (processes found gone are dropped first). */
uint64_t lms__node_ledger_total(lms__node_ledger_t *l, int *processes);
/* Leaves, giving back this process's bytes; the last one out removes the
 * ledger.  NULL is ignored. */
void lms__node_ledger_leave(lms__node_ledger_t *l);
/* For tests: takes the ledger's lock and keeps it, as a process killed in
 * the middle of an update leaves it (the next process to take it finds
 * it abandoned and goes on: Note [One host budget per node]). */
void lms__node_ledger_hold_for_test(lms__node_ledger_t *l);

/* ---- Pinned host pool ------------------------------------------------- */

typedef struct lms__hostpool lms__hostpool_t;

/* A jemalloc arena whose extents come from the device's pinned host_alloc.
 * `limit` caps the pinned bytes (0: none).  err: LMS__ERRBUF bytes. */
lms_status_t lms__hostpool_create(lms_dev_t *dev, uint64_t limit,
                                  lms__hostpool_t **out, char *err);
void lms__hostpool_destroy(lms__hostpool_t *hp);
/* LMS_ERR_HOST_OOM when the limit or the host refuses. */
lms_status_t lms__hostpool_alloc(lms__hostpool_t *hp, size_t size,
                                 void **out);
void lms__hostpool_free(lms__hostpool_t *hp, void *ptr);
/* From now on every slab is counted in the node's ledger first (and the
 * bytes pinned so far at once); l outlives the pool.  LMS_ERR_HOST_OOM,
 * with err, when even those do not fit. */
lms_status_t lms__hostpool_set_node(lms__hostpool_t *hp, lms__node_ledger_t *l,
                                    char *err);
/* Why the last request was refused by the node's budget, or "". */
const char *lms__hostpool_refused(lms__hostpool_t *hp);
/* Pinned bytes obtained from the device so far (held until destroy). */
uint64_t lms__hostpool_pinned(const lms__hostpool_t *hp);
/* host_alloc calls that failed, including those jemalloc recovered from
 * by asking again for less. */
uint64_t lms__hostpool_failures(const lms__hostpool_t *hp);

/* ---- Registry --------------------------------------------------------- */

/* One address range, embedded in whatever owns it. */
typedef struct lms__reg_entry {
  lms__avl_node_t node;
  uintptr_t start;
  size_t size;
  void *owner;
} lms__reg_entry_t;

typedef struct lms__registry {
  lms__avl_t ranges; /* by start; ranges never overlap */
} lms__registry_t;

void lms__registry_init(lms__registry_t *r);
/* Adds [start, start + size).  LMS_ERR_INVALID if it overlaps a range
 * already there or is empty. */
lms_status_t lms__registry_add(lms__registry_t *r, lms__reg_entry_t *e,
                               const void *start, size_t size, void *owner);
void lms__registry_remove(lms__registry_t *r, lms__reg_entry_t *e);
/* The entry whose range holds addr, or NULL.  O(log n). */
lms__reg_entry_t *lms__registry_find(const lms__registry_t *r,
                                     const void *addr);

#endif
