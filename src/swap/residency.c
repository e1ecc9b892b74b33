/* residency.c - chunks, their homes, and moving them on demand.
 *
 * Acquire brings a host-homed chunk to the device if it is not there: a
 * device block from the caching allocator (evicting least recently released
 * chunks while the budget is short), a copy on the host-to-device stream,
 * an event after it, and the caller's stream waiting on that event.
 * Release records, per stream, an event after the work enqueued so far;
 * eviction orders its copy and the block's reuse after those events.
 *
 * Note [Why clean chunks are dropped]
 * A chunk that was only read since it came in still equals its home, so
 * evicting it needs no copy: its block is returned and the home stays
 * valid.  Only a chunk acquired for writing is copied back, on the
 * device-to-host stream, after the writers' events.
 *
 * Note [Failure leaves things as they were]
 * Every step that can fail comes before the state change it guards: a
 * swap-in's block is returned if its copy or event fails, and the chunk
 * stays on the host; an eviction whose copy fails leaves the chunk resident
 * and dirty, its device copy intact; a release whose event cannot be
 * recorded stays unreleased so that the caller can retry.  A home is never
 * written except by a write-back of a dirty device copy, so no failure can
 * change a chunk's bytes. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dlist.h"
#include "core/log.h"
#include "core/stats.h"
#include "core/victim.h"
#include "swap/swap.h"

int lms__swap_reference;
/* Counted atomically: contexts on other threads count too. */
uint64_t lms__swap_indexed_ranges;

static lms_status_t device_error(lms__swap_t *s, lms_status_t st,
                                 const char *what) {
  lms__stat_add(&s->stats.device_errors, 1);
  lms__errf(s->err, "%s failed: %s", what, s->dev->last_error);
  LMS_LOG(WARN, SWAP, "%s failed: %s", what, s->dev->last_error);
  return st;
}

/* 1 if the event's work is known to be done.  A failed query counts as a
 * device error and as "not yet": waiting is always safe. */
static int event_done(lms__swap_t *s, void *ev, const char *what) {
  lms_status_t st = s->dev->ops->event_query(s->dev, ev);
  if (st == LMS_OK) return 1;
  if (st != LMS_NOT_READY) device_error(s, st, what);
  return 0;
}

int lms__swap_is_chunk(const lms_chunk_t *c) {
  return c != NULL && c->magic == LMS__CHUNK_MAGIC;
}

/* ---- LRU ----------------------------------------------------------------- */

/* Note [Victims by next use]
 * Furthest-next-use victims need the unpinned resident chunks in order of
 * next use, and scanning them all at every eviction is O(n) an eviction:
 * with tens of thousands of chunks a step, the simulator spent most of
 * its time there.  Under a learned or declared schedule a chunk's next
 * use, as a step number, changes only when the chunk is used (the use
 * passes), when it takes another role (bound to another key), or when an
 * iteration begins (a chunk past its last use comes round again); so the
 * chunks are also kept in an AVL tree by (next use, furthest first; then
 * the order they joined the LRU list), keyed when they join it and
 * re-keyed by the planner at each step boundary for the chunks the step
 * used, and all of them when an iteration begins.  Victim choice walks it
 * from the furthest: O(log n) an eviction plus the chunks it passes over
 * (those still in use by the device, and those prefetched).  Without a
 * schedule the list is scanned as before. */
static int cmp_use(const lms__avl_node_t *a, const lms__avl_node_t *b) {
  const lms_chunk_t *x = LMS__CONTAINER_OF(a, lms_chunk_t, use_node);
  const lms_chunk_t *y = LMS__CONTAINER_OF(b, lms_chunk_t, use_node);
  if (x->use_key != y->use_key) return x->use_key > y->use_key ? -1 : 1;
  return x->lru_tick < y->lru_tick ? -1 : x->lru_tick > y->lru_tick;
}

/* A chunk is in the index iff it carries the index's generation, so
 * dropping the whole index is O(1); it is built when a victim is next
 * wanted, not when the schedule changes (a program's setup can relearn
 * thousands of times with nothing to evict). */
static int indexed(const lms__swap_t *s, const lms_chunk_t *c) {
  return s->index_built && c->index_gen == s->index_gen;
}

/* By size, clean first, then the newest segment (by_size); with `use`,
 * the furthest next use before the segment (by_size_use). */
static int cmp_by_size(const lms_chunk_t *x, const lms_chunk_t *y, int use) {
  if (x->size != y->size) return x->size < y->size ? -1 : 1;
  if (x->dirty != y->dirty) return x->dirty ? 1 : -1;
  if (use && x->use_key != y->use_key) return x->use_key > y->use_key ? -1 : 1;
  if (x->seg_seq != y->seg_seq) return x->seg_seq > y->seg_seq ? -1 : 1;
  return x->serial < y->serial ? -1 : x->serial > y->serial;
}

static int cmp_size(const lms__avl_node_t *a, const lms__avl_node_t *b) {
  return cmp_by_size(LMS__CONTAINER_OF(a, lms_chunk_t, size_node),
                     LMS__CONTAINER_OF(b, lms_chunk_t, size_node), 0);
}

static int cmp_sizeu(const lms__avl_node_t *a, const lms__avl_node_t *b) {
  return cmp_by_size(LMS__CONTAINER_OF(a, lms_chunk_t, sizeu_node),
                     LMS__CONTAINER_OF(b, lms_chunk_t, sizeu_node), 1);
}

static void index_put(lms__swap_t *s, lms_chunk_t *c) {
  if (!s->index_built) return;
  c->use_key = s->next_use(s->next_use_arg, c);
  c->index_gen = s->index_gen;
  c->in_sizeu = 0;
  lms__avl_insert(&s->by_use, &c->use_node);
  if (c->seg_large) {
    c->in_sizeu = 1;
    lms__avl_insert(&s->by_size_use, &c->sizeu_node);
  }
}

static void index_drop(lms__swap_t *s, lms_chunk_t *c) {
  if (!indexed(s, c)) return;
  lms__avl_remove(&s->by_use, &c->use_node);
  if (c->in_sizeu) lms__avl_remove(&s->by_size_use, &c->sizeu_node);
  c->in_sizeu = 0;
  c->index_gen = 0;
}

/* Marks c's device copy clean, keeping by_size and by_size_use in order. */
static void set_clean(lms__swap_t *s, lms_chunk_t *c) {
  if (!c->dirty) return;
  int in_size = c->in_lru && c->seg_large;
  int in_sizeu = indexed(s, c) && c->in_sizeu;
  if (in_size) lms__avl_remove(&s->by_size, &c->size_node);
  if (in_sizeu) lms__avl_remove(&s->by_size_use, &c->sizeu_node);
  c->dirty = 0;
  if (in_size) lms__avl_insert(&s->by_size, &c->size_node);
  if (in_sizeu) lms__avl_insert(&s->by_size_use, &c->sizeu_node);
}

void lms__swap_use_index(lms__swap_t *s, int on) {
  lms__avl_init(&s->by_use, cmp_use);
  lms__avl_init(&s->by_size_use, cmp_sizeu);
  s->index_gen++;
  s->index_built = 0;
  s->use_index = on && s->next_use != NULL;
}

static void build_index(lms__swap_t *s) {
  if (s->index_built) return;
  s->index_built = 1;
  for (lms_chunk_t *c = s->lru_head; c != NULL; c = c->lru_next)
    index_put(s, c);
}

void lms__swap_rekey(lms__swap_t *s, lms_chunk_t *c) {
  if (!indexed(s, c)) return;
  index_drop(s, c);
  index_put(s, c);
}

static void lru_push(lms__swap_t *s, lms_chunk_t *c) {
  c->lru_tick = ++s->lru_ticks;
  LMS__DLIST_PUSH_BACK(s->lru_head, s->lru_tail, c, lru_prev, lru_next);
  c->in_lru = 1;
  if (c->seg_large) lms__avl_insert(&s->by_size, &c->size_node);
  index_put(s, c);
}

static void lru_remove(lms__swap_t *s, lms_chunk_t *c) {
  if (!c->in_lru) return;
  LMS__DLIST_UNLINK(s->lru_head, s->lru_tail, c, lru_prev, lru_next);
  c->in_lru = 0;
  if (c->seg_large) lms__avl_remove(&s->by_size, &c->size_node);
  index_drop(s, c);
}

/* ---- Setup --------------------------------------------------------------- */

lms_status_t lms__swap_init(lms__swap_t *s, lms_dev_t *dev,
                            const lms__swap_config_t *cfg, char *err) {
  memset(s, 0, sizeof *s);
  lms__avl_init(&s->by_use, cmp_use);
  lms__avl_init(&s->by_size, cmp_size);
  lms__avl_init(&s->by_size_use, cmp_sizeu);
  s->index_gen = 1;
  s->dev = dev;
  s->err = err;
  s->placement = cfg->placement;
  s->policy = cfg->policy;
  s->piece = cfg->piece;
  s->piece_div = cfg->piece_div ? cfg->piece_div : LMS__PIECE_DIV;
  s->events.dev = dev;
  s->timed_events.dev = dev;
  s->timed_events.timed = 1;
  s->stats.version = LMS_STATS_VERSION;
  s->stats.device_limit = cfg->placement.capacity;
  s->stats.host_limit = cfg->host_limit;
  lms__registry_init(&s->registry);
  lms__devcache_init(&s->cache, dev, cfg->placement.capacity, &s->stats, err);
  /* Note [Segments of a small budget]: 2 MiB segments suit a GPU's
   * gigabytes, but under a budget of a few MiB (tests, small limits) one
   * of them is a large share of it, lost to rounding.  The unit shrinks
   * with the budget, down to 64 KiB. */
  uint64_t unit = cfg->placement.capacity / 32 / LMS__BLOCK_ROUND * LMS__BLOCK_ROUND;
  if (unit < (64u << 10)) unit = 64u << 10;
  if (unit < s->cache.segment_unit) s->cache.segment_unit = unit;
  s->cache.paged = 1;
  /* Note [What the budget wastes] in alloc/devcache.c. */
  s->cache.small_max = (size_t)s->cache.segment_unit / 16;
  if (s->cache.small_max < (16u << 10)) s->cache.small_max = 16u << 10;
  lms_status_t st = lms__hostpool_create(dev, cfg->host_limit, &s->pool, err);
  if (st != LMS_OK) return st;
  if (cfg->node_host_limit != 0) {
    st = lms__node_ledger_join(cfg->node_ledger, cfg->node_host_limit,
                               &s->node, err);
    if (st == LMS_OK) st = lms__hostpool_set_node(s->pool, s->node, err);
    if (st != LMS_OK) {
      lms__hostpool_destroy(s->pool);
      s->pool = NULL;
      lms__node_ledger_leave(s->node);
      s->node = NULL;
      return st;
    }
  }
  if (dev->ops->stream_create(dev, &s->h2d) != LMS_OK ||
      dev->ops->stream_create(dev, &s->d2h) != LMS_OK) {
    lms__errf(err, "cannot create the copy streams: %s", dev->last_error);
    if (s->h2d) dev->ops->stream_destroy(dev, s->h2d);
    lms__hostpool_destroy(s->pool);
    s->pool = NULL;
    lms__node_ledger_leave(s->node);
    s->node = NULL;
    return LMS_ERR_DEVICE;
  }
  return LMS_OK;
}

/* ---- Device blocks, with eviction ---------------------------------------- */

static lms_status_t evict(lms__swap_t *s, lms_chunk_t *c);

static uint64_t bytes_acquired(const lms__swap_t *s, uint64_t *dev_homed) {
  uint64_t pinned = 0;
  *dev_homed = 0;
  for (const lms_chunk_t *c = s->all; c != NULL; c = c->all_next) {
    if (!c->host_homed) *dev_homed += c->size;
    else if (c->pins > 0) pinned += c->size;
  }
  return pinned;
}

/* Note [Choosing victims]
 * Only unpinned resident host-homed chunks (the LRU list) can be evicted.
 * Under the schedule policy the victim is the one Note [One victim rule]
 * (core/victim.c) takes: the one whose next use is furthest away
 * (Belady's choice, with the schedule as the oracle; ties go to the least
 * recently released), and for a prefetch for step `need` only one whose
 * next use is later than `need`: bringing in what is needed later at the
 * cost of what is needed sooner would only add traffic.  For a demand
 * swap-in (need = LMS__NEVER) any victim will do.  A prefetched chunk not
 * yet used is taken last: the copy that brought it would have been for
 * nothing.  (No chunk here is dead or past its use: a freed chunk leaves
 * at once, and next uses are of steps to come.)  Under the LRU policy the
 * victim is the least recently released.
 *
 * Whether the victim's users are still running does not enter the
 * choice.  It once did (the furthest among chunks whose users were done
 * came first, as the copy into a busy chunk's block waits for them), but
 * what "done" meant was the simulated device's answer to how long the
 * host-to-device stream would wait (wait_cost), which a GPU cannot give:
 * CUDA can only say whether the work is done now, and with the host ahead
 * of the device that picks the chunks released longest ago, close to LRU.
 * Run as a GPU can (--sim-measured-waits), the five-trace sweep was at a
 * median 1.145 of the lower bound, worst 1.734, with the preference, and
 * 1.062 / 1.514 without it; with waits known, 1.069 / 1.526 with and
 * 1.066 / 1.526 without (bench/results/2026-11-24-sim-measured-waits.md).
 * Without it the choice is the same whatever the device can tell. */
static lms_chunk_t *pick_victim(lms__swap_t *s, uint64_t need) {
  lms_chunk_t *head = s->lru_head;
  if (head == NULL) return NULL;
  if (s->next_use == NULL) return need == LMS__NEVER ? head : NULL;
  if (s->policy != LMS_POLICY_SCHEDULE) {
    uint64_t u = s->next_use(s->next_use_arg, head);
    return need != LMS__NEVER && u <= need ? NULL : head;
  }
  lms_chunk_t *best_pf = NULL;
  if (s->flat_use) {
    /* No schedule is active and every next use is the same: the scan
     * below would take the first chunk not prefetched in LRU order, else
     * the first prefetched (ties go to the older).  Walking the list is
     * that choice without the next use of every chunk: setup, writing
     * each weight into a full device, took O(n) a weight. */
    for (lms_chunk_t *c = head; c != NULL; c = c->lru_next) {
      if (!c->prefetched) return c;
      if (best_pf == NULL) best_pf = c;
    }
    return best_pf;
  }
  if (s->use_index && !lms__swap_reference) {
    /* The same choice as the scan below, walking from the furthest next
     * use (Note [Victims by next use]): the furthest not prefetched, else
     * the furthest. */
    build_index(s);
    for (lms__avl_node_t *n = lms__avl_first(&s->by_use); n != NULL;
         n = lms__avl_next(&s->by_use, n)) {
      lms_chunk_t *c = LMS__CONTAINER_OF(n, lms_chunk_t, use_node);
      if (need != LMS__NEVER && c->use_key <= need) break;
      if (!c->prefetched) return c;
      if (best_pf == NULL) best_pf = c;
    }
    return best_pf;
  }
  /* Note [One victim rule] in core/victim.c, asked of each chunk in LRU
   * order; no next use here has passed. */
  const lms__victim_ask_t q = {.now = 0, .need = need};
  lms_chunk_t *best = NULL;
  lms__victim_t best_v = {0};
  for (lms_chunk_t *c = head; c != NULL; c = c->lru_next) {
    lms__victim_t v = {.next_use = s->next_use(s->next_use_arg, c),
                       .spared = c->prefetched != 0};
    if (lms__victim_better(&q, &v, best != NULL ? &best_v : NULL)) {
      best = c;
      best_v = v;
    }
  }
  return best;
}

/* Note [Evicting a range]
 * A large request needs contiguous room.  Evicting chunk after chunk in
 * victim order frees bytes all over the device, and can empty it before
 * any stretch is long enough.  So a large request that does not fit first
 * looks, in each segment, for the run of neighbouring blocks that would
 * hold it if the chunks in them were evicted: every block in the run is
 * free (and mergeable) or holds an evictable chunk (unpinned, and for a
 * prefetch needed later than the prefetched one).  Of those runs it takes
 * the cheapest, where a chunk costs its bytes, twice if dirty, and under
 * the schedule policy times 1 + 64 / (1 + steps until its next use): what
 * is needed soon costs most.  The blocks freed become one block through the stream-ordered
 * merging of the device cache. */
#define RANGE_MIN_REQUEST (LMS__SMALL_REQUEST + 1)

typedef struct range_block {
  const char *ptr;
  size_t size;
  double cost;     /* < 0: cannot be part of a run */
  lms_chunk_t *chunk;
  int first;
} range_block_t;

typedef struct range_scan {
  lms__swap_t *s;
  uint64_t need;
  range_block_t *v;
  size_t len, cap;
  int oom;
} range_scan_t;

static double chunk_cost(lms__swap_t *s, lms_chunk_t *c) {
  double w = c->dirty ? 2.0 : 1.0;
  if (s->next_use != NULL && s->policy == LMS_POLICY_SCHEDULE) {
    uint64_t u = s->next_use(s->next_use_arg, c);
    if (u != LMS__NEVER) {
      double dist = u > s->step ? (double)(u - s->step) : 0.0;
      w *= 1.0 + 64.0 / (1.0 + dist);
    }
  }
  return w * (double)c->size;
}

static void range_visit(void *arg, const void *ptr, size_t size, int allocated,
                        int mergeable, int first, void *owner) {
  range_scan_t *r = arg;
  if (r->oom) return;
  if (r->len == r->cap) {
    size_t ncap = r->cap ? r->cap * 2 : 64;
    range_block_t *v = realloc(r->v, ncap * sizeof *v);
    if (v == NULL) {
      r->oom = 1;
      return;
    }
    r->v = v;
    r->cap = ncap;
  }
  range_block_t *b = &r->v[r->len++];
  b->ptr = ptr;
  b->size = size;
  b->first = first;
  b->chunk = NULL;
  b->cost = mergeable ? 0.0 : -1.0;
  if (!allocated) return;
  b->cost = -1.0;
  lms_chunk_t *c = owner; /* set when the chunk came in (swap_in_to) */
  if (c == NULL || !c->in_lru || c->dptr != ptr) return;
  if (r->need != LMS__NEVER && r->s->next_use != NULL &&
      r->s->next_use(r->s->next_use_arg, c) <= r->need)
    return;
  b->chunk = c;
  b->cost = chunk_cost(r->s, c);
}

/* Note [Range eviction by index]
 * The scan below visits every segment at least as large as the request,
 * and a program that keeps asking for large chunks into a full device
 * made it O(n) a request: at 400,000 references an iteration a third of
 * `lms sim`'s time.  But with paged large blocks (Note [Paged large
 * blocks] in alloc/devcache.c) a segment for large requests is one block,
 * so a run is one block: a free one (cost 0: nothing is evicted) or one
 * chunk, whose segment holds the request when its size rounded up does.
 * Under a schedule the cost of a chunk is its bytes, times 2 if dirty,
 * times a factor that falls as its next use is further off; so of the
 * chunks of one size and state the one used furthest ahead costs least,
 * and every chunk costs at least its bytes.  by_size keeps the indexed
 * chunks of such segments by (size, clean first, furthest next use): the
 * cheapest is found by taking, for each size from the request's up, the
 * first clean and the first dirty chunk, and stopping at the first size
 * no cheaper than the best so far: O(log n) per size looked at, where the
 * sizes looked at are those between the request and the cheapest cost.
 * Ties, chunks of one size, state and next use, go to the one released
 * earlier, where the scan took the newest segment.  Only while a segment
 * for large requests was never split, and pending blocks are all in
 * pending_streams, does this hold; otherwise the scan runs. */
static lms_status_t evict_range_indexed(lms__swap_t *s, size_t want,
                                        uint64_t need) {
  /* Does a chunk's cost depend on its next use, or may a chunk be too
   * soon needed to go?  Then by_size_use, which needs the index. */
  int by_use = s->next_use != NULL && !s->flat_use &&
               (s->policy == LMS_POLICY_SCHEDULE || need != LMS__NEVER);
  if (by_use && !(s->use_index && s->policy == LMS_POLICY_SCHEDULE))
    return LMS_ERR_INTERNAL;
  int found = 0;
  if (!lms__devcache_whole_large(&s->cache, want, &found))
    return LMS_ERR_INTERNAL;
  if (found) return LMS_NOT_READY; /* a free block costs nothing */
  if (by_use) build_index(s);
  lms__avl_t *t = by_use ? &s->by_size_use : &s->by_size;
  size_t off = by_use ? offsetof(lms_chunk_t, sizeu_node)
                      : offsetof(lms_chunk_t, size_node);
  lms_chunk_t key = {.size = want - LMS__BLOCK_ROUND + 1, .dirty = 0,
                     .use_key = UINT64_MAX, .seg_seq = UINT64_MAX,
                     .serial = 0};
  lms__avl_node_t *probe = (lms__avl_node_t *)(void *)((char *)&key + off);
  lms_chunk_t *best = NULL;
  double best_cost = 0.0;
  for (;;) {
    lms__avl_node_t *n = lms__avl_ceil(t, probe);
    if (n == NULL) break;
    lms_chunk_t *c = (lms_chunk_t *)(void *)((char *)n - off);
    /* Every chunk costs at least its bytes. */
    if (best != NULL && (double)c->size > best_cost) break;
    size_t size = c->size;
    for (int dirty = c->dirty; dirty <= 1; dirty++) {
      if (dirty != c->dirty) {
        key.size = size;
        key.dirty = 1;
        n = lms__avl_ceil(t, probe);
        if (n == NULL) break;
        c = (lms_chunk_t *)(void *)((char *)n - off);
        if (c->size != size) break;
      }
      /* The first of its size and state is used furthest ahead: if it is
       * needed too soon, so are the others. */
      if (need != LMS__NEVER && s->next_use != NULL &&
          s->next_use(s->next_use_arg, c) <= need)
        continue;
      double cost = chunk_cost(s, c);
      if (best == NULL || cost < best_cost ||
          (cost == best_cost && c->seg_seq > best->seg_seq)) {
        best = c;
        best_cost = cost;
      }
    }
    if (size == SIZE_MAX) break;
    key.size = size + 1;
    key.dirty = 0;
  }
  if (best == NULL) return LMS_NOT_READY;
  __atomic_fetch_add(&lms__swap_indexed_ranges, 1, __ATOMIC_RELAXED);
  LMS_CHECK(evict(s, best));
  return LMS_OK;
}

/* Evicts the cheapest run of chunks that makes room for `size`; LMS_OK
 * if it evicted one (the caller tries again), LMS_NOT_READY if no run
 * would do. */
static lms_status_t evict_range(lms__swap_t *s, size_t size, uint64_t need) {
  range_scan_t r = {.s = s, .need = need};
  size_t want = (size + LMS__BLOCK_ROUND - 1) / LMS__BLOCK_ROUND *
                LMS__BLOCK_ROUND;
  if (!lms__swap_reference) {
    lms_status_t ist = evict_range_indexed(s, want, need);
    if (ist != LMS_ERR_INTERNAL) return ist;
  }
  /* A run lies within one segment: smaller ones cannot hold it, and are
   * not worth the cost of their chunks (with a segment a large chunk,
   * that is most of them). */
  lms__devcache_visit(&s->cache, 0, want, range_visit, &r);
  size_t best_i = 0, best_j = 0;
  double best = -1.0;
  size_t i = 0;
  size_t total = 0;
  double cost = 0.0;
  for (size_t j = 0; j < r.len && !r.oom; j++) {
    if (r.v[j].first) {
      i = j;
      total = 0;
      cost = 0.0;
    }
    if (r.v[j].cost < 0) {
      i = j + 1;
      total = 0;
      cost = 0.0;
      continue;
    }
    total += r.v[j].size;
    cost += r.v[j].cost;
    while (i < j && total - r.v[i].size >= want) {
      total -= r.v[i].size;
      cost -= r.v[i].cost;
      i++;
    }
    if (total >= want && (best < 0 || cost < best)) {
      best = cost;
      best_i = i;
      best_j = j;
    }
  }
  lms_status_t st = LMS_NOT_READY;
  if (best >= 0 && best > 0.0) {
    st = LMS_OK;
    for (size_t k = best_i; k <= best_j && st == LMS_OK; k++)
      if (r.v[k].chunk != NULL) st = evict(s, r.v[k].chunk);
  }
  free(r.v);
  return st;
}

/* Evicting comes before waiting: the host blocks on the device only when
 * nothing is left to evict and pending blocks are the last resort. */
static lms_status_t alloc_device(lms__swap_t *s, size_t size, void *stream,
                                 void **out) {
  int ranged = size < RANGE_MIN_REQUEST;
  for (;;) {
    /* Blocks of the other kind are taken only when nothing is left to
     * evict: a small chunk pinned inside a large free stretch would keep
     * every large chunk out. */
    lms_status_t st = lms__devcache_alloc_strict(&s->cache, size, stream, out);
    if (st != LMS_ERR_DEVICE_OOM) return st;
    if (!ranged) {
      ranged = 1;
      st = evict_range(s, size, LMS__NEVER);
      if (st == LMS_OK) continue;
      if (st != LMS_NOT_READY) return st;
    }
    lms_chunk_t *victim = pick_victim(s, LMS__NEVER);
    if (victim == NULL) break;
    st = evict(s, victim);
    if (st != LMS_OK) return st;
  }
  lms_status_t st = lms__devcache_alloc(&s->cache, size, stream, out);
  if (st != LMS_ERR_DEVICE_OOM) return st;
  uint64_t dev_homed = 0;
  uint64_t pinned = bytes_acquired(s, &dev_homed);
  lms__stat_add(&s->stats.device_ooms, 1);
  uint64_t used = (uint64_t)s->stats.device_allocated.current;
  uint64_t free_b = s->placement.capacity > used ? s->placement.capacity - used : 0;
  if (free_b >= size) {
    /* The bytes are there, but not in one piece: acquired chunks cannot
     * be moved. */
    lms__errf(s->err,
              "device out of memory: asked for %zu bytes with a budget of "
              "%llu (--gpu-limit); %llu bytes are free but in pieces (the "
              "largest free block is %.0f%% of the free bytes in segments), "
              "between %llu bytes of acquired chunks and %llu of "
              "device-homed ones, which cannot move; acquire fewer chunks at "
              "once, or raise --gpu-limit",
              size, (unsigned long long)s->placement.capacity,
              (unsigned long long)free_b,
              100.0 * (1.0 - lms__devcache_fragmentation(&s->cache)),
              (unsigned long long)pinned, (unsigned long long)dev_homed);
  } else {
    lms__errf(s->err,
              "device out of memory: asked for %zu bytes with a budget of "
              "%llu (--gpu-limit); %llu bytes are held by acquired chunks and "
              "%llu by device-homed chunks, nothing more can be evicted; try "
              "a lower -lms threshold so more chunks live in host memory, "
              "acquire fewer chunks at once, or raise --gpu-limit",
              size, (unsigned long long)s->placement.capacity,
              (unsigned long long)pinned, (unsigned long long)dev_homed);
  }
  LMS_LOG(WARN, SWAP, "%s", s->err);
  return LMS_ERR_DEVICE_OOM;
}

/* The stream a dropped block may be reused on at once: the one stream that
 * used it, when that is all; otherwise the device-to-host stream, made to
 * wait for every use and for a swap-in copy not known to be done.  A
 * write-back whose completion could not be tracked (home_unknown) is on the
 * device-to-host stream already, so that stream orders after it too. */
static lms_status_t drop_stream(lms__swap_t *s, lms_chunk_t *c, void **out) {
  int copy_in_flight =
      c->ready_pending && !event_done(s, c->ready_ev, "event_query at a drop");
  /* A write-back ahead (Note [Writing back ahead]) may still be reading
   * the block: it is on the device-to-host stream, which orders after it. */
  int home_in_flight =
      c->home_pending && !event_done(s, c->home_ev, "event_query at a drop");
  if (!copy_in_flight && !home_in_flight && !c->home_unknown &&
      c->nuses <= 1) {
    c->ready_pending = 0;
    *out = c->nuses == 1 ? c->uses[0].stream : NULL;
    return LMS_OK;
  }
  lms_status_t st;
  for (int i = 0; i < c->nuses; i++) {
    st = s->dev->ops->stream_wait(s->dev, s->d2h, c->uses[i].event);
    if (st != LMS_OK) return device_error(s, st, "stream_wait before a drop");
  }
  if (copy_in_flight) {
    st = s->dev->ops->stream_wait(s->dev, s->d2h, c->ready_ev);
    if (st != LMS_OK) return device_error(s, st, "stream_wait before a drop");
  }
  *out = s->d2h;
  return LMS_OK;
}

static void clear_uses(lms__swap_t *s, lms_chunk_t *c) {
  for (int i = 0; i < c->nuses; i++) lms__evpool_put(&s->events, c->uses[i].event);
  c->nuses = 0;
}

/* Note [Showing a piece again]
 * A piece's block is shown in its chunk's range (dev_map) while the chunk
 * is acquired, and the work that used the chunk used that mapping.  When
 * the piece leaves, its block goes back to the device cache, ordered
 * after every use, and may be given to another chunk or back to the
 * device.  On a GPU (cuMemUnmap, cuMemMap) a mapping may be replaced only
 * once no work uses it, and a block given back to the device and
 * allocated anew may come back at the same address with other memory
 * behind it.  So a piece that leaves keeps the events of its uses (those
 * of its last acquires, one a stream, recorded at each release) and
 * counts as shown nowhere: the next acquire shows its block again, even
 * if the block is the same (a device call it may not have needed,
 * against a mapping of memory that is no longer the block's), after the
 * host has waited for those events.  They mark the uses alone, not the
 * write-back that followed them, and were most often done long before,
 * an iteration earlier; so is it at a free of the chunk, which waits
 * for them before its range is released. */
static void keep_old_uses(lms__swap_t *s, lms_chunk_t *p) {
  p->shown = NULL;
  /* Not acquired since it last left: its uses are those kept then. */
  if (p->nuses == 0) return;
  for (int i = 0; i < p->nold; i++) lms__evpool_put(&s->events, p->old_ev[i]);
  for (int i = 0; i < p->nuses; i++) p->old_ev[i] = p->uses[i].event;
  p->nold = p->nuses;
  p->nuses = 0;
}

/* Waits until no work uses what piece p's range showed before it left
 * (Note [Showing a piece again]); the events go back to the pool. */
static lms_status_t wait_unmap(lms__swap_t *s, lms_chunk_t *p) {
  while (p->nold > 0) {
    void *ev = p->old_ev[p->nold - 1];
    lms_status_t st = s->dev->ops->event_sync(s->dev, ev);
    if (st != LMS_OK)
      return device_error(s, st, "event_sync before a piece is shown again");
    lms__evpool_put(&s->events, ev);
    p->nold--;
  }
  return LMS_OK;
}

/* wait_unmap before a piece's range goes for good; on a failure the
 * events go back to the pool unwaited (1 returned; s->err says why). */
static int settle_old_uses(lms__swap_t *s, lms_chunk_t *p) {
  if (wait_unmap(s, p) == LMS_OK) return 0;
  for (int i = 0; i < p->nold; i++) lms__evpool_put(&s->events, p->old_ev[i]);
  p->nold = 0;
  return 1;
}

/* Gives up the device copy of c; `stream` orders the block's reuse. */
static void forget_device_copy(lms__swap_t *s, lms_chunk_t *c, void *stream) {
  if (c->group != NULL) keep_old_uses(s, c);
  lms__devcache_free(&s->cache, c->dptr, stream);
  lms__registry_remove(&s->registry, &c->dev_reg);
  c->dptr = NULL;
  c->dirty = 0;
  c->ready_pending = 0;
  clear_uses(s, c);
  if (c->host_homed) lms__stat_add(&s->stats.resident_bytes, -(int64_t)c->size);
  if (s->on_change != NULL) s->on_change(s->next_use_arg, c);
}

/* Marks the copy just enqueued on `stream` with *ev (from the pool if c has
 * none yet): *pending 1.  Without an event the copy is waited for here
 * (*pending 0); if even that fails, the copy's fate is unknown, *pending
 * is left as it was and the stream's failure is returned.  `what`:
 * "write-back" or "swap-in". */
static lms_status_t mark_copy(lms__swap_t *s, void **ev, void *stream,
                              const char *what, int *pending) {
  lms_dev_t *d = s->dev;
  char why[64];
  if (*ev == NULL && lms__evpool_get(&s->events, ev) != LMS_OK) *ev = NULL;
  if (*ev != NULL && d->ops->event_record(d, *ev, stream) == LMS_OK) {
    *pending = 1;
    return LMS_OK;
  }
  snprintf(why, sizeof why, "event_record after %s", what);
  device_error(s, LMS_ERR_DEVICE, why);
  lms_status_t st = d->ops->stream_sync(d, stream);
  if (st == LMS_OK) {
    *pending = 0;
    return LMS_OK;
  }
  snprintf(why, sizeof why, "stream_sync after %s", what);
  return device_error(s, st, why);
}

/* Copies c's device copy to its home on the device-to-host stream, after
 * every use, and marks it clean.  c stays resident.  On failure c stays
 * dirty and its device copy intact (Note [Failure leaves things as they
 * were]). */
static lms_status_t write_home(lms__swap_t *s, lms_chunk_t *c) {
  lms_dev_t *d = s->dev;
  lms_status_t st;
  for (int i = 0; i < c->nuses; i++) {
    st = d->ops->stream_wait(d, s->d2h, c->uses[i].event);
    if (st != LMS_OK) return device_error(s, st, "stream_wait before write-back");
  }
  st = d->ops->copy_d2h(d, c->home, c->dptr, c->size, s->d2h);
  if (st != LMS_OK) return device_error(s, st, "copy_d2h (write-back)");
  st = mark_copy(s, &c->home_ev, s->d2h, "write-back", &c->home_pending);
  if (st != LMS_OK) {
    /* The copy is queued and may still run: remember that, so the block
     * and the home are not reused before the d2h stream's work is known
     * to be done; the chunk stays resident and dirty. */
    c->home_unknown = 1;
    return st;
  }
  c->home_unknown = 0; /* later d2h work orders after any earlier copy */
  set_clean(s, c);
  lms__stat_add(&s->stats.bytes_d2h, (int64_t)c->size);
  lms__stat_add(&s->stats.swaps_out, 1);
  LMS_LOG(DEBUG, SWAP, "write-back %zu bytes from %p to %p", c->size, c->dptr,
          c->home);
  return LMS_OK;
}

/* Writes c home if dirty, then gives up its block.  c is resident,
 * host-homed and unpinned. */
static lms_status_t evict(lms__swap_t *s, lms_chunk_t *c) {
  void *stream = NULL;
  if (c->dirty) {
    LMS_CHECK(write_home(s, c));
    stream = s->d2h;
  } else {
    LMS_CHECK(drop_stream(s, c, &stream));
    lms__stat_add(&s->stats.drops, 1);
  }
  if (c->prefetched) lms__stat_add(&s->stats.prefetch_wasted, 1);
  c->prefetched = 0;
  lru_remove(s, c);
  forget_device_copy(s, c, stream);
  return LMS_OK;
}

/* Brings c into `block` (from alloc_device or a prefetch's allocation):
 * the copy from its home, unless it has never held data. */
static lms_status_t swap_in_to(lms__swap_t *s, lms_chunk_t *c, void *block,
                               int copy) {
  lms_dev_t *d = s->dev;
  lms_status_t st;
  if (!copy) {
    /* Nothing was ever written: there is nothing to bring in. */
    c->dptr = block;
    lms__devcache_set_owner(&s->cache, block, c);
    c->seg_large = lms__devcache_in_large(&s->cache, block, &c->seg_seq);
    c->dirty = 0;
    c->ready_pending = 0;
    lms__registry_add(&s->registry, &c->dev_reg, block, c->size, c);
    lms__stat_add(&s->stats.resident_bytes, (int64_t)c->size);
    return LMS_OK;
  }
  if (c->home_pending) {
    if (event_done(s, c->home_ev, "event_query for a write-back")) {
      c->home_pending = 0;
    } else {
      st = d->ops->stream_wait(d, s->h2d, c->home_ev);
      if (st != LMS_OK) {
        lms__devcache_free(&s->cache, block, s->h2d);
        return device_error(s, st, "stream_wait for a write-back");
      }
    }
  }
  st = d->ops->copy_h2d(d, block, c->home, c->size, s->h2d);
  if (st != LMS_OK) {
    /* The block may have been taken from earlier h2d work still in flight;
     * freeing it on h2d keeps that order. */
    lms__devcache_free(&s->cache, block, s->h2d);
    return device_error(s, st, "copy_h2d (swap-in)");
  }
  c->ready_pending = 0;
  st = mark_copy(s, &c->ready_ev, s->h2d, "swap-in", &c->ready_pending);
  if (st != LMS_OK) {
    lms__devcache_free(&s->cache, block, s->h2d);
    return st;
  }
  c->dptr = block;
  lms__devcache_set_owner(&s->cache, block, c);
  c->seg_large = lms__devcache_in_large(&s->cache, block, &c->seg_seq);
  c->dirty = 0;
  lms__registry_add(&s->registry, &c->dev_reg, block, c->size, c);
  lms__stat_add(&s->stats.resident_bytes, (int64_t)c->size);
  lms__stat_add(&s->stats.bytes_h2d, (int64_t)c->size);
  lms__stat_add(&s->stats.swaps_in, 1);
  LMS_LOG(DEBUG, SWAP, "swap-in %zu bytes from %p to %p", c->size, c->home, block);
  return LMS_OK;
}

/* A chunk whose bytes are copied comes in on the copy stream; one without is used
 * first by `stream`, so its block is ordered for that stream. */
static lms_status_t swap_in(lms__swap_t *s, lms_chunk_t *c, void *stream,
                            int copy) {
  void *block = NULL;
  LMS_CHECK(alloc_device(s, c->size, copy ? s->h2d : stream, &block));
  /* A block for the acquiring stream itself may make it wait for the
   * block's last users: that is a stall too. */
  if (!copy) lms__stat_add(&s->stats.stall_ns, (int64_t)s->cache.last_wait_ns);
  return swap_in_to(s, c, block, copy);
}

static int room_short(const lms__swap_t *s, uint64_t bytes) {
  return s->placement.capacity -
             (uint64_t)s->stats.device_allocated.current < bytes;
}

lms_status_t lms__swap_make_room(lms__swap_t *s, uint64_t bytes, uint64_t after) {
  if (s->use_index && s->policy == LMS_POLICY_SCHEDULE &&
      !lms__swap_reference) {
    /* pick_victim, called again and again, would take the chunks not
     * prefetched in order of next use, then the prefetched ones, walking
     * past the same chunks each time: two walks of by_use take them in
     * that order (Note [Victims by next use]), the second passing only
     * prefetched chunks. */
    build_index(s);
    for (int pass = 0; pass < 2 && room_short(s, bytes); pass++) {
      lms__avl_node_t *n = lms__avl_first(&s->by_use);
      while (n != NULL && room_short(s, bytes)) {
        lms_chunk_t *c = LMS__CONTAINER_OF(n, lms_chunk_t, use_node);
        if (after != LMS__NEVER && c->use_key <= after) break;
        n = lms__avl_next(&s->by_use, n); /* by key: c may leave the tree */
        if ((pass == 1) == (c->prefetched != 0)) LMS_CHECK(evict(s, c));
      }
    }
    return LMS_OK;
  }
  while (room_short(s, bytes)) {
    lms_chunk_t *victim = pick_victim(s, after);
    if (victim == NULL) break;
    LMS_CHECK(evict(s, victim));
  }
  return LMS_OK;
}

/* Note [Writing back ahead]
 * Training writes in bursts.  The optimizer leaves weights and their
 * state dirty and not read again until the next forward or the next
 * update, and those are the first victims when the next forward needs
 * room for its activations; written home only then, they queue on the
 * device-to-host stream beside the activations' own write-backs, and
 * every copy in waits for the room.  So at each step boundary the chunks
 * the schedule would evict first are made clean ahead of need: walking
 * the unpinned resident chunks not needed before the window's horizon
 * (Note [Working set of the window] in plan.c), furthest next use first,
 * up to `bytes` of them, clean or dirty, each dirty one is written home
 * and stays resident.  Its eviction later is a free drop, and its copy
 * ran while the step that made it dirty was still near: during the
 * update, whose copies in leave the outgoing direction idle.  The copy
 * waits on the device-to-host stream for the chunk's users (write_home);
 * which users are done is not asked first, as a GPU could only say
 * whether they are done now (Note [Choosing victims]).  A chunk
 * written again before it leaves costs its copy for nothing, and where
 * the outgoing direction is the bottleneck every such copy costs time, so
 * the planner passes a small budget (1/256 of the device budget: about
 * the next victim at each step).  Measured in `lms sim`, with the
 * adaptive window: gpt2-medium at 2x over pcie3 13 % faster (1605.8 to
 * 1392.9 ms, 10.33 to 10.24 GB written home), ResNet-50 at 2x 3 %;
 * GoogLeNet's built-in training over pcie3, where both directions are
 * saturated, 1.7 % slower (1537.6 to 1564.4 ms).
 * Ordering: the copy reads the device block on the device-to-host
 * stream, so a later write waits for it (lms__swap_acquire), and so does
 * the block's reuse after a drop (drop_stream); the home is not read
 * before it is done (swap_in_to waits for home_ev). */
lms_status_t lms__swap_clean_ahead(lms__swap_t *s, uint64_t bytes,
                                   uint64_t after) {
  /* Only under a schedule, whose victim order the index holds. */
  if (!s->use_index || bytes == 0) return LMS_OK;
  build_index(s);
  lms_status_t st = LMS_OK;
  uint64_t seen = 0;
  lms__avl_node_t *n = lms__avl_first(&s->by_use);
  while (n != NULL && seen < bytes && st == LMS_OK) {
    lms_chunk_t *c = LMS__CONTAINER_OF(n, lms_chunk_t, use_node);
    if (c->use_key <= after) break;
    /* write_home keeps c resident and indexed: the walk goes on. */
    n = lms__avl_next(&s->by_use, n);
    seen += c->size;
    if (!c->dirty || c->home_unknown) continue;
    st = write_home(s, c);
  }
  return st;
}

/* Note [A planned copy takes clean room]
 * A plan (Note [A planned period] in graph/ahead.c) gives each copy in
 * its room: what it sends away after the step before.  Where that room is
 * not there when the copy starts (a chunk it sent away is still being
 * written home, so its block is pending; with pieces, the plan's room is
 * counted in pieces a copy may not fit between), evicting a chunk the plan
 * keeps makes room now only if that chunk is clean: a dirty one's room
 * is free only once its write-back has run, behind the write-backs the
 * plan made, and its bytes then move out and back in again.  VGG-16's
 * training at 4x over pcie5 with --piece-size 32MiB, under the plan by
 * density in order: each iteration three dirty chunks it keeps (205 MB)
 * were pushed out so, and it brought in 4.16 GB where it planned 3.85.  So a
 * planned copy evicts only while the victim by next use is clean, and
 * otherwise waits to be tried again at the next step, or for its use.
 * Whole chunks, over the twenty traces' 240 runs: VGG-16 at 2x over pcie3
 * 4.4 % faster, the LSTM at 4x over pcie3 4.3 % (1.254 -> 1.200 of the
 * lower bound), the 1.1B decoder at 4x over pcie5 6.3 %, 20 runs faster,
 * 15 slower, by 1.2 % at most (the pipeline stage at 10x over pcie5);
 * with pieces, DLRM at 4x over pcie5 5.4 % and VGG-16 at 4x over pcie3
 * 3.1 % faster, DLRM at 2x over c2c 7.6 % slower
 * (bench/results/2026-12-02-sim-clean-room.md).  The window's copies in
 * (prefetch_one in graph/plan.c) evict as before: it plans no room. */
lms_status_t lms__swap_prefetch(lms__swap_t *s, lms_chunk_t *c, uint64_t need,
                                unsigned flags) {
  if (!c->host_homed || c->dptr != NULL || !c->has_data) return LMS_OK;
  void *block = NULL;
  int clean = (flags & LMS__PREFETCH_CLEAN) != 0;
  int ranged = c->size < RANGE_MIN_REQUEST || clean;
  for (;;) {
    lms_status_t st = lms__devcache_alloc_strict(&s->cache, c->size, s->h2d,
                                                 &block);
    if (st == LMS_OK) break;
    if (st != LMS_ERR_DEVICE_OOM) return st;
    if (!ranged) {
      ranged = 1;
      st = evict_range(s, c->size, need);
      if (st == LMS_OK) continue;
      if (st != LMS_NOT_READY) return st;
    }
    lms_chunk_t *victim = pick_victim(s, need);
    if (victim == NULL || (clean && victim->dirty)) return LMS_NOT_READY;
    LMS_CHECK(evict(s, victim));
  }
  LMS_CHECK(swap_in_to(s, c, block, 1));
  c->prefetched = 1;
  lru_push(s, c);
  if (s->on_change != NULL) s->on_change(s->next_use_arg, c);
  lms__stat_add(&s->stats.prefetches, 1);
  return LMS_OK;
}

/* ---- Deferred frees of homes ----------------------------------------------- */

/* The homes wait on write-backs, all on the device-to-host stream, whose
 * events complete in order: the queue is oldest first, and a check stops
 * at the first home still written to (one query, not one per home). */
static void process_deferred(lms__swap_t *s, int wait) {
  lms__deferred_t **link = &s->deferred, *prev = NULL;
  while (*link != NULL) {
    lms__deferred_t *df = *link;
    lms_status_t st = wait ? s->dev->ops->event_sync(s->dev, df->event)
                           : s->dev->ops->event_query(s->dev, df->event);
    if (st == LMS_NOT_READY) return;
    if (st != LMS_OK) {
      /* Its fate unknown, the home stays held; the others are checked. */
      device_error(s, st, "event check of a freed home");
      prev = df;
      link = &df->next;
      continue;
    }
    lms__hostpool_free(s->pool, df->home);
    lms__evpool_put(&s->events, df->event);
    *link = df->next;
    if (s->deferred_tail == df) s->deferred_tail = prev;
    free(df);
  }
}

/* ---- Chunks ------------------------------------------------------------------ */

/* A chunk placed by the -lms/-lms_frac rule, or in host memory whatever
 * the rule says when `host` is set. */
static lms_status_t alloc_chunk(lms__swap_t *s, size_t size, int host,
                                lms_chunk_t **out) {
  if (size == 0) {
    lms__errf(s->err, "lms_alloc: size 0; a chunk holds 1 byte or more");
    return LMS_ERR_INVALID;
  }
  if (size > s->placement.capacity) {
    lms__errf(s->err,
              "lms_alloc: a chunk of %zu bytes can never fit the device "
              "budget of %llu bytes (--gpu-limit); split it or raise the limit",
              size, (unsigned long long)s->placement.capacity);
    return LMS_ERR_INVALID;
  }
  process_deferred(s, 0);
  lms_chunk_t *c = calloc(1, sizeof *c);
  if (c == NULL) {
    lms__errf(s->err, "lms_alloc: no host memory for chunk metadata");
    return LMS_ERR_HOST_OOM;
  }
  c->size = size;
  c->host_homed = host || lms__place_on_host(
      &s->placement, size, (uint64_t)s->stats.device_allocated.current);
  lms_status_t st;
  if (!c->host_homed) {
    st = alloc_device(s, size, NULL, &c->dptr);
    if (st == LMS_ERR_DEVICE_OOM && s->placement.lms_kb >= 0) {
      /* Note [Spilling what does not fit]: with LMS on, a chunk the rule
       * would keep on the device goes to host memory when the device is
       * full even after evicting, rather than failing: only what must is
       * offloaded, as caffe-ibm's -lms with a huge threshold did. */
      LMS_LOG(INFO, SWAP, "device full: %zu bytes spill to host memory", size);
      s->stats.device_ooms.current--;
      s->stats.device_ooms.total--;
      c->host_homed = 1;
    } else if (st != LMS_OK) {
      free(c);
      return st;
    } else {
      lms__registry_add(&s->registry, &c->dev_reg, c->dptr, size, c);
    }
  }
  if (c->host_homed) {
    st = lms__hostpool_alloc(s->pool, size, &c->home);
    if (st != LMS_OK) {
      lms__stat_add(&s->stats.host_ooms, 1);
      const char *node = lms__hostpool_refused(s->pool);
      if (node[0] != '\0') {
        lms__errf(s->err, "%s (a chunk of %zu bytes)", node, size);
        free(c);
        return LMS_ERR_HOST_OOM;
      }
      char limit[96] = "";
      if (s->stats.host_limit != 0)
        snprintf(limit, sizeof limit, " of a --host-limit of %llu",
                 (unsigned long long)s->stats.host_limit);
      lms__errf(s->err,
                "host out of memory: the pinned pool could not give %zu bytes; "
                "%llu bytes are pinned%s; raise --host-limit, free chunks, or "
                "keep more on the device with a higher -lms",
                size, (unsigned long long)lms__hostpool_pinned(s->pool), limit);
      free(c);
      return LMS_ERR_HOST_OOM;
    }
    lms__registry_add(&s->registry, &c->home_reg, c->home, size, c);
    lms__stat_add(&s->stats.chunks_host_homed, 1);
    lms__stat_add(&s->stats.host_allocated, (int64_t)size);
  }
  c->magic = LMS__CHUNK_MAGIC;
  c->serial = ++s->serial;
  c->all_next = s->all;
  if (s->all) s->all->all_prev = c;
  s->all = c;
  lms__stat_add(&s->stats.chunks, 1);
  s->chunk_bytes += c->size;
  if (s->chunk_bytes > s->chunk_bytes_peak) s->chunk_bytes_peak = s->chunk_bytes;
  *out = c;
  return LMS_OK;
}

/* Note [Chunks of pieces]
 * A chunk is on the device whole or not at all, and a fetch into the
 * room a dirty chunk leaves starts when that chunk's whole write-back
 * has ended.  Where chunks are a large part of the device (a
 * recommendation model's embedding tables of 64-768 MiB under 835 MiB,
 * VGG-16's 392 MiB activations), the scheduler can neither keep part of
 * one across a gap, as the lower bound may, nor overlap one chunk's
 * write-back with the next one's fetch: the two directions take turns
 * (bench/results/2026-11-29-sim-pieces-what-if.md).  So with --piece-size
 * P, a host-homed chunk of at least an eighth of the budget and more than
 * P is made of pieces of P bytes (the last the remainder): each piece is
 * a chunk of its own to the residency module and the schedule (its own
 * device block, dirty bit, copies and events; its home the chunk's home
 * at its offset), and the chunk is a range of device addresses
 * (va_reserve) where each piece's block is shown (dev_map) while the
 * chunk is acquired.  Acquiring the chunk acquires every piece, in order,
 * and shows each one's block at its offset if that block changed; a
 * piece that cannot be acquired releases those before it, so nothing is
 * left pinned and no bytes change.  Releasing, discarding and freeing go
 * to every piece.  The program sees one chunk and one address; lookups of
 * that address or of the home find the chunk.  Only a device that maps
 * memory into address ranges (dev_map, as CUDA's cuMemMap) can do this;
 * on any other, and with --piece-size unset, chunks stay whole.
 *
 * Note [Pieces where whole chunks take turns]
 * Cutting every chunk of an eighth of the budget or more (--piece-size
 * SIZE) is no rule for every program: over the twenty-two traces of
 * bench/workloads/gen_traces.py, with 32 MiB pieces, 52 runs were faster
 * and 61 slower (VGG-16 at 4x over pcie5 and nvlink2 by 5.9-6.3 %,
 * ResNet-50 by up to 3.2 %), the plans on trial choosing other ways.  What
 * whole chunks cost is plain where a chunk is half the budget or more:
 * beside it is less room than itself, so neither the chunk used before it
 * nor the one after can be moving while it does.  DLRM's training at 4x
 * (a table of 805 MB under a budget of 881 MB) over pcie3: the 805 MB
 * table cannot start coming in until the 403 MB one updated before it is
 * home (31 ms), and the next table cannot until the 805 MB one is home
 * (62 ms): the link in idles 94 ms of the 554 an iteration takes.  So
 * --piece-size auto cuts only chunks of half the budget or more, into
 * pieces of 32 MiB (LMS__PIECE_AUTO).  Over the twenty-two traces 13 runs
 * are faster and none slower, with or without waits measured: DLRM at 4x
 * and 10x by 9.8-15.9 % (over pcie3 1.38x -> 1.16x of the lower bound),
 * the pipeline stage at 10x, whose embedding's optimizer state is 1.5 GB
 * of a 2.4 GB budget, by 0.2-1.2 % (bench/results/2026-12-07-sim-pieces-
 * auto.md).  It is not the default because the CUDA device maps pieces
 * with the driver's virtual memory calls, which no GPU has run yet (Note
 * [Mapping pieces on a GPU] in device/cuda.c), and `lms sim` is to do
 * what the runtime does on a GPU. */
static int wants_pieces(const lms__swap_t *s, size_t size) {
  const lms_dev_ops_t *o = s->dev->ops;
  return lms__pieces_of(size, s->piece, s->piece_div,
                        s->placement.capacity) > 0 &&
         o->va_reserve != NULL &&
         o->va_release != NULL && o->dev_map != NULL &&
         lms__place_on_host(&s->placement, size,
                            (uint64_t)s->stats.device_allocated.current);
}

/* Takes piece p out of the list of every chunk and frees it; its home is
 * its chunk's. */
static void free_piece_meta(lms__swap_t *s, lms_chunk_t *p) {
  /* Its range is released next: not before the work that used it is done
   * (Note [Showing a piece again]). */
  if (settle_old_uses(s, p)) LMS_LOG(WARN, SWAP, "%s", s->err);
  lms__evpool_put(&s->events, p->ready_ev);
  lms__evpool_put(&s->events, p->home_ev);
  if (p->all_prev) p->all_prev->all_next = p->all_next;
  else s->all = p->all_next;
  if (p->all_next) p->all_next->all_prev = p->all_prev;
  p->magic = 0;
  free(p);
}

static lms_status_t alloc_group(lms__swap_t *s, size_t size, lms_chunk_t **out) {
  uint64_t n = lms__pieces_of(size, s->piece, s->piece_div,
                              s->placement.capacity);
  lms_chunk_t **v = calloc((size_t)n, sizeof *v);
  if (v == NULL) {
    lms__errf(s->err, "lms_alloc: no host memory for the %llu pieces of a "
              "chunk of %zu bytes", (unsigned long long)n, size);
    return LMS_ERR_HOST_OOM;
  }
  lms_chunk_t *g = NULL;
  lms_status_t st = alloc_chunk(s, size, 1, &g);
  if (st != LMS_OK) {
    free(v);
    return st;
  }
  void *va = NULL;
  st = s->dev->ops->va_reserve(s->dev, size, &va);
  if (st != LMS_OK) {
    free(v);
    lms__swap_free(s, g);
    return device_error(s, st, "va_reserve for a chunk of pieces");
  }
  for (uint64_t i = 0; i < n; i++) {
    lms_chunk_t *p = calloc(1, sizeof *p);
    if (p == NULL) {
      for (uint64_t j = 0; j < i; j++) free_piece_meta(s, v[j]);
      free(v);
      s->dev->ops->va_release(s->dev, va);
      lms__swap_free(s, g);
      lms__errf(s->err, "lms_alloc: no host memory for a piece's metadata");
      return LMS_ERR_HOST_OOM;
    }
    size_t off = (size_t)(i * s->piece);
    p->size = i + 1 == n ? size - off : (size_t)s->piece;
    p->host_homed = 1;
    p->home = (char *)g->home + off;
    p->group = g;
    p->piece_off = off;
    p->magic = LMS__CHUNK_MAGIC;
    p->serial = ++s->serial;
    p->all_next = s->all;
    if (s->all) s->all->all_prev = p;
    s->all = p;
    v[i] = p;
  }
  g->pieces = v;
  g->npieces = (uint32_t)n;
  g->va = va;
  lms__registry_add(&s->registry, &g->dev_reg, va, size, g);
  *out = g;
  return LMS_OK;
}

lms_status_t lms__swap_alloc(lms__swap_t *s, size_t size, lms_chunk_t **out) {
  if (wants_pieces(s, size)) return alloc_group(s, size, out);
  return alloc_chunk(s, size, 0, out);
}

/* Note [Bytes the framework owns]
 * In autograd mode a chunk begins as a copy of a framework's tensor: the
 * bytes are on the device in memory lms did not allocate, and lms's job
 * is to hold them in host memory until the framework asks for them back.
 * So the chunk is homed in the pinned pool whatever the placement rule
 * says (the caller has applied the rule to the framework's demand), and
 * the copy goes straight from the framework's address to the home on the
 * device-to-host stream, after an event on the producer's stream: the
 * producer never waits, and the chunk is never resident, so nothing is
 * written back later.  The framework must not reuse the source until
 * lms__swap_query says the copy has read it (home_ev).  From then on the
 * chunk is an ordinary clean host-homed chunk: acquired for reading, it is
 * brought in (or prefetched) into lms's own device blocks, and dropped,
 * never copied back, when evicted. */
lms_status_t lms__swap_alloc_copy(lms__swap_t *s, const void *src, size_t size,
                                  void *stream, lms_chunk_t **out) {
  lms_dev_t *d = s->dev;
  lms_chunk_t *c = NULL;
  LMS_CHECK(alloc_chunk(s, size, 1, &c));
  void *ev = NULL;
  lms_status_t st = lms__evpool_get(&s->events, &ev);
  if (st != LMS_OK) {
    device_error(s, st, "event_create before a copy from the framework");
    goto fail;
  }
  st = d->ops->event_record(d, ev, stream);
  if (st == LMS_OK) st = d->ops->stream_wait(d, s->d2h, ev);
  lms__evpool_put(&s->events, ev);
  if (st != LMS_OK) {
    device_error(s, st, "ordering a copy after the producer's stream");
    goto fail;
  }
  int registered = 0;
  if (d->ops->ext_register != NULL) {
    st = d->ops->ext_register(d, src, size);
    if (st != LMS_OK) {
      device_error(s, st, "ext_register of the framework's memory");
      goto fail;
    }
    registered = 1;
  }
  st = d->ops->copy_d2h(d, c->home, src, size, s->d2h);
  if (registered) d->ops->ext_unregister(d, src);
  if (st != LMS_OK) {
    device_error(s, st, "copy_d2h from the framework's memory");
    goto fail;
  }
  if (c->home_ev == NULL && lms__evpool_get(&s->events, &c->home_ev) != LMS_OK)
    c->home_ev = NULL;
  if (c->home_ev != NULL &&
      d->ops->event_record(d, c->home_ev, s->d2h) == LMS_OK) {
    c->home_pending = 1;
  } else {
    device_error(s, LMS_ERR_DEVICE, "event_record after a copy from the "
                 "framework");
    st = d->ops->stream_sync(d, s->d2h);
    if (st != LMS_OK) {
      /* The copy may still run: the home must not be reused, and the
       * caller must not reuse the source. */
      c->home_unknown = 1;
      lms__swap_free(s, c);
      return device_error(s, st, "stream_sync after a copy from the framework");
    }
  }
  c->has_data = 1;
  c->dirty = 0;
  lms__stat_add(&s->stats.bytes_d2h, (int64_t)size);
  *out = c;
  return LMS_OK;

fail:
  lms__swap_free(s, c);
  return st;
}

lms_status_t lms__swap_query(lms__swap_t *s, lms_chunk_t *c) {
  if (c->home_unknown) return LMS_NOT_READY;
  if (c->home_pending) {
    if (!event_done(s, c->home_ev, "event_query for a copy home"))
      return LMS_NOT_READY;
    c->home_pending = 0;
  }
  return LMS_OK;
}

/* LMS_ERR_BUSY, saying why, while c is acquired: `call` needs it
 * released. */
static lms_status_t refuse_acquired(lms__swap_t *s, const lms_chunk_t *c,
                                    const char *call) {
  if (c->pins <= 0) return LMS_OK;
  lms__errf(s->err, "%s: the chunk is still acquired %d time(s); release "
            "it first", call, c->pins);
  return LMS_ERR_BUSY;
}

static lms_status_t free_one(lms__swap_t *s, lms_chunk_t *c);

lms_status_t lms__swap_free(lms__swap_t *s, lms_chunk_t *c) {
  LMS_CHECK(refuse_acquired(s, c, "lms_free"));
  if (c->npieces == 0) return free_one(s, c);
  /* Note [Chunks of pieces]: the pieces first, then the chunk, whose home
   * waits for every write-back queued into it (the copy stream out runs
   * them in order, so an event after the last covers all). */
  for (uint32_t i = 0; i < c->npieces; i++) {
    if (c->pieces[i] == NULL) continue; /* freed by a free that failed */
    lms_status_t st = free_one(s, c->pieces[i]);
    /* A piece the device could not let go of stays, and so does the
     * chunk, for a later free; the pieces freed are gone for good. */
    if (st != LMS_OK) return st;
    c->pieces[i] = NULL;
  }
  lms_status_t first = LMS_OK;
  free(c->pieces);
  c->pieces = NULL;
  c->npieces = 0;
  lms__registry_remove(&s->registry, &c->dev_reg);
  lms_status_t st = s->dev->ops->va_release(s->dev, c->va);
  if (st != LMS_OK && first == LMS_OK)
    first = device_error(s, st, "va_release of a chunk of pieces");
  c->va = NULL;
  if (c->home_ev == NULL && lms__evpool_get(&s->events, &c->home_ev) != LMS_OK)
    c->home_ev = NULL;
  if (c->home_ev != NULL &&
      s->dev->ops->event_record(s->dev, c->home_ev, s->d2h) == LMS_OK)
    c->home_pending = 1;
  else if (s->dev->ops->stream_sync(s->dev, s->d2h) != LMS_OK)
    c->home_unknown = 1;
  st = free_one(s, c);
  return first != LMS_OK ? first : st;
}

static lms_status_t free_one(lms__swap_t *s, lms_chunk_t *c) {
  if (c->dptr != NULL) {
    void *stream = NULL;
    lms_status_t st = drop_stream(s, c, &stream);
    if (st != LMS_OK) return st;
    /* Brought in ahead and freed unused: the copy was for nothing. */
    if (c->prefetched) lms__stat_add(&s->stats.prefetch_wasted, 1);
    c->prefetched = 0;
    lru_remove(s, c);
    forget_device_copy(s, c, stream);
  }
  if (c->group != NULL) { /* its home is its chunk's */
    free_piece_meta(s, c);
    return LMS_OK;
  }
  if (c->home_unknown &&
      s->dev->ops->stream_sync(s->dev, s->d2h) == LMS_OK)
    c->home_unknown = 0;
  if (c->host_homed) {
    lms__registry_remove(&s->registry, &c->home_reg);
    /* A swap-in copy may still be reading the home; that cannot change any
     * chunk's bytes, and the pool keeps its memory pinned until the
     * context ends, so only copies writing into the home hold it back. */
    if (c->home_unknown) {
      LMS_LOG(WARN, SWAP, "a write-back into %p may still run; the home is "
              "not reused", c->home);
    } else if (c->home_pending &&
               !event_done(s, c->home_ev, "event_query at free")) {
      lms__deferred_t *df = malloc(sizeof *df);
      if (df != NULL) {
        df->home = c->home;
        df->event = c->home_ev;
        df->next = NULL;
        if (s->deferred_tail != NULL) s->deferred_tail->next = df;
        else s->deferred = df;
        s->deferred_tail = df;
        c->home_ev = NULL;
      }
      /* Without memory to remember it the home is leaked rather than
       * reused while a copy may still write into it. */
    } else {
      lms__hostpool_free(s->pool, c->home);
    }
    lms__stat_add(&s->stats.chunks_host_homed, -1);
    lms__stat_add(&s->stats.host_allocated, -(int64_t)c->size);
  }
  lms__evpool_put(&s->events, c->ready_ev);
  lms__evpool_put(&s->events, c->home_ev);
  if (c->all_prev) c->all_prev->all_next = c->all_next;
  else s->all = c->all_next;
  if (c->all_next) c->all_next->all_prev = c->all_prev;
  lms__stat_add(&s->stats.chunks, -1);
  s->chunk_bytes -= c->size;
  c->magic = 0;
  free(c);
  process_deferred(s, 0);
  return LMS_OK;
}

/* Note [Stalls measured after the fact]
 * Rationale: the adaptive window (Note [A window that adapts] in
 * graph/plan.c) halves its reach after a late prefetch, so a device that
 * never reports one leaves the window only growing.  A copy not done when
 * the host enqueues the acquiring step is no proof of a stall on a GPU:
 * the host runs ahead of the device, and by the time the stream gets
 * there the copy is often long done.  Only the device knows when the
 * stream got there.  CUDA cannot say it ahead (wait_cost answers only
 * "no wait" for a finished event), but it can time it: a timed event
 * recorded on the acquiring stream just before the stream_wait and one
 * just after are apart by the wait, since nothing runs between them.
 *
 * Approach: where wait_cost cannot tell, the wait is bracketed by two
 * timed events (event_create_timed) and the pair kept in a ring, oldest
 * first.  The ring is read (event_elapsed, which waits for nothing) at
 * every acquire, at every stats read and at sync: each pair whose second
 * event is done adds its time to the stalls and counts its prefetch late,
 * or a hit when the wait was within the timer's resolution
 * (LMS__STALL_RESOLUTION_NS); reading stops at the first pair not yet
 * done, so the counters take effect in order, a little after the step
 * that waited.  The simulated device's timed events measure exactly what
 * its wait_cost says ahead (Note [Timed events on the simulated device]),
 * so `--sim-waits measured` runs this path and shows the lag.
 *
 * Costs: two event records per late-looking acquire, one query per read
 * while pairs are pending.  A device with neither answer counts the
 * acquire as a hit: it cannot tell.  When the ring or its events cannot
 * be had, the wait is made unmeasured; nothing else depends on it. */
#define LMS__STALL_RESOLUTION_NS 2000

/* Reads the pairs whose waits are over, oldest first; with all, drops the
 * rest unread (at fini). */
static void read_probes(lms__swap_t *s, int all) {
  lms_dev_t *d = s->dev;
  while (s->probes_len > 0) {
    struct lms__stall_probe *p = &s->probes[s->probes_head];
    uint64_t ns = 0;
    lms_status_t st = d->ops->event_elapsed(d, p->before, p->after, &ns);
    if (st == LMS_NOT_READY && !all) break;
    if (st == LMS_OK && ns > LMS__STALL_RESOLUTION_NS) {
      lms__stat_add(&s->stats.stall_ns, (int64_t)ns);
      if (p->prefetched) lms__stat_add(&s->stats.prefetch_late, 1);
    } else if (st == LMS_OK || st == LMS_NOT_READY) {
      if (p->prefetched) lms__stat_add(&s->stats.prefetch_hits, 1);
    } else {
      LMS_LOG(WARN, SWAP, "event_elapsed for a stall: %s", d->last_error);
      if (p->prefetched) lms__stat_add(&s->stats.prefetch_hits, 1);
    }
    lms__evpool_put(&s->timed_events, p->before);
    lms__evpool_put(&s->timed_events, p->after);
    s->probes_head = (s->probes_head + 1) % s->probes_cap;
    s->probes_len--;
  }
}

/* stream_wait on ev, timed when the device can (Note [Stalls measured
 * after the fact]).  *timed is 1 when a pair now measures it. */
static lms_status_t wait_timed(lms__swap_t *s, void *stream, void *ev,
                               int prefetched, int *timed) {
  lms_dev_t *d = s->dev;
  *timed = 0;
  void *before = NULL, *after = NULL;
  if (d->ops->event_elapsed != NULL && s->probes_len == s->probes_cap) {
    size_t cap = s->probes_cap ? s->probes_cap * 2 : 16;
    struct lms__stall_probe *v = malloc(cap * sizeof *v);
    if (v != NULL) {
      for (size_t i = 0; i < s->probes_len; i++)
        v[i] = s->probes[(s->probes_head + i) % s->probes_cap];
      free(s->probes);
      s->probes = v;
      s->probes_cap = cap;
      s->probes_head = 0;
    }
  }
  if (d->ops->event_elapsed != NULL && s->probes_len < s->probes_cap &&
      lms__evpool_get(&s->timed_events, &before) == LMS_OK &&
      lms__evpool_get(&s->timed_events, &after) == LMS_OK &&
      d->ops->event_record(d, before, stream) == LMS_OK) {
    lms_status_t st = d->ops->stream_wait(d, stream, ev);
    if (st == LMS_OK && d->ops->event_record(d, after, stream) == LMS_OK) {
      s->probes[(s->probes_head + s->probes_len) % s->probes_cap] =
          (struct lms__stall_probe){before, after, prefetched};
      s->probes_len++;
      *timed = 1;
      return LMS_OK;
    }
    lms__evpool_put(&s->timed_events, before);
    lms__evpool_put(&s->timed_events, after);
    return st;
  }
  lms__evpool_put(&s->timed_events, before);
  lms__evpool_put(&s->timed_events, after);
  return d->ops->stream_wait(d, stream, ev);
}

/* Note [Counting stalls and prefetches]
 * An acquire of a host-homed chunk is one of: a cache hit (resident since
 * an earlier use), a prefetch hit (brought in ahead and arrived), a late
 * prefetch (brought in ahead, still in flight: the stream waits), or a
 * demand miss (this acquire starts the swap-in).  The stall is how long
 * the acquiring stream sits waiting for the copy, as the device estimates
 * it ahead (wait_cost), or as timed events measure it after the fact where
 * it cannot (Note [Stalls measured after the fact]).  Under the on-demand
 * policy the host waits for the copy too, as caffe-ibm's synchronous
 * swap-in did. */
static lms_status_t acquire_one(lms__swap_t *s, lms_chunk_t *c, void *stream,
                                unsigned access, void **dptr) {
  lms_dev_t *d = s->dev;
  int fresh = 0;
  int was_prefetched = c->prefetched;
  if (s->probes_len > 0) read_probes(s, 0);
  if (c->host_homed && c->dptr == NULL) {
    /* An overwrite keeps nothing of the old bytes: no copy. */
    int had_data = c->has_data && !(access & LMS_ACCESS_OVERWRITE);
    lms_status_t st = swap_in(s, c, stream, had_data);
    if (st != LMS_OK) return st;
    fresh = 1;
    if (had_data) lms__stat_add(&s->stats.demand_misses, 1);
  } else if (c->host_homed && !was_prefetched && c->pins == 0) {
    lms__stat_add(&s->stats.cache_hits, 1);
  }
  if (c->ready_pending) {
    if (event_done(s, c->ready_ev, "event_query for a swap-in")) {
      c->ready_pending = 0;
      if (was_prefetched) lms__stat_add(&s->stats.prefetch_hits, 1);
    } else {
      uint64_t stall = 0;
      int known = d->ops->wait_cost != NULL &&
                  d->ops->wait_cost(d, stream, c->ready_ev, &stall) == LMS_OK;
      int timed = 0;
      lms_status_t st =
          known ? d->ops->stream_wait(d, stream, c->ready_ev)
                : wait_timed(s, stream, c->ready_ev, was_prefetched, &timed);
      if (st != LMS_OK) {
        /* The chunk stays resident and unpinned: evictable as usual. */
        if (fresh) lru_push(s, c);
        return device_error(s, st, "stream_wait for a swap-in");
      }
      if (!known) stall = 0; /* timed: counted when read; else unknown */
      lms__stat_add(&s->stats.stall_ns, (int64_t)stall);
      if (was_prefetched && stall > 0)
        lms__stat_add(&s->stats.prefetch_late, 1);
      if (was_prefetched && stall == 0 && !timed)
        lms__stat_add(&s->stats.prefetch_hits, 1);
      if (s->policy == LMS_POLICY_ONDEMAND &&
          d->ops->event_sync(d, c->ready_ev) == LMS_OK)
        c->ready_pending = 0;
    }
  } else if (was_prefetched) {
    lms__stat_add(&s->stats.prefetch_hits, 1);
  }
  if ((access & LMS_ACCESS_WRITE) && !fresh && c->home_pending &&
      !event_done(s, c->home_ev, "event_query before a write")) {
    /* A write-back ahead is still reading the device copy: writing it now
     * would tear the home (Note [Writing back ahead]). */
    lms_status_t st = d->ops->stream_wait(d, stream, c->home_ev);
    if (st != LMS_OK) return device_error(s, st, "stream_wait for a write-back");
  }
  c->prefetched = 0;
  lru_remove(s, c);
  c->pins++;
  c->last_wrote = (access & LMS_ACCESS_WRITE) != 0;
  if (access & LMS_ACCESS_WRITE) {
    c->dirty = 1;
    c->has_data = 1;
  }
  *dptr = c->dptr;
  return LMS_OK;
}

static lms_status_t release_one(lms__swap_t *s, lms_chunk_t *c,
                                void *stream) {
  lms_dev_t *d = s->dev;
  if (c->pins == 0) {
    lms__errf(s->err, "lms_release: the chunk is not acquired");
    return LMS_ERR_INVALID;
  }
  int slot = -1;
  for (int i = 0; i < c->nuses; i++)
    if (c->uses[i].stream == stream) slot = i;
  lms_status_t st;
  if (slot >= 0) {
    st = d->ops->event_record(d, c->uses[slot].event, stream);
    if (st != LMS_OK) return device_error(s, st, "event_record at release");
  } else {
    if (c->nuses == LMS__MAX_USES) {
      /* Make room by waiting for the oldest stream's work. */
      st = d->ops->event_sync(d, c->uses[0].event);
      if (st != LMS_OK) return device_error(s, st, "event_sync at release");
      lms__evpool_put(&s->events, c->uses[0].event);
      memmove(&c->uses[0], &c->uses[1], (LMS__MAX_USES - 1) * sizeof c->uses[0]);
      c->nuses--;
    }
    void *ev = NULL;
    st = lms__evpool_get(&s->events, &ev);
    if (st != LMS_OK) return device_error(s, st, "event_create at release");
    st = d->ops->event_record(d, ev, stream);
    if (st != LMS_OK) {
      lms__evpool_put(&s->events, ev);
      return device_error(s, st, "event_record at release");
    }
    c->uses[c->nuses].stream = stream;
    c->uses[c->nuses].event = ev;
    c->nuses++;
  }
  c->pins--;
  if (c->pins == 0 && c->host_homed) {
    lru_push(s, c);
    /* caffe-ibm's on-demand LMS gives a chunk up once it has been read
     * (a layer's input, after the layer); what a layer just wrote stays
     * until it is read or room is needed. */
    if (s->policy == LMS_POLICY_ONDEMAND && !c->last_wrote) {
      st = evict(s, c);
      if (st != LMS_OK)
        LMS_LOG(WARN, SWAP, "on-demand swap-out deferred: %s", s->err);
    }
  }
  return LMS_OK;
}

/* Note [Dead bytes are not written back]
 * A gradient consumed by the layer below, or an activation after its last
 * backward use, holds bytes nobody reads again: the next iteration
 * overwrites them first.  Written back, they cost a device-to-host copy of
 * their size at each eviction (in GoogLeNet training at batch 10, dead
 * gradients are a large part of what moves).  lms_discard is the
 * program's word that the bytes are dead: the chunk is marked as never
 * written (so no acquire brings anything in until it is written again),
 * and a resident copy is dropped at once, without a copy, its block
 * returned after the work already queued with it.  lms never decides this
 * for itself, not even from a declared schedule: a wrong guess would
 * change a chunk's bytes. */
lms_status_t lms__swap_discard(lms__swap_t *s, lms_chunk_t *c) {
  LMS_CHECK(refuse_acquired(s, c, "lms_discard"));
  if (c->npieces > 0) { /* Note [Chunks of pieces] */
    for (uint32_t i = 0; i < c->npieces; i++)
      if (c->pieces[i] != NULL) LMS_CHECK(lms__swap_discard(s, c->pieces[i]));
    return LMS_OK;
  }
  c->has_data = 0;
  set_clean(s, c);
  if (c->host_homed && c->dptr != NULL) return evict(s, c);
  return LMS_OK;
}

/* Note [Chunks of pieces]: every piece, in order, each shown at its
 * offset of the chunk's range if its block changed. */
lms_status_t lms__swap_acquire(lms__swap_t *s, lms_chunk_t *c, void *stream,
                               unsigned access, void **dptr) {
  if (c->npieces == 0) return acquire_one(s, c, stream, access, dptr);
  lms_status_t st = LMS_OK;
  uint32_t i = 0;
  for (; i < c->npieces; i++) {
    lms_chunk_t *p = c->pieces[i];
    if (p == NULL) {
      lms__errf(s->err, "lms_acquire: a free of this chunk failed part way; "
                "free it again");
      st = LMS_ERR_INVALID;
      break;
    }
    void *block = NULL;
    st = acquire_one(s, p, stream, access, &block);
    if (st != LMS_OK) break;
    if (p->shown != block) {
      st = wait_unmap(s, p);
      if (st == LMS_OK) {
        st = s->dev->ops->dev_map(s->dev, (char *)c->va + p->piece_off,
                                  block, p->size);
        if (st != LMS_OK) st = device_error(s, st, "dev_map of a piece");
      }
      if (st != LMS_OK) {
        release_one(s, p, stream);
        break;
      }
      p->shown = block;
    }
  }
  if (st != LMS_OK) {
    /* What was acquired is released: nothing stays pinned, no byte moves
     * (Note [Failure leaves things as they were]). */
    while (i-- > 0) release_one(s, c->pieces[i], stream);
    return st;
  }
  if (access & LMS_ACCESS_WRITE) c->last_wrote = 1;
  c->pins++;
  *dptr = c->va;
  return LMS_OK;
}

lms_status_t lms__swap_release(lms__swap_t *s, lms_chunk_t *c, void *stream) {
  if (c->npieces == 0) return release_one(s, c, stream);
  if (c->pins == 0) {
    lms__errf(s->err, "lms_release: the chunk is not acquired");
    return LMS_ERR_INVALID;
  }
  lms_status_t first = LMS_OK;
  for (uint32_t i = 0; i < c->npieces; i++) {
    lms_status_t st = release_one(s, c->pieces[i], stream);
    if (st != LMS_OK && first == LMS_OK) first = st;
  }
  c->pins--;
  return first;
}

lms_status_t lms__swap_drop(lms__swap_t *s, lms_chunk_t *c) {
  if (!c->host_homed || c->dptr == NULL || c->pins > 0) return LMS_OK;
  return evict(s, c);
}

lms_status_t lms__swap_write_home(lms__swap_t *s, lms_chunk_t *c, int *wrote) {
  *wrote = 0;
  if (!c->host_homed || c->dptr == NULL || c->pins > 0 || !c->dirty ||
      c->home_unknown)
    return LMS_OK;
  LMS_CHECK(write_home(s, c));
  *wrote = 1;
  return LMS_OK;
}

lms_status_t lms__swap_evict_all(lms__swap_t *s) {
  while (s->lru_head != NULL) LMS_CHECK(evict(s, s->lru_head));
  return LMS_OK;
}

lms_status_t lms__swap_sync(lms__swap_t *s) {
  lms_dev_t *d = s->dev;
  lms_status_t st = d->ops->stream_sync(d, s->h2d);
  if (st != LMS_OK) return device_error(s, st, "stream_sync (host to device)");
  st = d->ops->stream_sync(d, s->d2h);
  if (st != LMS_OK) return device_error(s, st, "stream_sync (device to host)");
  process_deferred(s, 1);
  if (s->probes_len > 0) read_probes(s, 0);
  return lms__devcache_sync(&s->cache);
}

void lms__swap_stats(lms__swap_t *s, lms_stats_t *out) {
  if (s->probes_len > 0) read_probes(s, 0);
  int64_t pinned = (int64_t)lms__hostpool_pinned(s->pool);
  s->stats.host_pinned.current = pinned;
  if (pinned > s->stats.host_pinned.peak) s->stats.host_pinned.peak = pinned;
  s->stats.host_pinned.total = s->stats.host_pinned.peak;
  s->stats.fragmentation = lms__devcache_fragmentation(&s->cache);
  s->stats.elapsed_ns = s->dev->ops->now_ns(s->dev);
  *out = s->stats;
  /* Pinned allocations the device refused count as device errors too. */
  int64_t pool_failures = (int64_t)lms__hostpool_failures(s->pool);
  out->device_errors.current += pool_failures;
  out->device_errors.total += pool_failures;
  if (out->device_errors.current > out->device_errors.peak)
    out->device_errors.peak = out->device_errors.current;
}

void lms__swap_fini(lms__swap_t *s) {
  if (s->pool == NULL) return;
  if (lms__swap_sync(s) != LMS_OK)
    LMS_LOG(WARN, SWAP, "work still in flight at exit: %s", s->err);
  /* The chunks' ranges and the device cache's blocks are given back
   * below, and a GPU may unmap memory that work still uses (Note
   * [Showing a piece again]): first every use is waited for, on the
   * program's streams too. */
  int unwaited = 0;
  for (lms_chunk_t *c = s->all; c != NULL; c = c->all_next) {
    for (int i = 0; i < c->nuses; i++)
      unwaited |= s->dev->ops->event_sync(s->dev, c->uses[i].event) != LMS_OK;
    if (c->group != NULL) unwaited |= settle_old_uses(s, c);
  }
  if (unwaited)
    LMS_LOG(WARN, SWAP, "a chunk's use could not be waited for at exit");
  lms_chunk_t *next;
  for (lms_chunk_t *c = s->all; c != NULL; c = next) {
    next = c->all_next;
    clear_uses(s, c);
    lms__evpool_put(&s->events, c->ready_ev);
    lms__evpool_put(&s->events, c->home_ev);
    if (c->va != NULL) s->dev->ops->va_release(s->dev, c->va);
    free(c->pieces);
    c->magic = 0;
    free(c);
  }
  s->all = NULL;
  while (s->deferred != NULL) {
    lms__deferred_t *df = s->deferred;
    s->deferred = df->next;
    lms__evpool_put(&s->events, df->event);
    free(df);
  }
  s->deferred_tail = NULL;
  lms__devcache_fini(&s->cache);
  lms__hostpool_destroy(s->pool);
  s->pool = NULL;
  lms__node_ledger_leave(s->node);
  s->node = NULL;
  read_probes(s, 1);
  free(s->probes);
  s->probes = NULL;
  s->probes_cap = s->probes_head = 0;
  lms__evpool_fini(&s->timed_events);
  lms__evpool_fini(&s->events);
  s->dev->ops->stream_destroy(s->dev, s->h2d);
  s->dev->ops->stream_destroy(s->dev, s->d2h);
}
