/* devcache.c - the device caching allocator.
 *
 * Device memory comes from the device in segments; a segment is tiled by
 * blocks, each either in use or free.  Free blocks sit in a tree ordered by
 * (size, address), so the best fit is the first block not smaller than the
 * request.  A block split off in one allocation merges back with free
 * neighbours when it is returned.
 *
 * Note [Stream-aware reuse]
 * A block freed while work on stream S may still be using it is "pending":
 * an event is recorded on S at the free.  Work enqueued later on S runs
 * after that work, so S itself may reuse the block at once; any other
 * stream only once the event has completed.  A pending block is neither
 * split nor merged (its neighbours may be free on other terms), and a
 * request from S takes it only if it is at most twice the request, so that
 * a small request does not pin a large pending block whole.  If recording
 * the event fails, the block stays bound to S until a full sync.
 *
 * Note [Oldest pending first]
 * A stream's work runs in the order it was enqueued, so of the blocks
 * pending on one stream the one freed first is the first whose event
 * completes.  So of one stream's pending blocks that serve a request
 * equally (the smallest that serves, or a large segment of the request's
 * size), the oldest free is taken, and a pending segment returned to make
 * room is the oldest free of all (between streams that order is only a
 * guess; the copy stream out frees most of them).  Between streams, in
 * the walk of every pending block when there are more streams than
 * pending_streams tracks, and for runs of blocks (claim_run), the size
 * and the address decide, as before.  Write-backs are freed on the copy
 * stream out in the order they were queued, so the oldest is the one
 * written home first, and a request that takes it waits for the least of
 * that stream's work.  Taken by address instead, and largest then newest
 * made for a segment returned, a new tensor could wait behind the
 * write-backs queued last.  Oldest first, the five-trace sweep is faster
 * in 32 of 60 runs, by up to 3.9 %, and slower in 5: four by 0.4 % or
 * less, and random 4 KiB chunks at 2x over NVLink-C2C, a run that swings
 * from one iteration to the next, by 5 % (bench/results/
 * 2026-11-25-sim-leaving-late.md, which also has a setting of the U-Net
 * that is 6.5 % slower).
 *
 * Note [Stream-ordered reuse]
 * When no ready block fits, a request on stream T may still take a block
 * pending on another stream: T is made to wait for the block's event, so
 * T's later work runs after every use of the block, as cudaMallocAsync
 * orders its pool.  This keeps the host from blocking on the device, which
 * matters for the swap path: the copy that brings a chunk into a victim's
 * block is ordered after the victim's write-back on the device, while the
 * host goes on enqueueing.  A block whose event could not be recorded is
 * not taken this way.
 *
 * Invariants (lms__devcache_check): blocks tile their segment; no two
 * neighbouring free blocks are both ready (they would have merged); every
 * free block is in free_blocks, every used one in used_blocks; the stats
 * agree with the blocks. */
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc.h"
#include "core/budget.h"
#include "core/dlist.h"
#include "core/log.h"
#include "core/stats.h"

struct lms__segment {
  char *base;
  size_t size;
  size_t used;  /* bytes of this segment in blocks in use */
  int small;    /* made for requests up to small_max */
  lms__block_t *first;
  lms__segment_t *prev, *next;
  lms__avl_node_t enode; /* in empty_in while it is one free block */
  lms__avl_t *empty_in;  /* dc->empty_ready, dc->empty_pending or NULL */
  uint64_t seq;          /* the order it was made in */
  size_t nblocks;        /* blocks it is cut into */
};

/* Counts the blocks of seg, and the segments for large requests cut into
 * more than one (Note [Range eviction by index] in swap/residency.c). */
static void seg_blocks(lms__devcache_t *dc, lms__segment_t *seg, int d) {
  size_t was = seg->nblocks;
  seg->nblocks = (size_t)((ptrdiff_t)seg->nblocks + d);
  if (seg->small) return;
  if (was <= 1 && seg->nblocks > 1) dc->large_split++;
  else if (was > 1 && seg->nblocks <= 1) dc->large_split--;
}

struct lms__block {
  lms__avl_node_t node; /* in free_blocks or used_blocks */
  lms__segment_t *seg;
  lms__block_t *prev, *next;   /* neighbours by address */
  lms__block_t *pprev, *pnext; /* the pending list */
  lms__block_t *sprev, *snext; /* its stream's pending list */
  int slot;                    /* 1 + its stream's pending_streams index,
                                  0 when in no stream's list */
  char *ptr;
  size_t size;
  int allocated;
  int pending;
  void *stream;
  void *event;
  uint64_t freed; /* pending: the order it was freed in */
  void *owner;  /* allocated: what the caller said holds it, or NULL */
};

/* Blocks by kind (small segments first), then size; 0 when alike. */
static int cmp_kind_size(const lms__block_t *x, const lms__block_t *y) {
  if (x->seg->small != y->seg->small) return x->seg->small ? -1 : 1;
  if (x->size != y->size) return x->size < y->size ? -1 : 1;
  return 0;
}

/* Free blocks by kind and size, then address: a request of one kind walks
 * only the blocks it may take. */
static int cmp_free(const lms__avl_node_t *a, const lms__avl_node_t *b) {
  const lms__block_t *x = LMS__CONTAINER_OF(a, lms__block_t, node);
  const lms__block_t *y = LMS__CONTAINER_OF(b, lms__block_t, node);
  int c = cmp_kind_size(x, y);
  if (c != 0) return c;
  return x->ptr < y->ptr ? -1 : x->ptr > y->ptr;
}

/* Pending free blocks by the stream they wait on, kind and size, then
 * the oldest free first (Note [Oldest pending first]): a request finds its
 * own stream's in O(log n) (Note [Two trees of free blocks]). */
static int cmp_pending(const lms__avl_node_t *a, const lms__avl_node_t *b) {
  const lms__block_t *x = LMS__CONTAINER_OF(a, lms__block_t, node);
  const lms__block_t *y = LMS__CONTAINER_OF(b, lms__block_t, node);
  if (x->stream != y->stream)
    return (uintptr_t)x->stream < (uintptr_t)y->stream ? -1 : 1;
  int c = cmp_kind_size(x, y);
  if (c != 0) return c;
  if (x->freed != y->freed) return x->freed < y->freed ? -1 : 1;
  return x->ptr < y->ptr ? -1 : x->ptr > y->ptr;
}

/* Empty segments, largest first, then the newest first (Note [Empty
 * segments]). */
static int cmp_empty(const lms__avl_node_t *a, const lms__avl_node_t *b) {
  const lms__segment_t *x = LMS__CONTAINER_OF(a, lms__segment_t, enode);
  const lms__segment_t *y = LMS__CONTAINER_OF(b, lms__segment_t, enode);
  if (x->size != y->size) return x->size > y->size ? -1 : 1;
  return x->seq > y->seq ? -1 : x->seq < y->seq;
}

/* Pending empty segments, the oldest free first, then as cmp_empty (Note
 * [Oldest pending first]). */
static int cmp_empty_pending(const lms__avl_node_t *a,
                             const lms__avl_node_t *b) {
  const lms__segment_t *x = LMS__CONTAINER_OF(a, lms__segment_t, enode);
  const lms__segment_t *y = LMS__CONTAINER_OF(b, lms__segment_t, enode);
  if (x->first->freed != y->first->freed)
    return x->first->freed < y->first->freed ? -1 : 1;
  return cmp_empty(a, b);
}

static int cmp_used(const lms__avl_node_t *a, const lms__avl_node_t *b) {
  const lms__block_t *x = LMS__CONTAINER_OF(a, lms__block_t, node);
  const lms__block_t *y = LMS__CONTAINER_OF(b, lms__block_t, node);
  return x->ptr < y->ptr ? -1 : x->ptr > y->ptr;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

void lms__devcache_init(lms__devcache_t *dc, lms_dev_t *dev, uint64_t limit,
                        lms_stats_t *stats, char *err) {
  memset(dc, 0, sizeof *dc);
  dc->segment_unit = LMS__SMALL_SEGMENT;
  dc->small_max = LMS__SMALL_REQUEST;
  dc->dev = dev;
  dc->limit = limit;
  dc->stats = stats;
  dc->err = err;
  dc->events.dev = dev;
  lms__avl_init(&dc->free_blocks, cmp_free);
  lms__avl_init(&dc->pending_blocks, cmp_pending);
  lms__avl_init(&dc->used_blocks, cmp_used);
  lms__avl_init(&dc->empty_ready, cmp_empty);
  lms__avl_init(&dc->empty_pending, cmp_empty_pending);
}

static void device_error(lms__devcache_t *dc, const char *what) {
  lms__stat_add(&dc->stats->device_errors, 1);
  lms__errf(dc->err, "%s: %s", what, dc->dev->last_error);
  LMS_LOG(WARN, ALLOC, "%s: %s", what, dc->dev->last_error);
}

static void *event_get(lms__devcache_t *dc) {
  void *ev = NULL;
  if (lms__evpool_get(&dc->events, &ev) != LMS_OK) {
    device_error(dc, "event_create for a freed block");
    return NULL;
  }
  return ev;
}

static void event_put(lms__devcache_t *dc, void *ev) {
  lms__evpool_put(&dc->events, ev);
}

/* ---- Pending list ------------------------------------------------------ */

#define PENDING_STREAMS 8

/* The slot of b's stream among pending_streams, taking a free one for a
 * stream that has none; -1 for a block without an event, or when every
 * slot is another stream's (pending_overflow is then set). */
static int pending_slot(lms__devcache_t *dc, const lms__block_t *b) {
  if (b->event == NULL) return -1;
  int free_slot = -1;
  for (int i = 0; i < PENDING_STREAMS; i++) {
    if (dc->pending_streams[i].n > 0 && dc->pending_streams[i].stream == b->stream)
      return i;
    if (dc->pending_streams[i].n == 0 && free_slot < 0) free_slot = i;
  }
  if (free_slot < 0) {
    dc->pending_overflow = 1;
    return -1;
  }
  dc->pending_streams[free_slot].stream = b->stream;
  dc->pending_streams[free_slot].newest = NULL;
  dc->pending_streams[free_slot].oldest = NULL;
  return free_slot;
}

static void pending_push(lms__devcache_t *dc, lms__block_t *b) {
  int i = pending_slot(dc, b);
  b->slot = i + 1;
  if (i >= 0) {
    struct lms__pending_stream *ps = &dc->pending_streams[i];
    ps->n++;
    LMS__DLIST_PUSH_FRONT(ps->newest, ps->oldest, b, sprev, snext);
  }
  LMS__DLIST_PUSH_FRONT(dc->pending, dc->pending_tail, b, pprev, pnext);
}

static void pending_unlink(lms__devcache_t *dc, lms__block_t *b) {
  if (b->slot > 0) {
    struct lms__pending_stream *ps = &dc->pending_streams[b->slot - 1];
    ps->n--;
    LMS__DLIST_UNLINK(ps->newest, ps->oldest, b, sprev, snext);
    b->slot = 0;
  }
  LMS__DLIST_UNLINK(dc->pending, dc->pending_tail, b, pprev, pnext);
}

/* ---- Blocks -------------------------------------------------------------- */

/* Note [Two trees of free blocks]
 * A free block is ready (any stream may take it) or pending (its last
 * users' event may not have passed; the stream it waits on may take it at
 * once, others only after waiting).  Kept in one tree by size, a request
 * walked past every block pending on other streams, and with the host far
 * ahead of the device those are thousands.  So ready blocks are in
 * free_blocks by (kind, size, address) and pending ones in pending_blocks
 * by (stream, kind, size, age); the smallest block a request may take
 * is the smaller of the first of each that fits, O(log n).  A block moves
 * between the trees only while out of both: its pending flag says which
 * it is in. */
static lms__avl_t *tree_of(lms__devcache_t *dc, const lms__block_t *b) {
  return b->pending ? &dc->pending_blocks : &dc->free_blocks;
}

/* Note [Empty segments]
 * In paged mode a large request that finds no free segment of its size
 * returns free segments to the device until the budget has room: the
 * largest ready one first, else, for a stream, the oldest pending one
 * with an event (Note [Oldest pending first]).  A walk of every segment
 * for it cost O(segments) an allocation, and with one segment a resident
 * large chunk, at 200,000 references an iteration that walk was the
 * allocator's largest cost.  So a segment that is one free block is also
 * in empty_ready (by size, largest first, then newest first, as the walk
 * of the newest-first segment list chose) or empty_pending (oldest free
 * first): O(log n) to keep and to find.  The trees follow the free trees:
 * a block entering one may make its segment empty, and a block leaving
 * one makes it not. */
static void empty_leave(lms__devcache_t *dc, lms__segment_t *sg) {
  (void)dc;
  if (sg->empty_in == NULL) return;
  lms__avl_remove(sg->empty_in, &sg->enode);
  sg->empty_in = NULL;
}

static void empty_enter(lms__devcache_t *dc, lms__block_t *b) {
  lms__segment_t *sg = b->seg;
  empty_leave(dc, sg);
  if (b != sg->first || b->next != NULL || b->allocated) return;
  lms__avl_t *t = !b->pending ? &dc->empty_ready
                  : b->event != NULL ? &dc->empty_pending
                                     : NULL;
  if (t == NULL) return;
  lms__avl_insert(t, &sg->enode);
  sg->empty_in = t;
}

static void free_insert(lms__devcache_t *dc, lms__block_t *b) {
  lms__avl_insert(tree_of(dc, b), &b->node);
  empty_enter(dc, b);
}

static void free_remove(lms__devcache_t *dc, lms__block_t *b) {
  lms__avl_remove(tree_of(dc, b), &b->node);
  empty_leave(dc, b->seg);
}

static int ready_free(const lms__block_t *b) {
  return b != NULL && !b->allocated && !b->pending;
}

/* Block a takes in its next neighbour n, which goes. */
static void absorb_next(lms__devcache_t *dc, lms__block_t *a) {
  lms__block_t *n = a->next;
  a->size += n->size;
  a->next = n->next;
  if (n->next) n->next->prev = a;
  seg_blocks(dc, n->seg, -1);
  free(n);
}

/* Merges the free ready block b (not in the tree) with free ready
 * neighbours and inserts the result into the free tree. */
static void coalesce_insert(lms__devcache_t *dc, lms__block_t *b) {
  if (ready_free(b->prev)) {
    b = b->prev;
    free_remove(dc, b);
    absorb_next(dc, b);
  }
  if (ready_free(b->next)) {
    free_remove(dc, b->next);
    absorb_next(dc, b);
  }
  free_insert(dc, b);
}

/* The pending block b's work is done: it becomes reusable everywhere. */
static void make_ready(lms__devcache_t *dc, lms__block_t *b) {
  free_remove(dc, b);
  pending_unlink(dc, b);
  event_put(dc, b->event);
  b->event = NULL;
  b->pending = 0;
  b->stream = NULL;
  coalesce_insert(dc, b);
}

/* Note [Pending blocks in stream order]
 * A block freed for a stream waits on an event recorded on that stream,
 * and a stream's events complete in the order they were recorded.  So the
 * pending list is walked oldest first, and once one block of a stream is
 * not ready, the newer blocks of that stream are not asked: a walk costs
 * the blocks made ready plus one query per stream, not one query per
 * pending block (with the host far ahead of the device, thousands).  Each
 * stream with pending blocks (up to PENDING_STREAMS of them) also keeps
 * its own list, oldest last, so the blocks of a stream found behind are
 * not even passed over: with one stream far behind and another with a
 * few blocks, a walk of the shared list passed every block of the first.
 * Past PENDING_STREAMS streams, the shared list is walked as before. */
static void process_pending(lms__devcache_t *dc) {
  if (!dc->pending_overflow) {
    for (int i = 0; i < PENDING_STREAMS; i++) {
      while (dc->pending_streams[i].n > 0) {
        lms__block_t *b = dc->pending_streams[i].oldest;
        lms_status_t st = dc->dev->ops->event_query(dc->dev, b->event);
        if (st == LMS_OK) {
          make_ready(dc, b); /* unlinks b */
          continue;
        }
        if (st != LMS_NOT_READY)
          device_error(dc, "event_query for a freed block");
        break;
      }
    }
    return;
  }
  void *waiting[PENDING_STREAMS];
  int nwaiting = 0;
  lms__block_t *newer;
  for (lms__block_t *b = dc->pending_tail; b != NULL; b = newer) {
    newer = b->pprev;
    if (b->event == NULL) continue;
    int skip = 0;
    for (int i = 0; i < nwaiting && !skip; i++) skip = waiting[i] == b->stream;
    if (skip) continue;
    lms_status_t st = dc->dev->ops->event_query(dc->dev, b->event);
    if (st == LMS_OK) {
      make_ready(dc, b);
      continue;
    }
    if (st != LMS_NOT_READY) device_error(dc, "event_query for a freed block");
    if (nwaiting < PENDING_STREAMS) waiting[nwaiting++] = b->stream;
  }
}

static int eligible(const lms__block_t *b, size_t size, void *stream) {
  if (!b->pending) return 1;
  return stream != NULL && b->stream == stream && b->size / 2 <= size;
}

/* Note [Keeping large and small apart]
 * A small block carved out of a large segment keeps the whole segment from
 * being returned, and a large request cut from a much larger block leaves
 * a remainder that fits nothing: either way the budget fragments until a
 * large chunk cannot come in although the bytes are free.  So, first, a
 * request takes only blocks of its own kind: small requests from small
 * segments, large ones from large blocks at most twice their size.  Only
 * when that and a new segment both fail is any block that fits taken. */
static int same_kind(const lms__devcache_t *dc, const lms__block_t *b,
                     size_t size) {
  int small_seg = b->seg->small;
  if (size <= dc->small_max) return small_seg;
  return !small_seg && b->size / 2 <= size;
}

/* The smallest block (by size, then address) of at least `size` and at
 * most `most` bytes in segments of one kind that the request may take:
 * the first ready one, or the first pending on its own stream (at most
 * twice the request, as eligible() says). */
static lms__block_t *fit_of_kind(lms__devcache_t *dc, size_t size,
                                 void *stream, int small, size_t most) {
  lms__segment_t kind = {.small = small};
  lms__block_t probe = {.seg = &kind, .size = size, .ptr = NULL};
  lms__block_t *r = NULL, *p = NULL;
  lms__avl_node_t *n = lms__avl_ceil(&dc->free_blocks, &probe.node);
  if (n != NULL) {
    r = LMS__CONTAINER_OF(n, lms__block_t, node);
    if ((r->seg->small != 0) != (small != 0) || r->size > most) r = NULL;
  }
  if (stream != NULL) {
    probe.stream = stream;
    n = lms__avl_ceil(&dc->pending_blocks, &probe.node);
    if (n != NULL) {
      p = LMS__CONTAINER_OF(n, lms__block_t, node);
      if (p->stream != stream || (p->seg->small != 0) != (small != 0) ||
          p->size > most || !eligible(p, size, stream))
        p = NULL;
    }
  }
  if (r == NULL || p == NULL) return r != NULL ? r : p;
  if (r->size != p->size) return r->size < p->size ? r : p;
  return r->ptr < p->ptr ? r : p;
}

/* Strict: of the request's own kind (Note [Keeping large and small
 * apart]), where past the largest block that kind may take (a small
 * segment, or twice the request) nothing more can do, so the walk stops
 * there.  Otherwise the smallest of either kind. */
static lms__block_t *find_fit(lms__devcache_t *dc, size_t size, void *stream,
                              int strict) {
  if (strict) {
    int small = size <= dc->small_max;
    size_t most = small ? dc->segment_unit
                  : size > SIZE_MAX / 2 ? SIZE_MAX
                                        : 2 * size;
    return fit_of_kind(dc, size, stream, small, most);
  }
  lms__block_t *a = fit_of_kind(dc, size, stream, 1, SIZE_MAX);
  lms__block_t *b = fit_of_kind(dc, size, stream, 0, SIZE_MAX);
  if (a == NULL || b == NULL) return a != NULL ? a : b;
  if (a->size != b->size) return a->size < b->size ? a : b;
  return a->ptr < b->ptr ? a : b;
}

/* Takes the free block b for `size` bytes on `stream`, splitting off the
 * rest when it is worth a block of its own. */
static lms_status_t take(lms__devcache_t *dc, lms__block_t *b, size_t size,
                         void *stream, int whole) {
  free_remove(dc, b);
  b->allocated = 1; /* before splitting, so the rest does not merge back */
  if (b->pending) {
    pending_unlink(dc, b);
    event_put(dc, b->event);
    b->event = NULL;
    b->pending = 0;
  } else if (!whole && b->size - size >= LMS__BLOCK_ROUND) {
    lms__block_t *rest = calloc(1, sizeof *rest);
    if (rest != NULL) {
      seg_blocks(dc, b->seg, 1);
      rest->seg = b->seg;
      rest->ptr = b->ptr + size;
      rest->size = b->size - size;
      rest->prev = b;
      rest->next = b->next;
      if (b->next) b->next->prev = rest;
      b->next = rest;
      b->size = size;
      coalesce_insert(dc, rest);
    }
  }
  b->stream = stream;
  b->seg->used += b->size;
  lms__avl_insert(&dc->used_blocks, &b->node);
  lms__stat_add(&dc->stats->device_allocated, (int64_t)b->size);
  return LMS_OK;
}

static uint64_t reserved(const lms__devcache_t *dc) {
  return (uint64_t)dc->stats->device_reserved.current;
}

/* Adds a segment big enough for `size` if the limit and the device allow. */
static lms_status_t grow(lms__devcache_t *dc, size_t size) {
  size_t gran = (size_t)dc->segment_unit;
  size_t seg = size <= dc->small_max
                   ? (gran > size ? gran : round_up(size, LMS__BLOCK_ROUND))
               : dc->paged ? round_up(size, LMS__BLOCK_ROUND)
                           : round_up(size, gran);
  if (!lms__budget_fits(reserved(dc), seg, dc->limit, 0)) seg = size;
  if (!lms__budget_fits(reserved(dc), seg, dc->limit, 0))
    return LMS_ERR_DEVICE_OOM;
  lms__segment_t *s = calloc(1, sizeof *s);
  lms__block_t *b = calloc(1, sizeof *b);
  if (s == NULL || b == NULL) {
    free(s);
    free(b);
    lms__errf(dc->err, "no host memory for allocator metadata");
    return LMS_ERR_HOST_OOM;
  }
  void *base = NULL;
  lms_status_t st = dc->dev->ops->dev_alloc(dc->dev, seg, &base);
  if (st != LMS_OK) {
    free(s);
    free(b);
    /* The device refusing memory the budget allows is counted even when
     * it is out of memory rather than broken: another process may hold
     * the rest. */
    if (st != LMS_ERR_DEVICE_OOM) device_error(dc, "dev_alloc");
    else lms__stat_add(&dc->stats->device_errors, 1);
    return st;
  }
  s->base = base;
  s->size = seg;
  s->small = size <= dc->small_max;
  s->seq = ++dc->segments_made;
  s->first = b;
  s->nblocks = 1;
  s->next = dc->segments;
  if (dc->segments) dc->segments->prev = s;
  dc->segments = s;
  b->seg = s;
  b->ptr = base;
  b->size = seg;
  free_insert(dc, b);
  lms__stat_add(&dc->stats->device_reserved, (int64_t)seg);
  lms__stat_add(&dc->stats->segments, 1);
  LMS_LOG(DEBUG, ALLOC, "segment of %zu bytes at %p", seg, base);
  return LMS_OK;
}

/* Adds to last_wait_ns how long `stream` will wait for `event`, as far
 * as the device can tell. */
static void note_wait(lms__devcache_t *dc, void *stream, void *event) {
  uint64_t ns = 0;
  if (dc->dev->ops->wait_cost != NULL &&
      dc->dev->ops->wait_cost(dc->dev, stream, event, &ns) == LMS_OK &&
      ns > dc->last_wait_ns)
    dc->last_wait_ns = ns;
}

/* The smallest pending block of the request's kind that holds `size`,
 * taken for `stream` after making it wait; NULL if none or the wait fails. */
static int claimable(const lms__devcache_t *dc, const lms__block_t *b,
                     size_t size) {
  /* Taken whole, so at most twice the request, as in eligible(). */
  return b->event != NULL && b->size >= size && b->size / 2 <= size &&
         same_kind(dc, b, size);
}

/* The smallest claimable block pending on `stream` (the oldest free of
 * those of that size), NULL if none: a walk of pending_blocks from the
 * first of the request's kind and size, which passes only blocks without
 * an event. */
static lms__block_t *claimable_on(const lms__devcache_t *dc, void *stream,
                                  size_t size) {
  lms__segment_t kind = {.small = size <= dc->small_max};
  lms__block_t probe = {.seg = &kind, .size = size, .ptr = NULL,
                        .stream = stream};
  for (lms__avl_node_t *n = lms__avl_ceil(&dc->pending_blocks, &probe.node);
       n != NULL; n = lms__avl_next(&dc->pending_blocks, n)) {
    lms__block_t *b = LMS__CONTAINER_OF(n, lms__block_t, node);
    if (b->stream != stream || (b->seg->small != 0) != (kind.small != 0) ||
        b->size / 2 > size)
      return NULL;
    if (claimable(dc, b, size)) return b;
  }
  return NULL;
}

/* Note [Claiming a pending block]: the smallest claimable block is the
 * smallest of each stream's, found in pending_blocks per stream with
 * pending blocks, O(log n) each; of one stream's, the oldest free (Note
 * [Oldest pending first]), and between streams the lower address.  The
 * pending list, every block on every stream, was walked instead, and at
 * 200,000 references an iteration that was a quarter of `lms sim`'s time.
 * Only with more streams than pending_streams has slots (pending_overflow)
 * is the list walked. */
static lms__block_t *claim_pending(lms__devcache_t *dc, size_t size,
                                   void *stream) {
  lms__block_t *best = NULL;
  if (dc->pending_overflow) {
    for (lms__block_t *b = dc->pending; b != NULL; b = b->pnext)
      if (claimable(dc, b, size) &&
          (best == NULL || b->size < best->size ||
           (b->size == best->size && b->ptr < best->ptr)))
        best = b;
  } else {
    for (int i = 0; i < PENDING_STREAMS; i++) {
      if (dc->pending_streams[i].n == 0) continue;
      lms__block_t *b = claimable_on(dc, dc->pending_streams[i].stream, size);
      if (b != NULL && (best == NULL || b->size < best->size ||
                        (b->size == best->size && b->ptr < best->ptr)))
        best = b;
    }
  }
  if (best == NULL) return NULL;
  if (best->stream != stream) note_wait(dc, stream, best->event);
  if (best->stream != stream &&
      dc->dev->ops->stream_wait(dc->dev, stream, best->event) != LMS_OK) {
    device_error(dc, "stream_wait for a pending block");
    return NULL;
  }
  return best;
}

/* Note [Stream-ordered reuse] continued: neighbouring blocks freed by
 * different evictions stay apart while pending, so a chunk larger than
 * any one of them would make the host wait for all of them.  Instead a run
 * of adjacent unallocated blocks (ready, or pending with an event) whose
 * sizes add up to the request is merged for `stream`, after `stream` is
 * made to wait for every pending one.  The run ends at the first block
 * that makes it big enough; if that block was pending, the merged block
 * is taken whole rather than split, so that no part still pending for
 * other streams becomes free for them.  Returns the merged block, in the
 * free tree and marked ready only for the caller's take(), or NULL. */
static int runnable(const lms__block_t *b) {
  return b != NULL && !b->allocated && (!b->pending || b->event != NULL);
}

static lms__block_t *claim_run(lms__devcache_t *dc, size_t size, void *stream,
                               int *whole) {
  lms__block_t *best = NULL, *best_end = NULL;
  size_t best_total = 0;
  for (lms__segment_t *seg = dc->segments; seg != NULL; seg = seg->next) {
    if ((size <= dc->small_max) != (seg->small != 0)) continue;
    for (lms__block_t *start = seg->first; start != NULL; start = start->next) {
      if (!runnable(start)) continue;
      size_t total = 0;
      lms__block_t *e = start;
      for (; e != NULL && runnable(e); e = e->next) {
        total += e->size;
        if (total >= size) break;
      }
      if (e == NULL || !runnable(e) || total < size) continue;
      /* Taken whole, a run must not be much more than asked for. */
      if (e->pending && total / 2 > size) continue;
      if (best == NULL || total < best_total) {
        best = start;
        best_end = e;
        best_total = total;
      }
    }
  }
  if (best == NULL) return NULL;
  for (lms__block_t *b = best;; b = b->next) {
    if (b->pending && b->stream != stream) note_wait(dc, stream, b->event);
    if (b->pending && b->stream != stream &&
        dc->dev->ops->stream_wait(dc->dev, stream, b->event) != LMS_OK) {
      device_error(dc, "stream_wait for a run of pending blocks");
      return NULL;
    }
    if (b == best_end) break;
  }
  *whole = best_end->pending;
  lms__block_t *stop = best_end->next;
  for (lms__block_t *b = best; b != stop; b = b->next) {
    free_remove(dc, b);
    if (b->pending) {
      pending_unlink(dc, b);
      event_put(dc, b->event);
      b->event = NULL;
      b->pending = 0;
    }
    b->stream = NULL;
  }
  while (best->next != stop) absorb_next(dc, best);
  free_insert(dc, best);
  return best;
}

static lms_status_t alloc_impl(lms__devcache_t *dc, size_t size, void *stream,
                               int may_block, int relaxed, void **out);

/* ---- Paged large blocks --------------------------------------------------- */

/* Note [Paged large blocks]
 * Split segments fragment: after enough evictions the free bytes are there
 * but no stretch holds a large chunk, and a 4 GB chunk can need most of
 * the device emptied before segments can be returned and one grown.  In
 * paged mode every large request gets a segment of its own, of exactly its
 * size rounded to LMS__BLOCK_ROUND, never split or merged.  A free one of
 * that very size is reused (stream-ordered like any block); otherwise free
 * segments are returned to the device until the budget has room for a new
 * one.  A segment still pending for other streams is returned only for a
 * request with a stream, after that stream is made to wait for it: the
 * new memory is then used only after every use of the old, as with
 * cudaFreeAsync and cudaMallocAsync.  So a large chunk needs free bytes,
 * not a free stretch: the device's own allocator finds the stretch (the
 * simulated device has twice its capacity in addresses, and CUDA's
 * stream-ordered pool maps pages).  Small requests share small segments
 * as before.
 *
 * Note [What the budget wastes]
 * The budget counts segments.  A large block wastes less than
 * LMS__BLOCK_ROUND bytes of it: an earlier version rounded large segments
 * to the 2 MiB segment unit and reused free ones up to half larger, so 100
 * chunks of 2.25 MiB needed 400 MiB of budget, and programs that fit were
 * refused.  A request of exactly a free segment's size reuses it; any
 * other size returns free segments and grows one of its own, which costs
 * a device call but no budget.  Small requests, up to small_max (in paged
 * mode 1/16 of the segment unit, at least 16 KiB), share segments of the
 * segment unit; a full one wastes less than one request, so under 1/16 of
 * itself, and a segment left holding blocks nothing can evict wastes its
 * free part, at most one segment unit each.  Before small_max was lowered
 * from 1 MiB, two 768 KiB chunks took a 2 MiB segment: a quarter wasted.  The physical pages behind the
 * budget are the device allocator's business: CUDA's pool rounds its own
 * reservations to 2 MiB pages and packs our segments into them. */

/* Note [Fresh room before a wait]
 * In paged mode a request with no free segment of its size, ready or its
 * own stream's, took one of that size pending on another stream, and its
 * stream waited for that stream's work on the block: most often a chunk's
 * write-back, on the copy stream out.  The budget may have had room all
 * along.  In a recurrent network's forward each step writes 3 MB of new
 * state, and at each boundary the free reserve (Note [Free reserve] in
 * graph/plan.c) evicts 3 MB, a dirty 1 MB chunk among it, while 79 MB of
 * the budget are free: the step's new 1 MB chunk took that victim's block
 * and waited for its write-back, 26 us of every 86 us step.  Now a request
 * of at least LMS__SMALL_REQUEST (1 MiB) first makes room for a segment of
 * its own, returning empty ready segments (device calls, no waiting) and
 * growing one if the budget then allows, and takes a block pending on
 * another stream only where none can be had, as split segments always did
 * (Note [Stream-ordered reuse]).  Copies in gain too: a prefetch no longer
 * waits for a victim's write-back where the budget has room.  Smaller
 * requests keep taking the pending block: on GoogleNet's training over
 * pcie3 two 128.5 KiB requests of the compute stream an iteration taking
 * fresh room made the window's third iteration 27 % slower (1619.6 ->
 * 2050.1 ms; the settled iteration, the plan's, is 3.8 % faster with or
 * without them); why two small blocks cost that much was not traced.
 * `lms sim` over the thirteen traces of bench/workloads/gen_traces.py at
 * 2x, 4x and 10x over four links
 * (bench/results/2026-11-29-sim-fresh-room.md): 34 of 156 runs faster
 * by more than 0.3 %, up to 5.8 % (the LSTM at 2x over pcie3; at 4x over
 * pcie5 281.2 -> 269.8 ms, LRU's 268.0), 2 slower, by 0.6 % and 1.5 %;
 * with waits measured after the fact, 36 faster and 4 slower, GPT-2 at
 * 10x over nvlink2 by 5.1 %, where the trial now keeps the window. */

/* Returns the segment of the whole-segment free block b to the device;
 * a pending b only for a `stream`, which first waits for it. */
static lms_status_t release_segment(lms__devcache_t *dc, lms__block_t *b,
                                    void *stream) {
  lms__segment_t *sg = b->seg;
  /* Note [Stream-ordered segment release]: a device whose allocator is
   * stream-ordered takes a pending segment back after its event, so no
   * stream has to wait for it and none need be given. */
  int after = b->pending && b->event != NULL &&
              dc->dev->ops->dev_free_after != NULL;
  if (b->pending && !after) {
    if (b->event == NULL || stream == NULL) return LMS_NOT_READY;
    if (b->stream != stream) {
      note_wait(dc, stream, b->event);
      if (dc->dev->ops->stream_wait(dc->dev, stream, b->event) != LMS_OK) {
        device_error(dc, "stream_wait for a returned segment");
        return LMS_ERR_DEVICE;
      }
    }
  }
  free_remove(dc, b);
  lms_status_t fst =
      after ? dc->dev->ops->dev_free_after(dc->dev, sg->base, b->event)
            : dc->dev->ops->dev_free(dc->dev, sg->base);
  if (fst != LMS_OK) {
    device_error(dc, after ? "dev_free_after" : "dev_free");
    free_insert(dc, b);
    return LMS_ERR_DEVICE;
  }
  if (b->pending) {
    pending_unlink(dc, b);
    event_put(dc, b->event);
  }
  if (sg->prev) sg->prev->next = sg->next;
  else dc->segments = sg->next;
  if (sg->next) sg->next->prev = sg->prev;
  lms__stat_add(&dc->stats->device_reserved, -(int64_t)sg->size);
  lms__stat_add(&dc->stats->segments, -1);
  free(b);
  free(sg);
  return LMS_OK;
}

/* A free whole-segment block to return: a ready one first, the largest;
 * else, for a stream, a pending one. */
static lms__block_t *segment_to_return(lms__devcache_t *dc, void *stream) {
  /* Note [Empty segments]. */
  lms__avl_node_t *n = lms__avl_first(&dc->empty_ready);
  if (n == NULL && stream != NULL) n = lms__avl_first(&dc->empty_pending);
  return n != NULL ? LMS__CONTAINER_OF(n, lms__segment_t, enode)->first : NULL;
}

/* The free whole large segment of exactly `want` bytes first in `tree`:
 * the lowest address of the ready ones, the oldest free of those pending
 * on `stream` (with_event: only those that have an event to wait on). */
static lms__block_t *exact_segment(lms__devcache_t *dc, lms__avl_t *tree,
                                   void *stream, size_t want, int with_event) {
  (void)dc;
  lms__segment_t large = {.small = 0};
  lms__block_t probe = {.seg = &large, .size = want, .ptr = NULL,
                        .stream = stream};
  for (lms__avl_node_t *n = lms__avl_ceil(tree, &probe.node); n != NULL;
       n = lms__avl_next(tree, n)) {
    lms__block_t *c = LMS__CONTAINER_OF(n, lms__block_t, node);
    if (c->size != want || c->seg->small || c->stream != stream) break;
    if (c->next != NULL || c != c->seg->first) continue;
    if (with_event && c->event == NULL) continue;
    return c;
  }
  return NULL;
}

static lms_status_t paged_alloc(lms__devcache_t *dc, size_t size, void *stream,
                                int may_block, void **out) {
  size_t want = round_up(size, LMS__BLOCK_ROUND);
  process_pending(dc);
  /* A free segment of this very size, ready or pending. */
  lms__block_t *b = exact_segment(dc, &dc->free_blocks, NULL, want, 0);
  lms__block_t *mine = stream != NULL
      ? exact_segment(dc, &dc->pending_blocks, stream, want, 0) : NULL;
  if (mine != NULL && (b == NULL || mine->ptr < b->ptr)) b = mine;
  /* Note [Fresh room before a wait]. */
  if (b == NULL && stream != NULL && want >= LMS__SMALL_REQUEST) {
    lms__avl_node_t *n;
    while (!lms__budget_fits(reserved(dc), want, dc->limit, 0) &&
           (n = lms__avl_first(&dc->empty_ready)) != NULL)
      LMS_CHECK(release_segment(
          dc, LMS__CONTAINER_OF(n, lms__segment_t, enode)->first, stream));
    if (lms__budget_fits(reserved(dc), want, dc->limit, 0)) {
      lms_status_t st = grow(dc, want);
      if (st == LMS_OK) b = dc->segments->first;
      else if (st != LMS_ERR_DEVICE_OOM) return st;
    }
  }
  /* Else one pending on another stream, which this one then waits for:
   * the lowest address among each stream's first. */
  lms__block_t *other = NULL;
  for (int i = 0; b == NULL && stream != NULL && i < PENDING_STREAMS; i++) {
    if (dc->pending_streams[i].n == 0) continue;
    lms__block_t *c = exact_segment(dc, &dc->pending_blocks,
                                    dc->pending_streams[i].stream, want, 1);
    if (c != NULL && (other == NULL || c->ptr < other->ptr)) other = c;
  }
  if (b == NULL) b = other;
  if (b != NULL && b->pending && b->stream != stream) {
    note_wait(dc, stream, b->event);
    if (dc->dev->ops->stream_wait(dc->dev, stream, b->event) != LMS_OK) {
      device_error(dc, "stream_wait for a pending block");
      b = NULL;
    }
  }
  while (b == NULL) {
    if (lms__budget_fits(reserved(dc), want, dc->limit, 0)) {
      lms_status_t st = grow(dc, want);
      if (st != LMS_OK) return st;
      b = dc->segments->first; /* grow puts the new segment first */
      break;
    }
    lms__block_t *r = segment_to_return(dc, stream);
    if (r == NULL) {
      if (!may_block || dc->pending == NULL) return LMS_ERR_DEVICE_OOM;
      lms__devcache_sync(dc);
      may_block = 0;
      continue;
    }
    LMS_CHECK(release_segment(dc, r, stream));
  }
  take(dc, b, want, stream, 1);
  *out = b->ptr;
  return LMS_OK;
}

lms_status_t lms__devcache_alloc(lms__devcache_t *dc, size_t size,
                                 void *stream, void **out) {
  return alloc_impl(dc, size, stream, 1, 1, out);
}

lms_status_t lms__devcache_alloc_strict(lms__devcache_t *dc, size_t size,
                                        void *stream, void **out) {
  return alloc_impl(dc, size, stream, 0, 0, out);
}

static lms_status_t alloc_impl(lms__devcache_t *dc, size_t size, void *stream,
                               int may_block, int relaxed, void **out) {
  dc->last_wait_ns = 0;
  if (size == 0 || size > SIZE_MAX - LMS__SMALL_SEGMENT) {
    lms__errf(dc->err, "device allocation of %zu bytes: accepted sizes are "
                       "1 byte up to the device limit", size);
    return LMS_ERR_INVALID;
  }
  if (dc->paged && size > dc->small_max) {
    lms_status_t st = paged_alloc(dc, size, stream, may_block, out);
    if (st == LMS_ERR_DEVICE_OOM)
      lms__errf(dc->err, "device out of memory: asked for %zu bytes; %llu of "
                "the %llu byte limit are in use", size,
                (unsigned long long)dc->stats->device_allocated.current,
                (unsigned long long)dc->limit);
    return st;
  }
  size_t want = round_up(size, LMS__BLOCK_ROUND);
  process_pending(dc);
  lms__block_t *b = find_fit(dc, want, stream, 1);
  lms_status_t st = LMS_OK;
  if (b == NULL) {
    st = grow(dc, want);
    /* A new segment was made for this request: it fits whatever its kind. */
    if (st == LMS_OK) b = find_fit(dc, want, stream, 1);
    if (st == LMS_OK && b == NULL) b = find_fit(dc, want, stream, 0);
  }
  int whole = 0;
  if (b == NULL && st != LMS_ERR_DEVICE && stream != NULL)
    b = claim_pending(dc, want, stream);
  if (b == NULL && st != LMS_ERR_DEVICE && stream != NULL) {
    b = claim_run(dc, want, stream, &whole);
  }
  if (b == NULL && st != LMS_ERR_DEVICE && dc->pending != NULL && may_block) {
    /* Wait for blocks still in flight on other streams, then look again. */
    lms__devcache_sync(dc);
    b = find_fit(dc, want, stream, 1);
  }
  if (b == NULL && st != LMS_ERR_DEVICE) {
    /* Cached segments with nothing in use may make room for one that
     * fits; failing that, any block that fits will do. */
    lms__devcache_release_unused(dc);
    st = grow(dc, want);
    b = find_fit(dc, want, stream, st != LMS_OK && relaxed ? 0 : 1);
    if (st == LMS_OK && b == NULL) b = find_fit(dc, want, stream, 0);
  }
  if (b == NULL) {
    if (st == LMS_OK || st == LMS_ERR_DEVICE_OOM) {
      st = LMS_ERR_DEVICE_OOM;
      lms__errf(dc->err,
                "device out of memory: asked for %zu bytes; %llu of the %llu "
                "byte limit are in use, %llu held in free blocks (largest "
                "free block %.0f%% of them)",
                size, (unsigned long long)dc->stats->device_allocated.current,
                (unsigned long long)dc->limit,
                (unsigned long long)(reserved(dc) -
                                     (uint64_t)dc->stats->device_allocated.current),
                100.0 * (1.0 - lms__devcache_fragmentation(dc)));
    }
    return st;
  }
  take(dc, b, want, stream, whole);
  *out = b->ptr;
  return LMS_OK;
}

static lms__block_t *find_used(const lms__devcache_t *dc, const void *ptr) {
  lms__block_t probe = {.ptr = (char *)ptr};
  lms__avl_node_t *n = lms__avl_ceil(&dc->used_blocks, &probe.node);
  if (n == NULL) return NULL;
  lms__block_t *b = LMS__CONTAINER_OF(n, lms__block_t, node);
  return b->ptr == ptr ? b : NULL;
}

void lms__devcache_visit(const lms__devcache_t *dc, int small,
                         size_t min_segment, lms__block_visit_fn fn,
                         void *arg) {
  for (lms__segment_t *seg = dc->segments; seg != NULL; seg = seg->next) {
    if ((seg->small != 0) != (small != 0) || seg->size < min_segment) continue;
    for (lms__block_t *b = seg->first; b != NULL; b = b->next)
      fn(arg, b->ptr, b->size, b->allocated, runnable(b), b == seg->first,
         b->allocated ? b->owner : NULL);
  }
}

int lms__devcache_in_large(const lms__devcache_t *dc, const void *ptr,
                           uint64_t *seq) {
  const lms__block_t *b = find_used(dc, ptr);
  *seq = b != NULL ? b->seg->seq : 0;
  return b != NULL && !b->seg->small;
}

int lms__devcache_whole_large(const lms__devcache_t *dc, size_t size,
                              int *found) {
  *found = 0;
  if (!dc->paged || dc->large_split || dc->pending_overflow) return 0;
  lms__segment_t large = {.small = 0};
  lms__block_t probe = {.seg = &large, .size = size, .ptr = NULL};
  lms__avl_node_t *n = lms__avl_ceil(&dc->free_blocks, &probe.node);
  if (n != NULL) {
    *found = 1; /* large blocks sort after small ones: any is large */
    return 1;
  }
  for (int i = 0; i < PENDING_STREAMS && !*found; i++) {
    if (dc->pending_streams[i].n == 0) continue;
    probe.stream = dc->pending_streams[i].stream;
    for (n = lms__avl_ceil(&dc->pending_blocks, &probe.node); n != NULL;
         n = lms__avl_next(&dc->pending_blocks, n)) {
      const lms__block_t *b = LMS__CONTAINER_OF(n, lms__block_t, node);
      if (b->stream != probe.stream) break;
      if (runnable(b)) {
        *found = 1;
        break;
      }
    }
  }
  return 1;
}

void lms__devcache_set_owner(lms__devcache_t *dc, const void *ptr,
                             void *owner) {
  lms__block_t *b = find_used(dc, ptr);
  if (b != NULL) b->owner = owner;
}

size_t lms__devcache_block_size(const lms__devcache_t *dc, const void *ptr) {
  const lms__block_t *b = find_used(dc, ptr);
  return b ? b->size : 0;
}

lms_status_t lms__devcache_free(lms__devcache_t *dc, void *ptr, void *stream) {
  lms__block_t *b = find_used(dc, ptr);
  if (b == NULL) {
    lms__errf(dc->err, "free of %p: not a block of this device cache", ptr);
    return LMS_ERR_INVALID;
  }
  lms__avl_remove(&dc->used_blocks, &b->node);
  b->allocated = 0;
  b->owner = NULL;
  b->seg->used -= b->size;
  lms__stat_add(&dc->stats->device_allocated, -(int64_t)b->size);
  if (stream == NULL) {
    b->stream = NULL;
    coalesce_insert(dc, b);
    return LMS_OK;
  }
  void *ev = event_get(dc);
  if (ev != NULL && dc->dev->ops->event_record(dc->dev, ev, stream) != LMS_OK) {
    device_error(dc, "event_record for a freed block");
    event_put(dc, ev);
    ev = NULL;
  }
  b->pending = 1;
  b->stream = stream;
  b->event = ev;
  b->freed = ++dc->frees;
  pending_push(dc, b);
  free_insert(dc, b);
  return LMS_OK;
}

lms_status_t lms__devcache_sync(lms__devcache_t *dc) {
  lms_status_t result = LMS_OK;
  lms__block_t *next;
  for (lms__block_t *b = dc->pending; b != NULL; b = next) {
    next = b->pnext;
    lms_status_t st =
        b->event ? dc->dev->ops->event_sync(dc->dev, b->event)
                 : dc->dev->ops->stream_sync(dc->dev, b->stream);
    if (st == LMS_OK) {
      make_ready(dc, b);
    } else {
      device_error(dc, b->event ? "event_sync" : "stream_sync");
      result = st;
    }
  }
  return result;
}

/* A segment that is one free ready block: nothing in it, nothing pending. */
static int unused(const lms__segment_t *s) {
  return s->used == 0 && s->first->next == NULL && ready_free(s->first);
}

lms_status_t lms__devcache_release_unused(lms__devcache_t *dc) {
  int failed = 0;
  lms__segment_t *s = dc->segments;
  while (s != NULL) {
    lms__segment_t *sg = s;
    s = s->next; /* sg may be freed */
    if (unused(sg)) failed |= release_segment(dc, sg->first, NULL) != LMS_OK;
  }
  return failed ? LMS_ERR_DEVICE : LMS_OK;
}

double lms__devcache_fragmentation(const lms__devcache_t *dc) {
  uint64_t free_bytes =
      reserved(dc) - (uint64_t)dc->stats->device_allocated.current;
  if (free_bytes == 0) return 0.0;
  size_t largest = 0;
  for (lms__segment_t *s = dc->segments; s != NULL; s = s->next)
    for (lms__block_t *b = s->first; b != NULL; b = b->next)
      if (!b->allocated && b->size > largest) largest = b->size;
  return 1.0 - (double)largest / (double)free_bytes;
}

void lms__devcache_fini(lms__devcache_t *dc) {
  lms__segment_t *next;
  for (lms__segment_t *s = dc->segments; s != NULL; s = next) {
    next = s->next;
    lms__block_t *bn;
    for (lms__block_t *b = s->first; b != NULL; b = bn) {
      bn = b->next;
      if (b->event) dc->dev->ops->event_destroy(dc->dev, b->event);
      free(b);
    }
    if (dc->dev->ops->dev_free(dc->dev, s->base) != LMS_OK)
      LMS_LOG(WARN, ALLOC, "dev_free at exit: %s", dc->dev->last_error);
    lms__stat_add(&dc->stats->device_reserved, -(int64_t)s->size);
    lms__stat_add(&dc->stats->segments, -1);
    free(s);
  }
  lms__evpool_fini(&dc->events);
  dc->segments = NULL;
  dc->pending = dc->pending_tail = NULL;
  lms__avl_init(&dc->pending_blocks, cmp_pending);
  memset(dc->pending_streams, 0, sizeof dc->pending_streams);
  dc->pending_overflow = 0;
  dc->large_split = 0;
  lms__avl_init(&dc->free_blocks, cmp_free);
  lms__avl_init(&dc->pending_blocks, cmp_pending);
  lms__avl_init(&dc->used_blocks, cmp_used);
  lms__avl_init(&dc->empty_ready, cmp_empty);
  lms__avl_init(&dc->empty_pending, cmp_empty_pending);
}

int lms__devcache_check(const lms__devcache_t *dc) {
  size_t nfree = 0, nused = 0, nempty = 0;
  uint64_t res = 0, alloc = 0;
  for (const lms__segment_t *s = dc->segments; s != NULL; s = s->next) {
    char *at = s->base;
    size_t used = 0;
    for (const lms__block_t *b = s->first; b != NULL; b = b->next) {
      if (b->ptr != at || b->seg != s) return -1;
      if (b->next && b->next->prev != b) return -2;
      if (!b->allocated && !b->pending && ready_free(b->next)) return -3;
      at += b->size;
      if (b->allocated) {
        nused++;
        used += b->size;
      } else {
        nfree++;
      }
    }
    if (at != s->base + s->size || used != s->used) return -4;
    const lms__block_t *f = s->first;
    const lms__avl_t *want =
        f->next != NULL || f->allocated ? NULL
        : !f->pending                   ? &dc->empty_ready
        : f->event != NULL              ? &dc->empty_pending
                                        : NULL;
    if (s->empty_in != want) return -8;
    nempty += want != NULL;
    res += s->size;
    alloc += used;
  }
  if (nfree != dc->free_blocks.count + dc->pending_blocks.count ||
      nused != dc->used_blocks.count)
    return -5;
  if (lms__avl_check(&dc->free_blocks) ||
      lms__avl_check(&dc->pending_blocks) || lms__avl_check(&dc->used_blocks))
    return -6;
  if (res != (uint64_t)dc->stats->device_reserved.current ||
      alloc != (uint64_t)dc->stats->device_allocated.current)
    return -7;
  if (nempty != dc->empty_ready.count + dc->empty_pending.count ||
      lms__avl_check(&dc->empty_ready) || lms__avl_check(&dc->empty_pending))
    return -8;
  /* Each stream's pending list holds its counted blocks, oldest last. */
  for (int i = 0; i < PENDING_STREAMS; i++) {
    size_t n = 0;
    const lms__block_t *prev = NULL;
    for (const lms__block_t *b = dc->pending_streams[i].newest; b != NULL;
         b = b->snext) {
      if (b->slot != i + 1 || !b->pending || b->event == NULL ||
          b->stream != dc->pending_streams[i].stream || b->sprev != prev)
        return -9;
      prev = b;
      n++;
    }
    if (n != dc->pending_streams[i].n || dc->pending_streams[i].oldest != prev)
      return -9;
  }
  return 0;
}
