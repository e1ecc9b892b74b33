/* hostpool.c - the pinned host pool: a jemalloc arena of its own whose
 * extents come from the device's pinned host_alloc.
 *
 * Note [Pinned extents]
 * Pinned memory cannot be paged out, partly returned, or joined across two
 * separate allocations (cudaFreeHost takes only what cudaHostAlloc gave).
 * So the extent hooks: allocate a slab from the device for each extent
 * jemalloc asks for; let jemalloc split extents freely, and merge two only
 * when they lie in the same slab; refuse to deallocate, decommit or purge,
 * so jemalloc keeps ("retains") every extent for reuse; and free the slabs
 * only when the pool is destroyed.  The host limit is enforced in the alloc
 * hook: past it the hook fails and mallocx returns NULL, which becomes
 * LMS_ERR_HOST_OOM, never a crash.  arena.<i>.retain_grow_limit keeps
 * jemalloc's geometric growth of retained memory from asking for much more
 * than is needed.
 *
 * Note [jemalloc and the program's malloc]
 * Debian's libjemalloc exports malloc and free under their plain names.
 * liblms.so depends on it, but the dynamic linker searches the program and
 * its direct dependencies (libc among them) before the dependencies of
 * liblms.so, so the program keeps glibc's malloc; tests/cli_tests.cmake
 * checks this for a linked program and for LD_PRELOAD.  Only mallocx,
 * dallocx and mallctl are called here.  Debian's jemalloc uses initial-exec
 * TLS, so it cannot be loaded late with dlopen ("cannot allocate memory in
 * static TLS block"): liblms.so must be loaded at program start (linked or
 * preloaded). */
#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc.h"
#include "core/avl.h"
#include "core/log.h"

typedef struct slab {
  char *raw;         /* what host_alloc returned */
  char *start, *end; /* the extent handed to jemalloc */
  struct slab *next;
  lms__avl_node_t node; /* in by_end */
} slab_t;

struct lms__hostpool {
  extent_hooks_t hooks; /* first: the hooks find the pool by this address */
  lms_dev_t *dev;
  unsigned arena;
  int arena_made;
  uint64_t limit;
  uint64_t pinned;
  lms__node_ledger_t *node;     /* Note [One host budget per node]; or NULL */
  char refused[LMS__ERRBUF];    /* why the node's budget refused, or "" */
  uint64_t failures; /* host_alloc calls the device refused */
  pthread_mutex_t lock; /* slabs and pinned; hooks run on any thread */
  slab_t *slabs;
  /* The slabs by end address: the merge hook finds a slab in O(log n)
   * (a walk of the list, with 250,000 chunks in the pool, was 40 % of
   * `lms sim`'s time); slabs never overlap. */
  lms__avl_t by_end;
};

static int cmp_end(const lms__avl_node_t *a, const lms__avl_node_t *b) {
  const slab_t *x = LMS__CONTAINER_OF(a, slab_t, node);
  const slab_t *y = LMS__CONTAINER_OF(b, slab_t, node);
  return x->end < y->end ? -1 : x->end > y->end;
}

static lms__hostpool_t *pool_of(extent_hooks_t *h) {
  return (lms__hostpool_t *)(void *)h;
}

static void *hook_alloc(extent_hooks_t *h, void *new_addr, size_t size,
                        size_t alignment, bool *zero, bool *commit,
                        unsigned arena_ind) {
  (void)arena_ind;
  lms__hostpool_t *hp = pool_of(h);
  /* A fixed address is asked for only to grow an extent in place. */
  if (new_addr != NULL) return NULL;
  size_t extra = alignment > 4096 ? alignment : 0;
  if (size + extra < size) return NULL;
  slab_t *s = malloc(sizeof *s);
  if (s == NULL) return NULL;
  pthread_mutex_lock(&hp->lock);
  if (hp->limit != 0 && hp->pinned + size + extra > hp->limit) {
    pthread_mutex_unlock(&hp->lock);
    free(s);
    LMS_LOG(INFO, ALLOC, "pinned pool: %zu more bytes would pass the host "
            "limit of %llu", size + extra, (unsigned long long)hp->limit);
    return NULL;
  }
  if (hp->node != NULL &&
      lms__node_ledger_reserve(hp->node, size + extra, hp->refused) !=
          LMS_OK) {
    pthread_mutex_unlock(&hp->lock);
    free(s);
    LMS_LOG(INFO, ALLOC, "pinned pool: %s", hp->refused);
    return NULL;
  }
  hp->refused[0] = '\0';
  void *raw = NULL;
  if (hp->dev->ops->host_alloc(hp->dev, size + extra, &raw) != LMS_OK) {
    hp->failures++;
    if (hp->node != NULL) lms__node_ledger_release(hp->node, size + extra);
    pthread_mutex_unlock(&hp->lock);
    free(s);
    LMS_LOG(INFO, ALLOC, "pinned pool: host_alloc of %zu bytes failed: %s",
            size + extra, hp->dev->last_error);
    return NULL;
  }
  uintptr_t a = (uintptr_t)raw;
  if (extra) a = (a + alignment - 1) & ~(uintptr_t)(alignment - 1);
  s->raw = raw;
  s->start = (char *)a;
  s->end = s->start + size;
  s->next = hp->slabs;
  hp->slabs = s;
  lms__avl_insert(&hp->by_end, &s->node);
  hp->pinned += size + extra;
  pthread_mutex_unlock(&hp->lock);
  *zero = false;
  *commit = true;
  return s->start;
}

/* Keeping the extent is the only option for pinned memory: see the note. */
static bool hook_dalloc(extent_hooks_t *h, void *addr, size_t size,
                        bool committed, unsigned arena_ind) {
  (void)h, (void)addr, (void)size, (void)committed, (void)arena_ind;
  return true;
}

static void hook_destroy(extent_hooks_t *h, void *addr, size_t size,
                         bool committed, unsigned arena_ind) {
  (void)h, (void)addr, (void)size, (void)committed, (void)arena_ind;
}

static bool hook_commit(extent_hooks_t *h, void *addr, size_t size,
                        size_t offset, size_t length, unsigned arena_ind) {
  (void)h, (void)addr, (void)size, (void)offset, (void)length, (void)arena_ind;
  return false; /* pinned memory is always committed */
}

static bool hook_decommit(extent_hooks_t *h, void *addr, size_t size,
                          size_t offset, size_t length, unsigned arena_ind) {
  (void)h, (void)addr, (void)size, (void)offset, (void)length, (void)arena_ind;
  return true;
}

static bool hook_split(extent_hooks_t *h, void *addr, size_t size,
                       size_t size_a, size_t size_b, bool committed,
                       unsigned arena_ind) {
  (void)h, (void)addr, (void)size, (void)size_a, (void)size_b;
  (void)committed, (void)arena_ind;
  return false;
}

static bool hook_merge(extent_hooks_t *h, void *addr_a, size_t size_a,
                       void *addr_b, size_t size_b, bool committed,
                       unsigned arena_ind) {
  (void)size_b, (void)committed, (void)arena_ind;
  lms__hostpool_t *hp = pool_of(h);
  if ((char *)addr_a + size_a != (char *)addr_b) return true;
  bool refuse = true;
  /* The slab holding addr_a is the one that ends first past it. */
  slab_t probe = {.end = (char *)addr_a + 1};
  pthread_mutex_lock(&hp->lock);
  lms__avl_node_t *n = lms__avl_ceil(&hp->by_end, &probe.node);
  if (n != NULL) {
    const slab_t *s = LMS__CONTAINER_OF(n, slab_t, node);
    if ((char *)addr_a >= s->start) refuse = !((char *)addr_b < s->end);
  }
  pthread_mutex_unlock(&hp->lock);
  return refuse;
}

static void free_slabs(lms__hostpool_t *hp) {
  slab_t *next;
  for (slab_t *s = hp->slabs; s != NULL; s = next) {
    next = s->next;
    if (hp->dev->ops->host_free(hp->dev, s->raw) != LMS_OK)
      LMS_LOG(WARN, ALLOC, "host_free at exit: %s", hp->dev->last_error);
    free(s);
  }
  hp->slabs = NULL;
  lms__avl_init(&hp->by_end, cmp_end);
  hp->pinned = 0;
}

lms_status_t lms__hostpool_create(lms_dev_t *dev, uint64_t limit,
                                  lms__hostpool_t **out, char *err) {
  lms__hostpool_t *hp = calloc(1, sizeof *hp);
  if (hp == NULL) {
    lms__errf(err, "no host memory for the pinned pool");
    return LMS_ERR_HOST_OOM;
  }
  hp->hooks.alloc = hook_alloc;
  hp->hooks.dalloc = hook_dalloc;
  hp->hooks.destroy = hook_destroy;
  hp->hooks.commit = hook_commit;
  hp->hooks.decommit = hook_decommit;
  hp->hooks.purge_lazy = NULL;
  hp->hooks.purge_forced = NULL;
  hp->hooks.split = hook_split;
  hp->hooks.merge = hook_merge;
  hp->dev = dev;
  hp->limit = limit;
  lms__avl_init(&hp->by_end, cmp_end);
  pthread_mutex_init(&hp->lock, NULL);
  extent_hooks_t *hooks = &hp->hooks;
  size_t sz = sizeof hp->arena;
  int rc = mallctl("arenas.create", &hp->arena, &sz, &hooks, sizeof hooks);
  if (rc != 0) {
    /* jemalloc pins a few MiB of its own bookkeeping when the arena is
     * made; a host limit below that refuses it. */
    lms_status_t st = LMS_ERR_INTERNAL;
    if (limit != 0 && hp->pinned + (8u << 20) > limit) {
      st = LMS_ERR_HOST_OOM;
      lms__errf(err, "host out of memory: a --host-limit of %llu bytes "
                "leaves no room for the pinned pool's own bookkeeping "
                "(about 4 MiB); accepted: a limit of 8MiB or more",
                (unsigned long long)limit);
    } else {
      lms__errf(err, "jemalloc arenas.create failed (error %d)", rc);
    }
    free_slabs(hp);
    pthread_mutex_destroy(&hp->lock);
    free(hp);
    return st;
  }
  hp->arena_made = 1;
  /* Grow retained memory in steps of at most 64 MiB beyond a request. */
  char name[64];
  snprintf(name, sizeof name, "arena.%u.retain_grow_limit", hp->arena);
  size_t grow = (size_t)64 << 20;
  mallctl(name, NULL, NULL, &grow, sizeof grow);
  *out = hp;
  return LMS_OK;
}

lms_status_t lms__hostpool_set_node(lms__hostpool_t *hp, lms__node_ledger_t *l,
                                    char *err) {
  pthread_mutex_lock(&hp->lock);
  lms_status_t st = lms__node_ledger_reserve(l, hp->pinned, err);
  if (st == LMS_OK) hp->node = l;
  pthread_mutex_unlock(&hp->lock);
  return st;
}

const char *lms__hostpool_refused(lms__hostpool_t *hp) {
  return hp->refused;
}

void lms__hostpool_destroy(lms__hostpool_t *hp) {
  if (hp == NULL) return;
  if (hp->arena_made) {
    char name[64];
    snprintf(name, sizeof name, "arena.%u.destroy", hp->arena);
    if (mallctl(name, NULL, NULL, NULL, 0) != 0)
      LMS_LOG(WARN, ALLOC, "jemalloc could not destroy arena %u", hp->arena);
  }
  if (hp->node != NULL) lms__node_ledger_release(hp->node, hp->pinned);
  free_slabs(hp);
  pthread_mutex_destroy(&hp->lock);
  free(hp);
}

lms_status_t lms__hostpool_alloc(lms__hostpool_t *hp, size_t size,
                                 void **out) {
  if (size == 0) return LMS_ERR_INVALID;
  void *p = mallocx(size, MALLOCX_ARENA(hp->arena) | MALLOCX_TCACHE_NONE |
                              MALLOCX_ALIGN(256));
  if (p == NULL) return LMS_ERR_HOST_OOM;
  *out = p;
  return LMS_OK;
}

void lms__hostpool_free(lms__hostpool_t *hp, void *ptr) {
  (void)hp;
  if (ptr != NULL) dallocx(ptr, MALLOCX_TCACHE_NONE);
}

/* Reads one of the pool's counters, which the extent hooks update from any
 * thread under the pool's lock. */
static uint64_t read_locked(const lms__hostpool_t *hp, const uint64_t *field) {
  lms__hostpool_t *m = (lms__hostpool_t *)hp;
  pthread_mutex_lock(&m->lock);
  uint64_t v = *field;
  pthread_mutex_unlock(&m->lock);
  return v;
}

uint64_t lms__hostpool_pinned(const lms__hostpool_t *hp) {
  return read_locked(hp, &hp->pinned);
}

uint64_t lms__hostpool_failures(const lms__hostpool_t *hp) {
  return read_locked(hp, &hp->failures);
}
