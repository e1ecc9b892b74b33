/* prefetch.c - the preload's learned prefetch (preload.h): while the
 * launch trace has a period (src/core/period.c), the managed allocations the coming
 * launches will be handed are moved to the device ahead of them, on a
 * stream of the preload's own, and resident ones that no launch ahead
 * needs go back to the host when room is needed.
 *
 * Invariants: resident_bytes is the sum of the resident set's sizes, and
 * each of those bytes is reserved in the ledger as device use, so that
 * device allocations, cuMemGetInfo and the prefetch itself all stay
 * within --gpu-limit; resident_bytes never exceeds the window's share of
 * the limit; the lock is never held across a driver call. */
#include <pthread.h>
#include <sys/mman.h>

#include "core/log.h"
#include "core/victim.h"
#include "preload/preload.h"

/* Note [Learned prefetch in the preload]
 *
 * Rationale: past --gpu-limit an allocation is managed memory preferred on
 * the host, and a kernel reads it across the link, page by page, each
 * time (Note [Placement past the limit]).  A program that loops has a
 * period in its launches (Note [A period in the launch trace]); with it,
 * the managed allocations of the next launches are known a period ahead
 * and can be moved to the device while earlier kernels run.
 *
 * What happens at each launch, once a period P is in force: the launches
 * up to min(P, STEPS of --prefetch-window) ahead that have not been seen
 * to yet are looked at; each managed allocation they name that is not
 * resident is prefetched to the device (cuMemPrefetchAsync) on the
 * preload's own non-blocking stream, so the move overlaps the program's
 * kernels instead of queueing behind them (measured on the H100: hints on
 * the compute stream made GoogLeNet slower).  Room: resident managed
 * bytes are reserved as device use under the limit, at most the window's
 * BYTES or PERCENT of it; when a prefetch does not fit, resident
 * allocations whose predicted use has passed go back to the host, oldest
 * use first; an allocation still ahead is never sent back for one further
 * ahead, and if nothing can go the prefetch is skipped.
 *
 * Correctness: managed memory keeps one address wherever its pages are,
 * and a kernel touching pages in flight finds them either way; so no
 * prefetch is waited for and a wrong prediction only moves bytes for
 * nothing.  Freeing a resident allocation drops it from the set first.
 *
 * Launches on a stream being captured into a graph are left alone: they
 * run later, and a move issued now could invalidate the capture.
 *
 * Limits: one stream serves the first context that launches; allocations
 * passed inside structures or offset into are not seen (Note [Which
 * launch parameters are pointers]). */

/* Note [The prefetch's share of the limit]
 * Device allocations cannot move, so a program that allocates everything
 * before its loop (most do) would leave the prefetch no room if they
 * could take the whole limit.  So with the prefetch on, device
 * allocations hold at most the limit less the window's share (BYTES or
 * PERCENT), plus whatever of that share is resident at the time; an
 * allocation past that is managed memory while the share has room for
 * it, moved to the device at once (adopted), where it runs at device
 * speed until the learned prefetch needs the room for an allocation the
 * coming launches use more.  One the share has no room for goes to the
 * device if the whole limit has, as without the share.  A program that
 * fits in the limit thus runs on the device whole, part of it in managed
 * memory.  The share is the cost: up to that much is managed memory even
 * when everything fits, which some calls refuse (IPC handles, for one);
 * --prefetch-window 0 gives device allocations the whole limit again. */

#define MAX_RESIDENT 1024
#define MAX_ACTIONS 64

/* Its driver calls go through lms__preload_drv (drv.c). */
#define DRV lms__preload_drv

typedef struct resident {
  uint64_t ptr, size;
  uint64_t need; /* launch index of its latest predicted or seen use */
} resident_t;

typedef struct action {
  uint64_t ptr, size;
  int to_device;
} action_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static lms__period_t *g_period;
static int g_period_failed;
static resident_t g_res[MAX_RESIDENT];
static unsigned g_nres;
static uint64_t g_res_bytes;
static uint64_t g_seen_until; /* launches ahead already looked at */
static CUstream g_stream;
static int g_stream_state; /* 0 not made, 1 made, -1 failed */
static lms__prefetch_stats_t g_st;

static uint64_t cap_bytes(void) {
  const lms__preload_cfg_t *c = &lms__preload_cfg;
  return lms__window_cap(&c->window, c->gpu_limit);
}

int lms__prefetch_enabled(void) {
  const lms__preload_cfg_t *c = &lms__preload_cfg;
  return c->gpu_limit != 0 && c->window.steps != 0;
}

static resident_t *find_res(uint64_t ptr) {
  for (unsigned i = 0; i < g_nres; i++)
    if (g_res[i].ptr == ptr) return &g_res[i];
  return NULL;
}

static void drop_res(resident_t *r) {
  g_res_bytes -= r->size;
  lms__ledger_unreserve(r->size);
  *r = g_res[--g_nres];
}

/* Under the lock: the resident allocation to send back for room, the one
 * whose use is longest past; NULL when every one is still ahead.  A
 * resident's `need` is the latest launch predicted to use it, not the
 * next, so nothing still wanted is sent back (Note [One victim rule] in
 * core/victim.c, tiers 0 and 1). */
static resident_t *victim(uint64_t now) {
  const lms__victim_ask_t q = {.now = now, .passed_only = 1};
  resident_t *v = NULL;
  lms__victim_t best = {0};
  for (unsigned i = 0; i < g_nres; i++) {
    lms__victim_t c = {.next_use = g_res[i].need};
    if (lms__victim_better(&q, &c, v != NULL ? &best : NULL)) {
      v = &g_res[i];
      best = c;
    }
  }
  return v;
}

/* Under the lock: plans bringing ptr in for launch `need`; appends the
 * evictions and the prefetch to acts.  0 when there is no room now (a
 * later launch may try again), 1 otherwise. */
static int plan_one(uint64_t ptr, uint64_t need, uint64_t now,
                     action_t *acts, unsigned *nacts) {
  resident_t *r = find_res(ptr);
  if (r != NULL) {
    if (need > r->need) r->need = need;
    return 1;
  }
  uint64_t size = 0;
  if (lms__ledger_managed_size(ptr, &size) != LMS_OK || size == 0) return 1;
  const lms__preload_cfg_t *c = &lms__preload_cfg;
  uint64_t cap = cap_bytes();
  if (size > cap || g_nres == MAX_RESIDENT) {
    g_st.skipped++;
    return 1; /* never fits: not worth trying again */
  }
  for (;;) {
    if (*nacts + 2 > MAX_ACTIONS) return 0;
    if (g_res_bytes + size <= cap &&
        lms__ledger_reserve(size, c->gpu_limit, -1, 0.0, 0))
      break;
    resident_t *v = victim(now);
    if (v == NULL) {
      g_st.skipped++;
      return 0;
    }
    acts[(*nacts)++] = (action_t){v->ptr, v->size, 0};
    g_st.evictions++;
    g_st.evict_bytes += v->size;
    drop_res(v);
  }
  g_res[g_nres++] = (resident_t){ptr, size, need};
  g_res_bytes += size;
  acts[(*nacts)++] = (action_t){ptr, size, 1};
  g_st.prefetches++;
  g_st.prefetch_bytes += size;
  if (g_res_bytes > g_st.resident_peak) g_st.resident_peak = g_res_bytes;
  return 1;
}

static int move(const action_t *a, int dev) {
  return DRV.prefetch(a->ptr, (size_t)a->size, a->to_device ? dev : -1,
                      g_stream);
}

/* The stream, made on first use outside the lock; 0 when there is none. */
static int have_stream(void) {
  pthread_mutex_lock(&g_lock);
  int state = g_stream_state;
  pthread_mutex_unlock(&g_lock);
  if (state != 0) return state > 0;
  void *s = NULL;
  int r = DRV.stream_create(&s);
  pthread_mutex_lock(&g_lock);
  if (g_stream_state == 0) {
    g_stream_state = r == 0 ? 1 : -1;
    g_stream = (CUstream)s;
  }
  state = g_stream_state;
  pthread_mutex_unlock(&g_lock);
  if (r != 0)
    LMS_LOG(WARN, HOOK, "no stream for prefetch (cuStreamCreate: %s, %d): "
            "the learned prefetch is off", DRV.error_name(r), r);
  return state > 0;
}

/* 1 when launches on stream are being captured into a graph: they run
 * later, maybe many times, and a move now could break the capture. */
static int capturing(CUstream stream) {
  int yes = 0;
  return DRV.stream_is_capturing(stream, &yes) == 0 && yes;
}

void lms__prefetch_launch(uintptr_t fn, const uint64_t *managed, unsigned n,
                          CUstream stream) {
  if (!lms__prefetch_enabled() || capturing(stream)) return;
  pthread_mutex_lock(&g_lock);
  if (g_period == NULL && !g_period_failed) {
    void *m = mmap(NULL, sizeof *g_period, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) g_period_failed = 1;
    else g_period = m; /* zero pages: an initialised period */
  }
  if (g_period == NULL) {
    pthread_mutex_unlock(&g_lock);
    return;
  }
  uint64_t now = g_period->n;
  for (unsigned i = 0; i < n; i++) {
    resident_t *r = find_res(managed[i]);
    if (r != NULL && r->need < now) r->need = now;
  }
  uint64_t period = lms__period_note(g_period, fn, managed, n);
  g_st.period = period;
  g_st.locks = g_period->locks;
  action_t acts[MAX_ACTIONS];
  unsigned nacts = 0;
  if (period == 0) {
    g_seen_until = now + 1;
  } else {
    uint64_t ahead = period < lms__preload_cfg.window.steps
                         ? period
                         : lms__preload_cfg.window.steps;
    if (g_seen_until < now + 1) g_seen_until = now + 1;
    /* Launches ahead in order; one that finds no room stops the walk
     * and is looked at again at the next launch. */
    for (uint64_t k = g_seen_until - now; k <= ahead; k++) {
      const lms__launch_rec_t *rec = lms__period_predict(g_period, k);
      if (rec == NULL) break;
      int all = 1;
      for (unsigned i = 0; i < rec->nptrs && all; i++)
        all = plan_one(rec->ptrs[i], now + k, now + 1, acts, &nacts);
      if (!all) break;
      g_seen_until = now + k + 1;
    }
  }
  pthread_mutex_unlock(&g_lock);
  if (nacts == 0) return;
  int dev = 0;
  int ok = have_stream() && DRV.current_device(&dev) == 0;
  for (unsigned i = 0; i < nacts; i++) {
    int r = ok ? move(&acts[i], dev) : (int)CUDA_ERROR_NOT_SUPPORTED;
    if (r == 0) continue;
    /* The pages stay where they were, still correct: only the books
     * change back. */
    pthread_mutex_lock(&g_lock);
    g_st.failed++;
    if (acts[i].to_device) {
      resident_t *res = find_res(acts[i].ptr);
      if (res != NULL) drop_res(res);
    }
    pthread_mutex_unlock(&g_lock);
  }
}

uint64_t lms__prefetch_device_limit(void) {
  const lms__preload_cfg_t *c = &lms__preload_cfg;
  if (!lms__prefetch_enabled()) return c->gpu_limit;
  pthread_mutex_lock(&g_lock);
  uint64_t resident = g_res_bytes;
  pthread_mutex_unlock(&g_lock);
  return c->gpu_limit - cap_bytes() + resident;
}

int lms__prefetch_share_fits(uint64_t size) {
  if (!lms__prefetch_enabled()) return 0;
  pthread_mutex_lock(&g_lock);
  int fits = g_nres < MAX_RESIDENT && g_res_bytes + size <= cap_bytes();
  pthread_mutex_unlock(&g_lock);
  return fits;
}

void lms__prefetch_adopt(uint64_t ptr, uint64_t size) {
  const lms__preload_cfg_t *c = &lms__preload_cfg;
  if (!lms__prefetch_enabled()) return;
  pthread_mutex_lock(&g_lock);
  int ok = g_nres < MAX_RESIDENT && find_res(ptr) == NULL &&
           g_res_bytes + size <= cap_bytes() &&
           lms__ledger_reserve(size, c->gpu_limit, -1, 0.0, 0);
  if (ok) {
    /* In use from now: sent back only once a launch has passed. */
    g_res[g_nres++] = (resident_t){ptr, size, g_period ? g_period->n : 0};
    g_res_bytes += size;
    g_st.adopted++;
    g_st.prefetches++;
    g_st.prefetch_bytes += size;
    if (g_res_bytes > g_st.resident_peak) g_st.resident_peak = g_res_bytes;
  }
  pthread_mutex_unlock(&g_lock);
  if (!ok) return;
  action_t a = {ptr, size, 1};
  int dev = 0;
  if (have_stream() && DRV.current_device(&dev) == 0 && move(&a, dev) == 0)
    return;
  pthread_mutex_lock(&g_lock);
  g_st.failed++;
  resident_t *r = find_res(ptr);
  if (r != NULL) drop_res(r);
  pthread_mutex_unlock(&g_lock);
}

void lms__prefetch_forget(uint64_t ptr) {
  pthread_mutex_lock(&g_lock);
  resident_t *r = find_res(ptr);
  if (r != NULL) drop_res(r);
  pthread_mutex_unlock(&g_lock);
}

void lms__prefetch_stats(lms__prefetch_stats_t *out) {
  pthread_mutex_lock(&g_lock);
  *out = g_st;
  out->resident = g_res_bytes;
  pthread_mutex_unlock(&g_lock);
}
