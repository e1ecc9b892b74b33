/* swap.h - residency: where each chunk's bytes are, and moving them.
 *
 * A host-homed chunk always has its home in the pinned pool; while it is
 * resident it also has a device block.  Its device copy is dirty once an
 * acquire asked to write, and a dirty copy is written home before its block
 * is given up; a clean one is simply dropped (Note [Why clean chunks are
 * dropped] in residency.c).  A device-homed chunk has only a device block.
 *
 * Invariants, with the owner's lock held:
 *  - a chunk with pins > 0 is resident and is never evicted;
 *  - a resident host-homed chunk with pins == 0 is on the LRU list, others
 *    are not;
 *  - the bytes a chunk holds change only through writes the user makes
 *    between acquire(WRITE) and release: never through a swap, a failed
 *    operation or a retry. */
#ifndef LMS_SWAP_SWAP_H
#define LMS_SWAP_SWAP_H

#include "alloc/alloc.h"
#include "core/options.h"
#include "device/device.h"

/* The streams whose work may still use a chunk's device copy. */
#define LMS__MAX_USES 4

struct lms_chunk {
  uint64_t magic;
  uint64_t serial; /* 1, 2, ... in allocation order; never reused */
  size_t size;
  int host_homed;
  void *home;      /* pinned host memory (host-homed chunks) */
  void *dptr;      /* device block, NULL when not resident */
  int dirty;
  int has_data;    /* 0 until first acquired for writing: nothing to copy */
  int prefetched;  /* brought in by a prefetch and not yet acquired */
  int last_wrote;  /* the latest acquire asked to write */
  uint64_t plan_key; /* the schedule's name for this chunk; 0: none */
  uint32_t plan_kidx; /* ... and its dense index, while plan_key != 0 */
  int pins;
  int free_on_release; /* lms_free_when_released: freed at the last release */
  void *ready_ev;  /* after the copy that brought the chunk in */
  int ready_pending;
  void *home_ev;   /* after the copy that last wrote the home */
  int home_pending;
  int home_unknown; /* a write-back was queued but could not be tracked */
  struct {
    void *stream;
    void *event;
  } uses[LMS__MAX_USES];
  int nuses;
  lms_chunk_t *lru_prev, *lru_next;
  int in_lru;
  uint64_t lru_tick;   /* when it joined the LRU list: ties go to the older */
  lms__avl_node_t use_node; /* in lms__swap_t.by_use while indexed */
  uint64_t use_key;    /* its next use when indexed */
  uint64_t index_gen;  /* indexed in this generation of by_use */
  lms__avl_node_t size_node;  /* in by_size while on the LRU list, and */
  lms__avl_node_t sizeu_node; /* in by_size_use while indexed, if */
  int seg_large;       /* its block is in a segment for large requests, */
  uint64_t seg_seq;    /* ... made as the seg_seq-th */
  int in_sizeu;
  uint64_t plan_gen;   /* plan_key belongs to this schedule (plan.c) */
  uint64_t cur_t;      /* 1 + the step in which it was last referenced, */
  uint32_t cur_i;      /* ... and its index among that step's (plan.c) */
  lms_chunk_t *all_prev, *all_next;
  lms__reg_entry_t home_reg, dev_reg;
  /* Note [Chunks of pieces] in residency.c.  A chunk of pieces: its
   * pieces, in order, and the device addresses they are shown at. */
  lms_chunk_t **pieces;
  uint32_t npieces;
  void *va;
  /* A piece: its chunk, where it starts in it, and the block shown at
   * va + piece_off (NULL: none, or not since the piece last left).
   * old_ev: the events of the uses of what va + piece_off showed before
   * the piece left, not yet waited for (Note [Showing a piece again]). */
  lms_chunk_t *group;
  size_t piece_off;
  void *shown;
  void *old_ev[LMS__MAX_USES];
  int nold;
};

#define LMS__CHUNK_MAGIC 0x6c6d735f63686bull /* "lms_chk" */

/* A home freed while a copy into it may still be running. */
typedef struct lms__deferred {
  void *home;
  void *event;
  struct lms__deferred *next;
} lms__deferred_t;

/* Where the schedule (src/graph) says a chunk is next used: an absolute
 * step number, larger is later; UINT64_MAX when not known. */
typedef uint64_t (*lms__next_use_fn)(void *arg, const lms_chunk_t *c);

#define LMS__NEVER UINT64_MAX

typedef struct lms__swap {
  lms_dev_t *dev;
  lms__policy_t policy;
  lms__next_use_fn next_use;   /* NULL: no schedule */
  void *next_use_arg;
  /* Told, with next_use_arg, when a chunk may have come to matter to the
   * window (Note [Walking only what the window acts on] in plan.c). */
  void (*on_change)(void *arg, const lms_chunk_t *c);
  uint64_t serial;             /* the last serial handed out */
  uint64_t chunk_bytes;        /* of every live chunk */
  uint64_t chunk_bytes_peak;   /* ... at most, so far */
  uint64_t step;               /* the schedule's current step (plan.c) */
  uint64_t piece;              /* Note [Chunks of pieces]; 0: none */
  uint32_t piece_div;          /* ... of chunks of budget / piece_div up */
  lms__devcache_t cache;
  lms__hostpool_t *pool;
  lms__node_ledger_t *node;    /* Note [One host budget per node]; or NULL */
  lms__registry_t registry;
  lms__placement_t placement;
  lms_stats_t stats;
  void *h2d;                   /* copy stream, host to device */
  void *d2h;                   /* copy stream, device to host */
  lms_chunk_t *lru_head, *lru_tail; /* least recently released first */
  uint64_t lru_ticks;
  /* The LRU list again, furthest next use first, while the schedule says
   * next uses change only when a chunk is used (Note [Victims by next
   * use] in residency.c). */
  lms__avl_t by_use;
  int use_index;               /* wanted by the schedule */
  int flat_use;                /* every next use is LMS__NEVER (no schedule
                                  active): victims in LRU order */
  /* The LRU list's chunks in segments for large requests by size, clean
   * first, then the newest segment; and those of by_use by size, clean
   * first, furthest next use, newest segment (Note [Range eviction by
   * index] in residency.c). */
  lms__avl_t by_size, by_size_use;
  int index_built;             /* by_use holds the LRU list */
  uint64_t index_gen;          /* a chunk is in by_use iff it has this */
  lms_chunk_t *all;
  lms__deferred_t *deferred;   /* oldest first */
  lms__deferred_t *deferred_tail;
  lms__evpool_t events;
  /* Waits being timed, oldest first, in a ring (Note [Stalls measured
   * after the fact] in residency.c), and the timed events they use. */
  struct lms__stall_probe {
    void *before, *after;
    int prefetched;
  } *probes;
  size_t probes_head, probes_len, probes_cap;
  lms__evpool_t timed_events;
  char *err;                   /* the owner's last-error buffer */
} lms__swap_t;

/* Note [Chunks of pieces] in residency.c: a chunk of at least
 * budget / div bytes and more than a piece is cut, into this many pieces
 * of `piece` bytes, the last taking the remainder; a remainder under
 * LMS__PIECE_LEAST joins the last whole piece, since every piece is a
 * device block of its own at a page boundary (Note [Paged large blocks]
 * in alloc/devcache.c), which requests of 1 MiB or less are not.  0: the
 * chunk stays whole, as one that would be a single piece does.  div is
 * --piece-size's (core/options.h). */
#define LMS__PIECE_LEAST (2u << 20)
static inline uint64_t lms__pieces_of(uint64_t size, uint64_t piece,
                                      uint32_t div, uint64_t budget) {
  if (piece == 0 || div == 0 || size <= piece || size < budget / div)
    return 0;
  uint64_t n = size / piece + (size % piece >= LMS__PIECE_LEAST);
  return n > 1 ? n : 0;
}

typedef struct lms__swap_config {
  lms__placement_t placement; /* capacity = the device budget */
  uint64_t host_limit;        /* 0: none */
  uint64_t node_host_limit;   /* 0: none (Note [One host budget per node]) */
  const char *node_ledger;    /* its ledger's name; NULL: the default */
  lms__policy_t policy;
  uint64_t piece;             /* Note [Chunks of pieces]; 0: none */
  uint32_t piece_div;         /* chunks of budget / piece_div and more */
} lms__swap_config_t;

/* For tests: nonzero makes victim choice, range eviction and the window
 * walk scan as they did before the indexes of Notes [Victims by next
 * use] and [Range eviction by index] (residency.c) and [Walking only what
 * the window acts on] (graph/plan.c), which must choose the same chunks;
 * the counter says how often the range index chose. */
extern int lms__swap_reference;
extern uint64_t lms__swap_indexed_ranges;

lms_status_t lms__swap_init(lms__swap_t *s, lms_dev_t *dev,
                            const lms__swap_config_t *cfg, char *err);
/* Waits for all work, frees every chunk and all memory. */
void lms__swap_fini(lms__swap_t *s);

lms_status_t lms__swap_alloc(lms__swap_t *s, size_t size, lms_chunk_t **out);
/* A host-homed chunk holding a copy of `size` bytes at the framework's
 * device address src, copied after the work enqueued on `stream` so far
 * (Note [Bytes the framework owns] in residency.c). */
lms_status_t lms__swap_alloc_copy(lms__swap_t *s, const void *src, size_t size,
                                  void *stream, lms_chunk_t **out);
/* LMS_OK when no copy into c's home is in flight, LMS_NOT_READY if one
 * is. */
lms_status_t lms__swap_query(lms__swap_t *s, lms_chunk_t *c);
lms_status_t lms__swap_free(lms__swap_t *s, lms_chunk_t *c);
lms_status_t lms__swap_acquire(lms__swap_t *s, lms_chunk_t *c, void *stream,
                               unsigned access, void **dptr);
lms_status_t lms__swap_release(lms__swap_t *s, lms_chunk_t *c, void *stream);
/* The chunk's bytes are dead (Note [Dead bytes are not written back]). */
lms_status_t lms__swap_discard(lms__swap_t *s, lms_chunk_t *c);
/* Evicts chunks not needed before step `after` until `bytes` of the
 * budget are free (Notes [Room ahead] and [Free reserve] in plan.c). */
lms_status_t lms__swap_make_room(lms__swap_t *s, uint64_t bytes, uint64_t after);
/* Writes home the dirty ones among the first `bytes` of unpinned chunks
 * not needed before step `after`, furthest next use first; they stay
 * resident and clean (Note [Writing back ahead] in residency.c).  Does
 * nothing without the next-use index (lms__swap_use_index). */
lms_status_t lms__swap_clean_ahead(lms__swap_t *s, uint64_t bytes,
                                   uint64_t after);
/* Keeps (on = 1, rebuilt) or drops (0) the index of victims by next use;
 * the schedule turns it on while a chunk's next use changes only at its
 * own uses (Note [Victims by next use] in residency.c). */
void lms__swap_use_index(lms__swap_t *s, int on);
/* c's next use changed: re-keys it in the index. */
void lms__swap_rekey(lms__swap_t *s, lms_chunk_t *c);
/* Starts bringing c in ahead of its use at step `need`, evicting only
 * unpinned chunks whose next use is later than `need`, and with
 * LMS__PREFETCH_CLEAN only while the victim, chosen by next use, is clean
 * (Note [A planned copy takes clean room] in residency.c).  LMS_OK when
 * c is resident or on its way (or has nothing to bring); LMS_NOT_READY
 * when there is no room under that rule or the device would have to
 * block; other statuses for device failures, with nothing changed. */
#define LMS__PREFETCH_CLEAN 1u
lms_status_t lms__swap_prefetch(lms__swap_t *s, lms_chunk_t *c, uint64_t need,
                                unsigned flags);
/* Gives up c's device copy now, written home first if dirty, when c is
 * resident, host-homed and unpinned; otherwise does nothing (Note [A
 * planned period] in graph/ahead.c). */
lms_status_t lms__swap_drop(lms__swap_t *s, lms_chunk_t *c);
/* Writes c home now, when it is resident, host-homed, unpinned and dirty,
 * and keeps it resident and clean; otherwise does nothing (Note [Home
 * before leaving] in graph/ahead.c).  1 in *wrote when it was written. */
lms_status_t lms__swap_write_home(lms__swap_t *s, lms_chunk_t *c, int *wrote);
/* Writes back and drops every unpinned resident host-homed chunk. */
lms_status_t lms__swap_evict_all(lms__swap_t *s);
/* Waits for the copy streams and pending frees. */
lms_status_t lms__swap_sync(lms__swap_t *s);
/* Fills the level counters that are read rather than kept (host_pinned,
 * fragmentation) and copies the stats out. */
void lms__swap_stats(lms__swap_t *s, lms_stats_t *out);
int lms__swap_is_chunk(const lms_chunk_t *c);

#endif
