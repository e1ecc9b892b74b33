/* stable.c - the stable-pointer allocator (stable.h).
 *
 * A block is one driver allocation, device or managed, rounded up to its
 * size class.  Freed blocks stay cached on a list per class and kind,
 * tagged with the device and stream they were freed on; the next request
 * of that class on the same device and stream takes one back without a
 * driver call.  One mutex guards everything and is held across driver
 * calls: nothing the driver does calls back into this allocator. */
#include "stable/stable.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/budget.h"
#include "core/dlist.h"
#include "core/log.h"
#include "core/map.h"
#include "core/period.h"
#include "core/placement.h"
#include "core/victim.h"

enum { KIND_DEVICE = 0, KIND_MANAGED = 1 };

/* Note [Size classes of the stable allocator]
 * Up to 1 MiB a request is rounded up to a multiple of 512 bytes (2048
 * classes); above, each power of two (2^k, 2^(k+1)] is cut into 16
 * classes of 2^(k-4) bytes, so a block wastes at most 1/16 of what was
 * asked.  A cached block serves only its own class: a training loop asks
 * for the same sizes every step, so exact classes hit, and a block never
 * serves a request much smaller than itself. */
#define SMALL_MAX (1u << 20)
#define SMALL_STEP 512u
#define SMALL_CLASSES (SMALL_MAX / SMALL_STEP)
#define SUB 16u
#define NCLASSES (SMALL_CLASSES + (64u - 20u) * SUB)

static unsigned size_class(uint64_t size, uint64_t *rounded) {
  if (size <= SMALL_MAX) {
    uint64_t n = (size + SMALL_STEP - 1) / SMALL_STEP;
    *rounded = n * SMALL_STEP;
    return (unsigned)(n - 1);
  }
  unsigned k = 63u - (unsigned)__builtin_clzll(size - 1); /* 2^k < size */
  uint64_t step = 1ull << (k - 4);
  uint64_t n = (size + step - 1) / step; /* 17..32 */
  *rounded = n * step;
  return SMALL_CLASSES + (k - 20u) * SUB + (unsigned)(n - 17);
}

typedef struct block {
  uint64_t ptr;
  uint64_t size;          /* the class's size */
  unsigned cls;
  int kind;
  int device;
  int live;
  int resident;           /* managed: prefetched to the device */
  void *stream;           /* of its allocation, then of its free */
  uint64_t batch;         /* the prefetch call that last moved it in */
  uint64_t born;          /* the event that handed it out */
  uint64_t want;          /* the last event it is predicted to be used by */
  void *drop_ev;          /* after a discard on a program stream */
  struct block *next_free;
  struct block *lru_prev, *lru_next; /* resident managed, oldest first */
} block_t;

/* Every block by its address (Note [One hash map] in core/map.h). */
LMS__MAP(blocks, block_t *, lms__map_zalloc, lms__map_release)

/* The learned order of allocations and frees (Note [Learned prefetch from
 * the allocation order]): born[i % LEN] is the block event i handed out
 * while it is live; age[i % LEN] is, for a free, how many events before it
 * the block was handed out, and NOT_FREE for an allocation; life[i % LEN]
 * is, for an allocation, how many events later its block was freed, and
 * NOT_FREE while it is live. */
#define NOT_FREE UINT64_MAX
typedef struct learn {
  lms__period_t period;
  block_t *born[LMS__PERIOD_LEN];
  uint64_t age[LMS__PERIOD_LEN];
  uint64_t life[LMS__PERIOD_LEN];
  uint64_t seen_until;    /* events ahead already looked at */
} learn_t;

/* make_room's `keep` when no hint batch is to be kept. */
#define NO_BATCH UINT64_MAX
/* Events a block just handed out is kept on the device: the kernel that
 * writes it is usually queued after the allocation and before the next. */
#define GRACE 2

struct lms__stable {
  pthread_mutex_t lock;
  lms__stable_cfg_t cfg;
  lms__drv_t drv;
  uint64_t limit;
  uint64_t reserve;        /* for resident managed blocks, once hinted */
  blocks_t blocks;
  block_t *free_heads[2][NCLASSES];
  block_t *lru_head, *lru_tail;
  uint64_t batch;
  uint64_t cached_device; /* bytes of device blocks on the free lists */
  uint64_t clock;         /* allocations and frees so far */
  learn_t *learn;         /* NULL: --prefetch-window 0 */
  void *in, *out;         /* the allocator's streams, for moves */
  void *ev_out;
  int movers;             /* 0 not made, 1 made (for mover_dev), -1 none */
  int mover_dev;
  int no_discard;         /* the driver refused a discard once */
  void **evs;             /* events not in use */
  size_t nevs, cap_evs;
  lms__stable_stats_t st;
};

static block_t **find_slot(lms__stable_t *s, uint64_t ptr) {
  return blocks_find(&s->blocks, ptr);
}

static int add_block(lms__stable_t *s, block_t *b) {
  return blocks_put(&s->blocks, b->ptr, b);
}

static void remove_block(lms__stable_t *s, block_t *b) {
  blocks_del(&s->blocks, b->ptr);
}

/* ---- Residency of managed blocks -------------------------------------- */

static void lru_unlink(lms__stable_t *s, block_t *b) {
  LMS__DLIST_UNLINK(s->lru_head, s->lru_tail, b, lru_prev, lru_next);
}

static void lru_push(lms__stable_t *s, block_t *b) {
  LMS__DLIST_PUSH_BACK(s->lru_head, s->lru_tail, b, lru_prev, lru_next);
}

static void note_peak(lms__stable_t *s) {
  uint64_t d = s->st.device_held + s->st.resident;
  if (d > s->st.device_peak) s->st.device_peak = d;
}

static int room_for(lms__stable_t *s, uint64_t need) {
  return lms__budget_fits(s->st.device_held + s->st.resident, need,
                          s->limit, 0);
}

static void set_resident(lms__stable_t *s, block_t *b) {
  b->resident = 1;
  lru_push(s, b);
  s->st.resident += b->size;
  s->st.prefetches++;
  s->st.prefetch_bytes += b->size;
  note_peak(s);
}

static void clear_resident(lms__stable_t *s, block_t *b) {
  lru_unlink(s, b);
  b->resident = 0;
  s->st.resident -= b->size;
}

/* ---- The allocator's streams and events --------------------------------- */

/* 1 when the streams of the allocator's own exist for `device`; made on
 * first use, in the context of the first device that needs them. */
static int movers(lms__stable_t *s, int device) {
  if (s->movers == 0) {
    s->movers = -1;
    if (s->drv.bind(device) == 0 && s->drv.stream_create(&s->in) == 0 &&
        s->drv.stream_create(&s->out) == 0 &&
        s->drv.event_create(&s->ev_out) == 0) {
      s->movers = 1;
      s->mover_dev = device;
    } else {
      LMS_LOG(WARN, ALLOC, "no streams of the allocator's own: the learned "
              "prefetch is off (blocks are read where they are)");
    }
  }
  return s->movers > 0 && s->mover_dev == device;
}

static void *ev_get(lms__stable_t *s) {
  if (s->nevs > 0) return s->evs[--s->nevs];
  void *ev = NULL;
  return s->drv.event_create(&ev) == 0 ? ev : NULL;
}

static void ev_put(lms__stable_t *s, void *ev) {
  if (s->nevs == s->cap_evs) {
    size_t cap = s->cap_evs == 0 ? 16 : 2 * s->cap_evs;
    void **evs = realloc(s->evs, cap * sizeof *evs);
    if (evs == NULL) return; /* the event is lost, not the block */
    s->evs = evs;
    s->cap_evs = cap;
  }
  s->evs[s->nevs++] = ev;
}

/* Note [Discarding on the program's stream]
 * A dead block's bytes need not move: cuMemDiscardAndPrefetchBatchAsync
 * gives them up and moves the pages without copying.  The driver leaves
 * undefined a discard that overlaps a read, write or prefetch of the
 * range, so the discard goes on the stream of the block's last user, in
 * order with its past work and with its next user's, since a cached block
 * is handed out again only on the stream that freed it (or after a
 * synchronise).  The driver refuses the legacy NULL stream there; the
 * per-thread default stream (handle 2) stands in, being a blocking stream
 * that the legacy one is ordered with both ways.  Moves on the
 * allocator's own streams are not in that order, so an event recorded
 * after the discard must have completed before one of them touches the
 * block (discard_done).  A driver without the call (before CUDA 12.8),
 * or one that refuses it, gets copies instead, from then on. */
static void *program_stream(void *stream) {
  return stream == NULL || stream == (void *)1 ? (void *)2 : stream;
}

static int discard_done(lms__stable_t *s, block_t *b) {
  if (b->drop_ev == NULL) return 1;
  if (s->drv.event_query(b->drop_ev) != 0) return 0;
  ev_put(s, b->drop_ev);
  b->drop_ev = NULL;
  return 1;
}

/* Gives up b's bytes and moves its pages to `device` (< 0: the host)
 * uncopied; 0 when done, -1 when the caller must copy instead. */
static int discard(lms__stable_t *s, block_t *b, int device) {
  if (s->drv.discard == NULL || s->no_discard) return -1;
  void *stream = program_stream(b->stream);
  int res = s->drv.discard(b->ptr, b->size, device, stream);
  if (res != 0) {
    s->no_discard = 1;
    LMS_LOG(WARN, ALLOC, "discarding managed memory failed (%s): dead "
            "blocks are copied from now on", s->drv.error_name(res));
    return -1;
  }
  void *ev = b->drop_ev != NULL ? b->drop_ev : ev_get(s);
  b->drop_ev = NULL;
  if (ev != NULL && s->drv.event_record(ev, stream) == 0) {
    b->drop_ev = ev;
  } else {
    if (ev != NULL) ev_put(s, ev);
    if (s->drv.ctx_synchronize() == 0) s->st.syncs++; /* its end unknown */
  }
  return 0;
}

/* Sends live b back to the host, with a failure only logged: the pages
 * stay where the driver put them, still correct.  With own, on the
 * allocator's out stream after the work queued so far on b's stream (so
 * it does not pull pages from under the kernel writing them); else on
 * `stream`. */
static void evict(lms__stable_t *s, block_t *b, void *stream, int own) {
  int res;
  if (own && movers(s, b->device) &&
      s->drv.event_record(s->ev_out, b->stream) == 0 &&
      s->drv.stream_wait_event(s->out, s->ev_out) == 0)
    res = s->drv.prefetch(b->ptr, b->size, -1, s->out);
  else
    res = s->drv.prefetch(b->ptr, b->size, -1, own ? b->stream : stream);
  clear_resident(s, b);
  if (res == 0) {
    s->st.evictions++;
    s->st.evict_bytes += b->size;
  } else {
    LMS_LOG(WARN, ALLOC, "evicting %" PRIu64 " bytes at 0x%" PRIx64
            " to the host failed: %s", b->size, b->ptr,
            s->drv.error_name(res));
  }
}

/* Takes dead (cached) b off the device, uncopied when the driver can. */
static void drop(lms__stable_t *s, block_t *b, void *stream) {
  if (discard(s, b, -1) != 0) {
    evict(s, b, stream, 0);
    return;
  }
  clear_resident(s, b);
  s->st.drops++;
  s->st.drop_bytes += b->size;
}

static void release_block(lms__stable_t *s, block_t *b);

/* Note [Making room on the device]
 * Room for `need` more resident bytes, wanted by event `at`, is found in
 * the order of Note [One victim rule] (core/victim.c): dead resident
 * blocks are dropped (Note [Discarding on the program's stream]); live
 * ones whose predicted use has passed (their `want`) are sent back, the
 * longest passed first; then, as Belady's rule has it, live ones wanted
 * later than `at`, the latest first, whose predicted use is looked at
 * again by the learned walk; last, device blocks cached past the
 * reserve's share (left from before the reserve was kept) go back to the
 * driver after a synchronise.  The hint batch `keep` is never sent back
 * (its dead blocks are dropped), and nothing wanted is for `at` NO_WANT.
 * 1 when the bytes fit.  `own`: moves go on the allocator's streams
 * (learned), else on `stream` (hints).  Each victim is a walk of the
 * resident blocks, least recently wanted first. */
#define NO_WANT UINT64_MAX

static int make_room(lms__stable_t *s, uint64_t need, uint64_t at,
                     uint64_t keep, void *stream, int own) {
  const lms__victim_ask_t q = {
      .now = s->clock, .need = at, .passed_only = at == NO_WANT};
  while (!room_for(s, need)) {
    block_t *best = NULL, *next;
    lms__victim_t best_v = {0};
    for (block_t *b = s->lru_head; b != NULL && !room_for(s, need); b = next) {
      next = b->lru_next;
      if (b->live && b->batch == keep) continue;
      lms__victim_t v = {.next_use = b->want, .dead = !b->live};
      /* The dead go first, in the order seen: dropped as the walk meets
       * them, one walk for all of them. */
      if (lms__victim_tier(&q, &v) == 0) {
        drop(s, b, stream);
        continue;
      }
      if (lms__victim_better(&q, &v, best != NULL ? &best_v : NULL)) {
        best = b;
        best_v = v;
      }
    }
    if (best == NULL || room_for(s, need)) break;
    if (lms__victim_tier(&q, &best_v) >= 2 && s->learn != NULL &&
        best->want < s->learn->seen_until)
      s->learn->seen_until = best->want; /* to be brought back */
    evict(s, best, stream, own);
  }
  uint64_t cap = s->limit - s->reserve;
  if (!room_for(s, need) && s->reserve > 0 && s->st.device_held > cap &&
      s->cached_device > 0) {
    if (s->drv.ctx_synchronize() == 0) s->st.syncs++;
    s->st.cache_flushes++;
    for (unsigned c = NCLASSES; c-- > 0;) {
      while (s->free_heads[KIND_DEVICE][c] != NULL &&
             s->st.device_held > cap && !room_for(s, need)) {
        block_t *b = s->free_heads[KIND_DEVICE][c];
        s->free_heads[KIND_DEVICE][c] = b->next_free;
        s->cached_device -= b->size;
        release_block(s, b);
      }
    }
  }
  return room_for(s, need);
}

/* ---- Cache -------------------------------------------------------------- */

static int device_fits(lms__stable_t *s, uint64_t size);

static block_t *take_cached(lms__stable_t *s, int kind, unsigned cls,
                            int device, void *stream) {
  block_t **pp = &s->free_heads[kind][cls];
  for (; *pp != NULL; pp = &(*pp)->next_free) {
    block_t *b = *pp;
    if (b->device == device && b->stream == stream) {
      *pp = b->next_free;
      b->next_free = NULL;
      if (kind == KIND_DEVICE) s->cached_device -= b->size;
      return b;
    }
  }
  return NULL;
}

static void release_block(lms__stable_t *s, block_t *b) {
  int res = s->drv.mem_free(b->ptr);
  if (res != 0)
    LMS_LOG(WARN, ALLOC, "freeing %" PRIu64 " bytes at 0x%" PRIx64
            " failed: %s", b->size, b->ptr, s->drv.error_name(res));
  s->st.driver_frees++;
  if (b->kind == KIND_DEVICE) {
    s->st.device_held -= b->size;
  } else {
    if (b->resident) clear_resident(s, b);
    if (b->drop_ev != NULL) ev_put(s, b->drop_ev); /* after a synchronise */
    s->st.managed_held -= b->size;
  }
  remove_block(s, b);
  free(b);
}

/* Note [Emptying the cache]
 * Cached blocks may still be in use by work queued on the stream that
 * freed them, so they go back to the driver only after the whole context
 * has synchronised (cuMemFree would wait for the device anyway, but a
 * block taken by another stream would not).  Only device blocks are
 * returned when making room for a device block; the cached managed blocks
 * cost no device memory unless resident. */
static void flush_cache(lms__stable_t *s, int kinds_mask) {
  if (s->drv.ctx_synchronize() == 0) s->st.syncs++;
  s->st.cache_flushes++;
  for (int k = 0; k < 2; k++) {
    if (!(kinds_mask & (1 << k))) continue;
    for (unsigned c = 0; c < NCLASSES; c++) {
      block_t *b = s->free_heads[k][c];
      s->free_heads[k][c] = NULL;
      while (b != NULL) {
        block_t *next = b->next_free;
        release_block(s, b);
        b = next;
      }
    }
  }
  if (kinds_mask & (1 << KIND_DEVICE)) s->cached_device = 0;
}

/* Note [Releasing only what is needed]
 * Emptying the whole cache to fit one block throws away the blocks the
 * next requests of a training step would have reused, and every emptying
 * costs a synchronise; measured on GoogLeNet under half its memory, that
 * churn cost more than the managed memory it avoided.  So a request that
 * does not fit first checks that the cached device blocks could make room
 * at all (no synchronise when they cannot), then returns the largest
 * cached blocks first, only until the request fits. */
static int release_for(lms__stable_t *s, uint64_t size) {
  uint64_t cap = s->limit - s->reserve;
  uint64_t used = s->st.device_held + s->st.resident;
  uint64_t over = used + size > cap ? used + size - cap : 0;
  if (over == 0) return 1;
  if (s->cached_device < over) return 0;
  if (s->drv.ctx_synchronize() == 0) s->st.syncs++;
  s->st.cache_flushes++;
  for (unsigned c = NCLASSES; c-- > 0 && !device_fits(s, size);) {
    while (s->free_heads[KIND_DEVICE][c] != NULL && !device_fits(s, size)) {
      block_t *b = s->free_heads[KIND_DEVICE][c];
      s->free_heads[KIND_DEVICE][c] = b->next_free;
      s->cached_device -= b->size;
      release_block(s, b);
    }
  }
  return device_fits(s, size);
}

/* ---- Learned prefetch -------------------------------------------------- */

/* Note [Learned prefetch from the allocation order]
 *
 * Rationale: with PyTorch's pluggable allocator nothing but allocations
 * and frees is seen: no kernels, no layers.  Yet a training step is
 * regular: it asks for the same sizes in the same order every iteration,
 * and a tensor's free follows its last use (the framework frees as soon
 * as the last reader is queued).  Activations are handed out in the
 * forward pass and freed in reverse order in the backward pass, a stack
 * discipline, so the free that ends a block's life says when it is read
 * for the last time, and the learned order says that free's event ahead
 * of time.
 *
 * What is learned: each allocation and free is an event keyed by its
 * kind, size class and stream, and a free also by its age (how many
 * events earlier its block was handed out).  The period of that sequence
 * is found as for launches (Note [A period in the launch trace]).  While
 * a period P holds, the free predicted at event t, P events after one of
 * age a, will free the block handed out at event t - a: that block is
 * known now, and if it is a managed block off the device it is prefetched
 * ahead of its last uses, up to min(P, STEPS of --prefetch-window) events
 * ahead, on a stream of the allocator's own so that the move overlaps the
 * program's kernels.  Its `want` is t: it is not sent back before then.
 *
 * Placement with learning on: a managed block handed out is made
 * resident at once if room can be made (it is about to be written), and
 * kept GRACE events; afterwards it may go back to the host when room is
 * needed (Note [Making room on the device]), which is the swap-out of an
 * activation after its forward use.  From the first managed block on,
 * new device blocks leave the window's share of the limit free (Note
 * [Prefetch hints and the reserve]), and device blocks cached past that
 * share are returned to the driver when room is needed.
 *
 * Correctness: every block keeps one address and managed memory is
 * correct wherever its pages are, so a wrong prediction only moves bytes
 * for nothing; a block whose discard may still be running is not moved
 * by the allocator's streams (Note [Discarding on the program's stream]).
 *
 * Limits: an order that never repeats (allocation sizes that change
 * every step, several threads racing) finds no period and so no
 * prefetch; a block whose life is longer than LMS__PERIOD_LEN events is
 * not predicted; the streams serve the first device that needs them. */
static uint64_t event_key(int is_free, const block_t *b, uint64_t age) {
  uint64_t k = ((uint64_t)b->cls << 1) | (uint64_t)is_free;
  k ^= (uint64_t)(uintptr_t)b->stream * 0x9e3779b97f4a7c15ull;
  k ^= age * 0xff51afd7ed558ccdull;
  return k;
}

static void keep_reserve(lms__stable_t *s) {
  if (s->reserve != 0 || s->cfg.window.steps == 0) return;
  s->reserve = lms__window_cap(&s->cfg.window, s->limit);
  s->st.reserve = s->reserve;
}

/* b, predicted to be used until event t, onto the device; 0 when no room
 * can be made now (the walk stops and tries again at the next event). */
static int bring_in(lms__stable_t *s, block_t *b, uint64_t t) {
  if (b->want < t) b->want = t;
  if (b->resident) {
    lru_unlink(s, b);
    lru_push(s, b);
    return 1;
  }
  if (b->size > s->limit || !movers(s, b->device) || !discard_done(s, b) ||
      s->drv.bind(b->device) != 0) {
    s->st.moves_skipped++;
    return 1;
  }
  if (!make_room(s, b->size, t, NO_BATCH, NULL, 1)) return 0;
  int res = s->drv.prefetch(b->ptr, b->size, b->device, s->in);
  if (res != 0) {
    s->st.moves_skipped++;
    LMS_LOG(WARN, ALLOC, "prefetch of %" PRIu64 " bytes failed: %s",
            b->size, s->drv.error_name(res));
    return 1;
  }
  b->batch = 0;
  set_resident(s, b);
  s->st.learned++;
  return 1;
}

/* A managed block just handed out (fresh: new from the driver) onto the
 * device, if room can be made; its old bytes, if any, are dead. */
static void settle(lms__stable_t *s, block_t *b, int fresh) {
  b->want = s->clock + GRACE;
  if (b->resident) {
    lru_unlink(s, b);
    lru_push(s, b);
    return;
  }
  if (s->reserve == 0 || b->size > s->reserve ||
      s->drv.bind(b->device) != 0 ||
      !make_room(s, b->size, b->want, NO_BATCH, b->stream, 1))
    return;
  int res = discard(s, b, b->device) == 0 ? 0 : -1;
  if (res != 0 && fresh) /* nothing to copy yet */
    res = s->drv.prefetch(b->ptr, b->size, b->device, b->stream);
  if (res != 0) return;
  b->batch = 0;
  set_resident(s, b);
  s->st.eager++;
}

/* Notes an allocation or free of b in the learned order and prefetches
 * the blocks the events ahead will free. */
static void learn(lms__stable_t *s, block_t *b, int is_free) {
  uint64_t now = s->clock++;
  learn_t *L = s->learn;
  if (L == NULL) return;
  size_t slot = (size_t)(now % LMS__PERIOD_LEN);
  uint64_t age = NOT_FREE;
  if (is_free) {
    age = now - b->born;
    size_t was = (size_t)(b->born % LMS__PERIOD_LEN);
    if (age < LMS__PERIOD_LEN && L->born[was] == b) {
      L->born[was] = NULL;
      L->life[was] = age;
    }
    L->born[slot] = NULL;
  } else {
    b->born = now;
    L->born[slot] = b;
  }
  L->age[slot] = age;
  L->life[slot] = NOT_FREE;
  uint64_t period =
      lms__period_note(&L->period, event_key(is_free, b, is_free ? age : 0),
                       NULL, 0);
  s->st.period = period;
  s->st.locks = L->period.locks;
  if (L->seen_until < now + 1) L->seen_until = now + 1;
  if (period == 0) return;
  uint64_t ahead = period < s->cfg.window.steps ? period : s->cfg.window.steps;
  /* A block born now whose free was looked at before it existed: its
   * free is predicted from the life of the block born a period ago. */
  uint64_t life = L->life[(now - period) % LMS__PERIOD_LEN];
  if (!is_free && b->kind == KIND_MANAGED && life != NOT_FREE &&
      now + life < L->seen_until)
    bring_in(s, b, now + life);
  for (uint64_t t = L->seen_until; t <= now + ahead; t++) {
    /* Event t repeats event t - period, among the last `period` noted. */
    uint64_t a = L->age[(t - period) % LMS__PERIOD_LEN];
    if (a != NOT_FREE && a <= t && t - a <= now && now - (t - a) < LMS__PERIOD_LEN) {
      block_t *x = L->born[(t - a) % LMS__PERIOD_LEN];
      if (x != NULL && x->born == t - a && x->live && x->kind == KIND_MANAGED &&
          !bring_in(s, x, t))
        break;
    }
    L->seen_until = t + 1;
  }
}

/* ---- Allocation ----------------------------------------------------------- */

/* The record of the driver's new block at ptr; with no host memory for
 * it, ptr goes back to the driver and the answer is NULL. */
static block_t *new_block(lms__stable_t *s, uint64_t ptr, uint64_t size,
                          unsigned cls, int kind, int device) {
  block_t *b = calloc(1, sizeof *b);
  if (b != NULL) {
    b->ptr = ptr;
    b->size = size;
    b->cls = cls;
    b->kind = kind;
    b->device = device;
    if (add_block(s, b) == 0) {
      s->st.driver_allocs++;
      return b;
    }
    free(b);
  }
  s->drv.mem_free(ptr);
  return NULL;
}

/* Note [Placement of a stable block]
 * A request goes to a device block while device blocks plus resident
 * managed blocks stay within the limit less the prefetch reserve; caffe's
 * rule (-lms KB with -lms_frac) may send it to the host first.  Room is
 * made in order of cost: a cached block of the class on the same stream
 * (no driver call), resident managed blocks evicted to the host, then
 * cached device blocks returned, largest first (Note [Releasing only what
 * is needed]).  What still does not fit, or
 * what the driver itself refuses, is served from managed memory preferred
 * on the host and read in place by the device. */
/* The one placement rule (core/placement.h), over the bytes live on the
 * device. */
static int wants_host(lms__stable_t *s, uint64_t size) {
  lms__placement_t p = {.lms_kb = s->cfg.lms_kb, .frac = s->cfg.lms_frac,
                        .capacity = s->limit};
  return lms__place_on_host(&p, size, s->st.device_live);
}

static int device_fits(lms__stable_t *s, uint64_t size) {
  return lms__budget_fits(s->st.device_held + s->st.resident, size,
                          s->limit, s->reserve);
}

static block_t *alloc_device(lms__stable_t *s, uint64_t size, unsigned cls,
                             int device, void *stream) {
  if (!device_fits(s, size)) {
    make_room(s, size + s->reserve, NO_WANT, NO_BATCH, stream, 1);
    if (!release_for(s, size)) return NULL;
  }
  uint64_t ptr = 0;
  int res = s->drv.mem_alloc(&ptr, size);
  if (res == 2 /* CUDA_ERROR_OUT_OF_MEMORY */) {
    flush_cache(s, 1 << KIND_DEVICE);
    res = s->drv.mem_alloc(&ptr, size);
  }
  if (res != 0) {
    LMS_LOG(INFO, ALLOC, "device allocation of %" PRIu64 " bytes refused "
            "(%s); serving it from managed memory", size,
            s->drv.error_name(res));
    return NULL;
  }
  block_t *b = new_block(s, ptr, size, cls, KIND_DEVICE, device);
  if (b == NULL) return NULL;
  s->st.device_held += size;
  note_peak(s);
  return b;
}

static block_t *alloc_managed(lms__stable_t *s, uint64_t size, unsigned cls,
                              int device, const char **err) {
  uint64_t ptr = 0;
  int res = s->drv.mem_alloc_managed(&ptr, size);
  if (res != 0) {
    *err = "managed memory refused the allocation (host memory exhausted?)";
    LMS_LOG(ERROR, ALLOC, "managed allocation of %" PRIu64 " bytes failed: "
            "%s", size, s->drv.error_name(res));
    return NULL;
  }
  res = s->drv.advise_host(ptr, size, device);
  if (res != 0)
    LMS_LOG(WARN, ALLOC, "advice for %" PRIu64 " managed bytes failed: %s "
            "(the block stays correct, only slower)", size,
            s->drv.error_name(res));
  block_t *b = new_block(s, ptr, size, cls, KIND_MANAGED, device);
  if (b == NULL) {
    *err = "out of host memory for the allocator's own records";
    return NULL;
  }
  s->st.managed_held += size;
  return b;
}

/* 1 when the calling thread has a context for `device`; -1 (and *err)
 * when none can be made current. */
static int bind(lms__stable_t *s, int device, const char **err) {
  int res = s->drv.bind(device);
  if (res == 0) return 1;
  *err = "no CUDA context could be made current for the device";
  LMS_LOG(ERROR, ALLOC, "making device %d's primary context current "
          "failed: %s", device, s->drv.error_name(res));
  return -1;
}

void *lms__stable_malloc(lms__stable_t *s, size_t size, int device,
                         void *stream, const char **err) {
  const char *dummy;
  if (err == NULL) err = &dummy;
  *err = NULL;
  if (size == 0) return NULL;
  if (size > (1ull << 56)) {
    *err = "size above 2^56 bytes: not a size any device has";
    return NULL;
  }
  uint64_t rounded;
  unsigned cls = size_class(size, &rounded);
  pthread_mutex_lock(&s->lock);
  block_t *b = NULL;
  int host = wants_host(s, rounded);
  int bound = 0; /* the driver is bound only off the fast path */
  int fresh = 0;
  if (!host) {
    b = take_cached(s, KIND_DEVICE, cls, device, stream);
    if (b != NULL) s->st.cache_hits++;
    else if ((bound = bind(s, device, err)) > 0)
      b = alloc_device(s, rounded, cls, device, stream);
  }
  if (b == NULL && bound >= 0) {
    b = take_cached(s, KIND_MANAGED, cls, device, stream);
    if (b != NULL) s->st.cache_hits++;
    else if (bound > 0 || (bound = bind(s, device, err)) > 0)
      fresh = (b = alloc_managed(s, rounded, cls, device, err)) != NULL;
    if (b != NULL) {
      s->st.managed_allocs++;
      s->st.managed_live += b->size;
    }
  } else if (b != NULL) {
    s->st.device_live += b->size;
  }
  if (b != NULL) {
    b->live = 1;
    b->stream = stream;
    s->st.allocs++;
    if (b->kind == KIND_MANAGED && s->learn != NULL) {
      keep_reserve(s);
      settle(s, b, fresh);
    }
    learn(s, b, 0);
  } else {
    s->st.failed++;
  }
  pthread_mutex_unlock(&s->lock);
  return b == NULL ? NULL : (void *)(uintptr_t)b->ptr;
}

lms_status_t lms__stable_free(lms__stable_t *s, void *ptr, void *stream) {
  if (ptr == NULL) return LMS_OK;
  pthread_mutex_lock(&s->lock);
  block_t **slot = find_slot(s, (uint64_t)(uintptr_t)ptr);
  if (slot == NULL || !(*slot)->live) {
    s->st.bad_frees++;
    pthread_mutex_unlock(&s->lock);
    LMS_LOG(ERROR, ALLOC, "free of %p, which this allocator did not hand "
            "out or which was already freed", ptr);
    return LMS_ERR_INVALID;
  }
  block_t *b = *slot;
  b->live = 0;
  b->stream = stream;
  if (b->kind == KIND_DEVICE) {
    s->st.device_live -= b->size;
  } else {
    s->st.managed_live -= b->size;
    s->st.managed_frees++;
    if (b->resident) s->st.frees_resident++;
  }
  learn(s, b, 1);
  b->next_free = s->free_heads[b->kind][b->cls];
  s->free_heads[b->kind][b->cls] = b;
  if (b->kind == KIND_DEVICE) s->cached_device += b->size;
  s->st.frees++;
  pthread_mutex_unlock(&s->lock);
  return LMS_OK;
}

/* Note [Prefetch hints and the reserve]
 * Resident managed blocks count against the limit like device blocks.
 * Until the first hint, nothing is kept for them and device blocks may
 * take the whole limit; from the first hint on, new device blocks leave
 * the prefetch window's share of the limit (--prefetch-window BYTES or
 * PERCENT) free, so the hinted blocks have somewhere to go.  Blocks
 * already placed stay where they are.  A hint never waits: a block that
 * finds no room is skipped and read in place. */
int lms__stable_prefetch(lms__stable_t *s, void *const *ptrs, int n,
                         void *stream) {
  int moved = 0;
  pthread_mutex_lock(&s->lock);
  keep_reserve(s);
  uint64_t batch = ++s->batch;
  for (int i = 0; i < n; i++) {
    s->st.hints++;
    block_t **slot = find_slot(s, (uint64_t)(uintptr_t)ptrs[i]);
    if (slot == NULL || (*slot)->kind != KIND_MANAGED) continue;
    block_t *b = *slot;
    if (b->resident) { /* most recently wanted: to the young end */
      b->batch = batch;
      lru_unlink(s, b);
      lru_push(s, b);
      continue;
    }
    if (!discard_done(s, b) || s->drv.bind(b->device) != 0 ||
        !make_room(s, b->size, NO_WANT, batch, stream, 0)) {
      s->st.hints_skipped++;
      continue;
    }
    int res = s->drv.prefetch(b->ptr, b->size, b->device, stream);
    if (res != 0) {
      s->st.hints_skipped++;
      LMS_LOG(WARN, ALLOC, "prefetch of %" PRIu64 " bytes failed: %s",
              b->size, s->drv.error_name(res));
      continue;
    }
    b->batch = batch;
    set_resident(s, b);
    moved++;
  }
  pthread_mutex_unlock(&s->lock);
  return moved;
}

int lms__stable_evict_all(lms__stable_t *s, void *stream) {
  int n = 0;
  pthread_mutex_lock(&s->lock);
  while (s->lru_head != NULL) {
    block_t *b = s->lru_head;
    if (b->live) evict(s, b, stream, 0);
    else drop(s, b, stream);
    n++;
  }
  pthread_mutex_unlock(&s->lock);
  return n;
}

void lms__stable_empty_cache(lms__stable_t *s) {
  pthread_mutex_lock(&s->lock);
  flush_cache(s, (1 << KIND_DEVICE) | (1 << KIND_MANAGED));
  pthread_mutex_unlock(&s->lock);
}

void lms__stable_stats(lms__stable_t *s, lms__stable_stats_t *out) {
  pthread_mutex_lock(&s->lock);
  *out = s->st;
  pthread_mutex_unlock(&s->lock);
}

size_t lms__stable_stats_json(const lms__stable_stats_t *s, char *buf,
                              size_t cap) {
  size_t len = 0;
  const char *sep = "{";
#define LMS__STABLE_STAT_JSON_(field, what)                                   \
  {                                                                           \
    int n = snprintf(len < cap ? buf + len : NULL, len < cap ? cap - len : 0, \
                     "%s\"" #field "\":%" PRIu64, sep, s->field);            \
    if (n > 0) len += (size_t)n;                                              \
    sep = ",";                                                                \
  }
  LMS__STABLE_STATS(LMS__STABLE_STAT_JSON_)
#undef LMS__STABLE_STAT_JSON_
  int n = snprintf(len < cap ? buf + len : NULL, len < cap ? cap - len : 0,
                   "}");
  if (n > 0) len += (size_t)n;
  return len;
}

lms_status_t lms__stable_create(const lms__stable_cfg_t *cfg,
                                const lms__drv_t *drv, lms__stable_t **out,
                                char *err, size_t errlen) {
  if (lms__drv_check(drv, err, errlen) != 0) return LMS_ERR_INVALID;
  lms__stable_t *s = calloc(1, sizeof *s);
  if (s == NULL) {
    snprintf(err, errlen, "out of memory creating the allocator");
    return LMS_ERR_HOST_OOM;
  }
  s->cfg = *cfg;
  s->drv = *drv;
  s->limit = cfg->gpu_limit;
  if (s->limit == 0) {
    size_t f = 0, t = 0;
    if (drv->mem_get_info(&f, &t) == 0) s->limit = t;
    if (s->limit == 0) s->limit = UINT64_MAX / 2;
  }
  s->st.limit = s->limit;
  if (cfg->window.steps != 0) {
    s->learn = calloc(1, sizeof *s->learn);
    if (s->learn == NULL)
      LMS_LOG(WARN, ALLOC, "out of host memory for the learned order: "
              "only hints prefetch");
  }
  pthread_mutex_init(&s->lock, NULL);
  *out = s;
  return LMS_OK;
}

void lms__stable_destroy(lms__stable_t *s) {
  if (s == NULL) return;
  for (size_t i = 0; i < s->blocks.cap; i++) {
    block_t *b = s->blocks.vals[i];
    if (s->blocks.keys[i] != 0) {
      s->drv.mem_free(b->ptr);
      free(b);
    }
  }
  blocks_free(&s->blocks);
  free(s->learn);
  free(s->evs);
  pthread_mutex_destroy(&s->lock);
  free(s);
}
